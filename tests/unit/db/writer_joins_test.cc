// The joins the format's consumers run (DB_SPEC §3.4 and §7), on the synthetic run of
// writer_test_util.h: msprof-analyze's op -> device task join through CONNECTION_IDS, its
// forward/backward pairing, node/launch rows of CANN_API joined to TASK, STEP_TIME ids as
// integers, MEMORY_RECORD's component, and the call-stack reassembly of the advisor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "db/profile_writer.h"
#include "writer_test_util.h"

namespace gpuprof::db {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Query;
using testing::QueryOne;
using testing::TempDir;

class ProfileWriterJoinsTest : public ::testing::Test {
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

  static TempDir* suite_dir;
  static std::string* suite_db;
};
TempDir* ProfileWriterJoinsTest::suite_dir = nullptr;
std::string* ProfileWriterJoinsTest::suite_db = nullptr;

// MSA module_statistic_export.py / free_analysis_export.py.
TEST_F(ProfileWriterJoinsTest, OpToDeviceTaskThroughConnectionIds) {
  EXPECT_THAT(Q("SELECT op.value, tt.value, k.value FROM TASK "
                "JOIN CONNECTION_IDS ON TASK.connectionId = CONNECTION_IDS.connectionId "
                "JOIN PYTORCH_API ON CONNECTION_IDS.id = PYTORCH_API.connectionId "
                "JOIN STRING_IDS op ON op.id = PYTORCH_API.name JOIN STRING_IDS tt ON tt.id = TASK.taskType "
                "LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = TASK.globalTaskId "
                "LEFT JOIN STRING_IDS k ON k.id = c.name ORDER BY TASK.startNs"),
              ElementsAre("aten::mm|KERNEL|void gemm_kernel<float>(float*, int)",
                          "aten::linear|MEMCPY_ASYNC|NULL",  // tagged with aten::linear's external id
                          "LinearBackward0|KERNEL|bwd_kernel"));
  // Every task reaches at most one op (no double counting in the consumers' sums).
  EXPECT_THAT(
      Q("SELECT TASK.globalTaskId, COUNT(*) FROM TASK JOIN CONNECTION_IDS ON TASK.connectionId = "
        "CONNECTION_IDS.connectionId JOIN PYTORCH_API ON CONNECTION_IDS.id = PYTORCH_API.connectionId "
        "GROUP BY TASK.globalTaskId HAVING COUNT(*) > 1"),
      IsEmpty());
}

// MSA QUEYR_FWD_BWD_FLOW: min id = forward, max id = backward, Enqueue/Dequeue excluded.
TEST_F(ProfileWriterJoinsTest, ForwardBackwardPairsByGroupBy) {
  EXPECT_THAT(Q("SELECT connectionId, MIN(id), MAX(id), COUNT(*) FROM CONNECTION_IDS GROUP BY connectionId "
                "HAVING COUNT(*) > 1"),
              ElementsAre("1342177280|0|2|2"));
  EXPECT_THAT(Q("SELECT f.value, b.value, pf.startNs < pb.startNs FROM "
                "(SELECT MIN(id) AS fwd, MAX(id) AS bwd FROM CONNECTION_IDS GROUP BY connectionId "
                " HAVING COUNT(*) > 1) pairs "
                "JOIN PYTORCH_API pf ON pf.connectionId = pairs.fwd JOIN PYTORCH_API pb ON pb.connectionId = "
                "pairs.bwd "
                "JOIN STRING_IDS f ON f.id = pf.name JOIN STRING_IDS b ON b.id = pb.name "
                "WHERE f.value NOT LIKE 'Enqueue%' AND f.value NOT LIKE 'Dequeue%'"),
              ElementsAre("aten::linear|LinearBackward0|1"));
}

// communication_bottleneck / torch_npu linking: CANN_API WHERE name = STRING_IDS('launch') AND
// type = 10000, joined to TASK by connectionId.
TEST_F(ProfileWriterJoinsTest, NodeLaunchRowsJoinTasks) {
  EXPECT_THAT(
      Q("SELECT api.connectionId, tt.value FROM CANN_API api "
        "JOIN STRING_IDS s ON s.id = api.name AND s.value = 'launch' "
        "JOIN TASK ON TASK.connectionId = api.connectionId JOIN STRING_IDS tt ON tt.id = TASK.taskType "
        "WHERE api.type = 10000 ORDER BY api.connectionId"),
      ElementsAre("11|KERNEL", "12|MEMCPY_ASYNC", "13|KERNEL"));
  // Runtime rows carry another id space and never match a task.
  EXPECT_EQ(QueryOne(*suite_db,
                     "SELECT COUNT(*) FROM CANN_API api JOIN TASK ON TASK.connectionId = api.connectionId "
                     "WHERE api.type = 5000"),
            "0");
  // Each node row's thread is the launching runtime call's thread.
  EXPECT_EQ(
      QueryOne(*suite_db,
               "SELECT COUNT(*) FROM CANN_API n JOIN CANN_API r ON r.connectionId = n.connectionId + "
               "4294967296 AND r.globalTid = n.globalTid AND r.startNs = n.startNs WHERE n.type = 10000"),
      "3");
}

// msprof-analyze compares STEP_TIME.id to an int --step_id.
TEST_F(ProfileWriterJoinsTest, StepTimeIdsAreIntegers) {
  EXPECT_THAT(Q("SELECT typeof(id) FROM STEP_TIME"), ElementsAre("integer"));
  EXPECT_THAT(Q("SELECT startNs, endNs FROM STEP_TIME WHERE id = 3"), ElementsAre("1000|9000"));
  // Rows inside the step window, as cluster recipes filter them: the torch ops, the Python frame and
  // the checkpoint mark's mstx op.
  EXPECT_EQ(QueryOne(*suite_db,
                     "SELECT COUNT(*) FROM PYTORCH_API p, STEP_TIME s WHERE s.id = 3 AND "
                     "p.startNs >= s.startNs AND p.endNs <= s.endNs"),
            "6");
}

// Insight's memory view keys on component 'PTA'.
TEST_F(ProfileWriterJoinsTest, MemoryRecordComponentIsPta) {
  EXPECT_THAT(Q("SELECT DISTINCT s.value FROM MEMORY_RECORD m JOIN STRING_IDS s ON s.id = m.component"),
              ElementsAre("PTA"));
}

// MSA advisor db_stack_finder.py: frames re-assembled in stackDepth order.
TEST_F(ProfileWriterJoinsTest, CallStackReassembly) {
  EXPECT_THAT(
      Q("SELECT n.value, (SELECT GROUP_CONCAT(v, ';\n') FROM (SELECT s.value AS v FROM PYTORCH_CALLCHAINS c "
        "JOIN STRING_IDS s ON s.id = c.stack WHERE c.id = p.callchainId ORDER BY c.stackDepth)) "
        "FROM PYTORCH_API p JOIN STRING_IDS n ON n.id = p.name WHERE p.callchainId IS NOT NULL "
        "ORDER BY p.rowid"),
      ElementsAre("aten::linear|model.py(12): forward;\ntrain.py(40): step",
                  "aten::mm|model.py(12): forward;\ntrain.py(40): step"));
}

// Insight classifies links: a CONNECTION_IDS connectionId that is a TASK's is HostToDevice; one
// shared by two ops is fwdbwd.
TEST_F(ProfileWriterJoinsTest, EveryConnectionIsATaskAPairOrAMark) {
  EXPECT_THAT(
      Q("SELECT c.connectionId FROM CONNECTION_IDS c WHERE c.connectionId NOT IN "
        "(SELECT connectionId FROM TASK) AND c.connectionId NOT IN (SELECT connectionId FROM CONNECTION_IDS "
        "GROUP BY connectionId HAVING COUNT(*) > 1) AND c.connectionId NOT IN (SELECT connectionId FROM "
        "MSTX_EVENTS)"),
      IsEmpty());
}

// msprof-analyze's mstx_sum (prof_exports/mstx_event_export.py): marks are eventType 3, and a
// host-only mark reaches a PYTORCH_API row through CONNECTION_IDS, never 4294967295: its own mstx
// op (type 50004) at its time, as torch_npu records an mstx call. The ops around it keep their
// own links (aten::mm, around the mark at 1500, still owns its kernel only).
TEST_F(ProfileWriterJoinsTest, HostMarksJoinTheirMstxOpThroughConnectionIds) {
  EXPECT_THAT(Q("SELECT m.value, x.eventType, x.connectionId >= 4 * 4294967296, op.value, p.type, p.startNs, "
                "p.endNs, p.globalTid = x.globalTid FROM MSTX_EVENTS x "
                "JOIN STRING_IDS m ON m.id = x.message "
                "JOIN CONNECTION_IDS c ON c.connectionId = x.connectionId "
                "JOIN PYTORCH_API p ON p.connectionId = c.id JOIN STRING_IDS op ON op.id = p.name "
                "WHERE x.eventType = 3"),
              ElementsAre("checkpoint|3|1|checkpoint|50004|1500|1500|1"));
  EXPECT_THAT(
      Q("SELECT COUNT(*) FROM CONNECTION_IDS c JOIN PYTORCH_API p ON p.connectionId = c.id JOIN STRING_IDS "
        "s ON s.id = p.name WHERE s.value = 'aten::mm' AND c.connectionId >= 4 * 4294967296"),
      ElementsAre("0"));
}

// A mark made outside every torch op (before the first step, say) still has its framework time:
// mstx_sum casts every mark's to int64 and drops the rank's marks when one has none.
TEST(ProfileWriterMarksTest, AMarkOutsideEveryOpJoinsItsMstxOp) {
  TempDir dir;
  trace::Mark mark;
  mark.type = trace::Mark::Type::kMarkerEx;
  mark.start_ns = mark.end_ns = 700;
  mark.pid = 100;
  mark.tid = 103;
  mark.message = "before_training";
  std::vector<trace::Record> records = {mark};
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {std::move(records)});
  ASSERT_FALSE(db.empty());
  EXPECT_THAT(Query(db,
                    "SELECT p.startNs, s.value FROM MSTX_EVENTS x JOIN CONNECTION_IDS c ON c.connectionId = "
                    "x.connectionId JOIN PYTORCH_API p ON p.connectionId = c.id JOIN STRING_IDS s ON s.id = "
                    "p.name"),
              ElementsAre("700|before_training"));
}

