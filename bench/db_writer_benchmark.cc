// Profile DB writer throughput, end to end: trace records -> db::ProfileWriter -> renamed final file.
//
// The program pre-generates a realistic record stream (not timed):
//   - TorchOp records (PYTORCH_API rows) on 4 threads: a main thread running ProfilerStep#N steps
//     of nested forward ops with autograd sequence numbers, an autograd thread running the matching
//     backward nodes (evaluate_function / XBackward0, fwd thread id = main), and two data-loader
//     threads. Names come from ~300 op names, input shapes/dtypes from a pool of signatures in
//     torch_npu's string format (DB_SPEC §3.3).
//   - DeviceTask kernel records (TASK + COMPUTE_TASK_INFO rows): names from ~500 demangled kernel
//     names, grid/block dims, 4 streams, correlation ids that the launching leaf ops carry.
//   - optionally (--with-api-calls) one cudaLaunchKernel ApiCall per kernel (CANN_API rows).
// It cuts the records into Submit batches (not timed: a collector's flush hands its buffers over
// by move), then times Create + Submit (moving the batches in) + Finalize (drain, derived tables,
// indexes, rename), and reads the final file back (not timed) to count rows
// per table and check that nothing was lost.
//
// The peer, in the same run: bench/db_writer_peer.py copies the writer's own PYTORCH_API, TASK and
// STRING_IDS rows out of the final file (before its timer), then writes them with Python sqlite3
// executemany in 10,000-row chunks with a commit per chunk, the way torch_npu's
// DbManager.insert_data_into_table does. The values are therefore identical by construction. The
// peer does strictly less work than the writer (no interning, no COMPUTE_TASK_INFO, no derived
// tables), so the headline ratio is a lower bound. A second peer run (--all-tables) copies every
// table of the writer's file the same way, for a ratio over identical file contents.

#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench_args.h"
#include "db/profile_writer.h"
#include "db/profile_writer_internal.h"
#include "profile_workload.h"
#include "trace/records.h"

#ifndef GPUPROF_DB_WRITER_PEER_SCRIPT
#define GPUPROF_DB_WRITER_PEER_SCRIPT "bench/db_writer_peer.py"
#endif

namespace gpuprof::bench {
namespace {

using trace::ApiCall;
using trace::DeviceTask;
using trace::Record;
using trace::TorchOp;

constexpr double kTargetRowsPerSecond = 1.0e6;
constexpr double kTargetRatio = 2.0;

struct Flags {
  std::uint64_t rows = 2'000'000;  // each of PYTORCH_API and TASK
  std::uint64_t batch = 8192;      // records per Submit
  std::uint64_t seed = 20240601;
  std::uint64_t repeats = 1;  // whole runs (generate, write, peers); the summary gives medians
  std::string out_dir;        // empty: a fresh temporary directory, removed afterwards
  std::string peer_script = GPUPROF_DB_WRITER_PEER_SCRIPT;
  bool keep = false;
  bool no_peer = false;
  bool with_api_calls = false;
};

void PrintUsage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: db_writer_benchmark [--rows N] [--batch B] [--seed S] [--repeats R] [--with-api-calls]\n"
      "                           [--out-dir DIR] [--keep] [--no-peer] [--peer-script PATH]\n"
      "\n"
      "Writes N PYTORCH_API + N TASK rows (kernels, with their COMPUTE_TASK_INFO rows) through\n"
      "db::ProfileWriter end to end (records -> renamed final file) and, in the same run, the same\n"
      "PYTORCH_API/TASK/STRING_IDS rows with Python sqlite3 executemany in 10,000-row chunks.\n"
      "\n"
      "  --rows N            TorchOp records and kernel records to write, each (default 2000000)\n"
      "  --batch B           records per ProfileWriter::Submit call (default 8192)\n"
      "  --seed S            generator seed (default 20240601)\n"
      "  --repeats R         R whole runs, each with its peers, then the medians (default 1);\n"
      "                      the writer and the peer react differently to a busy or throttled\n"
      "                      machine, so one run's ratio can be off either way\n"
      "  --with-api-calls    also submit one cudaLaunchKernel ApiCall per kernel (CANN_API rows;\n"
      "                      not counted in the headline rows)\n"
      "  --out-dir DIR       write under DIR instead of a fresh temporary directory\n"
      "  --keep              keep the written files\n"
      "  --no-peer           skip the Python peer\n"
      "  --peer-script PATH  the peer script (default: %s)\n"
      "  --help              this text\n"
      "\n"
      "Generation and batching are not timed. Timed: Create, Submit (moving batches in), Finalize.\n"
      "Headline rows = PYTORCH_API + TASK; 'all rows' = every row in the final file.\n",
      GPUPROF_DB_WRITER_PEER_SCRIPT);
}

