// A copy of libgpuprof.so from the first release, as another copy in the process sees it: its
// gpuprof_active_session_v1 table ends at last_error (no framework records, no device correlation,
// no replay configuration, no domain ranges). The process tests load it next to the current
// library to check that the current one still attaches to it and says what the old one cannot do.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpuprof/gpuprof_c.h"

namespace {

int g_starts = 0;
std::string g_marks;  // the marks forwarded to this copy, ";"-separated

int Acquire() { return ++g_starts, GPUPROF_OK; }
int Release() { return --g_starts, GPUPROF_OK; }
int Flush() { return GPUPROF_OK; }
int Mark(const char* message) {
  g_marks += std::string(message) + ";";
  return GPUPROF_OK;
}
int RangeStart(const char*, uint64_t* id) {
  *id = 1;
  return GPUPROF_OK;
}
int RangeEnd(uint64_t) { return GPUPROF_OK; }
const char* LastError() { return ""; }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) const gpuprof_session_v1* gpuprof_active_session_v1(void) noexcept {
  static gpuprof_session_v1 table = [] {
    gpuprof_session_v1 t{};
    t.size = static_cast<uint32_t>(offsetof(gpuprof_session_v1, last_error) + sizeof(t.last_error));
    t.acquire = &Acquire;
    t.release = &Release;
    t.flush = &Flush;
    t.mark = &Mark;
    t.range_start = &RangeStart;
    t.range_end = &RangeEnd;
    t.last_error = &LastError;
    // What a later copy would have filled in: set here, so only `size` can say they are absent.
    t.record_gc_event = [](const gpuprof_gc_event_v1*) -> int { return GPUPROF_OK; };
    return t;
  }();
  table.pid = static_cast<uint32_t>(getpid());
  return &table;
}

__attribute__((visibility("default"))) const char* older_copy_marks(void) { return g_marks.c_str(); }
__attribute__((visibility("default"))) int older_copy_starts(void) { return g_starts; }

}  // extern "C"
