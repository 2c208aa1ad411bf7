#include "db/derive.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "base/logging.h"

namespace gpuprof::db {

// Readable failure output for the golden vectors (found by ADL).
void PrintTo(const ConnectionRow& row, std::ostream* os) {
  *os << "{" << row.id << ", " << row.connection_id << "}";
}
void PrintTo(const StepRow& row, std::ostream* os) {
  *os << "{id " << row.id << ", " << row.start_ns << ".." << row.end_ns << "}";
}
void PrintTo(const OpMemoryRow& row, std::ostream* os) {
  auto opt = [os](const char* name, const auto& value) {
    *os << " " << name << "=";
    if (value) {
      *os << *value;
    } else {
      *os << "NULL";
    }
  };
  *os << "{name " << row.name_id << " size " << row.size << " alloc " << row.allocation_time;
  opt("release", row.release_time);
  opt("active_release", row.active_release_time);
  opt("duration", row.duration);
  opt("active_duration", row.active_duration);
  *os << " alloc_totals " << row.allocation_total_allocated << "/" << row.allocation_total_reserved;
  opt("/", row.allocation_total_active);
  opt("release_allocated", row.release_total_allocated);
  opt("release_reserved", row.release_total_reserved);
  opt("release_active", row.release_total_active);
  *os << " stream " << row.stream_ptr << " device " << row.device << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Action = trace::AllocatorEvent::Action;
using OpType = trace::TorchOp::Type;
using IndexPair = std::pair<std::uint64_t, std::uint64_t>;

constexpr std::uint64_t kBase = kFrameworkConnectionBase;

OpSpan Op(std::uint64_t api_row, std::uint32_t tid, std::int64_t start_ns, std::int64_t end_ns) {
  OpSpan op;
  op.api_row = api_row;
  op.tid = tid;
  op.pid = 100;
  op.start_ns = start_ns;
  op.end_ns = end_ns;
  op.name_id = (1ull << 28) + api_row;
  return op;
}

OpSpan Fwd(std::uint64_t api_row, std::int64_t seq, std::int64_t start_ns = 0, std::int64_t end_ns = 0) {
  OpSpan op = Op(api_row, 1, start_ns, end_ns);
  op.sequence_number = seq;
  return op;
}

OpSpan Bwd(std::uint64_t api_row, std::int64_t seq, std::int64_t start_ns = 0, std::int64_t end_ns = 0) {
  OpSpan op = Op(api_row, 2, start_ns, end_ns);
  op.sequence_number = seq;
  op.fwd_thread_id = 1;
  return op;
}

OpSpan WithCorrelation(OpSpan op, std::vector<std::uint64_t> ids) {
  op.correlation_ids = std::move(ids);
  return op;
}

OpSpan OfType(OpSpan op, OpType type) {
  op.type = type;
  return op;
}

OpSpan Step(std::uint64_t api_row, std::uint32_t tid, std::int64_t start_ns, std::int64_t end_ns,
            std::int64_t n) {
  OpSpan op = Op(api_row, tid, start_ns, end_ns);
  op.step_number = n;
  return op;
}

LaunchSpan Launch(std::uint32_t tid, std::int64_t start_ns, std::uint64_t correlation_id) {
  return LaunchSpan{start_ns, start_ns + 5, tid, correlation_id};
}

// Keeps warnings visible to ScopedLogCapture whatever GPUPROF_LOG_LEVEL says.
class WarningLevel {
 public:
  WarningLevel() : saved_(base::CurrentLogLevel()) { base::SetLogLevel(base::LogLevel::kWarning); }
  ~WarningLevel() { base::SetLogLevel(saved_); }
  WarningLevel(const WarningLevel&) = delete;
  WarningLevel& operator=(const WarningLevel&) = delete;

 private:
  base::LogLevel saved_;
};

// ---------------------------------------------------------------------------------------------
// DeriveConnections
// ---------------------------------------------------------------------------------------------

TEST(DeriveConnectionsTest, NoOpsNoLaunchesGivesNothing) {
  const Connections c = DeriveConnections({}, {});
  EXPECT_THAT(c.api_index, IsEmpty());
  EXPECT_THAT(c.rows, IsEmpty());
}

TEST(DeriveConnectionsTest, ForwardAndBackwardOfOneSequenceNumberShareOneId) {
  const std::vector<OpSpan> ops = {Fwd(1, 5), Op(2, 1, 0, 0), Bwd(3, 5)};
  const Connections c = DeriveConnections(ops, {});
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{1, 0}, IndexPair{3, 1}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, kBase}, ConnectionRow{1, kBase}));
}

TEST(DeriveConnectionsTest, PairsAreNumberedInOrderOfFirstAppearanceOfTheSequenceNumber) {
  // seq 9 is seen first (api_row 1), so it gets base + 0 although 3 < 9.
  const std::vector<OpSpan> ops = {Fwd(1, 9), Fwd(2, 3), Bwd(3, 3), Bwd(4, 9)};
  const Connections c = DeriveConnections(ops, {});
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{1, 0}, IndexPair{2, 1}, IndexPair{3, 2}, IndexPair{4, 3}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, kBase + 0}, ConnectionRow{1, kBase + 1},
                                  ConnectionRow{2, kBase + 1}, ConnectionRow{3, kBase + 0}));
}

