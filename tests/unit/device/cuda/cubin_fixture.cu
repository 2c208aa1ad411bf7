// Built into sm_90 cubins at build time (CMakeLists.txt here) for cubin_symbols_test, which expects
// exactly these module-scope variables: change both together.
__device__ int counter;          // .nv.global, 4 bytes
__device__ float table[100];     // .nv.global, 400 bytes
__device__ int generation = 1;   // .nv.global.init (initialized), 4 bytes
__constant__ double coeffs[16];  // .nv.constant3, 128 bytes

// Uses every variable: a whole-program build drops the ones no kernel reads.
__global__ void k(const int* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  out[i] = table[in[i] % 100] * static_cast<float>(coeffs[i % 16]) + static_cast<float>(generation);
  atomicAdd(&counter, 1);
}
