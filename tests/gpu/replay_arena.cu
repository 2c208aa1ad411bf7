// Self-checking programs for the batched snapshot engine under `gpuprof replay` (issue 18): the
// arena kept across replayed launches (B3), its storage tiers (B2) and what the application does
// between two replayed launches. Each mode exits 1 when a result differs from one ordinary run;
// it runs the same unprofiled. tests/gpu/check_db.py checks the replay rows ("replay_arena_*").
//
//   replay_arena many_regions  4,096 cudaMalloc regions of 32-256 KiB; a kernel rewrites every
//                              4th 4 KiB word block of each, strided: 2 launches replayed
//   replay_arena between       two replayed in-place updates with an application cudaMemcpy and
//                              cudaMemset in between: the second snapshot must hold them
//   replay_arena realloc       a buffer freed and allocated again (the driver usually hands the
//                              same address back) between two replayed launches
//   replay_arena spill         two replayed launches with the snapshot in the spill file (run with
//                              --storage file): the file, found through /proc/self/fd, has mode
//                              0600; check_db.py checks none is left in the output directory
//   replay_arena fill_after    after a replayed launch over an 8 GiB buffer, the application
//                              allocates what was free before the replay minus the buffer and
//                              1.5 GiB: the snapshot arena (8 GiB on the device) must give way
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.h"

__global__ void in_place_update(unsigned* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 3u + 1u;
}

// For region r (words[r] words at ptrs[r]), every 4th block of 1024 words: x = x*3+1.
__global__ void strided_update(unsigned* const* ptrs, const unsigned* words, int regions) {
  for (int r = blockIdx.x; r < regions; r += gridDim.x) {
    unsigned* x = ptrs[r];
    for (unsigned i = threadIdx.x; i < words[r]; i += blockDim.x) {
      if ((i / 1024u) % 4u == 0u) x[i] = x[i] * 3u + 1u;
    }
  }
}

// Grid-stride x = x*3+1 over a footprint above 2^31 words.
__global__ void big_update(unsigned* x, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n; i += gridDim.x * 256ull)
    x[i] = x[i] * 3u + 1u;
}

namespace {

constexpr int kN = 1 << 22;  // 16 MiB of words

std::vector<unsigned> Iota(std::size_t n, unsigned seed) {
  std::vector<unsigned> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned>(i) * 2654435761u + seed;
  return v;
}

void Expect(const std::vector<unsigned>& got, const std::vector<unsigned>& want, const char* what) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      std::fprintf(stderr, "gpuprof-test: %s: word %zu is %u, an unprofiled run gives %u\n", what, i, got[i],
                   want[i]);
      gpuprof_test::Fail("result differs from one ordinary run");
    }
  }
}

void Update(std::vector<unsigned>& v) {
  for (unsigned& x : v) x = x * 3u + 1u;
}

int ManyRegions() {
  constexpr int kRegions = 4096;
  std::mt19937 rng(18);
  std::vector<unsigned*> ptrs(kRegions);
  std::vector<unsigned> words(kRegions);
  std::vector<std::vector<unsigned>> want(kRegions);
  for (int r = 0; r < kRegions; ++r) {
    words[r] = (32u << 10) / 4u + static_cast<unsigned>(rng() % ((224u << 10) / 4u));
    GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&ptrs[r], words[r] * sizeof(unsigned)));
    want[r] = Iota(words[r], static_cast<unsigned>(r));
    GPUPROF_TEST_CUDA_CHECK(
        cudaMemcpy(ptrs[r], want[r].data(), words[r] * sizeof(unsigned), cudaMemcpyHostToDevice));
  }
  unsigned** device_ptrs = nullptr;
  unsigned* device_words = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&device_ptrs, kRegions * sizeof(unsigned*)));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&device_words, kRegions * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(
      cudaMemcpy(device_ptrs, ptrs.data(), kRegions * sizeof(unsigned*), cudaMemcpyHostToDevice));
  GPUPROF_TEST_CUDA_CHECK(
      cudaMemcpy(device_words, words.data(), kRegions * sizeof(unsigned), cudaMemcpyHostToDevice));
  for (int l = 0; l < 2; ++l) {
    strided_update<<<1024, 256>>>(device_ptrs, device_words, kRegions);
    for (int r = 0; r < kRegions; ++r) {
      for (unsigned i = 0; i < words[r]; ++i) {
        if ((i / 1024u) % 4u == 0u) want[r][i] = want[r][i] * 3u + 1u;
      }
    }
  }
  for (int r = 0; r < kRegions; ++r) {
    std::vector<unsigned> got(words[r]);
    GPUPROF_TEST_CUDA_CHECK(
        cudaMemcpy(got.data(), ptrs[r], words[r] * sizeof(unsigned), cudaMemcpyDeviceToHost));
    Expect(got, want[r], "many_regions");
    GPUPROF_TEST_CUDA_CHECK(cudaFree(ptrs[r]));
  }
  std::printf("gpuprof-test: launched kernel=strided_update count=2 regions=%d\n", kRegions);
  return 0;
}

