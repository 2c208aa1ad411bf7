// OpBuffer: the hot path of the PyTorch hooks. Every op and allocator event is appended as a small
// fixed-size entry (plus its name, inputs and stack bytes in per-chunk arenas) to the calling
// thread's own chunk, under that chunk's own uncontended spin lock; nothing is formatted, copied
// into strings or handed to the session there. A full chunk goes to a queue that one drain thread
// turns into gpuprof_torch_op_v1 / gpuprof_allocator_event_v1 records for the sinks (the session's
// C API), formatting the inputs with the given formatter. Flush() hands over every thread's chunk
// and returns when all of it reached the sinks.
//
//   OpBuffer buffer(sinks);
//   buffer.Start();
//   buffer.AddOp(op_entry, "aten::addmm", encoded_inputs, {});   // any thread
//   buffer.AddMemory(memory_entry);                               // any thread
//   buffer.Flush();                                               // e.g. at profile stop
//   buffer.Stop();                                                // Flush, then the drain thread ends
//
// Encoded inputs: a sequence of words, per input one header word (kind | dtype << 8 | ndim << 16)
// and then ndim dimension words; the formatter turns it into DB_SPEC 3.3's shape and dtype strings.
//
// Thread-safety: Add* from any thread, concurrently with each other and with Flush/Stop (those
// are serialized among themselves). A fork child records nothing and takes no lock (every call
// returns at once and stats() is empty: the drain thread does not exist there, and a lock a
// parent thread held at the fork is never released). Delivery is deferred: full chunks wait until
// `deliver_at_queued_chunks` of them are queued, or until Flush/Stop, so the background work does not
// compete with the program while it runs. Memory: chunks hold at most `chunk_entries` entries;
// the queue holds at most `max_queued_chunks`, beyond which whole chunks are dropped and counted;
// up to `spare_chunks` delivered chunks of at most `spare_chunk_max_bytes` are kept, emptied, for
// reuse until Stop.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gpuprof/gpuprof_c.h"

namespace gpuprof::torch_hooks {

// Input kinds in the encoded-input header word.
enum class InputKind : std::uint8_t { kTensor, kNone, kTensorList, kScalar, kScalarList, kOther };

constexpr std::int64_t EncodeInputHeader(InputKind kind, std::uint8_t dtype, std::uint32_t ndim) {
  return static_cast<std::int64_t>(kind) | (static_cast<std::int64_t>(dtype) << 8) |
         (static_cast<std::int64_t>(ndim) << 16);
}
constexpr InputKind HeaderKind(std::int64_t header) { return static_cast<InputKind>(header & 0xff); }
constexpr std::uint8_t HeaderDtype(std::int64_t header) {
  return static_cast<std::uint8_t>((header >> 8) & 0xff);
}
constexpr std::uint32_t HeaderRank(std::int64_t header) { return static_cast<std::uint32_t>(header >> 16); }

// What the hooks know of a finished op (the name, inputs and stack travel separately).
struct OpEntry {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t sequence_number = -1;
  std::uint64_t fwd_thread_id = 0;
  std::uint32_t tid = 0;
  std::uint64_t external_id = 0;  // the id pushed as device correlation while the op ran; 0: none
};

struct OpBufferSinks {
  std::function<int(const gpuprof_torch_op_v1&)> op;
  std::function<int(const gpuprof_allocator_event_v1&)> memory;
  // Encoded inputs -> (shapes, dtypes) in DB_SPEC 3.3's format.
  std::function<void(std::span<const std::int64_t>, std::string* shapes, std::string* dtypes)> format_inputs;
};

struct OpBufferOptions {
  std::size_t chunk_entries = 4096;     // ops + memory events per chunk
  std::size_t max_queued_chunks = 256;  // about 1M entries waiting for the drain thread
  // Full chunks wait in the queue until this many are there (or Flush/Stop is called); then the
  // drain thread delivers the whole queue. So while the program runs the drain thread, and the
  // session and DB writer behind it, sleep instead of taking CPU from the profiled program's own
  // threads (e.g. torch's intra-op threads), and the formatting and SQLite work happens at the
  // profile's stop. 1: each full chunk is delivered at once. The memory this holds is bounded:
  // about this many chunks of `chunk_entries` entries.
  std::size_t deliver_at_queued_chunks = 32;
  // Delivered chunks kept (emptied, their memory kept) for the next thread that needs one, so the
  // hot path writes to memory already mapped instead of page-faulting a fresh chunk in. A chunk
  // that grew past `spare_chunk_max_bytes` (long Python stacks) is freed instead; Stop frees them all.
  std::size_t spare_chunks = 8;
  std::size_t spare_chunk_max_bytes = std::size_t{4} << 20;
};

struct OpBufferStats {
  std::uint64_t ops = 0;              // handed to the op sink
  std::uint64_t memory_events = 0;    // handed to the memory sink
  std::uint64_t sink_refusals = 0;    // records a sink did not take (non-zero status)
  std::uint64_t dropped_entries = 0;  // in chunks dropped because the queue was full
  std::uint64_t chunks_made = 0;      // chunks allocated (the others were spares reused)
};

class OpBuffer {
 public:
  explicit OpBuffer(OpBufferSinks sinks, OpBufferOptions options = {});
  ~OpBuffer();  // Stop()
  OpBuffer(const OpBuffer&) = delete;
  OpBuffer& operator=(const OpBuffer&) = delete;