TEST(DeriveConnectionsTest, FirstAppearanceMayBeTheBackwardOp) {
  // seq 7's first op is a backward one (api_row 1); seq 2 appears at api_row 2.
  const std::vector<OpSpan> ops = {Bwd(1, 7), Fwd(2, 2), Fwd(3, 7), Bwd(4, 2)};
  const Connections c = DeriveConnections(ops, {});
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, kBase + 0}, ConnectionRow{1, kBase + 1},
                                  ConnectionRow{2, kBase + 0}, ConnectionRow{3, kBase + 1}));
}

TEST(DeriveConnectionsTest, SequenceNumberWithOnlyOneSideFormsNoPairAndTakesNoNumber) {
  // seq 1 forward only, seq 2 backward only, -1 never pairs; seq 4 is the only pair and gets base+0.
  const std::vector<OpSpan> ops = {Fwd(1, 1), Bwd(2, 2), Fwd(3, -1), Bwd(4, -1), Fwd(5, 4), Bwd(6, 4)};
  const Connections c = DeriveConnections(ops, {});
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{5, 0}, IndexPair{6, 1}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, kBase}, ConnectionRow{1, kBase}));
}

TEST(DeriveConnectionsTest, RepeatedSequenceNumberPairsTheLastForwardWithTheLastBackward) {
  // Timestamps run against api_row order on purpose: the last op by api_row wins, not the latest.
  const std::vector<OpSpan> ops = {Fwd(1, 4, 900, 950), Fwd(2, 4, 100, 150), Bwd(3, 4, 800, 850),
                                   Bwd(4, 4, 200, 250)};
  const Connections c = DeriveConnections(ops, {});
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{2, 0}, IndexPair{4, 1}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, kBase}, ConnectionRow{1, kBase}));
}

TEST(DeriveConnectionsTest, OnlyTorchOpsTakePartInPairs) {
  const std::vector<OpSpan> ops = {OfType(Fwd(1, 1), OpType::kTrace), Bwd(2, 1), Fwd(3, 2),
                                   OfType(Bwd(4, 2), OpType::kMstx)};
  const Connections c = DeriveConnections(ops, {});
  EXPECT_THAT(c.api_index, IsEmpty());
  EXPECT_THAT(c.rows, IsEmpty());
}

TEST(DeriveConnectionsTest, ExternalCorrelationIdsLinkTheirOpInAscendingOrderWithoutDuplicates) {
  const std::vector<OpSpan> ops = {Op(1, 1, 0, 10), WithCorrelation(Op(2, 1, 20, 30), {30, 10, 20, 10})};
  const Connections c = DeriveConnections(ops, {});
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{2, 0}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, 10}, ConnectionRow{0, 20}, ConnectionRow{0, 30}));
}

TEST(DeriveConnectionsTest, LaunchGoesToTheInnermostContainingOpOnItsThread) {
  const std::vector<OpSpan> ops = {
      Op(1, 1, 0, 100),  // A (tid 1)
      Op(2, 1, 10, 50),  //   B
      Op(3, 1, 20, 30),  //     C
      Op(4, 2, 0, 100),  // D (tid 2)
      Op(5, 1, 60, 70),  //   E, A's second child, nothing launched in it
  };
  const std::vector<LaunchSpan> launches = {
      Launch(1, 25, 1),   // C
      Launch(1, 40, 2),   // B (C has ended)
      Launch(1, 55, 3),   // A
      Launch(1, 100, 4),  // A: the window is closed at both ends
      Launch(2, 25, 5),   // D: same time as launch 1, other thread
      Launch(1, 150, 6),  // after every op: no link
      Launch(3, 25, 7),   // a thread without ops: no link
      Launch(1, 20, 8),   // C: starts exactly with it
      Launch(1, 10, 9),   // B
  };
  const Connections c = DeriveConnections(ops, launches);
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{1, 0}, IndexPair{2, 1}, IndexPair{3, 2}, IndexPair{4, 3}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, 3}, ConnectionRow{0, 4},  // A
                                  ConnectionRow{1, 2}, ConnectionRow{1, 9},  // B
                                  ConnectionRow{2, 1}, ConnectionRow{2, 8},  // C
                                  ConnectionRow{3, 5}));                     // D
}

TEST(DeriveConnectionsTest, ExternalCorrelationTakesPrecedenceOverContainment) {
  const std::vector<OpSpan> ops = {
      WithCorrelation(Op(1, 1, 0, 100), {2}),    // A claims launch 2 although B contains it
      Op(2, 1, 10, 50),                          // B
      WithCorrelation(Op(3, 2, 500, 600), {4}),  // D on another thread claims launch 4
  };
  const std::vector<LaunchSpan> launches = {Launch(1, 20, 2), Launch(1, 20, 3), Launch(1, 30, 4)};
  const Connections c = DeriveConnections(ops, launches);
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{1, 0}, IndexPair{2, 1}, IndexPair{3, 2}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, 2}, ConnectionRow{1, 3}, ConnectionRow{2, 4}));
}

