// The fixture of the `gpuprof stats / export / report / check` integration tests: a fixture run
// (tests/unit/db/fixture_db.h) in a fresh folder, and `gpuprof <args>` run with stdout and stderr
// captured apart, no sanitizer report allowed.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "cli_harness.h"
#include "unit/db/fixture_db.h"

namespace gpuprof::testing {

// The lines of the section whose title starts with `title`, up to the next blank line.
inline std::vector<std::string> Section(const std::string& output, const std::string& title) {
  std::vector<std::string> section;
  std::stringstream stream(output);
  std::string line;
  bool inside = false;
  while (std::getline(stream, line)) {
    if (!inside) {
      inside = line.rfind(title, 0) == 0;
      if (inside) section.push_back(line);
      continue;
    }
    if (line.empty()) break;
    section.push_back(line);
  }
  return section;
}

// The whitespace-separated words of a line (a text table's row).
inline std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream stream(line);
  std::string word;
  while (stream >> word) out.push_back(word);
  return out;
}

// The values of the elements marked data-figure="name", in page order.
inline std::vector<std::string> Figures(const std::string& page, const std::string& name) {
  std::vector<std::string> values;
  const std::string marker = "data-figure=\"" + name + "\"";
  for (std::size_t at = page.find(marker); at != std::string::npos; at = page.find(marker, at + 1)) {
    const std::size_t open = page.find('>', at);
    const std::size_t close = page.find('<', open);
    values.push_back(page.substr(open + 1, close - open - 1));
  }
  return values;
}

class DbCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = db::fixture::MakeTempDir("gpuprof_db_cli");
    ASSERT_FALSE(dir_.empty());
    gpuprof::StatusOr<std::string> db = db::fixture::WriteFixtureRun(dir_ + "/runs", "node0_1_20240101");
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = *db;
    run_dir_ = dir_ + "/runs/node0_1_20240101_ascend_pt";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs `gpuprof <args>` (in `cwd` when given) with stdout and stderr captured separately.
  CliResult Run(const std::string& args, const std::string& cwd = "") const {
    const std::string err_path = dir_ + "/stderr.txt";
    // Sanitizers exit with 1 by default, which would pass for "bad input": give them their own.
    std::string command =
        "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=86\" "
        "UBSAN_OPTIONS=\"${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=87:print_stacktrace=1\" " +
        ShellQuote(GPUPROF_CLI_PATH) + " " + args + " 2>" + ShellQuote(err_path);
    if (!cwd.empty()) command = "cd " + ShellQuote(cwd) + " && " + command;
    CliResult result = RunShell(command, err_path);
    EXPECT_THAT(result.err, ::testing::Not(::testing::HasSubstr("Sanitizer"))) << args;
    EXPECT_THAT(result.err, ::testing::Not(::testing::HasSubstr("runtime error"))) << args;
    return result;
  }

  std::string dir_;
  std::string db_;
  std::string run_dir_;
};

}  // namespace gpuprof::testing
