#include "replay/range_replay.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

#include "base/clock.h"
#include "base/logging.h"
#include "replay/counter_passes.h"
#include "replay/snapshot.h"

namespace gpuprof::replay {

using device::RangeOp;
using device::RangeOpKind;

struct RangeReplay::DeviceRange {
  std::atomic<bool> recording{false};
  std::mutex mu;  // everything below
  std::uint64_t ranges_begun = 0;
  std::vector<RangeOp> ops;
  std::uint32_t launches = 0;
  std::uint64_t host_bytes = 0;
  bool flush_caches = false;  // B7/W6: the launches' executors flush L2 before each pass
  DeclineReason declined = DeclineReason::kNone;
  std::string decline_detail;
  ReplayRecord base;  // the range's snapshot figures, filled at Begin
  std::int64_t begin_ns = 0;
};

namespace {

std::string RangeName(const ReplayRecord& record) { return "range " + std::to_string(record.range_id); }

void WarnDeclined(const ReplayRecord& record) {
  GPUPROF_LOG(kWarning) << "replay: " << RangeName(record) << " on device " << record.device << " declined ("
                        << DeclineReasonName(record.decline_reason) << "): " << record.decline_detail
                        << "; it ran once, as the application issued it";
}

std::uint64_t Since(std::int64_t start_ns) {
  return static_cast<std::uint64_t>(base::MonotonicNowNs() - start_ns);
}

// Host time spent in each part of a range's passes.
struct RangeFloor {
  int timing_passes = 0;
  std::uint64_t restore_ns = 0;
  std::uint64_t reissue_ns = 0;  // issue and wait for the device
  std::uint64_t keep_ns = 0;     // the application's output kept aside (W4), with pass 1's hash
  std::uint64_t kept_bytes = 0;
  std::uint64_t kept_host_bytes = 0;  // of kept_bytes, those the arena had no room for
  std::uint64_t inspect_ns = 0;       // the later passes' output hashes (determinism check)
  std::uint64_t put_back_ns = 0;      // the last restore and the application's output put back
  int counter_passes = 0;
  std::uint64_t counter_ns = 0;  // every counter pass, with the backend's Start/Stop and decode
  std::uint64_t counter_restore_ns = 0;
  std::uint64_t counter_reissue_ns = 0;
};

double PerPassMs(std::uint64_t ns, int passes) {
  return passes > 0 ? static_cast<double>(ns) / passes / 1e6 : 0;
}

// One line per replayed range: what its passes cost, part by part (bench/range_replay_overhead.py
// reads it for the floor).
void LogFloor(const ReplayRecord& record, std::uint32_t launches, const RangeFloor& floor,
              std::uint64_t replay_ns) {
  std::ostringstream line;
  line.setf(std::ios::fixed);
  line.precision(3);
  line << "replay: " << RangeName(record) << " on device " << record.device << ": " << launches
       << " launches, " << static_cast<double>(replay_ns) / 1e6 << " ms in passes; timing passes "
       << floor.timing_passes << ": restore " << PerPassMs(floor.restore_ns, floor.timing_passes)
       << " ms/pass, re-issue " << PerPassMs(floor.reissue_ns, floor.timing_passes) << " ms/pass ("
       << (launches > 0 ? PerPassMs(floor.reissue_ns, floor.timing_passes) * 1e3 / launches : 0.0)
       << " us/launch); keep " << static_cast<double>(floor.keep_ns) / 1e6 << " ms ("
       << static_cast<double>(floor.kept_bytes) / static_cast<double>(1 << 20) << " MiB, "
       << static_cast<double>(floor.kept_host_bytes) / static_cast<double>(1 << 20)
       << " MiB through host memory), hashes " << PerPassMs(floor.inspect_ns, floor.timing_passes)
       << " ms/pass, put back " << static_cast<double>(floor.put_back_ns) / 1e6 << " ms";
  if (floor.counter_passes > 0) {
    const std::uint64_t rest =
        floor.counter_ns - std::min(floor.counter_ns, floor.counter_restore_ns + floor.counter_reissue_ns);
    line << "; counter passes " << floor.counter_passes << ": restore "
         << PerPassMs(floor.counter_restore_ns, floor.counter_passes) << " ms/pass, re-issue "
         << PerPassMs(floor.counter_reissue_ns, floor.counter_passes) << " ms/pass, Start+Stop and decode "
         << PerPassMs(rest, floor.counter_passes) << " ms/pass";
  }
  GPUPROF_LOG(kInfo) << line.str();
}

}  // namespace

RangeReplay::RangeReplay(Inventory& inventory, std::size_t device_count) : inventory_(inventory) {
  ranges_.reserve(device_count);
  for (std::size_t d = 0; d < device_count; ++d) ranges_.push_back(std::make_unique<DeviceRange>());
}

RangeReplay::~RangeReplay() = default;

RangeReplay::DeviceRange* RangeReplay::RangeOf(int device) const noexcept {
  if (device < 0 || static_cast<std::size_t>(device) >= ranges_.size()) return nullptr;
  return ranges_[static_cast<std::size_t>(device)].get();
}

bool RangeReplay::Recording(int device) const noexcept {
  const DeviceRange* range = RangeOf(device);
  return range != nullptr && range->recording.load(std::memory_order_relaxed);
}

bool RangeReplay::Begin(const DeviceAccess& access, const ReplayOptions& options, bool selected,
                        const std::function<void(const ReplayRecord&)>& publish) {
  const int ordinal = access.device.ordinal();
  DeviceRange* range = RangeOf(ordinal);
  if (range == nullptr) return false;
  std::unique_lock<std::shared_mutex> window(access.window);
  if (range->recording.load(std::memory_order_relaxed)) {
    GPUPROF_LOG(kInfo) << "replay: a range is already open on device " << ordinal
                       << "; the inner range start is ignored (ranges do not nest)";
    return true;
  }
  if (!selected) return true;
  const std::int64_t begin_ns = base::MonotonicNowNs();
  ReplayRecord record;
  record.device = ordinal;
  record.replay_mode = ReplayMode::kRange;
  record.restore_mode = options.restore;
  {
    std::lock_guard<std::mutex> lock(range->mu);
    record.range_id = ++range->ranges_begun;
  }
  record.launch_index = record.range_id - 1;
  record.kernel_name = RangeName(record);
  auto decline = [&](DeclineReason reason, std::string detail) {
    record.decline_reason = reason;
    record.decline_detail = std::move(detail);
    record.replay_ns = Since(begin_ns);
    WarnDeclined(record);
    publish(record);
    return false;
  };
  // W2: everything issued before the range lands first; bounded (R14).
  if (Status drained = access.device.Synchronize(options.drain_timeout); !drained.ok()) {
    return decline(DeclineReason::kDrainTimeout, "device did not drain: " + drained.ToString());
  }
  if (options.strict) {
    if (std::uint64_t untracked = inventory_.untracked_writable_live_bytes(); untracked > 0) {
      record.untracked_writable_bytes = untracked;
      return decline(
          DeclineReason::kUntrackedWritableMemory,
          std::to_string(untracked) +
              " bytes of host-mapped/managed/IPC memory are live and cannot be restored (strict mode)");
    }
  }
  const SnapshotOptions snapshot_options = SnapshotOptionsFrom(options);
  const std::int64_t capture_start = base::MonotonicNowNs();
  if (!access.snapshot.Capture(inventory_, snapshot_options)) {
    return decline(DeclineReason::kIncompleteSnapshot, access.snapshot.failure());
  }
  record.snapshot_ns = Since(capture_start);
  record.snapshot_regions = access.snapshot.regions().size();
  record.snapshot_bytes = access.snapshot.total_bytes();
  record.snapshot_device_bytes = access.snapshot.device_bytes();
  record.snapshot_copied_bytes = access.snapshot.last_capture().bytes_copied;
  record.untracked_writable_bytes = inventory_.untracked_writable_live_bytes();
  std::lock_guard<std::mutex> lock(range->mu);
  range->ops.clear();
  range->launches = 0;
  range->host_bytes = 0;
  range->flush_caches = false;
  range->declined = DeclineReason::kNone;
  range->decline_detail.clear();
  range->base = std::move(record);
  range->begin_ns = begin_ns;
  range->recording.store(true, std::memory_order_relaxed);
  return true;
}

void RangeReplay::DeclineLocked(DeviceRange& range, DeclineReason reason, std::string detail) {
  if (range.declined != DeclineReason::kNone) return;  // the first reason is the range's
  range.declined = reason;
  range.decline_detail = std::move(detail);
  std::vector<RangeOp>().swap(range.ops);  // nothing of it will be re-issued
}

void RangeReplay::Decline(int device, DeclineReason reason, std::string detail) {
  DeviceRange* range = RangeOf(device);
  if (range == nullptr || !range->recording.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(range->mu);
  if (range->recording.load(std::memory_order_relaxed)) DeclineLocked(*range, reason, std::move(detail));
}

bool RangeReplay::Append(DeviceRange& range, RangeOp op, const ReplayOptions& options) {
  if (range.declined != DeclineReason::kNone) return false;
  if (range.ops.size() >= options.max_range_operations) {
    DeclineLocked(range, DeclineReason::kRangeTooLarge,
                  "the range holds more than " + std::to_string(options.max_range_operations) +
                      " operations (the cap on a recorded range)");
    return false;
  }
  range.ops.push_back(std::move(op));
  return true;
}

Status RangeReplay::RecordLaunch(const device::LaunchRequest& request, device::LaunchExecutor& executor,
                                 const ReplayOptions& options, LaunchDecline decline) {
  DeviceRange* range = RangeOf(request.device);
  if (range == nullptr) return executor.RunOriginal();
  // Held while the launch is issued too: the log's order is the order the runtime received it.
  std::lock_guard<std::mutex> lock(range->mu);
  if (range->recording.load(std::memory_order_relaxed) && range->declined == DeclineReason::kNone) {
    if (decline.has_value()) {
      DeclineLocked(*range, decline->first, "launch of " + request.kernel_name + ": " + decline->second);
    } else if (StatusOr<std::shared_ptr<const device::RecordedLaunch>> recorded = executor.RecordForRange();
               !recorded.ok()) {
      DeclineLocked(*range, DeclineReason::kNotRecordable,
                    "launch of " + request.kernel_name + ": " + recorded.status().ToString());
    } else {
      RangeOp op;
      op.kind = RangeOpKind::kLaunch;
      op.stream = request.stream;
      op.launch = *std::move(recorded);
      op.launch_index = range->launches;
      if (Append(*range, std::move(op), options)) ++range->launches;
      range->flush_caches = range->flush_caches || executor.flushes_caches();
    }
  }
  return executor.RunOriginal();
}

Status RangeReplay::RecordTransfer(const device::TransferArgs& args, const ReplayOptions& options,
                                   const std::function<int(device::DevicePtr)>& owner_of,
                                   const std::function<Status()>& issue) {
  DeviceRange* range = RangeOf(args.device);
  if (range == nullptr) return issue();
  std::lock_guard<std::mutex> lock(range->mu);
  if (!range->recording.load(std::memory_order_relaxed) || range->declined != DeclineReason::kNone) {
    return issue();
  }
  const bool copy = args.kind == device::TransferKind::kCopy;
  const int dst_owner = owner_of(args.dst);
  const int src_owner = copy ? owner_of(args.src) : -1;
  for (int owner : {dst_owner, src_owner}) {
    if (owner >= 0 && owner != args.device) {
      DeclineLocked(*range, DeclineReason::kIncompleteSnapshot,
                    "a copy between device " + std::to_string(args.device) + " and device " +
                        std::to_string(owner) + ", whose memory is not in the range's snapshot");
      return issue();
    }
  }
  RangeOp op;
  op.kind = copy ? RangeOpKind::kCopy : RangeOpKind::kMemset;
  op.stream = args.stream;
  op.dst = args.dst;
  op.src = args.src;
  op.bytes = args.bytes;
  op.value = args.value;
  op.to_host = dst_owner < 0;
  if (copy && dst_owner < 0 && src_owner < 0) return issue();  // host to host: no device memory
  if (copy && src_owner < 0) {
    // W3: the host source as it is now; the application may reuse its buffer before the range ends.
    if (range->host_bytes + args.bytes > options.max_range_host_bytes) {
      DeclineLocked(*range, DeclineReason::kRangeTooLarge,
                    "the range copies more than " + std::to_string(options.max_range_host_bytes) +
                        " bytes from host memory (the cap on captured host bytes)");
      return issue();
    }
    op.host_source.resize(args.bytes);
    // A host source is an address of this process (DevicePtr is the unified address).
    std::memcpy(op.host_source.data(), reinterpret_cast<const void*>(static_cast<std::uintptr_t>(args.src)),
                args.bytes);
    range->host_bytes += args.bytes;
  }
  Append(*range, std::move(op), options);
  return issue();
}

Status RangeReplay::RecordEvent(const device::EventArgs& args, const std::function<Status()>& issue) {
  DeviceRange* range = RangeOf(args.device);
  if (range == nullptr) return issue();
  std::lock_guard<std::mutex> lock(range->mu);
  if (range->recording.load(std::memory_order_relaxed) && range->declined == DeclineReason::kNone) {
    RangeOp op;
    op.kind = args.kind == device::EventOpKind::kRecord ? RangeOpKind::kEventRecord : RangeOpKind::kEventWait;
    op.stream = args.stream;
    op.event = args.event;
    range->ops.push_back(std::move(op));
  }
  return issue();
}

void RangeReplay::End(const DeviceAccess& access, const ReplayOptions& options,
                      const std::function<void(const ReplayRecord&)>& publish) {
  DeviceRange* range = RangeOf(access.device.ordinal());
  if (range == nullptr || !range->recording.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::shared_mutex> window(access.window);
  {
    std::lock_guard<std::mutex> lock(range->mu);
    if (!range->recording.load(std::memory_order_relaxed)) return;
    range->recording.store(false, std::memory_order_relaxed);
  }
  ReplayRecord& record = range->base;
  if (range->declined == DeclineReason::kNone) {
    if (Status drained = access.device.Synchronize(options.drain_timeout); !drained.ok()) {
      DeclineLocked(*range, DeclineReason::kDrainTimeout,
                    "device did not drain at the range's end: " + drained.ToString());
    }
  }
  if (range->declined != DeclineReason::kNone) {
    record.decline_reason = range->declined;
    record.decline_detail = range->decline_detail;
    record.replay_ns = Since(range->begin_ns);
    WarnDeclined(record);
    publish(record);
    return;
  }
  RunPasses(access, *range, options, publish);
  std::vector<RangeOp>().swap(range->ops);
}

void RangeReplay::RunPasses(const DeviceAccess& access, DeviceRange& range, const ReplayOptions& options,
                            const std::function<void(const ReplayRecord&)>& publish) {
  ReplayRecord& record = range.base;
  Snapshot& snapshot = access.snapshot;
  const std::int64_t passes_start = base::MonotonicNowNs();
  // W4: what the application's own execution left, put back after the last pass.
  std::uint64_t pass1_output = 0;
  RangeFloor floor;  // where the passes' time went (the benchmark's floor lines)
  std::int64_t keep_start = base::MonotonicNowNs();
  StatusOr<Snapshot::KeptChunks> kept = snapshot.KeepChanged(inventory_, &pass1_output);
  floor.keep_ns = Since(keep_start);
  if (kept.ok()) {
    floor.kept_bytes = kept->bytes;
    floor.kept_host_bytes = kept->host_bytes;
  }
  if (!kept.ok()) {
    record.decline_reason = DeclineReason::kIncompleteSnapshot;
    record.decline_detail = "keeping the range's output failed: " + kept.status().ToString();
    record.replay_ns = Since(range.begin_ns);
    WarnDeclined(record);
    publish(record);
    return;
  }
  std::vector<std::vector<PassRecord>> launch_passes(range.launches);
  for (const RangeOp& op : range.ops) {
    if (op.kind != RangeOpKind::kLaunch) continue;
    PassRecord pass;
    pass.pass = 1;
    pass.duration_ns = op.launch->original_duration_ns();
    pass.output_hash = options.determinism_check ? pass1_output : 0;
    launch_passes[op.launch_index].push_back(pass);
  }
  std::vector<std::uint64_t> outputs{pass1_output};
  std::string stopped;
  device::ReissueOptions reissue;
  reissue.flush_caches = range.flush_caches;
  for (int p = 2; p <= options.passes && stopped.empty(); ++p) {
    const std::int64_t pass_start = base::EpochNowNs();
    std::int64_t mark = base::MonotonicNowNs();
    RestoreStats restored = snapshot.Restore(inventory_, options.restore, nullptr);
    floor.restore_ns += Since(mark);
    if (restored.regions_failed > 0) {
      stopped = "the restore before pass " + std::to_string(p) + " failed";
      record.decline_reason = DeclineReason::kRestoreFailed;
      break;
    }
    mark = base::MonotonicNowNs();
    StatusOr<device::RangePassTiming> timing = access.device.ReissueRange(range.ops, p, reissue);
    floor.reissue_ns += Since(mark);
    ++floor.timing_passes;
    if (!timing.ok()) {
      stopped = "pass " + std::to_string(p) + ": " + timing.status().ToString();
      record.decline_reason = DeclineReason::kLaunchFailed;
      break;
    }
    std::uint64_t output = 0;
    if (options.determinism_check) {
      const std::int64_t inspect_start = base::MonotonicNowNs();
      StatusOr<std::uint64_t> inspected = snapshot.Inspect(inventory_);
      floor.inspect_ns += Since(inspect_start);
      output = inspected.ok() ? *inspected : 0;
    }
    outputs.push_back(output);
    for (std::uint32_t i = 0; i < range.launches; ++i) {
      PassRecord pass;
      pass.pass = p;
      pass.start_ns = pass_start;
      pass.duration_ns = i < timing->launch_ns.size() ? timing->launch_ns[i] : 0;
      pass.bytes_restored = restored.bytes_restored;
      pass.regions_restored = restored.regions_restored;
      pass.dirty_chunks = restored.dirty_chunks;
      pass.output_hash = output;
      launch_passes[i].push_back(pass);
    }
  }
  // W7: counter passes over the whole range (one Start/Stop each), one decode for every launch.
  std::vector<ReplayRecord> counted(range.launches);
  if (stopped.empty() && !options.metrics.empty() && access.counters != nullptr) {
    std::vector<StatusOr<device::LaunchShape>> shapes(range.launches, UnimplementedError("no launch"));
    for (const RangeOp& op : range.ops) {
      if (op.kind != RangeOpKind::kLaunch) continue;
      shapes[op.launch_index] = op.launch->shape();
      counted[op.launch_index].device = record.device;
      counted[op.launch_index].kernel_name = op.launch->kernel_name();
    }
    auto restore = [&] {
      const std::int64_t start = base::MonotonicNowNs();
      const bool ok = snapshot.Restore(inventory_, options.restore, nullptr).regions_failed == 0;
      floor.counter_restore_ns += Since(start);
      return ok;
    };
    device::ReissueOptions counting = reissue;
    counting.counter_pass = true;
    auto run = [&](int pass) {
      const std::int64_t start = base::MonotonicNowNs();
      Status ran = access.device.ReissueRange(range.ops, pass, counting).status();
      floor.counter_reissue_ns += Since(start);
      ++floor.counter_passes;
      return ran;
    };
    std::string failure;
    const std::int64_t counters_start = base::MonotonicNowNs();
    const bool counted_ok =
        access.counters->RunRange(counted, record.device, options, shapes, restore, run, &failure);
    floor.counter_ns = Since(counters_start);
    if (!counted_ok) {
      stopped = failure;
      record.decline_reason = DeclineReason::kLaunchFailed;
    }
  }
  // W4: memory as the application's own execution left it, whatever the passes did.
  const std::int64_t put_back_start = base::MonotonicNowNs();
  RestoreStats final_restore = snapshot.Restore(inventory_, options.restore, nullptr);
  Status put_back = final_restore.regions_failed > 0 ? InternalError("the restore after the last pass failed")
                                                     : snapshot.PutBack(*kept);
  floor.put_back_ns = Since(put_back_start);
  if (!put_back.ok()) {
    GPUPROF_LOG(kError) << "replay: " << RangeName(record) << " on device " << record.device
                        << ": putting back the application's output failed (" << put_back.ToString()
                        << "); its memory may differ from an unreplayed run";
    if (stopped.empty()) {
      stopped = put_back.ToString();
      record.decline_reason = DeclineReason::kRestoreFailed;
    }
  }
  if (!stopped.empty()) {
    record.decline_detail = stopped;
    WarnDeclined(record);
  }
  record.mismatched_passes.clear();
  if (options.determinism_check) {
    for (std::size_t i = 1; i < outputs.size(); ++i) {
      if (outputs[i] != outputs[0]) record.mismatched_passes.push_back(static_cast<int>(i + 1));
    }
  }
  record.deterministic = record.mismatched_passes.empty();
  record.replayed = record.decline_reason == DeclineReason::kNone;
  record.range_launches = range.launches;
  record.caches_flushed = range.flush_caches;
  const std::uint64_t replay_ns = Since(passes_start);
  LogFloor(record, range.launches, floor, replay_ns);
  std::uint32_t index = 0;
  for (const RangeOp& op : range.ops) {
    if (op.kind != RangeOpKind::kLaunch) continue;
    ReplayRecord launch = record;
    launch.kernel_name = op.launch->kernel_name();
    launch.range_launch = index;
    launch.application_launch_id = op.launch->application_launch_id();
    launch.passes = std::move(launch_passes[op.launch_index]);
    launch.metrics = std::move(counted[op.launch_index].metrics);
    launch.counter_passes = counted[op.launch_index].counter_passes;
    launch.counter_status = std::move(counted[op.launch_index].counter_status);
    // The range's cost is carried once, by its first launch.
    launch.replay_ns = index == 0 ? replay_ns : 0;
    publish(launch);
    ++index;
  }
}

}  // namespace gpuprof::replay
