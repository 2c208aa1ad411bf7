// `gpuprof export --format perfetto` (db::ExportPerfettoTrace) at growing profile sizes, to show
// how its time grows with the kernels linked to ops (issue 39: the flow query scanned TASK once per
// op, so 10k linked kernels took 5.9 s, 20k 18.9 s, 40k 75 s).
//
// For each size N the program generates bench/profile_workload.h's training profile (N TorchOp and
// N kernel records, every kernel linked to the op that launched it), writes it through
// db::ProfileWriter (not timed) and times the export of that DB into a trace file. The table gives
// the wall and CPU time, the time per linked kernel and SQLite's VM steps of the export's queries
// (the work, whatever the machine); the last column is each size's wall and CPU time over the
// previous size's, read against the size ratio: 2.0 for twice the kernels is linear, 4.0 quadratic.
// CPU time is the steadier figure on a shared machine.

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench_args.h"
#include "db/perfetto_export.h"
#include "db/profile_writer.h"
#include "db/profile_writer_internal.h"
#include "profile_workload.h"

namespace gpuprof::bench {
namespace {

struct Flags {
  std::vector<std::uint64_t> sizes = {50'000, 100'000};
  std::uint64_t seed = 20240601;
  std::string out_dir;  // empty: a fresh temporary directory, removed afterwards
  bool keep = false;
};

void PrintUsage(std::FILE* out) {
  std::fprintf(out,
               "usage: export_benchmark [--kernels N[,N...]] [--seed S] [--out-dir DIR] [--keep]\n"
               "\n"
               "Writes one profile DB per size (N torch ops and N kernels, each kernel linked to its op;\n"
               "not timed) and times `gpuprof export --format perfetto` of each.\n"
               "\n"
               "  --kernels N,...  the sizes, ascending (default 50000,100000)\n"
               "  --seed S         generator seed (default 20240601)\n"
               "  --out-dir DIR    write under DIR instead of a fresh temporary directory\n"
               "  --keep           keep the DBs and traces\n"
               "  --help           this text\n");
}

bool ParseSizes(std::string_view text, std::vector<std::uint64_t>* sizes) {
  sizes->clear();
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::uint64_t size = 0;
    if (!ParseUint(text.substr(0, comma), &size) || size == 0) return false;
    if (!sizes->empty() && size <= sizes->back()) return false;
    sizes->push_back(size);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return !sizes->empty();
}

bool ParseFlags(int argc, char** argv, Flags* flags, bool* help) {
  return ParseArgs(
      "export_benchmark", argc, argv, [](std::string_view name) { return name == "--keep"; },
      [&](std::string_view) { flags->keep = true; },
      [&](std::string_view name, std::string_view value) -> OptionResult {
        if (name == "--kernels") return ParseSizes(value, &flags->sizes) ? "" : "ascending positive integers";
        if (name == "--seed") return ParseUint(value, &flags->seed) ? "" : "a non-negative integer";
        if (name == "--out-dir") {
          flags->out_dir = std::string(value);
          return "";
        }
        return std::nullopt;
      },
      help);
}

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Writes the workload of `kernels` linked kernels under `dir`; the DB's path, or "" (printed why).
std::string WriteProfile(const Flags& flags, std::uint64_t kernels, const std::string& dir) {
  Workload work = GenerateWorkload(flags.seed, kernels, /*with_api_calls=*/false);
  const db::WriterOptions options = WorkloadWriterOptions(work, dir, "export_benchmark");
  const std::int64_t end_ns = work.end_ns;
  const std::size_t records = work.ops.size() + work.tasks.size();
  std::vector<std::vector<trace::Record>> batches = CutIntoBatches(&work, 8192);
  StatusOr<std::unique_ptr<db::ProfileWriter>> writer =
      db::internal::CreateProfileWriter(options, std::max(db::internal::kDefaultMaxQueuedRecords, records));
  if (!writer.ok()) {
    std::fprintf(stderr, "export_benchmark: ProfileWriter::Create: %s\n", writer.status().ToString().c_str());
    return "";
  }
  for (std::vector<trace::Record>& batch : batches) (*writer)->Submit(std::move(batch));
  StatusOr<std::string> path = (*writer)->Finalize(end_ns);
  if (!path.ok()) {
    std::fprintf(stderr, "export_benchmark: ProfileWriter::Finalize: %s\n", path.status().ToString().c_str());
    return "";
  }
  return *path;
}

int Run(const Flags& flags) {
  namespace fs = std::filesystem;
  std::string out_dir = flags.out_dir;
  bool made_temp = false;
  if (out_dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "gpuprof_export_bench_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "export_benchmark: mkdtemp(%s) failed\n", pattern.c_str());
      return 1;
    }
    out_dir = pattern;
    made_temp = true;
  }
  std::printf("export_benchmark: gpuprof export --format perfetto, seed %" PRIu64 "\n\n", flags.seed);
  std::printf("%14s %10s %10s %12s %8s %10s %11s %12s %26s\n", "linked kernels", "slices", "flows",
              "trace MB", "wall s", "CPU s", "µs/kernel", "VM steps (M)", "wall / CPU vs previous");
  int exit_code = 0;
  double previous_seconds = 0;
  double previous_cpu = 0;
  std::uint64_t previous_size = 0;
  for (std::uint64_t kernels : flags.sizes) {
    const std::string dir = out_dir + "/n" + std::to_string(kernels);
    std::error_code ec;
    fs::create_directories(dir, ec);
    const std::string db = WriteProfile(flags, kernels, dir);
    if (db.empty()) {
      exit_code = 1;
      break;
    }
    const std::string trace = dir + "/trace.json";
    const double cpu0 = ProcessCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    StatusOr<db::ExportSummary> summary = db::ExportPerfettoTrace({{db, 0}}, trace);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = ProcessCpuSeconds() - cpu0;
    if (!summary.ok()) {
      std::fprintf(stderr, "export_benchmark: export: %s\n", summary.status().ToString().c_str());
      exit_code = 1;
      break;
    }
    std::string growth = "-";
    if (previous_size > 0) {
      char text[64];
      std::snprintf(text, sizeof(text), "%.2fx / %.2fx for %.2fx", seconds / previous_seconds,
                    cpu / previous_cpu, static_cast<double>(kernels) / static_cast<double>(previous_size));
      growth = text;
    }
    std::printf("%14" PRIu64 " %10" PRIu64 " %10" PRIu64 " %12.1f %8.2f %10.2f %11.2f %12.1f %26s\n", kernels,
                summary->slices, summary->flows, static_cast<double>(summary->bytes) / 1e6, seconds, cpu,
                seconds * 1e6 / static_cast<double>(kernels),
                static_cast<double>(summary->sqlite_steps) / 1e6, growth.c_str());
    std::fflush(stdout);
    previous_seconds = seconds;
    previous_cpu = cpu;
    previous_size = kernels;
    if (!flags.keep) {
      fs::remove(trace, ec);
    }
  }
  if (made_temp && !flags.keep) {
    std::error_code ec;
    fs::remove_all(out_dir, ec);
  } else {
    std::printf("\nkept under %s\n", out_dir.c_str());
  }
  return exit_code;
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
  return gpuprof::bench::Run(flags);
}