// GPUPROF_CUDA_TRACE=none records no CUDA API calls: the device tasks are written all the same, and
// an op still reaches the task CUPTI tagged with its external id.
TEST(ProfileWriterWithoutApiCallsTest, TasksAreWrittenAndExternalIdsStillLinkOps) {
  TempDir dir;
  std::vector<std::vector<trace::Record>> run = testing::SyntheticRun();
  std::size_t dropped = 0;
  for (std::vector<trace::Record>& batch : run) {
    dropped += std::erase_if(
        batch, [](const trace::Record& r) { return std::holds_alternative<trace::ApiCall>(r); });
  }
  ASSERT_EQ(dropped, 4u);
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), std::move(run));
  ASSERT_FALSE(db.empty());
  TempDir full_dir;
  const std::string full =
      testing::WriteProfile(testing::TestOptions(full_dir.path()), testing::SyntheticRun());
  EXPECT_EQ(QueryOne(db, "SELECT COUNT(*) FROM TASK"), QueryOne(full, "SELECT COUNT(*) FROM TASK"));
  EXPECT_EQ(QueryOne(db, "SELECT COUNT(*) FROM COMPUTE_TASK_INFO"),
            QueryOne(full, "SELECT COUNT(*) FROM COMPUTE_TASK_INFO"));
  EXPECT_THAT(
      Query(db,
            "SELECT op.value, tt.value FROM TASK "
            "JOIN CONNECTION_IDS ON TASK.connectionId = CONNECTION_IDS.connectionId "
            "JOIN PYTORCH_API ON CONNECTION_IDS.id = PYTORCH_API.connectionId "
            "JOIN STRING_IDS op ON op.id = PYTORCH_API.name JOIN STRING_IDS tt ON tt.id = TASK.taskType"),
      ::testing::Contains("aten::linear|MEMCPY_ASYNC"));
}

