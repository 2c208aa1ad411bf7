// Path resolution (a .db, a run directory, a directory of runs, partial DBs) and opening files
// that are not what they claim to be.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "db/check.h"
#include "db/perfetto_export.h"
#include "db/profile_reader.h"
#include "db/stats.h"
#include "unit/db/fixture_db.h"

namespace gpuprof::db {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fixture::MakeTempDir("gpuprof_reader");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  static void WriteFile(const std::string& path, const std::string& bytes) {
    ASSERT_TRUE(fixture::WriteFileBytes(path, bytes)) << path;
  }

  std::string dir_;
};

using ResolveProfilePathTest = TempDirTest;
using ProfileReaderTest = TempDirTest;

TEST(RankFromDbFileNameTest, ParsesTheRankSuffixOnly) {
  EXPECT_EQ(RankFromDbFileName("ascend_pytorch_profiler_3.db"), 3);
  EXPECT_EQ(RankFromDbFileName("ascend_pytorch_profiler_12.db"), 12);
  EXPECT_EQ(RankFromDbFileName("ascend_pytorch_profiler.db"), std::nullopt);
  EXPECT_EQ(RankFromDbFileName("ascend_pytorch_profiler_x.db"), std::nullopt);
  EXPECT_EQ(RankFromDbFileName("ascend_pytorch_profiler_.db"), std::nullopt);
  EXPECT_EQ(RankFromDbFileName("analysis.db"), std::nullopt);
  EXPECT_EQ(RankFromDbFileName("ascend_pytorch_profiler_99999999999.db"), std::nullopt);
}

TEST_F(ResolveProfilePathTest, DbFileIsTakenAsIs) {
  const std::string db = Path("profile.db");
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  StatusOr<ResolvedProfiles> resolved = ResolveProfilePath(db);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  ASSERT_EQ(resolved->dbs.size(), 1u);
  EXPECT_EQ(resolved->dbs[0].path, db);
  EXPECT_EQ(resolved->dbs[0].rank, std::nullopt);
}

TEST_F(ResolveProfilePathTest, RunDirectoryFindsItsDbAndListsPartials) {
  StatusOr<std::string> db = fixture::WriteFixtureRun(dir_, "host_1_20240101");
  ASSERT_TRUE(db.ok()) << db.status().message();
  const std::string run_dir = Path("host_1_20240101_ascend_pt");
  const std::string partial = run_dir + "/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db.partial";
  WriteFile(partial, "half a database");
  WriteFile(run_dir + "/ASCEND_PROFILER_OUTPUT/analysis.db", "not ours");

  StatusOr<ResolvedProfiles> resolved = ResolveProfilePath(run_dir);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  ASSERT_EQ(resolved->dbs.size(), 1u);
  EXPECT_EQ(resolved->dbs[0].path, *db);
  EXPECT_EQ(resolved->dbs[0].rank, 0);
  EXPECT_THAT(resolved->partial_dbs, ElementsAre(partial));
  EXPECT_EQ(PartialDbNote(*resolved), "found 1 partial DB(s) from runs that did not finish: " + partial);

  // The ASCEND_PROFILER_OUTPUT directory itself works too.
  StatusOr<ResolvedProfiles> inner = ResolveProfilePath(run_dir + "/ASCEND_PROFILER_OUTPUT");
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(inner->dbs.size(), 1u);
}

TEST_F(ResolveProfilePathTest, DirectoryOfRunsGivesOneDbPerRankInRankOrder) {
  fixture::FixtureOptions rank1;
  rank1.rank = 1;
  fixture::FixtureOptions rank0;
  rank0.rank = 0;
  // Directory names sort the other way round from ranks.
  StatusOr<std::string> db1 = fixture::WriteFixtureRun(dir_, "a_host", rank1);
  StatusOr<std::string> db0 = fixture::WriteFixtureRun(dir_, "b_host", rank0);
  ASSERT_TRUE(db1.ok() && db0.ok());
  fs::create_directories(Path("unrelated_dir"));

  StatusOr<ResolvedProfiles> resolved = ResolveProfilePath(dir_);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  ASSERT_EQ(resolved->dbs.size(), 2u);
  EXPECT_EQ(resolved->dbs[0].path, *db0);
  EXPECT_EQ(resolved->dbs[1].path, *db1);
  EXPECT_TRUE(resolved->partial_dbs.empty());
  EXPECT_EQ(PartialDbNote(*resolved), "");
}

