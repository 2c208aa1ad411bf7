// Replay snapshot and restore on one NVIDIA GPU, through the real engine, against CUPTI's
// Checkpoint API and the copy floors, in one run (REPLAY_SPEC.md B1-B3; bench/README.md).
//
// gpuprof: the allocations are recorded in a replay::Inventory as the allocation callbacks record
// them, and a replay::Snapshot on a CudaDevice captures them (the first capture; after a dirty
// kernel, incremental captures) and restores them (RestoreMode kAuto, kExact, kFull): the calls the
// replay controller makes around each pass, without CUPTI. CUPTI Checkpoint (libcheckpoint.so,
// dlopened, so the peer is optional) saves and restores the same memory after the same dirty
// kernel. The floors are plain copies of the footprint (device to device; to pinned host memory
// and back, the seed's design) and, for dirty restores, one hash pass plus the dirty bytes at copy
// bandwidth.
//
// Every gpuprof figure is verified before it is printed: after a capture or restore the engine's
// own hash of the device's bytes (Snapshot::Inspect) must equal the snapshot's input hash, and an
// independent hash of the footprint (Device::HashChunks over every allocation) must equal the one
// taken after the capture; a dirty restore must have written at least the rewritten chunks. A row
// that fails says FAILED and the program exits 1. CUPTI's restores are checked the same way; a
// wrong one is reported, not fatal.
//
// The CUPTI Checkpoint API saves everything the context holds, so it runs after gpuprof's arena is
// released and the floors' buffers are freed: it then saves the footprint plus the benchmark's and
// CudaDevice's small buffers (chunk tables, hash scratch, pinned staging).

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_checkpoint.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/hash.h"
#include "bench_args.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_driver.h"
#include "device/device.h"
#include "gpuprof/replay.h"
#include "gpuprof/status.h"
#include "replay/inventory.h"
#include "replay/snapshot.h"
#include "replay_device_benchmark_kernels.h"

