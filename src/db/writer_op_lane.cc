#include "db/writer_op_lane.h"

#include <charconv>
#include <optional>
#include <system_error>

namespace gpuprof::db::internal {
namespace {

// "ProfilerStep#12" -> 12; -1 when the name is not a profiler step.
std::int64_t ParseStepNumber(std::string_view name) {
  constexpr std::string_view kStep = "ProfilerStep#";
  std::size_t at = name.find(kStep);
  if (at == std::string_view::npos) return -1;
  std::string_view digits = name.substr(at + kStep.size());
  std::int64_t value = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end == digits.data()) return -1;
  return value;
}

}  // namespace

void OpLane::Process(std::vector<trace::TorchOp>& batch) {
  for (trace::TorchOp& op : batch) Add(op);
  if (!local_.strings.empty() || !local_.callchains.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    Append(std::move(local_), &shared_);
    local_ = {};
  }
}

LaneRows OpLane::TakeRows() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(shared_, {});
}

void OpLane::Append(LaneRows&& from, LaneRows* to) {
  to->strings.insert(to->strings.end(), from.strings.begin(), from.strings.end());
  to->callchains.insert(to->callchains.end(), from.callchains.begin(), from.callchains.end());
}

std::uint64_t OpLane::Id(std::string_view value) {
  StringTable::Interned interned = strings_.Intern(StringSpace::kFramework, value);
  if (interned.is_new) {
    // The table's own copy: stable for the writer's lifetime, unlike the record's.
    local_.strings.emplace_back(interned.id, interned.value);
  }
  return interned.id;
}

std::uint64_t OpLane::CallchainId(const std::vector<std::string>& frames) {
  frame_ids_.clear();
  for (const std::string& frame : frames) frame_ids_.push_back(Id(frame));
  std::string key(reinterpret_cast<const char*>(frame_ids_.data()),
                  frame_ids_.size() * sizeof(std::uint64_t));
  auto [it, inserted] = callchain_ids_.try_emplace(std::move(key), next_callchain_id_);
  if (!inserted) return it->second;
  std::uint64_t chain = next_callchain_id_++;
  for (std::size_t depth = 0; depth < frame_ids_.size(); ++depth) {
    local_.callchains.push_back({chain, frame_ids_[depth], depth});
  }
  return chain;
}

void OpLane::Add(trace::TorchOp& op) {
  OpIds ids;
  std::uint64_t name_id = Id(op.name);
  ids.dtypes = IdOrNull(op.input_dtypes);
  ids.shapes = IdOrNull(op.input_shapes);
  if (!op.call_stack.empty()) ids.callchain = CallchainId(op.call_stack);
  op_ids_.push_back(ids);
  OpSpan& span = ops_.emplace_back();
  span.api_row = ops_.size();  // PYTORCH_API rows are inserted in this order at Finalize
  span.start_ns = op.start_ns;
  span.end_ns = op.end_ns;
  span.pid = op.pid;
  span.tid = op.tid;
  span.sequence_number = op.sequence_number;
  span.fwd_thread_id = op.fwd_thread_id;
  span.name_id = name_id;
  span.step_number = ParseStepNumber(op.name);
  span.correlation_ids = std::move(op.correlation_ids);
  span.external_id = op.external_id;
  span.type = op.type;
  std::optional<CollectiveName> collective = ParseCollectiveName(op.name);
  span.communication = collective.has_value() || IsCommunicationLauncherName(op.name);
  any_step_ = any_step_ || span.step_number >= 0;
  if (collective) {
    CollectiveSpan& c = collectives_.emplace_back();
    c.start_ns = op.start_ns;
    c.end_ns = op.end_ns;
    c.pid = op.pid;
    c.tid = op.tid;
    c.op_name = op.name;
    c.name = *std::move(collective);
    c.count = FirstInputElements(op.input_shapes);
    c.data_type = HcclDataTypeOf(op.input_dtypes);
  }
}

}  // namespace gpuprof::db::internal
