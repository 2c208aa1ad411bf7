// `gpuprof diff A B` in text, JSON and HTML on the two profiles of tests/unit/db/diff_fixture.h
// (issue 41): kernels by name and launch shape, the collectives and the communication not
// overlapped, the replayed kernels; the page holds every table and marks the changed rows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "integration/db_cli_fixture.h"
#include "unit/db/diff_fixture.h"

namespace gpuprof::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class DiffCliTest : public DbCliTest {
 protected:
  void SetUp() override {
    DbCliTest::SetUp();
    a_ = dir_ + "/a/ascend_pytorch_profiler_0.db";
    b_ = dir_ + "/b/ascend_pytorch_profiler_0.db";
    std::filesystem::create_directories(dir_ + "/a");
    std::filesystem::create_directories(dir_ + "/b");
    ASSERT_TRUE(db::fixture::WriteDiffProfile(a_, false).ok());
    ASSERT_TRUE(db::fixture::WriteDiffProfile(b_, true).ok());
  }

  // The first line of `text` that holds every one of `parts`, or "".
  static std::string LineWith(const std::string& text, std::initializer_list<std::string> parts) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      bool all = true;
      for (const std::string& part : parts) all = all && line.find(part) != std::string::npos;
      if (all) return line;
    }
    return "";
  }

  // The <tr ...>...</tr> of `page` that holds `text`, or "".
  static std::string RowWith(const std::string& page, const std::string& text) {
    for (std::size_t at = page.find(text); at != std::string::npos; at = page.find(text, at + 1)) {
      const std::size_t start = page.rfind("<tr", at);
      const std::size_t end = page.find("</tr>", at);
      if (start != std::string::npos && end != std::string::npos) return page.substr(start, end - start);
    }
    return "";
  }

  std::string a_;
  std::string b_;
};

