// TaskOpLinks (db/task_op_link.h): the op each connection id links to, on hand-made link tables and
// against the consumers' SQL join on a random one.
#include "db/task_op_link.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>

#include "db/profile_reader.h"
#include "unit/db/fixture_db.h"

namespace gpuprof::db {
namespace {

class TaskOpLinksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fixture::MakeTempDir("gpuprof_task_op_link_");
    path_ = dir_ + "/ascend_pytorch_profiler_0.db";
    ASSERT_TRUE(fixture::WriteFixtureDb(path_, {.with_rows = false}).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Exec(const std::string& sql) { ASSERT_TRUE(fixture::ExecSql(path_, sql).ok()) << sql; }

  TaskOpLinks Read() {
    StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(path_);
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    StatusOr<TaskOpLinks> links = TaskOpLinks::Read(**reader);
    EXPECT_TRUE(links.ok()) << links.status().message();
    return std::move(*links);
  }

  // An op row: PYTORCH_API(startNs, globalTid, connectionId, name).
  std::string Op(const std::string& start, int tid, int index, int name) {
    return "INSERT INTO PYTORCH_API (startNs, endNs, globalTid, connectionId, name) VALUES (" + start +
           ", NULL, " + std::to_string(tid) + ", " + std::to_string(index) + ", " + std::to_string(name) +
           ");";
  }
  std::string Link(int index, int connection_id) {
    return "INSERT INTO CONNECTION_IDS (id, connectionId) VALUES (" + std::to_string(index) + ", " +
           std::to_string(connection_id) + ");";
  }

  std::string dir_;
  std::string path_;
};

// (start, tid, name) of the op linked to `connection_id`, or nullopt.
std::optional<std::tuple<std::optional<std::int64_t>, std::int64_t, std::optional<std::int64_t>>> OpOf(
    const TaskOpLinks& links, std::int64_t connection_id) {
  const LinkedOp* op = links.Find(connection_id);
  if (op == nullptr) return std::nullopt;
  return std::make_tuple(op->start_ns, op->tid, op->name);
}

TEST_F(TaskOpLinksTest, EachConnectionTakesItsLatestStartingOp) {
  // Connection 100: op indexes 1 (starts at 10) and 2 (at 20); index 3 links connections 200 and 300.
  Exec(Link(1, 100) + Link(2, 100) + Link(3, 200) + Link(3, 300) + Op("20", 7, 2, 52) + Op("10", 7, 1, 51) +
       Op("30", 8, 3, 53));
  const TaskOpLinks links = Read();
  EXPECT_FALSE(links.empty());
  EXPECT_EQ(OpOf(links, 100),
            std::make_tuple(std::optional<std::int64_t>(20), 7, std::optional<std::int64_t>(52)));
  EXPECT_EQ(OpOf(links, 200),
            std::make_tuple(std::optional<std::int64_t>(30), 8, std::optional<std::int64_t>(53)));
  EXPECT_EQ(OpOf(links, 300), OpOf(links, 200));
  EXPECT_EQ(OpOf(links, 400), std::nullopt) << "no such connection";
}

TEST_F(TaskOpLinksTest, OfOpsStartingTogetherTheFirstLinkRowThenTheFirstOpRowWins) {
  // Connection 100's link rows: index 5 first, then 4. Index 4's op comes first in the op table, but
  // the link row decides. Connection 200: two ops of index 6 start together; the first op row wins.
  Exec(Link(5, 100) + Link(4, 100) + Link(6, 200) + Op("50", 1, 4, 41) + Op("50", 1, 5, 42) +
       Op("60", 1, 6, 61) + Op("60", 1, 6, 62));
  const TaskOpLinks links = Read();
  ASSERT_NE(links.Find(100), nullptr);
  EXPECT_EQ(links.Find(100)->name, 42);
  ASSERT_NE(links.Find(200), nullptr);
  EXPECT_EQ(links.Find(200)->name, 61);
}

TEST_F(TaskOpLinksTest, AnOpWithAStartBeatsOpsWithoutOne) {
  // Connection 100: a start-less op, then one with a start, then another start-less one.
  // Connection 200: only start-less ops, so the last by row is taken (its start stays empty).
  Exec(Link(1, 100) + Link(2, 100) + Link(3, 100) + Link(4, 200) + Link(5, 200) + Op("NULL", 1, 1, 11) +
       Op("5", 1, 2, 12) + Op("NULL", 1, 3, 13) + Op("NULL", 1, 4, 14) + Op("NULL", 1, 5, 15));
  const TaskOpLinks links = Read();
  ASSERT_NE(links.Find(100), nullptr);
  EXPECT_EQ(links.Find(100)->name, 12);
  EXPECT_EQ(links.Find(100)->start_ns, 5);
  ASSERT_NE(links.Find(200), nullptr);
  EXPECT_EQ(links.Find(200)->name, 15);
  EXPECT_EQ(links.Find(200)->start_ns, std::nullopt);
}

TEST_F(TaskOpLinksTest, NullsAndUnlinkedRowsLinkNothing) {
  Exec("INSERT INTO CONNECTION_IDS (id, connectionId) VALUES (NULL, 100), (1, NULL), (2, 300);" +
       std::string(
           "INSERT INTO PYTORCH_API (startNs, globalTid, connectionId, name) VALUES (1, 1, NULL, 9);") +
       Op("1", 1, 1, 10) + Op("1", 1, 7, 11));
  const TaskOpLinks links = Read();
  EXPECT_TRUE(links.empty());
  EXPECT_EQ(links.Find(100), nullptr);
  EXPECT_EQ(links.Find(300), nullptr) << "index 2 has no op";
}

TEST_F(TaskOpLinksTest, ATableWithoutItsColumnsLinksNothing) {
  Exec(Link(1, 100) + Op("1", 1, 1, 10) + "ALTER TABLE PYTORCH_API DROP COLUMN globalTid;");
  EXPECT_TRUE(Read().empty());
}

// The join gpuprof ran in SQL before, and the consumers' reading of DB_SPEC §3.4: on a DB without
// indexes SQLite groups the joined rows in (link row, op row) order and MAX() keeps the first
// maximum, so the two agree on every connection, ties and missing starts included.
TEST_F(TaskOpLinksTest, AgreesWithTheSqlJoinOnARandomDb) {
  std::mt19937 random(41);
  std::string sql = "BEGIN;";
  for (int row = 0; row < 3000; ++row) {
    sql += Link(static_cast<int>(random() % 1500), 1000 + static_cast<int>(random() % 800));
  }
  for (int row = 0; row < 2500; ++row) {
    const int start = static_cast<int>(random() % 60);  // few values: many ties
    sql += Op(start < 3 ? "NULL" : std::to_string(start), static_cast<int>(random() % 4),
              static_cast<int>(random() % 1700), row);
  }
  Exec(sql + "COMMIT;");
  const TaskOpLinks links = Read();

  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(path_);
  ASSERT_TRUE(reader.ok());
  StatusOr<Query> query = (*reader)->Prepare(
      "SELECT c.connectionId, MAX(p.startNs), p.globalTid, p.name FROM CONNECTION_IDS c JOIN PYTORCH_API p "
      "ON p.connectionId = c.id GROUP BY c.connectionId");
  ASSERT_TRUE(query.ok());
  int connections = 0;
  while (true) {
    StatusOr<bool> row = query->Step();
    ASSERT_TRUE(row.ok());
    if (!*row) break;
    ++connections;
    const std::int64_t cid = query->Int(0);
    EXPECT_EQ(OpOf(links, cid), std::make_tuple(query->OptionalInt(1), query->Int(2), query->OptionalInt(3)))
        << "connection " << cid;
  }
  EXPECT_GT(connections, 700);
  for (std::int64_t cid = 1000; cid < 1800; ++cid) {
    if (links.Find(cid) == nullptr) continue;
    --connections;
  }
  EXPECT_EQ(connections, 0) << "links to connections the join does not have";
}

}  // namespace
}  // namespace gpuprof::db
