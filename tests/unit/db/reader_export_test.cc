// JSON escaping and timestamp formatting, and the Perfetto export of fixture DBs parsed back with a
// strict JSON parser: every op, task, flow pair, counter and track name is where it should be.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/json.h"
#include "db/perfetto_export.h"
#include "unit/db/fixture_db.h"
#include "unit/db/mini_json.h"

namespace gpuprof::db {
namespace {

namespace fs = std::filesystem;
using fixture::JsonValue;
using ::testing::HasSubstr;

std::string Json(std::string_view text) {
  std::string out;
  base::AppendJsonString(&out, text);
  return out;
}

std::string Micros(std::int64_t ns) {
  std::string out;
  AppendMicros(&out, ns);
  return out;
}

// The escaper itself is tested in tests/unit/base/json_test.cc; here its output for every byte
// goes through the strict parser the export tests use.
TEST(JsonEscapeTest, OutputAlwaysParses) {
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte.push_back(static_cast<char>(c));
  StatusOr<JsonValue> parsed = fixture::ParseJson(Json(every_byte));
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->text.substr(0, 128), every_byte.substr(0, 128));
}

TEST(AppendMicrosTest, ThreeDecimalsExactForAnyNanosecondCount) {
  EXPECT_EQ(Micros(0), "0.000");
  EXPECT_EQ(Micros(1), "0.001");
  EXPECT_EQ(Micros(999), "0.999");
  EXPECT_EQ(Micros(1000), "1.000");
  EXPECT_EQ(Micros(123456789), "123456.789");
  EXPECT_EQ(Micros(-1500), "-1.500");
  EXPECT_EQ(Micros(1'700'000'000'123'456'789), "1700000000123456.789");
  EXPECT_EQ(Micros(INT64_MIN), "-9223372036854775.808");
}

class PerfettoExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fixture::MakeTempDir("gpuprof_export");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::string ReadFile(const std::string& path) { return fixture::ReadFileBytes(path); }

  // Exports `dbs` and parses the result; the events are returned.
  std::vector<JsonValue> ExportAndParse(const std::vector<ProfileDbFile>& dbs,
                                        ExportSummary* summary = nullptr) {
    const std::string out = dir_ + "/trace.json";
    StatusOr<ExportSummary> result = ExportPerfettoTrace(dbs, out);
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (!result.ok()) return {};
    if (summary != nullptr) *summary = *result;
    const std::string text = ReadFile(out);
    EXPECT_EQ(text.size(), result->bytes);
    StatusOr<JsonValue> parsed = fixture::ParseJson(text);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    if (!parsed.ok()) return {};
    root_ = *parsed;
    EXPECT_EQ(root_.Str("displayTimeUnit"), "ns");
    const JsonValue* events = root_.Find("traceEvents");
    EXPECT_TRUE(events != nullptr && events->type == JsonValue::Type::kArray);
    return events != nullptr ? events->array : std::vector<JsonValue>{};
  }

  static std::vector<const JsonValue*> Select(const std::vector<JsonValue>& events, const std::string& ph,
                                              const std::string& cat = "") {
    std::vector<const JsonValue*> out;
    for (const JsonValue& event : events) {
      if (event.Str("ph") == ph && (cat.empty() || event.Str("cat") == cat)) out.push_back(&event);
    }
    return out;
  }

  std::string dir_;
  JsonValue root_;
};

