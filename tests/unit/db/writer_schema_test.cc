// The written schema against src/db/schema.sql, the one DDL source, run into a reference DB: every
// table's PRAGMA table_info must match it column for column (name, declared type, primary key).
// The source itself is held to DB_SPEC.md "Exact DDL" by facts written out here by hand (key
// tables' columns and types, enum rows, SCHEMA_VERSION, indexes), so a wrong source fails too.
// Plus the format rules (rowid tables, no foreign keys, user_version 0), and
// ../shared/tools/schema_check.py on a written file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "db/profile_writer.h"
#include "db/schema.h"
#include "db/schema_sql.h"
#include "db/sqlite_util.h"
#include "writer_test_util.h"

namespace gpuprof::db {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;
using testing::Query;
using testing::QueryOne;
using testing::TempDir;

// The reference: src/db/schema.sql, the one DDL source, run into its own file. The writer's tables
// must match it column for column; SeedFactsFromDbSpec below checks, written out by hand from
// DB_SPEC.md, that the source itself says what the spec says.
std::string SpecDdl() {
  std::string ddl;
  for (SchemaPart part : {SchemaPart::kFormatTables, SchemaPart::kOptionalTables, SchemaPart::kFormatIndexes,
                          SchemaPart::kSpecRows}) {
    ddl += SchemaSql(part);
  }
  return ddl;
}

// Created only when that data is collected (DB_SPEC: "optional device tables"); gpuprof collects none.
const std::set<std::string> kOptionalTables = {"NPU_MEM", "TASK_PMU_INFO", "AICORE_FREQ", "OSRT_API",
                                               "OVERLAP_ANALYSIS"};

class ProfileWriterSchemaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    suite_dir = new TempDir();
    suite_spec_db = new std::string(suite_dir->path() + "/spec.db");
    StatusOr<Connection> spec = Connection::OpenForWrite(*suite_spec_db);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    Status made = spec->Exec(SpecDdl());
    ASSERT_TRUE(made.ok()) << made.message();
    // An empty run: every table must exist even with no rows.
    suite_db = new std::string(testing::WriteProfile(testing::TestOptions(suite_dir->path()), {}));
  }
  static void TearDownTestSuite() {
    delete suite_db;
    delete suite_spec_db;
    delete suite_dir;
  }
  static std::vector<std::string> Tables(const std::string& db) {
    return Query(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  }

  static TempDir* suite_dir;
  static std::string* suite_spec_db;
  static std::string* suite_db;
};
TempDir* ProfileWriterSchemaTest::suite_dir = nullptr;
std::string* ProfileWriterSchemaTest::suite_spec_db = nullptr;
std::string* ProfileWriterSchemaTest::suite_db = nullptr;

TEST_F(ProfileWriterSchemaTest, EveryTableMatchesTheSpecColumnForColumn) {
  std::set<std::string> ours;
  for (const std::string& table : Tables(*suite_db)) ours.insert(table);
  for (const std::string& table : Tables(*suite_spec_db)) {
    if (kOptionalTables.count(table) > 0) {
      EXPECT_EQ(ours.count(table), 0u) << table << " is optional and gpuprof collects nothing for it";
      continue;
    }
    ASSERT_EQ(ours.count(table), 1u) << "missing table " << table;
    // cid|name|type|notnull|dflt_value|pk
    EXPECT_EQ(Query(*suite_db, "PRAGMA table_info(" + table + ")"),
              Query(*suite_spec_db, "PRAGMA table_info(" + table + ")"))
        << table;
  }
  for (const std::string& table : ours) {
    bool in_spec = !Query(*suite_spec_db, "SELECT 1 FROM sqlite_master WHERE name = '" + table + "'").empty();
    EXPECT_TRUE(in_spec || table.rfind("GPUPROF_", 0) == 0)
        << table << " is neither the format's nor GPUPROF_*";
  }
}