namespace gpuprof::bench {
namespace {

namespace ckpt = NV::Cupti::Checkpoint;
using device::DevicePtr;
using device::StorageTier;
using replay::RestoreMode;

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = kKiB * 1024;
constexpr std::uint64_t kGiB = kMiB * 1024;
constexpr std::uint64_t kChunk = 64 * kKiB;  // the engine's default chunk (SnapshotOptions)
// Workload (b): region sizes, log-uniform between these, multiples of kRegionAlign, fixed seed.
constexpr std::uint64_t kRegionMin = 32 * kKiB;
constexpr std::uint64_t kRegionMax = 4 * kMiB;
constexpr std::uint64_t kRegionAlign = 4 * kKiB;
constexpr std::uint64_t kRegionSeed = 20261201;
constexpr std::uint64_t kComparisonRegions = 64;  // (b)'s bytes again, in this many regions
// Left free beside the footprint when sizing the device-to-device floor's destination.
constexpr std::uint64_t kDeviceMargin = 1 * kGiB;

// Share of chunks the dirty kernel rewrites: every stride-th chunk of the region table.
struct Level {
  const char* label;
  std::uint64_t stride;
};
constexpr Level kLevelsA[] = {{"0.1%", 1024}, {"6.25%", 16}, {"50%", 2}, {"100%", 1}};
constexpr Level kLevelsB[] = {{"6.25%", 16}};
constexpr std::uint64_t kHeadlineStride = 16;

constexpr RestoreMode kModes[] = {RestoreMode::kAuto, RestoreMode::kExact, RestoreMode::kFull};
constexpr std::size_t kModeCount = std::size(kModes);

// Targets (the issue), for workload (a) at 8 GiB in 64 allocations and (b) at 4096 regions.
constexpr double kTargetDeviceRestoreMs = 3.0;       // restore per pass, device tier, 6.25%
constexpr double kTargetDeviceFirstMs = 5.5;         // first snapshot, arena allocation excluded
constexpr double kTargetDeviceIncrementalMs = 3.0;   // incremental snapshot, 6.25% changed
constexpr double kTargetHostRestoreMs = 15.0;        // restore per pass, host tier, 6.25%
constexpr double kTargetHostFullSnapshotMs = 250.0;  // host tier, 100% changed, pool allocated
constexpr double kTargetRegionRatio = 1.25;          // 4096 regions / the same bytes in 64
constexpr double kTargetFootprintGib = 8.0;
constexpr std::uint64_t kTargetAllocations = 64;
constexpr std::uint64_t kTargetRegions = 4096;

// ---------------------------------------------------------------------------------------------
// Small helpers

__attribute__((format(printf, 1, 2))) std::string Format(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  if (n < 0) return {};
  return std::string(buffer, std::min(static_cast<std::size_t>(n), sizeof(buffer) - 1));
}

// A benchmark program, not library code: a failed setup step ends the run with the step named.
[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "replay_device_benchmark: %s\n", why.c_str());
  std::fflush(stdout);
  std::exit(1);
}

void CudaCheck(cudaError_t error, const std::string& what) {
  if (error != cudaSuccess) Die(what + ": " + cudaGetErrorString(error));
}

void Sync() { CudaCheck(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

// Wall time of `fn` from an idle device until the device is idle again. The engine's and CUPTI's
// calls synchronize themselves; the final synchronize costs microseconds and treats both alike.
template <typename Fn>
double TimedMs(Fn&& fn) {
  Sync();
  const auto start = std::chrono::steady_clock::now();
  fn();
  Sync();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double NsToMs(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }

void* AsPointer(DevicePtr address) {
  return reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr)
}

std::string FormatBytes(std::uint64_t bytes) {
  if (bytes >= kGiB) return Format("%.2f GiB", static_cast<double>(bytes) / static_cast<double>(kGiB));
  return Format("%.1f MiB", static_cast<double>(bytes) / static_cast<double>(kMiB));
}

std::string FormatMs(double ms) {
  if (ms < 10.0) return Format("%.3f", ms);
  if (ms < 1000.0) return Format("%.2f", ms);
  return Format("%.1f", ms);
}

const char* TierLabel(StorageTier tier) { return tier == StorageTier::kDevice ? "device" : "host (pinned)"; }

// Samples of one figure, and whether each was verified.
struct Series {
  std::vector<double> ms;
  std::string failure;  // the first verification that failed ("" when all passed)
  std::string error;    // the operation itself failed; later samples are missing
  void Fail(std::string why) {
    if (failure.empty()) failure = std::move(why);
  }
  bool has_samples() const { return !ms.empty(); }
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

double Min(const std::vector<double>& values) { return *std::min_element(values.begin(), values.end()); }

std::uint64_t MedianOf(const std::vector<std::uint64_t>& values) {
  std::vector<std::uint64_t> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  return sorted.empty() ? 0 : sorted[sorted.size() / 2];
}

// ---------------------------------------------------------------------------------------------
// Flags

struct Flags {
  double footprint_gib = 8.0;
  std::uint64_t allocations = 64;
  std::uint64_t regions = kTargetRegions;
  std::uint64_t repeat = 5;
  std::uint64_t slow_repeat = 1;
  std::uint64_t device_reserve_mib = 2048;
  bool quick = false;
  bool tier_device = true;
  bool tier_host = true;
  bool cupti = true;
  bool cupti_transfer = false;
};

void PrintUsage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: replay_device_benchmark [--footprint-gib G] [--allocations N] [--regions N] [--repeat R]\n"
      "                               [--slow-repeat R] [--tiers device,host] [--quick] [--no-cupti]\n"
      "                               [--cupti-transfer] [--device-reserve-mib M]\n"
      "\n"
      "Replay snapshot and restore on GPU 0 through gpuprof's engine (replay::Snapshot on a\n"
      "CudaDevice), against CUPTI's Checkpoint API and the copy floors, in one run; prints a\n"
      "markdown table (bench/README.md, replay_device_benchmark).\n"
      "\n"
      "  --footprint-gib G      workload (a): G GiB in --allocations allocations (default 8)\n"
      "  --allocations N        workload (a)'s allocation count (default 64)\n"
      "  --regions N            workload (b): N regions of 32 KiB-4 MiB (log-uniform, fixed seed),\n"
      "                         against the same bytes in 64 regions; 0 skips it (default 4096)\n"
      "  --repeat R             samples per figure; median and min are printed (default 5)\n"
      "  --slow-repeat R        samples of CUPTI's host-tier saves, seconds each (default 1)\n"
      "  --tiers LIST           storage tiers to measure: device, host or both (default device,host)\n"
      "  --quick                a smoke run: 0.25 GiB, 256 regions, --repeat 2 (explicit flags win)\n"
      "  --no-cupti             skip the CUPTI Checkpoint peer\n"
      "  --cupti-transfer       CUPTI with CUPTI_CHECKPOINT_OPT_TRANSFER (changed blocks only)\n"
      "  --device-reserve-mib M device memory both keep free for the device tier (default 2048)\n"
      "  --help                 this text\n"
      "\n"
      "CUPTI's libcheckpoint.so is dlopened from $GPUPROF_CUPTI_CHECKPOINT_LIBRARY, the library\n"
      "search path, the toolkit this was built with, or /usr/local/cuda/{lib64,extras/CUPTI/lib64}.\n"
      "Exit status: 0 when every gpuprof figure was verified (targets not met included), 1 when one\n"
      "failed or the setup failed, 2 on bad arguments.\n");
}

bool ParseTiers(std::string_view text, Flags* flags) {
  flags->tier_device = false;
  flags->tier_host = false;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    if (item == "device") {
      flags->tier_device = true;
    } else if (item == "host" || item == "pinned" || item == "pinned-host") {
      flags->tier_host = true;
    } else {
      return false;
    }
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return flags->tier_device || flags->tier_host;
}

// "--name value" and "--name=value" (bench_args.h); --quick's sizes apply to the flags not given.
bool ParseFlags(int argc, char** argv, Flags* flags, bool* help) {
  bool footprint_set = false;
  bool regions_set = false;
  bool repeat_set = false;
  const bool parsed = ParseArgs(
      "replay_device_benchmark", argc, argv,
      [](std::string_view name) {
        return name == "--quick" || name == "--no-cupti" || name == "--cupti-transfer";
      },
      [&](std::string_view name) {
        if (name == "--quick") flags->quick = true;
        if (name == "--no-cupti") flags->cupti = false;
        if (name == "--cupti-transfer") flags->cupti_transfer = true;
      },
      [&](std::string_view name, std::string_view value) -> OptionResult {
        if (name == "--footprint-gib") {
          footprint_set = true;
          return ParsePositiveDouble(value, &flags->footprint_gib) ? "" : "a positive number";
        }
        if (name == "--allocations") {
          return ParseUint(value, &flags->allocations) && flags->allocations > 0 ? "" : "a positive integer";
        }
        if (name == "--regions") {
          regions_set = true;
          return ParseUint(value, &flags->regions) ? "" : "a non-negative integer";
        }
        if (name == "--repeat") {
          repeat_set = true;
          return ParseUint(value, &flags->repeat) && flags->repeat > 0 ? "" : "a positive integer";
        }
        if (name == "--slow-repeat") {
          return ParseUint(value, &flags->slow_repeat) && flags->slow_repeat > 0 ? "" : "a positive integer";
        }
        if (name == "--tiers")
          return ParseTiers(value, flags) ? "" : "device, host or both (comma-separated)";
        if (name == "--device-reserve-mib") {
          return ParseUint(value, &flags->device_reserve_mib) ? "" : "a non-negative integer";
        }
        return std::nullopt;
      },
      help);
  if (!parsed || *help) return parsed;
  if (flags->quick) {
    if (!footprint_set) flags->footprint_gib = 0.25;
    if (!regions_set) flags->regions = 256;
    if (!repeat_set) flags->repeat = 2;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// The workloads' memory

struct Region {
  DevicePtr base = 0;
  std::uint64_t size = 0;
};

// `count` sizes of `total / count` bytes rounded down to `align`; the last takes the remainder.
std::vector<std::uint64_t> EqualSizes(std::uint64_t total, std::uint64_t count, std::uint64_t align) {
  std::vector<std::uint64_t> sizes;
  const std::uint64_t each = total / count / align * align;
  for (std::uint64_t i = 0; i + 1 < count; ++i) sizes.push_back(each);
  sizes.push_back(total - each * (count - 1));
  return sizes;
}

// Log-uniform in [kRegionMin, kRegionMax], multiples of kRegionAlign, from a fixed seed (the bits
// are turned into a double here, so the sizes do not depend on the standard library's
// distributions).
std::vector<std::uint64_t> LogUniformSizes(std::uint64_t count) {
  std::mt19937_64 rng(kRegionSeed);
  const double lo = std::log(static_cast<double>(kRegionMin));
  const double hi = std::log(static_cast<double>(kRegionMax));
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t i = 0; i < count; ++i) {
    const double unit = static_cast<double>(rng() >> 11) * 0x1p-53;
    const double size = std::exp(lo + unit * (hi - lo));
    auto rounded =
        static_cast<std::uint64_t>(std::llround(size / static_cast<double>(kRegionAlign))) * kRegionAlign;
    sizes.push_back(std::clamp(rounded, kRegionMin, kRegionMax));
  }
  return sizes;
}

// The chunks one rewrite touches, as a device array for LaunchRewrite.
struct DirtySet {
  Level level{};
  std::uint32_t count = 0;  // chunks
  std::uint64_t bytes = 0;
  DeviceSpan* spans = nullptr;  // device memory
};

// One workload's allocations: cudaMalloc'd, filled with epoch 0's pattern and recorded in an
// Inventory as replay's allocation callbacks record them; freed (and forgotten) at destruction.
class Footprint {
 public:
  Footprint(std::string name, const std::vector<std::uint64_t>& sizes, const std::vector<Level>& levels,
            int ordinal)
      : name_(std::move(name)) {
    inventory_.EnableRecording(true);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      void* pointer = nullptr;
      CudaCheck(cudaMalloc(&pointer, sizes[i]),
                Format("cudaMalloc of %" PRIu64 " bytes (allocation %zu of %zu, %s)", sizes[i], i + 1,
                       sizes.size(), name_.c_str()));
      const auto base = reinterpret_cast<DevicePtr>(pointer);
      if (base % 16 != 0) Die("cudaMalloc returned an address not aligned to 16 bytes");
      regions_.push_back(Region{base, sizes[i]});
      bytes_ += sizes[i];
      chunks_ += base::ChunkCount(sizes[i], kChunk);
      CudaCheck(LaunchFill(base, sizes[i], nullptr), "the fill kernel");
      inventory_.RecordAlloc(device::PointerInfo{base, sizes[i], device::MemoryKind::kDeviceLocal, ordinal});
    }
    Sync();
    if (inventory_.tracked_count() != regions_.size()) {
      Die(Format("the inventory tracks %zu allocations, %zu were recorded", inventory_.tracked_count(),
                 regions_.size()));
    }
    for (const Level& level : levels) sets_.push_back(MakeDirtySet(level));
  }

  ~Footprint() {
    for (DirtySet& set : sets_) cudaFree(set.spans);
    for (const Region& region : regions_) {
      inventory_.RecordFree(region.base);
      cudaFree(AsPointer(region.base));
    }
  }

  Footprint(const Footprint&) = delete;
  Footprint& operator=(const Footprint&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<Region>& regions() const { return regions_; }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t chunks() const { return chunks_; }
  const std::vector<DirtySet>& sets() const { return sets_; }
  replay::Inventory& inventory() { return inventory_; }

  // The dirty kernel: one launch rewriting every chunk of `set` with a new pattern; then waits.
  void Rewrite(const DirtySet& set) {
    CudaCheck(LaunchRewrite(set.spans, set.count, ++epoch_, nullptr), "the dirty kernel");
    Sync();
  }

 private:
  // Every level.stride-th chunk, counting chunks region by region from the table's first (the
  // engine's chunks: chunk c of a region covers [c * kChunk, min((c + 1) * kChunk, size))).
  DirtySet MakeDirtySet(const Level& level) {
    DirtySet set;
    set.level = level;
    std::vector<DeviceSpan> spans;
    std::uint64_t index = 0;
    for (const Region& region : regions_) {
      for (std::uint64_t offset = 0; offset < region.size; offset += kChunk, ++index) {
        if (index % level.stride != 0) continue;
        const std::uint64_t bytes = std::min(kChunk, region.size - offset);
        spans.push_back(DeviceSpan{region.base + offset, bytes});
        set.bytes += bytes;
      }
    }
    if (spans.size() > 0x7fffffffu) Die("too many dirty chunks for one launch");
    set.count = static_cast<std::uint32_t>(spans.size());
    void* device = nullptr;
    CudaCheck(cudaMalloc(&device, std::max<std::size_t>(1, spans.size() * sizeof(DeviceSpan))),
              "cudaMalloc of a dirty-chunk table");
    if (!spans.empty()) {
      CudaCheck(cudaMemcpy(device, spans.data(), spans.size() * sizeof(DeviceSpan), cudaMemcpyHostToDevice),
                "cudaMemcpy of a dirty-chunk table");
    }
    set.spans = static_cast<DeviceSpan*>(device);
    return set;
  }

  std::string name_;
  replay::Inventory inventory_;
  std::vector<Region> regions_;
  std::uint64_t bytes_ = 0;
  std::uint64_t chunks_ = 0;
  std::vector<DirtySet> sets_;
  std::uint64_t epoch_ = 0;
};

// An independent hash of the footprint's bytes (Device::HashChunks per allocation, combined):
// what a restore must bring back, whoever restored.
StatusOr<std::uint64_t> HashFootprint(device::Device& device, const Footprint& footprint) {
  std::vector<std::uint64_t> all;
  all.reserve(footprint.chunks());
  std::vector<std::uint64_t> one;
  for (const Region& region : footprint.regions()) {
    one.assign(base::ChunkCount(region.size, kChunk), 0);
    GPUPROF_RETURN_IF_ERROR(device.HashChunks(region.base, region.size, kChunk, one));
    all.insert(all.end(), one.begin(), one.end());
  }
  return base::CombineHashes(all);
}

// ---------------------------------------------------------------------------------------------
// The floors: plain copies of the whole footprint

struct CopyFloors {
  Series d2d_save;     // footprint -> device buffer
  Series d2d_restore;  // device buffer -> footprint
  Series d2h;          // footprint -> pinned host (the seed's snapshot)
  Series h2d;          // pinned host -> footprint (the seed's restore)
  std::string d2d_note;
  std::string pinned_note;
};

// The longest prefix of `regions` whose bytes fit in `limit`; its bytes in *bytes.
std::size_t PrefixThatFits(const std::vector<Region>& regions, std::uint64_t limit, std::uint64_t* bytes) {
  std::size_t count = 0;
  *bytes = 0;
  while (count < regions.size() && *bytes + regions[count].size <= limit) *bytes += regions[count++].size;
  return count;
}

// Times copying the first `count` regions to and from `buffer` (device or pinned host), scaled to
// the whole footprint.
void TimeCopies(const Footprint& footprint, std::size_t count, std::uint64_t copied, char* buffer,
                cudaStream_t stream, std::size_t repeat, Series* out, Series* back) {
  const double scale = static_cast<double>(footprint.bytes()) / static_cast<double>(copied);
  auto copy = [&](bool outwards) {
    std::uint64_t offset = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const Region& region = footprint.regions()[i];
      void* dst = outwards ? static_cast<void*>(buffer + offset) : AsPointer(region.base);
      const void* src = outwards ? AsPointer(region.base) : static_cast<const void*>(buffer + offset);
      CudaCheck(cudaMemcpyAsync(dst, src, region.size, cudaMemcpyDefault, stream), "cudaMemcpyAsync (floor)");
      offset += region.size;
    }
  };
  TimedMs([&] { copy(true); });  // warm-up: first touch of the buffer, copy engines awake
  for (std::size_t r = 0; r < repeat; ++r) {
    out->ms.push_back(TimedMs([&] { copy(true); }) * scale);
    back->ms.push_back(TimedMs([&] { copy(false); }) * scale);
  }
}

CopyFloors MeasureCopyFloors(const Footprint& footprint, std::size_t repeat) {
  CopyFloors floors;
  cudaStream_t stream = nullptr;
  CudaCheck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");

  // Device to device: needs the footprint twice; with less free memory, a prefix is copied and the
  // time scaled.
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  CudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  std::uint64_t limit =
      std::min<std::uint64_t>(footprint.bytes(), free_bytes > kDeviceMargin ? free_bytes - kDeviceMargin : 0);
  void* device_buffer = nullptr;
  std::uint64_t copied = 0;
  std::size_t count = 0;
  while (device_buffer == nullptr) {
    count = PrefixThatFits(footprint.regions(), limit, &copied);
    if (count == 0) break;
    if (cudaMalloc(&device_buffer, copied) != cudaSuccess) {
      cudaGetLastError();  // a failed allocation is not sticky; clear it
      device_buffer = nullptr;
      limit = copied / 2;
    }
  }
  if (device_buffer == nullptr) {
    floors.d2d_note = "device-to-device floor: no room for a copy of even one allocation";
  } else {
    TimeCopies(footprint, count, copied, static_cast<char*>(device_buffer), stream, repeat, &floors.d2d_save,
               &floors.d2d_restore);
    if (copied < footprint.bytes()) {
      floors.d2d_note = Format("device-to-device floor: only %s of %s fit beside the footprint; scaled",
                               FormatBytes(copied).c_str(), FormatBytes(footprint.bytes()).c_str());
    }
    cudaFree(device_buffer);
  }

  // Pinned host and back: the seed's full copy. Halved until the pinned allocation succeeds.
  limit = footprint.bytes();
  void* host_buffer = nullptr;
  while (host_buffer == nullptr) {
    count = PrefixThatFits(footprint.regions(), limit, &copied);
    if (count == 0) break;
    if (cudaHostAlloc(&host_buffer, copied, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      host_buffer = nullptr;
      limit = copied / 2;
    }
  }
  if (host_buffer == nullptr) {
    floors.pinned_note = "pinned host floor: cudaHostAlloc failed even for one allocation";
  } else {
    TimeCopies(footprint, count, copied, static_cast<char*>(host_buffer), stream, repeat, &floors.d2h,
               &floors.h2d);
    if (copied < footprint.bytes()) {
      floors.pinned_note = Format("pinned host floor: only %s of %s could be pinned; scaled",
                                  FormatBytes(copied).c_str(), FormatBytes(footprint.bytes()).c_str());
    }
    cudaFreeHost(host_buffer);
  }
  cudaStreamDestroy(stream);
  return floors;
}

// ---------------------------------------------------------------------------------------------
// gpuprof: replay::Snapshot on the CudaDevice

struct LevelFigures {
  Series restore[kModeCount];  // in kModes order
  Series incremental;
  std::vector<replay::CaptureStats> incremental_stats;
  std::uint64_t most_restored[kModeCount] = {};  // the largest dirty_chunks a restore reported
  std::uint64_t most_refreshed = 0;              // the largest chunks_copied of an incremental capture
  bool incremental_was_complete = false;         // a capture after a rewrite copied everything
};

struct GpuprofFigures {
  StorageTier tier = StorageTier::kDevice;
  std::string fatal;      // the first capture failed: nothing else was measured
  std::string placement;  // set when the snapshot is not all in `tier`
  replay::CaptureStats first_stats;
  double first_total_ms = 0;
  std::uint64_t arena_stats_ns = 0;  // device.arena_stats().allocation_ns during the first capture
  std::uint64_t arena_allocations = 0;
  Series first_with_arena;  // the very first capture (one sample)
  Series first;             // full captures without the arena's allocation (Invalidate() + Capture)
  std::vector<double> first_inventory_ms, first_copy_ms;
  Series inspect;  // one hash pass over the footprint
  std::vector<LevelFigures> levels;
};

// After a capture: the engine's hash of the device's bytes must be the snapshot's input hash.
// Returns the independent footprint hash that later restores must bring back.
std::optional<std::uint64_t> CheckCaptured(replay::Snapshot& snapshot, device::Device& device,
                                           Footprint& footprint, Series* series) {
  StatusOr<std::uint64_t> output = snapshot.Inspect(footprint.inventory());
  if (!output.ok()) {
    series->Fail("Inspect after Capture failed: " + output.status().ToString());
  } else if (*output != snapshot.input_hash()) {
    series->Fail("after Capture, Inspect's hash differs from the snapshot's input hash");
  }
  StatusOr<std::uint64_t> hash = HashFootprint(device, footprint);
  if (!hash.ok()) {
    series->Fail("hashing the footprint failed: " + hash.status().ToString());
    return std::nullopt;
  }
  return *hash;
}

// After a restore: the device's bytes must be the captured ones, by the engine's hash and by the
// independent one.
void CheckRestored(replay::Snapshot& snapshot, device::Device& device, Footprint& footprint,
                   const std::optional<std::uint64_t>& expected, Series* series) {
  StatusOr<std::uint64_t> output = snapshot.Inspect(footprint.inventory());
  if (!output.ok()) {
    series->Fail("Inspect after Restore failed: " + output.status().ToString());
  } else if (*output != snapshot.input_hash()) {
    series->Fail("after Restore, Inspect's hash differs from the snapshot's input hash");
  }
  if (!expected) return;
  StatusOr<std::uint64_t> hash = HashFootprint(device, footprint);
  if (!hash.ok()) {
    series->Fail("hashing the footprint failed: " + hash.status().ToString());
  } else if (*hash != *expected) {
    series->Fail("after Restore, the footprint's bytes differ from the captured ones (independent hash)");
  }
}

std::string DescribePlacement(const replay::Snapshot& snapshot) {
  const device::TierBytes& bytes = snapshot.tier_bytes();
  return Format("placed: device %s, pinned host %s, pageable host %s, file %s", FormatBytes(bytes[0]).c_str(),
                FormatBytes(bytes[1]).c_str(), FormatBytes(bytes[2]).c_str(), FormatBytes(bytes[3]).c_str());
}

GpuprofFigures MeasureGpuprof(device::Device& device, Footprint& footprint, StorageTier tier,
                              std::size_t repeat) {
  GpuprofFigures figures;
  figures.tier = tier;
  figures.levels.resize(footprint.sets().size());
  replay::Inventory& inventory = footprint.inventory();

  // A fresh arena, so that the first capture shows the one-time allocation of this tier's arena.
  device.ReleaseArena();
  const device::ArenaStats before = device.arena_stats();
  replay::Snapshot snapshot(device);
  replay::SnapshotOptions options;
  options.chunk_size = kChunk;
  options.fastest_tier = tier;

  bool captured = false;
  const double first_ms = TimedMs([&] { captured = snapshot.Capture(inventory, options); });
  if (!captured) {
    figures.fatal = "the first Capture failed: " + snapshot.failure();
    return figures;
  }
  const device::ArenaStats after = device.arena_stats();
  figures.first_stats = snapshot.last_capture();
  figures.first_total_ms = first_ms;
  figures.arena_stats_ns = after.allocation_ns - before.allocation_ns;
  figures.arena_allocations = after.allocations - before.allocations;
  const double arena_ms = NsToMs(figures.first_stats.arena_allocation_ns);
  figures.first_with_arena.ms.push_back(first_ms);
  figures.first.ms.push_back(first_ms - arena_ms);
  figures.first_inventory_ms.push_back(NsToMs(figures.first_stats.inventory_ns));
  figures.first_copy_ms.push_back(NsToMs(figures.first_stats.copy_ns));
  if (!figures.first_stats.complete) figures.first.Fail("the first Capture was not a complete one");
  if (snapshot.regions().size() != footprint.regions().size() ||
      snapshot.total_bytes() != footprint.bytes()) {
    figures.first.Fail(Format(
        "the snapshot holds %zu regions, %" PRIu64 " bytes; the footprint is %zu, %" PRIu64,
        snapshot.regions().size(), snapshot.total_bytes(), footprint.regions().size(), footprint.bytes()));
  }
  if (snapshot.tier_bytes()[static_cast<std::size_t>(tier)] != snapshot.total_bytes()) {
    figures.placement = DescribePlacement(snapshot);
  }
  std::optional<std::uint64_t> expected = CheckCaptured(snapshot, device, footprint, &figures.first);

  // More full captures into the arena already allocated: "first snapshot" without the allocation.
  for (std::size_t r = 1; r < repeat; ++r) {
    snapshot.Invalidate();
    const double ms = TimedMs([&] { captured = snapshot.Capture(inventory, options); });
    if (!captured) {
      figures.first.error = "Capture after Invalidate() failed: " + snapshot.failure();
      break;
    }
    const replay::CaptureStats& stats = snapshot.last_capture();
    if (!stats.complete) figures.first.Fail("Capture after Invalidate() was not a complete one");
    figures.first.ms.push_back(ms - NsToMs(stats.arena_allocation_ns));
    figures.first_inventory_ms.push_back(NsToMs(stats.inventory_ns));
    figures.first_copy_ms.push_back(NsToMs(stats.copy_ns));
    expected = CheckCaptured(snapshot, device, footprint, &figures.first);
  }
  figures.first_with_arena.failure = figures.first.failure;
  if (!figures.first.error.empty()) return figures;

  // One hash pass over the footprint: the read that every dirty restore needs at least.
  for (std::size_t r = 0; r < repeat; ++r) {
    std::optional<StatusOr<std::uint64_t>> output;
    figures.inspect.ms.push_back(TimedMs([&] { output.emplace(snapshot.Inspect(inventory)); }));
    if (!output->ok()) {
      figures.inspect.error = "Inspect failed: " + output->status().ToString();
      break;
    }
    if (**output != snapshot.input_hash()) figures.inspect.Fail("Inspect's hash differs from the input hash");
  }

  for (std::size_t level = 0; level < footprint.sets().size(); ++level) {
    const DirtySet& set = footprint.sets()[level];
    LevelFigures& out = figures.levels[level];
    for (std::size_t m = 0; m < kModeCount; ++m) {
      Series& series = out.restore[m];
      for (std::size_t r = 0; r < repeat; ++r) {
        footprint.Rewrite(set);
        replay::RestoreStats stats;
        std::uint64_t output_hash = 0;
        series.ms.push_back(TimedMs([&] { stats = snapshot.Restore(inventory, kModes[m], &output_hash); }));
        if (output_hash == 0) {
          series.Fail("Restore returned no output hash");
        } else if (set.count > 0 && output_hash == snapshot.input_hash()) {
          series.Fail("the pass's output hash equals the input hash: the rewrite was not seen");
        }
        if (stats.regions_failed != 0 || stats.regions_skipped != 0 ||
            stats.regions_restored != footprint.regions().size()) {
          series.Fail(Format("Restore: %" PRIu64 " regions restored, %" PRIu64 " skipped, %" PRIu64
                             " failed, of %zu",
                             stats.regions_restored, stats.regions_skipped, stats.regions_failed,
                             footprint.regions().size()));
        }
        if (kModes[m] != RestoreMode::kFull && stats.dirty_chunks < set.count) {
          series.Fail(Format("Restore wrote back %" PRIu64 " chunks; %u were rewritten", stats.dirty_chunks,
                             set.count));
        }
        if (kModes[m] == RestoreMode::kFull && stats.bytes_restored != footprint.bytes()) {
          series.Fail(Format("full Restore wrote %" PRIu64 " bytes of %" PRIu64, stats.bytes_restored,
                             footprint.bytes()));
        }
        out.most_restored[m] = std::max(out.most_restored[m], stats.dirty_chunks);
        CheckRestored(snapshot, device, footprint, expected, &series);
      }
    }

    // Incremental snapshot (B3): the rewritten chunks are refreshed, the rest kept.
    for (std::size_t r = 0; r < repeat; ++r) {
      footprint.Rewrite(set);
      const double ms = TimedMs([&] { captured = snapshot.Capture(inventory, options); });
      if (!captured) {
        out.incremental.error = "incremental Capture failed: " + snapshot.failure();
        break;
      }
      const replay::CaptureStats& stats = snapshot.last_capture();
      out.incremental.ms.push_back(ms);
      out.incremental_stats.push_back(stats);
      if (stats.chunks_copied < set.count) {
        out.incremental.Fail(Format("Capture refreshed %" PRIu64 " chunks; %u were rewritten",
                                    stats.chunks_copied, set.count));
      }
      out.most_refreshed = std::max(out.most_refreshed, stats.chunks_copied);
      out.incremental_was_complete = out.incremental_was_complete || stats.complete;
      expected = CheckCaptured(snapshot, device, footprint, &out.incremental);
    }
  }
  return figures;
}

// ---------------------------------------------------------------------------------------------
// CUPTI Checkpoint API (libcheckpoint.so), loaded at run time

struct CuptiCheckpointApi {
  decltype(&ckpt::cuptiCheckpointSave) save = nullptr;
  decltype(&ckpt::cuptiCheckpointRestore) restore = nullptr;
  decltype(&ckpt::cuptiCheckpointFree) free = nullptr;
  std::string library;
};

StatusOr<CuptiCheckpointApi> LoadCuptiCheckpoint() {
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("GPUPROF_CUPTI_CHECKPOINT_LIBRARY"); path != nullptr && *path != '\0') {
    candidates.emplace_back(path);
  }
  candidates.emplace_back("libcheckpoint.so");  // LD_LIBRARY_PATH and the default search path
#ifdef GPUPROF_CUPTI_CHECKPOINT_PATH
  candidates.emplace_back(GPUPROF_CUPTI_CHECKPOINT_PATH);  // found in the toolkit at configure time
#endif
  candidates.emplace_back("/usr/local/cuda/lib64/libcheckpoint.so");
  candidates.emplace_back("/usr/local/cuda/extras/CUPTI/lib64/libcheckpoint.so");
  std::string tried;
  void* library = nullptr;
  CuptiCheckpointApi api;
  for (const std::string& candidate : candidates) {
    library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) {
      api.library = candidate;
      break;
    }
    const char* error = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(error != nullptr ? error : candidate.c_str());
  }
  if (library == nullptr) return UnavailableError("libcheckpoint.so not found: " + tried);
  auto resolve = [&](const char* name, auto* slot) -> bool {
    void* symbol = dlsym(library, name);
    // POSIX guarantees a data pointer from dlsym converts to a function pointer.
    *slot = reinterpret_cast<std::remove_reference_t<decltype(*slot)>>(symbol);
    return symbol != nullptr;
  };
  if (!resolve("cuptiCheckpointSave", &api.save) || !resolve("cuptiCheckpointRestore", &api.restore) ||
      !resolve("cuptiCheckpointFree", &api.free)) {
    return UnavailableError(api.library + " lacks cuptiCheckpointSave/Restore/Free");
  }
  return api;
}

std::string CuptiResultText(CUptiResult result) {
  switch (result) {
    case CUPTI_SUCCESS: return "CUPTI_SUCCESS";
    case CUPTI_ERROR_INVALID_PARAMETER: return "CUPTI_ERROR_INVALID_PARAMETER";
    case CUPTI_ERROR_INVALID_DEVICE: return "CUPTI_ERROR_INVALID_DEVICE";
    case CUPTI_ERROR_INVALID_CONTEXT: return "CUPTI_ERROR_INVALID_CONTEXT";
    case CUPTI_ERROR_INVALID_OPERATION: return "CUPTI_ERROR_INVALID_OPERATION";
    case CUPTI_ERROR_OUT_OF_MEMORY: return "CUPTI_ERROR_OUT_OF_MEMORY";
    case CUPTI_ERROR_NOT_INITIALIZED: return "CUPTI_ERROR_NOT_INITIALIZED";
    case CUPTI_ERROR_UNKNOWN: return "CUPTI_ERROR_UNKNOWN";
    default: return Format("CUptiResult %d", static_cast<int>(result));
  }
}

struct CuptiFigures {
  StorageTier tier = StorageTier::kDevice;
  std::string error;            // a call failed: the figures after it are missing
  Series first_save;            // on a fresh (or freed) handle: CUPTI's own storage allocation included
  std::vector<Series> restore;  // per level
  std::vector<Series> save;     // per level: saving over the existing checkpoint after the rewrite
};

// CUpti_Checkpoint_STRUCT_SIZE (the header's macro names the struct unqualified, outside its
// namespace): the struct's size up to and including pPriv.
constexpr std::size_t kCheckpointStructSize =
    offsetof(ckpt::CUpti_Checkpoint, pPriv) + sizeof(ckpt::CUpti_Checkpoint::pPriv);

// Frees the checkpoint when the measurement ends, however it ends.
class CheckpointHandle {
 public:
  explicit CheckpointHandle(const CuptiCheckpointApi& api) : api_(api) {}
  ~CheckpointHandle() { Free(); }
  CheckpointHandle(const CheckpointHandle&) = delete;
  CheckpointHandle& operator=(const CheckpointHandle&) = delete;