TEST_F(PerfettoExportTest, EveryOpTaskFlowCounterAndTrackIsThere) {
  const std::string db = dir_ + "/ascend_pytorch_profiler_0.db";
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  ExportSummary summary;
  std::vector<JsonValue> events = ExportAndParse({{db, 0}}, &summary);
  ASSERT_FALSE(events.empty());

  // The time base: the session start floored to a second, written to otherData.
  const fixture::FixtureOptions fixture;
  const std::int64_t base = fixture.base_ns - fixture.base_ns % 1'000'000'000;
  EXPECT_EQ(summary.time_base_ns, base);
  ASSERT_NE(root_.Find("otherData"), nullptr);
  EXPECT_EQ(root_.Find("otherData")->NumText("gpuprof_time_base_ns"), std::to_string(base));

  std::vector<const JsonValue*> ops = Select(events, "X", "cpu_op");
  ASSERT_EQ(ops.size(), static_cast<std::size_t>(fixture::kFixtureOps));
  std::set<std::string> op_names;
  for (const JsonValue* op : ops) op_names.insert(op->Str("name"));
  EXPECT_TRUE(op_names.count("aten::linear"));
  EXPECT_TRUE(op_names.count("AddmmBackward0"));
  // Invalid UTF-8 became U+FFFD; everything else in the name survived the round trip.
  EXPECT_TRUE(op_names.count("weird \"op\"\\\t\x01\xEF\xBF\xBD"));
  // ns-exact microseconds: ProfilerStep#1 starts at base_ns + 0 µs.
  const JsonValue* step = nullptr;
  for (const JsonValue* op : ops) {
    if (op->Str("name") == "ProfilerStep#1") step = op;
    if (op->Str("name") == "aten::linear") {
      ASSERT_NE(op->Find("args"), nullptr);
      // As torch's Chrome trace: [[8, 16], [16, 32]], not the DB's "8,16;\r\n16,32".
      const JsonValue* dims = op->Find("args")->Find("Input Dims");
      ASSERT_NE(dims, nullptr);
      ASSERT_EQ(dims->array.size(), 2u);
      EXPECT_EQ(dims->array[0].array[1].text, "16");
      EXPECT_EQ(op->Find("args")->Num("Sequence number"), 7);
    }
  }
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->NumText("ts"), "123456.789");
  EXPECT_EQ(step->NumText("dur"), "1000.000");

  std::vector<const JsonValue*> kernels = Select(events, "X", "kernel");
  EXPECT_EQ(kernels.size(), static_cast<std::size_t>(fixture::kFixtureKernels));
  for (const JsonValue* kernel : kernels) {
    ASSERT_NE(kernel->Find("args"), nullptr);
    EXPECT_EQ(kernel->Find("args")->Str("grid"), "128,1,1");  // STRING_IDS resolved
    EXPECT_EQ(kernel->Find("args")->Str("block"), "256,1,1");
  }
  std::set<std::string> hashes;
  for (const JsonValue* pass : Select(events, "X", "gpuprof_replay")) {
    if (pass->Find("args") != nullptr) hashes.insert(pass->Find("args")->Str("output hash"));
  }
  EXPECT_TRUE(hashes.count("0xffffffffffffcccd"));  // the signed column holds the u64's bits
  EXPECT_TRUE(hashes.count(""));                    // the declined launch's pass has no hash
  std::vector<const JsonValue*> copies = Select(events, "X", "gpu_memcpy");
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0]->Str("name"), "MEMCPY_ASYNC (host to device)");
  EXPECT_EQ(Select(events, "X", "cuda_runtime").size(),
            static_cast<std::size_t>(fixture::kFixtureRuntimeCalls));
  EXPECT_EQ(Select(events, "X", "gc").size(), static_cast<std::size_t>(fixture::kFixtureGcPauses));
  EXPECT_EQ(Select(events, "X", "gpuprof_replay").size(),
            static_cast<std::size_t>(fixture::kFixtureReplayPasses));
  EXPECT_EQ(Select(events, "i", "gpuprof_replay").size(), 1u);  // the declined launch
  EXPECT_EQ(Select(events, "C", "memory").size(), static_cast<std::size_t>(fixture::kFixtureMemoryRecords));
  EXPECT_EQ(Select(events, "i", "mstx").size(), static_cast<std::size_t>(fixture::kFixtureMstxMarkers));
  EXPECT_EQ(Select(events, "b", "mstx").size(), static_cast<std::size_t>(fixture::kFixtureMstxRanges));
  EXPECT_EQ(Select(events, "e", "mstx").size(), static_cast<std::size_t>(fixture::kFixtureMstxRanges));

  // Flows: each start has exactly one finish with the same id and category, finishes bind to
  // the enclosing slice, and op->kernel flows start on a host thread and end on a stream.
  std::map<std::pair<std::string, std::string>, std::pair<int, int>>
      flows;  // (cat, id) -> (starts, finishes)
  for (const JsonValue* start : Select(events, "s")) ++flows[{start->Str("cat"), start->NumText("id")}].first;
  for (const JsonValue* finish : Select(events, "f")) {
    ++flows[{finish->Str("cat"), finish->NumText("id")}].second;
    EXPECT_EQ(finish->Str("bp"), "e");
  }
  EXPECT_EQ(flows.size(), static_cast<std::size_t>(fixture::kFixtureTaskFlows + fixture::kFixtureOpFlows));
  int task_flows = 0, fwdbwd_flows = 0;
  for (const auto& [key, counts] : flows) {
    EXPECT_EQ(counts, std::make_pair(1, 1)) << key.first << " " << key.second;
    task_flows += key.first == "ac2g";
    fwdbwd_flows += key.first == "fwdbwd";
  }
  EXPECT_EQ(task_flows, fixture::kFixtureTaskFlows);
  EXPECT_EQ(fwdbwd_flows, fixture::kFixtureOpFlows);
  EXPECT_EQ(summary.flows, static_cast<std::uint64_t>(fixture::kFixtureTaskFlows + fixture::kFixtureOpFlows));

  // Tracks: a host process named after the rank and pid, a device process, stream threads.
  std::set<std::string> process_names, thread_names;
  for (const JsonValue* meta : Select(events, "M")) {
    const JsonValue* args = meta->Find("args");
    ASSERT_NE(args, nullptr);
    if (meta->Str("name") == "process_name") process_names.insert(args->Str("name"));
    if (meta->Str("name") == "thread_name") thread_names.insert(args->Str("name"));
  }
  EXPECT_TRUE(process_names.count("rank 0 pid 4242 (fixture-host)"));
  EXPECT_TRUE(process_names.count("rank 0 device 0 (Fixture GPU)"));
  EXPECT_TRUE(thread_names.count("stream 7"));
  EXPECT_TRUE(thread_names.count("stream 13"));
  EXPECT_TRUE(thread_names.count("MainThread"));  // the Python process's main thread (tid == pid)
  EXPECT_TRUE(thread_names.count("thread 4243"));
  EXPECT_TRUE(thread_names.count("Python GC"));
  EXPECT_TRUE(thread_names.count("gpuprof replay"));
  EXPECT_TRUE(summary.notes.empty());
}

