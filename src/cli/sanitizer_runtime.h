// Whether the program `gpuprof run` is about to start carries a sanitizer runtime, so that run can
// leave libgpuprof_exec_guard.so out of its LD_PRELOAD: AddressSanitizer checks that its runtime is
// the first library loaded and exits at start ("ASan runtime does not come first in initial library
// list") when a preloaded one comes before it, and gpuprof must never stop the application.
//
// Cheap by design: the ELF's section headers, its dynamic section and its dynamic symbol table are
// read with pread, nothing is loaded or run. Anything that is not a readable ELF of this machine's
// byte order (a missing file, a stripped section table, another format) counts as "no sanitizer".
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace gpuprof::cli {

// The file execvp would run for `name`: `name` itself when it contains a '/', else the first
// "<dir>/<name>" of `path_variable` (PATH; an empty entry is the current directory) that is an
// executable regular file. Empty when there is none.
std::string ResolveLikeExecvp(std::string_view name, std::string_view path_variable);

// The sanitizer runtime the executable at `path` brings, in words for the info line: a needed
// library ("libasan.so.8", "libclang_rt.asan-x86_64.so", libtsan, libclang_rt.tsan) or a symbol of
// its dynamic symbol table ("__asan_init", "__tsan_init": instrumented code, or a runtime linked
// in statically). A script's interpreter ("#!", once, `/usr/bin/env NAME` looked up in
// `path_variable`) is what runs, so it is the one examined. Empty when none.
std::string SanitizerRuntimeOf(const std::string& path, std::string_view path_variable);

// The first entry of an LD_PRELOAD value (entries split at ':' and ' ') that is a sanitizer
// runtime; empty when none.
std::string SanitizerInPreload(std::string_view ld_preload);

}  // namespace gpuprof::cli
