// The written schema against DB_SPEC.md "Exact DDL": the DDL is copied below verbatim and run into
// a reference DB; every table's PRAGMA table_info must match it column for column (name, declared
// type, primary key). Plus the enum rows, META_DATA, the format rules (rowid tables, no foreign
// keys, user_version 0), the indexes, and ../shared/tools/schema_check.py on a written file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "db/profile_writer.h"
#include "db/schema.h"
#include "writer_test_util.h"

namespace gpuprof::db {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;
using testing::Query;
using testing::QueryOne;
using testing::TempDir;

// DB_SPEC.md "Exact DDL", verbatim.
constexpr const char* kSpecDdl = R"sql(
-- shared / metadata (msprof_db.cpp)
CREATE TABLE IF NOT EXISTS STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS META_DATA (name TEXT, value TEXT);
CREATE TABLE IF NOT EXISTS SESSION_TIME_INFO (startTimeNs INTEGER, endTimeNs INTEGER);
CREATE TABLE IF NOT EXISTS NPU_INFO (id INTEGER, name TEXT);
CREATE TABLE IF NOT EXISTS RANK_DEVICE_MAP (rankId INTEGER, deviceId INTEGER);
CREATE TABLE IF NOT EXISTS HOST_INFO (hostUid TEXT, hostName TEXT);

-- enums (msprof ENUM_TABLE_COLS)
CREATE TABLE IF NOT EXISTS ENUM_API_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_MSTX_EVENT_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_MEMCPY_OPERATION (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_HCCL_DATA_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_HCCL_LINK_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_HCCL_TRANSPORT_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_HCCL_RDMA_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_MODULE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE IF NOT EXISTS ENUM_OVERLAP_ANALYSIS_TYPE (id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO ENUM_API_TYPE VALUES (20000,'acl'),(15000,'model'),(10000,'node'),(5500,'communication'),(5000,'runtime'),
                                 (50001,'op'),(50002,'queue'),(50003,'trace'),(50004,'mstx');
INSERT INTO ENUM_MSTX_EVENT_TYPE VALUES (0,'marker'),(1,'push/pop'),(2,'start/end'),(3,'marker_ex');
INSERT INTO ENUM_MEMCPY_OPERATION VALUES (0,'host to host'),(1,'host to device'),(2,'device to host'),(3,'device to device'),
  (4,'managed memory'),(5,'addr device to device'),(6,'host to device ex'),(7,'device to host ex'),(65535,'other');
INSERT INTO ENUM_OVERLAP_ANALYSIS_TYPE VALUES (0,'COMPUTE'),(1,'COMMUNICATION'),(2,'COMM_NOT_OVERLAP_COMP'),(3,'FREE'),(65535,'RESERVE');
INSERT INTO META_DATA VALUES ('SCHEMA_VERSION','1.2.0'),('SCHEMA_VERSION_MAJOR','1'),('SCHEMA_VERSION_MINOR','2'),('SCHEMA_VERSION_MICRO','0');

-- device side (msprof_db.cpp)
CREATE TABLE IF NOT EXISTS CANN_API (startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER, connectionId INTEGER PRIMARY KEY, name INTEGER);
CREATE TABLE IF NOT EXISTS TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId INTEGER);
CREATE INDEX IF NOT EXISTS TaskIndex ON TASK (startNs, globalTaskId);
CREATE TABLE IF NOT EXISTS COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockNum INTEGER, mixBlockNum INTEGER, taskType INTEGER, opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER, inputShapes INTEGER, outputFormats INTEGER, outputDataTypes INTEGER, outputShapes INTEGER, attrInfo INTEGER, opState INTEGER, hf32Eligible INTEGER, gridDim INTEGER, blockDim INTEGER);
CREATE TABLE IF NOT EXISTS COMMUNICATION_OP (opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER, groupName INTEGER, opId INTEGER PRIMARY KEY, relay INTEGER, retry INTEGER, dataType INTEGER, algType INTEGER, count NUMERIC, opType INTEGER, deviceId INTEGER, rankSize INTEGER);
CREATE TABLE IF NOT EXISTS COMMUNICATION_TASK_INFO (name INTEGER, globalTaskId INTEGER, taskType INTEGER, planeId INTEGER, groupName INTEGER, notifyId INTEGER, rdmaType INTEGER, srcRank INTEGER, dstRank INTEGER, transportType INTEGER, size INTEGER, dataType INTEGER, linkType INTEGER, opId INTEGER, isMaster INTEGER, bandwidth NUMERIC);
CREATE INDEX IF NOT EXISTS CommunicationTaskIndex ON COMMUNICATION_TASK_INFO (globalTaskId);
CREATE TABLE IF NOT EXISTS MSTX_EVENTS (startNs INTEGER, endNs INTEGER, eventType INTEGER, rangeId INTEGER, category INTEGER, message INTEGER, globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER, connectionId INTEGER);
CREATE TABLE IF NOT EXISTS MEMCPY_INFO (globalTaskId NUMERIC, size NUMERIC, memcpyOperation NUMERIC);
-- optional device tables (only if collected; exact columns in msprof_db.cpp):
CREATE TABLE IF NOT EXISTS NPU_MEM (type INTEGER, ddr NUMERIC, hbm NUMERIC, timestampNs INTEGER, deviceId INTEGER);
CREATE TABLE IF NOT EXISTS TASK_PMU_INFO (globalTaskId INTEGER, name INTEGER, value NUMERIC);
CREATE TABLE IF NOT EXISTS AICORE_FREQ (deviceId INTEGER, timestampNs NUMERIC, freq INTEGER, dieId NUMERIC);
CREATE TABLE IF NOT EXISTS OSRT_API (name NUMERIC, globalTid NUMERIC, startNs NUMERIC, endNs NUMERIC);
CREATE TABLE IF NOT EXISTS OVERLAP_ANALYSIS (id INTEGER PRIMARY KEY, deviceId INTEGER, startNs NUMERIC, endNs NUMERIC, type INTEGER);

-- framework side (torch_npu TableColumnsManager column order; startNs/endNs INTEGER as the seed documents)
CREATE TABLE IF NOT EXISTS PYTORCH_API (startNs INTEGER, endNs INTEGER, globalTid INTEGER, connectionId INTEGER, name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, callchainId INTEGER, type INTEGER);
CREATE TABLE IF NOT EXISTS CONNECTION_IDS (id INTEGER, connectionId INTEGER);
CREATE TABLE IF NOT EXISTS PYTORCH_CALLCHAINS (id INTEGER, stack INTEGER, stackDepth INTEGER);
CREATE TABLE IF NOT EXISTS MEMORY_RECORD (component INTEGER, timestamp INTEGER, totalAllocated INTEGER, totalReserved INTEGER, totalActive INTEGER, streamPtr INTEGER, deviceId INTEGER);
CREATE TABLE IF NOT EXISTS OP_MEMORY (name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER, activeReleaseTime INTEGER, duration INTEGER, activeDuration INTEGER, allocationTotalAllocated INTEGER, allocationTotalReserved INTEGER, allocationTotalActive INTEGER, releaseTotalAllocated INTEGER, releaseTotalReserved INTEGER, releaseTotalActive INTEGER, streamPtr INTEGER, deviceId INTEGER);
CREATE TABLE IF NOT EXISTS STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER);
CREATE TABLE IF NOT EXISTS GC_RECORD (startNs INTEGER, endNs INTEGER, globalTid INTEGER);
)sql";

