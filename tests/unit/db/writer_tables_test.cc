// Golden tests per table: the synthetic run of writer_test_util.h written through ProfileWriter,
// each table queried with ORDER BY and compared to rows written out here. Interned ids are
// compared through STRING_IDS (their values), never as raw numbers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/derive.h"
#include "db/profile_writer.h"
#include "writer_test_util.h"

namespace gpuprof::db {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Query;
using testing::QueryOne;
using testing::TempDir;
using ::testing::UnorderedElementsAre;

// (100 << 32) | tid
constexpr const char* kTid101 = "429496729701";
constexpr const char* kTid102 = "429496729702";

class ProfileWriterTablesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    suite_dir = new TempDir();
    suite_db = new std::string(
        testing::WriteProfile(testing::TestOptions(suite_dir->path()), testing::SyntheticRun()));
  }
  static void TearDownTestSuite() {
    delete suite_db;
    delete suite_dir;
  }
  static std::vector<std::string> Q(const std::string& sql) { return Query(*suite_db, sql); }
  static std::string S(const std::string& a, const std::string& b) { return a + "|" + b; }

  static TempDir* suite_dir;
  static std::string* suite_db;
};
TempDir* ProfileWriterTablesTest::suite_dir = nullptr;
std::string* ProfileWriterTablesTest::suite_db = nullptr;

TEST_F(ProfileWriterTablesTest, PytorchApiRowsInSubmitOrderWithNullsForUnrecorded) {
  EXPECT_THAT(
      Q("SELECT p.startNs, p.endNs, p.globalTid, n.value, p.sequenceNumber, p.fwdThreadId, d.value, "
        "sh.value, "
        "p.callchainId IS NOT NULL, p.type FROM PYTORCH_API p JOIN STRING_IDS n ON n.id = p.name "
        "LEFT JOIN STRING_IDS d ON d.id = p.inputDtypes LEFT JOIN STRING_IDS sh ON sh.id = p.inputShapes "
        "ORDER BY p.rowid"),
      ElementsAre(
          std::string("1000|9000|") + kTid101 + "|ProfilerStep#3|-1|0|NULL|NULL|0|50001",
          std::string("1050|2100|") + kTid101 + "|nn.Module: Linear_0|NULL|NULL|NULL|NULL|0|50003",
          std::string("1100|2000|") + kTid101 + "|aten::linear|7|0|float;\r\nfloat|8,16;\r\n16,32|1|50001",
          std::string("1200|1900|") + kTid101 + "|aten::mm|-1|0|NULL|NULL|1|50001",
          std::string("5000|6000|") + kTid102 + "|LinearBackward0|7|101|NULL|NULL|0|50001",
          // the checkpoint mark's mstx op, as torch_npu records an mstx call
          std::string("1500|1500|") + kTid101 + "|checkpoint|NULL|NULL|NULL|NULL|0|50004"));
  // Not-recorded dtypes/shapes/stacks are NULL, not the invalid id.
  EXPECT_EQ(QueryOne(*suite_db,
                     "SELECT COUNT(*) FROM PYTORCH_API WHERE inputDtypes IS NULL AND inputShapes IS NULL"),
            "5");
}

TEST_F(ProfileWriterTablesTest, PytorchApiConnectionIdIsNullWithoutLink) {
  EXPECT_THAT(Q("SELECT n.value FROM PYTORCH_API p JOIN STRING_IDS n ON n.id = p.name "
                "WHERE p.connectionId IS NULL ORDER BY p.rowid"),
              ElementsAre("ProfilerStep#3", "nn.Module: Linear_0"));
}

TEST_F(ProfileWriterTablesTest, CallchainsOneRowPerFrameInnermostFirstAndShared) {
  EXPECT_THAT(Q("SELECT n.value, c.stackDepth, s.value FROM PYTORCH_API p "
                "JOIN PYTORCH_CALLCHAINS c ON c.id = p.callchainId JOIN STRING_IDS s ON s.id = c.stack "
                "JOIN STRING_IDS n ON n.id = p.name ORDER BY p.rowid, c.stackDepth"),
              ElementsAre("aten::linear|0|model.py(12): forward", "aten::linear|1|train.py(40): step",
                          "aten::mm|0|model.py(12): forward", "aten::mm|1|train.py(40): step"));
  // Identical stacks share one callchain id: two rows in PYTORCH_CALLCHAINS, not four.
  EXPECT_EQ(QueryOne(*suite_db, "SELECT COUNT(*) FROM PYTORCH_CALLCHAINS"), "2");
  EXPECT_EQ(QueryOne(*suite_db, "SELECT COUNT(DISTINCT callchainId) FROM PYTORCH_API"), "1");
}

// The memcpy (corr 12) is inside aten::mm in time, but CUPTI tagged it with aten::linear's
// external id (SyntheticRun): the tag wins (DB_SPEC §7 prefers external correlation).
TEST_F(ProfileWriterTablesTest, ConnectionIdsLinkOpsToLaunchesAndPairForwardWithBackward) {
  EXPECT_THAT(
      Q("SELECT n.value, c.connectionId FROM CONNECTION_IDS c JOIN PYTORCH_API p ON p.connectionId = c.id "
        "JOIN STRING_IDS n ON n.id = p.name ORDER BY c.rowid"),
      // the checkpoint mark's mstx op (written after the torch ops) has the mark's own id (4 << 32)
      ElementsAre("aten::linear|1342177280", "aten::linear|12", "aten::mm|11", "LinearBackward0|1342177280",
                  "LinearBackward0|13", "checkpoint|17179869184"));
  // Indexes are handed out 0, 1, 2, ... in PYTORCH_API row order.
  EXPECT_THAT(Q("SELECT DISTINCT id FROM CONNECTION_IDS ORDER BY id"), ElementsAre("0", "1", "2", "3"));
}