// "--name value" and "--name=value" (bench_args.h). Returns false (after printing why) on bad input.
bool ParseFlags(int argc, char** argv, Flags* flags, bool* help) {
  const bool parsed = ParseArgs(
      "db_writer_benchmark", argc, argv,
      [](std::string_view name) {
        return name == "--keep" || name == "--no-peer" || name == "--with-api-calls";
      },
      [&](std::string_view name) {
        if (name == "--keep") flags->keep = true;
        if (name == "--no-peer") flags->no_peer = true;
        if (name == "--with-api-calls") flags->with_api_calls = true;
      },
      [&](std::string_view name, std::string_view value) -> OptionResult {
        std::uint64_t* number = nullptr;
        if (name == "--rows") number = &flags->rows;
        if (name == "--batch") number = &flags->batch;
        if (name == "--seed") number = &flags->seed;
        if (name == "--repeats") number = &flags->repeats;
        if (number != nullptr) return ParseUint(value, number) ? "" : "a non-negative integer";
        std::string* text = nullptr;
        if (name == "--out-dir") text = &flags->out_dir;
        if (name == "--peer-script") text = &flags->peer_script;
        if (text == nullptr) return std::nullopt;
        *text = std::string(value);
        return "";
      },
      help);
  if (!parsed || *help) return parsed;
  if (flags->rows == 0 || flags->batch == 0) {
    std::fprintf(stderr, "db_writer_benchmark: --rows and --batch must be > 0\n");
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Reading the result back (not timed).

struct TableCount {
  std::string name;
  std::uint64_t rows = 0;
};

// Row counts of every table in the file, in sqlite_master order. Empty on error (printed).
std::vector<TableCount> CountRows(const std::string& path) {
  std::vector<TableCount> counts;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "db_writer_benchmark: cannot open %s: %s\n", path.c_str(),
                 db != nullptr ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return counts;
  }
  std::vector<std::string> tables;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY rowid", -1, &stmt,
                         nullptr) == SQLITE_OK) {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    }
  }
  sqlite3_finalize(stmt);
  for (const std::string& table : tables) {
    std::string sql = "SELECT count(*) FROM \"" + table + "\"";
    TableCount count{table, 0};
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      count.rows = static_cast<std::uint64_t>(sqlite3_column_int64(stmt, 0));
    } else {
      std::fprintf(stderr, "db_writer_benchmark: %s: %s\n", sql.c_str(), sqlite3_errmsg(db));
    }
    sqlite3_finalize(stmt);
    counts.push_back(std::move(count));
  }
  sqlite3_close(db);
  return counts;
}

std::uint64_t CountOf(const std::vector<TableCount>& counts, std::string_view table) {
  for (const TableCount& count : counts) {
    if (count.name == table) return count.rows;
  }
  return 0;
}

std::uint64_t FileSize(const std::string& path) {
  std::error_code error;
  std::uintmax_t size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<std::uint64_t>(size);
}

