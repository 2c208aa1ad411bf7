// SideFile: a temporary SQLite file beside the profile's .partial file, filled by a thread of its
// own and merged into the profile before it is renamed.
//
// SQLite writes one file from one thread at a time, and inserting rows is most of the writer's
// work. A second file on a second thread doubles the rows per second on a multi-core machine;
// the merge is `INSERT INTO main.T SELECT * FROM side.T`, which SQLite's transfer optimization
// runs by copying the stored records without decoding them (about a fifth of the cost of
// inserting them). The side file's tables are created from the main file's own DDL, so the
// transfer applies and the rows land exactly as if they had been inserted into the main file
// (same values, same order).
//
// The file is named "<profile>.partial-side<N>": a run that dies leaves it beside the .partial
// file, and its name says it is not a profile. A clean Finalize merges and deletes it; a writer
// destroyed without Finalize merges what it can and deletes it too.
//
// Thread-safety: Post from any one thread at a time; Finish, MergeInto and the destructor from the
// owner's thread. Jobs run on the side thread, one after another, each in its own transaction.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "db/sqlite_util.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

class SideFile {
 public:
  // A unit of work for the side thread; it writes rows through the side connection.
  using Job = std::function<Status(const Connection& side)>;

  // Creates `path` (replacing a stale file of that name) with the bulk-write pragmas, creates
  // `tables` there with the DDL `main` has for them, and starts the side thread.
  static StatusOr<std::unique_ptr<SideFile>> Create(const Connection& main, std::string path,
                                                    std::vector<std::string> tables);
  SideFile(const SideFile&) = delete;
  SideFile& operator=(const SideFile&) = delete;
  // Stops the thread (queued jobs are dropped) and deletes the file.
  ~SideFile();

  // Queues `job`. After a job has failed, later jobs are skipped (Finish reports the failure).
  void Post(Job job);

  // Runs every queued job, commits and closes the side connection. Returns the first error.
  Status Finish();

  // Copies every table into `main`, in one transaction, and deletes the file. Requires Finish
  // first and no open transaction on `main`.
  Status MergeInto(const Connection& main);

  const std::string& path() const noexcept { return path_; }

 private:
  SideFile(Connection conn, std::string path, std::vector<std::string> tables);
  void Run() noexcept;
  void Stop() noexcept;

  Connection conn_;  // the side thread's while it runs; the owner's after Finish
  const std::string path_;
  const std::vector<std::string> tables_;
  std::thread thread_;

  // A condition variable needs the mutex itself: the queue's state is reachable only through
  // Post, Finish and Run.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;  // guarded by mu_
  bool closing_ = false;  // guarded by mu_
  Status error_;          // guarded by mu_: the first failed job
};

}  // namespace gpuprof::db
