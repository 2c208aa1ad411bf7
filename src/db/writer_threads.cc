// ProfileWriterImpl's threads: the SQLite thread (Run) writes each submitted batch's rows through
// RowSink, hands its TorchOps to the op thread (RunLane, OpLane) and the written batch to the
// kernel side thread (KernelSink); a failure on either thread stops the writer (Fail). All of
// them run below the program's priority (base/thread_priority.h).
#include <deque>
#include <exception>
#include <string>
#include <utility>

#include "base/logging.h"
#include "base/thread_priority.h"
#include "db/writer_impl.h"

namespace gpuprof::db::internal {

void ProfileWriterImpl::StopThreads() {
  queue_.Close();
  if (thread_.joinable()) thread_.join();
  lane_queue_.Close();
  if (lane_thread_.joinable()) lane_thread_.join();
}

void ProfileWriterImpl::Run() noexcept {
  base::LowerThisThreadsPriority();  // the profiled program's threads come first
  std::deque<std::vector<trace::Record>> batches;
  while (queue_.PopAll(&batches)) {
    for (std::vector<trace::Record>& batch : batches) {
      if (failed_.load(std::memory_order_relaxed)) {
        dropped_.fetch_add(batch.size(), std::memory_order_relaxed);
        continue;
      }
      std::uint64_t done = 0;
      Status status;
      const std::uint64_t first_task_id = sink_.next_global_task_id();
      try {
        for (trace::Record& record : batch) {
          status = sink_.Write(record);
          if (!status.ok()) break;
          ++done;
        }
        if (status.ok()) status = HandOverOps();
        if (status.ok()) HandOverToKernelSide(std::move(batch), first_task_id);
      } catch (const std::exception& e) {  // bad_alloc while growing an index
        status = ResourceExhaustedError(std::string("profile writer out of memory: ") + e.what());
      }
      written_records_.fetch_add(done, std::memory_order_relaxed);
      rows_.store(sink_.rows() + kernel_sink_.rows(), std::memory_order_relaxed);
      if (!status.ok()) Fail(std::move(status), batch.size() - done);
    }
    batches.clear();
  }
  lane_queue_.Close();
}

Status ProfileWriterImpl::HandOverOps() {
  std::vector<trace::TorchOp> ops = sink_.TakeLaneBatch();
  if (!ops.empty()) lane_queue_.Push(std::move(ops));
  GPUPROF_RETURN_IF_ERROR(sink_.WriteLaneRows(lane_.TakeRows()));
  return sink_.MaybeCommit();
}

void ProfileWriterImpl::HandOverToKernelSide(std::vector<trace::Record>&& batch,
                                             std::uint64_t first_task_id) {
  kernel_side_->Post([this, batch = std::move(batch), first_task_id,
                      type_id = sink_.kernel_type_id()](const Connection& side) mutable {
    return kernel_sink_.Write(side, batch, first_task_id, type_id);
  });
}

void ProfileWriterImpl::RunLane() noexcept {
  base::LowerThisThreadsPriority();
  std::deque<std::vector<trace::TorchOp>> batches;
  while (lane_queue_.PopAll(&batches)) {
    for (std::vector<trace::TorchOp>& batch : batches) {
      if (failed_.load(std::memory_order_relaxed)) continue;
      try {
        lane_.Process(batch);
      } catch (const std::exception& e) {  // bad_alloc
        Fail(ResourceExhaustedError(std::string("profile writer out of memory: ") + e.what()), batch.size());
      }
    }
    batches.clear();
  }
}

void ProfileWriterImpl::Fail(Status status, std::uint64_t lost) {
  dropped_.fetch_add(lost, std::memory_order_relaxed);
  GPUPROF_LOG(kError) << "profile writer stopped: " << status.message();
  std::lock_guard<std::mutex> lock(error_mu_);
  if (error_.ok()) error_ = std::move(status);  // the first error wins
  failed_.store(true);
}

}  // namespace gpuprof::db::internal