TEST_F(ProfileWriterTablesTest, CannApiRuntimeRowsAndNodeLaunchRows) {
  EXPECT_THAT(Q("SELECT c.startNs, c.endNs, c.type, c.globalTid, c.connectionId, s.value FROM CANN_API c "
                "JOIN STRING_IDS s ON s.id = c.name ORDER BY c.startNs, c.type"),
              ElementsAre(std::string("1300|1350|5000|") + kTid101 + "|4294967307|cudaLaunchKernel",
                          std::string("1300|1350|10000|") + kTid101 + "|11|launch",
                          std::string("1400|1450|5000|") + kTid101 + "|4294967308|cudaMemcpyAsync",
                          std::string("1400|1450|10000|") + kTid101 + "|12|launch",
                          std::string("1500|1600|5000|") + kTid101 + "|4294967310|cudaStreamSynchronize",
                          std::string("5100|5150|5000|") + kTid102 + "|4294967309|cudaLaunchKernel",
                          std::string("5100|5150|10000|") + kTid102 + "|13|launch"));
}

TEST_F(ProfileWriterTablesTest, TaskRowsDenseGlobalTaskIds) {
  EXPECT_THAT(
      Q("SELECT t.startNs, t.endNs, t.deviceId, t.connectionId, t.globalTaskId, t.globalPid, s.value, "
        "t.contextId, t.streamId, t.taskId, t.modelId FROM TASK t JOIN STRING_IDS s ON s.id = t.taskType "
        "ORDER BY t.globalTaskId"),
      ElementsAre("2000|2500|0|11|0|100|KERNEL|1|7|0|4294967295",
                  "2600|2700|0|12|1|100|MEMCPY_ASYNC|1|7|1|4294967295",
                  "6000|6100|0|13|2|100|KERNEL|1|8|2|4294967295",
                  "7000|7010|0|15|3|100|MEMSET|1|7|3|4294967295"));
}

TEST_F(ProfileWriterTablesTest, ComputeTaskInfoForKernels) {
  // The op columns hold STRING_IDS values, never NULL: the launching op's shapes and dtypes
  // (aten::mm and LinearBackward0 recorded none: ''), '' where CUDA has nothing, opState 'static'
  // (writer_task_info.cc; ProfileWriterKernelOpColumnsTest has an op with shapes).
  auto v = [](const std::string& column) {
    return "(SELECT quote(value) FROM STRING_IDS WHERE id = c." + column + ")";
  };
  EXPECT_THAT(
      Q("SELECT n.value, c.globalTaskId, c.blockNum, c.mixBlockNum, tt.value, o.value, " + v("inputFormats") +
        ", " + v("inputDataTypes") + ", " + v("inputShapes") + ", " + v("outputFormats") + ", " +
        v("outputDataTypes") + ", " + v("outputShapes") + ", " + v("attrInfo") + ", " + v("opState") + ", " +
        v("hf32Eligible") +
        ", g.value, b.value FROM COMPUTE_TASK_INFO c JOIN STRING_IDS n ON n.id = c.name "
        "JOIN STRING_IDS tt ON tt.id = c.taskType JOIN STRING_IDS o ON o.id = c.opType "
        "JOIN STRING_IDS g ON g.id = c.gridDim JOIN STRING_IDS b ON b.id = c.blockDim ORDER BY "
        "c.globalTaskId"),
      ElementsAre("void gemm_kernel<float>(float*, "
                  "int)|0|8|0|KERNEL|gemm_kernel|''|''|''|''|''|''|''|'static'|''|4,2,1|"
                  "128,1,1",
                  "bwd_kernel|2|1|0|KERNEL|bwd_kernel|''|''|''|''|''|''|''|'static'|''|1,1,1|32,1,1"));
}

TEST_F(ProfileWriterTablesTest, MemcpyInfoForCopiesOnly) {
  EXPECT_THAT(Q("SELECT globalTaskId, size, memcpyOperation FROM MEMCPY_INFO ORDER BY globalTaskId"),
              ElementsAre("1|4096|1"));
  // The memory of each side, for the pageable-copies finding.
  EXPECT_THAT(Q("SELECT globalTaskId, srcKind, dstKind FROM GPUPROF_COPY_MEMORY"), ElementsAre("1|1|3"));
}

TEST_F(ProfileWriterTablesTest, MemoryRecordSortedByTimeWithPtaComponent) {
  EXPECT_THAT(Q("SELECT s.value, m.timestamp, m.totalAllocated, m.totalReserved, m.totalActive, m.streamPtr, "
                "m.deviceId FROM MEMORY_RECORD m JOIN STRING_IDS s ON s.id = m.component ORDER BY m.rowid"),
              ElementsAre("PTA|1250|512|2048|512|28672|0", "PTA|1800|0|2048|512|28672|0",
                          "PTA|1850|0|2048|0|28672|0", "PTA|5050|512|2048|NULL|28672|0"));
}

TEST_F(ProfileWriterTablesTest, OpMemoryAttributesAllocationsToInnermostOp) {
  EXPECT_THAT(
      Q("SELECT n.value, o.size, o.allocationTime, o.releaseTime, o.activeReleaseTime, o.duration, "
        "o.activeDuration, o.allocationTotalAllocated, o.allocationTotalReserved, o.allocationTotalActive, "
        "o.releaseTotalAllocated, o.releaseTotalReserved, o.releaseTotalActive, o.streamPtr, o.deviceId "
        "FROM OP_MEMORY o JOIN STRING_IDS n ON n.id = o.name ORDER BY o.allocationTime"),
      ElementsAre("aten::mm|512|1250|1800|1850|550|600|512|2048|512|0|2048|512|28672|0",
                  "LinearBackward0|512|5050|NULL|NULL|NULL|NULL|512|2048|NULL|NULL|NULL|NULL|28672|0"));
}

TEST_F(ProfileWriterTablesTest, StepTimeFromRootProfilerStep) {
  EXPECT_THAT(Q("SELECT id, startNs, endNs, typeof(id) FROM STEP_TIME ORDER BY startNs"),
              ElementsAre("3|1000|9000|integer"));
}

TEST_F(ProfileWriterTablesTest, GcRecordUsesPidAsTid) {
  EXPECT_THAT(Q("SELECT startNs, endNs, globalTid FROM GC_RECORD ORDER BY startNs"),
              ElementsAre("3000|3500|429496729700"));
}