// The launch's hardware counters on its kernel slice (TASK, joined by connectionId) and on its
// first replay pass; a launch without counters carries its counterStatus instead.
TEST_F(PerfettoExportTest, ReplayedKernelSlicesCarryTheirMetricsAndCounterStatus) {
  const std::string db = dir_ + "/ascend_pytorch_profiler_0.db";
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  std::vector<JsonValue> events = ExportAndParse({{db, 0}});
  ASSERT_FALSE(events.empty());
  auto slice = [&](const std::string& cat, const std::string& name) -> const JsonValue* {
    for (const JsonValue* event : Select(events, "X", cat)) {
      if (event->Str("name") == name) return event;
    }
    return nullptr;
  };
  for (const JsonValue* gemm :
       {slice("kernel", "gemm_kernel<float>"), slice("gpuprof_replay", "gemm_kernel<float> [pass 1]")}) {
    ASSERT_NE(gemm, nullptr);
    const JsonValue* metrics = gemm->Find("args")->Find("metrics");
    ASSERT_NE(metrics, nullptr);
    EXPECT_EQ(metrics->object.size(), static_cast<std::size_t>(fixture::kFixtureReplayMetrics));
    EXPECT_EQ(metrics->NumText("dram__bytes_read.sum (byte)"), "1048576");
    EXPECT_EQ(metrics->NumText("sm__throughput.avg.pct_of_peak_sustained_elapsed (percent)"), "61.25");
    EXPECT_EQ(metrics->NumText("launch__grid_size"), "128");  // no unit, no suffix
    EXPECT_EQ(gemm->Find("args")->Find("counter status"), nullptr);
  }
  const JsonValue* later_pass = slice("gpuprof_replay", "gemm_kernel<float> [pass 2]");
  ASSERT_NE(later_pass, nullptr);
  EXPECT_EQ(later_pass->Find("args")->Find("metrics"), nullptr);  // once per launch
  for (const JsonValue* bwd :
       {slice("kernel", "gemm_bwd_kernel"), slice("gpuprof_replay", "gemm_bwd_kernel [pass 1]")}) {
    ASSERT_NE(bwd, nullptr);
    EXPECT_EQ(bwd->Find("args")->Str("counter status"), fixture::kFixtureCounterStatus);
    EXPECT_EQ(bwd->Find("args")->Find("metrics"), nullptr);
  }
  // Kernels that were not replayed get neither.
  for (const JsonValue* kernel : Select(events, "X", "kernel")) {
    if (kernel->Str("name") != "relu_kernel") continue;
    EXPECT_EQ(kernel->Find("args")->Find("metrics"), nullptr);
    EXPECT_EQ(kernel->Find("args")->Find("counter status"), nullptr);
  }
}

