// `--format json` of `gpuprof check` and `gpuprof stats` on the fixture run and on a damaged DB
// (issue 41): the document parses, carries its schema and version, and says what the text says.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "integration/db_cli_fixture.h"

namespace gpuprof::testing {
namespace {

using ::testing::HasSubstr;

nlohmann::json Parse(const CliResult& result) {
  nlohmann::json doc = nlohmann::json::parse(result.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << result.out;
  return doc;
}

TEST_F(DbCliTest, CheckJsonListsEachProblemWithItsTableAndFails) {
  CliResult clean = Run("check --format json " + ShellQuote(run_dir_));
  ASSERT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  nlohmann::json doc = Parse(clean);
  EXPECT_EQ(doc["schema"], "gpuprof.check");
  EXPECT_EQ(doc["version"], 1);
  ASSERT_EQ(doc["dbs"].size(), 1u);
  EXPECT_EQ(doc["dbs"][0]["ok"], true);
  EXPECT_EQ(doc["dbs"][0]["tables"], 33);

  ASSERT_TRUE(
      db::fixture::ExecSql(db_, "DROP INDEX TaskIndex; UPDATE PYTORCH_API SET name = 999999 WHERE rowid = 1;")
          .ok());
  CliResult damaged = Run("check --format json " + ShellQuote(db_));
  EXPECT_EQ(damaged.exit_code, 1);
  doc = Parse(damaged);
  EXPECT_EQ(doc["problems"], 2);
  ASSERT_EQ(doc["dbs"][0]["problems"].size(), 2u);
  EXPECT_EQ(doc["dbs"][0]["problems"][0]["table"], "TASK");
  EXPECT_EQ(doc["dbs"][0]["problems"][0]["problem"], "index TaskIndex (startNs, globalTaskId) missing");
  EXPECT_EQ(doc["dbs"][0]["ok"], false);
  EXPECT_THAT(damaged.err, HasSubstr("check found 2 problem(s)"));
}

TEST_F(DbCliTest, StatsJsonHasTheTextsFiguresAndFindings) {
  CliResult text = Run("stats " + ShellQuote(run_dir_));
  CliResult json = Run("stats --format json " + ShellQuote(run_dir_));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json doc = Parse(json);
  EXPECT_EQ(doc["schema"], "gpuprof.stats");
  ASSERT_EQ(doc["profiles"].size(), 1u);
  const nlohmann::json& p = doc["profiles"][0];
  EXPECT_THAT(text.out, HasSubstr(std::to_string(p["op_calls"].get<int>()) + " calls"));
  EXPECT_THAT(text.out, HasSubstr(std::to_string(p["kernel_calls"].get<int>()) + " launches"));
  ASSERT_TRUE(p["findings"].contains("findings"));
  EXPECT_EQ(p["findings"]["steps_considered"], 1) << "the fixture's 2 steps, the first left out as warm-up";
  EXPECT_THAT(text.out, HasSubstr("Findings (1 step, "));
  for (const nlohmann::json& f : p["findings"]["findings"]) {
    EXPECT_THAT(text.out, HasSubstr(f["title"].get<std::string>())) << f.dump();
  }
}

}  // namespace
}  // namespace gpuprof::testing