TEST(DeriveConnectionsTest, AnOpsExternalIdClaimsTheLaunchesMadeUnderIt) {
  OpSpan outer = Op(1, 1, 0, 100);
  outer.external_id = 11;
  OpSpan inner = Op(2, 1, 10, 50);
  inner.external_id = 12;
  OpSpan other_thread = Op(3, 2, 0, 100);  // contains launch 4 in time, but on its own thread
  other_thread.external_id = 13;
  const std::vector<LaunchSpan> launches = {Launch(1, 20, 2), Launch(1, 60, 3), Launch(2, 70, 4)};
  // CUPTI says: launch 2 was made under the outer op's id (although the inner op contains it in
  // time), launch 4 under the inner op's; launch 3 has no tag and falls back to containment.
  const std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> external = {{11, {2}}, {12, {4}}};
  const Connections c = DeriveConnections({outer, inner, other_thread}, launches, external);
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{1, 0}, IndexPair{2, 1}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, 2}, ConnectionRow{0, 3}, ConnectionRow{1, 4}));
  EXPECT_EQ(c.tagged_links, 2u);
  EXPECT_EQ(c.contained_links, 1u);
}

TEST(DeriveConnectionsTest, IdClaimedByTwoOpsStaysWithTheInnermostOne) {
  const std::vector<OpSpan> ops = {WithCorrelation(Op(1, 1, 0, 100), {7}),
                                   WithCorrelation(Op(2, 1, 10, 50), {7})};
  const WarningLevel level;
  const base::ScopedLogCapture capture;
  const Connections c = DeriveConnections(ops, {});
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{2, 0}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, 7}));
  EXPECT_EQ(capture.Count("claimed by more than one op"), 1);
}

TEST(DeriveConnectionsTest, ForwardBackwardIdComesBeforeTheOpsDeviceLinks) {
  const std::vector<OpSpan> ops = {WithCorrelation(Fwd(1, 0, 0, 100), {9}), Bwd(2, 0, 200, 300)};
  const std::vector<LaunchSpan> launches = {Launch(1, 50, 5), Launch(1, 20, 3), Launch(2, 250, 11)};
  const Connections c = DeriveConnections(ops, launches);
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{1, 0}, IndexPair{2, 1}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, kBase}, ConnectionRow{0, 3}, ConnectionRow{0, 5},
                                  ConnectionRow{0, 9}, ConnectionRow{1, kBase}, ConnectionRow{1, 11}));
}

TEST(DeriveConnectionsTest, IndexIsDenseInApiRowOrderWhateverTheInputOrder) {
  const std::vector<OpSpan> ops = {Op(9, 1, 200, 300), Op(2, 1, 0, 100), Op(5, 2, 0, 100),
                                   Op(7, 1, 400, 500)};
  const std::vector<LaunchSpan> launches = {Launch(1, 250, 1), Launch(1, 50, 2), Launch(2, 50, 3)};
  const Connections c = DeriveConnections(ops, launches);
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{2, 0}, IndexPair{5, 1}, IndexPair{9, 2}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, 2}, ConnectionRow{1, 3}, ConnectionRow{2, 1}));
}

TEST(DeriveConnectionsTest, OverlappingOpsGiveTheLaunchToTheLatestStartThenTheSmallestSpan) {
  const std::vector<OpSpan> ops = {
      Op(1, 1, 0, 50),    // A, overlaps B without nesting
      Op(2, 1, 40, 100),  // B
      Op(3, 2, 0, 100),   // C and D start together on tid 2
      Op(4, 2, 0, 50),    // D: the smaller span
  };
  const std::vector<LaunchSpan> launches = {Launch(1, 30, 1), Launch(1, 45, 2), Launch(1, 60, 3),
                                            Launch(2, 20, 4), Launch(2, 70, 5)};
  const Connections c = DeriveConnections(ops, launches);
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, 1}, ConnectionRow{1, 2}, ConnectionRow{1, 3},
                                  ConnectionRow{2, 5}, ConnectionRow{3, 4}));
}

TEST(DeriveConnectionsTest, OnlyTorchOpsOwnLaunchesByContainment) {
  // A Python-tracer frame around the op and an mstx range inside it are no launch owners.
  const std::vector<OpSpan> ops = {OfType(Op(1, 1, 0, 1000), OpType::kTrace), Op(2, 1, 100, 200),
                                   OfType(Op(3, 1, 120, 180), OpType::kMstx)};
  const std::vector<LaunchSpan> launches = {Launch(1, 50, 1), Launch(1, 150, 2)};
  const Connections c = DeriveConnections(ops, launches);
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{2, 0}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, 2}));
}