TEST_F(ProfileWriterSchemaTest, SchemaTableNamesListsEveryCreatedTable) {
  std::vector<std::string> expected;
  for (std::string_view name : SchemaTableNames()) expected.emplace_back(name);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(Tables(*suite_db), expected);
}

// DB_SPEC.md "Exact DDL", a few facts per table written out by hand: they fail if schema.sql (and
// with it the writer, check and the fixtures) drifts from the spec.
TEST_F(ProfileWriterSchemaTest, SeedFactsFromDbSpec) {
  auto columns = [](const std::string& table) {
    return Query(*suite_db,
                 "SELECT name || ' ' || type || ' ' || pk FROM pragma_table_info('" + table + "')");
  };
  EXPECT_THAT(columns("STRING_IDS"), ElementsAre("id INTEGER 1", "value TEXT 0"));
  EXPECT_THAT(columns("META_DATA"), ElementsAre("name TEXT 0", "value TEXT 0"));
  EXPECT_THAT(columns("RANK_DEVICE_MAP"), ElementsAre("rankId INTEGER 0", "deviceId INTEGER 0"));
  EXPECT_THAT(columns("ENUM_API_TYPE"), ElementsAre("id INTEGER 1", "name TEXT 0"));
  EXPECT_THAT(columns("PYTORCH_API"),
              ElementsAre("startNs INTEGER 0", "endNs INTEGER 0", "globalTid INTEGER 0",
                          "connectionId INTEGER 0", "name INTEGER 0", "sequenceNumber INTEGER 0",
                          "fwdThreadId INTEGER 0", "inputDtypes INTEGER 0", "inputShapes INTEGER 0",
                          "callchainId INTEGER 0", "type INTEGER 0"));
  EXPECT_THAT(columns("CONNECTION_IDS"), ElementsAre("id INTEGER 0", "connectionId INTEGER 0"));
  EXPECT_THAT(columns("PYTORCH_CALLCHAINS"),
              ElementsAre("id INTEGER 0", "stack INTEGER 0", "stackDepth INTEGER 0"));
  EXPECT_THAT(columns("STEP_TIME"), ElementsAre("id INTEGER 0", "startNs INTEGER 0", "endNs INTEGER 0"));
  EXPECT_THAT(columns("CANN_API"),
              ElementsAre("startNs INTEGER 0", "endNs INTEGER 0", "type INTEGER 0", "globalTid INTEGER 0",
                          "connectionId INTEGER 1", "name INTEGER 0"));
  EXPECT_THAT(columns("TASK"), ElementsAre("startNs INTEGER 0", "endNs INTEGER 0", "deviceId INTEGER 0",
                                           "connectionId INTEGER 0", "globalTaskId INTEGER 0",
                                           "globalPid INTEGER 0", "taskType INTEGER 0", "contextId INTEGER 0",
                                           "streamId INTEGER 0", "taskId INTEGER 0", "modelId INTEGER 0"));
  EXPECT_THAT(columns("MEMCPY_INFO"),
              ElementsAre("globalTaskId NUMERIC 0", "size NUMERIC 0", "memcpyOperation NUMERIC 0"));
  EXPECT_EQ(columns("COMPUTE_TASK_INFO").size(), 17u);
  EXPECT_EQ(columns("COMPUTE_TASK_INFO")[1], "globalTaskId INTEGER 1");
  EXPECT_EQ(columns("COMMUNICATION_OP")[5], "opId INTEGER 1");
  EXPECT_EQ(columns("COMMUNICATION_OP")[10], "count NUMERIC 0");
  EXPECT_EQ(columns("OP_MEMORY").size(), 15u);
  EXPECT_EQ(columns("MEMORY_RECORD").size(), 7u);
  EXPECT_THAT(Query(*suite_db, "SELECT name FROM pragma_index_info('TaskIndex')"),
              ElementsAre("startNs", "globalTaskId"));
  EXPECT_THAT(Query(*suite_db, "SELECT name FROM pragma_index_info('CommunicationTaskIndex')"),
              ElementsAre("globalTaskId"));
  EXPECT_THAT(Query(*suite_db, "SELECT id, name FROM ENUM_API_TYPE ORDER BY id"),
              ElementsAre("5000|runtime", "5500|communication", "10000|node", "15000|model", "20000|acl",
                          "50001|op", "50002|queue", "50003|trace", "50004|mstx"));
  EXPECT_THAT(Query(*suite_db, "SELECT id, name FROM ENUM_MSTX_EVENT_TYPE ORDER BY id"),
              ElementsAre("0|marker", "1|push/pop", "2|start/end", "3|marker_ex"));
  EXPECT_EQ(QueryOne(*suite_db, "SELECT name FROM ENUM_MEMCPY_OPERATION WHERE id = 65535"), "other");
  EXPECT_EQ(QueryOne(*suite_db, "SELECT name FROM ENUM_OVERLAP_ANALYSIS_TYPE WHERE id = 2"),
            "COMM_NOT_OVERLAP_COMP");
  EXPECT_EQ(QueryOne(*suite_db, "SELECT value FROM META_DATA WHERE name = 'SCHEMA_VERSION'"), "1.2.0");
  // 29 format tables; the optional device tables are DB_SPEC's too, but not created.
  EXPECT_EQ(SchemaSqlTables(SchemaPart::kFormatTables).size(), 29u);
  EXPECT_THAT(SchemaSqlTables(SchemaPart::kOptionalTables),
              ElementsAre("NPU_MEM", "TASK_PMU_INFO", "AICORE_FREQ", "OSRT_API", "OVERLAP_ANALYSIS"));
}

