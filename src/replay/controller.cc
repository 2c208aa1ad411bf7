#include "replay/controller.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>
#include <utility>

#include "base/clock.h"
#include "base/logging.h"
#include "base/settings.h"
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
  counters_.SetBackend(std::move(backend));
}

void Controller::IdleCounters() noexcept { counters_.Idle(); }

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

device::Device* Controller::DeviceOf(const device::LaunchRequest& request, const std::string& launch) {
  device::Device* device = request.device >= 0 && static_cast<std::size_t>(request.device) < devices_.size()
                               ? devices_[static_cast<std::size_t>(request.device)]
                               : nullptr;
  if (device == nullptr) {
    GPUPROF_LOG(kWarning) << "replay: launch of " << launch << " names unknown device " << request.device
                          << "; it runs once";
  }
  return device;
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

  device::Device* device = DeviceOf(request, record.kernel_name);
  if (device == nullptr) return RunUnreplayed(request, executor);
  auto decline = [&](DeclineReason reason, std::string detail) {
    return Decline(std::move(record), reason, std::move(detail), executor, /*window=*/nullptr,
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
    return Decline(std::move(record), DeclineReason::kGraphLaunch,
                   "the graph's nodes could not be listed: " + graph.status().ToString(), executor, nullptr);
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

  device::Device* device = DeviceOf(request, record.kernel_name);
  if (device == nullptr) return RunUnreplayed(request, executor);
  auto decline = [&](DeclineReason reason, std::string detail) {
    return Decline(std::move(record), reason, std::move(detail), executor, nullptr);
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

Status Controller::Decline(ReplayRecord record, DeclineReason reason, std::string detail,
                           device::LaunchExecutor& executor, const Window* window, bool warn) {
  record.decline_reason = reason;
  record.decline_detail = std::move(detail);
  if (warn) {
    GPUPROF_LOG(kWarning) << "replay declined for " << record.kernel_name << " on device " << record.device
                          << " (" << DeclineReasonName(reason) << "): " << record.decline_detail
                          << "; it runs once";
  }
  Status status = OkStatus();
  if (window == nullptr) {
    auto shared = EnterDeviceShared(record.device);
    status = executor.RunOriginal();
  } else {
    status = executor.RunOriginal();
    record.replay_ns = window->held_ns();
  }
  Publish(record);
  return status;
}

Status Controller::Replay(device::Device& device, ReplayRecord record, device::LaunchExecutor& executor,
                          const ReplayOptions& options, const device::GraphDescription* graph) {
  Shape shape;
  shape.what = "replay of " + record.kernel_name;
  shape.final_run = "the application's launch";
  shape.unit.run = [&executor](int pass) { return executor.RunPass(pass); };
  shape.unit.prepare_counter_pass = [&executor] { return executor.PrepareCounterPass(); };
  shape.unit.run_counter_pass = [&executor](int pass) { return executor.RunCounterPass(pass); };
  shape.unit.graph = graph;
  if (graph != nullptr) {
    // The application's own launch of the graph follows: the executor's passes end first.
    shape.unit.end_passes = [&executor] {
      return executor.original_runs_after_return() ? executor.EndGraphPasses() : OkStatus();
    };
  }
  return ReplayInWindow(device, std::move(record), executor, options, shape);
}

Status Controller::ReplayNodes(device::Device& device, ReplayRecord graph_record,
                               device::LaunchExecutor& executor, const ReplayOptions& options,
                               const device::GraphDescription& graph, Plan& plan) {
  graph_record.replay_mode = ReplayMode::kNode;
  Shape shape;
  shape.what = "node-by-node replay of " + graph_record.kernel_name;
  shape.final_run = "the graph's own run";
  shape.runs_once = "the graph runs once";
  // One snapshot, of the graph's inputs: node i's pass p > 1 starts from it with nodes [0, i) run
  // again, so that every pass sees what node i sees inside the graph.
  shape.walk = [&](Window& window, const ReplayRecord& window_record) {
    return WalkNodes(window, window_record, graph, plan);
  };
  return ReplayInWindow(device, std::move(graph_record), executor, options, shape);
}

Controller::Units Controller::WalkNodes(Window& window, const ReplayRecord& graph_record,
                                        const device::GraphDescription& graph, Plan& plan) {
  device::LaunchExecutor& executor = window.executor;
  Units units;  // units.stopped non-empty: the walk stopped; the graph runs once as the application asked
  for (std::size_t i = 0; i < graph.nodes.size() && units.stopped.empty(); ++i) {
    const device::GraphNode& node = graph.nodes[i];
    const bool selected = node.type == device::GraphNodeType::kKernel && plan.NameMatches(node.kernel_name);
    if (!selected) {
      if (StatusOr<device::PassTiming> ran = executor.RunGraphNode(i, 0); !ran.ok()) {
        units.stopped = "node " + std::to_string(node.id) + " (" +
                        std::string(device::GraphNodeTypeName(node.type)) +
                        ") failed to run alone: " + ran.status().ToString();
      }
      continue;
    }
    const std::int64_t node_start = base::MonotonicNowNs();
    ReplayRecord record = graph_record;
    record.kernel_name = node.kernel_name;
    record.graph_node_id = node.id;
    ReplayUnit unit;
    unit.after_restore = [&executor, i]() -> Status {
      for (std::size_t j = 0; j < i; ++j) GPUPROF_RETURN_IF_ERROR(executor.RunGraphNode(j, 0).status());
      return OkStatus();
    };
    unit.run = [&executor, i](int pass) { return executor.RunGraphNode(i, pass); };
    unit.prepare_counter_pass = [&executor] { return executor.PrepareCounterPass(); };
    unit.run_counter_pass = [&executor, i](int pass) { return executor.RunGraphNode(i, pass).status(); };
    if (std::optional<Status> failed = RunUnit(window, record, unit)) {
      record.decline_reason = DeclineReason::kLaunchFailed;
      record.decline_detail = "the node failed to run alone: " + failed->ToString();
    }
    // Checked now: the nodes after this one change what the device holds.
    CheckDeterminism(*window.snapshot, record, window.options);
    record.replayed = record.decline_reason == DeclineReason::kNone;
    record.replay_ns = static_cast<std::uint64_t>(base::MonotonicNowNs() - node_start);
    if (!record.replayed) units.stopped = "node " + std::to_string(node.id) + ": " + record.decline_detail;
    units.records.push_back(std::move(record));
  }
  return units;
}

}  // namespace gpuprof::replay
