// Runs the `gpuprof` executable (GPUPROF_CLI_PATH) and checks its output and exit status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct CliResult {
  int exit_code = -1;
  std::string output;
};

// Runs `gpuprof <args>`; `merge_stderr` folds stderr into the captured output (for messages),
// otherwise stderr is left on the test's own stderr (the engine's warnings) and only stdout is
// captured.
CliResult RunCli(const std::string& args, bool merge_stderr = false) {
  gpuprof::testing::CliResult shell = gpuprof::testing::RunShell(
      gpuprof::testing::ShellQuote(GPUPROF_CLI_PATH) + " " + args + (merge_stderr ? " 2>&1" : ""));
  return CliResult{shell.exit_code, shell.out};
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, separator)) out.push_back(item);
  return out;
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream stream(line);
  std::string word;
  while (stream >> word) out.push_back(word);
  return out;
}

// The lines of the section whose title starts with `title`, up to the next blank line, header
// row included.
std::vector<std::string> Section(const std::string& output, const std::string& title) {
  std::vector<std::string> lines = Split(output, '\n');
  std::vector<std::string> section;
  bool inside = false;
  for (const std::string& line : lines) {
    if (!inside) {
      inside = line.rfind(title, 0) == 0;
      continue;
    }
    if (line.empty()) break;
    section.push_back(line);
  }
  return section;
}

// One row of the per-pass table.
struct PassRow {
  int device = 0;
  int pass = 0;
  double duration_us = 0;
  std::uint64_t restored = 0;
  std::uint64_t dirty_chunks = 0;
  std::string hash;
};

// Per-pass rows of `kernel`, in output order.
std::vector<PassRow> PassRows(const std::string& output, const std::string& kernel) {
  std::vector<PassRow> rows;
  for (const std::string& line : Section(output, "per-pass results")) {
    std::vector<std::string> words = Words(line);
    if (words.size() != 7 || words[0] != kernel) continue;
    PassRow row;
    row.device = std::stoi(words[1]);
    row.pass = std::stoi(words[2]);
    row.duration_us = std::stod(words[3]);
    row.restored = std::stoull(words[4]);
    row.dirty_chunks = std::stoull(words[5]);
    row.hash = words[6];
    rows.push_back(row);
  }
  return rows;
}

std::uint64_t TotalRestored(const std::vector<PassRow>& rows) {
  std::uint64_t total = 0;
  for (const PassRow& row : rows) total += row.restored;
  return total;
}

// What a bug report needs (issue 39): the version, the commit ("-dirty" with uncommitted changes,
// "unknown" outside a git checkout) and the build's options.
TEST(GpuprofCliTest, VersionNamesTheCommitAndTheBuildOptions) {
  CliResult result = RunCli("--version");
  EXPECT_EQ(result.exit_code, 0);
  const std::vector<std::string> lines = Split(result.output, '\n');
  ASSERT_EQ(lines.size(), 5u) << result.output;
  EXPECT_EQ(lines[0], std::string("gpuprof ") + GPUPROF_EXPECTED_VERSION);
  EXPECT_TRUE(std::regex_match(lines[1], std::regex("commit: ([0-9a-f]{7,40}(-dirty)?|unknown)")))
      << lines[1];
  EXPECT_TRUE(std::regex_match(lines[2], std::regex("build type: [A-Za-z]+"))) << lines[2];
  EXPECT_TRUE(std::regex_match(lines[3], std::regex("CUDA backend: (on \\(CUDA toolkit [0-9.]+\\)|off)")))
      << lines[3];
  EXPECT_TRUE(std::regex_match(lines[4], std::regex("torch hooks: (on \\(torch [0-9][0-9A-Za-z.+]*\\)|off)")))
      << lines[4];
}

// A typo (issue 39): the word as typed and the closest valid one, not CLI11's reversed list; the
// usage exit code.
TEST(GpuprofCliTest, ATypoNamesTheWordAndTheClosestCommandOrOption) {
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"stat x.db", "gpuprof: error: unknown command 'stat'; did you mean 'stats'?"},
      {"exprot x.db", "gpuprof: error: unknown command 'exprot'; did you mean 'export'?"},
      {"stats --tpo 5 x.db",
       "gpuprof: error: unknown option '--tpo' of 'gpuprof stats'; did you mean '--top'?"},
      {"demo --pases 3",
       "gpuprof: error: unknown option '--pases' of 'gpuprof demo'; did you mean '--passes'?"},
      {"--verison", "gpuprof: error: unknown option '--verison' of 'gpuprof'; did you mean '--version'?"},
      {"replay --pases 3 -- true",
       "gpuprof: error: --pases is not a flag of gpuprof replay (did you mean "
       "'--passes'?)"},
  };
  for (const Case& c : cases) {
    CliResult result = RunCli(c.args, /*merge_stderr=*/true);
    EXPECT_EQ(result.exit_code, 2) << c.args;
    EXPECT_THAT(result.output, HasSubstr(c.message)) << c.args;
    EXPECT_THAT(result.output, Not(HasSubstr("not expected"))) << c.args;
  }
}