TEST_F(PerfettoExportTest, DbWrittenBeforeCountersExportsAsBefore) {
  const std::string db = dir_ + "/ascend_pytorch_profiler_0.db";
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  ASSERT_TRUE(fixture::ExecSql(db, fixture::kFixtureBeforeCountersSql).ok());
  ExportSummary summary;
  std::vector<JsonValue> events = ExportAndParse({{db, 0}}, &summary);
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(summary.notes.empty());
  EXPECT_EQ(Select(events, "X", "gpuprof_replay").size(),
            static_cast<std::size_t>(fixture::kFixtureReplayPasses));
  for (const JsonValue* event : Select(events, "X")) {
    if (event->Find("args") == nullptr) continue;  // GC pauses have none
    EXPECT_EQ(event->Find("args")->Find("metrics"), nullptr);
    EXPECT_EQ(event->Find("args")->Find("counter status"), nullptr);
  }
}

TEST_F(PerfettoExportTest, RanksBecomeSeparateProcessesEvenWithTheSamePid) {
  fixture::FixtureOptions rank1;
  rank1.rank = 1;
  StatusOr<std::string> db0 = fixture::WriteFixtureRun(dir_, "node_a");
  StatusOr<std::string> db1 = fixture::WriteFixtureRun(dir_, "node_b", rank1);  // same pid 4242
  ASSERT_TRUE(db0.ok() && db1.ok());
  std::vector<JsonValue> events = ExportAndParse({{*db0, 0}, {*db1, 1}});
  std::map<std::string, double> pid_of;
  for (const JsonValue* meta : Select(events, "M")) {
    if (meta->Str("name") == "process_name") pid_of[meta->Find("args")->Str("name")] = meta->Num("pid");
  }
  ASSERT_TRUE(pid_of.count("rank 0 pid 4242 (fixture-host)"));
  ASSERT_TRUE(pid_of.count("rank 1 pid 4242 (fixture-host)"));
  EXPECT_NE(pid_of["rank 0 pid 4242 (fixture-host)"], pid_of["rank 1 pid 4242 (fixture-host)"]);
  EXPECT_EQ(pid_of.size(), 4u);  // host and device per rank
  EXPECT_EQ(Select(events, "X", "cpu_op").size(), 2u * fixture::kFixtureOps);
}

TEST_F(PerfettoExportTest, EmptyAndMissingTablesStillGiveAValidTrace) {
  fixture::FixtureOptions empty;
  empty.with_rows = false;
  empty.with_replay_tables = false;
  const std::string db = dir_ + "/empty.db";
  ASSERT_TRUE(fixture::WriteFixtureDb(db, empty).ok());
  ASSERT_TRUE(fixture::ExecSql(db, "DROP TABLE MSTX_EVENTS; DROP TABLE GC_RECORD;").ok());
  ExportSummary summary;
  std::vector<JsonValue> events = ExportAndParse({{db, std::nullopt}}, &summary);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(summary.slices, 0u);
  ASSERT_EQ(summary.notes.size(), 2u);
  EXPECT_THAT(summary.notes[0], HasSubstr("MSTX_EVENTS is absent"));
  EXPECT_THAT(summary.notes[1], HasSubstr("GC_RECORD is absent"));
}

TEST_F(PerfettoExportTest, FailedExportLeavesTheTargetUntouchedAndNoTemporaryFile) {
  const std::string db = dir_ + "/profile.db";
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  // A GC_RECORD whose rows fail while being read (integer overflow in abs()), after the ops,
  // tasks and flows have been written.
  ASSERT_TRUE(fixture::ExecSql(db,
                               "DROP TABLE GC_RECORD; CREATE VIEW GC_RECORD AS SELECT 1 AS startNs, "
                               "abs(-9223372036854775807 - 1) AS endNs, 1 AS globalTid;")
                  .ok());
  const std::string out = dir_ + "/trace.json";
  ASSERT_TRUE(fixture::WriteFileBytes(out, "previous trace"));
  StatusOr<ExportSummary> result = ExportPerfettoTrace({{db, std::nullopt}}, out);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("integer overflow"));
  EXPECT_EQ(ReadFile(out), "previous trace");
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