// msprof-analyze's compute_op_sum groups kernels by STRING_IDS(COMPUTE_TASK_INFO.inputShapes)
// (prof_exports/compute_op_sum_export.py) and its advisor counts STRING_IDS(opState) = 'static'
// (advisor/common/profiling/op_summary.py): a kernel carries the shapes and dtypes of the innermost
// op that launched it, a kernel of an op without shapes carries '', and no column is NULL.
TEST(ProfileWriterKernelOpColumnsTest, KernelsCarryTheirOpsShapesAndNoStringColumnIsNull) {
  TempDir dir;
  std::vector<std::vector<trace::Record>> run = testing::SyntheticRun();
  for (std::vector<trace::Record>& batch : run) {
    for (trace::Record& record : batch) {
      auto* op = std::get_if<trace::TorchOp>(&record);
      if (op != nullptr && op->name == "aten::mm") {  // inside aten::linear, whose shapes differ
        op->input_shapes = "8,16;\r\n16,32;\r\n8,32";
        op->input_dtypes = "float;\r\nfloat;\r\nfloat";
      }
    }
  }
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), std::move(run));
  ASSERT_FALSE(db.empty());
  auto value = [](const std::string& column) {
    return "(SELECT quote(value) FROM STRING_IDS WHERE id = c." + column + ")";
  };
  EXPECT_THAT(
      Query(db, "SELECT k.value, " + value("inputShapes") + ", " + value("inputDataTypes") + ", " +
                    value("opState") +
                    " FROM COMPUTE_TASK_INFO c JOIN STRING_IDS k ON k.id = c.name ORDER BY c.globalTaskId"),
      ElementsAre(
          "void gemm_kernel<float>(float*, int)|'8,16;\r\n16,32;\r\n8,32'|'float;\r\nfloat;\r\nfloat'|"
          "'static'",
          "bwd_kernel|''|''|'static'"));
  for (const char* column : {"inputFormats", "inputDataTypes", "inputShapes", "outputFormats",
                             "outputDataTypes", "outputShapes", "attrInfo", "opState", "hf32Eligible"}) {
    EXPECT_EQ(
        QueryOne(db, std::string("SELECT COUNT(*) FROM COMPUTE_TASK_INFO c WHERE NOT EXISTS (SELECT 1 FROM "
                                 "STRING_IDS s WHERE s.id = c.") +
                         column + ")"),
        "0")
        << column << " without a STRING_IDS row";
  }
  // compute_op_sum's own query keeps every kernel (an inner join on the shapes drops none).
  EXPECT_EQ(
      QueryOne(db,
               "SELECT COUNT(*) FROM COMPUTE_TASK_INFO JOIN TASK ON TASK.globalTaskId = "
               "COMPUTE_TASK_INFO.globalTaskId JOIN STRING_IDS s ON s.id = COMPUTE_TASK_INFO.inputShapes"),
      "2");
}