// Every --help (issue 39): no internal rule ids ("(B2)", "R3", "W5": docs/replay_rules.md's, not
// the user's), and every line of an options list on the formatter's columns: an entry at 2, its
// description (and each continuation) at 28.
TEST(GpuprofCliTest, EveryHelpHasNoRuleIdsAndKeepsTheFormattersColumns) {
  const std::regex rule_id("\\b[BCRW][0-9]{1,2}\\b");
  constexpr std::size_t kColumn = 28;
  for (const std::string command : {"", "demo", "stats", "export", "report", "check", "run", "replay"}) {
    CliResult result = RunCli(command + " --help");
    EXPECT_EQ(result.exit_code, 0) << command;
    bool in_list = false;
    for (const std::string& line : Split(result.output, '\n')) {
      EXPECT_FALSE(std::regex_search(line, rule_id)) << command << ": " << line;
      if (line.empty()) {
        in_list = false;
        continue;
      }
      if (line == "Options:" || line == "Subcommands:" || line == "Positionals:" || line == "OPTIONS:" ||
          line == "SUBCOMMANDS:" || line == "POSITIONALS:") {
        in_list = true;
        continue;
      }
      if (!in_list) continue;
      const std::size_t indent = line.find_first_not_of(' ');
      if (indent == kColumn) continue;  // a description on its own line
      ASSERT_EQ(indent, 2u) << command << ": " << line;
      const std::size_t gap = line.find("  ", indent);
      if (gap == std::string::npos) {
        // A name alone (its description below): "--opt" or "--opt VALUE=default", no more words.
        EXPECT_LE(Words(line).size(), 2u) << command << ": a description off the column: " << line;
        continue;
      }
      EXPECT_EQ(line.find_first_not_of(' ', gap), kColumn) << command << ": " << line;
    }
  }
}

// The demo suggests only what its reader accepts (issue 39: it suggested --graph-replay, which
// only `replay` has): every --option in its output is an option of the command it is given with
// ('gpuprof export --format ...'), else of `demo`.
TEST(GpuprofCliTest, EveryOptionTheDemoSuggestsIsAccepted) {
  char dir_template[] = "/tmp/gpuprof_demo_suggests_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  CliResult result = RunCli("demo --passes 2 -o '" + dir + "'", /*merge_stderr=*/true);
  EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::map<std::string, std::string> helps;
  const std::regex mention("(gpuprof ([a-z]+)[^']*?)?(--[a-z][a-z-]+)");
  int suggested = 0;
  for (const std::string& line : Split(result.output, '\n')) {
    for (std::sregex_iterator it(line.begin(), line.end(), mention), end; it != end; ++it) {
      const std::string command = (*it)[2].matched ? (*it)[2].str() : "demo";
      const std::string option = (*it)[3].str();
      if (!helps.count(command)) helps[command] = RunCli(command + " --help").output;
      EXPECT_TRUE(std::regex_search(helps[command], std::regex("(^|[ ,])" + option + "([ ,=\\n]|$)")))
          << "the demo suggests " << option << " for gpuprof " << command << ", which does not take it:\n"
          << line;
      ++suggested;
    }
  }
  EXPECT_GT(suggested, 0) << "the demo names at least one option ('gpuprof export --format perfetto')\n"
                          << result.output;
}

TEST(GpuprofCliTest, HelpListsDemoSubcommand) {
  CliResult result = RunCli("--help");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("demo"));
  EXPECT_THAT(result.output, HasSubstr("Replay a small workload"));
}

TEST(GpuprofCliTest, DemoHelpListsItsFlags) {
  CliResult result = RunCli("demo --help");
  EXPECT_EQ(result.exit_code, 0);
  for (const char* flag : {"--passes", "--restore", "--chunk-kib", "--devices"}) {
    EXPECT_THAT(result.output, HasSubstr(flag));
  }
}

