// Two small profiles for `gpuprof diff` (db/diff.h), written on the schema's empty tables with SQL:
// the db tests and the CLI test compare them. Each: a session of 6 steps (step 1 a 1 s warm-up,
// steps 2..6 100 ms each) with, in every step,
//   kernel gemm, grid 128,1,1, block 256,1,1: 20 ms at 0 ms (plus 0.2 ms in even steps);
//   allReduce: kAllReduceMs (A) or kSlowAllReduceMs (B) at 50 ms; broadcast: 5 ms at 90 ms;
// and B only: gemm again with grid 64,1,1 (the same name, another launch shape), 10 ms at 30 ms.
// Nothing computes while the collectives run, so the communication not overlapped with compute is
// their sum. Replay results: gemm's 5 passes of 100 µs (A) or 150 µs (B), relu's 5 of 50 µs in both.
#pragma once

#include <cstdint>
#include <string>

#include "unit/db/fixture_db.h"

namespace gpuprof::db::fixture {

inline constexpr double kAllReduceMs = 10;
inline constexpr double kSlowAllReduceMs = 30;
inline constexpr double kBroadcastMs = 5;
inline constexpr double kSecondGridMs = 10;
inline constexpr double kGemmReplayUs = 100;
inline constexpr double kSlowGemmReplayUs = 150;

// Writes profile A (`b` false) or B at `path`.
inline Status WriteDiffProfile(const std::string& path, bool b) {
  constexpr std::int64_t kMs = 1'000'000;
  constexpr std::int64_t kBase = 1'700'000'000'000'000'000;
  FixtureOptions options;
  options.with_rows = false;
  GPUPROF_RETURN_IF_ERROR(WriteFixtureDb(path, options));
  auto step_start = [&](int id) { return kBase + (id == 1 ? 0 : (1000 + 100 * (id - 2)) * kMs); };
  auto at = [&](int step, double ms) {
    return std::to_string(step_start(step) + static_cast<std::int64_t>(ms * kMs));
  };
  std::string sql =
      "INSERT INTO SESSION_TIME_INFO VALUES (" + std::to_string(kBase) + ", " +
      std::to_string(step_start(7)) + ");" +
      "INSERT INTO STRING_IDS VALUES (1, 'gemm'), (2, '128,1,1'), (3, '256,1,1'), (4, '64,1,1'), "
      "(5, 'hcom_allReduce_'), (6, 'hcom_broadcast_'), (7, 'hcom_allReduce__921_0_1'), "
      "(8, 'hcom_broadcast__921_1_1'), (9, 'relu');";
  const double all_reduce_ms = b ? kSlowAllReduceMs : kAllReduceMs;
  int task = 0;
  for (int id = 1; id <= 6; ++id) {
    sql += "INSERT INTO STEP_TIME VALUES (" + std::to_string(id) + ", " + at(id, 0) + ", " +
           std::to_string(step_start(id + 1)) + ");";
    auto kernel = [&](double start_ms, double length_ms, int grid) {
      ++task;
      sql += "INSERT INTO TASK (startNs, endNs, deviceId, connectionId, globalTaskId, streamId) VALUES (" +
             at(id, start_ms) + ", " + at(id, start_ms + length_ms) + ", 0, " + std::to_string(task) + ", " +
             std::to_string(task) + ", 7);" +
             "INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId, gridDim, blockDim) VALUES (1, " +
             std::to_string(task) + ", " + std::to_string(grid) + ", 3);";
    };
    kernel(0, 20 + (id % 2 == 0 ? 0.2 : 0), 2);
    if (b) kernel(30, kSecondGridMs, 4);
    auto collective = [&](double start_ms, double length_ms, int name, int type) {
      sql += "INSERT INTO COMMUNICATION_OP (opName, startNs, endNs, opType) VALUES (" + std::to_string(name) +
             ", " + at(id, start_ms) + ", " + at(id, start_ms + length_ms) + ", " + std::to_string(type) +
             ");";
    };
    collective(50, all_reduce_ms, 7, 5);
    collective(90, kBroadcastMs, 8, 6);
  }
  auto replayed = [&](int kernel_id, int name, double pass_us) {
    sql += "INSERT INTO GPUPROF_REPLAY_KERNEL (id, deviceId, name, replayed, passes, replayMode) VALUES (" +
           std::to_string(kernel_id) + ", 0, " + std::to_string(name) + ", 1, 5, 'kernel');";
    for (int pass = 1; pass <= 5; ++pass) {
      // 1 µs of spread around the duration.
      const auto ns = static_cast<std::int64_t>(pass_us * 1000) + (pass - 3) * 500;
      sql += "INSERT INTO GPUPROF_REPLAY_PASS (kernelId, pass, startNs, durationNs) VALUES (" +
             std::to_string(kernel_id) + ", " + std::to_string(pass) + ", " + at(1, pass) + ", " +
             std::to_string(ns) + ");";
    }
  };
  replayed(0, 1, b ? kSlowGemmReplayUs : kGemmReplayUs);
  replayed(1, 9, 50);
  return ExecSql(path, sql);
}

}  // namespace gpuprof::db::fixture