// 1234567 -> "1,234,567".
std::string Grouped(std::uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The Python peer.

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// /usr/bin/python3 first, then python3 on PATH; the one chosen must import sqlite3.
std::optional<std::string> FindPython() {
  std::vector<std::string> candidates;
  if (access("/usr/bin/python3", X_OK) == 0) candidates.emplace_back("/usr/bin/python3");
  candidates.emplace_back("python3");
  for (const std::string& python : candidates) {
    std::string probe = ShellQuote(python) + " -c 'import sqlite3' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return python;
  }
  return std::nullopt;
}

struct PeerResult {
  std::uint64_t rows = 0;  // PYTORCH_API + TASK
  std::uint64_t string_ids = 0;
  double seconds = 0;
  std::uint64_t bytes = 0;
};

// Runs the peer; its stdout's last "peer-result ..." line carries the figures. nullopt on failure
// (the reason is printed).
std::optional<PeerResult> RunPeer(const std::string& python, const std::string& script,
                                  const std::string& source_db, const std::string& out_db, bool all_tables) {
  std::string command = ShellQuote(python) + " " + ShellQuote(script) + " --source " + ShellQuote(source_db) +
                        " --out " + ShellQuote(out_db) + (all_tables ? " --all-tables" : "");
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    std::fprintf(stderr, "db_writer_benchmark: popen(%s) failed\n", command.c_str());
    return std::nullopt;
  }
  std::optional<PeerResult> result;
  char line[1024];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    PeerResult parsed;
    if (std::sscanf(line, "peer-result rows=%" SCNu64 " string_ids=%" SCNu64 " seconds=%lf bytes=%" SCNu64,
                    &parsed.rows, &parsed.string_ids, &parsed.seconds, &parsed.bytes) == 4) {
      result = parsed;
    } else {
      std::fputs(line, stdout);  // the peer's own notes
    }
  }
  int rc = pclose(pipe);
  if (rc != 0 || !result) {
    std::fprintf(stderr, "db_writer_benchmark: peer failed (exit status %d): %s\n", rc, command.c_str());
    return std::nullopt;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

void PrintRow(const char* writer, std::uint64_t rows, double seconds, double bytes_per_row,
              std::optional<double> ratio) {
  double rate = seconds > 0 ? static_cast<double>(rows) / seconds : 0.0;
  char ratio_text[32] = "-";
  if (ratio) std::snprintf(ratio_text, sizeof ratio_text, "%.2fx", *ratio);
  std::printf("%-38s %12s %9.3f %12s %10.1f %10s\n", writer, Grouped(rows).c_str(), seconds,
              Grouped(static_cast<std::uint64_t>(rate)).c_str(), bytes_per_row, ratio_text);
}

// One whole run's figures, for the --repeats summary.
struct RunFigures {
  double writer_seconds = 0;
  double peer_seconds = 0;      // 0: no peer
  double peer_all_seconds = 0;  // 0: no peer
  std::uint64_t headline_rows = 0;
  std::uint64_t all_rows = 0;
  double cpu_seconds = 0;
};

int Run(const Flags& flags, RunFigures* figures) {
  namespace fs = std::filesystem;
  std::printf(
      "db_writer_benchmark: %s TorchOp + %s kernel records%s, Submit batches of %s records, seed %" PRIu64
      "\n",
      Grouped(flags.rows).c_str(), Grouped(flags.rows).c_str(),
      flags.with_api_calls ? " + 1 cudaLaunchKernel ApiCall per kernel" : "", Grouped(flags.batch).c_str(),
      flags.seed);

  // Generation (not timed).
  auto gen_start = std::chrono::steady_clock::now();
  Workload work = GenerateWorkload(flags.seed, flags.rows, flags.with_api_calls);
  double gen_seconds = Seconds(std::chrono::steady_clock::now() - gen_start);
  std::uint64_t op_links = 0;
  for (const TorchOp& op : work.ops) op_links += op.correlation_ids.empty() ? 0u : 1u;
  std::printf(
      "generated in %.2f s (not timed): %zu distinct op names, %zu input signatures, %zu kernel names, "
      "%s ops carry kernel correlation ids\n",
      gen_seconds, work.distinct_op_names, work.signatures, work.distinct_kernel_names,
      Grouped(op_links).c_str());

  std::string out_dir = flags.out_dir;
  bool made_temp = false;
  if (out_dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "gpuprof_db_bench_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "db_writer_benchmark: mkdtemp(%s) failed\n", pattern.c_str());
      return 1;
    }
    out_dir = pattern;
    made_temp = true;
  }
  auto cleanup = [&] {
    if (made_temp && !flags.keep) {
      std::error_code error;
      fs::remove_all(out_dir, error);
    }
  };

  db::WriterOptions options = WorkloadWriterOptions(work, out_dir, "db_writer_benchmark");

  // The Submit batches, built before the timer as a collector's per-thread buffers hold them when
  // it flushes (RecordCollector::Drain hands them over by move): alternate torch-op, kernel (and
  // API) batches. Building records is the producer's cost, like the peer's row tuples.
  const std::size_t op_count = work.ops.size();
  const std::size_t task_count = work.tasks.size();
  const std::size_t api_count = work.api_calls.size();
  std::vector<std::vector<Record>> batches = CutIntoBatches(&work, flags.batch);

  // Timed: Create + Submit (moving the batches in) + Finalize.
  double cpu0 = ProcessCpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  // Every batch arrives at once, so the queue may hold them all (the default limit would drop the
  // --with-api-calls stream; a live collector flushes while the program runs).
  StatusOr<std::unique_ptr<db::ProfileWriter>> created = db::internal::CreateProfileWriter(
      options, std::max(db::internal::kDefaultMaxQueuedRecords, op_count + task_count + api_count));
  if (!created.ok()) {
    std::fprintf(stderr, "db_writer_benchmark: ProfileWriter::Create: %s\n",
                 created.status().ToString().c_str());
    cleanup();
    return 1;
  }
  std::unique_ptr<db::ProfileWriter> writer = std::move(created).value();
  auto t1 = std::chrono::steady_clock::now();
  for (std::vector<Record>& batch : batches) writer->Submit(std::move(batch));
  auto t2 = std::chrono::steady_clock::now();
  // How far the writer thread got while records were still arriving: the rest is Finalize's drain.
  std::uint64_t written_at_submit_end = writer->stats().records;
  StatusOr<std::string> final_path = writer->Finalize(work.end_ns);
  auto t3 = std::chrono::steady_clock::now();
  double cpu_seconds = ProcessCpuSeconds() - cpu0;
  if (!final_path.ok()) {
    std::fprintf(stderr, "db_writer_benchmark: ProfileWriter::Finalize: %s\n",
                 final_path.status().ToString().c_str());
    cleanup();
    return 1;
  }
  db::WriterStats stats = writer->stats();
  writer.reset();

  double total_seconds = Seconds(t3 - t0);
  std::printf(
      "writer phases: Create %.3f s, Submit (moving the batches in) %.3f s, "
      "Finalize (drain + derive + index + rename) %.3f s\n"
      "  records the writer thread had written when the last Submit returned: %s of %s\n",
      Seconds(t1 - t0), Seconds(t2 - t1), Seconds(t3 - t2), Grouped(written_at_submit_end).c_str(),
      Grouped(op_count + task_count + api_count).c_str());
  // CPU time of the whole process (producer + writer thread) over the timed section, and the load
  // average: on a shared 2-core machine other work shows up as wall time well above CPU time.
  double load[1] = {0.0};
  getloadavg(load, 1);
  std::printf(
      "  process CPU time over the timed section: %.3f s (user+sys); 1-min load average at the end: %.2f\n",
      cpu_seconds, load[0]);
  std::printf("writer stats: %s records, %s rows, %s dropped, %s bytes\n", Grouped(stats.records).c_str(),
              Grouped(stats.rows).c_str(), Grouped(stats.dropped_records).c_str(),
              Grouped(stats.bytes).c_str());

  // Verification and per-table counts (not timed).
  std::uint64_t file_bytes = FileSize(*final_path);
  std::vector<TableCount> counts = CountRows(*final_path);
  std::uint64_t api_rows = CountOf(counts, "PYTORCH_API");
  std::uint64_t task_rows = CountOf(counts, "TASK");
  std::uint64_t all_rows = 0;
  std::printf("\nrows per table in %s (%s bytes):\n", final_path->c_str(), Grouped(file_bytes).c_str());
  for (const TableCount& count : counts) {
    all_rows += count.rows;
    if (count.rows > 0) std::printf("  %-26s %12s\n", count.name.c_str(), Grouped(count.rows).c_str());
  }
  bool partial_left = fs::exists(*final_path + db::kPartialSuffix);
  int status = 0;
  if (api_rows != op_count || task_rows != task_count || partial_left || file_bytes == 0) {
    std::fprintf(stderr,
                 "db_writer_benchmark: FAILED: PYTORCH_API %" PRIu64 " rows (expected %zu), TASK %" PRIu64
                 " rows (expected %zu), final file %" PRIu64 " bytes%s\n",
                 api_rows, op_count, task_rows, task_count, file_bytes,
                 partial_left ? ", a .partial file is left beside it" : "");
    status = 1;
  }
  std::uint64_t headline_rows = api_rows + task_rows;

  // The peers: the headline one (PYTORCH_API, TASK, STRING_IDS, as issue 3 defines it), then the
  // same method on every table of the writer's file.
  std::optional<PeerResult> peer;
  std::optional<PeerResult> peer_all;
  bool peer_failed = false;
  if (flags.no_peer) {
    std::printf("\npeer: skipped (--no-peer)\n");
  } else if (status == 0) {
    std::optional<std::string> python = FindPython();
    if (!python) {
      std::printf("\npeer: unavailable (no python3 with the sqlite3 module)\n");
    } else {
      std::printf("\npeer: %s %s\n", python->c_str(), flags.peer_script.c_str());
      std::fflush(stdout);
      peer = RunPeer(*python, flags.peer_script, *final_path, (fs::path(out_dir) / "python_peer.db").string(),
                     /*all_tables=*/false);
      std::fflush(stdout);
      if (peer) {
        peer_all = RunPeer(*python, flags.peer_script, *final_path,
                           (fs::path(out_dir) / "python_peer_all.db").string(), /*all_tables=*/true);
      }
      peer_failed = !peer.has_value() || !peer_all.has_value();
      if (peer && peer->rows != headline_rows) {
        std::fprintf(stderr, "db_writer_benchmark: peer wrote %" PRIu64 " rows, expected %" PRIu64 "\n",
                     peer->rows, headline_rows);
        peer_failed = true;
      }
      if (peer_all && peer_all->rows != all_rows) {
        std::fprintf(stderr,
                     "db_writer_benchmark: peer (all tables) wrote %" PRIu64 " rows, expected %" PRIu64 "\n",
                     peer_all->rows, all_rows);
        peer_failed = true;
      }
    }
  }
  bool have_peer = !peer_failed && peer && peer_all;

  auto rate = [](std::uint64_t rows, double seconds) {
    return seconds > 0 ? static_cast<double>(rows) / seconds : 0.0;
  };
  auto per_row = [](std::uint64_t bytes, std::uint64_t rows) {
    return rows > 0 ? static_cast<double>(bytes) / static_cast<double>(rows) : 0.0;
  };
  double writer_rate = rate(headline_rows, total_seconds);
  std::optional<double> ratio;
  std::optional<double> ratio_all;
  if (have_peer && peer->seconds > 0 && peer_all->seconds > 0) {
    ratio = writer_rate / rate(peer->rows, peer->seconds);
    ratio_all = rate(all_rows, total_seconds) / rate(peer_all->rows, peer_all->seconds);
  }
  std::printf("\n%-38s %12s %9s %12s %10s %10s\n", "writer", "rows", "seconds", "rows/s", "bytes/row",
              "vs python");
  PrintRow("gpuprof ProfileWriter (API+TASK)", headline_rows, total_seconds,
           per_row(file_bytes, headline_rows), ratio);
  if (have_peer) {
    PrintRow("python sqlite3 executemany (API+TASK)", peer->rows, peer->seconds,
             per_row(peer->bytes, peer->rows), 1.0);
  }
  PrintRow("gpuprof ProfileWriter (all rows)", all_rows, total_seconds, per_row(file_bytes, all_rows),
           ratio_all);
  if (have_peer) {
    PrintRow("python sqlite3 executemany (all rows)", peer_all->rows, peer_all->seconds,
             per_row(peer_all->bytes, peer_all->rows), 1.0);
  }
  std::printf("\nfile size: %.1f MiB (gpuprof)", static_cast<double>(file_bytes) / (1024.0 * 1024.0));
  if (have_peer) {
    std::printf(
        ", %.1f MiB (python API+TASK: PYTORCH_API, TASK, STRING_IDS; %s strings), %.1f MiB (python all rows)",
        static_cast<double>(peer->bytes) / (1024.0 * 1024.0), Grouped(peer->string_ids).c_str(),
        static_cast<double>(peer_all->bytes) / (1024.0 * 1024.0));
  }
  std::printf("\ntarget: >= 1.0M rows/s and >= 2x python\n");
  std::printf("result: %.2fM rows/s (%s)", writer_rate / 1e6,
              writer_rate >= kTargetRowsPerSecond ? "met" : "NOT met");
  if (ratio) {
    std::printf(", %.2fx python (%s); all rows: %.2fx python", *ratio,
                *ratio >= kTargetRatio ? "met" : "NOT met", *ratio_all);
  } else {
    std::printf(", ratio vs python not measured");
  }
  std::printf("\n");
  if (flags.keep) std::printf("kept: %s\n", out_dir.c_str());
  cleanup();
  if (peer_failed) status = 1;
  figures->writer_seconds = total_seconds;
  figures->headline_rows = headline_rows;
  figures->all_rows = all_rows;
  figures->cpu_seconds = cpu_seconds;
  if (have_peer) {
    figures->peer_seconds = peer->seconds;
    figures->peer_all_seconds = peer_all->seconds;
  }
  return status;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// --repeats: every run prints its own table; then one line per run and the medians.
int RunRepeated(const Flags& flags) {
  std::vector<RunFigures> runs;
  for (std::uint64_t r = 0; r < flags.repeats; ++r) {
    if (flags.repeats > 1)
      std::printf("\n===== run %" PRIu64 " of %" PRIu64 " =====\n", r + 1, flags.repeats);
    RunFigures figures;
    if (int status = Run(flags, &figures); status != 0) return status;
    runs.push_back(figures);
  }
  if (flags.repeats <= 1) return 0;
  std::printf("\n===== %" PRIu64 " runs =====\n", flags.repeats);
  std::printf("%-5s %12s %12s %10s %12s %12s\n", "run", "writer s", "python s", "vs python", "all rows vs",
              "writer CPU s");
  std::vector<double> writer, python, ratio, ratio_all;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunFigures& f = runs[i];
    const bool peer = f.peer_seconds > 0 && f.peer_all_seconds > 0;
    const double r = peer ? f.peer_seconds / f.writer_seconds : 0;  // same headline rows on both sides
    const double r_all = peer ? f.peer_all_seconds / f.writer_seconds : 0;
    std::printf("%-5zu %12.3f %12.3f %9.2fx %11.2fx %12.3f\n", i + 1, f.writer_seconds, f.peer_seconds, r,
                r_all, f.cpu_seconds);
    writer.push_back(f.writer_seconds);
    if (peer) {
      python.push_back(f.peer_seconds);
      ratio.push_back(r);
      ratio_all.push_back(r_all);
    }
  }
  const double writer_rate = static_cast<double>(runs.front().headline_rows) / Median(writer);
  std::printf("median: writer %.3f s (%.2fM rows/s, %s)", Median(writer), writer_rate / 1e6,
              writer_rate >= kTargetRowsPerSecond ? "met" : "NOT met");
  if (!ratio.empty()) {
    std::printf(", python %.3f s, %.2fx python (%s), all rows %.2fx", Median(python), Median(ratio),
                Median(ratio) >= kTargetRatio ? "met" : "NOT met", Median(ratio_all));
  }
  std::printf("\n");
  return 0;
}

}  // namespace
}  // namespace gpuprof::bench

int main(int argc, char** argv) {
  gpuprof::bench::Flags flags;
  bool help = false;
  if (!gpuprof::bench::ParseFlags(argc, argv, &flags, &help)) return 2;
  if (help) {
    gpuprof::bench::PrintUsage(stdout);
    return 0;
  }
  if (flags.repeats == 0) {
    std::fprintf(stderr, "db_writer_benchmark: --repeats must be at least 1\n");
    return 2;
  }
  return gpuprof::bench::RunRepeated(flags);
}