TEST(DeriveConnectionsTest, CorrelationIdsInTheFrameworkIdSpaceAreSkippedAndCounted) {
  const std::vector<OpSpan> ops = {WithCorrelation(Op(1, 1, 0, 100), {kBase, 4}), Op(2, 1, 200, 300)};
  const std::vector<LaunchSpan> launches = {Launch(1, 250, kBase + 3), Launch(1, 260, kBase - 1)};
  const WarningLevel level;
  const base::ScopedLogCapture capture;
  const Connections c = DeriveConnections(ops, launches);
  EXPECT_THAT(c.api_index, ElementsAre(IndexPair{1, 0}, IndexPair{2, 1}));
  EXPECT_THAT(c.rows, ElementsAre(ConnectionRow{0, 4}, ConnectionRow{1, kBase - 1}));
  EXPECT_EQ(capture.Count("2 device correlation id(s) >= 5<<28"), 1);
}

// The brute-force reading of the rules, checked against the sweep on random inputs with many ties
// and overlaps (several threads, nested and non-nested windows, shuffled input order).
Connections NaiveConnections(const std::vector<OpSpan>& ops, const std::vector<LaunchSpan>& launches) {
  std::vector<std::size_t> by_row(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) by_row[i] = i;
  std::sort(by_row.begin(), by_row.end(),
            [&](std::size_t a, std::size_t b) { return ops[a].api_row < ops[b].api_row; });
  // Later in nesting order = more inner.
  auto inner_key = [&](std::size_t i) {
    return std::make_tuple(ops[i].start_ns, -ops[i].end_ns, ops[i].api_row, i);
  };

  std::vector<std::vector<std::uint64_t>> ids(ops.size());
  // fwd/bwd
  std::vector<std::int64_t> seq_order;
  std::vector<std::pair<std::size_t, std::size_t>> last;  // per seq_order entry: (fwd, bwd) op
  constexpr auto kNo = std::numeric_limits<std::size_t>::max();
  for (std::size_t i : by_row) {
    const OpSpan& op = ops[i];
    if (op.type != OpType::kOp || op.sequence_number < 0) continue;
    auto it = std::find(seq_order.begin(), seq_order.end(), op.sequence_number);
    std::size_t k = static_cast<std::size_t>(it - seq_order.begin());
    if (it == seq_order.end()) {
      seq_order.push_back(op.sequence_number);
      last.emplace_back(kNo, kNo);
    }
    (op.fwd_thread_id == 0 ? last[k].first : last[k].second) = i;
  }
  std::uint64_t n = 0;
  for (const auto& [f, b] : last) {
    if (f == kNo || b == kNo) continue;
    ids[f].push_back(kBase + n);
    ids[b].push_back(kBase + n);
    ++n;
  }
  // device links
  std::vector<std::vector<std::uint64_t>> device(ops.size());
  std::vector<std::uint64_t> claimed;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (std::uint64_t id : ops[i].correlation_ids) {
      if (std::find(claimed.begin(), claimed.end(), id) != claimed.end()) continue;
      claimed.push_back(id);
      std::size_t best = kNo;
      for (std::size_t j = 0; j < ops.size(); ++j) {
        const auto& cids = ops[j].correlation_ids;
        if (std::find(cids.begin(), cids.end(), id) == cids.end()) continue;
        if (best == kNo || inner_key(j) > inner_key(best)) best = j;
      }
      device[best].push_back(id);
    }
  }
  for (const LaunchSpan& launch : launches) {
    if (std::find(claimed.begin(), claimed.end(), launch.correlation_id) != claimed.end()) continue;
    std::size_t best = kNo;
    for (std::size_t j = 0; j < ops.size(); ++j) {
      const OpSpan& op = ops[j];
      if (op.type != OpType::kOp || op.tid != launch.tid || op.start_ns > launch.start_ns ||
          op.end_ns < launch.start_ns) {
        continue;
      }
      if (best == kNo || inner_key(j) > inner_key(best)) best = j;
    }
    if (best != kNo) device[best].push_back(launch.correlation_id);
  }
  Connections out;
  for (std::size_t i : by_row) {
    std::sort(device[i].begin(), device[i].end());
    device[i].erase(std::unique(device[i].begin(), device[i].end()), device[i].end());
    ids[i].insert(ids[i].end(), device[i].begin(), device[i].end());
    if (ids[i].empty()) continue;
    const std::uint64_t index = out.api_index.size();
    out.api_index.emplace_back(ops[i].api_row, index);
    for (std::uint64_t id : ids[i]) out.rows.push_back({index, id});
  }
  return out;
}