// Every command's --help: one usage line (block), no CLI11 type noise, nothing past 100 columns.
TEST(GpuprofCliTest, EveryHelpHasOneUsageNoTypeNoiseAndFitsIn100Columns) {
  for (const std::string command : {"", "demo", "stats", "export", "check", "run", "replay"}) {
    CliResult result = RunCli(command + " --help");
    EXPECT_EQ(result.exit_code, 0) << command;
    std::stringstream lines(result.output);
    std::string line;
    int usage_lines = 0;
    while (std::getline(lines, line)) {
      EXPECT_LE(line.size(), 100u) << command << ": " << line;
      if (line.rfind("Usage:", 0) == 0) ++usage_lines;
      for (const char* noise : {"{false}", "{true}", "TEXT", "UINT", "INT:", "Excludes", "Needs:", "VALUE"}) {
        EXPECT_THAT(line, Not(HasSubstr(noise))) << command;
      }
    }
    EXPECT_EQ(usage_lines, 1) << command << ":\n" << result.output;
  }
  CliResult run = RunCli("run --help");
  EXPECT_THAT(run.output, HasSubstr("Usage: gpuprof run [-o DIR] [--follow-children]"));
  EXPECT_THAT(run.output, HasSubstr("  --record-shapes,--no-record-shapes\n"));
  EXPECT_THAT(RunCli("stats --help").output, HasSubstr("  --top N=15 "));
}

TEST(GpuprofCliTest, NoSubcommandPrintsHelpAndExitsTwo) {
  CliResult result = RunCli("", /*merge_stderr=*/true);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("demo"));
  EXPECT_THAT(result.output, HasSubstr("no subcommand given"));
}

TEST(GpuprofCliTest, DemoReplaysEveryPassAndMatchesAnUnreplayedRun) {
  CliResult result = RunCli("demo --passes 3");
  ASSERT_EQ(result.exit_code, 0) << result.output;

  std::vector<PassRow> scale = PassRows(result.output, "scale_in_place");
  ASSERT_EQ(scale.size(), 3u) << result.output;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(scale[static_cast<std::size_t>(i)].pass, i + 1);
    EXPECT_EQ(scale[static_cast<std::size_t>(i)].device, 0);
  }
  EXPECT_EQ(scale[0].restored, 0u) << "nothing is restored before pass 1";
  EXPECT_GT(scale[1].restored, 0u) << "the in-place kernel rewrites its whole buffer";
  // Restored inputs give identical outputs: the in-place kernel does not compound.
  EXPECT_EQ(scale[0].hash, scale[1].hash);
  EXPECT_EQ(scale[0].hash, scale[2].hash);

  EXPECT_EQ(PassRows(result.output, "axpy").size(), 3u) << "the second device's kernel is replayed too";
  EXPECT_EQ(PassRows(result.output, "axpy").front().device, 1);

  EXPECT_THAT(result.output, HasSubstr("results match an unreplayed run: yes"));

  std::vector<PassRow> tickets = PassRows(result.output, "ticket_draw");
  ASSERT_EQ(tickets.size(), 3u);
  EXPECT_NE(tickets[0].hash, tickets[1].hash);
  EXPECT_THAT(result.output, HasSubstr("nondeterministic: ticket_draw on device 0"));

  EXPECT_TRUE(PassRows(result.output, "graph_accumulate").empty()) << "graph launches are not replayed";
  EXPECT_THAT(result.output, HasSubstr("declined: graph_accumulate on device 0, 2 launches (graph-launch)"));
}

TEST(GpuprofCliTest, FullRestoreWritesBackMoreThanAutoForPartialWriteKernel) {
  CliResult automatic = RunCli("demo --passes 3 --restore auto");
  CliResult full = RunCli("demo --passes 3 --restore full");
  ASSERT_EQ(automatic.exit_code, 0) << automatic.output;
  ASSERT_EQ(full.exit_code, 0) << full.output;

  std::vector<PassRow> auto_rows = PassRows(automatic.output, "mark_sparse");
  std::vector<PassRow> full_rows = PassRows(full.output, "mark_sparse");
  ASSERT_EQ(auto_rows.size(), 3u) << automatic.output;
  ASSERT_EQ(full_rows.size(), 3u) << full.output;
  EXPECT_GT(TotalRestored(auto_rows), 0u);
  EXPECT_GT(TotalRestored(full_rows), TotalRestored(auto_rows));
  // The kernel writes a header word and 1 KiB inside one other chunk: two dirty 64 KiB chunks.
  EXPECT_EQ(auto_rows[1].dirty_chunks, 2u);
  EXPECT_EQ(auto_rows[1].restored, 2u * 64u * 1024u);
  // Both modes must still leave the application's results as an unreplayed run would.
  EXPECT_THAT(full.output, HasSubstr("results match an unreplayed run: yes"));
}