TEST_F(ProfileWriterTablesTest, MstxEventsWithDomainsAndHostOnlyConnection) {
  EXPECT_THAT(
      Q("SELECT x.startNs, x.endNs, x.eventType, x.rangeId, x.category, m.value, x.globalTid, "
        "x.endGlobalTid, d.value, x.connectionId FROM MSTX_EVENTS x JOIN STRING_IDS m ON m.id = x.message "
        "JOIN STRING_IDS d ON d.id = x.domainId ORDER BY x.startNs"),
      ElementsAre(
          std::string("1100|2000|1|1|4294967295|Linear|") + kTid101 + "|" + kTid101 + "|Module|4294967295",
          // a marker is msprof's eventType 3; host-only, it has an id of its own (4 << 32 + n)
          std::string("1500|1500|3|0|4294967295|checkpoint|") + kTid101 + "|" + kTid101 +
              "|default|17179869184"));
}

TEST_F(ProfileWriterTablesTest, ReplayKernelRowPerReplayedOrDeclinedLaunch) {
  EXPECT_THAT(
      Q("SELECT k.id, k.timestampNs, k.globalTid, k.deviceId, n.value, k.connectionId, k.launchIndex, "
        "k.replayed, "
        "k.declineReason, k.declineDetail, k.restoreMode, k.passes, k.deterministic, k.snapshotRegions, "
        "k.snapshotBytes, k.snapshotNs, k.untrackedWritableBytes, k.snapshotDeviceBytes, k.replayNs FROM "
        "GPUPROF_REPLAY_KERNEL k "
        "JOIN STRING_IDS n ON n.id = k.name ORDER BY k.id"),
      ElementsAre(
          std::string("0|2000|") + kTid101 +
              "|0|void gemm_kernel<float>(float*, "
              "int)|11|0|1|NULL|NULL|auto|2|0|2|1048576|5000|0|524288|7000",
          std::string("1|6000|") + kTid102 +
              "|0|bwd_kernel|NULL|1|0|graph-launch|launched from a CUDA graph|auto|1|1|0|0|0|0|0|0",
          std::string("2|6200|") + kTid102 + "|0|bwd_kernel|NULL|2|1|NULL|NULL|auto|1|1|0|0|0|0|0|0"));
}

// Issue 24: a whole-graph replay (its kernel nodes' durations per pass) and a kernel node replayed
// node by node, beside an ordinary kernel launch (replayMode kernel, graph columns NULL).
TEST(ProfileWriterGraphReplayTest, GraphRowsCarryTheModeTheIdsTheFallbackAndNodeDurations) {
  TempDir dir;
  std::vector<trace::Record> records;
  trace::ReplayResult whole;
  whole.time_ns = testing::kStartNs + 100;
  whole.pid = 100;
  whole.tid = 100;
  whole.record.kernel_name = "graph 5";
  whole.record.replayed = true;
  whole.record.replay_mode = replay::ReplayMode::kGraph;
  whole.record.graph_id = 5;
  whole.record.graph_fallback = "it has a host node (9), which cannot run alone";
  for (int pass = 1; pass <= 2; ++pass) {
    replay::PassRecord p;
    p.pass = pass;
    p.duration_ns = 1000;
    p.kernel_nodes = {{11, "scale", 400u + static_cast<unsigned>(pass)}, {12, "finish", 500}};
    whole.record.passes.push_back(p);
  }
  records.emplace_back(whole);
  trace::ReplayResult node;
  node.time_ns = testing::kStartNs + 200;
  node.pid = 100;
  node.tid = 100;
  node.record.kernel_name = "finish";
  node.record.replayed = true;
  node.record.replay_mode = replay::ReplayMode::kNode;
  node.record.graph_id = 5;
  node.record.graph_node_id = 12;
  node.record.passes.resize(1);
  node.record.passes[0].pass = 1;
  node.record.passes[0].duration_ns = 450;
  records.emplace_back(node);
  trace::ReplayResult kernel;
  kernel.time_ns = testing::kStartNs + 300;
  kernel.record.kernel_name = "plain";
  kernel.record.replayed = true;
  kernel.record.passes.resize(1);
  kernel.record.passes[0].pass = 1;
  kernel.record.passes[0].duration_ns = 300;
  records.emplace_back(kernel);
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {records});
  EXPECT_THAT(Query(db,
                    "SELECT s.value, k.replayMode, k.graphId, k.graphNodeId, k.graphFallback FROM "
                    "GPUPROF_REPLAY_KERNEL k JOIN STRING_IDS s ON s.id = k.name ORDER BY k.id"),
              ElementsAre("graph 5|graph|5|NULL|it has a host node (9), which cannot run alone",
                          "finish|node|5|12|NULL", "plain|kernel|NULL|NULL|NULL"));
  EXPECT_THAT(Query(db,
                    "SELECT g.kernelId, g.pass, g.graphNodeId, s.value, g.durationNs FROM "
                    "GPUPROF_REPLAY_GRAPH_NODE g JOIN STRING_IDS s ON s.id = g.name ORDER BY g.rowid"),
              ElementsAre("0|1|11|scale|401", "0|1|12|finish|500", "0|2|11|scale|402", "0|2|12|finish|500"));
}

// Issue 40: the launches of a replayed range carry the range's number and their place in it; a
// declined range is one row named "range N" at place 0; other modes leave both NULL.
TEST(ProfileWriterRangeReplayTest, RangeRowsCarryTheRangeIdAndTheLaunchPlace) {
  TempDir dir;
  std::vector<trace::Record> records;
  auto range_launch = [&](std::string name, std::uint64_t range, std::uint32_t place, bool replayed) {
    trace::ReplayResult launch;
    launch.time_ns = testing::kStartNs + 100 + static_cast<std::int64_t>(records.size());
    launch.record.kernel_name = std::move(name);
    launch.record.replayed = replayed;
    launch.record.replay_mode = replay::ReplayMode::kRange;
    launch.record.range_id = range;
    launch.record.range_launch = place;
    launch.record.range_launches = replayed ? 2 : 0;
    if (!replayed) launch.record.decline_reason = replay::DeclineReason::kRangeTooLarge;
    records.emplace_back(launch);
  };
  range_launch("fwd", 1, 0, true);
  range_launch("bwd", 1, 1, true);
  range_launch("range 2", 2, 0, false);
  trace::ReplayResult kernel;
  kernel.time_ns = testing::kStartNs + 300;
  kernel.record.kernel_name = "plain";
  kernel.record.replayed = true;
  records.emplace_back(kernel);
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {records});
  EXPECT_THAT(Query(db,
                    "SELECT s.value, k.replayMode, k.replayed, k.rangeId, k.rangeLaunch, k.graphId FROM "
                    "GPUPROF_REPLAY_KERNEL k JOIN STRING_IDS s ON s.id = k.name ORDER BY k.id"),
              ElementsAre("fwd|range|1|1|0|NULL", "bwd|range|1|1|1|NULL", "range 2|range|0|2|0|NULL",
                          "plain|kernel|1|NULL|NULL|NULL"));
}