TEST(DeriveConnectionsTest, MatchesBruteForceOnRandomInputs) {
  std::mt19937_64 rng(20240611);
  auto uniform = [&rng](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 200; ++round) {
    std::vector<OpSpan> ops;
    const auto op_count = static_cast<std::uint64_t>(uniform(0, 40));
    for (std::uint64_t row = 1; row <= op_count; ++row) {
      const std::int64_t start = uniform(0, 60);
      OpSpan op = Op(row, static_cast<std::uint32_t>(uniform(1, 3)), start,
                     start + uniform(-2, 30));  // a few malformed (end < start) windows too
      if (uniform(0, 9) == 0) op.type = OpType::kTrace;
      if (uniform(0, 2) == 0) {
        op.sequence_number = uniform(0, 5);
        op.fwd_thread_id = static_cast<std::uint64_t>(uniform(0, 1));
      }
      if (uniform(0, 5) == 0) op.correlation_ids = {static_cast<std::uint64_t>(uniform(1, 50))};
      ops.push_back(op);
    }
    std::shuffle(ops.begin(), ops.end(), rng);
    std::vector<LaunchSpan> launches;
    const auto launch_count = static_cast<std::uint64_t>(uniform(0, 40));
    for (std::uint64_t id = 1; id <= launch_count; ++id) {
      launches.push_back(Launch(static_cast<std::uint32_t>(uniform(1, 4)), uniform(-5, 95), id));
    }
    const Connections expected = NaiveConnections(ops, launches);
    const Connections actual = DeriveConnections(ops, launches);
    ASSERT_EQ(actual.api_index, expected.api_index) << "round " << round;
    ASSERT_EQ(actual.rows, expected.rows) << "round " << round;
  }
}

TEST(DeriveConnectionsTest, ScalesToOneMillionOpsAndLaunchesOnEightThreads) {
  // Per thread, blocks of five ops (a root, two children, a grandchild in each), five launches
  // inside each block; every tenth root claims one extra launch by external correlation. A
  // quadratic step would take hours here; the elapsed time is printed, not asserted (tests never
  // assert on wall time: docs/architecture.md, "Conventions, in short").
  constexpr std::uint32_t kThreads = 8;
  constexpr std::size_t kOps = 1'000'000;
  constexpr std::size_t kBlocksPerThread = kOps / 5 / kThreads;
  std::vector<OpSpan> ops;
  std::vector<LaunchSpan> launches;
  ops.reserve(kOps);
  launches.reserve(kOps);
  std::uint64_t row = 1;
  std::uint64_t correlation = 1;
  std::uint64_t claimed = 0;
  for (std::size_t b = 0; b < kBlocksPerThread; ++b) {
    for (std::uint32_t t = 0; t < kThreads; ++t) {
      const std::int64_t s = static_cast<std::int64_t>(b) * 1100;
      const std::uint32_t tid = 1000 + t;
      OpSpan root = Op(row++, tid, s, s + 1000);
      // Roots of blocks 2k and 2k+1 are the forward and backward op of one sequence number.
      root.sequence_number = static_cast<std::int64_t>((b / 2) * kThreads + t);
      root.fwd_thread_id = b % 2;
      if (b % 10 == 0) {
        root.correlation_ids = {correlation + 3};
        ++claimed;
      }
      ops.push_back(root);
      ops.push_back(Op(row++, tid, s + 100, s + 400));
      ops.push_back(Op(row++, tid, s + 150, s + 300));
      ops.push_back(Op(row++, tid, s + 500, s + 900));
      ops.push_back(Op(row++, tid, s + 600, s + 800));
      for (std::int64_t k = 0; k < 5; ++k) launches.push_back(Launch(tid, s + 50 + 200 * k, correlation++));
    }
  }
  ASSERT_EQ(ops.size(), kOps);
  const auto start = std::chrono::steady_clock::now();
  const Connections c = DeriveConnections(ops, launches);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "DeriveConnections: " << ops.size() << " ops, " << launches.size() << " launches in "
            << seconds << " s\n";
  std::size_t device_rows = 0;
  for (const ConnectionRow& r : c.rows) device_rows += r.connection_id < kBase ? 1 : 0;
  EXPECT_EQ(device_rows, launches.size());  // every launch linked exactly once (claims included)
  EXPECT_EQ(launches.size(), kOps);
  EXPECT_EQ(c.rows.size() - device_rows, (kBlocksPerThread / 2) * 2 * kThreads) << "fwd/bwd rows";
  EXPECT_GT(claimed, 0u);
}

// ---------------------------------------------------------------------------------------------
// DeriveSteps
// ---------------------------------------------------------------------------------------------

TEST(DeriveStepsTest, NoStepOpsGiveNoRows) {
  EXPECT_THAT(DeriveSteps({Op(1, 1, 0, 10), Op(2, 1, 2, 5)}), IsEmpty());
  EXPECT_THAT(DeriveSteps({}), IsEmpty());
}

TEST(DeriveStepsTest, RootLevelStepsAreSortedByStartWithTheirNumberAsId) {
  const std::vector<OpSpan> ops = {
      Op(1, 1, 110, 150),                             // inside step 2
      Step(2, 1, 100, 199, 2), Op(3, 1, 210, 290),    // inside step 3
      Step(4, 1, 200, 300, 3), Step(5, 1, 0, 99, 1),  // recorded last, starts first
  };
  EXPECT_THAT(DeriveSteps(ops), ElementsAre(StepRow{1, 0, 99}, StepRow{2, 100, 199}, StepRow{3, 200, 300}));
}