TEST_F(ProfileWriterSchemaTest, GpuprofTablesColumns) {
  EXPECT_THAT(
      Query(*suite_db,
            "SELECT name || ' ' || type || ' ' || pk FROM pragma_table_info('GPUPROF_REPLAY_KERNEL')"),
      ElementsAre("id INTEGER 1", "timestampNs INTEGER 0", "globalTid INTEGER 0", "deviceId INTEGER 0",
                  "name INTEGER 0", "connectionId INTEGER 0", "launchIndex INTEGER 0", "replayed INTEGER 0",
                  "declineReason TEXT 0", "declineDetail TEXT 0", "restoreMode TEXT 0", "passes INTEGER 0",
                  "deterministic INTEGER 0", "snapshotRegions INTEGER 0", "snapshotBytes INTEGER 0",
                  "snapshotNs INTEGER 0", "untrackedWritableBytes INTEGER 0", "snapshotDeviceBytes INTEGER 0",
                  "replayNs INTEGER 0", "counterPasses INTEGER 0", "counterStatus TEXT 0",
                  "clockControl TEXT 0", "cacheControl TEXT 0", "replayMode TEXT 0", "graphId INTEGER 0",
                  "graphNodeId INTEGER 0", "graphFallback TEXT 0", "rangeId INTEGER 0",
                  "rangeLaunch INTEGER 0"));
  EXPECT_THAT(Query(*suite_db, "SELECT name || ' ' || type FROM pragma_table_info('GPUPROF_REPLAY_PASS')"),
              ElementsAre("kernelId INTEGER", "pass INTEGER", "startNs INTEGER", "durationNs INTEGER",
                          "smClockBeforeKhz INTEGER", "smClockAfterKhz INTEGER", "bytesRestored INTEGER",
                          "regionsRestored INTEGER", "dirtyChunks INTEGER", "outputHash INTEGER",
                          "matchesPass1 INTEGER"));
  EXPECT_THAT(
      Query(*suite_db, "SELECT name || ' ' || type FROM pragma_table_info('GPUPROF_REPLAY_METRIC')"),
      ElementsAre("kernelId INTEGER", "name INTEGER", "unit INTEGER", "value REAL", "passes INTEGER"));
  EXPECT_THAT(
      Query(*suite_db, "SELECT name || ' ' || type FROM pragma_table_info('GPUPROF_REPLAY_GRAPH_NODE')"),
      ElementsAre("kernelId INTEGER", "pass INTEGER", "graphNodeId INTEGER", "name INTEGER",
                  "durationNs INTEGER"));
}

