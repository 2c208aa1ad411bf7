// SideFile (src/db/side_file.h): rows written on its thread land in the main file exactly as if
// inserted there, failures stop it and name the file, and its file never outlives it.
#include "db/side_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "writer_test_util.h"

namespace gpuprof::db {
namespace {

using ::testing::ElementsAre;
using testing::Exists;
using ::testing::HasSubstr;
using testing::Query;
using testing::TempDir;

// A main file with a plain table, a keyed table that already has a row, and an indexed table.
Connection MainFile(const std::string& path) {
  auto conn = Connection::OpenForWrite(path);
  EXPECT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_TRUE(conn->Exec(kBulkWritePragmas).ok());
  EXPECT_TRUE(conn->Exec("CREATE TABLE PLAIN (a INTEGER, b TEXT);"
                         "CREATE TABLE KEYED (id INTEGER PRIMARY KEY, value TEXT);"
                         "INSERT INTO KEYED VALUES (1, 'main');"
                         "CREATE TABLE OTHER (x INTEGER)")
                  .ok());
  return std::move(conn).value();
}

Status InsertRows(const Connection& side, int first, int count) {
  for (int i = first; i < first + count; ++i) {
    GPUPROF_RETURN_IF_ERROR(
        side.Exec("INSERT INTO PLAIN VALUES (" + std::to_string(i) + ", 'row" + std::to_string(i) + "')"));
  }
  return OkStatus();
}

TEST(SideFileTest, MergedRowsLandInOrderBesideTheMainFilesRowsAndTheFileGoes) {
  TempDir dir;
  const std::string main_path = dir.path() + "/main.db";
  const std::string side_path = dir.path() + "/main.db.partial-side";
  Connection main = MainFile(main_path);
  auto side = SideFile::Create(main, side_path, {"PLAIN", "KEYED"});
  ASSERT_TRUE(side.ok()) << side.status().ToString();
  EXPECT_TRUE(Exists(side_path));
  (*side)->Post([](const Connection& c) { return InsertRows(c, 0, 2); });
  (*side)->Post([](const Connection& c) { return c.Exec("INSERT INTO KEYED VALUES (7, 'side')"); });
  (*side)->Post([](const Connection& c) { return InsertRows(c, 2, 2); });
  ASSERT_TRUE((*side)->Finish().ok());
  ASSERT_TRUE((*side)->MergeInto(main).ok());
  EXPECT_FALSE(Exists(side_path));
  ASSERT_TRUE(main.Close().ok());
  EXPECT_THAT(Query(main_path, "SELECT rowid, a, b FROM PLAIN"),
              ElementsAre("1|0|row0", "2|1|row1", "3|2|row2", "4|3|row3"));
  EXPECT_THAT(Query(main_path, "SELECT id, value FROM KEYED ORDER BY id"), ElementsAre("1|main", "7|side"));
  EXPECT_THAT(Query(main_path, "SELECT name FROM pragma_database_list"), ElementsAre("main"));
}

TEST(SideFileTest, TablesAreCreatedWithTheMainFilesDdl) {
  TempDir dir;
  Connection main = MainFile(dir.path() + "/main.db");
  const std::string side_path = dir.path() + "/side";
  auto side = SideFile::Create(main, side_path, {"KEYED"});
  ASSERT_TRUE(side.ok());
  ASSERT_TRUE((*side)->Finish().ok());
  EXPECT_THAT(Query(side_path, "SELECT sql FROM sqlite_master WHERE name = 'KEYED'"),
              ElementsAre("CREATE TABLE KEYED (id INTEGER PRIMARY KEY, value TEXT)"));
}

TEST(SideFileTest, FailedJobSkipsTheRestAndFinishNamesTheFile) {
  TempDir dir;
  Connection main = MainFile(dir.path() + "/main.db");
  const std::string side_path = dir.path() + "/side";
  std::atomic<int> later_jobs{0};
  {
    auto side = SideFile::Create(main, side_path, {"PLAIN"});
    ASSERT_TRUE(side.ok());
    (*side)->Post([](const Connection& c) { return InsertRows(c, 0, 1); });
    (*side)->Post([](const Connection&) { return DataLossError("disk went away"); });
    (*side)->Post([&later_jobs](const Connection&) {
      ++later_jobs;
      return OkStatus();
    });
    Status finished = (*side)->Finish();
    EXPECT_EQ(finished.code(), StatusCode::kDataLoss);
    EXPECT_THAT(finished.message(), HasSubstr("disk went away"));
    EXPECT_THAT(finished.message(), HasSubstr(side_path));
    EXPECT_EQ(later_jobs.load(), 0);
    EXPECT_TRUE(Exists(side_path));
  }
  EXPECT_FALSE(Exists(side_path)) << "the destructor deletes the file";
}

TEST(SideFileTest, DestroyedWithQueuedJobsStopsAndDeletesItsFile) {
  TempDir dir;
  Connection main = MainFile(dir.path() + "/main.db");
  const std::string side_path = dir.path() + "/side";
  {
    auto side = SideFile::Create(main, side_path, {"PLAIN"});
    ASSERT_TRUE(side.ok());
    for (int i = 0; i < 100; ++i) (*side)->Post([i](const Connection& c) { return InsertRows(c, i, 1); });
  }
  EXPECT_FALSE(Exists(side_path));
}

TEST(SideFileTest, UnknownTableIsNotFoundAndNamesIt) {
  TempDir dir;
  Connection main = MainFile(dir.path() + "/main.db");
  auto side = SideFile::Create(main, dir.path() + "/side", {"PLAIN", "MISSING"});
  ASSERT_FALSE(side.ok());
  EXPECT_EQ(side.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(side.status().message(), HasSubstr("MISSING"));
  EXPECT_FALSE(Exists(dir.path() + "/side"));
}

TEST(SideFileTest, MergeBeforeFinishIsRefused) {
  TempDir dir;
  Connection main = MainFile(dir.path() + "/main.db");
  auto side = SideFile::Create(main, dir.path() + "/side", {"PLAIN"});
  ASSERT_TRUE(side.ok());
  Status merged = (*side)->MergeInto(main);
  EXPECT_EQ(merged.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(merged.message(), HasSubstr("before its thread finished"));
}

TEST(SideFileTest, StaleFileOfTheSameNameIsReplaced) {
  TempDir dir;
  Connection main = MainFile(dir.path() + "/main.db");
  const std::string side_path = dir.path() + "/side";
  {
    auto stale = Connection::OpenForWrite(side_path);
    ASSERT_TRUE(stale.ok());
    ASSERT_TRUE(
        stale->Exec("CREATE TABLE PLAIN (a INTEGER, b TEXT); INSERT INTO PLAIN VALUES (99, 'old')").ok());
  }
  auto side = SideFile::Create(main, side_path, {"PLAIN"});
  ASSERT_TRUE(side.ok()) << side.status().ToString();
  (*side)->Post([](const Connection& c) { return InsertRows(c, 0, 1); });
  ASSERT_TRUE((*side)->Finish().ok());
  ASSERT_TRUE((*side)->MergeInto(main).ok());
  ASSERT_TRUE(main.Close().ok());
  EXPECT_THAT(Query(dir.path() + "/main.db", "SELECT a FROM PLAIN"), ElementsAre("0"));
}

}  // namespace
}  // namespace gpuprof::db