// Device-linked mstx ranges (writer_mstx_device.cc): a range's device time is that of the device
// work its thread launched inside it (on its stream, when one was given), one TASK row each that
// msprof-analyze's mstx_sum joins through MSTX_EVENTS.connectionId; a host-only range, and a
// device-linked one whose thread launched nothing inside it, keep 4294967295.
TEST(ProfileWriterDeviceRangesTest, ADeviceLinkedRangeJoinsTheSpanOfItsLaunchesDeviceWork) {
  TempDir dir;
  std::vector<trace::Record> records;
  auto launch = [&records](std::uint32_t tid, std::int64_t at, std::uint64_t corr, std::uint32_t stream,
                           std::int64_t start, std::int64_t end) {
    trace::ApiCall call;
    call.name = "cudaLaunchKernel";
    call.pid = 100;
    call.tid = tid;
    call.start_ns = at;
    call.end_ns = at + 10;
    call.correlation_id = corr;
    call.launches_device_work = true;
    records.emplace_back(call);
    trace::DeviceTask task;
    task.start_ns = start;
    task.end_ns = end;
    task.stream = stream;
    task.context = 1;
    task.correlation_id = corr;
    task.pid = 100;
    task.name = "k" + std::to_string(corr);
    records.emplace_back(task);
  };
  launch(201, 100, 21, 1, 1000, 1100);
  launch(201, 200, 22, 2, 1050, 1300);
  launch(201, 300, 23, 1, 1200, 1400);
  launch(201, 600, 24, 1, 2000, 2100);  // after the ranges
  launch(202, 250, 25, 1, 1500, 1600);  // another thread
  auto range = [&records](std::string message, std::int64_t start, std::int64_t end, bool device,
                          std::optional<std::uint32_t> stream, std::string domain = "default") {
    trace::Mark mark;
    mark.type = trace::Mark::Type::kStartEnd;
    mark.start_ns = start;
    mark.end_ns = end;
    mark.pid = 100;
    mark.tid = mark.end_tid = 201;
    mark.range_id = records.size();
    mark.message = std::move(message);
    mark.domain = std::move(domain);
    mark.device = device;
    mark.stream = stream;
    records.emplace_back(mark);
  };
  range("any_stream", 50, 400, true, std::nullopt, "train");
  range("stream_2", 50, 400, true, 2);
  range("launched_nothing", 450, 500, true, std::nullopt);
  range("host_only", 50, 400, false, std::nullopt);
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {std::move(records)});
  ASSERT_FALSE(db.empty());
  // mstx_sum's range query (prof_exports/mstx_event_export.py RANGE_QUERY_TEMPLATE, with TASK).
  EXPECT_THAT(Query(db,
                    "SELECT MSG_IDS.value, MSTX_EVENTS.startNs, MSTX_EVENTS.endNs, TASK.startNs, TASK.endNs "
                    "FROM MSTX_EVENTS LEFT JOIN TASK ON MSTX_EVENTS.connectionId = TASK.connectionId "
                    "LEFT JOIN STRING_IDS AS MSG_IDS ON MSTX_EVENTS.message = MSG_IDS.id "
                    "WHERE MSTX_EVENTS.eventType = 2 AND MSTX_EVENTS.connectionId != 4294967295 "
                    "ORDER BY MSG_IDS.value"),
              ElementsAre("any_stream|50|400|1000|1400", "stream_2|50|400|1050|1300"));
  EXPECT_THAT(Query(db,
                    "SELECT s.value FROM MSTX_EVENTS x JOIN STRING_IDS s ON s.id = x.message "
                    "WHERE x.connectionId = 4294967295 ORDER BY s.value"),
              ElementsAre("host_only", "launched_nothing"));
  // The domain is kept; each device range is one task of its own type, on its stream, with a
  // global task id of its own and no kernel row; the kernels are untouched.
  EXPECT_THAT(Query(db,
                    "SELECT m.value, d.value, tt.value, t.streamId, t.globalTaskId > 4, "
                    "t.globalTaskId IN (SELECT globalTaskId FROM COMPUTE_TASK_INFO) FROM MSTX_EVENTS x "
                    "JOIN STRING_IDS m ON m.id = x.message JOIN STRING_IDS d ON d.id = x.domainId "
                    "JOIN TASK t ON t.connectionId = x.connectionId JOIN STRING_IDS tt ON tt.id = t.taskType "
                    "ORDER BY m.value"),
              ElementsAre("any_stream|train|MSTX_RANGE|1|1|0", "stream_2|default|MSTX_RANGE|2|1|0"));
  EXPECT_EQ(QueryOne(db, "SELECT COUNT(DISTINCT globalTaskId) || '/' || COUNT(*) FROM TASK"), "7/7");
  EXPECT_EQ(QueryOne(db, "SELECT COUNT(*) FROM COMPUTE_TASK_INFO"), "5");
}

}  // namespace
}  // namespace gpuprof::db
