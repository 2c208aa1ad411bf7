// The fixture of the finding rules' tests (findings_test.cc, findings_counters_test.cc): a DB of 6
// steps (step 1 a 1 s warm-up, steps 2..6 100 ms each) on one thread; each test plants its rows with
// SQL on top of the schema's empty tables.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "db/findings.h"
#include "unit/db/fixture_db.h"

namespace gpuprof::db::findings_testing {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kBase = 1'700'000'000'000'000'000;
constexpr int kTid = 77;

// Step `id`'s start: step 1 is [0, 1000 ms), step k >= 2 is [1000 + 100 (k - 2), +100) ms.
inline std::int64_t StepStart(int id) { return kBase + (id == 1 ? 0 : (1000 + 100 * (id - 2)) * kMs); }

class FindingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fixture::MakeTempDir("gpuprof_findings");
    path_ = dir_ + "/ascend_pytorch_profiler_0.db";
    fixture::FixtureOptions options;
    options.with_rows = false;
    options.with_replay_tables = false;
    ASSERT_TRUE(fixture::WriteFixtureDb(path_, options).ok());
    std::string sql = "INSERT INTO SESSION_TIME_INFO VALUES (" + std::to_string(kBase) + ", " +
                      std::to_string(StepStart(7)) + ");";
    for (int id = 1; id <= 6; ++id) {
      sql += "INSERT INTO STEP_TIME VALUES (" + std::to_string(id) + ", " + std::to_string(StepStart(id)) +
             ", " + std::to_string(StepStart(id + 1)) + ");";
    }
    sql +=
        "INSERT INTO STRING_IDS VALUES (1, 'aten::item'), (2, 'cudaStreamSynchronize'), "
        "(3, 'enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__'), (4, 'aten::mm'), "
        "(5, 'cudaLaunchKernel'), (6, 'cudaMalloc'), (7, 'cudaFree'), (8, 'launch');";
    Exec(sql);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Exec(const std::string& sql) { ASSERT_TRUE(fixture::ExecSql(path_, sql).ok()) << sql; }

  // A row [step start + at, + length) ms in each of `steps`.
  void Plant(const std::string& table, const std::string& columns_before, const std::string& columns_after,
             std::initializer_list<int> steps, std::int64_t at_ms, std::int64_t length_ms) {
    std::string sql;
    for (int id : steps) {
      const std::int64_t start = StepStart(id) + at_ms * kMs;
      sql += "INSERT INTO " + table + " VALUES (" + columns_before + std::to_string(start) + ", " +
             std::to_string(start + length_ms * kMs) + columns_after + ");";
    }
    Exec(sql);
  }

  FindingsReport Compute(bool include_warmup = false) {
    StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(path_);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    FindingsOptions options;
    options.include_warmup = include_warmup;
    StatusOr<FindingsReport> report = ComputeFindings(**reader, ProfileDbFile{path_, 0}, options);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? *report : FindingsReport{};
  }

  static const Finding* Find(const FindingsReport& report, std::string_view id) {
    for (const Finding& f : report.findings) {
      if (f.rule->id == id) return &f;
    }
    return nullptr;
  }

  // A kernel [start, end) ms into step `step`, launched by a cudaLaunchKernel call [call_start,
  // call_end) ms into it (no call when call_end < 0), written as the writer writes it: the task
  // joins the call's node-level "launch" row, and the runtime row that names the call sits 2^32
  // above it.
  void Kernel(int step, double start, double end, double call_start, double call_end) {
    const int id = next_task_++;
    auto at = [&](double ms) {
      return std::to_string(StepStart(step) + static_cast<std::int64_t>(ms * 1e6));
    };
    std::string sql = "INSERT INTO TASK VALUES (" + at(start) + ", " + at(end) + ", 0, " +
                      std::to_string(id) + ", " + std::to_string(id) + ", 1, 0, 0, 7, " + std::to_string(id) +
                      ", 0);";
    sql += "INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId) VALUES (4, " + std::to_string(id) + ");";
    if (call_end >= 0) {
      sql += "INSERT INTO CANN_API VALUES (" + at(call_start) + ", " + at(call_end) + ", 10000, " +
             std::to_string(kTid) + ", " + std::to_string(id) + ", 8);";
      sql += "INSERT INTO CANN_API VALUES (" + at(call_start) + ", " + at(call_end) + ", 5000, " +
             std::to_string(kTid) + ", " + std::to_string(id + (std::int64_t{1} << 32)) + ", 5);";
    }
    Exec(sql);
  }

  std::string dir_;
  std::string path_;
  int next_task_ = 1;
};

}  // namespace gpuprof::db::findings_testing
