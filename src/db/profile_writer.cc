// ProfileWriter's lifecycle: Create (the output directories, the .partial file with its schema
// and indexes, the side files and threads), Submit, and the destructor of a writer that was never
// finalized. Finalize is in writer_finalize.cc; writer_impl.h maps the other files.
#include "db/profile_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "base/clock.h"
#include "base/errno_text.h"
#include "base/logging.h"
#include "db/profile_writer_internal.h"
#include "db/schema.h"
#include "db/writer_impl.h"

namespace gpuprof::db {
namespace internal {
namespace {

std::string LocalHostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

ProfileWriterImpl::~ProfileWriterImpl() {
  if (finalized_) return;
  StopThreads();
  if (sink_.connection().is_open()) {
    if (!failed_.load()) {  // keep what was streamed readable
      sink_.WriteLaneRows(lane_.TakeRows()).IgnoreError();
      sink_.Commit().IgnoreError();
      if (FinishKernelSide().ok()) kernel_side_->MergeInto(sink_.connection()).IgnoreError();
    }
    StopSideFiles();
    sink_.ReleaseStatements();
    sink_.connection().Close().IgnoreError();
  }
  GPUPROF_LOG(kWarning) << "profile writer destroyed before Finalize; the incomplete profile stays at "
                        << layout_.partial_path;
}

void ProfileWriterImpl::Abandon() {
  finalized_ = true;
  StopThreads();
  StopSideFiles();
  sink_.ReleaseStatements();
  sink_.connection().Close().IgnoreError();
  unlink(layout_.partial_path.c_str());
}

Status ProfileWriterImpl::Start() {
  GPUPROF_RETURN_IF_ERROR(sink_.Prepare());
  // All side files now, while creating them is cheap (at Finalize the first file creation
  // after the bulk of the writing stalled for ~0.1 s). The two used only at Finalize idle until then.
  GPUPROF_ASSIGN_OR_RETURN(kernel_side_, SideFile::Create(sink_.connection(), KernelSidePath(layout_),
                                                          {"COMPUTE_TASK_INFO", "STRING_IDS"}));
  GPUPROF_ASSIGN_OR_RETURN(connection_side_, SideFile::Create(sink_.connection(), ConnectionSidePath(layout_),
                                                              {"CONNECTION_IDS"}));
  GPUPROF_ASSIGN_OR_RETURN(api_side_,
                           SideFile::Create(sink_.connection(), ApiSidePath(layout_), {"PYTORCH_API"}));
  GPUPROF_RETURN_IF_ERROR(sink_.Begin());
  try {
    lane_thread_ = std::thread([this] { RunLane(); });
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error& e) {
    return UnavailableError(std::string("cannot start the writer threads: ") + e.what());
  }
  return OkStatus();
}

void ProfileWriterImpl::Submit(std::vector<trace::Record> records) {
  if (records.empty()) return;
  std::size_t n = records.size();
  PushResult result =
      failed_.load(std::memory_order_relaxed) ? PushResult::kClosed : queue_.Push(std::move(records));
  if (result == PushResult::kQueued) return;
  dropped_.fetch_add(n, std::memory_order_relaxed);
  if (!warned_drop_.exchange(true)) {
    GPUPROF_LOG(kWarning) << "profile writer for " << layout_.db_path << " is dropping records ("
                          << (result == PushResult::kFull ? "queue full" : "writer stopped")
                          << "); the count is in the writer's stats";
  }
}

WriterStats ProfileWriterImpl::stats() const {
  WriterStats s;
  s.records = written_records_.load(std::memory_order_relaxed);
  s.rows = rows_.load(std::memory_order_relaxed);
  s.dropped_records = dropped_.load(std::memory_order_relaxed);
  s.bytes = bytes_.load(std::memory_order_relaxed);
  return s;
}

StatusOr<std::unique_ptr<ProfileWriter>> CreateProfileWriter(const WriterOptions& options,
                                                             std::size_t max_queued_records) {
  if (options.out_dir.empty()) return InvalidArgumentError("profile writer: out_dir is empty");
  if (options.batch_rows == 0) return InvalidArgumentError("profile writer: batch_rows must be > 0");
  if (max_queued_records == 0) return InvalidArgumentError("profile writer: the queue limit must be > 0");

  WriterOptions opts = options;
  if (opts.run.hostname.empty()) opts.run.hostname = LocalHostname();
  if (opts.run.pid == 0) opts.run.pid = static_cast<std::uint32_t>(getpid());
  if (opts.run.start_ns == 0) opts.run.start_ns = base::EpochNowNs();
  OutputLayout layout = MakeOutputLayout(opts.out_dir, opts.worker_name, opts.run.hostname, opts.run.pid,
                                         opts.run.start_ns, opts.run.rank);

  std::error_code ec;
  std::filesystem::create_directories(layout.output_dir, ec);
  if (ec) {
    return FailedPreconditionError("cannot create profile directory " + layout.output_dir + ": " +
                                   ec.message());
  }
  if (std::filesystem::exists(layout.db_path, ec)) {
    return AlreadyExistsError("profile " + layout.db_path + " already exists; not overwriting it");
  }
  // A stale .partial of the same name is an earlier run that died: start over.
  if (unlink(layout.partial_path.c_str()) != 0 && errno != ENOENT) {
    return FailedPreconditionError("cannot remove stale " + layout.partial_path + ": " +
                                   base::ErrnoText(errno));
  }

  GPUPROF_ASSIGN_OR_RETURN(Connection conn, Connection::OpenForWrite(layout.partial_path));
  Status status = conn.Exec(kBulkWritePragmas);
  if (status.ok()) status = conn.Exec("BEGIN");
  if (status.ok()) status = CreateSchema(conn);
  // Indexes before the rows, not after: see schema.h (measured: TaskIndex kept up to date while
  // tasks stream in, nearly in start order, costs a third of sorting it at Finalize).
  if (status.ok()) status = CreateIndexes(conn);
  if (status.ok()) status = conn.Exec("COMMIT");
  if (!status.ok()) {
    conn.Close().IgnoreError();
    unlink(layout.partial_path.c_str());  // nothing worth keeping: not even the schema is complete
    return status.WithContext("creating profile " + layout.partial_path);
  }

  auto writer = std::make_unique<ProfileWriterImpl>(std::move(opts), std::move(layout), std::move(conn),
                                                    max_queued_records);
  if (Status started = writer->Start(); !started.ok()) {
    writer->Abandon();
    return started.WithContext("starting the writer for " + writer->layout().partial_path);
  }
  return std::unique_ptr<ProfileWriter>(std::move(writer));
}

}  // namespace internal

StatusOr<std::unique_ptr<ProfileWriter>> ProfileWriter::Create(const WriterOptions& options) {
  return internal::CreateProfileWriter(options, internal::kDefaultMaxQueuedRecords);
}

}  // namespace gpuprof::db