TEST_F(ResolveProfilePathTest, MissingPathSaysWhatToPass) {
  StatusOr<ResolvedProfiles> resolved = ResolveProfilePath(Path("nope.db"));
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(resolved.status().message(), HasSubstr("no such file or directory: " + Path("nope.db")));
  EXPECT_THAT(resolved.status().message(), HasSubstr("_ascend_pt"));
}

TEST_F(ResolveProfilePathTest, DirectoryWithoutDbsIsAnErrorThatMentionsPartials) {
  StatusOr<ResolvedProfiles> empty = ResolveProfilePath(dir_);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(empty.status().message(), HasSubstr("no profile database under " + dir_));

  const std::string partial = Path("x_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db.partial");
  WriteFile(partial, "x");
  StatusOr<ResolvedProfiles> only_partial = ResolveProfilePath(dir_);
  ASSERT_FALSE(only_partial.ok());
  EXPECT_THAT(only_partial.status().message(),
              HasSubstr("found 1 partial DB(s) from runs that did not finish: " + partial));
}

TEST_F(ResolveProfilePathTest, PartialDbNamedDirectlyIsRefused) {
  const std::string partial = Path("ascend_pytorch_profiler_0.db.partial");
  WriteFile(partial, "x");
  StatusOr<ResolvedProfiles> resolved = ResolveProfilePath(partial);
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(resolved.status().message(), HasSubstr("partial DB from a run that did not finish"));
}

TEST_F(ProfileReaderTest, OpensFixtureAndListsTablesAndColumns) {
  const std::string db = Path("profile.db");
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(db);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_TRUE((*reader)->HasTable("PYTORCH_API"));
  EXPECT_TRUE((*reader)->HasTable("pytorch_api"));  // SQLite names are case-insensitive
  EXPECT_FALSE((*reader)->HasTable("NPU_MEM"));
  StatusOr<std::vector<ColumnInfo>> columns = (*reader)->Columns("STRING_IDS");
  ASSERT_TRUE(columns.ok());
  ASSERT_EQ(columns->size(), 2u);
  EXPECT_EQ((*columns)[0].name, "id");
  EXPECT_EQ((*columns)[0].declared_type, "INTEGER");
  EXPECT_TRUE((*columns)[0].primary_key);
  EXPECT_FALSE((*columns)[1].primary_key);
  EXPECT_TRUE(*(*reader)->HasColumns("TASK", {"startNs", "streamId"}));
  EXPECT_FALSE(*(*reader)->HasColumns("TASK", {"startNs", "noSuchColumn"}));
  EXPECT_FALSE(*(*reader)->HasColumns("NO_TABLE", {"x"}));
  EXPECT_EQ(*(*reader)->QueryInt("SELECT COUNT(*) FROM PYTORCH_API"), fixture::kFixtureOps);
}

TEST_F(ProfileReaderTest, NeverWritesTheFile) {
  const std::string db = Path("profile.db");
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  const auto size_before = fs::file_size(db);
  const auto time_before = fs::last_write_time(db);
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(db);
  ASSERT_TRUE(reader.ok());
  StatusOr<Query> create = (*reader)->Prepare("CREATE TABLE x (a INTEGER)");
  ASSERT_TRUE(create.ok()) << create.status().message();
  StatusOr<bool> step = create->Step();
  EXPECT_FALSE(step.ok());  // read-only connection
  reader->reset();
  EXPECT_EQ(fs::file_size(db), size_before);
  EXPECT_EQ(fs::last_write_time(db), time_before);
  EXPECT_FALSE(fs::exists(db + "-journal"));
}

TEST_F(ProfileReaderTest, NotSqliteFileIsNamedAsSuch) {
  const std::string text = Path("notes.db");
  WriteFile(text, std::string(4096, 'x'));
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(text);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(reader.status().message(), HasSubstr("not an SQLite database: " + text));
}

TEST_F(ProfileReaderTest, EmptyFileIsNotAnSqliteDatabase) {
  const std::string empty = Path("empty.db");
  WriteFile(empty, "");
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(empty);
  ASSERT_FALSE(reader.ok());
  EXPECT_THAT(reader.status().message(), HasSubstr("not an SQLite database: " + empty));
  EXPECT_THAT(reader.status().message(), HasSubstr("empty"));
}