// W6 on CUDA: pass 1 of a range is the application's own execution, timed by its kernel record;
// passes 2..N by the kernel records of gpuprof's re-issued launches (ReplayRangeTask), before or
// after the replay row. Both joined by the launch's correlation id. A pass 1 the collector timed
// itself, a pass without a record, and kernel-mode rows keep theirs.
TEST(ProfileWriterRangeReplayTest, RangePassesTakeTheirKernelRecords) {
  TempDir dir;
  std::vector<trace::Record> records;
  records.emplace_back(trace::ReplayRangeTask{11, 2, 55});  // before its replay row
  auto kernel_task = [&](std::uint64_t correlation, std::int64_t start, std::int64_t end) {
    trace::DeviceTask task;
    task.name = "k" + std::to_string(correlation);
    task.correlation_id = correlation;
    task.start_ns = testing::kStartNs + start;
    task.end_ns = testing::kStartNs + end;
    records.emplace_back(task);
  };
  auto replayed = [&](replay::ReplayMode mode, std::uint64_t correlation, std::uint64_t pass1_ns) {
    trace::ReplayResult launch;
    launch.time_ns = testing::kStartNs + 500 + static_cast<std::int64_t>(records.size());
    launch.correlation_id = correlation;
    launch.record.kernel_name = "k" + std::to_string(correlation);
    launch.record.replayed = true;
    launch.record.replay_mode = mode;
    launch.record.range_id = mode == replay::ReplayMode::kRange ? 1 : 0;
    launch.record.passes.resize(2);
    launch.record.passes[0].pass = 1;
    launch.record.passes[0].duration_ns = pass1_ns;
    launch.record.passes[1].pass = 2;
    launch.record.passes[1].duration_ns = 77;
    records.emplace_back(launch);
  };
  replayed(replay::ReplayMode::kRange, 11, 0);   // CUDA: pass 1 from the record below
  replayed(replay::ReplayMode::kRange, 12, 0);   // its record comes after the replay row
  replayed(replay::ReplayMode::kRange, 13, 5);   // timed by the collector (host)
  replayed(replay::ReplayMode::kKernel, 14, 0);  // kernel mode: not a range's pass 1
  kernel_task(11, 100, 130);
  kernel_task(13, 200, 299);
  kernel_task(14, 300, 340);
  kernel_task(12, 150, 190);
  records.emplace_back(trace::ReplayRangeTask{12, 2, 66});  // after
  records.emplace_back(trace::ReplayRangeTask{13, 2, 0});   // no duration: pass 2 keeps 77
  records.emplace_back(trace::ReplayRangeTask{14, 2, 99});  // kernel mode: not a range's pass
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {records});
  EXPECT_THAT(
      Query(db,
            "SELECT s.value, p.pass, p.durationNs FROM GPUPROF_REPLAY_PASS p JOIN GPUPROF_REPLAY_KERNEL k "
            "ON k.id = p.kernelId JOIN STRING_IDS s ON s.id = k.name ORDER BY k.id, p.pass"),
      ElementsAre("k11|1|30", "k11|2|55", "k12|1|40", "k12|2|66", "k13|1|5", "k13|2|77", "k14|1|0",
                  "k14|2|77"));
  EXPECT_THAT(Query(db, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'gpuprof_range%'"),
              ElementsAre("0"));
}

// The CUDA path: the node durations of a whole-graph replay come as ReplayGraphNodeTask records
// carrying the graph launch's correlation id, before or after the replay's own row.
TEST(ProfileWriterGraphReplayTest, NodeTasksJoinTheirGraphReplayByCorrelationInPassOrder) {
  TempDir dir;
  auto node_task = [](std::uint64_t correlation, std::uint64_t node, std::uint64_t ns) {
    return trace::Record(trace::ReplayGraphNodeTask{correlation, node, "k" + std::to_string(node), ns});
  };
  trace::ReplayResult whole;
  whole.time_ns = testing::kStartNs + 100;
  whole.correlation_id = 77;
  whole.record.kernel_name = "graph 3";
  whole.record.replayed = true;
  whole.record.replay_mode = replay::ReplayMode::kGraph;
  whole.record.graph_id = 3;
  whole.record.passes.resize(2);
  std::vector<trace::Record> first = {node_task(77, 1, 10), node_task(78, 1, 99)};  // 78: no replay row
  std::vector<trace::Record> second = {trace::Record(whole), node_task(77, 2, 20), node_task(77, 1, 11),
                                       node_task(77, 2, 21)};
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {first, second});
  EXPECT_THAT(
      Query(db,
            "SELECT g.kernelId, g.pass, g.graphNodeId, s.value, g.durationNs FROM "
            "GPUPROF_REPLAY_GRAPH_NODE g JOIN STRING_IDS s ON s.id = g.name ORDER BY g.pass, g.graphNodeId"),
      ElementsAre("0|1|1|k1|10", "0|1|2|k2|20", "0|2|1|k1|11", "0|2|2|k2|21"));
}

TEST_F(ProfileWriterTablesTest, ReplayKernelCounterColumns) {
  EXPECT_THAT(
      Q("SELECT id, counterPasses, counterStatus, clockControl, cacheControl FROM GPUPROF_REPLAY_KERNEL "
        "ORDER BY id"),
      ElementsAre("0|3|NULL|base|all", "1|0|NULL|none|none",
                  "2|0|counters not permitted (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): run as root or set "
                  "NVreg_RestrictProfilingToAdminUsers=0|none|all"));
}

