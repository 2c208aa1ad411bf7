#include "replay/controller.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>
#include <utility>

#include "base/clock.h"
#include "base/logging.h"
#include "base/settings.h"
#include "replay/metric_catalog.h"
#include "replay/range_replay.h"
#include "replay/snapshot.h"

namespace gpuprof::replay {
namespace {

constexpr std::string_view kRegexPrefix = "regex:";
static_assert(static_cast<int>(SnapshotStorage::kDevice) == static_cast<int>(device::StorageTier::kDevice) &&
                  static_cast<int>(SnapshotStorage::kPinnedHost) ==
                      static_cast<int>(device::StorageTier::kPinnedHost) &&
                  static_cast<int>(SnapshotStorage::kPageableHost) ==
                      static_cast<int>(device::StorageTier::kPageableHost) &&
                  static_cast<int>(SnapshotStorage::kFile) == static_cast<int>(device::StorageTier::kFile),
              "SnapshotStorage must name the storage tiers in device.h's order");
bool IsCollectiveKernelName(std::string_view name) {
  // NCCL's device kernels are named ncclKernel_*, ncclDevKernel_* (mangled: _Z..nccl...).
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("nccl") != std::string::npos;
}

// How a message names the setting that changes a C2 default: its `gpuprof replay` option, its
// variable and its gpuprof.KernelReplay argument (the JSON key without "replay_"), all from the
// setting's row, at `on` ("--replay-malloc-kernels=1 (GPUPROF_REPLAY_MALLOC_KERNELS=1,
// gpuprof.KernelReplay(malloc_kernels=True))").
std::string SettingHint(base::SettingId id, bool on) {
  const base::SettingSpec& spec = base::Spec(id);
  constexpr std::string_view kKeyPrefix = "replay_";
  const std::string value = on ? "1" : "0";
  return std::string(spec.cli.substr(0, spec.cli.find(','))) + "=" + value + " (" + std::string(spec.env) +
         "=" + value + ", gpuprof.KernelReplay(" + std::string(spec.json_key.substr(kKeyPrefix.size())) +
         "=" + (on ? "True" : "False") + "))";
}

std::string JoinPasses(const std::vector<int>& passes) {
  std::string out;
  for (int pass : passes) {
    if (!out.empty()) out += ",";
    out += std::to_string(pass);
  }
  return out;
}

}  // namespace

Controller::Controller(Inventory& inventory, std::vector<device::Device*> devices, ReplayOptions options)
    : inventory_(inventory),
      devices_(std::move(devices)),
      windows_(std::make_unique<std::shared_mutex[]>(devices_.size())) {
  snapshots_.reserve(devices_.size());
  for (device::Device* device : devices_) {
    snapshots_.push_back(device != nullptr ? std::make_unique<Snapshot>(*device) : nullptr);
  }
  range_ = std::make_unique<RangeReplay>(inventory_, devices_.size());
  plans_.push_back(MakePlan(std::move(options)));
  plan_.store(plans_.back().get(), std::memory_order_release);
}

std::unique_ptr<Controller::Plan> Controller::MakePlan(ReplayOptions options) {
  auto plan = std::make_unique<Plan>();
  plan->options = std::move(options);
  const std::string& name = plan->options.selector.name;
  if (name.rfind(kRegexPrefix, 0) == 0) {
    plan->name_regex = std::make_unique<std::regex>(name.substr(kRegexPrefix.size()), std::regex::ECMAScript);
  }
  return plan;
}

Status Controller::Reconfigure(ReplayOptions options) {
  GPUPROF_RETURN_IF_ERROR(ValidateOptions(options));
  std::unique_ptr<Plan> plan = MakePlan(std::move(options));
  {
    std::lock_guard<std::mutex> lock(plans_mu_);
    plans_.push_back(std::move(plan));
    plan_.store(plans_.back().get(), std::memory_order_release);
  }
  IdleCounters();  // a new plan: the next collection sets up again (a paused replay holds nothing)
  return OkStatus();
}

const ReplayOptions& Controller::options() const noexcept { return CurrentPlan().options; }

bool Controller::Plan::NameMatches(const std::string& kernel_name) const {
  const std::string& name = options.selector.name;
  return name.empty() || (name_regex ? std::regex_search(kernel_name, *name_regex) : kernel_name == name);
}

Controller::~Controller() = default;

Status Controller::ValidateOptions(const ReplayOptions& options) {
  // The engine also runs 1 pass (pass-through: a paused or declined launch); users choose from the
  // replay_passes setting's range (base/settings.h).
  const base::SettingSpec& passes = base::Spec(base::SettingId::kReplayPasses);
  if (options.passes < 1 || options.passes > passes.max) {
    return InvalidArgumentError("--passes must be 1 (pass-through) or " + base::SettingAccepts(passes) +
                                " (got " + std::to_string(options.passes) + ")");
  }
  if (options.chunk_size == 0)
    return InvalidArgumentError("the dirty-detection chunk size must be positive (got 0 bytes)");
  if (options.drain_timeout.count() <= 0) {
    return InvalidArgumentError("the drain timeout must be positive (got " +
                                std::to_string(options.drain_timeout.count()) + " ns)");
  }
  if (options.max_counter_passes < 1) {
    return InvalidArgumentError("the counter pass cap must be at least 1 (got " +
                                std::to_string(options.max_counter_passes) + ")");
  }
  for (const std::string& metric : options.metrics) {
    if (metric.empty()) return InvalidArgumentError("an empty metric name in the metric list");
  }
  // The selector's own check (C4), the one the CLI and the session apply to -k.
  const StatusOr<std::string> kernel =
      base::ParseSettingText(base::Spec(base::SettingId::kReplayKernel), options.selector.name, "-k");
  return kernel.ok() ? OkStatus() : kernel.status();
}

std::shared_lock<std::shared_mutex> Controller::EnterDeviceShared(int device) {
  if (device < 0 || static_cast<std::size_t>(device) >= devices_.size()) return {};
  return std::shared_lock<std::shared_mutex>(windows_[static_cast<std::size_t>(device)]);
}

void Controller::SetCounterBackend(std::shared_ptr<CounterBackend> backend) {
  *counter_backend_.wlock() = std::move(backend);
}

void Controller::SetClockApi(std::shared_ptr<ClockApi> api) { *clock_api_.wlock() = std::move(api); }

void Controller::SetRecordSink(std::function<void(const ReplayRecord&)> sink) {
  *sink_.wlock() = std::move(sink);
}

std::vector<ReplayRecord> Controller::records() const { return *records_.rlock(); }

void Controller::Publish(const ReplayRecord& record) {
  records_.wlock()->push_back(record);
  auto sink = sink_.rlock();
  if (*sink) (*sink)(record);
}

bool Controller::NameMatches(const std::string& kernel_name) const {
  return CurrentPlan().NameMatches(kernel_name);
}

bool Controller::Exhausted() const noexcept {
  const Plan& plan = CurrentPlan();
  return plan.options.passes <= 1 ||
         (plan.options.selector.count > 0 &&
          plan.replayed.load(std::memory_order_relaxed) >= plan.options.selector.count);
}

Controller::Selection Controller::Select(Plan& plan, bool name_matches) {
  Selection selection;
  if (plan.options.passes <= 1 || !name_matches) return selection;
  selection.launch_index = plan.matched.fetch_add(1, std::memory_order_relaxed);
  if (selection.launch_index < plan.options.selector.skip) return selection;
  if (plan.options.selector.count > 0 &&
      plan.replayed.fetch_add(1, std::memory_order_relaxed) >= plan.options.selector.count) {
    return selection;
  }
  selection.selected = true;
  return selection;
}

Status Controller::RunUnreplayed(const device::LaunchRequest& request, device::LaunchExecutor& executor) {
  auto shared = EnterDeviceShared(request.device);
  return executor.RunOriginal();
}

Status Controller::Dispatch(const device::LaunchRequest& request, device::LaunchExecutor& executor) {
  // One plan for the whole launch, even when Reconfigure replaces it meanwhile.
  Plan& plan = CurrentPlan();
  const ReplayOptions& options = plan.options;
  if (options.range_replay) return DispatchInRange(plan, request, executor);
  if (request.kind == device::LaunchKind::kGraph && options.graph_replay != GraphReplay::kOff) {
    return DispatchGraph(plan, request, executor);
  }
  Selection selection = Select(plan, plan.NameMatches(request.kernel_name));
  if (!selection.selected) return RunUnreplayed(request, executor);

  ReplayRecord record;
  record.launch_index = selection.launch_index;
  record.device = request.device;
  record.kernel_name = request.kernel_name;
  record.restore_mode = options.restore;

  device::Device* device = request.device >= 0 && static_cast<std::size_t>(request.device) < devices_.size()
                               ? devices_[static_cast<std::size_t>(request.device)]
                               : nullptr;
  if (device == nullptr) {
    GPUPROF_LOG(kWarning) << "replay: launch of " << request.kernel_name << " names unknown device "
                          << request.device << "; it runs once";
    return RunUnreplayed(request, executor);
  }
  auto decline = [&](DeclineReason reason, std::string detail) {
    return DeclineUnreplayed(std::move(record), reason, std::move(detail), request, executor,
                             /*warn=*/reason != DeclineReason::kGraphLaunch);
  };

  if (inventory_.finalizing()) return decline(DeclineReason::kFinalizing, "process finalization has begun");
  if (request.kind == device::LaunchKind::kGraph) {
    record.replay_mode = ReplayMode::kGraph;
    if (!warned_graph_.exchange(true, std::memory_order_relaxed)) {
      GPUPROF_LOG(kWarning) << "graph launches are not replayed; each runs once ("
                            << (options.graph_replay_offered
                                    ? "pass " + GraphReplayHint() + " to replay them; "
                                    : std::string())
                            << "this warning is shown once)";
    }
    return decline(DeclineReason::kGraphLaunch,
                   options.graph_replay_offered
                       ? "graph launches are not replayed; pass " + GraphReplayHint() + " to replay them"
                       : "graph launches are not replayed");
  }
  if (request.stream_capturing) {
    return decline(DeclineReason::kStreamCapture,
                   "the stream is capturing; draining or copying would break the capture");
  }
  if (request.kind == device::LaunchKind::kBatch || request.dispatch_count != 1) {
    return decline(DeclineReason::kMultiDispatch,
                   "submission holds " + std::to_string(request.dispatch_count) +
                       " dispatches; only single-kernel launches are replayed");
  }
  if (std::optional<std::pair<DeclineReason, std::string>> refused = SideEffectDecline(
          options, request.kernel_name, request.uses_device_printf, request.uses_device_malloc)) {
    return decline(refused->first, std::move(refused->second));
  }
  if (std::optional<std::pair<DeclineReason, std::string>> refused =
          DeviceStateDecline(options, request, record)) {
    return decline(refused->first, std::move(refused->second));
  }
  WarnPrintf(request.kernel_name, request.uses_device_printf);
  return Replay(*device, std::move(record), executor, options, nullptr);
}

Status Controller::DeclineUnreplayed(ReplayRecord record, DeclineReason reason, std::string detail,
                                     const device::LaunchRequest& request, device::LaunchExecutor& executor,
                                     bool warn) {
  // Declines decided before the window run on the ordinary path (window held shared).
  record.decline_reason = reason;
  record.decline_detail = std::move(detail);
  if (warn) {
    GPUPROF_LOG(kWarning) << "replay declined for " << record.kernel_name << " on device " << record.device
                          << " (" << DeclineReasonName(reason) << "): " << record.decline_detail
                          << "; it runs once";
  }
  Status status = RunUnreplayed(request, executor);
  Publish(record);
  return status;
}

std::optional<std::pair<DeclineReason, std::string>> Controller::SideEffectDecline(
    const ReplayOptions& options, const std::string& kernel, bool uses_printf, bool uses_malloc) {
  // C2: each kind of side effect has its own setting, named in the reason.
  if (uses_printf && !options.replay_printf_kernels) {
    return std::pair{DeclineReason::kSideEffects,
                     "kernel " + kernel + " uses device printf, whose output replay would repeat; pass " +
                         SettingHint(base::SettingId::kReplayPrintfKernels, true) + " to replay it anyway"};
  }
  if (uses_malloc && !options.replay_malloc_kernels) {
    return std::pair{DeclineReason::kSideEffects,
                     "kernel " + kernel + " uses device malloc, whose effects replay would repeat; pass " +
                         SettingHint(base::SettingId::kReplayMallocKernels, true) + " to replay it anyway"};
  }
  if (IsCollectiveKernelName(kernel)) {
    return std::pair{DeclineReason::kCollectiveKernel,
                     "collective (NCCL) kernels wait on other processes and cannot be replayed safely"};
  }
  return std::nullopt;
}

std::optional<std::pair<DeclineReason, std::string>> Controller::DeviceStateDecline(
    const ReplayOptions& options, const device::LaunchRequest& request, ReplayRecord& record) {
  if (request.live_arrays > 0 && !options.replay_with_live_arrays) {
    return std::pair{
        DeclineReason::kIncompleteSnapshot,
        std::to_string(request.live_arrays) +
            " CUDA array(s) exist on the device and are not snapshotted, so writes to them could "
            "not be undone; pass " +
            SettingHint(base::SettingId::kReplayWithLiveArrays, true) + " to replay anyway"};
  }
  if (request.peer_access) {
    return std::pair{
        DeclineReason::kIncompleteSnapshot,
        std::string(
            "peer access to another device is enabled, and that device's memory is not in the snapshot")};
  }
  if (options.strict) {
    std::uint64_t untracked = inventory_.untracked_writable_live_bytes();
    if (untracked > 0) {
      record.untracked_writable_bytes = untracked;
      return std::pair{
          DeclineReason::kUntrackedWritableMemory,
          std::to_string(untracked) +
              " bytes of host-mapped/managed/IPC memory are live and cannot be restored (strict mode)"};
    }
  }
  return std::nullopt;
}

std::optional<std::pair<DeclineReason, std::string>> Controller::RangeLaunchDecline(
    const ReplayOptions& options, const device::LaunchRequest& request) {
  if (inventory_.finalizing())
    return std::pair{DeclineReason::kFinalizing, std::string("process finalization has begun")};
  if (request.kind == device::LaunchKind::kGraph) {
    return std::pair{DeclineReason::kGraphLaunch,
                     std::string("graph launches inside a range are not re-issued")};
  }
  if (request.stream_capturing) {
    return std::pair{DeclineReason::kStreamCapture, std::string("the stream is capturing into a graph")};
  }
  if (auto refused = SideEffectDecline(options, request.kernel_name, request.uses_device_printf,
                                       request.uses_device_malloc)) {
    return refused;
  }
  ReplayRecord unused;
  return DeviceStateDecline(options, request, unused);
}

void Controller::WarnPrintf(const std::string& kernel, bool uses_printf) {
  if (!uses_printf || !printf_warned_.wlock()->insert(kernel).second) return;
  GPUPROF_LOG(kWarning) << "replaying " << kernel
                        << ", which uses device printf: a message it prints repeats once per pass; pass "
                        << SettingHint(base::SettingId::kReplayPrintfKernels, false)
                        << " to decline it (this warning is shown once per kernel)";
}

std::string Controller::GraphReplayHint() {
  const base::SettingSpec& spec = base::Spec(base::SettingId::kReplayGraph);
  return std::string(spec.cli.substr(0, spec.cli.find(','))) + " graph or node (" + std::string(spec.env) +
         ")";
}

bool Controller::ReplaysGraphs() const noexcept {
  return CurrentPlan().options.graph_replay != GraphReplay::kOff && !Exhausted();
}

Status Controller::DispatchGraph(Plan& plan, const device::LaunchRequest& request,
                                 device::LaunchExecutor& executor) {
  const ReplayOptions& options = plan.options;
  if (options.passes <= 1) return RunUnreplayed(request, executor);
  ReplayRecord record;
  record.device = request.device;
  record.kernel_name = request.kernel_name;
  record.restore_mode = options.restore;
  record.replay_mode = ReplayMode::kGraph;

  StatusOr<device::GraphDescription> graph = executor.DescribeGraph();
  if (!graph.ok()) {
    Selection selection = Select(plan, plan.options.selector.name.empty());
    if (!selection.selected) return RunUnreplayed(request, executor);
    record.launch_index = selection.launch_index;
    return DeclineUnreplayed(std::move(record), DeclineReason::kGraphLaunch,
                             "the graph's nodes could not be listed: " + graph.status().ToString(), request,
                             executor);
  }
  record.graph_id = graph->graph_id;
  record.graph_nodes = static_cast<std::uint32_t>(graph->nodes.size());
  record.kernel_name = "graph " + std::to_string(graph->graph_id);
  bool name_matches = plan.options.selector.name.empty();
  for (const device::GraphNode& node : graph->nodes) {
    if (node.type != device::GraphNodeType::kKernel) continue;
    ++record.graph_kernel_nodes;
    name_matches = name_matches || plan.NameMatches(node.kernel_name);
  }
  Selection selection = Select(plan, name_matches);
  if (!selection.selected) return RunUnreplayed(request, executor);
  record.launch_index = selection.launch_index;

  device::Device* device = request.device >= 0 && static_cast<std::size_t>(request.device) < devices_.size()
                               ? devices_[static_cast<std::size_t>(request.device)]
                               : nullptr;
  if (device == nullptr) {
    GPUPROF_LOG(kWarning) << "replay: launch of " << record.kernel_name << " names unknown device "
                          << request.device << "; it runs once";
    return RunUnreplayed(request, executor);
  }
  auto decline = [&](DeclineReason reason, std::string detail) {
    return DeclineUnreplayed(std::move(record), reason, std::move(detail), request, executor);
  };
  if (inventory_.finalizing()) return decline(DeclineReason::kFinalizing, "process finalization has begun");
  if (request.stream_capturing) {
    return decline(DeclineReason::kStreamCapture,
                   "the stream is capturing; draining or copying would break the capture");
  }
  if (!graph->relaunch_blocker.empty()) {
    return decline(DeclineReason::kGraphLaunch,
                   "the graph cannot be launched again: " + graph->relaunch_blocker);
  }
  for (const device::GraphNode& node : graph->nodes) {
    if (node.type != device::GraphNodeType::kKernel) continue;
    if (std::optional<std::pair<DeclineReason, std::string>> refused =
            SideEffectDecline(options, node.kernel_name, node.uses_device_printf, node.uses_device_malloc)) {
      return decline(refused->first, "node " + std::to_string(node.id) + ": " + refused->second);
    }
  }
  if (std::optional<std::pair<DeclineReason, std::string>> refused =
          DeviceStateDecline(options, request, record)) {
    return decline(refused->first, std::move(refused->second));
  }
  for (const device::GraphNode& node : graph->nodes) WarnPrintf(node.kernel_name, node.uses_device_printf);

  if (options.graph_replay == GraphReplay::kNode) {
    if (graph->node_blocker.empty())
      return ReplayNodes(*device, std::move(record), executor, options, *graph, plan);
    record.graph_fallback = graph->node_blocker;
    if (fallback_warned_.wlock()->insert(graph->graph_id).second) {
      GPUPROF_LOG(kWarning) << "graph " << graph->graph_id
                            << " is replayed as a whole, not node by node: " << graph->node_blocker
                            << " (shown once per graph)";
    }
  }
  return Replay(*device, std::move(record), executor, options, &*graph);
}

void Controller::LockClocks(const ReplayOptions& options, int device, std::optional<ClockLock>& clocks,
                            ReplayRecord& record) {
  // C3: with --clock-control base every pass (timing and counter) runs at base clocks, released
  // before the final restore. A device whose clocks could not be locked is not asked again: its
  // lock warned once, and its launches run at the clocks as they are.
  if (options.clock_control != ClockControl::kBase || clocks_given_up_.rlock()->contains(device)) return;
  const std::shared_ptr<ClockApi> clock_api = *clock_api_.rlock();
  clocks.emplace(clock_api.get(), device, ClockControl::kBase);
  if (clocks->locked()) {
    record.clock_control = ClockControl::kBase;
  } else {
    clocks_given_up_.wlock()->insert(device);
    clocks.reset();
  }
}

Controller::PassSteps Controller::KernelSteps(device::LaunchExecutor& executor) {
  PassSteps steps;
  steps.run = [&executor](int pass) { return executor.RunPass(pass); };
  steps.prepare_counter_pass = [&executor] { return executor.PrepareCounterPass(); };
  steps.run_counter_pass = [&executor](int pass) { return executor.RunCounterPass(pass); };
  return steps;
}

RestoreStats Controller::RestoreInputs(Snapshot& snapshot, const PassSteps& steps,
                                       const ReplayOptions& options, std::uint64_t* output_hash,
                                       std::string* failure) {
  RestoreStats restored =
      snapshot.Restore(inventory_, options.restore, options.determinism_check ? output_hash : nullptr);
  if (restored.regions_failed == 0 && steps.after_restore) {
    if (Status status = steps.after_restore(); !status.ok()) *failure = status.ToString();
  }
  return restored;
}

std::optional<Status> Controller::RunTimingPasses(Snapshot& snapshot, ReplayRecord& record,
                                                  const PassSteps& steps, const ReplayOptions& options,
                                                  const device::GraphDescription* graph) {
  // The output of pass p is hashed by the restore before pass p + 1 (one read for both), and the
  // last pass's by the final inspection or restore.
  for (int pass = 1; pass <= options.passes; ++pass) {
    PassRecord pass_record;
    pass_record.pass = pass;
    if (pass > 1) {
      std::uint64_t output_hash = 0;
      std::string failure;
      // If the copies keep failing, stop: running again on different inputs would both
      // mismeasure and corrupt.
      RestoreStats restored = RestoreInputs(snapshot, steps, options, &output_hash, &failure);
      record.passes.back().output_hash = output_hash;
      if (restored.regions_failed > 0) {
        record.decline_reason = DeclineReason::kRestoreFailed;
        record.decline_detail = std::to_string(restored.regions_failed) +
                                " region(s) could not be written back before pass " + std::to_string(pass) +
                                ", even by full restores; replay stopped after pass " +
                                std::to_string(pass - 1);
        GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << record.decline_detail
                            << "; device memory may differ from an unreplayed run";
        break;
      }
      if (!failure.empty()) {
        record.decline_reason = DeclineReason::kLaunchFailed;
        record.decline_detail = "running the graph's nodes before this one again for pass " +
                                std::to_string(pass) + " failed: " + failure;
        GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << record.decline_detail;
        break;
      }
      pass_record.bytes_restored = restored.bytes_restored;
      pass_record.regions_restored = restored.regions_restored;
      pass_record.dirty_chunks = restored.dirty_chunks;
    }
    pass_record.start_ns = base::EpochNowNs();
    StatusOr<device::PassTiming> timing = steps.run(pass);
    if (!timing.ok()) {
      // Pass 1 is the application's own work: its failure is the application's error to see.
      if (pass == 1) return timing.status();
      record.decline_reason = DeclineReason::kLaunchFailed;
      record.decline_detail =
          "pass " + std::to_string(pass) + " failed to launch: " + timing.status().ToString();
      GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << record.decline_detail;
      break;
    }
    pass_record.duration_ns = timing->duration_ns;
    pass_record.sm_clock_before_khz = timing->sm_clock_before_khz;
    pass_record.sm_clock_after_khz = timing->sm_clock_after_khz;
    if (graph != nullptr) {
      for (const device::NodeTiming& node : timing->kernel_nodes) {
        GraphNodeDuration duration;
        duration.node_id = node.node_id;
        duration.duration_ns = node.duration_ns;
        for (const device::GraphNode& described : graph->nodes) {
          if (described.id == node.node_id) duration.kernel_name = described.kernel_name;
        }
        pass_record.kernel_nodes.push_back(std::move(duration));
      }
    }
    record.passes.push_back(std::move(pass_record));
  }
  return std::nullopt;
}

void Controller::CheckDeterminism(Snapshot& snapshot, ReplayRecord& record, const ReplayOptions& options) {
  if (options.determinism_check && !record.passes.empty() && record.passes.back().output_hash == 0 &&
      record.decline_reason == DeclineReason::kNone) {
    StatusOr<std::uint64_t> inspected = snapshot.Inspect(inventory_);
    if (inspected.ok()) {
      record.passes.back().output_hash = *inspected;
    } else {
      GPUPROF_LOG(kWarning) << "replay of " << record.kernel_name << ": hashing pass "
                            << record.passes.back().pass << " output failed ("
                            << inspected.status().ToString() << ")";
    }
  }
  if (options.determinism_check && !record.passes.empty() && record.passes.front().output_hash != 0) {
    std::uint64_t reference = record.passes.front().output_hash;
    for (const PassRecord& pass : record.passes) {
      if (pass.output_hash != 0 && pass.output_hash != reference)
        record.mismatched_passes.push_back(pass.pass);
    }
    record.deterministic = record.mismatched_passes.empty();
    if (!record.deterministic) {
      GPUPROF_LOG(kWarning) << "kernel " << record.kernel_name << " on device " << record.device
                            << " is nondeterministic: pass(es) " << JoinPasses(record.mismatched_passes)
                            << " wrote different bytes than pass 1 from identical inputs";
    }
  }
}

Status Controller::Replay(device::Device& device, ReplayRecord record, device::LaunchExecutor& executor,
                          const ReplayOptions& options, const device::GraphDescription* graph) {
  const std::int64_t replay_start = base::MonotonicNowNs();
  auto held_ns = [replay_start] { return static_cast<std::uint64_t>(base::MonotonicNowNs() - replay_start); };
  std::unique_lock<std::shared_mutex> window(windows_[static_cast<std::size_t>(device.ordinal())]);

  record.clock_control = ClockControl::kNone;  // until the clocks are locked below
  record.caches_flushed = executor.flushes_caches();

  // Declines decided inside the window run once while still holding it (R9).
  auto decline_in_window = [&](DeclineReason reason, std::string detail) {
    record.decline_reason = reason;
    record.decline_detail = std::move(detail);
    GPUPROF_LOG(kWarning) << "replay declined for " << record.kernel_name << " on device " << record.device
                          << " (" << DeclineReasonName(reason) << "): " << record.decline_detail
                          << "; it runs once";
    Status status = executor.RunOriginal();
    record.replay_ns = held_ns();
    Publish(record);
    return status;
  };

  Status declined;
  Snapshot* captured = CaptureInWindow(device, executor, options, record, decline_in_window, declined);
  if (captured == nullptr) return declined;
  Snapshot& snapshot = *captured;

  std::optional<ClockLock> clocks;
  LockClocks(options, device.ordinal(), clocks, record);

  const PassSteps steps = KernelSteps(executor);
  if (std::optional<Status> failed = RunTimingPasses(snapshot, record, steps, options, graph)) {
    // The application's own launch failed: that is its error to see, not a replay problem.
    // What it may have written is not what the arena holds any more.
    snapshot.Invalidate();
    record.replay_ns = held_ns();
    Publish(record);
    return *failed;
  }

  if (!options.metrics.empty() && record.decline_reason == DeclineReason::kNone &&
      !CollectMetrics(snapshot, record, executor, options, steps)) {
    GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << record.decline_detail;
  }
  if (!record.counter_status.empty()) WarnNoCounters(record);
  clocks.reset();  // the passes are over: the clocks go back before the application's launch
  if (graph != nullptr && executor.original_runs_after_return()) {
    if (Status ended = executor.EndGraphPasses(); !ended.ok()) {
      GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << ended.ToString();
    }
  }

  if (executor.original_runs_after_return() && !record.passes.empty()) {
    // The application's launch runs next, on the inputs every pass saw. Like the restores
    // between passes, only what the last pass changed is written back.
    std::uint64_t output_hash = 0;
    RestoreStats restored =
        snapshot.Restore(inventory_, options.restore, options.determinism_check ? &output_hash : nullptr);
    if (record.passes.back().output_hash == 0) record.passes.back().output_hash = output_hash;
    if (restored.regions_failed > 0) {
      GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << restored.regions_failed
                          << " region(s) could not be written back before the application's launch; "
                             "its results may differ from an unreplayed run";
      if (record.decline_reason == DeclineReason::kNone) {
        record.decline_reason = DeclineReason::kRestoreFailed;
        record.decline_detail = "the final restore before the application's launch failed";
      }
    }
  }
  CheckDeterminism(snapshot, record, options);
  if (record.decline_reason != DeclineReason::kNone) {
    // A stopped replay may have left the arena and the device out of step.
    snapshot.Invalidate();
  }
  record.replayed = record.decline_reason == DeclineReason::kNone;
  executor.SignalCompletion();
  record.replay_ns = held_ns();
  Publish(record);
  // The selector's last launch: what the counter backend keeps between launches can go now.
  if (!options.metrics.empty() && Exhausted()) IdleCounters();
  return OkStatus();
}

Snapshot* Controller::CaptureInWindow(device::Device& device, device::LaunchExecutor& executor,
                                      const ReplayOptions& options, ReplayRecord& record,
                                      const std::function<Status(DeclineReason, std::string)>& decline,
                                      Status& declined) {
  // Everything queued before this launch must land before the snapshot; bounded (R14).
  if (Status drained = device.Synchronize(options.drain_timeout); !drained.ok()) {
    declined = decline(DeclineReason::kDrainTimeout, "device did not drain: " + drained.ToString());
    return nullptr;
  }
  if (Status prepared = executor.PrepareForSnapshot(); !prepared.ok()) {
    declined = decline(DeclineReason::kIncompleteSnapshot,
                       "loading the kernel's module failed: " + prepared.ToString());
    return nullptr;
  }
  record.untracked_writable_bytes = inventory_.untracked_writable_live_bytes();

  SnapshotOptions snapshot_options;
  snapshot_options.chunk_size = options.chunk_size;
  snapshot_options.max_symbol_bytes = options.max_symbol_bytes;
  // replay.h's SnapshotStorage names device.h's tiers in the same order (asserted above).
  snapshot_options.fastest_tier = static_cast<device::StorageTier>(options.storage);
  Snapshot& snapshot = *snapshots_[static_cast<std::size_t>(device.ordinal())];
  std::int64_t capture_start = base::MonotonicNowNs();
  const bool captured = snapshot.Capture(inventory_, snapshot_options);
  record.snapshot_ns = static_cast<std::uint64_t>(base::MonotonicNowNs() - capture_start);
  if (!captured) {
    declined = decline(DeclineReason::kIncompleteSnapshot, snapshot.failure());
    return nullptr;
  }
  record.snapshot_regions = snapshot.regions().size();
  record.snapshot_bytes = snapshot.total_bytes();
  record.snapshot_device_bytes = snapshot.device_bytes();
  record.snapshot_copied_bytes = snapshot.last_capture().bytes_copied;
  return &snapshot;
}

Status Controller::ReplayNodes(device::Device& device, ReplayRecord graph_record,
                               device::LaunchExecutor& executor, const ReplayOptions& options,
                               const device::GraphDescription& graph, Plan& plan) {
  const std::int64_t replay_start = base::MonotonicNowNs();
  auto held_ns = [replay_start] { return static_cast<std::uint64_t>(base::MonotonicNowNs() - replay_start); };
  std::unique_lock<std::shared_mutex> window(windows_[static_cast<std::size_t>(device.ordinal())]);
  graph_record.replay_mode = ReplayMode::kNode;
  graph_record.clock_control = ClockControl::kNone;
  graph_record.caches_flushed = executor.flushes_caches();

  auto decline_in_window = [&](DeclineReason reason, std::string detail) {
    graph_record.decline_reason = reason;
    graph_record.decline_detail = std::move(detail);
    GPUPROF_LOG(kWarning) << "replay declined for " << graph_record.kernel_name << " on device "
                          << graph_record.device << " (" << DeclineReasonName(reason)
                          << "): " << graph_record.decline_detail << "; it runs once";
    Status status = executor.RunOriginal();
    graph_record.replay_ns = held_ns();
    Publish(graph_record);
    return status;
  };
  // One snapshot, of the graph's inputs: node i's pass p > 1 starts from it with nodes [0, i) run
  // again, so that every pass sees what node i sees inside the graph.
  Status declined;
  Snapshot* captured = CaptureInWindow(device, executor, options, graph_record, decline_in_window, declined);
  if (captured == nullptr) return declined;
  Snapshot& snapshot = *captured;

  std::optional<ClockLock> clocks;
  LockClocks(options, device.ordinal(), clocks, graph_record);

  std::vector<ReplayRecord> node_records;
  std::string walk_failure;  // non-empty: the walk stopped; the graph runs once as the application asked
  for (std::size_t i = 0; i < graph.nodes.size() && walk_failure.empty(); ++i) {
    const device::GraphNode& node = graph.nodes[i];
    const bool selected = node.type == device::GraphNodeType::kKernel && plan.NameMatches(node.kernel_name);
    if (!selected) {
      if (StatusOr<device::PassTiming> ran = executor.RunGraphNode(i, 0); !ran.ok()) {
        walk_failure = "node " + std::to_string(node.id) + " (" +
                       std::string(device::GraphNodeTypeName(node.type)) +
                       ") failed to run alone: " + ran.status().ToString();
      }
      continue;
    }
    const std::int64_t node_start = base::MonotonicNowNs();
    ReplayRecord record = graph_record;
    record.kernel_name = node.kernel_name;
    record.graph_node_id = node.id;
    PassSteps steps;
    steps.after_restore = [&executor, i]() -> Status {
      for (std::size_t j = 0; j < i; ++j) GPUPROF_RETURN_IF_ERROR(executor.RunGraphNode(j, 0).status());
      return OkStatus();
    };
    steps.run = [&executor, i](int pass) { return executor.RunGraphNode(i, pass); };
    steps.prepare_counter_pass = [&executor] { return executor.PrepareCounterPass(); };
    steps.run_counter_pass = [&executor, i](int pass) { return executor.RunGraphNode(i, pass).status(); };
    if (std::optional<Status> failed = RunTimingPasses(snapshot, record, steps, options, nullptr)) {
      record.decline_reason = DeclineReason::kLaunchFailed;
      record.decline_detail = "the node failed to run alone: " + failed->ToString();
    }
    if (!options.metrics.empty() && record.decline_reason == DeclineReason::kNone &&
        !CollectMetrics(snapshot, record, executor, options, steps)) {
      GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << record.decline_detail;
    }
    if (!record.counter_status.empty()) WarnNoCounters(record);
    CheckDeterminism(snapshot, record, options);
    record.replayed = record.decline_reason == DeclineReason::kNone;
    record.replay_ns = static_cast<std::uint64_t>(base::MonotonicNowNs() - node_start);
    if (!record.replayed) walk_failure = "node " + std::to_string(node.id) + ": " + record.decline_detail;
    node_records.push_back(std::move(record));
  }
  clocks.reset();

  // Back to the graph's inputs when the application's own launch follows (it runs the graph), or
  // when the walk stopped (the graph then runs once here, as the application asked).
  const bool app_runs_after = executor.original_runs_after_return();
  Status status = OkStatus();
  if (app_runs_after || !walk_failure.empty()) {
    RestoreStats restored =
        snapshot.Restore(inventory_, walk_failure.empty() ? options.restore : RestoreMode::kFull, nullptr);
    if (restored.regions_failed > 0) {
      GPUPROF_LOG(kError) << "node-by-node replay of " << graph_record.kernel_name << ": "
                          << restored.regions_failed
                          << " region(s) could not be written back before the graph's own run; its results "
                             "may differ from an unreplayed run";
    }
  }
  if (!walk_failure.empty()) {
    snapshot.Invalidate();
    GPUPROF_LOG(kError) << "node-by-node replay of " << graph_record.kernel_name
                        << " stopped: " << walk_failure << "; the graph runs once";
    if (!app_runs_after) status = executor.RunOriginal();
    if (node_records.empty()) {
      graph_record.decline_reason = DeclineReason::kLaunchFailed;
      graph_record.decline_detail = walk_failure;
      node_records.push_back(graph_record);
    }
  } else {
    executor.SignalCompletion();
  }
  const std::uint64_t total_ns = held_ns();
  for (ReplayRecord& record : node_records) {
    if (record.replay_ns == 0) record.replay_ns = total_ns;
    Publish(record);
  }
  if (!options.metrics.empty() && Exhausted()) IdleCounters();
  return status;
}

void Controller::IdleCounters() noexcept {
  std::shared_ptr<CounterBackend> backend;
  try {
    backend = *counter_backend_.rlock();
  } catch (...) {
    return;
  }
  if (backend != nullptr) backend->Idle();
}

bool Controller::CollectMetrics(Snapshot& snapshot, ReplayRecord& record, device::LaunchExecutor& executor,
                                const ReplayOptions& options, const PassSteps& steps) {
  // Launch metrics come from the launch itself; the rest from counter passes, in one list.
  std::vector<std::string> counted;
  bool launch_metrics = false;
  for (const std::string& name : options.metrics) {
    if (IsLaunchMetric(name)) {
      launch_metrics = true;
    } else {
      counted.push_back(name);
    }
  }
  std::vector<MetricValue> from_launch;
  std::vector<MetricValue> from_counters;
  std::vector<std::string> problems;
  if (launch_metrics) {
    StatusOr<device::LaunchShape> shape = executor.DescribeLaunch();
    if (!shape.ok()) {
      problems.push_back("launch attributes unavailable: " + shape.status().message());
    } else {
      for (const std::string& name : options.metrics) {
        if (!IsLaunchMetric(name)) continue;
        StatusOr<MetricValue> value = LaunchMetric(name, *shape);
        if (value.ok()) {
          from_launch.push_back(*std::move(value));
        } else {
          problems.push_back(value.status().message());
        }
      }
    }
  }

  bool healthy = true;
  const std::shared_ptr<CounterBackend> backend = *counter_backend_.rlock();
  if (!counted.empty()) {
    if (backend == nullptr) {
      problems.push_back(
          "no counter backend: hardware counters need the CUDA build of gpuprof with CUPTI's "
          "profiling API");
    } else if (StatusOr<CounterPlan> plan = backend->Plan(record.device, counted); !plan.ok()) {
      problems.push_back(plan.status().message());
    } else if (plan->passes > options.max_counter_passes) {
      problems.push_back("the metrics need " + std::to_string(plan->passes) +
                         " counter passes, more than the " + std::to_string(options.max_counter_passes) +
                         " allowed; ask for fewer metrics");
    } else if (StatusOr<std::unique_ptr<CounterCollection>> collection =
                   backend->Begin(record.device, counted);
               !collection.ok()) {
      problems.push_back(collection.status().message());
    } else {
      // Every counter pass starts from the inputs every timing pass saw. A backend that keeps
      // asking is stopped a little past its plan.
      const int limit = std::max(plan->passes, 1) + 2;
      bool submitted = false;
      std::string failure;
      while (!submitted && record.counter_passes < limit) {
        std::uint64_t output_hash = 0;
        std::string inputs_failure;
        RestoreStats restored = RestoreInputs(snapshot, steps, options, &output_hash, &inputs_failure);
        if (record.counter_passes == 0 && !record.passes.empty() && record.passes.back().output_hash == 0) {
          record.passes.back().output_hash = output_hash;  // the last timing pass's output
        }
        if (restored.regions_failed > 0) {
          record.decline_reason = DeclineReason::kRestoreFailed;
          record.decline_detail = std::to_string(restored.regions_failed) +
                                  " region(s) could not be written back before counter pass " +
                                  std::to_string(record.counter_passes + 1) + "; replay stopped";
          healthy = false;
          break;
        }
        if (!inputs_failure.empty()) {
          record.decline_reason = DeclineReason::kLaunchFailed;
          record.decline_detail = "running the graph's nodes before this one again for counter pass " +
                                  std::to_string(record.counter_passes + 1) + " failed: " + inputs_failure;
          healthy = false;
          break;
        }
        if (Status prepared = steps.prepare_counter_pass(); !prepared.ok()) {
          failure = "preparing counter pass " + std::to_string(record.counter_passes + 1) + ": " +
                    prepared.message();
          break;
        }
        if (Status begun = (*collection)->BeginPass(); !begun.ok()) {
          failure = begun.message();
          break;
        }
        Status ran = steps.run_counter_pass(options.passes + record.counter_passes + 1);
        ++record.counter_passes;
        if (!ran.ok()) {
          record.decline_reason = DeclineReason::kLaunchFailed;
          record.decline_detail = "counter pass " + std::to_string(record.counter_passes) +
                                  " failed to launch: " + ran.ToString();
          healthy = false;
          break;
        }
        StatusOr<bool> ended = (*collection)->EndPass();
        if (!ended.ok()) {
          failure = ended.status().message();
          break;
        }
        submitted = *ended;
      }
      if (healthy && failure.empty() && !submitted) {
        failure = "the counter backend still wanted passes after " + std::to_string(record.counter_passes) +
                  " (planned " + std::to_string(plan->passes) + ")";
      }
      if (healthy && failure.empty()) {
        StatusOr<std::vector<MetricValue>> values = (*collection)->Finish();
        if (!values.ok()) {
          failure = values.status().message();
        } else {
          from_counters = *std::move(values);
          for (std::size_t i = 0; i < from_counters.size() && i < plan->metric_passes.size(); ++i) {
            if (from_counters[i].passes == 0) from_counters[i].passes = plan->metric_passes[i];
            if (from_counters[i].unit.empty() && i < plan->units.size())
              from_counters[i].unit = plan->units[i];
          }
        }
      }
      if (!failure.empty()) problems.push_back(failure);
    }
  }

  // In the order asked.
  for (const std::string& name : options.metrics) {
    for (std::vector<MetricValue>* source : {&from_launch, &from_counters}) {
      auto it =
          std::find_if(source->begin(), source->end(), [&](const MetricValue& v) { return v.name == name; });
      if (it != source->end()) {
        record.metrics.push_back(std::move(*it));
        source->erase(it);
        break;
      }
    }
  }
  for (std::size_t i = 0; i < problems.size(); ++i) {
    if (i > 0) record.counter_status += "; ";
    record.counter_status += problems[i];
  }
  return healthy;
}

void Controller::WarnNoCounters(const ReplayRecord& record) {
  if (!counter_warned_.wlock()->insert(record.counter_status).second) return;
  GPUPROF_LOG(kWarning)
      << "replay of " << record.kernel_name << " on device " << record.device << ": no hardware counters ("
      << record.counter_status
      << "); the launch is still replayed and timed (this warning is shown once per reason)";
}

}  // namespace gpuprof::replay