TEST_F(ProfileWriterSchemaTest, IndexesMatchTheSpecAndExistAfterFinalize) {
  for (const char* index : {"TaskIndex", "CommunicationTaskIndex"}) {
    EXPECT_EQ(Query(*suite_db, std::string("PRAGMA index_info(") + index + ")"),
              Query(*suite_spec_db, std::string("PRAGMA index_info(") + index + ")"))
        << index;
    EXPECT_FALSE(Query(*suite_db, std::string("PRAGMA index_info(") + index + ")").empty()) << index;
  }
  EXPECT_THAT(Query(*suite_db, "SELECT name FROM pragma_index_info('GpuprofReplayPassIndex')"),
              ElementsAre("kernelId", "pass"));
  EXPECT_THAT(Query(*suite_db, "SELECT name FROM pragma_index_info('GpuprofReplayMetricIndex')"),
              ElementsAre("kernelId"));
  EXPECT_THAT(Query(*suite_db, "SELECT name FROM pragma_index_info('GpuprofReplayGraphNodeIndex')"),
              ElementsAre("kernelId", "pass"));
}

TEST_F(ProfileWriterSchemaTest, SpecEnumRows) {
  for (const char* table :
       {"ENUM_API_TYPE", "ENUM_MSTX_EVENT_TYPE", "ENUM_MEMCPY_OPERATION", "ENUM_OVERLAP_ANALYSIS_TYPE"}) {
    std::string sql = std::string("SELECT id, name FROM ") + table + " ORDER BY id";
    EXPECT_EQ(Query(*suite_db, sql), Query(*suite_spec_db, sql)) << table;
  }
}

// The values of MSPROF analysis/csrc/application/database/db_constant.h (65534 = "N/A").
TEST_F(ProfileWriterSchemaTest, HcclAndModuleEnumRowsFromMsprof) {
  EXPECT_THAT(
      Query(*suite_db, "SELECT id, name FROM ENUM_HCCL_DATA_TYPE ORDER BY id"),
      ElementsAre("0|INT8", "1|INT16", "2|INT32", "3|FP16", "4|FP32", "5|INT64", "6|UINT64", "7|UINT8",
                  "8|UINT16", "9|UINT32", "10|FP64", "11|BFP16", "12|INT128", "14|HIF8", "15|FP8E4M3",
                  "16|FP8E5M2", "17|FP8E8M0", "255|RESERVED", "65534|N/A", "65535|INVALID_TYPE"));
  EXPECT_THAT(Query(*suite_db, "SELECT id, name FROM ENUM_HCCL_LINK_TYPE ORDER BY id"),
              ElementsAre("0|ON_CHIP", "1|HCCS", "2|PCIE", "3|ROCE", "4|SIO", "5|HCCS_SW", "6|STANDARD_ROCE",
                          "7|UB", "8|UBoE", "255|RESERVED", "65534|N/A", "65535|INVALID_TYPE"));
  EXPECT_THAT(Query(*suite_db, "SELECT id, name FROM ENUM_HCCL_TRANSPORT_TYPE ORDER BY id"),
              ElementsAre("0|SDMA", "1|RDMA", "2|LOCAL", "3|UB", "4|ROCE", "255|RESERVED", "65534|N/A",
                          "65535|INVALID_TYPE"));
  EXPECT_THAT(Query(*suite_db, "SELECT id, name FROM ENUM_HCCL_RDMA_TYPE ORDER BY id"),
              ElementsAre("0|RDMA_SEND_NOTIFY", "1|RDMA_SEND_PAYLOAD", "255|RESERVED", "65534|N/A",
                          "65535|INVALID_TYPE"));
  EXPECT_EQ(QueryOne(*suite_db, "SELECT COUNT(*) FROM ENUM_MODULE"), "65");
  EXPECT_THAT(
      Query(*suite_db, "SELECT id, name FROM ENUM_MODULE WHERE id IN (0, 3, 7, 45, 48, 77) ORDER BY id"),
      ElementsAre("0|SLOG", "3|HCCL", "7|RUNTIME", "45|GE", "48|ASCENDCL", "77|CUSTOM"));
}