TEST_F(ProfileWriterTablesTest, ReplayMetricRowsWithStringIdsAndRealValues) {
  EXPECT_THAT(Q("SELECT m.kernelId, n.value, COALESCE(u.value, 'NULL'), m.value, typeof(m.value), m.passes "
                "FROM GPUPROF_REPLAY_METRIC m JOIN STRING_IDS n ON n.id = m.name "
                "LEFT JOIN STRING_IDS u ON u.id = m.unit ORDER BY m.rowid"),
              ElementsAre("0|dram__bytes_read.sum|byte|1500000000.0|real|1",
                          "0|sm__throughput.avg.pct_of_peak_sustained_elapsed|%|61.25|real|2",
                          "0|launch__grid_size|NULL|8.0|real|0"));
  // A metric without a unit stores NULL, not the empty string's id.
  EXPECT_EQ(QueryOne(*suite_db, "SELECT COUNT(*) FROM GPUPROF_REPLAY_METRIC WHERE unit IS NULL"), "1");
  // The documented join (docs/db_gpuprof_tables.md).
  EXPECT_THAT(Q("SELECT s.value, k.launchIndex, n.value, m.value FROM GPUPROF_REPLAY_METRIC m "
                "JOIN GPUPROF_REPLAY_KERNEL k ON k.id = m.kernelId JOIN STRING_IDS s ON s.id = k.name "
                "JOIN STRING_IDS n ON n.id = m.name WHERE n.value = 'dram__bytes_read.sum'"),
              ElementsAre("void gemm_kernel<float>(float*, int)|0|dram__bytes_read.sum|1500000000.0"));
}

TEST_F(ProfileWriterTablesTest, ReplayPassRowsWithOutputHashAsTwosComplement) {
  EXPECT_THAT(
      Q("SELECT kernelId, pass, startNs, durationNs, smClockBeforeKhz, smClockAfterKhz, bytesRestored, "
        "regionsRestored, dirtyChunks, CASE WHEN outputHash IS NULL THEN 'NULL' ELSE "
        "printf('%016x', outputHash) END, matchesPass1 FROM GPUPROF_REPLAY_PASS ORDER BY kernelId, pass"),
      ElementsAre("0|1|2000|500|1980000|1980000|0|0|0|0123456789abcdef|1",
                  "0|2|2600|480|1980000|1965000|65536|1|1|fedcba9876543210|0",
                  "1|1|6000|100|0|0|0|0|0|NULL|NULL", "2|1|6200|90|0|0|0|0|0|NULL|NULL"));
  EXPECT_EQ(QueryOne(*suite_db, "SELECT outputHash FROM GPUPROF_REPLAY_PASS WHERE kernelId = 0 AND pass = 2"),
            "-81985529216486896");
}

TEST_F(ProfileWriterTablesTest, ReplayTablesJoinTaskByCorrelation) {
  EXPECT_THAT(Q("SELECT k.id, t.globalTaskId, n.value FROM GPUPROF_REPLAY_KERNEL k "
                "JOIN TASK t ON t.connectionId = k.connectionId JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = "
                "t.globalTaskId JOIN STRING_IDS n ON n.id = c.name ORDER BY k.id"),
              ElementsAre("0|0|void gemm_kernel<float>(float*, int)"));
}

TEST_F(ProfileWriterTablesTest, PerRunTables) {
  EXPECT_THAT(Q("SELECT rankId, deviceId FROM RANK_DEVICE_MAP"), ElementsAre("0|0"));
  EXPECT_THAT(Q("SELECT startTimeNs, endTimeNs FROM SESSION_TIME_INFO"),
              ElementsAre("1704164645678000000|1704164646678000000"));
  EXPECT_THAT(Q("SELECT id, name FROM NPU_INFO ORDER BY id"), ElementsAre("0|NVIDIA H200"));
  EXPECT_THAT(Q("SELECT hostName, length(hostUid) > 0 FROM HOST_INFO"), ElementsAre("testhost|1"));
  EXPECT_THAT(Q("SELECT name, value FROM META_DATA ORDER BY rowid"),
              ElementsAre("SCHEMA_VERSION|1.2.0", "SCHEMA_VERSION_MAJOR|1", "SCHEMA_VERSION_MINOR|2",
                          "SCHEMA_VERSION_MICRO|0", S("gpuprof_version", GPUPROF_TEST_VERSION),
                          R"(gpuprof_config|{"activities": ["cpu", "cuda"], "record_shapes": true})",
                          // the records lost before the DB, zeros included: the writer's own here
                          R"(gpuprof_lost_records|{"writer_queue": 0})",
                          // not distributed: valid, empty JSON (msprof-analyze json.loads them); no
                          // pp_info: pp_chart would call .lower() on its missing pp_type
                          "parallel_group_info|{}", "distributed_args|{}"));
}

TEST_F(ProfileWriterTablesTest, StringIdsSpacesPerProducer) {
  constexpr const char* kDevice = "id >= 0 AND id < 268435456";
  constexpr const char* kFramework = "id >= 268435456 AND id < 536870912";
  constexpr const char* kMemory = "id >= 536870912 AND id < 805306368";
  EXPECT_THAT(Q(std::string("SELECT value FROM STRING_IDS WHERE ") + kDevice),
              UnorderedElementsAre("cudaLaunchKernel", "launch", "cudaMemcpyAsync", "cudaStreamSynchronize",
                                   "KERNEL", "MEMCPY_ASYNC", "MEMSET", "void gemm_kernel<float>(float*, int)",
                                   "gemm_kernel", "4,2,1", "128,1,1", "bwd_kernel", "1,1,1", "32,1,1",
                                   "checkpoint", "default", "Linear", "Module", "dram__bytes_read.sum",
                                   "byte", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%",
                                   "launch__grid_size", "", "static"));
  EXPECT_THAT(Q(std::string("SELECT value FROM STRING_IDS WHERE ") + kFramework),
              UnorderedElementsAre("ProfilerStep#3", "nn.Module: Linear_0", "aten::linear", "float;\r\nfloat",
                                   "8,16;\r\n16,32", "model.py(12): forward", "train.py(40): step",
                                   "aten::mm", "LinearBackward0", "checkpoint"));
  EXPECT_THAT(Q(std::string("SELECT value FROM STRING_IDS WHERE ") + kMemory), ElementsAre("PTA"));
  EXPECT_THAT(Q("SELECT value FROM STRING_IDS WHERE id >= 805306368 OR id < 0"), IsEmpty());
  // Dense from each space's base.
  EXPECT_THAT(
      Q(std::string("SELECT MIN(id), MAX(id) - MIN(id) + 1 = COUNT(*) FROM STRING_IDS WHERE ") + kDevice),
      ElementsAre("0|1"));
  EXPECT_THAT(
      Q(std::string("SELECT MIN(id), MAX(id) - MIN(id) + 1 = COUNT(*) FROM STRING_IDS WHERE ") + kFramework),
      ElementsAre("268435456|1"));
  EXPECT_THAT(Q(std::string("SELECT MIN(id) FROM STRING_IDS WHERE ") + kMemory), ElementsAre("536870912"));
  // One '' row, for COMPUTE_TASK_INFO's op columns (the device space's last id).
  EXPECT_THAT(Q("SELECT id FROM STRING_IDS WHERE value = ''"),
              ElementsAre(Q(std::string("SELECT MAX(id) - 1 FROM STRING_IDS WHERE ") + kDevice)[0]));
}