TEST(GpuprofCliTest, ZeroPassesIsAUsageErrorNamingTheFlag) {
  CliResult result = RunCli("demo --passes 0", /*merge_stderr=*/true);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("--passes"));
  EXPECT_THAT(result.output, HasSubstr("gpuprof demo --help"));
}

TEST(GpuprofCliTest, UnknownRestoreModeIsAUsageErrorNamingTheFlag) {
  CliResult result = RunCli("demo --restore bogus", /*merge_stderr=*/true);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("--restore"));
  EXPECT_THAT(result.output, HasSubstr("auto"));
  EXPECT_THAT(result.output, HasSubstr("full"));
  EXPECT_THAT(result.output, HasSubstr("gpuprof demo --help"));
}

TEST(GpuprofCliTest, ZeroChunkSizeIsAUsageErrorNamingTheFlag) {
  CliResult result = RunCli("demo --chunk-kib 0", /*merge_stderr=*/true);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("--chunk-kib"));
}

TEST(GpuprofCliTest, UnknownFlagIsAUsageError) {
  CliResult result = RunCli("demo --no-such-flag", /*merge_stderr=*/true);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("--no-such-flag"));
}

// `demo -o DIR` writes the session and its replay results into a DB in the format's layout, which
// check accepts and stats/export read: the whole path without a GPU.
TEST(GpuprofCliTest, DemoWithAnOutputDirWritesADatabaseThatCheckStatsAndExportRead) {
  char dir_template[] = "/tmp/gpuprof_demo_db_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  CliResult demo = RunCli("demo --passes 3 -o '" + dir + "'");
  ASSERT_EQ(demo.exit_code, 0) << demo.output;
  EXPECT_THAT(demo.output, HasSubstr("profile database: " + dir + "/"));
  EXPECT_THAT(demo.output, HasSubstr("_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler.db"));

  CliResult check = RunCli("check '" + dir + "'", /*merge_stderr=*/true);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_THAT(check.output, HasSubstr("ok: "));

  CliResult stats = RunCli("stats '" + dir + "'");
  ASSERT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_THAT(stats.output, HasSubstr("scale_in_place"));  // replay rows present
  EXPECT_THAT(stats.output, HasSubstr("graph-launch"));    // and the declined graph

  // As joined as a real profile (issue 20 item 9): every replayed or declined launch carries its
  // launch's correlation id, and every such id has its TASK row(s) (a graph launch: one per node).
  const std::string db = "$(ls '" + dir + "'/*/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler.db)";
  gpuprof::testing::CliResult joined = gpuprof::testing::RunShell(
      "sqlite3 " + db +
      " \"SELECT COUNT(*), SUM(connectionId IS NULL), SUM((SELECT COUNT(*) FROM TASK t WHERE t.connectionId "
      "= "
      "k.connectionId) = 0), SUM(replayed = 0 AND (SELECT COUNT(*) FROM TASK t WHERE t.connectionId = "
      "k.connectionId) = 2) FROM GPUPROF_REPLAY_KERNEL k\"");
  ASSERT_EQ(joined.exit_code, 0) << joined.out;
  EXPECT_EQ(joined.out, "8|0|0|2\n")
      << "launches | without connectionId | without TASK | graph launches with both nodes";

  const std::string json = dir + "/trace.json";
  CliResult exported =
      RunCli("export --format perfetto '" + dir + "' -o '" + json + "'", /*merge_stderr=*/true);
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  FILE* file = std::fopen(json.c_str(), "r");
  ASSERT_NE(file, nullptr);
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  std::fclose(file);
  EXPECT_THAT(text, HasSubstr("\"traceEvents\""));
  EXPECT_THAT(text, HasSubstr("scale_in_place"));

  // The analysis.db beside the DB is checked too; a damaged one fails check, naming it.
  EXPECT_THAT(check.output, HasSubstr("ASCEND_PROFILER_OUTPUT/analysis.db (4 tables"));
  const std::string analysis = "$(ls '" + dir + "'/*/ASCEND_PROFILER_OUTPUT/analysis.db)";
  ASSERT_EQ(gpuprof::testing::RunShell("truncate -s 5000 " + analysis).exit_code, 0);
  CliResult damaged = RunCli("check '" + dir + "'", /*merge_stderr=*/true);
  EXPECT_EQ(damaged.exit_code, 1) << damaged.output;
  EXPECT_THAT(damaged.output, HasSubstr("analysis.db"));
  EXPECT_THAT(damaged.output, HasSubstr("error"));
  std::string cleanup = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(cleanup.c_str()), 0);
}

}  // namespace
