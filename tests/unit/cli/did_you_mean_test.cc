// "did you mean" for a mistyped subcommand or option (issue 39): the word the user typed, in the
// order typed, and the closest valid name.
#include "cli/did_you_mean.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuprof::cli {
namespace {

TEST(ClosestWordTest, OneOrTwoLettersOffIsATypo) {
  const std::vector<std::string> commands = {"demo", "stats", "export", "report", "check", "run", "replay"};
  EXPECT_EQ(ClosestWord("stat", commands), "stats");
  EXPECT_EQ(ClosestWord("stast", commands), "stats");  // two neighbours swapped
  EXPECT_EQ(ClosestWord("exprot", commands), "export");
  EXPECT_EQ(ClosestWord("replya", commands), "replay");
  EXPECT_EQ(ClosestWord("rnu", commands), "run");
  EXPECT_EQ(ClosestWord("--tpo", {"--top", "--csv", "--help"}), "--top");
  EXPECT_EQ(ClosestWord("--form", {"--format", "--output", "-o"}), "--format");  // a prefix
}

TEST(ClosestWordTest, NothingCloseSuggestsNothing) {
  EXPECT_EQ(ClosestWord("xyz", {"demo", "stats", "run"}), "");
  EXPECT_EQ(ClosestWord("--frobnicate", {"--top", "--csv"}), "");
  EXPECT_EQ(ClosestWord("--", {"--top"}), "");
}

class DescribeExtrasTest : public ::testing::Test {
 protected:
  DescribeExtrasTest() {
    app_.set_version_flag("--version", "gpuprof 0");
    stats_ = app_.add_subcommand("stats", "s");
    stats_->add_option("PATH", path_)->required();
    stats_->add_option("--top", top_);
    stats_->add_flag("--csv", csv_);
    app_.add_subcommand("demo", "d")->add_option("--passes", passes_);
  }
  // The message main.cc prints for `argv`, or "" when CLI11 accepted it.
  std::string Parse(std::vector<std::string> args) {
    std::vector<const char*> argv = {"gpuprof"};
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    try {
      app_.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ExtrasError&) {
      return DescribeExtras(app_, app_.remaining(true));
    }
    return "";
  }

  CLI::App app_{"test", "gpuprof"};
  CLI::App* stats_ = nullptr;
  std::string path_;
  std::size_t top_ = 15;
  bool csv_ = false;
  int passes_ = 5;
};

TEST_F(DescribeExtrasTest, UnknownCommandNamesTheWordAndTheClosestCommand) {
  EXPECT_EQ(Parse({"stat", "x.db"}), "unknown command 'stat'; did you mean 'stats'?");
}

TEST_F(DescribeExtrasTest, UnknownOptionNamesTheCommandAndTheClosestOption) {
  EXPECT_EQ(Parse({"stats", "--tpo", "5", "x.db"}),
            "unknown option '--tpo' of 'gpuprof stats'; did you mean '--top'?");
  EXPECT_EQ(Parse({"stats", "--top=3", "--cvs", "x.db"}),
            "unknown option '--cvs' of 'gpuprof stats'; did you mean '--csv'?");
  EXPECT_EQ(Parse({"demo", "--pases=3"}),
            "unknown option '--pases' of 'gpuprof demo'; did you mean '--passes'?");
  EXPECT_EQ(Parse({"--verison"}), "unknown option '--verison' of 'gpuprof'; did you mean '--version'?");
}

TEST_F(DescribeExtrasTest, ExtraArgumentsAreListedInTheOrderTyped) {
  EXPECT_EQ(Parse({"stats", "a.db", "b.db", "c.db"}),
            "'gpuprof stats' takes no more arguments; unexpected: 'b.db' 'c.db'");
}

}  // namespace
}  // namespace gpuprof::cli