TEST_F(DiffCliTest, TextListsKernelsByLaunchShapeTheCollectivesAndTheReplayedKernels) {
  CliResult result = Run("diff " + ShellQuote(a_) + " " + ShellQuote(b_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string& out = result.out;
  EXPECT_THAT(out, HasSubstr("Kernels by name and launch shape (2 compared, 1 changed"));
  const std::string other_grid = LineWith(out, {"64,1,1 / 256,1,1", "gemm"});
  EXPECT_THAT(other_grid, ::testing::StartsWith("  changed")) << out;
  EXPECT_THAT(other_grid, HasSubstr("+10.000"));
  EXPECT_THAT(other_grid, HasSubstr("0/5"));
  const std::string same_grid = LineWith(out, {"128,1,1 / 256,1,1", "gemm"});
  ASSERT_FALSE(same_grid.empty()) << out;
  EXPECT_THAT(same_grid, Not(HasSubstr("changed")));
  EXPECT_THAT(
      out, HasSubstr("Communication not overlapped with compute: A 15.000 ± 0.000 ms, B 35.000 ± 0.000 ms: "
                     "+20.000 ms (+133.3 %), changed"));
  EXPECT_THAT(out, HasSubstr("Collectives by type (2 compared, 1 changed"));
  EXPECT_THAT(LineWith(out, {"allReduce"}), ::testing::StartsWith("  changed"));
  EXPECT_THAT(LineWith(out, {"allReduce"}), HasSubstr("+20.000"));
  EXPECT_THAT(out, HasSubstr("Kernel replay, each kernel replayed in both profiles (2 compared, 1 changed"));
  EXPECT_THAT(LineWith(out, {"+50.000", "5/5", "gemm"}), ::testing::StartsWith("  changed")) << out;
}

TEST_F(DiffCliTest, JsonHasTheLaunchShapeTheCollectivesAndTheReplayedKernels) {
  CliResult result = Run("diff --format json " + ShellQuote(a_) + " " + ShellQuote(b_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json doc = nlohmann::json::parse(result.out);
  const nlohmann::json& pair = doc["pairs"][0];
  EXPECT_EQ(pair["kernels"][0]["grid"], "64,1,1");
  EXPECT_EQ(pair["kernels"][0]["block"], "256,1,1");
  EXPECT_EQ(pair["kernels"][0]["changed"], true);
  EXPECT_EQ(pair["communication_changed"], 1);
  EXPECT_EQ(pair["communication"][0]["name"], "allReduce");
  EXPECT_NEAR(pair["communication"][0]["delta"].get<double>(), 20.0, 1e-6);
  EXPECT_NEAR(pair["communication_not_overlapped"]["delta"].get<double>(), 20.0, 1e-6);
  EXPECT_EQ(pair["replay"][0]["name"], "gemm");
  EXPECT_NEAR(pair["replay"][0]["delta"].get<double>(), 0.05, 1e-9) << "ms per pass";
  EXPECT_FALSE(pair.contains("replay_absent"));
}

TEST_F(DiffCliTest, HtmlPageHasEveryTableAndMarksTheChangedRows) {
  const std::string page_path = dir_ + "/diff.html";
  CliResult result =
      Run("diff --format html " + ShellQuote(a_) + " " + ShellQuote(b_) + " -o " + ShellQuote(page_path));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("wrote " + page_path));
  const std::string page = db::fixture::ReadFileBytes(page_path);
  EXPECT_THAT(page, HasSubstr("<title>gpuprof diff: "));
  EXPECT_THAT(page, Not(HasSubstr("src=\"http"))) << "offline: nothing fetched";
  for (const char* id : {"step", "ops", "kernels", "memory", "communication", "replay"}) {
    EXPECT_THAT(page, HasSubstr("<section id=\"" + std::string(id) + "\">")) << id;
  }
  EXPECT_THAT(RowWith(page, ">allReduce<"), ::testing::StartsWith("<tr class=\"changed\">"));
  EXPECT_THAT(RowWith(page, ">broadcast<"), ::testing::StartsWith("<tr>"));
  EXPECT_THAT(RowWith(page, ">64,1,1<"), ::testing::StartsWith("<tr class=\"changed\">"));
  EXPECT_THAT(RowWith(page, ">128,1,1<"), ::testing::StartsWith("<tr>"));
  EXPECT_THAT(RowWith(page, ">communication not overlapped with compute<"),
              ::testing::StartsWith("<tr class=\"changed\">"));
}

TEST_F(DiffCliTest, HtmlPageGoesBesideBAndKeepsAFileItDidNotWrite) {
  CliResult result = Run("diff --format html " + ShellQuote(a_) + " " + ShellQuote(b_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string page_path = dir_ + "/b/gpuprof_diff.html";
  EXPECT_THAT(db::fixture::ReadFileBytes(page_path), HasSubstr("<title>gpuprof diff: "));
  EXPECT_EQ(Run("diff --format html " + ShellQuote(a_) + " " + ShellQuote(b_)).exit_code, 0)
      << "its own page";
  ASSERT_TRUE(db::fixture::WriteFileBytes(page_path, "mine"));
  CliResult refused = Run("diff --format html " + ShellQuote(a_) + " " + ShellQuote(b_));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("pass --force to replace it"));
  EXPECT_EQ(db::fixture::ReadFileBytes(page_path), "mine");
  EXPECT_EQ(Run("diff --format html --force " + ShellQuote(a_) + " " + ShellQuote(b_)).exit_code, 0);
  EXPECT_THAT(db::fixture::ReadFileBytes(page_path), HasSubstr("<title>gpuprof diff: "));
  CliResult text_to_file =
      Run("diff " + ShellQuote(a_) + " " + ShellQuote(b_) + " -o " + ShellQuote(dir_ + "/x"));
  EXPECT_EQ(text_to_file.exit_code, 2);
  EXPECT_THAT(text_to_file.err, HasSubstr("-o and --force write the page of --format html"));
}

}  // namespace
}  // namespace gpuprof::testing