TEST(ProfileWriterStringsTest, EmptyStringsAreInvalidIdOrNullPerColumn) {
  TempDir dir;
  trace::ApiCall call;
  call.start_ns = 10;
  call.end_ns = 20;
  call.correlation_id = 1;  // name left empty
  trace::Mark mark;         // message and domain empty
  mark.start_ns = mark.end_ns = 30;
  trace::TorchOp op;  // name empty, nothing recorded
  op.start_ns = 40;
  op.end_ns = 50;
  std::vector<trace::Record> records = {call, mark, op};
  std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {std::move(records)});
  EXPECT_EQ(QueryOne(db, "SELECT name FROM CANN_API"), "4294967295");
  EXPECT_EQ(QueryOne(db, "SELECT message FROM MSTX_EVENTS"), "4294967295");
  EXPECT_EQ(QueryOne(db, "SELECT s.value FROM MSTX_EVENTS x JOIN STRING_IDS s ON s.id = x.domainId"),
            "default");
  // The op, and the mark's mstx op (linked to the mark, so its connectionId is set).
  EXPECT_THAT(Query(db,
                    "SELECT name, inputDtypes, inputShapes, callchainId, connectionId IS NULL, type FROM "
                    "PYTORCH_API ORDER BY startNs"),
              ElementsAre("4294967295|NULL|NULL|NULL|0|50004", "4294967295|NULL|NULL|NULL|1|50001"));
  EXPECT_EQ(QueryOne(db, "SELECT COUNT(*) FROM STRING_IDS WHERE value = ''"), "0");
}

// msprof-analyze's compare reads MAX(totalReserved) FROM MEMORY_RECORD and divides it
// (overall_metrics_parser.py): a run without allocator events has one zero row at its start, never
// an empty table (NULL); a run with events has only theirs (ProfileWriterTablesTest).
TEST(ProfileWriterMemoryTest, NoAllocatorEventsIsOneZeroRowAtTheStart) {
  TempDir dir;
  trace::TorchOp op;
  op.name = "aten::relu";
  op.start_ns = testing::kStartNs + 10;
  op.end_ns = testing::kStartNs + 20;
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {{op}});
  EXPECT_THAT(Query(db,
                    "SELECT s.value, m.timestamp, m.totalAllocated, m.totalReserved, m.totalActive FROM "
                    "MEMORY_RECORD m JOIN STRING_IDS s ON s.id = m.component"),
              ElementsAre("PTA|" + std::to_string(testing::kStartNs) + "|0|0|0"));
  EXPECT_EQ(QueryOne(db, "SELECT MAX(totalReserved) FROM MEMORY_RECORD"), "0");
}

TEST(ProfileWriterStringsTest, SameValueInTwoSpacesGetsTwoIds) {
  TempDir dir;
  trace::TorchOp op;
  op.name = "gemm_kernel";
  op.start_ns = 1;
  op.end_ns = 100;
  trace::DeviceTask kernel;
  kernel.name = "gemm_kernel";
  kernel.start_ns = 10;
  kernel.end_ns = 20;
  std::vector<trace::Record> records = {op, kernel};
  std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {std::move(records)});
  EXPECT_THAT(Query(db, "SELECT id >= 268435456 FROM STRING_IDS WHERE value = 'gemm_kernel' ORDER BY id"),
              ElementsAre("0", "1"));
  EXPECT_THAT(Query(db, "SELECT s.value FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name"),
              ElementsAre("gemm_kernel"));
  EXPECT_THAT(Query(db, "SELECT s.value FROM COMPUTE_TASK_INFO c JOIN STRING_IDS s ON s.id = c.name"),
              ElementsAre("gemm_kernel"));
}

trace::TorchOp OpOnThread102(std::string name, std::int64_t start, std::int64_t end) {
  trace::TorchOp op;
  op.name = std::move(name);
  op.start_ns = start;
  op.end_ns = end;
  op.pid = 100;
  op.tid = 102;
  return op;
}