int Between() {
  std::vector<unsigned> want = Iota(kN, 1);
  unsigned* x = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, want.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  in_place_update<<<kN / 256, 256>>>(x, kN);
  Update(want);
  // The application's own writes between the two replayed launches.
  std::vector<unsigned> patch(4096, 0xABCD0123u);
  GPUPROF_TEST_CUDA_CHECK(
      cudaMemcpy(x + 100000, patch.data(), patch.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  for (std::size_t i = 0; i < patch.size(); ++i) want[100000 + i] = patch[i];
  GPUPROF_TEST_CUDA_CHECK(cudaMemset(x + 3000000, 0x7F, 65536 * sizeof(unsigned)));
  for (std::size_t i = 0; i < 65536; ++i) want[3000000 + i] = 0x7F7F7F7Fu;
  in_place_update<<<kN / 256, 256>>>(x, kN);
  Update(want);
  std::vector<unsigned> got(kN);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(got.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  Expect(got, want, "between");
  std::printf("gpuprof-test: launched kernel=in_place_update count=2\n");
  GPUPROF_TEST_CUDA_CHECK(cudaFree(x));
  return 0;
}

int Realloc() {
  std::vector<unsigned> want = Iota(kN, 2);
  unsigned* x = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, want.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  in_place_update<<<kN / 256, 256>>>(x, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  unsigned* before = x;
  GPUPROF_TEST_CUDA_CHECK(cudaFree(x));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  std::printf("gpuprof-test: reallocated at the same address: %s\n", x == before ? "yes" : "no");
  want = Iota(kN, 3);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, want.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  in_place_update<<<kN / 256, 256>>>(x, kN);
  Update(want);
  std::vector<unsigned> got(kN);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(got.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  Expect(got, want, "realloc");
  std::printf("gpuprof-test: launched kernel=in_place_update count=2\n");
  GPUPROF_TEST_CUDA_CHECK(cudaFree(x));
  return 0;
}

// The spill files this process has open, with their modes.
int CheckSpillFiles() {
  int found = 0;
  DIR* fds = ::opendir("/proc/self/fd");
  if (fds == nullptr) return 0;
  while (dirent* entry = ::readdir(fds)) {
    char link[4096] = {};
    std::string path = std::string("/proc/self/fd/") + entry->d_name;
    ssize_t n = ::readlink(path.c_str(), link, sizeof(link) - 1);
    if (n <= 0 || std::strstr(link, "gpuprof-spill") == nullptr) continue;
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) continue;
    std::printf("gpuprof-test: spill file %s mode %o\n", link, static_cast<unsigned>(info.st_mode & 0777));
    if ((info.st_mode & 0777) != 0600) gpuprof_test::Fail("the spill file is readable by others");
    ++found;
  }
  ::closedir(fds);
  return found;
}

int Spill() {
  std::vector<unsigned> want = Iota(kN, 4);
  unsigned* x = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, want.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  for (int l = 0; l < 2; ++l) {
    in_place_update<<<kN / 256, 256>>>(x, kN);
    GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
    Update(want);
  }
  const bool profiled = std::getenv("GPUPROF_OUTPUT_DIR") != nullptr;
  const int files = CheckSpillFiles();
  if (profiled && files == 0) gpuprof_test::Fail("no spill file open under gpuprof replay --storage file");
  std::vector<unsigned> got(kN);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(got.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  Expect(got, want, "spill");
  std::printf("gpuprof-test: launched kernel=in_place_update count=2 spill_files=%d\n", files);
  GPUPROF_TEST_CUDA_CHECK(cudaFree(x));
  return 0;
}

int FillAfter() {
  size_t free_before = 0;
  size_t total = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  // 8 GiB: the snapshot arena holds as much again, more than the margin left below.
  constexpr std::size_t kWords = std::size_t{1} << 31;
  unsigned* x = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kWords * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemset(x, 1, kWords * sizeof(unsigned)));
  big_update<<<4096, 256>>>(x, kWords);
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  size_t free_after = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  const std::size_t want = free_before - kWords * sizeof(unsigned) - (std::size_t{3} << 29);
  std::printf("gpuprof-test: free before %zu MiB, after the replay %zu MiB, allocating %zu MiB\n",
              free_before >> 20, free_after >> 20, want >> 20);
  void* big = nullptr;
  cudaError_t result = cudaMalloc(&big, want);
  if (result != cudaSuccess) {
    std::fprintf(stderr, "gpuprof-test: cudaMalloc(%zu) after the replay failed: %s\n", want,
                 cudaGetErrorString(result));
    gpuprof_test::Fail("the snapshot arena kept memory the application needed");
  }
  GPUPROF_TEST_CUDA_CHECK(cudaFree(big));
  unsigned first = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(&first, x, sizeof(first), cudaMemcpyDeviceToHost));
  if (first != 0x01010101u * 3u + 1u) gpuprof_test::Fail("fill_after: the replayed update is wrong");
  std::printf("gpuprof-test: launched kernel=big_update count=1\n");
  GPUPROF_TEST_CUDA_CHECK(cudaFree(x));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(0));
  gpuprof_test::PrintProcess("main", 0);
  std::string mode = argc > 1 ? argv[1] : "";
  int rc = 2;
  if (mode == "many_regions")
    rc = ManyRegions();
  else if (mode == "between")
    rc = Between();
  else if (mode == "realloc")
    rc = Realloc();
  else if (mode == "spill")
    rc = Spill();
  else if (mode == "fill_after")
    rc = FillAfter();
  else
    std::fprintf(stderr, "usage: %s many_regions|between|realloc|spill|fill_after\n", argv[0]);
  if (rc == 0) GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  return rc;
}
