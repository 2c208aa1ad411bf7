// Replay snapshot/restore throughput on host memory, through the real engine.
//
// Allocations are made through the HostPlatform's api table, so the Interceptor records them in the
// Inventory exactly as in a profiled run; replay::Snapshot then captures, inspects and restores
// them. The benchmark prints
//   - plain memcpy GB/s of the same footprint (the peer every figure is read against),
//   - Snapshot::Capture GB/s (a complete copy + chunk hashing into the arena the device keeps),
//   - per dirtied fraction: full restore (RestoreMode::kFull, the seed's baseline) against a dirty
//     restore (RestoreMode::kAuto: one batched hash of the footprint writing back only the chunks
//     that differ; its hashing part timed apart by Inspect).
// Every restore is verified before its time is accepted: Inspect's output hash must equal the
// snapshot's input hash, and the bytes must equal an independent copy taken before the capture.
// A wrong restore aborts the run; the benchmark cannot report a fast wrong answer.
//
// Host memory is not device memory: the figures say what the engine's own work costs (walk, hash,
// coalesce, copy) against the machine's memcpy, not what a GPU would do (see bench/README.md).

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "bench_args.h"
#include "device/host/host_platform.h"
#include "fakes/replay_rig.h"
#include "gpuprof/replay.h"
#include "replay/snapshot.h"

namespace gpuprof::bench {
namespace {

using device::DevicePtr;
using replay::RestoreMode;
using replay::RestoreStats;
using replay::Snapshot;

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = kKiB * 1024;
constexpr double kBytesPerGB = 1e9;  // decimal GB, as the anchors in REPLAY_SPEC.md use
constexpr std::uint64_t kMaxAllocations = 16;
constexpr double kDirtyPercents[] = {0.1, 6.0, 50.0, 100.0};

struct Flags {
  std::uint64_t footprint_mib = 1024;
  std::uint64_t chunk_kib = 64;
  std::uint64_t repeat = 5;
  std::uint64_t seed = 20240601;
};

void PrintUsage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: replay_host_benchmark [--footprint-mib N] [--chunk-kib K] [--repeat R] [--seed S]\n"
      "\n"
      "Measures replay's snapshot and restore on host memory through the real engine\n"
      "(replay::Snapshot on a HostDevice, allocations tracked by the Inventory), against a\n"
      "plain memcpy of the same footprint.\n"
      "\n"
      "  --footprint-mib N  total tracked memory, in up to 16 allocations (default 1024)\n"
      "  --chunk-kib K      dirty-detection chunk size (default 64)\n"
      "  --repeat R         timed repetitions per figure; the median is printed (default 5)\n"
      "  --seed S           seed of the random dirty-chunk positions (default 20240601)\n"
      "  --help             this text\n"
      "\n"
      "Columns: dirty %% of chunks written between restores; full restore ms and GB/s\n"
      "(footprint / time); dirty restore ms = Inspect hashing + kAuto copy, and its effective\n"
      "GB/s (footprint / time); bytes the dirty restore wrote back; speedup = full ms / dirty ms.\n");
}

// "--name value" and "--name=value" (bench_args.h). Returns false (after printing why) on bad input.
bool ParseFlags(int argc, char** argv, Flags* flags, bool* help) {
  const bool parsed = ParseArgs(
      "replay_host_benchmark", argc, argv, [](std::string_view) { return false; }, [](std::string_view) {},
      [&](std::string_view name, std::string_view value) -> OptionResult {
        std::uint64_t* target = nullptr;
        if (name == "--footprint-mib") target = &flags->footprint_mib;
        if (name == "--chunk-kib") target = &flags->chunk_kib;
        if (name == "--repeat") target = &flags->repeat;
        if (name == "--seed") target = &flags->seed;
        if (target == nullptr) return std::nullopt;
        return ParseUint(value, target) ? "" : "a non-negative integer";
      },
      help);
  if (!parsed || *help) return parsed;
  if (flags->footprint_mib == 0 || flags->chunk_kib == 0 || flags->repeat == 0) {
    std::fprintf(stderr, "replay_host_benchmark: --footprint-mib, --chunk-kib and --repeat must be > 0\n");
    return false;
  }
  return true;
}

