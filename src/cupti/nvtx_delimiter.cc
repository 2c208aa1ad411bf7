#include "cupti/nvtx_delimiter.h"

#include <generated_nvtx_meta.h>

#include <cstring>
#include <utility>
#include <vector>

namespace gpuprof::cupti {

namespace {

// This thread's open push ranges, innermost last: the domain (null for the default one) and whether
// the range delimits.
struct Pushed {
  const void* domain = nullptr;
  bool delimits = false;
};
thread_local std::vector<Pushed> pushed;

const char* AsciiMessage(const nvtxEventAttributes_t* attributes) noexcept {
  if (attributes == nullptr || attributes->messageType != NVTX_MESSAGE_TYPE_ASCII) return nullptr;
  return attributes->message.ascii;
}

}  // namespace

void NvtxDelimiter::Configure(std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  name_ = std::move(name);
  starts_.clear();
  enabled_.store(!name_.empty(), std::memory_order_relaxed);
}

bool NvtxDelimiter::Matches(const char* message) const {
  if (message == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return name_ == message;
}

NvtxDelimiter::Action NvtxDelimiter::OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& data) {
  if (!enabled_.load(std::memory_order_relaxed) || data.functionParams == nullptr) return Action::kNone;
  const void* p = data.functionParams;
  auto push = [](const void* domain, bool delimits) {
    if (pushed.size() >= (std::size_t{1} << 16)) pushed.clear();  // pushes never popped: bounded
    pushed.push_back({domain, delimits});
    return delimits ? Action::kBegin : Action::kNone;
  };
  auto pop = [](const void* domain) {
    for (auto it = pushed.rbegin(); it != pushed.rend(); ++it) {
      if (it->domain != domain) continue;
      const bool delimits = it->delimits;
      pushed.erase(std::next(it).base());
      return delimits ? Action::kEnd : Action::kNone;
    }
    return Action::kNone;  // a pop without a push this thread saw
  };
  auto start = [this, &data](bool delimits) {
    if (!delimits || data.functionReturnValue == nullptr) return Action::kNone;
    std::lock_guard<std::mutex> lock(mu_);
    starts_.insert(*static_cast<const nvtxRangeId_t*>(data.functionReturnValue));
    return Action::kBegin;
  };
  auto end = [this](nvtxRangeId_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return starts_.erase(id) > 0 ? Action::kEnd : Action::kNone;
  };
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      return push(nullptr, Matches(static_cast<const nvtxRangePushA_params*>(p)->message));
    case CUPTI_CBID_NVTX_nvtxRangePushW: return push(nullptr, false);  // wide names never match
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      return push(nullptr, Matches(AsciiMessage(static_cast<const nvtxRangePushEx_params*>(p)->eventAttrib)));
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      auto* a = static_cast<const nvtxDomainRangePushEx_params*>(p);
      return push(a->domain, Matches(AsciiMessage(a->core.eventAttrib)));
    }
    case CUPTI_CBID_NVTX_nvtxRangePop: return pop(nullptr);
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      return pop(static_cast<const nvtxDomainRangePop_params*>(p)->domain);
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
      return start(Matches(static_cast<const nvtxRangeStartA_params*>(p)->message));
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      return start(Matches(AsciiMessage(static_cast<const nvtxRangeStartEx_params*>(p)->eventAttrib)));
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
      return start(
          Matches(AsciiMessage(static_cast<const nvtxDomainRangeStartEx_params*>(p)->core.eventAttrib)));
    case CUPTI_CBID_NVTX_nvtxRangeEnd: return end(static_cast<const nvtxRangeEnd_params*>(p)->id);
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
      return end(static_cast<const nvtxDomainRangeEnd_params*>(p)->core.id);
    default: return Action::kNone;
  }
}

}  // namespace gpuprof::cupti
