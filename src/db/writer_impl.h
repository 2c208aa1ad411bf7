// ProfileWriterImpl: the one ProfileWriter (profile_writer.h), its threads and its Finalize. Private
// to src/db; the pieces it owns each have their own header:
//   writer_queue.h    the queues between the threads
//   writer_rows.h     RowSink: the SQLite thread's rows on the main connection
//   writer_op_lane.h  OpLane: the op thread's torch ops
//   writer_kernels.h  KernelSink: COMPUTE_TASK_INFO on the kernel side thread (side_file.h)
// Its methods live in one file per job:
//   profile_writer.cc   Create, Start, Submit, the destructor: the writer's lifecycle
//   writer_threads.cc   the SQLite thread and the op thread, hand-overs, failure
//   writer_finalize.cc  Finalize: drain, derive and merge, final rows, close, fsync, rename
//
// Three consumer threads: the SQLite thread (Run) takes every submitted batch, writes the
// device-side rows and passes TorchOps on to the op thread (RunLane), which interns and indexes
// them in parallel, and kernels on to the kernel side thread (KernelSink, in a side file). Finalize
// joins them, merges the kernel side file while it derives, writes PYTORCH_API on the calling
// thread while a second side file takes CONNECTION_IDS, merges that one and renames the file.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "db/lost_records.h"
#include "db/output_layout.h"
#include "db/profile_writer.h"
#include "db/side_file.h"
#include "db/sqlite_util.h"
#include "db/string_table.h"
#include "db/writer_kernels.h"
#include "db/writer_op_lane.h"
#include "db/writer_queue.h"
#include "db/writer_rows.h"
#include "gpuprof/status.h"
#include "trace/records.h"

namespace gpuprof::db::internal {

class PhaseLog;  // writer_finalize.cc

class ProfileWriterImpl final : public ProfileWriter {
 public:
  ProfileWriterImpl(WriterOptions options, OutputLayout layout, Connection conn, std::size_t max_queued)
      : options_(std::move(options)),
        layout_(std::move(layout)),
        sink_(std::move(conn), options_.batch_rows, device_strings_),
        kernel_sink_(device_strings_),
        queue_(max_queued),
        lane_queue_(std::numeric_limits<std::size_t>::max()) {}

  ~ProfileWriterImpl() override;

  // Create's cleanup when Start failed: nothing worth keeping, not even a .partial file.
  void Abandon();

  // Runs on the creating thread, before any Submit.
  Status Start();

  void Submit(std::vector<trace::Record> records) override;
  StatusOr<std::string> Finalize(std::int64_t end_ns) override;  // writer_finalize.cc
  // Read only by Finalize (the run tables are written there), on the same thread.
  void SetDevices(std::vector<std::pair<std::int32_t, std::string>> devices) override {
    late_devices_ = std::move(devices);
  }
  void SetLostRecords(std::vector<std::pair<std::string, std::uint64_t>> lost) override {
    lost_records_ = std::move(lost);
  }
  void Discard() override {
    if (!finalized_) Abandon();
  }

  const OutputLayout& layout() const override { return layout_; }
  WriterStats stats() const override;

 private:
  // The run as the run tables record it: options_.run with the devices SetDevices gave, if any,
  // and the records lost: SetLostRecords' and the writer's own (final once the threads stopped).
  trace::RunInfo FinalRun() const {
    trace::RunInfo run = options_.run;
    if (!late_devices_.empty()) run.devices = late_devices_;
    run.lost_records = lost_records_;
    run.lost_records.emplace_back(kLostWriterQueue, dropped_.load(std::memory_order_relaxed));
    return run;
  }
  std::vector<std::pair<std::int32_t, std::string>> late_devices_;   // SetDevices'; Finalize's thread
  std::vector<std::pair<std::string, std::uint64_t>> lost_records_;  // SetLostRecords'; Finalize's thread
  // ---- The threads (writer_threads.cc) ----
  // The SQLite thread closes the op thread's queue when it ends (Run), so joining in this order
  // drains both.
  void StopThreads();
  // The SQLite thread: drains the queue until it is closed and empty.
  void Run() noexcept;
  // Passes this batch's TorchOps to the op thread and writes the STRING_IDS / PYTORCH_CALLCHAINS
  // rows it has produced meanwhile (its strings are few: op names, shapes, frames).
  Status HandOverOps();
  // A written batch goes on to the kernel side thread: its kernels' COMPUTE_TASK_INFO rows, and
  // freeing the records.
  void HandOverToKernelSide(std::vector<trace::Record>&& batch, std::uint64_t first_task_id);
  // The op thread.
  void RunLane() noexcept;
  // Stops the writer: counts `lost` records as dropped; the first error is what Finalize returns.
  void Fail(Status status, std::uint64_t lost);

  // ---- Finalize (writer_finalize.cc) ----
  Status FinishFile(std::int64_t end_ns, PhaseLog& phases);
  // Stops the side files' threads and deletes their files (merged or not).
  void StopSideFiles();
  // The kernel side thread's last job releases its statements, so its connection closes cleanly.
  Status FinishKernelSide();

  static std::string KernelSidePath(const OutputLayout& layout) { return layout.partial_path + "-kernels"; }
  static std::string ConnectionSidePath(const OutputLayout& layout) {
    return layout.partial_path + "-connections";
  }
  static std::string ApiSidePath(const OutputLayout& layout) { return layout.partial_path + "-api"; }

  // Percent of the PYTORCH_API rows Finalize writes into the main file; the rest go into a side
  // file meanwhile (the main connection first merges the kernel side file).
  static constexpr std::size_t kApiMainShare = 50;

  const WriterOptions options_;
  const OutputLayout layout_;
  SharedStrings device_strings_;  // the SQLite thread's and the kernel side thread's
  RowSink sink_;                  // SQLite thread, then Finalize
  KernelSink kernel_sink_;        // kernel side thread
  // Created by Start, merged and deleted by Finalize (deleted unmerged by StopSideFiles).
  std::unique_ptr<SideFile> kernel_side_;      // COMPUTE_TASK_INFO and its STRING_IDS, while streaming
  std::unique_ptr<SideFile> connection_side_;  // CONNECTION_IDS, at Finalize
  std::unique_ptr<SideFile> api_side_;         // the second part of PYTORCH_API, at Finalize
  OpLane lane_;                                // op thread, then Finalize
  WorkQueue<trace::Record> queue_;
  WorkQueue<trace::TorchOp> lane_queue_;  // unbounded: fed only by the SQLite thread from queue_
  std::thread thread_;
  std::thread lane_thread_;
  bool finalized_ = false;  // Create/Finalize/destructor thread only

  std::atomic<bool> failed_{false};
  std::mutex error_mu_;
  Status error_;  // guarded by error_mu_; the first failure of either thread
  std::atomic<bool> warned_drop_{false};
  std::atomic<std::uint64_t> written_records_{0};
  std::atomic<std::uint64_t> rows_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> bytes_{0};
};

// profiler_info[_<rank>].json of a finished run (writer_run_info.cc).
std::string ProfilerInfoJson(const trace::RunInfo& run, const OutputLayout& layout, std::int64_t end_ns);
// META_DATA's distributed rows (parallel_group_info, distributed_args) and the same as
// profiler_metadata.json beside the run, where torch_npu writes it and msprof-analyze reads it.
std::vector<std::pair<std::string_view, std::string>> DistributedMetaData(const trace::RunInfo& run);
std::string ProfilerMetadataJson(const trace::RunInfo& run);

}  // namespace gpuprof::db::internal