  void Start();  // starts the drain thread (again after Stop)
  void Stop();   // Flush, then ends the drain thread

  // `inputs`: encoded inputs, or empty (no shapes recorded); `stack`: frames, innermost first.
  void AddOp(const OpEntry& op, std::string_view name, std::span<const std::int64_t> inputs,
             std::span<const std::string> stack) noexcept;
  void AddMemory(const gpuprof_allocator_event_v1& event) noexcept;

  // Every entry added before the call reaches the sinks before it returns.
  void Flush();

  OpBufferStats stats() const;

  struct Chunk;
  struct ThreadSlot;

 private:
  ThreadSlot* Slot() noexcept;
  Chunk& CurrentChunk(ThreadSlot& slot);  // under slot.lock; makes the chunk when there is none
  // The calling thread's chunk gets `fill(chunk)` under its lock; a full chunk is handed over.
  template <typename Fill>
  void Append(Fill&& fill) noexcept;
  void HandOver(std::unique_ptr<Chunk> chunk) noexcept;
  bool QueueIsDue() const;  // under queue_mu_: the drain thread has queued chunks to deliver now
  void DrainLoop();
  void Deliver(const Chunk& chunk);
  void KeepSpare(std::unique_ptr<Chunk> chunk) noexcept;  // emptied, for CurrentChunk

  const OpBufferSinks sinks_;
  const OpBufferOptions options_;
  const std::uint64_t id_;  // tells this buffer's thread slots from another buffer's

  std::mutex slots_mu_;
  std::vector<std::shared_ptr<ThreadSlot>> slots_;  // guarded by slots_mu_

  mutable std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::unique_ptr<Chunk>> queue_;  // guarded by queue_mu_
  bool delivering_ = false;                   // guarded by queue_mu_
  bool flushing_ = false;                     // guarded by queue_mu_: a Flush waits for the queue
  bool stopping_ = false;                     // guarded by queue_mu_
  OpBufferStats stats_;                       // guarded by queue_mu_

  std::mutex spare_mu_;  // taken under a slot's lock (CurrentChunk); takes no other lock
  std::vector<std::unique_ptr<Chunk>> spares_;  // guarded by spare_mu_
  std::atomic<std::uint64_t> chunks_made_{0};

  std::mutex control_mu_;  // serializes Start / Stop / Flush
  std::thread drain_;
};

}  // namespace gpuprof::torch_hooks