TEST(DeriveStepsTest, StepNestedInsideAnotherOpOfItsThreadIsIgnored) {
  const std::vector<OpSpan> ops = {
      Op(1, 1, 0, 1000),         Step(2, 1, 100, 200, 7),    // inside op 1: not a step
      Step(3, 1, 1100, 1500, 8), Step(4, 1, 1200, 1300, 9),  // a step inside a step: not a step either
      Op(5, 2, 0, 5000),  // tid 2 encloses everything on tid 1 in time, but another thread
  };
  EXPECT_THAT(DeriveSteps(ops), ElementsAre(StepRow{8, 1100, 1500}));
}

TEST(DeriveStepsTest, OpThatOverlapsWithoutEnclosingDoesNotNest) {
  const std::vector<OpSpan> ops = {Op(1, 1, 0, 150), Step(2, 1, 100, 200, 4), Op(3, 1, 150, 250)};
  EXPECT_THAT(DeriveSteps(ops), ElementsAre(StepRow{4, 100, 200}));
}

TEST(DeriveStepsTest, EnclosingOpWithTheSameStartOrEndStillNests) {
  const std::vector<OpSpan> ops = {Op(1, 1, 100, 300), Step(2, 1, 100, 200, 1), Step(3, 1, 200, 300, 2),
                                   Step(4, 1, 400, 500, 3)};
  EXPECT_THAT(DeriveSteps(ops), ElementsAre(StepRow{3, 400, 500}));
}

TEST(DeriveStepsTest, PythonTraceFrameAroundAStepDoesNotMakeItNested) {
  const std::vector<OpSpan> ops = {OfType(Op(1, 1, 0, 1000), OpType::kTrace), Step(2, 1, 10, 500, 0),
                                   OfType(Step(3, 1, 600, 700, 1), OpType::kTrace)};  // not a torch op
  EXPECT_THAT(DeriveSteps(ops), ElementsAre(StepRow{0, 10, 500}));
}

TEST(DeriveStepsTest, StepsOnSeveralThreadsAreMergedByStart) {
  const std::vector<OpSpan> ops = {Step(1, 2, 50, 60, 11), Step(2, 1, 10, 20, 10), Step(3, 1, 70, 80, 12)};
  EXPECT_THAT(DeriveSteps(ops), ElementsAre(StepRow{10, 10, 20}, StepRow{11, 50, 60}, StepRow{12, 70, 80}));
}

// ---------------------------------------------------------------------------------------------
// DeriveOpMemory
// ---------------------------------------------------------------------------------------------

trace::AllocatorEvent Event(Action action, std::int64_t time_ns, std::uint64_t ptr, std::uint64_t bytes,
                            std::uint64_t allocated, std::uint64_t reserved,
                            std::optional<std::uint64_t> active = std::nullopt, std::int32_t device = 0,
                            std::uint32_t tid = 1) {
  trace::AllocatorEvent e;
  e.action = action;
  e.time_ns = time_ns;
  e.ptr = ptr;
  e.bytes = bytes;
  e.total_allocated = allocated;
  e.total_reserved = reserved;
  e.total_active = active;
  e.device = device;
  e.tid = tid;
  e.pid = 100;
  e.stream_ptr = 0xabc0 + static_cast<std::uint64_t>(device);
  return e;
}

// The row for an allocation with nothing released; callers add the release fields.
OpMemoryRow AllocRow(std::uint64_t name_id, std::uint64_t size, std::int64_t time, std::uint64_t allocated,
                     std::uint64_t reserved, std::optional<std::uint64_t> active = std::nullopt,
                     std::int32_t device = 0) {
  OpMemoryRow row;
  row.name_id = name_id;
  row.size = size;
  row.allocation_time = time;
  row.allocation_total_allocated = allocated;
  row.allocation_total_reserved = reserved;
  row.allocation_total_active = active;
  row.stream_ptr = 0xabc0 + static_cast<std::uint64_t>(device);
  row.device = device;
  return row;
}

constexpr std::uint64_t kOpName = (1ull << 28) + 1;  // name_id of Op(1, ...)

TEST(DeriveOpMemoryTest, MallocAloneLeavesTheReleaseFieldsEmpty) {
  const std::vector<OpSpan> ops = {Op(1, 1, 0, 1000)};
  const auto rows = DeriveOpMemory({Event(Action::kMalloc, 100, 0x1000, 512, 512, 2048, 512)}, ops);
  EXPECT_THAT(rows, ElementsAre(AllocRow(kOpName, 512, 100, 512, 2048, 512)));
}

TEST(DeriveOpMemoryTest, FreeGivesReleaseTimeDurationAndReleaseTotals) {
  const std::vector<OpSpan> ops = {Op(1, 1, 0, 1000)};
  const auto rows = DeriveOpMemory({Event(Action::kMalloc, 100, 0x1000, 512, 512, 2048, 512),
                                    Event(Action::kFree, 350, 0x1000, 512, 0, 2048, 512)},
                                   ops);
  OpMemoryRow expected = AllocRow(kOpName, 512, 100, 512, 2048, 512);
  expected.release_time = 350;
  expected.duration = 250;
  expected.release_total_allocated = 0;
  expected.release_total_reserved = 2048;
  expected.release_total_active = 512;
  EXPECT_THAT(rows, ElementsAre(expected));
}