TEST_F(ProfileReaderTest, ForeignSchemaIsRefused) {
  const std::string foreign = Path("foreign.db");
  ASSERT_TRUE(
      fixture::ExecSql(foreign, "CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('x');").ok());
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(foreign);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().message(),
            foreign +
                " is not a gpuprof/ascend_pytorch_profiler database (no PYTORCH_API or TASK table); pass the "
                "ascend_pytorch_profiler*.db file that a gpuprof run wrote");
}

TEST_F(ProfileReaderTest, TruncatedCopyIsReportedAsDamaged) {
  const std::string db = Path("profile.db");
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  const std::string bytes = fixture::ReadFileBytes(db);
  ASSERT_GT(bytes.size(), 8192u);
  const std::string half = Path("half.db");
  WriteFile(half, bytes.substr(0, bytes.size() / 2));
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(half);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(reader.status().message(), HasSubstr(half + " is damaged or truncated"));
  EXPECT_THAT(reader.status().message(), HasSubstr("copy it again"));
}

// A page damaged in the middle of a table passes the open (the schema is intact) and fails the
// read that reaches it: stats, check and export each return DataLoss naming the file; export
// leaves no output.
TEST_F(ProfileReaderTest, DamagedPageMidTableFailsTheReadNotTheProcess) {
  const std::string db = Path("profile.db");
  ASSERT_TRUE(fixture::WriteFixtureDb(db).ok());
  // 20000 more ops, appended at the end of the file: the last pages are PYTORCH_API leaves.
  ASSERT_TRUE(
      fixture::ExecSql(db,
                       "WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 19999) "
                       "INSERT INTO PYTORCH_API SELECT startNs + i, endNs + i, globalTid, NULL, name, "
                       "-1, 0, NULL, NULL, NULL, 50001 FROM PYTORCH_API, s WHERE rowid = 1;")
          .ok());
  std::string bytes = fixture::ReadFileBytes(db);
  ASSERT_GT(bytes.size(), 40u * 4096);
  for (std::size_t i = bytes.size() - 8 * 4096; i < bytes.size() - 4 * 4096; ++i) bytes[i] = '\xA5';
  ASSERT_TRUE(fixture::WriteFileBytes(db, bytes));

  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(db);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  StatusOr<ProfileStats> stats = ComputeStats(**reader, StatsOptions{});
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(stats.status().message(), HasSubstr(db + " is damaged or truncated"));

  StatusOr<CheckReport> report = CheckProfileDb(**reader);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.status().message(), HasSubstr(db + " is damaged or truncated (SQLite"));
  EXPECT_EQ(report.status().message().find('\n'), std::string::npos);

  const std::string out = Path("trace.json");
  StatusOr<ExportSummary> exported = ExportPerfettoTrace({{db, std::nullopt}}, out);
  ASSERT_FALSE(exported.ok());
  EXPECT_THAT(exported.status().message(), HasSubstr(db + " is damaged or truncated"));
  EXPECT_FALSE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

TEST_F(ProfileReaderTest, DirectoryIsNotADatabaseFile) {
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(dir_);
  ASSERT_FALSE(reader.ok());
  EXPECT_THAT(reader.status().message(), HasSubstr("is a directory"));
}

TEST(DescribeSqliteFailureTest, NamesFileProblemAndFix) {
  EXPECT_THAT(DescribeSqliteFailure("/x.db", "reading", 26, "file is not a database"),
              HasSubstr("not an SQLite database: /x.db"));
  EXPECT_THAT(
      DescribeSqliteFailure("/x.db", "reading", 11, "database disk image is malformed"),
      HasSubstr("/x.db is damaged or truncated (SQLite: database disk image is malformed while reading)"));
  EXPECT_THAT(DescribeSqliteFailure("/x.db", "reading", 5, "database is locked"), HasSubstr("locked"));
  EXPECT_THAT(DescribeSqliteFailure("/x.db", "reading", 1, "no such column: q"),
              HasSubstr("reading on /x.db failed: no such column: q (SQLite code 1)"));
}

}  // namespace
}  // namespace gpuprof::db