// DB_SPEC §7: each ProcessGroup work op ("gloo:all_reduce", ...) becomes a CANN_API `communication`
// row and a COMMUNICATION_OP row joined on connectionId; dispatcher ops (c10d::*) do not.
TEST(ProfileWriterCollectivesTest, WorkOpsBecomeCommunicationRowsInStartOrder) {
  TempDir dir;
  auto op = [](std::string name, std::int64_t start, std::int64_t end, std::string shapes,
               std::string dtypes) {
    trace::TorchOp o = OpOnThread102(std::move(name), start, end);
    o.input_shapes = std::move(shapes);
    o.input_dtypes = std::move(dtypes);
    return o;
  };
  std::vector<trace::Record> records = {
      op("c10d::allreduce_", 900, 950, "", ""),
      op("gloo:broadcast", 2000, 2500, "8,4", "c10::Half"),
      op("gloo:all_reduce", 1000, 1600, "16;\r\n16", "float;\r\nfloat"),
      op("nccl:_allgather_base", 3000, 3100, "", ""),
  };
  WriterOptions options = testing::TestOptions(dir.path(), /*rank=*/1);
  options.run.device = 3;
  options.run.world_size = 2;
  std::string db = testing::WriteProfile(options, {std::move(records)});
  EXPECT_THAT(
      Query(db,
            "SELECT n.value, c.startNs, c.endNs, c.opId, g.value, t.value, c.count, d.name, c.deviceId, "
            "c.rankSize, c.relay, c.retry FROM COMMUNICATION_OP c "
            "JOIN STRING_IDS n ON n.id = c.opName JOIN STRING_IDS g ON g.id = c.groupName "
            "JOIN STRING_IDS t ON t.id = c.opType JOIN ENUM_HCCL_DATA_TYPE d ON d.id = c.dataType "
            "ORDER BY c.opId"),
      // HCCL's names as torch_npu writes them (msprof-analyze splits them on '_'); 921 is default_pg's tag.
      ElementsAre("hcom_allReduce__921_0_1|1000|1600|0|default_pg|hcom_allReduce_|16|FP32|3|2|0|0",
                  "hcom_broadcast__921_1_1|2000|2500|1|default_pg|hcom_broadcast_|32|FP16|3|2|0|0",
                  "hcom_allGather__921_2_1|3000|3100|2|default_pg|hcom_allGather_|NULL|N/A|3|2|0|0"));
  EXPECT_THAT(
      Query(db,
            "SELECT a.startNs, a.endNs, e.name, a.globalTid, s.value FROM COMMUNICATION_OP c "
            "JOIN CANN_API a ON a.connectionId = c.connectionId JOIN ENUM_API_TYPE e ON e.id = a.type "
            "JOIN STRING_IDS s ON s.id = a.name ORDER BY c.opId"),
      ElementsAre(std::string("1000|1600|communication|") + kTid102 + "|gloo:all_reduce",
                  std::string("2000|2500|communication|") + kTid102 + "|gloo:broadcast",
                  std::string("3000|3100|communication|") + kTid102 + "|nccl:_allgather_base"));
  // msprof-analyze's module_statistic places communication under modules through this join
  // (prof_exports/module_statistic_export.py QUERY_COMMUNICATION_TASK): each collective reaches its work op.
  EXPECT_THAT(
      Query(db,
            "SELECT s.value FROM COMMUNICATION_OP c JOIN CONNECTION_IDS i ON i.connectionId = "
            "c.connectionId JOIN PYTORCH_API p ON p.connectionId = i.id JOIN STRING_IDS s ON s.id = p.name "
            "ORDER BY c.opId"),
      ElementsAre("gloo:all_reduce", "gloo:broadcast", "nccl:_allgather_base"));
}

// NCCL on torch 2.x: record_param_comms encloses the work op and launches the NCCL kernel (tagged
// through CUPTI external correlation). COMMUNICATION_OP takes the kernel's device time and
// COMMUNICATION_TASK_INFO links the kernel to the op; the CANN_API row keeps the host call.
TEST(ProfileWriterCollectivesTest, NcclKernelsGiveTheOpItsDeviceTimeAndATaskInfoRow) {
  TempDir dir;
  auto op = [](std::string name, std::int64_t start, std::int64_t end, std::uint64_t external_id) {
    trace::TorchOp o = OpOnThread102(std::move(name), start, end);
    o.external_id = external_id;
    return o;
  };
  trace::ApiCall launch;
  launch.name = "cudaLaunchKernelExC";
  launch.pid = 100;
  launch.tid = 102;
  launch.start_ns = 1200;
  launch.end_ns = 1250;
  launch.correlation_id = 55;
  launch.launches_device_work = true;
  trace::DeviceTask kernel;
  kernel.kind = trace::TaskKind::kKernel;
  kernel.start_ns = 5000;
  kernel.end_ns = 5600;
  kernel.stream = 9;
  kernel.context = 1;
  kernel.correlation_id = 55;
  kernel.pid = 100;
  kernel.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  kernel.short_name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  trace::DeviceTask other = kernel;  // launched by another op: not the collective's
  other.correlation_id = 56;
  other.start_ns = 7000;
  other.end_ns = 7100;
  trace::ApiCall other_launch = launch;
  other_launch.correlation_id = 56;
  other_launch.start_ns = 2100;
  other_launch.end_ns = 2150;
  std::vector<trace::Record> records = {op("nccl:all_reduce", 1100, 1400, 0),
                                        op("record_param_comms", 1000, 1500, 7),
                                        launch,
                                        op("aten::add", 2000, 2200, 0),
                                        other_launch,
                                        trace::ExternalCorrelation{7, 55},
                                        kernel,
                                        other};
  WriterOptions options = testing::TestOptions(dir.path());
  options.run.world_size = 2;
  std::string db = testing::WriteProfile(options, {std::move(records)});
  EXPECT_THAT(Query(db,
                    "SELECT c.startNs, c.endNs, a.startNs, a.endNs FROM COMMUNICATION_OP c "
                    "JOIN CANN_API a ON a.connectionId = c.connectionId"),
              ElementsAre("5000|5600|1100|1400"));
  EXPECT_THAT(
      Query(db,
            "SELECT i.opId, t.startNs, t.connectionId, s.value, g.value FROM COMMUNICATION_TASK_INFO i "
            "JOIN TASK t ON t.globalTaskId = i.globalTaskId JOIN STRING_IDS s ON s.id = i.name "
            "JOIN STRING_IDS g ON g.id = i.groupName"),
      ElementsAre("0|5000|55|nccl:all_reduce|default_pg"));
}