TEST(DeriveOpMemoryTest, BlockFreeAloneGivesActiveFieldsAndTheReleaseTotals) {
  const std::vector<OpSpan> ops = {Op(1, 1, 0, 1000)};
  const auto rows = DeriveOpMemory({Event(Action::kMalloc, 100, 0x1000, 512, 512, 2048, 512),
                                    Event(Action::kBlockFree, 400, 0x1000, 512, 0, 1024, 0)},
                                   ops);
  OpMemoryRow expected = AllocRow(kOpName, 512, 100, 512, 2048, 512);
  expected.active_release_time = 400;
  expected.active_duration = 300;
  expected.release_total_allocated = 0;
  expected.release_total_reserved = 1024;
  expected.release_total_active = 0;
  EXPECT_THAT(rows, ElementsAre(expected));
}

TEST(DeriveOpMemoryTest, FreeAndBlockFreeFillBothAndTheTotalsComeFromTheFree) {
  const std::vector<OpSpan> ops = {Op(1, 1, 0, 1000)};
  OpMemoryRow expected = AllocRow(kOpName, 512, 100, 512, 2048);
  expected.release_time = 300;
  expected.duration = 200;
  expected.active_release_time = 500;
  expected.active_duration = 400;
  expected.release_total_allocated = 0;
  expected.release_total_reserved = 2048;
  // FREE then BLOCK_FREE (record_stream delays the block's return) ...
  EXPECT_THAT(DeriveOpMemory({Event(Action::kMalloc, 100, 0x1000, 512, 512, 2048),
                              Event(Action::kFree, 300, 0x1000, 512, 0, 2048),
                              Event(Action::kBlockFree, 500, 0x1000, 512, 0, 1024)},
                             ops),
              ElementsAre(expected));
  // ... and in the other order.
  expected.release_time = 500;
  expected.duration = 400;
  expected.active_release_time = 300;
  expected.active_duration = 200;
  expected.release_total_reserved = 1024;
  EXPECT_THAT(DeriveOpMemory({Event(Action::kMalloc, 100, 0x1000, 512, 512, 2048),
                              Event(Action::kBlockFree, 300, 0x1000, 512, 0, 2048),
                              Event(Action::kFree, 500, 0x1000, 512, 0, 1024)},
                             ops),
              ElementsAre(expected));
}

TEST(DeriveOpMemoryTest, ReusedPointerMakesOneRowPerMalloc) {
  const std::vector<OpSpan> ops = {Op(1, 1, 0, 1000)};
  const auto rows = DeriveOpMemory(
      {Event(Action::kMalloc, 100, 0x1000, 512, 512, 2048), Event(Action::kFree, 150, 0x1000, 512, 0, 2048),
       Event(Action::kMalloc, 200, 0x1000, 256, 256, 2048), Event(Action::kFree, 260, 0x1000, 256, 0, 2048),
       Event(Action::kBlockFree, 270, 0x1000, 256, 0, 2048)},
      ops);
  OpMemoryRow first = AllocRow(kOpName, 512, 100, 512, 2048);
  first.release_time = 150;
  first.duration = 50;
  first.release_total_allocated = 0;
  first.release_total_reserved = 2048;
  OpMemoryRow second = AllocRow(kOpName, 256, 200, 256, 2048);
  second.release_time = 260;
  second.duration = 60;
  second.active_release_time = 270;
  second.active_duration = 70;
  second.release_total_allocated = 0;
  second.release_total_reserved = 2048;
  EXPECT_THAT(rows, ElementsAre(first, second));
}

TEST(DeriveOpMemoryTest, OnlyTheFirstFreeAndBlockFreeBeforeTheNextMallocCount) {
  // A repeated FREE does not hide the BLOCK_FREE after it; events before the first MALLOC of the
  // pointer (allocated before collection) make no row.
  const auto rows = DeriveOpMemory(
      {Event(Action::kFree, 10, 0x1000, 64, 0, 0), Event(Action::kBlockFree, 20, 0x1000, 64, 0, 0),
       Event(Action::kMalloc, 100, 0x1000, 512, 512, 2048), Event(Action::kFree, 300, 0x1000, 512, 0, 2048),
       Event(Action::kFree, 310, 0x1000, 512, 0, 2000), Event(Action::kBlockFree, 400, 0x1000, 512, 0, 1024),
       Event(Action::kBlockFree, 410, 0x1000, 512, 0, 1000)},
      {});
  OpMemoryRow expected = AllocRow(kInvalidId, 512, 100, 512, 2048);
  expected.release_time = 300;
  expected.duration = 200;
  expected.active_release_time = 400;
  expected.active_duration = 300;
  expected.release_total_allocated = 0;
  expected.release_total_reserved = 2048;
  EXPECT_THAT(rows, ElementsAre(expected));
}

