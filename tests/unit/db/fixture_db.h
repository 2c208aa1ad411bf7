// Fixture profile DBs for the read-side tests (stats, export, check and the CLI). Built from
// src/db/schema.sql (the one DDL source) through db's SQLite wrapper, independently of the writer's
// code, with a small hand-made profile whose every derived number is known (see the constants).
//
// Times: `base_ns` + microsecond offsets. One process (pid), main thread tid == pid, a backward
// thread pid + 1; device 0 with streams 7 and 13.
#pragma once

#include <cstdint>
#include <string>

#include "gpuprof/status.h"

namespace gpuprof::db::fixture {

struct FixtureOptions {
  bool with_rows = true;           // false: every table created and left empty (no enum/meta rows)
  bool with_replay_tables = true;  // GPUPROF_REPLAY_KERNEL / _PASS / _METRIC
  std::int32_t rank = 0;
  std::uint32_t pid = 4242;
  std::int64_t base_ns = 1'700'000'000'123'456'789;
};

// SQL that adds to a standard fixture DB what db/collected.h reads beside the ops: nn.Module ranges
// on the main thread (domain "Module": "Net" over aten::linear and the first aten::relu, "net.0
// (Linear)" over aten::linear, "net.1 (ReLU)" over each aten::relu) and, when `lost` is not empty,
// META_DATA's gpuprof_lost_records row with that JSON value. The modules' figures: Net 1 call,
// 430 µs host, 120 µs device (2 kernels); net.0 (Linear) 1 call, 315 µs, 100 µs (1); net.1 (ReLU)
// 2 calls, 190 µs, 50 µs (2).
std::string FixtureCollectedSql(const FixtureOptions& options, const std::string& lost);

// What the standard fixture holds (with_rows = true).
inline constexpr int kFixtureOps = 9;           // PYTORCH_API rows
inline constexpr int kFixtureRuntimeCalls = 5;  // CANN_API rows other than node/launch
inline constexpr int kFixtureTasks = 5;         // TASK rows: 4 kernels + 1 memcpy
inline constexpr int kFixtureKernels = 4;
inline constexpr int kFixtureTaskFlows = 5;  // op -> device task links
inline constexpr int kFixtureOpFlows = 1;    // forward -> backward pairs
inline constexpr int kFixtureMemoryRecords = 3;
inline constexpr int kFixtureGcPauses = 2;
inline constexpr int kFixtureReplayPasses = 6;   // 3 + 2 replayed, 1 of the declined launch
inline constexpr int kFixtureReplayMetrics = 7;  // of the gemm launch (kernel 1), one launch__ metric
// GPUPROF_REPLAY_KERNEL.counterStatus of the replayed gemm_bwd_kernel launch (kernel 3).
inline constexpr const char kFixtureCounterStatus[] =
    "counters not permitted (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): run as root or set "
    "NVreg_RestrictProfilingToAdminUsers=0";
inline constexpr int kFixtureMstxRanges = 1;
inline constexpr int kFixtureMstxMarkers = 1;
// Turns a fixture DB into one written before hardware counters: no GPUPROF_REPLAY_METRIC and none
// of GPUPROF_REPLAY_KERNEL's counter columns (ExecSql).
inline constexpr const char kFixtureBeforeCountersSql[] =
    "DROP TABLE GPUPROF_REPLAY_METRIC; ALTER TABLE GPUPROF_REPLAY_KERNEL DROP COLUMN counterPasses; "
    "ALTER TABLE GPUPROF_REPLAY_KERNEL DROP COLUMN counterStatus; "
    "ALTER TABLE GPUPROF_REPLAY_KERNEL DROP COLUMN clockControl; "
    "ALTER TABLE GPUPROF_REPLAY_KERNEL DROP COLUMN cacheControl;";
// An op name with a quote, a backslash, a tab, a control byte and an invalid UTF-8 byte.
inline constexpr const char kFixtureWeirdOpName[] = "weird \"op\"\\\t\x01\xff";

// Writes a fixture DB at `path` (replacing any file there).
Status WriteFixtureDb(const std::string& path, const FixtureOptions& options = {});

// Writes <parent>/<worker>_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_<rank>.db and
// returns the DB's path.
StatusOr<std::string> WriteFixtureRun(const std::string& parent, const std::string& worker,
                                      const FixtureOptions& options = {});

// Runs `sql` on the SQLite file at `path` (created if missing): to damage a fixture or build a
// foreign database.
Status ExecSql(const std::string& path, const std::string& sql);

// The bytes of a file ("" when it cannot be read), and writing bytes to a file (creating its
// parent directories). stdio, not iostreams: GCC 12's -Wnull-dereference misfires on
// istreambuf_iterator under -O2.
std::string ReadFileBytes(const std::string& path);
bool WriteFileBytes(const std::string& path, const std::string& bytes);

// A fresh directory under $TMPDIR (or /tmp), e.g. "/tmp/gpuprof_reader_XXXXXX"; removed by the caller.
std::string MakeTempDir(const std::string& prefix);

}  // namespace gpuprof::db::fixture
