// `--format json` of `gpuprof check` and `gpuprof stats` on the fixture run and on a damaged DB
// (issue 41): the document parses, carries its schema and version, and says what the text says;
// `stats --csv=ops|kernels|steps|findings` has the JSON's rows with the same figures.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "integration/db_cli_fixture.h"
#include "unit/db/diff_fixture.h"

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
  EXPECT_EQ(doc["dbs"][0]["tables"], 34);

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

// RFC 4180 lines without line breaks inside fields (none of the tables below has one): the fields
// of each line, quotes undone.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        fields.emplace_back();
      } else {
        fields.back() += c;
      }
    }
    rows.push_back(std::move(fields));
  }
  return rows;
}

class StatsCsvTest : public DbCliTest {
 protected:
  std::size_t ExpectCsvEqualsJson(const std::string& path, const std::string& table,
                                  const std::string& key) const;
};

// `stats --csv=TABLE PATH` against the array `key` (of each profile, or of its findings) of
// `stats --format json`: the same rows in the same order, each field equal (numbers as doubles);
// the number of rows compared.
std::size_t StatsCsvTest::ExpectCsvEqualsJson(const std::string& path, const std::string& table,
                                              const std::string& key) const {
  CliResult csv = Run("stats --csv=" + table + " " + ShellQuote(path));
  CliResult json = Run("stats --format json --top 100000 " + ShellQuote(path));
  EXPECT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json doc = Parse(json);
  const std::vector<std::vector<std::string>> rows = ParseCsv(csv.out);
  if (rows.empty()) {
    ADD_FAILURE() << "no header";
    return 0;
  }
  const std::vector<std::string>& header = rows[0];
  EXPECT_EQ(header[0], "rank");
  std::size_t row = 1;
  for (const nlohmann::json& profile : doc["profiles"]) {
    const nlohmann::json& objects = key == "findings" ? profile["findings"]["findings"] : profile[key];
    for (const nlohmann::json& object : objects) {
      if (row >= rows.size()) {
        ADD_FAILURE() << table << ": fewer CSV rows than JSON rows\n" << csv.out;
        return row - 1;
      }
      const std::vector<std::string>& fields = rows[row++];
      EXPECT_EQ(fields.size(), header.size());
      // A DB without its own rank has the one its file name says ("_0"), as the other CSV tables.
      EXPECT_EQ(fields[0], profile["rank"].is_null() ? "0" : std::to_string(profile["rank"].get<int>()));
      for (std::size_t i = 1; i < header.size() && i < fields.size(); ++i) {
        const nlohmann::json& value = object.at(header[i]);
        if (value.is_string()) {
          EXPECT_EQ(fields[i], value.get<std::string>()) << table << " " << header[i];
        } else {
          EXPECT_EQ(std::stod(fields[i]), value.get<double>())
              << table << " " << header[i] << ": " << fields[i];
        }
      }
    }
  }
  EXPECT_EQ(row, rows.size()) << table << ": more CSV rows than JSON rows\n" << csv.out;
  return row - 1;
}

TEST_F(StatsCsvTest, OpsKernelsAndStepsHaveTheJsonsRowsAndFigures) {
  EXPECT_EQ(ExpectCsvEqualsJson(run_dir_, "ops", "top_ops"), 7u);
  EXPECT_EQ(ExpectCsvEqualsJson(run_dir_, "kernels", "top_kernels"), 3u);
  EXPECT_EQ(ExpectCsvEqualsJson(run_dir_, "steps", "steps"), 2u);
  CliResult header = Run("stats --csv=ops " + ShellQuote(run_dir_));
  EXPECT_EQ(header.out.substr(0, header.out.find('\n')), "rank,name,calls,total_ms,self_ms");
  EXPECT_THAT(header.out, HasSubstr("\n0,")) << "the fixture's rank";
}

TEST_F(StatsCsvTest, FindingsHaveTheJsonsFindings) {
  const std::string profile = dir_ + "/planted/ascend_pytorch_profiler_0.db";
  std::filesystem::create_directories(dir_ + "/planted");
  ASSERT_TRUE(db::fixture::WriteDiffProfile(profile, true).ok());
  EXPECT_EQ(ExpectCsvEqualsJson(profile, "findings", "findings"), 2u);
  CliResult csv = Run("stats --csv=findings " + ShellQuote(profile));
  EXPECT_THAT(csv.out, HasSubstr("\n0,communication-not-overlapped,high,"));
  // The warm-up step counted: other figures, as in the JSON with the same flag.
  CliResult warm = Run("stats --csv=findings --include-warmup " + ShellQuote(profile));
  EXPECT_NE(warm.out, csv.out);
}

}  // namespace
}  // namespace gpuprof::testing
