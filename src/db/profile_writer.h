// ProfileWriter: writes one ascend_pytorch_profiler[_<rank>].db (DB_SPEC.md) from trace records.
//
// Create() makes the output directories and opens "<final>.partial" with the exact schema and
// enum rows. Submit() hands batches of records to a background writer thread, which interns
// strings (id spaces of DB_SPEC "Decisions") and inserts rows with prepared statements in batched
// transactions. Finalize() drains the queue, computes the derived tables (CONNECTION_IDS and
// PYTORCH_API.connectionId, OP_MEMORY, STEP_TIME), writes RANK_DEVICE_MAP, SESSION_TIME_INFO,
// NPU_INFO, HOST_INFO, META_DATA and gpuprof's own tables, creates the indexes, closes the file,
// renames it to its final name and writes profiler_info[_<rank>].json. If Finalize is never
// reached (crash, kill) only the .partial file remains. Destroying an unfinalized writer stops
// the thread and leaves the .partial file (it says so in one warning line).
//
// Thread-safety: Submit may be called from any thread; Create/Finalize from one thread.
// Errors: Status naming the file and the SQLite error; a write error stops the writer, later
// Submits are dropped (counted) and Finalize returns the first error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "db/output_layout.h"
#include "gpuprof/status.h"
#include "trace/records.h"

namespace gpuprof::db {

struct WriterOptions {
  std::string out_dir;              // parent of the *_ascend_pt directory (created if missing)
  std::string worker_name;          // empty: "<hostname>_<pid>"
  trace::RunInfo run;               // hostname, pid, rank, device, start time, device names, config
  std::size_t batch_rows = 50'000;  // rows per transaction
};

struct WriterStats {
  std::uint64_t records = 0;
  std::uint64_t rows = 0;
  std::uint64_t dropped_records = 0;
  std::uint64_t bytes = 0;  // final file size
};

class ProfileWriter {
 public:
  static StatusOr<std::unique_ptr<ProfileWriter>> Create(const WriterOptions& options);
  virtual ~ProfileWriter() = default;

  // Queues records for the writer thread. Never blocks on SQLite.
  virtual void Submit(std::vector<trace::Record> records) = 0;
  // `end_ns` closes the session time. Returns the final DB path.
  virtual StatusOr<std::string> Finalize(std::int64_t end_ns) = 0;
  // The devices for NPU_INFO when they were not known at Create (a session the CUDA injection
  // started cannot ask the driver then); called on Finalize's thread, before it. Default: ignored.
  virtual void SetDevices(std::vector<std::pair<std::int32_t, std::string>> devices) {
    static_cast<void>(devices);
  }
  // The records lost before they reached the writer, per source (db/lost_records.h), for META_DATA's
  // gpuprof_lost_records row, to which the writer adds its own losses; called on Finalize's
  // thread, before it. Default: ignored.
  virtual void SetLostRecords(std::vector<std::pair<std::string, std::uint64_t>> lost) {
    static_cast<void>(lost);
  }
  // Instead of Finalize, after the last Submit: stops the threads and deletes the .partial file,
  // without a word (a DB nobody asked for: the session's window DB). A no-op once finalized.
  virtual void Discard() = 0;

  virtual const OutputLayout& layout() const = 0;
  virtual WriterStats stats() const = 0;
};

}  // namespace gpuprof::db
