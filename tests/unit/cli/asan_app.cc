// A program built with AddressSanitizer (only that): what `gpuprof run` must start without
// preloading its exec guard, which would make the ASan runtime exit at start.
#include <cstdio>

int main() {
  std::puts("asan app ran");
  return 0;
}