  // Fresh options for the next save: `reserve_device_mib` above the card's memory makes CUPTI keep
  // the checkpoint in host memory (its host tier).
  void Configure(CUcontext context, std::size_t reserve_device_mib, bool transfer) {
    handle_ = ckpt::CUpti_Checkpoint{};
    handle_.structSize = kCheckpointStructSize;
    handle_.ctx = context;
    handle_.reserveDeviceMB = reserve_device_mib;
    handle_.reserveHostMB = 0;
    handle_.allowOverwrite = 1;
    handle_.optimizations = static_cast<std::uint8_t>(transfer ? ckpt::CUPTI_CHECKPOINT_OPT_TRANSFER
                                                               : ckpt::CUPTI_CHECKPOINT_OPT_NONE);
    handle_.pPriv = nullptr;
  }
  CUptiResult Save() {
    const CUptiResult result = api_.save(&handle_);
    saved_ = saved_ || result == CUPTI_SUCCESS;
    return result;
  }
  CUptiResult Restore() { return api_.restore(&handle_); }
  CUptiResult Free() {
    if (!saved_) return CUPTI_SUCCESS;
    saved_ = false;
    return api_.free(&handle_);
  }

 private:
  const CuptiCheckpointApi& api_;
  ckpt::CUpti_Checkpoint handle_{};
  bool saved_ = false;
};

CuptiFigures MeasureCupti(const CuptiCheckpointApi& api, CUcontext context, device::Device& device,
                          Footprint& footprint, StorageTier tier, const Flags& flags,
                          std::uint64_t card_bytes) {
  CuptiFigures figures;
  figures.tier = tier;
  figures.restore.resize(footprint.sets().size());
  figures.save.resize(footprint.sets().size());
  const std::size_t reserve_mib = tier == StorageTier::kDevice
                                      ? static_cast<std::size_t>(flags.device_reserve_mib)
                                      : static_cast<std::size_t>(card_bytes / kMiB + 1024);
  const std::size_t repeat = static_cast<std::size_t>(flags.repeat);
  // CUPTI's host-tier saves take seconds each.
  const std::size_t save_repeat =
      tier == StorageTier::kDevice ? repeat : static_cast<std::size_t>(flags.slow_repeat);

  StatusOr<std::uint64_t> expected = HashFootprint(device, footprint);
  if (!expected.ok()) {
    figures.error = "hashing the footprint failed: " + expected.status().ToString();
    return figures;
  }
  CheckpointHandle handle(api);
  auto failed = [&](const char* call, CUptiResult result) {
    if (result == CUPTI_SUCCESS) return false;
    figures.error = std::string(call) + ": " + CuptiResultText(result);
    return true;
  };

  for (std::size_t r = 0; r < save_repeat; ++r) {
    if (failed("cuptiCheckpointFree", handle.Free())) return figures;
    handle.Configure(context, reserve_mib, flags.cupti_transfer);
    CUptiResult result = CUPTI_SUCCESS;
    figures.first_save.ms.push_back(TimedMs([&] { result = handle.Save(); }));
    if (failed("cuptiCheckpointSave (first)", result)) {
      figures.first_save.ms.pop_back();
      return figures;
    }
  }
  for (std::size_t level = 0; level < footprint.sets().size(); ++level) {
    const DirtySet& set = footprint.sets()[level];
    for (std::size_t r = 0; r < repeat; ++r) {
      footprint.Rewrite(set);
      CUptiResult result = CUPTI_SUCCESS;
      const double ms = TimedMs([&] { result = handle.Restore(); });
      if (failed("cuptiCheckpointRestore", result)) return figures;
      figures.restore[level].ms.push_back(ms);
      StatusOr<std::uint64_t> hash = HashFootprint(device, footprint);
      if (!hash.ok() || *hash != *expected) {
        figures.restore[level].Fail(
            "after cuptiCheckpointRestore the footprint differs from the saved bytes");
      }
    }
    for (std::size_t r = 0; r < save_repeat; ++r) {
      footprint.Rewrite(set);
      CUptiResult result = CUPTI_SUCCESS;
      const double ms = TimedMs([&] { result = handle.Save(); });
      if (failed("cuptiCheckpointSave (over the checkpoint)", result)) return figures;
      figures.save[level].ms.push_back(ms);
      expected = HashFootprint(device, footprint);
      if (!expected.ok()) {
        figures.error = "hashing the footprint failed: " + expected.status().ToString();
        return figures;
      }
    }
  }
  failed("cuptiCheckpointFree", handle.Free());
  return figures;
}

// ---------------------------------------------------------------------------------------------
// One workload, measured every way

struct WorkloadFigures {
  std::string name;
  std::uint64_t bytes = 0;
  std::uint64_t regions = 0;
  std::uint64_t chunks = 0;
  std::vector<DirtySet> sets;   // counts and bytes only (the device tables are gone)
  bool targeted = false;        // workload (a): the targets are stated for it
  bool at_target_size = false;  // ... and it has their size (8 GiB in 64 allocations)
  CopyFloors floors;
  std::vector<GpuprofFigures> gpuprof;
  std::vector<CuptiFigures> cupti;
};

struct Environment {
  device::Device* device = nullptr;
  CUcontext context = nullptr;
  const CuptiCheckpointApi* cupti = nullptr;  // null: unavailable or skipped
  std::uint64_t card_bytes = 0;
  std::vector<StorageTier> tiers;
};

WorkloadFigures MeasureWorkload(const Environment& env, const Flags& flags, std::string name,
                                const std::vector<std::uint64_t>& sizes, const std::vector<Level>& levels,
                                bool targeted, bool at_target_size, bool cupti_host_tier) {
  const auto repeat = static_cast<std::size_t>(flags.repeat);
  std::fprintf(stderr, "replay_device_benchmark: %s: allocating and filling\n", name.c_str());
  Footprint footprint(name, sizes, levels, env.device->ordinal());
  WorkloadFigures figures;
  figures.name = std::move(name);
  figures.bytes = footprint.bytes();
  figures.regions = footprint.regions().size();
  figures.chunks = footprint.chunks();
  figures.sets = footprint.sets();
  for (DirtySet& set : figures.sets) set.spans = nullptr;
  figures.targeted = targeted;
  figures.at_target_size = at_target_size;

  std::fprintf(stderr, "replay_device_benchmark: %s: copy floors\n", figures.name.c_str());
  figures.floors = MeasureCopyFloors(footprint, repeat);
  for (StorageTier tier : env.tiers) {
    std::fprintf(stderr, "replay_device_benchmark: %s: gpuprof, %s tier\n", figures.name.c_str(),
                 TierLabel(tier));
    figures.gpuprof.push_back(MeasureGpuprof(*env.device, footprint, tier, repeat));
  }
  // CUPTI saves every allocation of the context: gpuprof's arena must not be one of them.
  env.device->ReleaseArena();
  if (env.cupti != nullptr) {
    for (StorageTier tier : env.tiers) {
      if (tier != StorageTier::kDevice && !cupti_host_tier) continue;
      std::fprintf(stderr, "replay_device_benchmark: %s: CUPTI Checkpoint, %s tier\n", figures.name.c_str(),
                   TierLabel(tier));
      figures.cupti.push_back(
          MeasureCupti(*env.cupti, env.context, *env.device, footprint, tier, flags, env.card_bytes));
    }
  }
  return figures;
}

// ---------------------------------------------------------------------------------------------
// The report

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void Add(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void Print() const {
    std::vector<std::size_t> widths(rows_.front().size(), 3);
    for (const auto& row : rows_) {
      for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    }
    auto print_row = [&](const std::vector<std::string>& row) {
      std::string line = "|";
      for (std::size_t c = 0; c < widths.size(); ++c) {
        const std::string& cell = c < row.size() ? row[c] : std::string();
        line += " " + cell + std::string(widths[c] - cell.size(), ' ') + " |";
      }
      std::printf("%s\n", line.c_str());
    };
    print_row(rows_.front());
    std::string rule = "|";
    for (std::size_t width : widths) rule += std::string(width + 2, '-') + "|";
    std::printf("%s\n", rule.c_str());
    for (std::size_t r = 1; r < rows_.size(); ++r) print_row(rows_[r]);
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

class Notes {
 public:
  // "[k]" for `text`, numbered in order of first use.
  std::string Ref(const std::string& text) {
    for (std::size_t i = 0; i < texts_.size(); ++i) {
      if (texts_[i] == text) return Format("[%zu]", i + 1);
    }
    texts_.push_back(text);
    return Format("[%zu]", texts_.size());
  }
  void Print() const {
    for (std::size_t i = 0; i < texts_.size(); ++i) std::printf("[%zu] %s\n", i + 1, texts_[i].c_str());
  }

 private:
  std::vector<std::string> texts_;
};

std::string Cell(const Series* series) {
  if (series == nullptr) return "-";
  if (!series->has_samples()) return series->error.empty() ? "-" : "error";
  return FormatMs(Median(series->ms)) + " (" + FormatMs(Min(series->ms)) + ")";
}

std::string Ratio(double a, double b) { return b > 0.0 ? Format("%.2fx", a / b) : "-"; }

enum class Op : std::uint8_t { kFirstWithArena, kFirst, kInspect, kRestore, kIncremental };

struct Target {
  double value = 0;
  const char* text = "";
};

// The targets, for workload (a) at 8 GiB in 64 allocations.
std::optional<Target> TargetFor(StorageTier tier, Op op, RestoreMode mode, std::uint64_t stride) {
  if (tier == StorageTier::kDevice) {
    if (op == Op::kRestore && mode == RestoreMode::kAuto && stride == kHeadlineStride) {
      return Target{kTargetDeviceRestoreMs, "<= 3.0 ms"};
    }
    if (op == Op::kFirst) return Target{kTargetDeviceFirstMs, "<= 5.5 ms"};
    if (op == Op::kIncremental && stride == kHeadlineStride)
      return Target{kTargetDeviceIncrementalMs, "<= 3.0 ms"};
  } else {
    if (op == Op::kRestore && mode == RestoreMode::kAuto && stride == kHeadlineStride) {
      return Target{kTargetHostRestoreMs, "<= 15 ms"};
    }
    if (op == Op::kFirst || (op == Op::kIncremental && stride == 1)) {
      return Target{kTargetHostFullSnapshotMs, "<= 250 ms"};
    }
  }
  return std::nullopt;
}

// Builds the rows of one workload into `table`; returns false when a gpuprof row FAILED.
bool AddWorkloadRows(const WorkloadFigures& w, bool cupti_available, Table* table, Notes* notes) {
  bool all_ok = true;
  const CopyFloors& floors = w.floors;
  const std::string level_total = Format("100%% (%" PRIu64 ")", w.chunks);

  for (const GpuprofFigures& g : w.gpuprof) {
    const bool on_device = g.tier == StorageTier::kDevice;
    const CuptiFigures* c = nullptr;
    for (const CuptiFigures& candidate : w.cupti) {
      if (candidate.tier == g.tier) c = &candidate;
    }
    std::string cupti_note;
    if (c != nullptr && !c->error.empty()) {
      cupti_note = notes->Ref("CUPTI, " + w.name + ", " + TierLabel(g.tier) + " tier: " + c->error);
    }
    std::string placement_note =
        g.placement.empty() ? "" : notes->Ref(w.name + ", " + TierLabel(g.tier) + " tier: " + g.placement);

    // Copy rates of the floor for this tier (ms per byte): restores write back, snapshots read out.
    const Series& restore_copy = on_device ? floors.d2d_restore : floors.h2d;
    const Series& save_copy = on_device ? floors.d2d_save : floors.d2h;
    // Plain doubles, not optionals: GCC 12 sees optional<double> as maybe uninitialized here.
    const bool have_restore_rate = restore_copy.has_samples();
    const bool have_save_rate = save_copy.has_samples();
    const bool have_inspect = g.inspect.has_samples();
    const double restore_rate =
        have_restore_rate ? Median(restore_copy.ms) / static_cast<double>(w.bytes) : 0.0;
    const double save_rate = have_save_rate ? Median(save_copy.ms) / static_cast<double>(w.bytes) : 0.0;
    const double inspect = have_inspect ? Median(g.inspect.ms) : 0.0;

    auto target_for = [&](Op op, RestoreMode mode, std::uint64_t stride) {
      return w.targeted ? TargetFor(g.tier, op, mode, stride) : std::nullopt;
    };
    auto add = [&](const std::string& operation, const std::string& changed, const Series& mine,
                   const Series* peer, std::optional<double> floor, std::optional<Target> target,
                   const std::string& extra_note) {
      std::string status;
      if (!mine.error.empty()) {
        status = "FAILED " +
                 notes->Ref(w.name + ", " + TierLabel(g.tier) + " tier, " + operation + ": " + mine.error);
        all_ok = false;
      } else if (!mine.failure.empty()) {
        status = "FAILED " +
                 notes->Ref(w.name + ", " + TierLabel(g.tier) + " tier, " + operation + ": " + mine.failure);
        all_ok = false;
      } else if (!mine.has_samples()) {
        status = "-";
      } else if (target && w.at_target_size) {
        status = Median(mine.ms) <= target->value ? "met" : "NOT met";
      } else if (target) {
        status = "ok (the target is for 8 GiB in 64)";
      } else {
        status = "ok";
      }
      std::string peer_cell = cupti_available ? Cell(peer) : "unavailable";
      if (peer != nullptr && !peer->failure.empty()) {
        peer_cell += " WRONG " + notes->Ref("CUPTI, " + w.name + ", " + TierLabel(g.tier) + " tier, " +
                                            changed + " changed: " + peer->failure);
      }
      if (peer != nullptr && !peer->has_samples() && !cupti_note.empty()) peer_cell = "error " + cupti_note;
      const bool have_mine = mine.has_samples();
      const bool have_peer = peer != nullptr && peer->has_samples();
      std::string n = Format("%zu/%zu", mine.ms.size(), have_peer ? peer->ms.size() : std::size_t{0});
      const std::string& note = extra_note;
      table->Add({w.name, TierLabel(g.tier), operation, changed, Cell(&mine), peer_cell,
                  floor ? FormatMs(*floor) : "-",
                  have_mine && have_peer ? Ratio(Median(mine.ms), Median(peer->ms)) : "-",
                  have_mine && floor ? Ratio(Median(mine.ms), *floor) : "-", n, target ? target->text : "-",
                  status + (note.empty() ? "" : " " + note)});
    };

    if (!g.fatal.empty()) {
      Series failed;
      failed.error = g.fatal;
      add("snapshot", "-", failed, nullptr, std::nullopt, std::nullopt, "");
      continue;
    }
    // The CUPTI save that copies the same bytes as a full capture: over its checkpoint after
    // every chunk was rewritten (its storage allocated, as gpuprof's arena is here).
    const Series* cupti_full_save = nullptr;
    for (std::size_t l = 0; l < w.sets.size(); ++l) {
      if (c != nullptr && w.sets[l].level.stride == 1) cupti_full_save = &c->save[l];
    }
    add("first snapshot, allocation included", level_total, g.first_with_arena,
        c != nullptr ? &c->first_save : nullptr, std::nullopt, std::nullopt, "");
    add("first snapshot", level_total, g.first, cupti_full_save,
        save_copy.has_samples() ? std::optional<double>(Median(save_copy.ms)) : std::nullopt,
        target_for(Op::kFirst, RestoreMode::kAuto, 1), placement_note);
    add("hash pass (Inspect)", level_total, g.inspect, nullptr, std::nullopt, std::nullopt, "");

    for (std::size_t l = 0; l < w.sets.size(); ++l) {
      const DirtySet& set = w.sets[l];
      const LevelFigures& figures = g.levels[l];
      const std::string changed = Format("%s (%u)", set.level.label, set.count);
      const double dirty_bytes = static_cast<double>(set.bytes);
      for (std::size_t m = 0; m < kModeCount; ++m) {
        std::optional<double> floor;
        if (kModes[m] == RestoreMode::kFull) {
          if (restore_copy.has_samples()) floor = Median(restore_copy.ms);
        } else if (have_inspect && have_restore_rate) {
          // kExact on the device tier reads the footprint and its copy: two reads.
          const double reads = kModes[m] == RestoreMode::kExact && on_device ? 2.0 : 1.0;
          floor = reads * inspect + dirty_bytes * restore_rate;
        }
        std::string extra;
        if (kModes[m] != RestoreMode::kFull && figures.most_restored[m] > set.count) {
          extra = notes->Ref(
              Format("%s, %s tier, restore %s at %s: wrote back up to %" PRIu64 " chunks, %u rewritten",
                     w.name.c_str(), TierLabel(g.tier), replay::RestoreModeName(kModes[m]).data(),
                     set.level.label, figures.most_restored[m], set.count));
        }
        add(std::string("restore ") + std::string(replay::RestoreModeName(kModes[m])), changed,
            figures.restore[m], c != nullptr ? &c->restore[l] : nullptr, floor,
            target_for(Op::kRestore, kModes[m], set.level.stride), extra);
      }
      std::optional<double> floor;
      if (have_inspect && have_save_rate) floor = inspect + dirty_bytes * save_rate;
      std::string extra;
      if (figures.incremental_was_complete || figures.most_refreshed > set.count) {
        extra = notes->Ref(Format(
            "%s, %s tier, incremental snapshot at %s: refreshed up to %" PRIu64 " chunks, %u rewritten%s",
            w.name.c_str(), TierLabel(g.tier), set.level.label, figures.most_refreshed, set.count,
            figures.incremental_was_complete ? "; a capture was a complete one" : ""));
      }
      add("incremental snapshot", changed, figures.incremental, c != nullptr ? &c->save[l] : nullptr, floor,
          target_for(Op::kIncremental, RestoreMode::kAuto, set.level.stride), extra);
    }
  }

  // The floors themselves.
  auto add_floor = [&](const char* tier, const char* operation, const Series& series,
                       const std::string& note) {
    if (!series.has_samples() && note.empty()) return;
    table->Add(
        {w.name, tier, operation, level_total, "-", "-",
         series.has_samples() ? FormatMs(Median(series.ms)) + " (" + FormatMs(Min(series.ms)) + ")" : "-",
         "-", "-", Format("%zu", series.ms.size()), "-",
         note.empty() ? "floor" : "floor " + notes->Ref(note)});
  };
  add_floor("device", "copy floor: footprint -> device buffer", floors.d2d_save, floors.d2d_note);
  add_floor("device", "copy floor: device buffer -> footprint", floors.d2d_restore, floors.d2d_note);
  add_floor("host (pinned)", "seed's full copy: footprint -> pinned host", floors.d2h, floors.pinned_note);
  add_floor("host (pinned)", "seed's full copy: pinned host -> footprint", floors.h2d, floors.pinned_note);
  return all_ok;
}

void PrintFirstAllocations(const WorkloadFigures& w) {
  for (const GpuprofFigures& g : w.gpuprof) {
    if (!g.fatal.empty()) continue;
    std::printf(
        "arena first-time allocation, %s, %s tier: %s ms (CaptureStats.arena_allocation_ns; "
        "arena_stats: %" PRIu64 " allocation(s), %s ms), subtracted from the first snapshot of %s ms\n",
        w.name.c_str(), TierLabel(g.tier), FormatMs(NsToMs(g.first_stats.arena_allocation_ns)).c_str(),
        g.arena_allocations, FormatMs(NsToMs(g.arena_stats_ns)).c_str(), FormatMs(g.first_total_ms).c_str());
  }
}

void PrintStages(const WorkloadFigures& w) {
  for (const GpuprofFigures& g : w.gpuprof) {
    if (!g.fatal.empty()) continue;
    const replay::CaptureStats& first = g.first_stats;
    const double arena = NsToMs(first.arena_allocation_ns);
    const double inventory = NsToMs(first.inventory_ns);
    const double copy = NsToMs(first.copy_ns);
    std::printf(
        "stages, %s, %s tier: first capture %s ms = arena allocation %s + inventory %s + batched copy %s + "
        "rest %s (%" PRIu64 " regions added, %" PRIu64 " chunks copied)",
        w.name.c_str(), TierLabel(g.tier), FormatMs(g.first_total_ms).c_str(), FormatMs(arena).c_str(),
        FormatMs(inventory).c_str(), FormatMs(copy).c_str(),
        FormatMs(g.first_total_ms - arena - inventory - copy).c_str(), first.regions_added,
        first.chunks_copied);
    if (g.first.ms.size() > 1) {
      std::printf(
          "; full captures without allocation (median of %zu): %s ms = inventory %s + batched copy %s",
          g.first.ms.size(), FormatMs(Median(g.first.ms)).c_str(),
          FormatMs(Median(g.first_inventory_ms)).c_str(), FormatMs(Median(g.first_copy_ms)).c_str());
    }
    for (std::size_t l = 0; l < w.sets.size(); ++l) {
      if (w.sets[l].level.stride != kHeadlineStride) continue;
      const LevelFigures& level = g.levels[l];
      if (level.incremental_stats.empty()) continue;
      std::vector<double> inventory_ms, copy_ms, rest_ms;
      std::vector<std::uint64_t> kept, added, dropped, chunks;
      for (std::size_t i = 0; i < level.incremental_stats.size(); ++i) {
        const replay::CaptureStats& s = level.incremental_stats[i];
        inventory_ms.push_back(NsToMs(s.inventory_ns));
        copy_ms.push_back(NsToMs(s.copy_ns));
        rest_ms.push_back(level.incremental.ms[i] - NsToMs(s.inventory_ns) - NsToMs(s.copy_ns) -
                          NsToMs(s.arena_allocation_ns));
        kept.push_back(s.regions_kept);
        added.push_back(s.regions_added);
        dropped.push_back(s.regions_dropped);
        chunks.push_back(s.chunks_copied);
      }
      std::printf(
          "; incremental capture at %s (medians of %zu): %s ms = inventory %s + batched copy %s + rest %s "
          "(regions kept %" PRIu64 ", added %" PRIu64 ", dropped %" PRIu64 ", %" PRIu64 " chunks copied)",
          w.sets[l].level.label, level.incremental.ms.size(), FormatMs(Median(level.incremental.ms)).c_str(),
          FormatMs(Median(inventory_ms)).c_str(), FormatMs(Median(copy_ms)).c_str(),
          FormatMs(Median(rest_ms)).c_str(), MedianOf(kept), MedianOf(added), MedianOf(dropped),
          MedianOf(chunks));
    }
    std::printf("\n");
  }
}

// (b): the same operations at 6.25% in many regions against the same bytes in 64.
void PrintRegionComparison(const WorkloadFigures& many, const WorkloadFigures& few, bool target_applies) {
  Table table({"tier", "operation", Format("%" PRIu64 " regions ms", many.regions),
               Format("%" PRIu64 " regions ms", few.regions), "ratio", "target", "status"});
  for (const GpuprofFigures& a : many.gpuprof) {
    for (const GpuprofFigures& b : few.gpuprof) {
      if (a.tier != b.tier || !a.fatal.empty() || !b.fatal.empty()) continue;
      auto add = [&](const std::string& operation, const Series& x, const Series& y, bool targeted) {
        if (!x.has_samples() || !y.has_samples()) return;
        const double ratio = Median(x.ms) / Median(y.ms);
        std::string status = "-";
        if (!x.failure.empty() || !y.failure.empty()) {
          status = "FAILED (see above)";
        } else if (targeted) {
          status =
              target_applies ? (ratio <= kTargetRegionRatio ? "met" : "NOT met") : "ok (target is for 4096)";
        }
        table.Add({TierLabel(a.tier), operation, FormatMs(Median(x.ms)), FormatMs(Median(y.ms)),
                   Format("%.2fx", ratio), targeted ? "<= 1.25x" : "-", status});
      };
      add("first snapshot", a.first, b.first, false);
      for (std::size_t l = 0; l < a.levels.size() && l < b.levels.size(); ++l) {
        const std::string at = std::string(" at ") + many.sets[l].level.label;
        for (std::size_t m = 0; m < kModeCount; ++m) {
          add("restore " + std::string(replay::RestoreModeName(kModes[m])) + at, a.levels[l].restore[m],
              b.levels[l].restore[m], kModes[m] == RestoreMode::kAuto);
        }
        add("incremental snapshot" + at, a.levels[l].incremental, b.levels[l].incremental, false);
      }
    }
  }
  std::printf("\nmany regions against the same bytes in %" PRIu64 " (%s), gpuprof medians:\n\n", few.regions,
              FormatBytes(few.bytes).c_str());
  table.Print();
}

// ---------------------------------------------------------------------------------------------

// The arena's bounds (CudaDeviceOptions is device.h's ArenaOptions plus staging).
void SetArenaBounds(device::cuda::CudaDeviceOptions& options, std::uint64_t device_reserve,
                    std::uint64_t pinned_limit) {
  options.device_reserve_bytes = device_reserve;
  options.pinned_limit_bytes = std::max(options.pinned_limit_bytes, pinned_limit);
}

// The fixed path of one replayed launch, step by step, each the median of 1,000 calls on an idle
// device (item 4 of issue 18: what a small kernel's replay costs beyond its passes): the drain,
// one SM clock read (two per pass, C3), the L2 flush (one per pass, B7), one batched chunk op on a
// one-chunk table (one per pass and per capture), and an event pair around a pass.
void PrintFixedPath(device::cuda::CudaDevice& device) {
  constexpr int kCalls = 1000;
  const device::cuda::CudaDriver& d = device.driver();
  CUstream stream = nullptr;
  CudaCheck(cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t*>(&stream), cudaStreamNonBlocking),
            "cudaStreamCreate");
  void* one = nullptr;
  CudaCheck(cudaMalloc(&one, kChunk), "cudaMalloc(one chunk)");
  device.ReleaseArena();
  const Status reserved = device.ReserveArena({kChunk, 0, 0, 0}, kChunk);
  const std::vector<device::ArenaRegion> table = {
      device::ArenaRegion{reinterpret_cast<device::DevicePtr>(one), kChunk, StorageTier::kDevice, 0}};
  auto median_us = [&](auto&& fn) {
    std::vector<double> ms;
    ms.reserve(kCalls);
    for (int i = 0; i < kCalls; ++i) ms.push_back(TimedMs(fn));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2] * 1000.0;
  };
  const double drain = median_us([&] { (void)device.Synchronize(std::chrono::seconds(10)); });
  const double clock = median_us([&] { (void)device.SmClockKhz(); });
  const double flush = median_us([&] {
    (void)device.FlushL2(stream);
    d.StreamSynchronize(stream);
  });
  const double chunk_op =
      reserved.ok()
          ? median_us([&] { (void)device.RunChunkOp(device::ChunkOp::kRestoreChanged, table, kChunk, {}); })
          : -1;
  const double events = median_us([&] {
    CUevent start = nullptr;
    CUevent end = nullptr;
    d.EventCreate(&start, CU_EVENT_DEFAULT);
    d.EventCreate(&end, CU_EVENT_DEFAULT);
    d.EventRecord(start, stream);
    d.EventRecord(end, stream);
    d.EventSynchronize(end);
    d.EventDestroy(start);
    d.EventDestroy(end);
  });
  StatusOr<std::array<CUevent, 2>> pass_events = device.PassEvents();
  const double reused = pass_events.ok() ? median_us([&] {
    d.EventRecord((*pass_events)[0], stream);
    d.EventRecord((*pass_events)[1], stream);
    d.EventSynchronize((*pass_events)[1]);
  })
                                         : -1;
  std::printf(
      "\nfixed path per call (median of %d, idle device): drain (Synchronize) %.1f us; SM clock read (NVML) "
      "%.1f us "
      "(2 per pass); L2 flush + wait %.1f us (1 per pass); chunk op on a 1-chunk table %.1f us (1 per pass); "
      "event pair recorded and waited %.1f us with the device's reused events (1 per pass), %.1f us created "
      "and "
      "destroyed each time\n",
      kCalls, drain, clock, flush, chunk_op, reused, events);
  device.ReleaseArena();
  CudaCheck(cudaFree(one), "cudaFree(one chunk)");
  CudaCheck(cudaStreamDestroy(reinterpret_cast<cudaStream_t>(stream)), "cudaStreamDestroy");
}

int Run(const Flags& flags) {
  CudaCheck(cudaSetDevice(0), "cudaSetDevice(0)");
  CudaCheck(cudaFree(nullptr), "cudaFree(0) (creating the primary context)");
  cudaDeviceProp properties{};
  CudaCheck(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  std::size_t free_bytes = 0;
  std::size_t card_bytes = 0;
  CudaCheck(cudaMemGetInfo(&free_bytes, &card_bytes), "cudaMemGetInfo");
  int driver_version = 0;
  int runtime_version = 0;
  cudaDriverGetVersion(&driver_version);
  cudaRuntimeGetVersion(&runtime_version);

  const auto footprint_bytes =
      static_cast<std::uint64_t>(std::llround(flags.footprint_gib * static_cast<double>(kGiB)));
  const std::uint64_t per_allocation = footprint_bytes / flags.allocations / kChunk * kChunk;
  if (per_allocation == 0)
    Die("--footprint-gib is too small for --allocations allocations of whole 64 KiB chunks");

  StatusOr<const device::cuda::CudaDriver*> driver = device::cuda::CudaDriver::Get();
  if (!driver.ok()) Die("CUDA driver: " + driver.status().ToString());
  device::cuda::CudaDeviceOptions options;
  SetArenaBounds(options, flags.device_reserve_mib * kMiB, 2 * footprint_bytes);
  StatusOr<std::unique_ptr<device::cuda::CudaDevice>> created =
      device::cuda::CudaDevice::Create(**driver, 0, options);
  if (!created.ok()) Die("CudaDevice::Create: " + created.status().ToString());
  device::cuda::CudaDevice& device = **created;

  std::optional<CuptiCheckpointApi> cupti;
  std::string cupti_line;
  if (!flags.cupti) {
    cupti_line = "CUPTI Checkpoint: skipped (--no-cupti)";
  } else if (StatusOr<CuptiCheckpointApi> loaded = LoadCuptiCheckpoint(); loaded.ok()) {
    cupti = *loaded;
    cupti_line = "CUPTI Checkpoint: " + cupti->library + (flags.cupti_transfer ? " (OPT_TRANSFER)" : "");
  } else {
    cupti_line = "CUPTI Checkpoint: unavailable (" + loaded.status().message() + ")";
  }

  Environment env;
  env.device = &device;
  env.context = device.context();
  env.cupti = cupti ? &*cupti : nullptr;
  env.card_bytes = card_bytes;
  if (flags.tier_device) env.tiers.push_back(StorageTier::kDevice);
  if (flags.tier_host) env.tiers.push_back(StorageTier::kPinnedHost);

  std::vector<WorkloadFigures> workloads;
  const bool targets_a =
      std::fabs(flags.footprint_gib - kTargetFootprintGib) < 1e-9 && flags.allocations == kTargetAllocations;
  workloads.push_back(
      MeasureWorkload(env, flags,
                      Format("(a) %s in %" PRIu64, FormatBytes(per_allocation * flags.allocations).c_str(),
                             flags.allocations),
                      EqualSizes(per_allocation * flags.allocations, flags.allocations, kChunk),
                      std::vector<Level>(std::begin(kLevelsA), std::end(kLevelsA)), true, targets_a, true));
  if (flags.regions > 0) {
    const std::vector<std::uint64_t> sizes = LogUniformSizes(flags.regions);
    std::uint64_t total = 0;
    for (std::uint64_t size : sizes) total += size;
    const std::vector<Level> levels(std::begin(kLevelsB), std::end(kLevelsB));
    workloads.push_back(
        MeasureWorkload(env, flags, Format("(b) %s in %" PRIu64, FormatBytes(total).c_str(), flags.regions),
                        sizes, levels, false, false, false));
    workloads.push_back(MeasureWorkload(
        env, flags, Format("(b) %s in %" PRIu64, FormatBytes(total).c_str(), kComparisonRegions),
        EqualSizes(total, kComparisonRegions, kRegionAlign), levels, false, false, false));
  }

  std::printf("# replay_device_benchmark\n\n");
  std::printf("device: %s, %s, driver %d, runtime %d; chunk %" PRIu64 " KiB; median (min) of %" PRIu64
              " samples in ms%s\n",
              properties.name, FormatBytes(card_bytes).c_str(), driver_version, runtime_version,
              kChunk / kKiB, flags.repeat, flags.quick ? "; --quick" : "");
  std::printf("%s\n", cupti_line.c_str());
  std::printf("gpuprof device reserve %" PRIu64 " MiB; CUPTI reserveDeviceMB %" PRIu64
              " (device tier), %" PRIu64 " (host tier: above the card's memory)\n",
              flags.device_reserve_mib, flags.device_reserve_mib,
              static_cast<std::uint64_t>(card_bytes / kMiB + 1024));
  std::printf("\n");
  for (const WorkloadFigures& w : workloads) PrintFirstAllocations(w);
  std::printf("\n");

  Table table({"workload", "tier", "operation", "changed (chunks)", "gpuprof ms", "CUPTI ms", "floor ms",
               "gpuprof / CUPTI", "gpuprof / floor", "n", "target", "status"});
  Notes notes;
  bool all_ok = true;
  for (const WorkloadFigures& w : workloads)
    all_ok = AddWorkloadRows(w, cupti.has_value(), &table, &notes) && all_ok;
  table.Print();
  std::printf("\n");
  notes.Print();
  if (workloads.size() == 3)
    PrintRegionComparison(workloads[1], workloads[2], flags.regions == kTargetRegions);
  std::printf("\n");
  for (const WorkloadFigures& w : workloads) PrintStages(w);
  PrintFixedPath(device);
  std::printf("\n%s\n",
              all_ok ? "every gpuprof figure verified (Inspect hash == input hash, independent footprint "
                       "hash == the captured bytes' hash, rewritten chunks restored)"
                     : "FAILED: a gpuprof figure did not verify (see the notes)");
  return all_ok ? 0 : 1;
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