TEST(DeriveOpMemoryTest, AllocationIsNamedAfterTheInnermostOpOnItsThreadOrInvalid) {
  const std::vector<OpSpan> ops = {
      Op(1, 1, 0, 1000),                           // outer
      Op(2, 1, 100, 200),                          // inner
      Op(3, 2, 0, 5000),                           // another thread
      OfType(Op(4, 1, 110, 120), OpType::kTrace),  // a Python frame names nothing
  };
  const auto rows =
      DeriveOpMemory({Event(Action::kMalloc, 50, 0x1, 8, 8, 64),     // outer
                      Event(Action::kMalloc, 115, 0x2, 8, 16, 64),   // inner
                      Event(Action::kMalloc, 200, 0x3, 8, 24, 64),   // inner (closed window)
                      Event(Action::kMalloc, 2000, 0x4, 8, 32, 64),  // outside: tid 2's op is not ours
                      Event(Action::kMalloc, 3000, 0x5, 8, 40, 64, std::nullopt, 0, 2)},  // tid 2
                     ops);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].name_id, (1ull << 28) + 1);
  EXPECT_EQ(rows[1].name_id, (1ull << 28) + 2);
  EXPECT_EQ(rows[2].name_id, (1ull << 28) + 2);
  EXPECT_EQ(rows[3].name_id, kInvalidId);
  EXPECT_EQ(rows[4].name_id, (1ull << 28) + 3);
}

TEST(DeriveOpMemoryTest, SamePointerOnInterleavedDevicesIsTwoBlocks) {
  const auto rows = DeriveOpMemory({Event(Action::kMalloc, 100, 0x1000, 512, 512, 2048, 512, 0),
                                    Event(Action::kMalloc, 110, 0x1000, 128, 128, 4096, 128, 1),
                                    Event(Action::kFree, 200, 0x1000, 512, 0, 2048, 0, 0),
                                    Event(Action::kBlockFree, 210, 0x1000, 128, 0, 4096, 0, 1),
                                    Event(Action::kBlockFree, 220, 0x1000, 512, 0, 2048, 0, 0)},
                                   {});
  OpMemoryRow d0 = AllocRow(kInvalidId, 512, 100, 512, 2048, 512, 0);
  d0.release_time = 200;
  d0.duration = 100;
  d0.active_release_time = 220;
  d0.active_duration = 120;
  d0.release_total_allocated = 0;
  d0.release_total_reserved = 2048;
  d0.release_total_active = 0;
  OpMemoryRow d1 = AllocRow(kInvalidId, 128, 110, 128, 4096, 128, 1);
  d1.active_release_time = 210;
  d1.active_duration = 100;
  d1.release_total_allocated = 0;
  d1.release_total_reserved = 4096;
  d1.release_total_active = 0;
  EXPECT_THAT(rows, ElementsAre(d0, d1));
}

TEST(DeriveOpMemoryTest, RowsAreOrderedByAllocationTimeThenPointerWhateverTheInputOrder) {
  const auto rows = DeriveOpMemory(
      {Event(Action::kFree, 900, 0x3, 8, 0, 64), Event(Action::kMalloc, 500, 0x3, 8, 8, 64),
       Event(Action::kMalloc, 100, 0x9, 16, 24, 64), Event(Action::kMalloc, 100, 0x2, 32, 56, 64)},
      {});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].size, 32u);  // t=100, ptr 0x2
  EXPECT_EQ(rows[1].size, 16u);  // t=100, ptr 0x9
  EXPECT_EQ(rows[2].size, 8u);
  EXPECT_EQ(rows[2].release_time, 900);
}

TEST(DeriveOpMemoryTest, ScalesToOneMillionEvents) {
  constexpr std::size_t kBlocks = 333'334;
  std::vector<OpSpan> ops;
  std::vector<trace::AllocatorEvent> events;
  events.reserve(kBlocks * 3);
  for (std::size_t i = 0; i < kBlocks; ++i) {
    const std::int64_t s = static_cast<std::int64_t>(i) * 100;
    const std::uint32_t tid = 1 + static_cast<std::uint32_t>(i % 8);
    ops.push_back(Op(i + 1, tid, s, s + 90));
    const std::uint64_t ptr = 0x1000 + (i % 1024) * 0x100;  // heavy reuse of the same pointers
    events.push_back(Event(Action::kMalloc, s + 10, ptr, 64, 64, 4096, std::nullopt, 0, tid));
    events.push_back(Event(Action::kFree, s + 20, ptr, 64, 0, 4096, std::nullopt, 0, tid));
    events.push_back(Event(Action::kBlockFree, s + 30, ptr, 64, 0, 4096, std::nullopt, 0, tid));
  }
  const auto start = std::chrono::steady_clock::now();
  const auto rows = DeriveOpMemory(events, ops);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "DeriveOpMemory: " << events.size() << " events, " << ops.size() << " ops in " << seconds
            << " s\n";
  ASSERT_EQ(rows.size(), kBlocks);
  EXPECT_EQ(rows.back().name_id, (1ull << 28) + kBlocks);
  EXPECT_EQ(rows.back().active_duration, 20);
}

}  // namespace
}  // namespace gpuprof::db