// Created only when that data is collected (DB_SPEC: "optional device tables"); gpuprof collects none.
const std::set<std::string> kOptionalTables = {"NPU_MEM", "TASK_PMU_INFO", "AICORE_FREQ", "OSRT_API",
                                               "OVERLAP_ANALYSIS"};

class ProfileWriterSchemaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    suite_dir = new TempDir();
    suite_spec_db = new std::string(suite_dir->path() + "/spec.db");
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(suite_spec_db->c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    ASSERT_EQ(sqlite3_exec(db, kSpecDdl, nullptr, nullptr, &error), SQLITE_OK) << error;
    sqlite3_close(db);
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

TEST_F(ProfileWriterSchemaTest, GpuprofTablesColumns) {
  EXPECT_THAT(
      Query(*suite_db,
            "SELECT name || ' ' || type || ' ' || pk FROM pragma_table_info('GPUPROF_REPLAY_KERNEL')"),
      ElementsAre("id INTEGER 1", "timestampNs INTEGER 0", "globalTid INTEGER 0", "deviceId INTEGER 0",
                  "name INTEGER 0", "connectionId INTEGER 0", "launchIndex INTEGER 0", "replayed INTEGER 0",
                  "declineReason TEXT 0", "declineDetail TEXT 0", "restoreMode TEXT 0", "passes INTEGER 0",
                  "deterministic INTEGER 0", "snapshotRegions INTEGER 0", "snapshotBytes INTEGER 0",
                  "snapshotNs INTEGER 0", "untrackedWritableBytes INTEGER 0",
                  "snapshotDeviceBytes INTEGER 0"));
  EXPECT_THAT(Query(*suite_db, "SELECT name || ' ' || type FROM pragma_table_info('GPUPROF_REPLAY_PASS')"),
              ElementsAre("kernelId INTEGER", "pass INTEGER", "startNs INTEGER", "durationNs INTEGER",
                          "smClockBeforeKhz INTEGER", "smClockAfterKhz INTEGER", "bytesRestored INTEGER",
                          "regionsRestored INTEGER", "dirtyChunks INTEGER", "outputHash INTEGER",
                          "matchesPass1 INTEGER"));
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
