// A stand-in for a CUDA application under `gpuprof run`: it loads the injection library and calls
// InitializeInjection itself, as the CUDA driver does at cuInit, then emits a few records through
// the C API (if libgpuprof.so was loaded, globally) and exits with a chosen status.
//
//   inject_host <libgpuprof_inject.so> <marks> <exit status>
//
// HOST_CALL_TWICE=1 calls InitializeInjection a second time.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gpuprof/gpuprof_c.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <libgpuprof_inject.so> <marks> <exit status>\n", argv[0]);
    return 2;
  }
  void* inject = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);  // the driver's way of loading it
  if (inject == nullptr) {
    std::fprintf(stderr, "host: dlopen %s: %s\n", argv[1], dlerror());
    return 99;
  }
  auto initialize = reinterpret_cast<int (*)()>(dlsym(inject, "InitializeInjection"));
  if (initialize == nullptr) return 98;
  if (initialize() != 1) return 97;
  if (std::getenv("HOST_CALL_TWICE") != nullptr && initialize() != 1) return 96;

  auto mark = reinterpret_cast<decltype(&gpuprof_mark)>(dlsym(RTLD_DEFAULT, "gpuprof_mark"));
  if (mark == nullptr) {
    std::printf("no gpuprof_mark\n");
  } else {
    const int marks = std::atoi(argv[2]);
    for (int i = 0; i < marks; ++i) {
      if (mark(("host-mark-" + std::to_string(i)).c_str()) != GPUPROF_OK) std::printf("mark %d refused\n", i);
    }
  }
  return std::atoi(argv[3]);  // exit(): the session's exit handler finalizes the DB
}
