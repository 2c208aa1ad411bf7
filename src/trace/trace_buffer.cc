#include "trace/trace_buffer.h"

#include <pthread.h>

#include <algorithm>
#include <iterator>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/logging.h"
#include "base/synchronized.h"

#if defined(__SANITIZE_ADDRESS__)
#define GPUPROF_TRACE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define GPUPROF_TRACE_LSAN 1
#endif
#endif
#ifdef GPUPROF_TRACE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace gpuprof::trace {
namespace internal {

// One thread's undrained records. Only the owning thread appends; Drain and the collector's
// destructor swap the vectors out.
struct PendingRecords {
  std::vector<std::vector<Record>> full;  // filled chunks, oldest first
  std::vector<Record> open;               // the chunk being filled (capacity 0: none yet)
  std::size_t next_chunk = 0;             // capacity of the next chunk (0: the first one)
  std::size_t count = 0;                  // records in `full` and `open`
  std::int64_t credit = 0;                // slots reserved from the collector's cap, not yet used
  bool owner_exited = false;
};

class ThreadBuffer {
 public:
  base::Synchronized<PendingRecords, std::mutex> pending;
  // Set when the collector is destroyed: the owning thread may then forget this buffer.
  std::atomic<bool> detached{false};
};

class Registry {
 public:
  base::Synchronized<std::vector<std::shared_ptr<ThreadBuffer>>, std::mutex> buffers;
  // The buffer of threads whose thread_local cache is gone, shared by all of them; also in
  // `buffers`. Null until one appends. Guarded by `buffers`' mutex.
  std::shared_ptr<ThreadBuffer> exiting_threads;
};

}  // namespace internal

namespace {

using internal::PendingRecords;
using internal::ThreadBuffer;

constexpr std::size_t kMaxChunkRecords = std::size_t{1} << 20;
constexpr std::size_t kFirstChunkRecords = 16;
constexpr std::int64_t kMaxReserveBatch = 256;

std::uint64_t NewCollectorId() noexcept {
  // Ids are never reused, so a thread's cache cannot confuse a new collector with a dead one
  // that lived at the same address.
  static std::atomic<std::uint64_t> next_id{1};
  return next_id.fetch_add(1, std::memory_order_relaxed);
}

// Incremented in every fork child, before fork() returns there. A collector or cache entry from
// an older generation belongs to the parent: its locks may be held by threads that the child
// does not have, so it is never locked (and never freed) here.
std::atomic<std::uint64_t> fork_generation{0};

void OnForkChild() noexcept { fork_generation.fetch_add(1, std::memory_order_relaxed); }

std::uint64_t CurrentForkGeneration() noexcept {
  static const bool registered = [] {
    int rc = pthread_atfork(nullptr, nullptr, &OnForkChild);
    if (rc != 0) {
      GPUPROF_LOG(kWarning) << "pthread_atfork failed (error " << rc
                            << "): a fork child's trace collectors are not disarmed; call "
                               "ResetAfterFork in the child before appending";
    }
    return rc == 0;
  }();
  static_cast<void>(registered);
  return fork_generation.load(std::memory_order_relaxed);
}

// Inherited state is leaked on purpose in a fork child (see ResetAfterFork); tell LeakSanitizer so
// a child that exits normally under ASan does not report it.
void IgnoreLeak(const void* object) noexcept {
#ifdef GPUPROF_TRACE_LSAN
  __lsan_ignore_object(object);
#else
  static_cast<void>(object);
#endif
}

struct CacheEntry {
  std::uint64_t collector_id = 0;
  std::uint64_t fork_generation = 0;
  std::shared_ptr<ThreadBuffer> buffer;
};

// Reading these after the thread's cache is destroyed is defined: they are trivially destructible.
// t_last_* is the fast path of Append: the buffer this thread used last and its collector's id.
thread_local std::uint64_t t_last_id = 0;
thread_local ThreadBuffer* t_last_buffer = nullptr;
thread_local bool t_cache_destroyed = false;

// The calling thread's buffers, one per collector it has appended to.
class ThreadCache {
 public:
  ThreadCache() = default;
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;

  ~ThreadCache() {
    t_cache_destroyed = true;
    t_last_id = 0;
    t_last_buffer = nullptr;
    const std::uint64_t generation = fork_generation.load(std::memory_order_relaxed);
    for (CacheEntry& entry : entries) {
      // An inherited buffer is not locked: its mutex may be held by a parent thread that is not
      // here. Dropping the reference frees nothing while the (leaked) inherited registry holds one.
      if (entry.fork_generation == generation && !entry.buffer->detached.load(std::memory_order_acquire)) {
        entry.buffer->pending.wlock()->owner_exited = true;
      }
    }
  }

  std::vector<CacheEntry> entries;
};

thread_local ThreadCache t_cache;

}  // namespace