TEST_F(PerfettoExportTest, OutputInAMissingDirectoryIsAClearError) {
  const std::string db = dir_ + "/profile.db";
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  StatusOr<ExportSummary> result =
      ExportPerfettoTrace({{db, std::nullopt}}, dir_ + "/no/such/dir/trace.json");
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("cannot create the output file"));
  EXPECT_THAT(result.status().message(), HasSubstr("does its directory exist?"));
}

TEST_F(PerfettoExportTest, BadInputFailsBeforeAnyFileIsCreated) {
  const std::string bad = dir_ + "/bad.db";
  ASSERT_TRUE(fixture::WriteFileBytes(bad, std::string(200, 'x')));
  const std::string out = dir_ + "/trace.json";
  StatusOr<ExportSummary> result = ExportPerfettoTrace({{bad, std::nullopt}}, out);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("not an SQLite database: " + bad));
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(PerfettoExportTest, RefusesToOverwriteItsInput) {
  const std::string db = dir_ + "/profile.db";
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  const std::string before = ReadFile(db);
  StatusOr<ExportSummary> result = ExportPerfettoTrace({{db, std::nullopt}}, dir_ + "/./profile.db");
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("is the input database"));
  EXPECT_EQ(ReadFile(db), before);
}

// A profile of `kernels` ops, each linked through CONNECTION_IDS to one kernel of its own.
std::string LinkedKernelsSql(int kernels) {
  const std::string rows = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
                           std::to_string(kernels) + ") ";
  return "INSERT INTO STRING_IDS VALUES (1, 'aten::mm'), (2, 'KERNEL'), (3, 'gemm');" + rows +
         "INSERT INTO PYTORCH_API (startNs, endNs, globalTid, connectionId, name, type) SELECT "
         "1700000000000000000 + i * 10000, 1700000000000000000 + i * 10000 + 5000, 4242, i, 1, 50001 FROM "
         "n;" +
         rows + "INSERT INTO CONNECTION_IDS SELECT i, 1000000 + i FROM n;" + rows +
         "INSERT INTO TASK (startNs, endNs, deviceId, connectionId, globalTaskId, taskType, streamId) SELECT "
         "1700000000000000000 + i * 10000 + 6000, 1700000000000000000 + i * 10000 + 9000, 0, 1000000 + i, i, "
         "2, "
         "7 FROM n;" +
         rows + "INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId) SELECT 3, i FROM n;";
}

TEST_F(PerfettoExportTest, TheWorkGrowsLinearlyWithTheKernelsLinkedToOps) {
  // The flow query scanned TASK once per op: twice the kernels took four times the work (10k rows
  // 5.9 s, 40k 75 s). SQLite's VM steps count that work whatever the machine's speed.
  fixture::FixtureOptions empty;
  empty.with_rows = false;
  std::map<int, std::uint64_t> steps;
  for (int kernels : {1000, 2000}) {
    const std::string db = dir_ + "/linked_" + std::to_string(kernels) + ".db";
    ASSERT_TRUE(fixture::WriteFixtureDb(db, empty).ok());
    ASSERT_TRUE(fixture::ExecSql(db, LinkedKernelsSql(kernels)).ok());
    ExportSummary summary;
    ExportAndParse({{db, 0}}, &summary);
    EXPECT_EQ(summary.flows, static_cast<std::uint64_t>(kernels));
    steps[kernels] = summary.sqlite_steps;
  }
  ASSERT_GT(steps[1000], 0u);
  const double growth = static_cast<double>(steps[2000]) / static_cast<double>(steps[1000]);
  EXPECT_LT(growth, 2.5) << steps[1000] << " steps for 1000 linked kernels, " << steps[2000] << " for 2000";
}

TEST(ExportFormatsTest, PerfettoIsTheFormat) {
  EXPECT_EQ(ExportFormats(), std::vector<std::string_view>{"perfetto"});
}

}  // namespace
}  // namespace gpuprof::db
