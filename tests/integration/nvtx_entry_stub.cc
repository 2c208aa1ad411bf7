// A stand-in for libgpuprof_inject.so in run_cli_test: a shared library that exports the NVTX
// loader's entry point, so `gpuprof run` names it in NVTX_INJECTION64_PATH. Never called.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    const void* /*get_export_table*/) {
  return 0;
}