TEST(CollectiveLaunchesTest, TheInnermostEnclosingCommunicationOpElseOnesStartingInside) {
  auto span = [](std::uint64_t row, std::uint32_t tid, std::int64_t start, std::int64_t end,
                 bool communication) {
    OpSpan s;
    s.api_row = row;
    s.tid = tid;
    s.start_ns = start;
    s.end_ns = end;
    s.communication = communication;
    return s;
  };
  // row 1: a big non-communication op; 2: record_param_comms around collective 0; 3: a c10d op that
  // starts inside collective 1; 4: a communication op on another thread.
  std::vector<OpSpan> ops = {span(1, 1, 0, 10'000, false), span(2, 1, 100, 500, true),
                             span(3, 1, 2050, 2300, true), span(4, 2, 100, 500, true)};
  Connections connections;
  connections.api_index = {{1, 0}, {2, 1}, {3, 2}, {4, 3}};
  connections.rows = {{0, 90}, {1, kFrameworkConnectionBase + 1}, {1, 91}, {1, 92}, {2, 93}, {3, 94}};
  CollectiveSpan inside;  // collective 0 starts inside row 2
  inside.tid = 1;
  inside.start_ns = 200;
  inside.end_ns = 300;
  CollectiveSpan around = inside;  // collective 1 contains the start of row 3
  around.start_ns = 2000;
  around.end_ns = 2100;
  CollectiveSpan alone = inside;  // collective 2: nothing communication-like around or inside
  alone.start_ns = 5000;
  alone.end_ns = 5100;
  using Link = std::pair<std::size_t, std::uint64_t>;
  EXPECT_THAT(CollectiveLaunches({inside, around, alone}, ops, connections),
              ElementsAre(Link{0, 91}, Link{0, 92}, Link{1, 93}))
      << "the fwd/bwd id and other threads' and non-communication ops' launches are not the collective's";
}

TEST(CollectiveNameTest, WorkOpNamesParseAndOthersDoNot) {
  auto type = [](std::string_view name) {
    std::optional<CollectiveName> c = ParseCollectiveName(name);
    return c ? c->backend + "/" + c->op_type : std::string("none");
  };
  EXPECT_EQ(type("gloo:all_reduce"), "gloo/allreduce");
  EXPECT_EQ(type("nccl:reduce_scatter"), "nccl/reducescatter");
  EXPECT_EQ(type("nccl:_allgather_base"), "nccl/allgatherbase");
  EXPECT_EQ(type("gloo:barrier"), "gloo/barrier");
  EXPECT_EQ(type("c10d::allreduce_"), "none");
  EXPECT_EQ(type("aten::add"), "none");
  EXPECT_EQ(type("record_param_comms"), "none");
  EXPECT_EQ(type("nccl:"), "none");
  EXPECT_EQ(HcclOpType("allreduce"), "allReduce");
  EXPECT_EQ(HcclOpType("allgatherbase"), "allGather");
  EXPECT_EQ(HcclOpType("reducescatter"), "reduceScatter");
  EXPECT_EQ(HcclOpType("recv"), "receive") << "msprof-analyze's bubble rule looks for hcom_receive";
  EXPECT_EQ(type("nccl:all_reduce_barrier"), "nccl/allreducebarrier");
  EXPECT_EQ(HcclOpType("allreducebarrier"), "barrier")
      << "the format's name table has hcom_barrier_, no other";
  EXPECT_EQ(HcclOpType("somethingnew"), "somethingnew");
  // msprof-analyze's double_hash (cluster_analyse/common_func/utils.py) of these names, printed by
  // it: analysis.db's group_name and the HCCL tag must be what it computes.
  EXPECT_EQ(GroupNameHash("default_pg"), 4229130597433523921ull);
  EXPECT_EQ(GroupNameHash("group_name_0"), 5862276093215481612ull);
  EXPECT_EQ(HcclGroupTag("default_pg"), "921") << "hccl_sum's GroupId: the hash's last three digits";
  EXPECT_EQ(HcclGroupTag(""), "000");
  EXPECT_EQ(FirstInputElements("8,4;\r\n2"), 32u);
  EXPECT_EQ(FirstInputElements("16"), 16u);
  EXPECT_EQ(FirstInputElements(""), std::nullopt);
  EXPECT_EQ(FirstInputElements(";\r\n16"), std::nullopt) << "a scalar first input has no shape";
  EXPECT_EQ(HcclDataTypeOf("float;\r\nlong int"), 4u);
  EXPECT_EQ(HcclDataTypeOf("c10::BFloat16"), 11u);
  EXPECT_EQ(HcclDataTypeOf("TensorList"), 65534u);
}

TEST(ProfileWriterBatchTest, SmallTransactionsAndManySubmitsKeepEveryRow) {
  TempDir dir;
  WriterOptions options = testing::TestOptions(dir.path());
  options.batch_rows = 7;  // many commits inside one Submit and across Submits
  auto writer = ProfileWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  constexpr int kBatches = 20;
  constexpr int kPerBatch = 50;
  for (int b = 0; b < kBatches; ++b) {
    std::vector<trace::Record> records;
    for (int i = 0; i < kPerBatch; ++i) {
      trace::TorchOp op;
      op.name = "op" + std::to_string(i % 5);
      const std::int64_t n = std::int64_t{b} * kPerBatch + i;
      op.start_ns = n * 10;
      op.end_ns = op.start_ns + 5;
      records.emplace_back(std::move(op));
      trace::DeviceTask task;
      task.name = "k" + std::to_string(i % 3);
      task.start_ns = n * 10;
      task.end_ns = task.start_ns + 3;
      task.correlation_id = static_cast<std::uint64_t>(n);
      records.emplace_back(std::move(task));
    }
    (*writer)->Submit(std::move(records));
  }
  auto path = (*writer)->Finalize(testing::kStartNs + 1);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(QueryOne(*path, "SELECT COUNT(*) FROM PYTORCH_API"), std::to_string(kBatches * kPerBatch));
  EXPECT_EQ(QueryOne(*path, "SELECT COUNT(*) FROM TASK"), std::to_string(kBatches * kPerBatch));
  EXPECT_EQ(QueryOne(*path, "SELECT MAX(globalTaskId) + 1 = COUNT(DISTINCT globalTaskId) FROM TASK"), "1");
  // op0..op4, k0..k2, KERNEL and the default dims "1,1,1", each once; '' and 'static' for
  // COMPUTE_TASK_INFO's op columns (writer_task_info.cc); PTA for the zero MEMORY_RECORD row.
  EXPECT_EQ(QueryOne(*path, "SELECT COUNT(*) FROM STRING_IDS"), "13");
  WriterStats stats = (*writer)->stats();
  EXPECT_EQ(stats.records, static_cast<std::uint64_t>(2 * kBatches * kPerBatch));
  EXPECT_EQ(stats.dropped_records, 0u);
  EXPECT_GT(stats.bytes, 0u);
  EXPECT_GE(stats.rows, static_cast<std::uint64_t>(3 * kBatches * kPerBatch));
}

}  // namespace
}  // namespace gpuprof::db
