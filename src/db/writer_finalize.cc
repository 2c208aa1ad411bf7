// ProfileWriter::Finalize: drains the threads, commits, merges the kernel side file while the
// derived tables are computed, writes the final rows (the main file and two side files at once),
// merges those, closes, fsyncs and renames the file to its final name, then writes
// analysis.db beside it, then profiler_info[_<rank>].json. Only a complete, durable file gets the
// final name.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

#include "base/clock.h"
#include "base/durable_file.h"
#include "base/errno_text.h"
#include "base/logging.h"
#include "db/analysis_db.h"
#include "db/writer_impl.h"

namespace gpuprof::db::internal {
namespace {

// Starts writing `path`'s dirty pages back to disk without waiting for them, so that the fsync
// before the rename has less left to do. Best effort: any failure leaves it all to the fsync.
void StartWriteback(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  static_cast<void>(sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE));
  close(fd);
}

// Writes `text` to `path` complete or not at all (temporary name, fsync, rename).
Status WriteFileAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + kPartialSuffix;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return FailedPreconditionError("cannot create " + tmp + ": " + base::ErrnoText(errno));
    out << text;
    out.flush();
    if (!out) return DataLossError("cannot write " + tmp + ": " + base::ErrnoText(errno));
  }
  return base::PublishDurably(tmp, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace

// Durations of Finalize's phases, logged as one debug line (GPUPROF_LOG_LEVEL=debug).
class PhaseLog {
 public:
  void Mark(const char* phase) {
    std::int64_t now = base::MonotonicNowNs();
    line_ << (line_.tellp() > 0 ? ", " : "") << phase << " " << (now - last_) / 1'000'000 << " ms";
    last_ = now;
  }
  std::string str() const { return line_.str(); }

 private:
  std::int64_t last_ = base::MonotonicNowNs();
  std::ostringstream line_;
};

StatusOr<std::string> ProfileWriterImpl::Finalize(std::int64_t end_ns) {
  if (finalized_) return FailedPreconditionError("Finalize called twice for " + layout_.db_path);
  finalized_ = true;
  PhaseLog phases;
  StopThreads();
  phases.Mark("drain");
  Status status = FinishFile(end_ns == 0 ? base::EpochNowNs() : end_ns, phases);
  GPUPROF_LOG(kDebug) << "finalize " << layout_.db_path << ": " << phases.str();
  if (!status.ok()) {
    sink_.ReleaseStatements();
    sink_.connection().Close().IgnoreError();
    std::error_code ec;
    if (std::filesystem::exists(layout_.db_path, ec)) {
      GPUPROF_LOG(kWarning) << "profile written to " << layout_.db_path << " but " << status.message();
    } else {
      GPUPROF_LOG(kWarning) << "profile not finalized; the incomplete profile stays at "
                            << layout_.partial_path << ": " << status.message();
    }
    return status;
  }
  return layout_.db_path;
}

Status ProfileWriterImpl::FinishFile(std::int64_t end_ns, PhaseLog& phases) {
  if (failed_.load()) {
    std::lock_guard<std::mutex> lock(error_mu_);
    return error_;
  }
  Connection& conn = sink_.connection();
  GPUPROF_RETURN_IF_ERROR(sink_.WriteLaneRows(lane_.TakeRows()));
  GPUPROF_RETURN_IF_ERROR(sink_.Commit());
  GPUPROF_RETURN_IF_ERROR(FinishKernelSide());
  phases.Mark("commit");
  // The side files' threads read `derived`: they are joined (Finish, or StopSideFiles on the
  // way out) before it goes.
  Derived derived;
  struct JoinSideFiles {
    ProfileWriterImpl* writer;
    ~JoinSideFiles() { writer->StopSideFiles(); }
  } join_side_files{this};

  // The kernel side file is merged while the tables are derived (the main connection is idle
  // meanwhile; the derivation touches no SQLite). As soon as they are derived, CONNECTION_IDS
  // and the second part of PYTORCH_API go into their side files, the merge perhaps still running;
  // then the first part of PYTORCH_API and the rest into the main file.
  sink_.SortAllocatorEvents();
  Status merged;
  std::int64_t merge_ms = -1;
  std::thread merger;
  try {
    merger = std::thread([this, &merged, &conn, &merge_ms] {
      std::int64_t start = base::MonotonicNowNs();
      merged = kernel_side_->MergeInto(conn);
      merge_ms = (base::MonotonicNowNs() - start) / 1'000'000;
      if (merged.ok()) StartWriteback(layout_.partial_path);
    });
  } catch (const std::system_error&) {
    merged = kernel_side_->MergeInto(conn);  // no second thread: one after the other
  }
  Status derive_status;
  std::int64_t derive_start = base::MonotonicNowNs();
  try {
    derived = sink_.Derive(lane_);
  } catch (const std::exception& e) {  // bad_alloc
    derive_status = ResourceExhaustedError("deriving tables for " + layout_.partial_path + ": " + e.what());
  }
  std::int64_t derive_ms = (base::MonotonicNowNs() - derive_start) / 1'000'000;
  const std::size_t api_rows = lane_.ops().size();
  const std::size_t api_main_rows = api_rows * kApiMainShare / 100;
  if (derive_status.ok()) {
    connection_side_->Post(
        [&derived](const Connection& side) { return WriteConnectionRows(side, derived.connections.rows); });
    api_side_->Post([this, &derived, api_main_rows, api_rows](const Connection& side) {
      return WriteApiRows(side, derived, lane_, api_main_rows, api_rows);
    });
  }
  if (merger.joinable()) merger.join();
  GPUPROF_LOG(kDebug) << "derive " << derive_ms << " ms beside the kernel merge " << merge_ms << " ms";
  GPUPROF_RETURN_IF_ERROR(derive_status);
  GPUPROF_RETURN_IF_ERROR(merged);
  kernel_side_.reset();
  phases.Mark("derive and merge kernels");

  Status final_status = sink_.Begin();
  if (final_status.ok()) final_status = sink_.WriteFinal(derived, lane_, api_main_rows, FinalRun(), end_ns);
  if (final_status.ok()) final_status = sink_.Commit();
  Status api_status = api_side_->Finish();
  Status connection_status = connection_side_->Finish();
  GPUPROF_RETURN_IF_ERROR(final_status);
  GPUPROF_RETURN_IF_ERROR(api_status);
  GPUPROF_RETURN_IF_ERROR(connection_status);
  phases.Mark("final rows");
  // The rest of PYTORCH_API after the main file's part: the transfer appends in order.
  GPUPROF_RETURN_IF_ERROR(api_side_->MergeInto(conn));
  GPUPROF_RETURN_IF_ERROR(connection_side_->MergeInto(conn));
  phases.Mark("merge connections");
  GPUPROF_RETURN_IF_ERROR(sink_.FillComputeTaskOpColumns());
  phases.Mark("kernel op columns");
  rows_.store(
      sink_.rows() + kernel_sink_.rows() + derived.connections.rows.size() + (api_rows - api_main_rows),
      std::memory_order_relaxed);
  if (sink_.duplicate_connection_ids() > 0) {
    GPUPROF_LOG(kWarning) << sink_.duplicate_connection_ids()
                          << " CANN_API rows with a repeated correlation id were skipped in "
                          << layout_.db_path;
  }
  if (std::uint64_t overflowed = sink_.string_overflows() + lane_.overflowed(); overflowed > 0) {
    GPUPROF_LOG(kWarning) << overflowed << " strings exceeded their STRING_IDS id space in "
                          << layout_.db_path << " and were written as 4294967295";
  }
  sink_.ReleaseStatements();
  GPUPROF_RETURN_IF_ERROR(conn.Close());
  phases.Mark("close");
  // Only a complete, durable file gets the final name: fsync the data, rename, fsync the directory
  // so the rename itself survives a crash.
  GPUPROF_RETURN_IF_ERROR(base::PublishDurably(layout_.partial_path, layout_.db_path, layout_.output_dir));
  phases.Mark("fsync and rename");
  std::error_code ec;
  auto size = std::filesystem::file_size(layout_.db_path, ec);
  if (!ec) bytes_.store(size, std::memory_order_relaxed);
  // analysis.db beside it, from the published profile. A failure costs that file only: the
  // profile is complete, and what is left of analysis.db keeps its .partial name.
  if (Status analysis = WriteAnalysisDb(layout_.db_path, layout_.analysis_db_path); !analysis.ok()) {
    GPUPROF_LOG(kWarning) << "the profile " << layout_.db_path << " is complete, but its analysis.db was not "
                          << "written: " << analysis.message();
  }
  phases.Mark("analysis.db");
  // msprof-analyze's cluster analysis reads the job's parallel layout from it (ClusterBaseInfo,
  // the step trace's parallel indices); the profile does not depend on it.
  if (Status metadata = WriteFileAtomically(layout_.metadata_json_path, ProfilerMetadataJson(FinalRun()));
      !metadata.ok()) {
    GPUPROF_LOG(kWarning) << "the profile " << layout_.db_path << " is complete, but profiler_metadata.json "
                          << "was not written: " << metadata.message();
  }
  return WriteFileAtomically(layout_.info_json_path, ProfilerInfoJson(FinalRun(), layout_, end_ns));
}

void ProfileWriterImpl::StopSideFiles() {
  kernel_side_.reset();
  connection_side_.reset();
  api_side_.reset();
}

Status ProfileWriterImpl::FinishKernelSide() {
  kernel_side_->Post([this](const Connection&) {
    kernel_sink_.Release();
    return OkStatus();
  });
  return kernel_side_->Finish();
}

}  // namespace gpuprof::db::internal