Status RecordCollector::ValidateOptions(const CollectorOptions& options) {
  if (options.chunk_records == 0 || options.chunk_records > kMaxChunkRecords) {
    return InvalidArgumentError("CollectorOptions.chunk_records is " + std::to_string(options.chunk_records) +
                                "; it must be in [1, " + std::to_string(kMaxChunkRecords) + "]");
  }
  if (options.flush_threshold > 0 && !options.on_flush) {
    return InvalidArgumentError("CollectorOptions.flush_threshold is " +
                                std::to_string(options.flush_threshold) + " but on_flush is empty");
  }
  return OkStatus();
}

RecordCollector::RecordCollector(CollectorOptions options)
    : options_(std::move(options)),
      max_buffered_(static_cast<std::int64_t>(
          std::min<std::size_t>(options_.max_buffered_records, std::size_t{1} << 62))),
      reserve_batch_(std::clamp<std::int64_t>(max_buffered_ / 1024, 1, kMaxReserveBatch)),
      id_(NewCollectorId()),
      fork_generation_(CurrentForkGeneration()),
      registry_(std::make_unique<internal::Registry>()) {
  Status valid = ValidateOptions(options_);
  GPUPROF_CHECK(valid.ok()) << valid.ToString();
}

RecordCollector::~RecordCollector() {
  if (registry_ == nullptr) return;
  if (InForkChild()) {
    AbandonRegistry();
    return;
  }
  std::vector<std::vector<Record>> freed;  // destroyed after the locks are released
  auto buffers = registry_->buffers.wlock();
  for (const std::shared_ptr<ThreadBuffer>& buffer : *buffers) {
    {
      auto pending = buffer->pending.wlock();
      for (auto& chunk : pending->full) freed.push_back(std::move(chunk));
      freed.push_back(std::move(pending->open));
      pending->full = {};
      pending->open = {};
      pending->count = 0;
    }
    buffer->detached.store(true, std::memory_order_release);
  }
  buffers->clear();
}

bool RecordCollector::InForkChild() const noexcept {
  return fork_generation.load(std::memory_order_relaxed) != fork_generation_;
}

void RecordCollector::AbandonRegistry() noexcept {
  internal::Registry* inherited = registry_.release();
  IgnoreLeak(inherited);
}

ThreadBuffer* RecordCollector::LocalBuffer() noexcept {
  if (t_last_id == id_) return t_last_buffer;
  return FindOrRegisterLocalBuffer();
}

