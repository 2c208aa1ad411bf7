// Built into an sm_90 cubin for cubin_symbols_test: device-side new/delete, which the cubin shows as
// undefined malloc and free (rule C2).
__global__ void grow(int** slot) {
  int* block = new int[4];
  block[0] = 1;
  *slot = block;
}

__global__ void shrink(int* block) { delete[] block; }