TEST_F(ProfileWriterSchemaTest, MetaDataVersionAndGpuprofRows) {
  EXPECT_THAT(
      Query(*suite_db, "SELECT name, value FROM META_DATA WHERE name LIKE 'SCHEMA_VERSION%' ORDER BY rowid"),
      ElementsAre("SCHEMA_VERSION|1.2.0", "SCHEMA_VERSION_MAJOR|1", "SCHEMA_VERSION_MINOR|2",
                  "SCHEMA_VERSION_MICRO|0"));
  EXPECT_EQ(QueryOne(*suite_db, "SELECT value FROM META_DATA WHERE name = 'gpuprof_version'"),
            GPUPROF_TEST_VERSION);
  EXPECT_EQ(QueryOne(*suite_db, "SELECT value FROM META_DATA WHERE name = 'gpuprof_config'"),
            testing::TestOptions("x").run.config_json);
}

TEST_F(ProfileWriterSchemaTest, RowidTablesNoForeignKeysUserVersionZero) {
  EXPECT_EQ(QueryOne(*suite_db, "PRAGMA user_version"), "0");
  EXPECT_THAT(Query(*suite_db, "SELECT name FROM sqlite_master WHERE sql LIKE '%WITHOUT ROWID%'"), IsEmpty());
  for (const std::string& table : Tables(*suite_db)) {
    EXPECT_THAT(Query(*suite_db, "PRAGMA foreign_key_list(" + table + ")"), IsEmpty()) << table;
  }
}

TEST_F(ProfileWriterSchemaTest, EmptyRunStillHasOneRankDeviceRowAndSessionTime) {
  EXPECT_THAT(Query(*suite_db, "SELECT rankId, deviceId FROM RANK_DEVICE_MAP"), ElementsAre("0|0"));
  EXPECT_EQ(QueryOne(*suite_db, "SELECT COUNT(*) FROM SESSION_TIME_INFO"), "1");
  EXPECT_EQ(QueryOne(*suite_db, "SELECT COUNT(*) FROM PYTORCH_API"), "0");
  EXPECT_EQ(QueryOne(*suite_db, "SELECT COUNT(*) FROM TASK"), "0");
}

TEST_F(ProfileWriterSchemaTest, UnsetRankAndDeviceAreMinusOne) {
  TempDir dir;
  WriterOptions options = testing::TestOptions(dir.path(), /*rank=*/-1);
  options.run.device = -1;
  std::string db = testing::WriteProfile(options, {});
  EXPECT_THAT(Query(db, "SELECT rankId, deviceId FROM RANK_DEVICE_MAP"), ElementsAre("-1|-1"));
  EXPECT_EQ(std::filesystem::path(db).filename(), "ascend_pytorch_profiler.db");
}

TEST_F(ProfileWriterSchemaTest, SharedSchemaCheckToolAcceptsTheFile) {
  const std::string tool = GPUPROF_SCHEMA_CHECK_PY;
  if (!std::filesystem::exists(tool)) GTEST_SKIP() << tool << " not present";
  if (std::system("command -v python3 > /dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not found";
  // The synthetic run, so the check sees filled tables too.
  TempDir dir;
  std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), testing::SyntheticRun());
  for (const std::string& path : {*suite_db, db}) {
    std::string command = "python3 '" + tool + "' '";
    command += path;
    command += "'";
    int rc = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(rc)) << rc;
    EXPECT_EQ(WEXITSTATUS(rc), 0) << "schema_check.py rejected " << path;
  }
}

}  // namespace
}  // namespace gpuprof::db