ThreadBuffer* RecordCollector::FindOrRegisterLocalBuffer() noexcept {
  if (registry_ == nullptr) return nullptr;
  if (t_cache_destroyed) return ExitingThreadsBuffer();
  std::vector<CacheEntry>& entries = t_cache.entries;
  for (const CacheEntry& entry : entries) {
    if (entry.collector_id == id_) {
      t_last_id = id_;
      t_last_buffer = entry.buffer.get();
      return t_last_buffer;
    }
  }
  // A collector this thread has not used yet: first forget buffers whose collector is gone or
  // that were inherited across fork(), so the cache stays as small as the live collectors.
  // Dropping an inherited buffer frees nothing: the parent's registry, leaked in this process,
  // still references it.
  const std::uint64_t generation = fork_generation.load(std::memory_order_relaxed);
  std::erase_if(entries, [generation](const CacheEntry& entry) {
    return entry.fork_generation != generation || entry.buffer->detached.load(std::memory_order_acquire);
  });
  t_last_id = 0;
  t_last_buffer = nullptr;
  try {
    auto buffer = std::make_shared<ThreadBuffer>();
    entries.reserve(entries.size() + 1);  // so the push_back below cannot fail after registering
    registry_->buffers.wlock()->push_back(buffer);
    entries.push_back(CacheEntry{id_, fork_generation_, std::move(buffer)});
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  t_last_id = id_;
  t_last_buffer = entries.back().buffer.get();
  return t_last_buffer;
}

// A thread appending after its cache was destroyed: its own thread_local destructors, or the main
// thread inside exit(), where atexit teardown of libraries may still call CUDA while the session
// records. Such threads share one buffer, which no thread owns, so Drain never forgets it; the
// registry lock per Append is paid only by them.
ThreadBuffer* RecordCollector::ExitingThreadsBuffer() noexcept {
  auto buffers = registry_->buffers.wlock();
  if (registry_->exiting_threads == nullptr) {
    try {
      auto buffer = std::make_shared<ThreadBuffer>();
      buffers->push_back(buffer);
      registry_->exiting_threads = std::move(buffer);
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  return registry_->exiting_threads.get();
}

bool RecordCollector::Reserve(std::int64_t slots) noexcept {
  std::int64_t before = reserved_.fetch_add(slots, std::memory_order_relaxed);
  if (before + slots <= max_buffered_) return true;
  reserved_.fetch_sub(slots, std::memory_order_relaxed);
  return false;
}

bool RecordCollector::Append(Record&& record) noexcept {
  ThreadBuffer* buffer = InForkChild() ? nullptr : LocalBuffer();
  if (buffer == nullptr) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  bool signal = false;
  {
    auto pending = buffer->pending.wlock();
    // Take one slot of the cap: from this thread's reserved batch, else a new batch, else (near
    // the cap) a single slot, so one thread alone can fill the cap exactly.
    if (pending->credit > 0) {
      --pending->credit;
    } else if (Reserve(reserve_batch_)) {
      pending->credit = reserve_batch_ - 1;
    } else if (reserve_batch_ == 1 || !Reserve(1)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (pending->open.size() == pending->open.capacity()) {
      try {
        if (!pending->open.empty()) {
          pending->full.push_back(std::move(pending->open));
          pending->open = {};
        }
        // Chunks start small and double, so a thread that appends rarely holds little memory.
        std::size_t capacity = std::min(pending->next_chunk == 0 ? kFirstChunkRecords : pending->next_chunk,
                                        options_.chunk_records);
        pending->open.reserve(capacity);
        pending->next_chunk = std::min(capacity * 2, options_.chunk_records);
      } catch (const std::bad_alloc&) {
        ++pending->credit;  // the slot goes back to this thread's batch
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
    }
    pending->open.push_back(std::move(record));  // within capacity: no allocation, no throw
    signal = ++pending->count == options_.flush_threshold;
  }
  if (signal) options_.on_flush();
  return true;
}

std::vector<std::vector<Record>> RecordCollector::DrainChunks() {
  std::vector<std::vector<Record>> out;
  if (registry_ == nullptr || InForkChild()) return out;
  std::int64_t released = 0;
  auto buffers = registry_->buffers.wlock();
  for (auto it = buffers->begin(); it != buffers->end();) {
    std::vector<std::vector<Record>> full;
    std::vector<Record> open;
    bool exited = false;
    {
      auto pending = (*it)->pending.wlock();
      full.swap(pending->full);
      open.swap(pending->open);
      released += static_cast<std::int64_t>(pending->count);
      pending->count = 0;
      exited = pending->owner_exited;
      if (exited) {
        // Nobody will use this thread's reserved batch again.
        released += pending->credit;
        pending->credit = 0;
      }
    }
    // Outside the thread's lock: growing `out` may allocate.
    for (auto& chunk : full) out.push_back(std::move(chunk));
    if (!open.empty()) out.push_back(std::move(open));
    it = exited ? buffers->erase(it) : it + 1;
  }
  reserved_.fetch_sub(released, std::memory_order_relaxed);
  return out;
}

std::vector<Record> RecordCollector::Drain() {
  std::vector<std::vector<Record>> chunks = DrainChunks();
  std::size_t total = 0;
  for (const auto& chunk : chunks) total += chunk.size();
  std::vector<Record> out;
  out.reserve(total);
  for (auto& chunk : chunks) {
    std::move(chunk.begin(), chunk.end(), std::back_inserter(out));
  }
  return out;
}

Status RecordCollector::ResetAfterFork() noexcept {
  // Forget the calling thread's inherited entry (its buffer stays referenced by the leaked
  // registry) so that neither a lookup nor this thread's exit ever locks it.
  if (!t_cache_destroyed) {
    std::erase_if(t_cache.entries, [this](const CacheEntry& entry) { return entry.collector_id == id_; });
  }
  if (t_last_id == id_) {
    t_last_id = 0;
    t_last_buffer = nullptr;
  }
  // The inherited registry and buffers are neither locked nor freed: their mutexes may be held by
  // threads that vanished in fork() and their vectors may be mid-update. Leaking them also keeps
  // the parent's copy-on-write pages untouched.
  if (registry_ != nullptr) AbandonRegistry();
  id_ = NewCollectorId();
  fork_generation_ = CurrentForkGeneration();
  reserved_.store(0, std::memory_order_relaxed);
  dropped_.store(0, std::memory_order_relaxed);
  try {
    registry_ = std::make_unique<internal::Registry>();
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("RecordCollector::ResetAfterFork: out of memory for a new registry");
  }
  return OkStatus();
}

std::size_t RecordCollector::buffered() const {
  if (registry_ == nullptr || InForkChild()) return 0;
  std::size_t total = 0;
  auto buffers = registry_->buffers.wlock();
  for (const std::shared_ptr<ThreadBuffer>& buffer : *buffers) total += buffer->pending.wlock()->count;
  return total;
}

std::size_t RecordCollector::thread_count() const {
  if (registry_ == nullptr || InForkChild()) return 0;
  return registry_->buffers.wlock()->size();
}

}  // namespace gpuprof::trace
