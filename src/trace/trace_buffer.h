// RecordCollector: per-thread append buffers for trace records.
//
// Producers (CUPTI buffer callbacks, torch hooks, Python, the replay controller) call Append from
// any thread; one consumer (the DB writer's thread) calls Drain whenever it likes, concurrently
// with them, and hands the chunks to db::ProfileWriter::Submit.
//
//   trace::RecordCollector collector(options);        // owned by the Session
//   collector.Append(std::move(api_call));            // any thread; a trace::ApiCall, TorchOp, ...
//   for (auto& chunk : collector.DrainChunks()) writer.Submit(std::move(chunk));  // writer thread
//
// Cost and locking. A thread's first Append to a collector creates that thread's buffer and
// registers it under the collector's registry mutex (once per thread per collector). Every later
// Append takes only that thread's own buffer mutex, which nobody else touches except a Drain in
// progress: there is no lock shared by all producers. Records go into chunked vectors (chunks
// grow from 16 records to `chunk_records`), so an Append allocates only when a chunk fills; the
// record's own strings are the caller's. The memory bound is one relaxed atomic counter that each
// thread reserves from in batches, so most Appends write no memory shared with other threads.
//
// Ordering. Drain returns each thread's records in the order that thread appended them, and a
// later Drain never returns a record older (on that thread) than one an earlier Drain returned.
// There is no order across threads: the writer orders by timestamp where it needs to.
//
// Ownership and lifetime. The collector owns every buffered record until Drain moves it out.
// Thread buffers are shared between the collector and a thread_local cache of the thread that
// fills them, so either side may go first:
//   - a thread that exits leaves its records in the collector; the next Drain returns them and
//     forgets the buffer;
//   - a collector that is destroyed frees its records at once and marks the buffers detached; a
//     thread that used it drops its (empty) buffer the next time it meets a collector it has not
//     used before, or when it exits.
// Collectors are told apart by a process-unique id, never by address, so a new collector built
// where an old one lived starts empty. The collector must outlive every Append/Drain call *on it*
// (destroy it only after producers have stopped calling it; the threads themselves may live on).
// A thread whose cache is gone (its own thread_local destructors; the main thread in exit(),
// where atexit teardown may still call CUDA) appends to one buffer shared by all such threads.
//
// Memory bound. At most about `max_buffered_records` records are held. Beyond it Append drops the
// record, counts it in dropped() and returns false: a profiler must neither grow without bound nor
// block the application. The bound is approximate with several threads: each may hold a reserved
// but unused batch of up to 256 slots (1/1024 of the cap, at least 1), so drops can begin up to
// threads × batch records early. With one thread it is exact.
//
// fork(). A child process inherits the parent's buffers, and mutexes that threads which do not
// exist in the child may hold. So, in a child (detected through a pthread_atfork handler) the
// collector never locks anything inherited: Append drops (counted), Drain returns nothing, and
// destruction leaks the inherited buffers, until ResetAfterFork() gives it fresh, empty state.
// The Session either stops collection in a child or calls ResetAfterFork there to profile it
// under its own pid (docs/architecture.md, "fork()").
//
// Errors. Append never throws (it runs under CUPTI callbacks): allocation failure drops the
// record and counts it. Drain may throw std::bad_alloc when the host is out of memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gpuprof/status.h"
#include "trace/records.h"

namespace gpuprof::trace {

namespace internal {
class ThreadBuffer;
class Registry;
}  // namespace internal

struct CollectorOptions {
  // The cap on records held (all threads). About 216 bytes each plus their strings.
  std::size_t max_buffered_records = std::size_t{1} << 20;
  // The largest chunk a thread fills before starting the next; chunks start at 16 records and
  // double, so a thread that appends rarely holds little memory.
  std::size_t chunk_records = 1024;
  // When a thread's buffer grows to exactly this many undrained records, `on_flush` runs on that
  // thread, after the append and outside every collector lock; it runs again on the next crossing
  // after a Drain. 0 disables it. `on_flush` must be cheap, must not throw and must not block
  // (typically it notifies the writer's condition variable); it may call Append or Drain.
  // Fixed at construction so producers read it without synchronization.
  std::size_t flush_threshold = 0;
  std::function<void()> on_flush;
};

class RecordCollector {
 public:
  // InvalidArgument naming the option: chunk_records must be in [1, 1 << 20]; a flush_threshold
  // needs an on_flush callback.
  static Status ValidateOptions(const CollectorOptions& options);

  // `options` must have passed ValidateOptions (checked: a bad value aborts).
  explicit RecordCollector(CollectorOptions options = {});
  // Frees every undrained record. No Append or Drain on this collector may be running or start.
  ~RecordCollector();
  RecordCollector(const RecordCollector&) = delete;
  RecordCollector& operator=(const RecordCollector&) = delete;

  // Moves `record` into the calling thread's buffer. Returns false when it was dropped (over the
  // cap, out of memory, or in a fork child before ResetAfterFork).
  // Thread-safe; lock-free with respect to other producers after the thread's first call.
  bool Append(Record&& record) noexcept;

  // Swaps out every thread's undrained chunks: each returned chunk holds records of one thread in
  // append order, and one thread's chunks come in order. Buffers of exited threads are emptied and
  // forgotten. Thread-safe (concurrent Drains are serialized), concurrent with Appends; it holds
  // a thread's mutex only to swap two vectors.
  std::vector<std::vector<Record>> DrainChunks();
  // DrainChunks, concatenated (thread by thread).
  std::vector<Record> Drain();

  // Re-arms the collector in a fork child: abandons the inherited state without locking or
  // freeing it (its locks may be held by threads that do not exist here) and starts empty, with
  // fresh counters. Call it in the child, on the thread that called fork(), before the child
  // starts threads or appends. Calling it in the parent drops its buffered records the same way
  // (leaked), so don't. ResourceExhausted when the new state cannot be allocated; the collector
  // then drops every record.
  Status ResetAfterFork() noexcept;

  // Records dropped since construction (or ResetAfterFork).
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  // Records held now (a snapshot while producers run). Takes each thread's lock in turn: for
  // diagnostics and tests, not for a hot path.
  std::size_t buffered() const;
  // Thread buffers registered: live threads that appended, exited ones not yet drained, and the
  // one shared by threads that appended during their exit, once one did.
  std::size_t thread_count() const;
  const CollectorOptions& options() const noexcept { return options_; }

 private:
  internal::ThreadBuffer* LocalBuffer() noexcept;
  internal::ThreadBuffer* FindOrRegisterLocalBuffer() noexcept;
  internal::ThreadBuffer* ExitingThreadsBuffer() noexcept;
  bool Reserve(std::int64_t slots) noexcept;
  bool InForkChild() const noexcept;
  void AbandonRegistry() noexcept;

  const CollectorOptions options_;
  const std::int64_t max_buffered_;
  const std::int64_t reserve_batch_;
  // Process-unique; replaced by ResetAfterFork so the calling thread's inherited cache entry is
  // never found again.
  std::uint64_t id_;
  // The fork generation this collector's state belongs to (see InForkChild).
  std::uint64_t fork_generation_;
  std::unique_ptr<internal::Registry> registry_;  // null only after a failed ResetAfterFork
  // Slots taken from the cap: records held plus batches reserved by threads and not yet used.
  std::atomic<std::int64_t> reserved_{0};
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace gpuprof::trace
