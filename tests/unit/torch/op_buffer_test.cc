#include "torch/op_buffer.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fakes/thread_nice.h"

namespace gpuprof::torch_hooks {
namespace {

// What the sinks received, copied out of the C structs.
struct Received {
  struct Op {
    std::string name;
    std::uint32_t tid;
    std::int64_t start_ns;
    std::int64_t end_ns;
    std::int64_t sequence_number;
    std::string shapes;  // "<null>" when none
    std::string dtypes;
    std::vector<std::string> stack;
  };
  std::mutex mu;
  std::vector<Op> ops;
  std::vector<gpuprof_allocator_event_v1> memory;
};

// Shapes: the words as "a,b,..."; dtypes: the dtype codes as "tN" per tensor input.
void TestFormat(std::span<const std::int64_t> words, std::string* shapes, std::string* dtypes) {
  for (std::size_t i = 0; i < words.size();) {
    const std::int64_t header = words[i++];
    if (!dtypes->empty()) {
      shapes->push_back(';');
      dtypes->push_back(';');
    }
    for (std::uint32_t d = 0; d < HeaderRank(header); ++d, ++i) {
      if (d > 0) shapes->push_back(',');
      shapes->append(std::to_string(words[i]));
    }
    dtypes->append(HeaderKind(header) == InputKind::kTensor ? "t" + std::to_string(HeaderDtype(header))
                                                            : "-");
  }
}

OpBufferSinks SinksInto(Received& received) {
  OpBufferSinks sinks;
  sinks.op = [&received](const gpuprof_torch_op_v1& op) {
    Received::Op copy{op.name,
                      op.tid,
                      op.start_ns,
                      op.end_ns,
                      op.sequence_number,
                      op.input_shapes ? op.input_shapes : "<null>",
                      op.input_dtypes ? op.input_dtypes : "<null>",
                      {}};
    for (std::uint32_t i = 0; i < op.call_stack_depth; ++i) copy.stack.emplace_back(op.call_stack[i]);
    std::lock_guard<std::mutex> lock(received.mu);
    received.ops.push_back(std::move(copy));
    return GPUPROF_OK;
  };
  sinks.memory = [&received](const gpuprof_allocator_event_v1& event) {
    std::lock_guard<std::mutex> lock(received.mu);
    received.memory.push_back(event);
    return GPUPROF_OK;
  };
  sinks.format_inputs = &TestFormat;
  return sinks;
}

OpEntry Op(std::uint32_t tid, std::int64_t start, std::int64_t seq = -1) {
  OpEntry op;
  op.start_ns = start;
  op.end_ns = start + 10;
  op.sequence_number = seq;
  op.tid = tid;
  return op;
}

gpuprof_allocator_event_v1 Memory(std::uint64_t bytes) {
  gpuprof_allocator_event_v1 event{};
  event.size = sizeof(event);
  event.time_ns = 1;
  event.bytes = bytes;
  event.total_active = -1;
  return event;
}

TEST(OpBufferTest, EveryOpOfEveryThreadReachesTheSinkByFlushWithItsDetails) {
  Received received;
  OpBufferOptions options;
  options.chunk_entries = 64;         // many hand-overs
  options.max_queued_chunks = 10000;  // room for all: this test is about delivery, not drops
  OpBuffer buffer(SinksInto(received), options);
  buffer.Start();
  constexpr int kThreads = 4;
  constexpr int kOps = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&buffer, t] {
      const std::int64_t inputs[] = {EncodeInputHeader(InputKind::kTensor, 6, 2), 8, 16,
                                     EncodeInputHeader(InputKind::kScalar, 0, 0)};
      const std::string stack[] = {"a.py(3): f", "a.py(9): <module>"};
      for (int i = 0; i < kOps; ++i) {
        const std::string name = "op" + std::to_string(t) + "_" + std::to_string(i);
        if (i % 2 == 0) {
          buffer.AddOp(Op(static_cast<std::uint32_t>(100 + t), i, i), name, inputs, stack);
        } else {
          buffer.AddOp(Op(static_cast<std::uint32_t>(100 + t), i, i), name, {}, {});
        }
        buffer.AddMemory(Memory(static_cast<std::uint64_t>(i)));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  buffer.Flush();

  std::lock_guard<std::mutex> lock(received.mu);
  ASSERT_EQ(received.ops.size(), static_cast<std::size_t>(kThreads * kOps));
  EXPECT_EQ(received.memory.size(), static_cast<std::size_t>(kThreads * kOps));
  std::set<std::string> names;
  for (const Received::Op& op : received.ops) {
    names.insert(op.name);
    const int t = static_cast<int>(op.tid) - 100;
    ASSERT_EQ(op.name, "op" + std::to_string(t) + "_" + std::to_string(op.start_ns));
    EXPECT_EQ(op.end_ns, op.start_ns + 10);
    EXPECT_EQ(op.sequence_number, op.start_ns);
    if (op.start_ns % 2 == 0) {
      EXPECT_EQ(op.shapes, "8,16;");
      EXPECT_EQ(op.dtypes, "t6;-");
      EXPECT_EQ(op.stack, (std::vector<std::string>{"a.py(3): f", "a.py(9): <module>"}));
    } else {
      EXPECT_EQ(op.shapes, "<null>") << "no inputs recorded: no shapes";
      EXPECT_TRUE(op.stack.empty());
    }
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(kThreads * kOps)) << "every op exactly once";
  const OpBufferStats stats = buffer.stats();
  EXPECT_EQ(stats.ops, static_cast<std::uint64_t>(kThreads * kOps));
  EXPECT_EQ(stats.memory_events, static_cast<std::uint64_t>(kThreads * kOps));
  EXPECT_EQ(stats.dropped_entries, 0u);
}

// Polls the drain thread's deliveries until `expected` ops arrived or 10 s passed; returns the count.
std::uint64_t OpsDeliveredWithin10s(const OpBuffer& buffer, std::uint64_t expected) {
  for (int wait = 0; wait < 1000 && buffer.stats().ops < expected; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return buffer.stats().ops;
}

TEST(OpBufferTest, FullChunksWaitForTheDeliveryThresholdThenTheWholeQueueIsDelivered) {
  Received received;
  OpBufferOptions options;
  options.chunk_entries = 4;
  options.deliver_at_queued_chunks = 3;
  OpBuffer buffer(SinksInto(received), options);
  buffer.Start();
  for (int i = 0; i < 8; ++i) buffer.AddOp(Op(1, i), "x", {}, {});
  // Two full chunks are queued, one short of the threshold: the drain thread sleeps on. (A drain
  // that delivered each chunk at once would have had them in microseconds.)
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(buffer.stats().ops, 0u);
  for (int i = 8; i < 12; ++i) buffer.AddOp(Op(1, i), "x", {}, {});
  // The third chunk makes the queue due, and the delivery empties it: all three chunks, not one.
  EXPECT_EQ(OpsDeliveredWithin10s(buffer, 12), 12u);
  // One more full chunk queued (below the threshold) and two ops in this thread's chunk.
  for (int i = 12; i < 18; ++i) buffer.AddOp(Op(1, i), "x", {}, {});
  buffer.Flush();
  EXPECT_EQ(buffer.stats().ops, 18u) << "Flush delivers below the threshold";
}

TEST(OpBufferTest, WithAThresholdOfOneEachFullChunkIsDeliveredWithoutFlush) {
  Received received;
  OpBufferOptions options;
  options.chunk_entries = 8;
  options.deliver_at_queued_chunks = 1;
  OpBuffer buffer(SinksInto(received), options);
  buffer.Start();
  for (int i = 0; i < 20; ++i) buffer.AddOp(Op(1, i), "x", {}, {});
  // Two full chunks (16 ops) are the drain thread's; the last 4 wait in this thread's chunk.
  EXPECT_EQ(OpsDeliveredWithin10s(buffer, 16), 16u);
  buffer.Flush();
  EXPECT_EQ(buffer.stats().ops, 20u);
}

TEST(OpBufferTest, TheDrainThreadRunsBelowTheProfiledProgramsPriority) {
  const int ours = thread_nice::ThisThreadsNice();
  if (ours >= 19) GTEST_SKIP() << "this test runs at nice " << ours << ": nothing lower to go to";
  ASSERT_EQ(thread_nice::ThreadsBelow(ours), 0);
  Received received;
  OpBuffer buffer(SinksInto(received));
  buffer.Start();
  EXPECT_TRUE(thread_nice::WaitForThreadsBelow(ours, 1));
  buffer.AddOp(Op(1, 1), "x", {}, {});
  buffer.Stop();
  EXPECT_EQ(received.ops.size(), 1u);
  EXPECT_EQ(thread_nice::ThreadsBelow(ours), 0);  // the drain thread has ended
}

TEST(OpBufferTest, OpsOfAThreadThatEndedBeforeTheFlushAreDelivered) {
  Received received;
  OpBuffer buffer(SinksInto(received));
  buffer.Start();
  std::thread([&buffer] {
    for (int i = 0; i < 10; ++i) buffer.AddOp(Op(7, i), "short_lived", {}, {});
  }).join();
  buffer.Flush();
  EXPECT_EQ(buffer.stats().ops, 10u);
  buffer.AddOp(Op(1, 0), "after", {}, {});
  buffer.Flush();
  EXPECT_EQ(buffer.stats().ops, 11u) << "the ended thread's slot is gone; nothing is delivered twice";
}

TEST(OpBufferTest, AFullQueueDropsWholeChunksAndCountsThem) {
  Received received;
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  OpBufferSinks sinks = SinksInto(received);
  auto deliver = sinks.op;
  sinks.op = [&, deliver](const gpuprof_torch_op_v1& op) {
    std::unique_lock<std::mutex> lock(gate_mu);
    gate_cv.wait(lock, [&] { return open; });
    return deliver(op);
  };
  OpBufferOptions options;
  options.chunk_entries = 4;
  options.max_queued_chunks = 2;
  OpBuffer buffer(std::move(sinks), options);
  buffer.Start();
  constexpr int kOps = 400;
  for (int i = 0; i < kOps; ++i) buffer.AddOp(Op(1, i), "x", {}, {});
  {
    std::lock_guard<std::mutex> lock(gate_mu);
    open = true;
  }
  gate_cv.notify_all();
  buffer.Flush();
  const OpBufferStats stats = buffer.stats();
  EXPECT_GT(stats.dropped_entries, 0u) << "the stalled drain thread let the queue fill";
  EXPECT_EQ(stats.ops + stats.dropped_entries, static_cast<std::uint64_t>(kOps))
      << "every op delivered or counted";
  EXPECT_EQ(stats.dropped_entries % options.chunk_entries, 0u) << "whole chunks";
}

TEST(OpBufferTest, ARefusingSinkIsCounted) {
  Received received;
  OpBufferSinks sinks = SinksInto(received);
  sinks.memory = [](const gpuprof_allocator_event_v1&) { return GPUPROF_ERROR_NOT_STARTED; };
  OpBuffer buffer(std::move(sinks));
  buffer.Start();
  buffer.AddMemory(Memory(1));
  buffer.AddMemory(Memory(2));
  buffer.Stop();
  EXPECT_EQ(buffer.stats().sink_refusals, 2u);
  EXPECT_EQ(buffer.stats().memory_events, 0u);
}

TEST(OpBufferTest, WithoutADrainThreadFlushDeliversOnTheCallingThread) {
  Received received;
  OpBuffer buffer(SinksInto(received));
  buffer.AddOp(Op(1, 5), "never_started", {}, {});
  buffer.Flush();
  EXPECT_EQ(buffer.stats().ops, 1u);
}

TEST(OpBufferTest, ADeliveredChunkIsReusedEmptiedForTheNextOps) {
  Received received;
  OpBuffer buffer(SinksInto(received));  // no drain thread: each Flush delivers here, then keeps the chunk
  for (int round = 0; round < 10; ++round) {
    // Rounds alternate long and short names, inputs and stacks, so a reused chunk that kept
    // anything of the round before would show it.
    const bool big = round % 2 == 0;
    const std::vector<std::int64_t> inputs =
        big ? std::vector<std::int64_t>{EncodeInputHeader(InputKind::kTensor, 6, 3), 2, 3, 4}
            : std::vector<std::int64_t>{EncodeInputHeader(InputKind::kScalar, 0, 0)};
    const std::vector<std::string> stack =
        big ? std::vector<std::string>{"a.py(1): f", "a.py(2): g"} : std::vector<std::string>{};
    for (int i = 0; i < 3; ++i) {
      buffer.AddOp(Op(1, round * 10 + i), (big ? "a_long_op_name_" : "op") + std::to_string(round), inputs,
                   stack);
    }
    buffer.AddMemory(Memory(static_cast<std::uint64_t>(round)));
    buffer.Flush();
  }
  const OpBufferStats stats = buffer.stats();
  EXPECT_EQ(stats.ops, 30u);
  EXPECT_EQ(stats.memory_events, 10u);
  EXPECT_EQ(stats.chunks_made, 1u);  // one chunk, emptied and reused nine times
  ASSERT_EQ(received.ops.size(), 30u);
  for (const Received::Op& op : received.ops) {
    const std::int64_t round = op.start_ns / 10;
    const bool big = round % 2 == 0;
    EXPECT_EQ(op.name, (big ? "a_long_op_name_" : "op") + std::to_string(round));
    EXPECT_EQ(op.shapes, big ? "2,3,4" : "");
    EXPECT_EQ(op.dtypes, big ? "t6" : "-");
    EXPECT_EQ(op.stack,
              big ? std::vector<std::string>({"a.py(1): f", "a.py(2): g"}) : std::vector<std::string>{});
  }
  ASSERT_EQ(received.memory.size(), 10u);
  for (std::size_t i = 0; i < received.memory.size(); ++i) EXPECT_EQ(received.memory[i].bytes, i);
}

TEST(OpBufferTest, AChunkThatGrewPastTheSpareLimitIsFreedAndStopFreesTheSpares) {
  Received received;
  OpBufferOptions options;
  options.chunk_entries = 8;  // a fresh chunk is about 1 KB
  options.spare_chunk_max_bytes = 64 << 10;
  OpBuffer buffer(SinksInto(received), options);
  buffer.AddOp(Op(1, 1), "small", {}, {});
  buffer.Flush();  // kept
  EXPECT_EQ(buffer.stats().chunks_made, 1u);
  const std::vector<std::string> deep_stack(100, std::string(1000, 'f'));  // ~100 KB of frames
  buffer.AddOp(Op(1, 2), "deep", {}, deep_stack);
  buffer.Flush();  // grew past the limit: freed
  buffer.AddOp(Op(1, 3), "after_deep", {}, {});
  buffer.Flush();
  EXPECT_EQ(buffer.stats().chunks_made, 2u);
  buffer.Stop();  // frees the spare
  buffer.AddOp(Op(1, 4), "after_stop", {}, {});
  buffer.Flush();
  EXPECT_EQ(buffer.stats().chunks_made, 3u);
  ASSERT_EQ(received.ops.size(), 4u);
  EXPECT_EQ(received.ops[1].stack.size(), 100u);
  EXPECT_EQ(received.ops[3].name, "after_stop");
}

// Forks; the child adds an op, flushes and stops the buffer, and exits 0 when its buffer counted
// nothing delivered and `child_check` holds. Returns the child's pid (-1: fork failed).
template <typename Check>
pid_t ForkAChildThatUsesTheBuffer(OpBuffer& buffer, Check child_check) {
  const pid_t child = fork();
  if (child == 0) {
    buffer.AddOp(Op(2, 2), "child", {}, {});
    buffer.Flush();
    buffer.Stop();
    _exit(buffer.stats().ops == 0 && child_check() ? 0 : 1);
  }
  return child;
}

// Waits up to `limit` for the child; a child still running then is killed and reported as hung.
bool ChildExitedCleanly(pid_t child, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      ADD_FAILURE() << "the fork child hung";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(OpBufferTest, AForkChildRecordsNothingAndNeverWaitsForTheParentsDrainThread) {
  Received received;
  OpBuffer buffer(SinksInto(received));
  buffer.Start();
  buffer.AddOp(Op(1, 1), "parent", {}, {});
  // The drain thread holds the queue's lock while it starts and after each delivery; fork while it
  // may hold it, as a program forking a DataLoader worker does, so a child that took the lock hangs.
  const pid_t child = ForkAChildThatUsesTheBuffer(buffer, [&] {
    if (!received.mu.try_lock()) return false;
    const bool nothing_delivered = received.ops.empty();
    received.mu.unlock();
    return nothing_delivered;
  });
  ASSERT_GE(child, 0);
  ASSERT_TRUE(ChildExitedCleanly(child, std::chrono::seconds(30)))
      << "the child delivered records or crashed";
  buffer.Flush();
  std::lock_guard<std::mutex> lock(received.mu);
  ASSERT_EQ(received.ops.size(), 1u);
  EXPECT_EQ(received.ops[0].name, "parent");
}

TEST(OpBufferTest, AForkWhileAnotherThreadFlushesLeavesTheChildFreeOfTheParentsLocks) {
  Received received;
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool entered = false;
  bool open = false;
  OpBufferSinks sinks = SinksInto(received);
  auto deliver = sinks.op;
  sinks.op = [&, deliver](const gpuprof_torch_op_v1& op) {
    std::unique_lock<std::mutex> lock(gate_mu);
    entered = true;
    gate_cv.notify_all();
    gate_cv.wait(lock, [&] { return open; });
    return deliver(op);
  };
  OpBuffer buffer(std::move(sinks));
  buffer.Start();
  // This thread's Flush holds the buffer's control lock until the drain thread, held in the sink,
  // has delivered: the fork below happens with that lock held by a thread the child lacks.
  std::thread flusher([&] {
    buffer.AddOp(Op(1, 1), "parent", {}, {});
    buffer.Flush();
  });
  {
    std::unique_lock<std::mutex> lock(gate_mu);
    gate_cv.wait(lock, [&] { return entered; });
  }
  const pid_t child = ForkAChildThatUsesTheBuffer(buffer, [] { return true; });
  ASSERT_GE(child, 0);
  EXPECT_TRUE(ChildExitedCleanly(child, std::chrono::seconds(30)));
  {
    std::lock_guard<std::mutex> lock(gate_mu);
    open = true;
  }
  gate_cv.notify_all();
  flusher.join();
  EXPECT_EQ(buffer.stats().ops, 1u);
}

}  // namespace
}  // namespace gpuprof::torch_hooks
