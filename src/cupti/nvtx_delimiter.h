// Range replay's NVTX delimiter (REPLAY_SPEC W1, RangeDelimiter::kNvtx): which NVTX calls begin and
// end a range. A range is an NVTX range whose message equals the configured name, pushed and popped
// (per thread and domain, as NVTX nests them) or started and ended (by range id, from any thread).
// Pure bookkeeping over CUPTI's NVTX callback parameters, no CUDA calls: the hook acts on the answer.
//
// Thread-safety: all methods may be called from any thread; push/pop nesting is per thread.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>

namespace gpuprof::cupti {

class NvtxDelimiter {
 public:
  enum class Action : std::uint8_t { kNone, kBegin, kEnd };

  // The NVTX range name that delimits ranges; empty: NVTX delimits nothing (one relaxed load per
  // NVTX call).
  void Configure(std::string name);
  // CUPTI's NVTX callback (`data` is its CUpti_NvtxData).
  Action OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& data);

 private:
  bool Matches(const char* message) const;

  std::atomic<bool> enabled_{false};
  mutable std::mutex mu_;
  std::string name_;                          // guarded by mu_
  std::unordered_set<std::uint64_t> starts_;  // ids of matching nvtxRangeStart ranges; guarded by mu_
};

}  // namespace gpuprof::cupti
