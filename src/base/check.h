// Invariant checks. GPUPROF_CHECK aborts with the condition, location and message when an
// invariant that must hold in every build is broken; GPUPROF_DCHECK does the same only in debug
// builds (NDEBUG unset) and compiles to nothing otherwise. Neither is for errors the caller can
// recover from: return a Status for those.
//
//   GPUPROF_CHECK(size > 0) << "region " << base << " has no bytes";
#pragma once

#include <sstream>

namespace gpuprof::base {

class CheckFailure {
 public:
  CheckFailure(const char* condition, const char* file, int line);
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Lets `cond ? (void)0 : Voidify() & stream << ...` type-check with a streamed message.
struct CheckVoidify {
  void operator&(std::ostream&) const noexcept {}
};

}  // namespace gpuprof::base

#define GPUPROF_CHECK(condition)                  \
  (condition) ? (void)0                           \
              : ::gpuprof::base::CheckVoidify() & \
                    ::gpuprof::base::CheckFailure(#condition, __FILE__, __LINE__).stream()

#ifdef NDEBUG
#define GPUPROF_DCHECK(condition)          \
  true ? (void)0                           \
       : ::gpuprof::base::CheckVoidify() & \
             ::gpuprof::base::CheckFailure(#condition, __FILE__, __LINE__).stream()
#else
#define GPUPROF_DCHECK(condition) GPUPROF_CHECK(condition)
#endif
