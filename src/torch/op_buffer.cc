#include "torch/op_buffer.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/thread_priority.h"

namespace gpuprof::torch_hooks {
namespace {

std::atomic<std::uint64_t> g_next_buffer_id{1};

// Set in a fork child: its copy of the hooks records nothing (no drain thread exists there).
std::atomic<bool> g_fork_child{false};
void MarkForkChild() noexcept { g_fork_child.store(true, std::memory_order_relaxed); }
[[maybe_unused]] const bool g_fork_handler = pthread_atfork(nullptr, nullptr, &MarkForkChild) == 0;

class SpinGuard {
 public:
  explicit SpinGuard(std::atomic_flag& flag) noexcept : flag_(flag) {
    while (flag_.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~SpinGuard() { flag_.clear(std::memory_order_release); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  std::atomic_flag& flag_;
};

}  // namespace

struct OpBuffer::Chunk {
  struct Op {
    OpEntry entry;
    std::uint32_t name_offset = 0;
    std::uint32_t name_size = 0;
    std::uint32_t inputs_offset = 0;
    std::uint32_t inputs_size = 0;  // words; 0: no inputs recorded
    std::uint32_t stack_offset = 0;
    std::uint32_t stack_frames = 0;
  };
  std::vector<Op> ops;
  std::vector<gpuprof_allocator_event_v1> memory;
  std::vector<char> text;  // names and stack frames, each followed by '\0'
  std::vector<std::int64_t> inputs;

  std::size_t entries() const noexcept { return ops.size() + memory.size(); }
  std::size_t capacity_bytes() const noexcept {
    return ops.capacity() * sizeof(Op) + memory.capacity() * sizeof(gpuprof_allocator_event_v1) +
           text.capacity() + inputs.capacity() * sizeof(std::int64_t);
  }
  std::uint32_t AddText(std::string_view s) {
    const auto offset = static_cast<std::uint32_t>(text.size());
    text.insert(text.end(), s.begin(), s.end());
    text.push_back('\0');
    return offset;
  }
};

struct OpBuffer::ThreadSlot {
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  std::unique_ptr<Chunk> chunk;  // guarded by lock
  std::atomic<bool> thread_exited{false};
};

namespace {

// The calling thread's slot in one OpBuffer (in practice there is one buffer per process).
struct ThreadSlotHolder {
  std::uint64_t buffer_id = 0;
  std::shared_ptr<OpBuffer::ThreadSlot> slot;
  ~ThreadSlotHolder() {
    if (slot != nullptr) slot->thread_exited.store(true, std::memory_order_release);
  }
};
thread_local ThreadSlotHolder t_slot;

}  // namespace

OpBuffer::OpBuffer(OpBufferSinks sinks, OpBufferOptions options)
    : sinks_(std::move(sinks)), options_(options), id_(g_next_buffer_id.fetch_add(1)) {}

OpBuffer::~OpBuffer() { Stop(); }

// A fork child takes none of the buffer's locks: a thread of the parent may have held one at the fork, and
// that thread does not exist in the child to release it.
void OpBuffer::Start() {
  if (g_fork_child.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> control(control_mu_);
  if (drain_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = false;
  }
  drain_ = std::thread([this] { DrainLoop(); });
}

void OpBuffer::Stop() {
  if (g_fork_child.load(std::memory_order_relaxed)) {
    if (drain_.joinable()) drain_.detach();  // the parent's thread: it does not exist in this process
    return;
  }
  Flush();
  std::lock_guard<std::mutex> control(control_mu_);
  if (drain_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    drain_.join();
  }
  std::lock_guard<std::mutex> lock(spare_mu_);
  spares_.clear();  // the memory goes back between profiles
}

OpBuffer::ThreadSlot* OpBuffer::Slot() noexcept {
  if (t_slot.buffer_id == id_) return t_slot.slot.get();
  try {
    auto slot = std::make_shared<ThreadSlot>();
    {
      std::lock_guard<std::mutex> lock(slots_mu_);
      slots_.push_back(slot);
    }
    t_slot.slot = std::move(slot);
    t_slot.buffer_id = id_;
    return t_slot.slot.get();
  } catch (...) {
    return nullptr;
  }
}

OpBuffer::Chunk& OpBuffer::CurrentChunk(ThreadSlot& slot) {
  if (slot.chunk != nullptr) return *slot.chunk;
  {
    std::lock_guard<std::mutex> lock(spare_mu_);
    if (!spares_.empty()) {
      slot.chunk = std::move(spares_.back());
      spares_.pop_back();
      return *slot.chunk;
    }
  }
  slot.chunk = std::make_unique<Chunk>();
  slot.chunk->ops.reserve(options_.chunk_entries);
  slot.chunk->text.reserve(options_.chunk_entries * 24);
  chunks_made_.fetch_add(1, std::memory_order_relaxed);
  return *slot.chunk;
}

void OpBuffer::KeepSpare(std::unique_ptr<Chunk> chunk) noexcept {
  if (chunk == nullptr || chunk->capacity_bytes() > options_.spare_chunk_max_bytes) return;  // freed here
  chunk->ops.clear();  // clear() keeps each vector's capacity: the pages stay mapped
  chunk->memory.clear();
  chunk->text.clear();
  chunk->inputs.clear();
  std::lock_guard<std::mutex> lock(spare_mu_);
  if (spares_.size() >= options_.spare_chunks) return;  // freed here
  try {
    spares_.push_back(std::move(chunk));
  } catch (...) {  // out of memory: the chunk is freed
  }
}

template <typename Fill>
void OpBuffer::Append(Fill&& fill) noexcept {
  if (g_fork_child.load(std::memory_order_relaxed)) return;
  ThreadSlot* slot = Slot();
  if (slot == nullptr) return;
  std::unique_ptr<Chunk> full;
  try {
    SpinGuard guard(slot->lock);
    Chunk& chunk = CurrentChunk(*slot);
    fill(chunk);
    if (chunk.entries() >= options_.chunk_entries) full = std::move(slot->chunk);
  } catch (...) {
    return;  // out of memory: this entry is lost
  }
  if (full != nullptr) HandOver(std::move(full));
}

void OpBuffer::AddOp(const OpEntry& op, std::string_view name, std::span<const std::int64_t> inputs,
                     std::span<const std::string> stack) noexcept {
  Append([&](Chunk& chunk) {
    Chunk::Op entry;
    entry.entry = op;
    entry.name_size = static_cast<std::uint32_t>(name.size());
    entry.name_offset = chunk.AddText(name);
    if (!inputs.empty()) {
      entry.inputs_offset = static_cast<std::uint32_t>(chunk.inputs.size());
      entry.inputs_size = static_cast<std::uint32_t>(inputs.size());
      chunk.inputs.insert(chunk.inputs.end(), inputs.begin(), inputs.end());
    }
    if (!stack.empty()) {
      entry.stack_offset = static_cast<std::uint32_t>(chunk.text.size());
      entry.stack_frames = static_cast<std::uint32_t>(stack.size());
      for (const std::string& frame : stack) chunk.AddText(frame);
    }
    chunk.ops.push_back(entry);
  });
}

void OpBuffer::AddMemory(const gpuprof_allocator_event_v1& event) noexcept {
  Append([&](Chunk& chunk) { chunk.memory.push_back(event); });
}

void OpBuffer::HandOver(std::unique_ptr<Chunk> chunk) noexcept {
  if (chunk == nullptr) return;
  if (chunk->entries() == 0) {
    KeepSpare(std::move(chunk));
    return;
  }
  bool due = false;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (queue_.size() >= options_.max_queued_chunks) {
      stats_.dropped_entries += chunk->entries();
      return;
    }
    try {
      queue_.push_back(std::move(chunk));
    } catch (...) {
      return;
    }
    due = QueueIsDue();
  }
  if (due) queue_cv_.notify_one();  // otherwise the drain thread sleeps on: no wake-up, no system call
}

bool OpBuffer::QueueIsDue() const {
  return !queue_.empty() && (flushing_ || queue_.size() >= std::min(options_.deliver_at_queued_chunks,
                                                                    options_.max_queued_chunks));
}

void OpBuffer::Flush() {
  if (g_fork_child.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> control(control_mu_);
  std::vector<std::shared_ptr<ThreadSlot>> slots;
  {
    std::lock_guard<std::mutex> lock(slots_mu_);
    slots = slots_;
    // Slots of threads that have ended are taken for the last time.
    std::erase_if(slots_, [](const std::shared_ptr<ThreadSlot>& s) {
      return s->thread_exited.load(std::memory_order_acquire);
    });
  }
  for (const std::shared_ptr<ThreadSlot>& slot : slots) {
    std::unique_ptr<Chunk> chunk;
    {
      SpinGuard guard(slot->lock);
      chunk = std::move(slot->chunk);
    }
    HandOver(std::move(chunk));
  }
  std::unique_lock<std::mutex> lock(queue_mu_);
  if (!drain_.joinable()) {
    // No drain thread (never started): deliver here.
    while (!queue_.empty()) {
      std::unique_ptr<Chunk> chunk = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      Deliver(*chunk);
      KeepSpare(std::move(chunk));
      lock.lock();
    }
    return;
  }
  flushing_ = true;
  queue_cv_.notify_one();
  idle_cv_.wait(lock, [this] { return queue_.empty() && !delivering_; });
  flushing_ = false;
}

void OpBuffer::DrainLoop() {
  base::LowerThisThreadsPriority();  // the profiled program's threads come first
  std::unique_lock<std::mutex> lock(queue_mu_);
  bool emptying = false;  // a delivery, once due, empties the whole queue
  while (true) {
    queue_cv_.wait(lock, [&] { return stopping_ || (emptying && !queue_.empty()) || QueueIsDue(); });
    if (queue_.empty()) {
      emptying = false;
      if (stopping_) return;
      continue;
    }
    emptying = true;
    std::unique_ptr<Chunk> chunk = std::move(queue_.front());
    queue_.pop_front();
    delivering_ = true;
    lock.unlock();
    Deliver(*chunk);
    KeepSpare(std::move(chunk));
    lock.lock();
    delivering_ = false;
    if (queue_.empty()) {
      emptying = false;
      idle_cv_.notify_all();
    }
  }
}

void OpBuffer::Deliver(const Chunk& chunk) {
  std::uint64_t ops = 0;
  std::uint64_t memory = 0;
  std::uint64_t refused = 0;
  std::string shapes;
  std::string dtypes;
  std::vector<const char*> frames;
  for (const Chunk::Op& op : chunk.ops) {
    gpuprof_torch_op_v1 record{};
    record.size = sizeof(record);
    record.tid = op.entry.tid;
    record.start_ns = op.entry.start_ns;
    record.end_ns = op.entry.end_ns < op.entry.start_ns ? op.entry.start_ns : op.entry.end_ns;
    record.name = chunk.text.data() + op.name_offset;
    record.sequence_number = op.entry.sequence_number;
    record.fwd_thread_id = op.entry.fwd_thread_id;
    record.external_id = op.entry.external_id;
    record.type = GPUPROF_TORCH_OP;
    shapes.clear();
    dtypes.clear();
    if (op.inputs_size > 0 && sinks_.format_inputs) {
      try {
        sinks_.format_inputs(
            std::span<const std::int64_t>(chunk.inputs.data() + op.inputs_offset, op.inputs_size), &shapes,
            &dtypes);
        record.input_shapes = shapes.c_str();
        record.input_dtypes = dtypes.c_str();
      } catch (...) {
      }
    }
    frames.clear();
    const char* frame = chunk.text.data() + op.stack_offset;
    for (std::uint32_t i = 0; i < op.stack_frames; ++i) {
      frames.push_back(frame);
      frame += std::strlen(frame) + 1;
    }
    record.call_stack = frames.empty() ? nullptr : frames.data();
    record.call_stack_depth = static_cast<std::uint32_t>(frames.size());
    if (sinks_.op && sinks_.op(record) == GPUPROF_OK) {
      ++ops;
    } else {
      ++refused;
    }
  }
  for (const gpuprof_allocator_event_v1& event : chunk.memory) {
    if (sinks_.memory && sinks_.memory(event) == GPUPROF_OK) {
      ++memory;
    } else {
      ++refused;
    }
  }
  std::lock_guard<std::mutex> lock(queue_mu_);
  stats_.ops += ops;
  stats_.memory_events += memory;
  stats_.sink_refusals += refused;
}

OpBufferStats OpBuffer::stats() const {
  if (g_fork_child.load(std::memory_order_relaxed)) return {};  // a fork child delivers nothing
  std::lock_guard<std::mutex> lock(queue_mu_);
  OpBufferStats stats = stats_;
  stats.chunks_made = chunks_made_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace gpuprof::torch_hooks