template <typename Fn>
double TimeMs(Fn&& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> values) {
  GPUPROF_CHECK(!values.empty());
  std::sort(values.begin(), values.end());
  std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

double GBps(std::uint64_t bytes, double ms) {
  return ms <= 0.0 ? 0.0 : static_cast<double>(bytes) / kBytesPerGB / (ms / 1000.0);
}

unsigned char* HostBytes(DevicePtr ptr) {
  // HostPlatform's device addresses are the host addresses of the simulated memory.
  return reinterpret_cast<unsigned char*>(ptr);  // NOLINT(performance-no-int-to-ptr)
}

// One chunk of one tracked allocation, as Snapshot splits it.
struct ChunkRef {
  DevicePtr base = 0;
  std::uint64_t size = 0;
};

std::vector<ChunkRef> ListChunks(const std::vector<DevicePtr>& allocations,
                                 const std::vector<std::uint64_t>& sizes, std::uint64_t chunk_size) {
  std::vector<ChunkRef> chunks;
  for (std::size_t a = 0; a < allocations.size(); ++a) {
    for (std::uint64_t offset = 0; offset < sizes[a]; offset += chunk_size) {
      chunks.push_back(ChunkRef{allocations[a] + offset, std::min(chunk_size, sizes[a] - offset)});
    }
  }
  return chunks;
}

// Dirties `count` distinct chunks picked at random: one byte of each is inverted, which always
// changes the chunk's content. Returns the bytes a dirty restore must write back.
std::uint64_t DirtyChunks(const std::vector<ChunkRef>& chunks, std::size_t count, std::mt19937_64& rng,
                          std::vector<std::size_t>& all_indices) {
  std::vector<std::size_t> picks;
  picks.reserve(count);
  std::sample(all_indices.begin(), all_indices.end(), std::back_inserter(picks), count, rng);
  std::uint64_t bytes = 0;
  for (std::size_t index : picks) {
    const ChunkRef& chunk = chunks[index];
    std::uint64_t at = std::uniform_int_distribution<std::uint64_t>(0, chunk.size - 1)(rng);
    HostBytes(chunk.base)[at] ^= 0xFF;
    bytes += chunk.size;
  }
  return bytes;
}

// Aborts unless the device's bytes are the captured ones: by the engine's own hashes (Inspect's
// output hash against the snapshot's input hash) and byte for byte against `reference`.
void VerifyRestored(const char* what, Snapshot& snapshot, const replay::Inventory& inventory,
                    const std::vector<DevicePtr>& allocations, const std::vector<std::uint64_t>& sizes,
                    const std::vector<unsigned char>& reference) {
  StatusOr<std::uint64_t> state = snapshot.Inspect(inventory);
  GPUPROF_CHECK(state.ok()) << what << ": Inspect failed: " << state.status().ToString();
  GPUPROF_CHECK(*state == snapshot.input_hash())
      << what << ": memory after restore differs from the snapshot (output hash " << *state << ", input hash "
      << snapshot.input_hash() << ")";
  std::uint64_t offset = 0;
  for (std::size_t a = 0; a < allocations.size(); ++a) {
    GPUPROF_CHECK(std::memcmp(HostBytes(allocations[a]), reference.data() + offset, sizes[a]) == 0)
        << what << ": allocation " << a << " differs from the bytes taken before the snapshot";
    offset += sizes[a];
  }
}

int Run(const Flags& flags) {
  const std::uint64_t footprint = flags.footprint_mib * kMiB;
  const std::uint64_t chunk_size = flags.chunk_kib * kKiB;
  const std::uint64_t allocation_count = std::min(kMaxAllocations, flags.footprint_mib);
  const auto repeat = static_cast<std::size_t>(flags.repeat);

  device::host::HostPlatformOptions platform_options;
  platform_options.device_count = 1;
  testing::ReplayRig rig(platform_options);
  rig.inventory().EnableRecording(true);
  device::host::HostPlatform& platform = rig.platform();
  device::Device& device = rig.device(0);

  // Allocate through the api table (the Interceptor records each one) and fill with a pattern.
  std::vector<DevicePtr> allocations;
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t a = 0; a < allocation_count; ++a) {
    std::uint64_t size = footprint / allocation_count;
    if (a + 1 == allocation_count) size = footprint - size * (allocation_count - 1);
    StatusOr<DevicePtr> ptr = platform.Malloc(0, size);
    GPUPROF_CHECK(ptr.ok()) << "Malloc of " << size << " bytes failed: " << ptr.status().ToString();
    allocations.push_back(*ptr);
    sizes.push_back(size);
    unsigned char* bytes = HostBytes(*ptr);
    for (std::uint64_t offset = 0; offset + sizeof(std::uint64_t) <= size; offset += sizeof(std::uint64_t)) {
      std::uint64_t word = (a + 1) * 0x9E3779B97F4A7C15ull ^ offset * 0xBF58476D1CE4E5B9ull;
      std::memcpy(bytes + offset, &word, sizeof(word));
    }
  }
  GPUPROF_CHECK(rig.inventory().tracked_count() == allocation_count)
      << "the inventory tracks " << rig.inventory().tracked_count() << " allocations, expected "
      << allocation_count;

  // Peer: memcpy of the same footprint into a warmed buffer. The copy is also the reference that
  // every restore is compared with.
  std::vector<unsigned char> reference(footprint);
  auto copy_all = [&] {
    std::uint64_t offset = 0;
    for (std::size_t a = 0; a < allocations.size(); ++a) {
      std::memcpy(reference.data() + offset, HostBytes(allocations[a]), sizes[a]);
      offset += sizes[a];
    }
  };
  copy_all();
  std::vector<double> memcpy_ms;
  for (std::size_t r = 0; r < repeat; ++r) memcpy_ms.push_back(TimeMs(copy_all));
  const double memcpy_median = Median(memcpy_ms);

  // Snapshot: a complete capture each time (copy + chunk hashes into the arena, which the device
  // keeps), as a first replayed launch does; the arena's one-time allocation is left out.
  Status drained = device.Synchronize(std::chrono::seconds(10));
  GPUPROF_CHECK(drained.ok()) << "device did not drain: " << drained.ToString();
  replay::SnapshotOptions snapshot_options;
  snapshot_options.chunk_size = chunk_size;
  std::optional<Snapshot> snapshot;
  snapshot.emplace(device);
  GPUPROF_CHECK(snapshot->Capture(rig.inventory(), snapshot_options))
      << "snapshot incomplete: " << snapshot->failure();
  std::vector<double> capture_ms;
  for (std::size_t r = 0; r < repeat; ++r) {
    snapshot->Invalidate();  // capture everything again
    capture_ms.push_back(TimeMs([&] { snapshot->Capture(rig.inventory(), snapshot_options); }));
    GPUPROF_CHECK(snapshot->ok()) << "snapshot incomplete: " << snapshot->failure();
  }
  GPUPROF_CHECK(snapshot->regions().size() == allocation_count && snapshot->total_bytes() == footprint)
      << "snapshot holds " << snapshot->regions().size() << " regions / " << snapshot->total_bytes()
      << " bytes, expected " << allocation_count << " / " << footprint;
  const double capture_median = Median(capture_ms);
  VerifyRestored("snapshot", *snapshot, rig.inventory(), allocations, sizes, reference);

  const std::vector<ChunkRef> chunks = ListChunks(allocations, sizes, chunk_size);
  std::vector<std::size_t> all_indices(chunks.size());
  for (std::size_t i = 0; i < all_indices.size(); ++i) all_indices[i] = i;

  std::printf("replay_host_benchmark: footprint %" PRIu64 " MiB in %" PRIu64 " allocations, chunk %" PRIu64
              " KiB (%zu chunks), median of %zu, GB = 1e9 bytes\n",
              flags.footprint_mib, allocation_count, flags.chunk_kib, chunks.size(), repeat);
  std::printf("memcpy (peer)         %9.2f ms  %7.2f GB/s\n", memcpy_median, GBps(footprint, memcpy_median));
  std::printf(
      "snapshot (Capture)    %9.2f ms  %7.2f GB/s  (%.2fx memcpy time; copy + hash into the kept arena)\n",
      capture_median, GBps(footprint, capture_median), capture_median / memcpy_median);
  std::printf("\n");
  std::printf("%8s %8s | %9s %9s | %9s %9s %9s %9s | %14s | %8s | %10s\n", "dirty %", "chunks", "full ms",
              "full GB/s", "dirty ms", "(hash ms", "copy ms)", "eff GB/s", "written back", "speedup",
              "vs full+B6");
  std::printf("%s\n", std::string(131, '-').c_str());

  for (double percent : kDirtyPercents) {
    std::mt19937_64 rng(flags.seed);
    const auto wanted =
        static_cast<std::size_t>(std::llround(static_cast<double>(chunks.size()) * percent / 100.0));
    const std::size_t dirty_count = std::clamp<std::size_t>(wanted, 1, chunks.size());

    std::vector<double> full_ms, dirty_ms, hash_ms, copy_ms;
    std::uint64_t written_back = 0;
    for (std::size_t r = 0; r < repeat; ++r) {
      // Full restore: the seed's baseline writes every captured byte whatever changed.
      DirtyChunks(chunks, dirty_count, rng, all_indices);
      RestoreStats full;
      full_ms.push_back(
          TimeMs([&] { full = snapshot->Restore(rig.inventory(), RestoreMode::kFull, nullptr); }));
      GPUPROF_CHECK(full.regions_restored == allocation_count && full.bytes_restored == footprint)
          << "full restore wrote " << full.bytes_restored << " bytes in " << full.regions_restored
          << " regions (skipped " << full.regions_skipped << ", failed " << full.regions_failed << ")";
      VerifyRestored("full restore", *snapshot, rig.inventory(), allocations, sizes, reference);

      // Dirty restore: one batched operation hashes the footprint (the pass's output, B6) and
      // writes back the chunks whose hash differs. Its hashing part is timed on its own after, by
      // Inspect over the restored footprint.
      const std::uint64_t expected = DirtyChunks(chunks, dirty_count, rng, all_indices);
      RestoreStats dirty;
      std::uint64_t output_hash = 0;
      const double restoring =
          TimeMs([&] { dirty = snapshot->Restore(rig.inventory(), RestoreMode::kAuto, &output_hash); });
      GPUPROF_CHECK(output_hash != snapshot->input_hash())
          << "the restore did not see the " << dirty_count << " dirtied chunks";
      const double hashing = TimeMs([&] { GPUPROF_CHECK(snapshot->Inspect(rig.inventory()).ok()); });
      const double copying = std::max(0.0, restoring - hashing);
      GPUPROF_CHECK(dirty.regions_restored == allocation_count && dirty.dirty_chunks == dirty_count &&
                    dirty.bytes_restored == expected)
          << "dirty restore found " << dirty.dirty_chunks << " chunks and wrote " << dirty.bytes_restored
          << " bytes; " << dirty_count << " chunks (" << expected << " bytes) were dirtied";
      VerifyRestored("dirty restore", *snapshot, rig.inventory(), allocations, sizes, reference);
      hash_ms.push_back(hashing);
      copy_ms.push_back(copying);
      dirty_ms.push_back(restoring);
      written_back = dirty.bytes_restored;
    }

    const double full_median = Median(full_ms);
    const double dirty_median = Median(dirty_ms);
    char written[32];
    std::snprintf(written, sizeof(written), "%.2f MiB",
                  static_cast<double>(written_back) / static_cast<double>(kMiB));
    // With the determinism check on (the default, B6) every pass is hashed anyway, so the full
    // restore's real per-pass cost is its copy plus that hash: the last column compares to it.
    const double full_with_hash = full_median + Median(hash_ms);
    std::printf("%8.1f %8zu | %9.2f %9.2f | %9.2f %9.2f %9.2f %9.2f | %14s | %7.2fx | %9.2fx\n", percent,
                dirty_count, full_median, GBps(footprint, full_median), dirty_median, Median(hash_ms),
                Median(copy_ms), GBps(footprint, dirty_median), written, full_median / dirty_median,
                full_with_hash / dirty_median);
  }
  std::printf(
      "\nevery restore verified: Inspect output hash == snapshot input hash, bytes == pre-snapshot copy\n");
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
  return gpuprof::bench::Run(flags);
}
