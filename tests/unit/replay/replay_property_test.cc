// Property test of kernel replay on the host platform.
//
// Each iteration builds a random workload from one 64-bit seed: 1-3 devices, allocations of every
// kind (1 B .. 300 KiB, some stream-ordered, some freed again), modules with module variables
// (zero-size, constant, lazily loaded), copies and memsets, and kernels that read random ranges
// and write random ranges (in place too), each a deterministic function of what it reads. The
// workload runs twice: replayed (random passes, restore mode, chunk size) on one platform and
// unreplayed on a fresh identical one. Properties:
//   (a) every pass of a replayed kernel saw bit-identical inputs, equal to the unreplayed run's;
//   (b) afterwards every allocation and module variable holds the same bytes in both runs;
//   (c) with faults injected into the snapshot/restore machinery, (b) still holds, a declined
//       launch ran exactly once and a replayed one exactly `passes` times.
//
// GPUPROF_PROPERTY_SEED sets the base seed (printed at the start), GPUPROF_PROPERTY_ITERATIONS
// the number of workloads; workload i uses seed base+i, and a failure names its seed, so
// GPUPROF_PROPERTY_SEED=<seed> GPUPROF_PROPERTY_ITERATIONS=1 reruns exactly that workload.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "device/host/host_platform.h"
#include "fakes/replay_rig.h"
#include "gpuprof/replay.h"

namespace gpuprof::replay {
namespace {

using device::DevicePtr;
using device::LaunchKind;
using device::MemoryKind;
using device::StreamId;
using device::host::CompletionSignal;
using device::host::FaultPoint;
using device::host::HostPlatform;
using device::host::HostPlatformOptions;
using device::host::Kernel;
using device::host::KernelContext;
using device::host::ModuleId;
using device::host::ModuleSpec;
using device::host::ModuleVariableSpec;

// ---- configuration -------------------------------------------------------------------------------

#if defined(__SANITIZE_THREAD__)
#define GPUPROF_PROPERTY_TSAN 1
#elif defined(__SANITIZE_ADDRESS__)
#define GPUPROF_PROPERTY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GPUPROF_PROPERTY_TSAN 1
#elif __has_feature(address_sanitizer)
#define GPUPROF_PROPERTY_ASAN 1
#endif
#endif

constexpr std::uint64_t kDefaultSeed = 0x611f9d0626fb5146;
// Sanitized builds run each workload several times slower (measured on 2 cores: 2000 workloads
// take about 7 s per test in RelWithDebInfo, 400 take about 8.5 s under ASan+UBSan (Debug) and
// 22 s under TSan); they cover the same generator with fewer workloads.
// GPUPROF_PROPERTY_ITERATIONS still overrides.
#if defined(GPUPROF_PROPERTY_TSAN)
constexpr std::uint64_t kDefaultIterations = 400;
#elif defined(GPUPROF_PROPERTY_ASAN)
constexpr std::uint64_t kDefaultIterations = 1000;
#else
constexpr std::uint64_t kDefaultIterations = 2000;
#endif

std::uint64_t EnvOr(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 0);
  if (end == text || *end != '\0') {
    ADD_FAILURE() << name << "=" << text << " is not a number";
    return fallback;
  }
  return value;
}

struct PropertyConfig {
  std::uint64_t seed = kDefaultSeed;
  std::uint64_t iterations = kDefaultIterations;
};

PropertyConfig ReadConfig() {
  PropertyConfig config;
  config.seed = EnvOr("GPUPROF_PROPERTY_SEED", kDefaultSeed);
  config.iterations = EnvOr("GPUPROF_PROPERTY_ITERATIONS", kDefaultIterations);
  std::cout << "property seed: " << config.seed << ", iterations: " << config.iterations << std::endl;
  return config;
}

// ---- the workload ------------------------------------------------------------------------------

constexpr std::uint64_t kMaxAllocationBytes = std::uint64_t{300} * 1024;
constexpr std::uint64_t kMaxVariableBytes = std::uint64_t{70} * 1024;

constexpr std::array kInjectablePoints = {
    FaultPoint::kArenaGrowth,        FaultPoint::kSaveCopy,
    FaultPoint::kMetadataAllocation, FaultPoint::kModuleEnumeration,
    FaultPoint::kRestoreCopy,        FaultPoint::kHashChunks,
    FaultPoint::kSynchronizeTimeout, FaultPoint::kPinnedPoolExhausted,
};

struct VariablePlan {
  int module = 0;
  std::string name;
  std::uint64_t size = 0;
  bool is_constant = false;
  std::vector<std::uint8_t> initial;
};

struct ModulePlan {
  int device = 0;
  bool lazy = false;
  std::string name;
  std::vector<int> variables;  // indices into Workload::variables
};

struct AllocationPlan {
  int device = 0;
  std::uint64_t size = 0;
  MemoryKind kind = MemoryKind::kDeviceLocal;
  bool stream_ordered = false;         // MallocAsync
  std::vector<std::uint8_t> contents;  // written right after allocation
};

enum class TargetKind : std::uint8_t { kAllocation, kVariable };

struct Access {
  TargetKind target = TargetKind::kAllocation;
  int index = 0;  // into Workload::allocations or Workload::variables
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  bool read_modify_write = false;  // writes only: new byte = f(old byte, inputs)
};

struct KernelPlan {
  int launch = 0;  // index among the workload's launches
  int device = 0;
  int module = -1;  // index into Workload::modules, or -1
  LaunchKind kind = LaunchKind::kKernel;
  std::vector<Access> reads;
  std::vector<Access> writes;
  std::uint64_t salt = 0;
};

enum class StepKind : std::uint8_t {
  kLoadModule,
  kAllocate,
  kFree,
  kLaunch,
  kMemset,
  kMemcpy,
  kFillConstant
};

struct Step {
  StepKind kind = StepKind::kLaunch;
  int index = 0;   // module, allocation, kernel, or the destination allocation / variable
  int source = 0;  // kMemcpy: source allocation
  bool asynchronous = false;
  std::uint64_t dst_offset = 0;
  std::uint64_t src_offset = 0;
  std::uint64_t size = 0;
  std::uint8_t value = 0;
  std::vector<std::uint8_t> bytes;  // kFillConstant
};

struct FaultPlan {
  FaultPoint point = FaultPoint::kSaveCopy;
  int count = 1;
  int skip = 0;
};

struct Workload {
  std::uint64_t seed = 0;
  int device_count = 1;
  ReplayOptions options;
  std::vector<ModulePlan> modules;
  std::vector<VariablePlan> variables;
  std::vector<AllocationPlan> allocations;
  std::vector<KernelPlan> kernels;
  std::vector<Step> steps;
  std::vector<FaultPlan> faults;
};

std::string Describe(const Workload& w) {
  std::ostringstream out;
  out << "workload seed " << w.seed << ": " << w.device_count << " device(s), passes " << w.options.passes
      << ", restore " << RestoreModeName(w.options.restore) << ", chunk " << w.options.chunk_size
      << ", symbol cap " << w.options.max_symbol_bytes << ", determinism check "
      << (w.options.determinism_check ? "on" : "off") << ", graph replay "
      << GraphReplayName(w.options.graph_replay) << ", " << w.allocations.size() << " allocations, "
      << w.modules.size() << " modules, " << w.variables.size() << " variables, " << w.kernels.size()
      << " launches, " << w.steps.size() << " steps";
  if (!w.faults.empty()) {
    out << ", faults:";
    for (const FaultPlan& f : w.faults) {
      out << " " << device::host::FaultPointName(f.point) << "(count " << f.count << ", skip " << f.skip
          << ")";
    }
  }
  return out.str();
}

class Generator {
 public:
  Generator(std::uint64_t seed, bool with_faults) : rng_(seed) {
    w_.seed = seed;
    w_.device_count = static_cast<int>(Uniform(1, 3));
    ReplayOptions& o = w_.options;
    o.passes = static_cast<int>(Uniform(2, 5));
    o.restore = Chance(0.5) ? RestoreMode::kAuto : RestoreMode::kFull;
    constexpr std::array<std::uint64_t, 3> kChunks = {4096, std::uint64_t{64} * 1024, 1000};
    o.chunk_size = kChunks[Uniform(0, kChunks.size() - 1)];
    o.max_symbol_bytes = Chance(0.2) ? std::uint64_t{16} * 1024 : (1ull << 30);
    o.determinism_check = Chance(0.7);
    // Graph launches (issue 24): declined, replayed as a whole, or node by node.
    o.graph_replay = static_cast<GraphReplay>(Uniform(0, 2));
    if (with_faults) AddFaults();
    Build();
  }

  Workload Take() { return std::move(w_); }

 private:
  std::uint64_t Uniform(std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng_);
  }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Uniform(0, v.size() - 1)];
  }

  std::vector<std::uint8_t> RandomBytes(std::uint64_t n) {
    std::vector<std::uint8_t> bytes(n);
    for (std::uint64_t i = 0; i < n; i += 8) {
      std::uint64_t word = rng_();
      std::memcpy(bytes.data() + i, &word, std::min<std::uint64_t>(8, n - i));
    }
    return bytes;
  }

  // Sizes that make chunk boundaries matter: tiny, medium, large, and just around a multiple of
  // the chunk size.
  std::uint64_t RandomSize(std::uint64_t max) {
    switch (Uniform(0, 3)) {
      case 0: return Uniform(1, 64);
      case 1: return Uniform(65, 8192);
      case 2: return Uniform(8193, max);
      default: {
        std::uint64_t chunk = w_.options.chunk_size;
        std::uint64_t k = Uniform(1, std::max<std::uint64_t>(1, max / chunk));
        std::uint64_t size = k * chunk - 1 + Uniform(0, 2);
        return std::clamp<std::uint64_t>(size, 1, max);
      }
    }
  }

  // A random non-empty range inside `size` bytes: whole, a prefix, a suffix or any.
  std::pair<std::uint64_t, std::uint64_t> RandomRange(std::uint64_t size) {
    switch (Uniform(0, 3)) {
      case 0: return {0, size};
      case 1: return {0, Uniform(1, size)};
      case 2: {
        std::uint64_t offset = Uniform(0, size - 1);
        return {offset, size - offset};
      }
      default: {
        std::uint64_t offset = Uniform(0, size - 1);
        return {offset, Uniform(1, size - offset)};
      }
    }
  }

  void AddFaults() {
    std::vector<FaultPoint> points(kInjectablePoints.begin(), kInjectablePoints.end());
    std::shuffle(points.begin(), points.end(), rng_);
    std::uint64_t n = Uniform(1, 3);
    for (std::uint64_t i = 0; i < n; ++i) {
      FaultPlan fault;
      fault.point = points[i];
      // One failed restore copy is retried in full by the controller; a second failure in the
      // same window stops the replay early by design (kRestoreFailed), which this property does
      // not cover.
      fault.count = fault.point == FaultPoint::kRestoreCopy ? 1 : static_cast<int>(Uniform(1, 3));
      fault.skip = static_cast<int>(Uniform(0, 6));
      w_.faults.push_back(fault);
    }
  }

  void AddModules() {
    for (int d = 0; d < w_.device_count; ++d) {
      std::uint64_t count = Uniform(0, 3);
      for (std::uint64_t m = 0; m < count; ++m) {
        ModulePlan module;
        module.device = d;
        module.lazy = Chance(0.4);
        module.name = "module" + std::to_string(w_.modules.size());
        int module_index = static_cast<int>(w_.modules.size());
        std::uint64_t variables = Uniform(0, 4);
        for (std::uint64_t v = 0; v < variables; ++v) {
          VariablePlan variable;
          variable.module = module_index;
          variable.name = "var" + std::to_string(v);
          variable.size = Chance(0.12) ? 0 : RandomSize(kMaxVariableBytes);
          variable.is_constant = Chance(0.25);
          // Initial bytes for a prefix (or all) of the variable; zeros beyond it.
          variable.initial = RandomBytes(Chance(0.5) ? variable.size : Uniform(0, variable.size));
          module.variables.push_back(static_cast<int>(w_.variables.size()));
          w_.variables.push_back(std::move(variable));
        }
        w_.modules.push_back(std::move(module));
      }
    }
  }

  int AddAllocation(int device) {
    AllocationPlan a;
    a.device = device;
    a.size = RandomSize(kMaxAllocationBytes);
    if (Chance(0.2)) {
      constexpr std::array kOtherKinds = {MemoryKind::kHost, MemoryKind::kHostMapped,
                                          MemoryKind::kFineGrained, MemoryKind::kManaged};
      a.kind = kOtherKinds[Uniform(0, kOtherKinds.size() - 1)];
    } else {
      a.stream_ordered = Chance(0.3);
    }
    a.contents = RandomBytes(a.size);
    w_.allocations.push_back(std::move(a));
    int index = static_cast<int>(w_.allocations.size()) - 1;
    live_.insert(index);
    Step step;
    step.kind = StepKind::kAllocate;
    step.index = index;
    w_.steps.push_back(step);
    return index;
  }

  bool VariableLoaded(int variable) const {
    int module = w_.variables[static_cast<std::size_t>(variable)].module;
    return registered_.count(module) > 0 &&
           (!w_.modules[static_cast<std::size_t>(module)].lazy || launched_.count(module) > 0);
  }

  void AddLoadModule() {
    std::vector<int> pending;
    for (int m = 0; m < static_cast<int>(w_.modules.size()); ++m) {
      if (registered_.count(m) == 0) pending.push_back(m);
    }
    if (pending.empty()) return;
    int module = Pick(pending);
    registered_.insert(module);
    Step step;
    step.kind = StepKind::kLoadModule;
    step.index = module;
    w_.steps.push_back(step);
  }

  void AddFree() {
    if (live_.empty()) return;
    std::vector<int> live(live_.begin(), live_.end());
    int index = Pick(live);
    live_.erase(index);
    Step step;
    step.kind = StepKind::kFree;
    step.index = index;
    step.asynchronous =
        w_.allocations[static_cast<std::size_t>(index)].stream_ordered ? Chance(0.8) : Chance(0.3);
    w_.steps.push_back(step);
  }

  std::vector<int> LiveOn(int device, bool device_local_only) const {
    std::vector<int> out;
    for (int index : live_) {
      const AllocationPlan& a = w_.allocations[static_cast<std::size_t>(index)];
      if (a.device == device && (!device_local_only || a.kind == MemoryKind::kDeviceLocal))
        out.push_back(index);
    }
    return out;
  }

  void AddMemset() {
    int device = static_cast<int>(Uniform(0, static_cast<std::uint64_t>(w_.device_count) - 1));
    std::vector<int> live = LiveOn(device, false);
    if (live.empty()) return;
    Step step;
    step.kind = StepKind::kMemset;
    step.index = Pick(live);
    auto [offset, size] = RandomRange(w_.allocations[static_cast<std::size_t>(step.index)].size);
    step.dst_offset = offset;
    step.size = size;
    step.value = static_cast<std::uint8_t>(Uniform(0, 255));
    step.asynchronous = Chance(0.5);
    w_.steps.push_back(step);
  }

  void AddMemcpy() {
    int device = static_cast<int>(Uniform(0, static_cast<std::uint64_t>(w_.device_count) - 1));
    std::vector<int> live = LiveOn(device, false);
    if (live.size() < 2) return;
    Step step;
    step.kind = StepKind::kMemcpy;
    step.index = Pick(live);
    do {
      step.source = Pick(live);
    } while (step.source == step.index);
    std::uint64_t dst_size = w_.allocations[static_cast<std::size_t>(step.index)].size;
    std::uint64_t src_size = w_.allocations[static_cast<std::size_t>(step.source)].size;
    step.size = Uniform(1, std::min(dst_size, src_size));
    step.dst_offset = Uniform(0, dst_size - step.size);
    step.src_offset = Uniform(0, src_size - step.size);
    step.asynchronous = Chance(0.5);
    w_.steps.push_back(step);
  }

  // cudaMemcpyToSymbol into a __constant__ variable after its module loaded.
  void AddFillConstant() {
    std::vector<int> constants;
    for (int v = 0; v < static_cast<int>(w_.variables.size()); ++v) {
      const VariablePlan& variable = w_.variables[static_cast<std::size_t>(v)];
      if (variable.is_constant && variable.size > 0 && VariableLoaded(v)) constants.push_back(v);
    }
    if (constants.empty()) return;
    Step step;
    step.kind = StepKind::kFillConstant;
    step.index = Pick(constants);
    auto [offset, size] = RandomRange(w_.variables[static_cast<std::size_t>(step.index)].size);
    step.dst_offset = offset;
    step.size = size;
    step.bytes = RandomBytes(size);
    w_.steps.push_back(step);
  }

  void AddLaunch() {
    KernelPlan k;
    k.launch = static_cast<int>(w_.kernels.size());
    k.device = static_cast<int>(Uniform(0, static_cast<std::uint64_t>(w_.device_count) - 1));
    k.salt = rng_();
    std::uint64_t kind = Uniform(0, 99);
    k.kind = kind < 88 ? LaunchKind::kKernel : kind < 94 ? LaunchKind::kGraph : LaunchKind::kBatch;

    std::vector<int> own_modules;
    for (int m : registered_) {
      if (w_.modules[static_cast<std::size_t>(m)].device == k.device) own_modules.push_back(m);
    }
    if (!own_modules.empty() && Chance(0.6)) k.module = Pick(own_modules);

    // What this kernel can reach: its device's allocations, and the variables of modules loaded
    // on its device (its own module is loaded by this launch).
    struct Candidate {
      TargetKind target;
      int index;
      std::uint64_t size;
      bool writable;       // tracked and restored by replay
      bool write_only_ok;  // untracked but kernel-writable: may be overwritten, never read
    };
    std::vector<Candidate> candidates;
    for (int index : LiveOn(k.device, false)) {
      const AllocationPlan& a = w_.allocations[static_cast<std::size_t>(index)];
      candidates.push_back({TargetKind::kAllocation, index, a.size, a.kind == MemoryKind::kDeviceLocal,
                            device::IsKernelWritableUntracked(a.kind)});
    }
    for (int v = 0; v < static_cast<int>(w_.variables.size()); ++v) {
      const VariablePlan& variable = w_.variables[static_cast<std::size_t>(v)];
      const ModulePlan& module = w_.modules[static_cast<std::size_t>(variable.module)];
      if (variable.size == 0 || module.device != k.device) continue;
      if (!VariableLoaded(v) && variable.module != k.module) continue;
      // Constant memory is read-only to kernels; variables above the symbol cap are not
      // snapshotted, so a kernel may only read them.
      bool writable = !variable.is_constant && variable.size <= w_.options.max_symbol_bytes;
      candidates.push_back({TargetKind::kVariable, v, variable.size, writable, false});
    }
    if (k.module >= 0) launched_.insert(k.module);
    if (candidates.empty()) {
      Emit(std::move(k));
      return;
    }

    std::set<std::pair<TargetKind, int>> read_targets;
    std::uint64_t reads = Uniform(0, 4);
    for (std::uint64_t i = 0; i < reads; ++i) {
      const Candidate& c = Pick(candidates);
      if (c.write_only_ok) continue;  // kept write-only below
      auto [offset, size] = RandomRange(c.size);
      k.reads.push_back(Access{c.target, c.index, offset, size, false});
      read_targets.insert({c.target, c.index});
    }
    std::vector<const Candidate*> writable;
    std::vector<const Candidate*> write_only;
    for (const Candidate& c : candidates) {
      if (c.writable) writable.push_back(&c);
      if (c.write_only_ok && read_targets.count({c.target, c.index}) == 0) write_only.push_back(&c);
    }
    std::uint64_t writes = Uniform(1, 3);
    for (std::uint64_t i = 0; i < writes; ++i) {
      if (!write_only.empty() && Chance(0.15)) {
        const Candidate& c = *Pick(write_only);
        auto [offset, size] = RandomRange(c.size);
        k.writes.push_back(Access{c.target, c.index, offset, size, false});
        continue;
      }
      if (writable.empty()) continue;
      const Candidate& c = *Pick(writable);
      Access access;
      access.target = c.target;
      access.index = c.index;
      if (Chance(0.4) && !k.reads.empty()) {
        // In place over exactly a range this kernel reads, when one lies in this target.
        for (const Access& r : k.reads) {
          if (r.target == c.target && r.index == c.index) {
            access.offset = r.offset;
            access.size = r.size;
            break;
          }
        }
      }
      if (access.size == 0) std::tie(access.offset, access.size) = RandomRange(c.size);
      access.read_modify_write = Chance(0.5);
      k.writes.push_back(access);
    }
    Emit(std::move(k));
  }

  void Emit(KernelPlan k) {
    Step step;
    step.kind = StepKind::kLaunch;
    step.index = k.launch;
    w_.kernels.push_back(std::move(k));
    w_.steps.push_back(step);
  }

  void Build() {
    AddModules();
    for (std::uint64_t i = 0, n = Uniform(0, w_.modules.size()); i < n; ++i) AddLoadModule();
    for (int d = 0; d < w_.device_count; ++d) {
      for (std::uint64_t i = 0, n = Uniform(1, 5); i < n; ++i) AddAllocation(d);
    }
    std::uint64_t steps = Uniform(4, 14);
    for (std::uint64_t i = 0; i < steps; ++i) {
      std::uint64_t r = Uniform(0, 99);
      if (r < 45) {
        AddLaunch();
      } else if (r < 60) {
        AddAllocation(static_cast<int>(Uniform(0, static_cast<std::uint64_t>(w_.device_count) - 1)));
      } else if (r < 70) {
        AddFree();
      } else if (r < 78) {
        AddMemset();
      } else if (r < 86) {
        AddMemcpy();
      } else if (r < 92) {
        AddFillConstant();
      } else {
        AddLoadModule();
      }
    }
    AddLaunch();  // at least one launch
  }

  std::mt19937_64 rng_;
  Workload w_;
  std::set<int> live_;
  std::set<int> registered_;  // modules whose LoadModule step has been emitted
  std::set<int> launched_;    // modules a kernel of which has been launched (lazy ones load then)
};

// ---- running a workload -------------------------------------------------------------------------

std::uint64_t Mix(std::uint64_t h, std::uint64_t v) {
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Hash of [p, p+n) computed here rather than with base::HashBytes: libxxhash is an uninstrumented
// system library, so ASan would not see a kernel body reading freed memory through it.
std::uint64_t Checksum(const std::uint8_t* p, std::uint64_t n) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ n;
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h ^ (h >> 32);
}

struct Execution {
  int launch = 0;
  int pass = 0;
  std::uint64_t input_hash = 0;
  std::string error;  // the kernel could not resolve an address
};

struct ExecutionLog {
  std::mutex mu;
  std::vector<Execution> executions;
  void Append(Execution e) {
    std::lock_guard<std::mutex> lock(mu);
    executions.push_back(std::move(e));
  }
};

struct ResolvedAccess {
  Access access;
  DevicePtr allocation = 0;  // TargetKind::kAllocation
  ModuleId module = 0;       // TargetKind::kVariable: resolved when the kernel runs (lazy modules)
  std::string variable;
};

struct RunResult {
  std::vector<std::optional<std::vector<std::uint8_t>>> allocations;  // live at the end, by index
  std::vector<std::optional<std::vector<std::uint8_t>>> variables;    // loaded at the end, by index
  std::vector<Execution> executions;
  std::vector<ReplayRecord> records;
  std::vector<int> signal_counts;  // per launch
  std::map<FaultPoint, int> fired;
  std::string error;  // a runtime call failed
};

// The kernel body: hashes every byte it reads (its reads and its read-modify-write ranges) before
// writing anything, logs the hash with the pass, then writes deterministic functions of it.
void RunKernelBody(HostPlatform& platform, const KernelPlan& plan, const std::vector<ResolvedAccess>& reads,
                   const std::vector<ResolvedAccess>& writes, ExecutionLog& log, const KernelContext& ctx) {
  Execution execution;
  execution.launch = plan.launch;
  execution.pass = ctx.pass;
  auto address = [&](const ResolvedAccess& r) -> std::uint8_t* {
    DevicePtr base = r.allocation;
    if (r.access.target == TargetKind::kVariable) {
      StatusOr<DevicePtr> resolved = platform.VariableAddress(r.module, r.variable);
      if (!resolved.ok()) {
        execution.error = "variable " + r.variable + " not resolvable: " + resolved.status().ToString();
        return nullptr;
      }
      base = *resolved;
    }
    return reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(base + r.access.offset));
  };
  std::uint64_t h = plan.salt;
  std::vector<std::uint8_t*> write_ptrs;
  for (const ResolvedAccess& r : reads) {
    const std::uint8_t* p = address(r);
    if (p == nullptr) break;
    h = Mix(h, Checksum(p, r.access.size));
  }
  for (const ResolvedAccess& r : writes) {
    std::uint8_t* p = address(r);
    write_ptrs.push_back(p);
    if (p != nullptr && r.access.read_modify_write) h = Mix(h, Checksum(p, r.access.size));
  }
  execution.input_hash = h;
  bool ok = execution.error.empty();
  log.Append(std::move(execution));
  if (!ok) return;
  for (std::size_t j = 0; j < writes.size(); ++j) {
    std::uint8_t* p = write_ptrs[j];
    std::uint64_t size = writes[j].access.size;
    std::uint64_t x = Mix(h, j);
    if (writes[j].access.read_modify_write) {
      for (std::uint64_t i = 0; i < size; ++i) {
        p[i] = static_cast<std::uint8_t>(p[i] * 29u + static_cast<std::uint8_t>(x >> ((i % 8) * 8)) + j);
      }
    } else {
      for (std::uint64_t i = 0; i < size; i += 8) {
        x = Mix(x, i);
        std::memcpy(p + i, &x, std::min<std::uint64_t>(8, size - i));
      }
    }
  }
}

ModuleSpec ToSpec(const Workload& w, const ModulePlan& module) {
  ModuleSpec spec;
  spec.name = module.name;
  spec.lazy = module.lazy;
  for (int v : module.variables) {
    const VariablePlan& variable = w.variables[static_cast<std::size_t>(v)];
    spec.variables.push_back(
        ModuleVariableSpec{variable.name, variable.size, variable.is_constant, variable.initial});
  }
  return spec;
}

RunResult Execute(const Workload& w, bool replay) {
  RunResult result;
  HostPlatformOptions platform_options;
  platform_options.device_count = w.device_count;
  std::unique_ptr<gpuprof::testing::ReplayRig> rig;
  std::unique_ptr<HostPlatform> plain;
  HostPlatform* platform = nullptr;
  if (replay) {
    rig = std::make_unique<gpuprof::testing::ReplayRig>(platform_options);
    rig->Configure(w.options);
    platform = &rig->platform();
    for (const FaultPlan& f : w.faults) platform->InjectFault(f.point, f.count, f.skip);
  } else {
    plain = std::make_unique<HostPlatform>(platform_options);
    platform = plain.get();
  }

  auto log = std::make_shared<ExecutionLog>();
  std::vector<DevicePtr> allocations(w.allocations.size(), 0);
  std::vector<bool> live(w.allocations.size(), false);
  std::vector<ModuleId> modules(w.modules.size(), 0);
  std::deque<CompletionSignal> signals;
  auto fail = [&](const std::string& what, const Status& status) {
    if (result.error.empty()) result.error = what + ": " + status.ToString();
  };
  auto to_ptr = [](DevicePtr p) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p)); };
  auto host_ptr = [](const void* p) { return static_cast<DevicePtr>(reinterpret_cast<std::uintptr_t>(p)); };

  for (const Step& step : w.steps) {
    if (!result.error.empty()) break;
    switch (step.kind) {
      case StepKind::kLoadModule: {
        const ModulePlan& plan = w.modules[static_cast<std::size_t>(step.index)];
        StatusOr<ModuleId> id = platform->LoadModule(plan.device, ToSpec(w, plan));
        if (!id.ok()) {
          fail("LoadModule " + plan.name, id.status());
          break;
        }
        modules[static_cast<std::size_t>(step.index)] = *id;
        break;
      }
      case StepKind::kAllocate: {
        const AllocationPlan& plan = w.allocations[static_cast<std::size_t>(step.index)];
        StreamId stream = platform->DefaultStream(plan.device);
        StatusOr<DevicePtr> ptr = plan.stream_ordered ? platform->MallocAsync(stream, plan.size)
                                                      : platform->Malloc(plan.device, plan.size, plan.kind);
        if (!ptr.ok()) {
          fail("allocating #" + std::to_string(step.index), ptr.status());
          break;
        }
        allocations[static_cast<std::size_t>(step.index)] = *ptr;
        live[static_cast<std::size_t>(step.index)] = true;
        // Fresh memory is never in use by queued work, so a synchronous fill needs no ordering.
        Status filled = plan.stream_ordered
                            ? platform->MemcpyAsync(stream, *ptr, host_ptr(plan.contents.data()), plan.size)
                            : platform->Memcpy(*ptr, host_ptr(plan.contents.data()), plan.size);
        if (!filled.ok()) fail("filling #" + std::to_string(step.index), filled);
        break;
      }
      case StepKind::kFree: {
        const AllocationPlan& plan = w.allocations[static_cast<std::size_t>(step.index)];
        DevicePtr ptr = allocations[static_cast<std::size_t>(step.index)];
        Status freed = step.asynchronous ? platform->FreeAsync(platform->DefaultStream(plan.device), ptr)
                                         : platform->Free(ptr);
        if (!freed.ok()) fail("freeing #" + std::to_string(step.index), freed);
        live[static_cast<std::size_t>(step.index)] = false;
        break;
      }
      case StepKind::kMemset: {
        const AllocationPlan& plan = w.allocations[static_cast<std::size_t>(step.index)];
        StreamId stream = platform->DefaultStream(plan.device);
        DevicePtr dst = allocations[static_cast<std::size_t>(step.index)] + step.dst_offset;
        Status status = OkStatus();
        if (step.asynchronous) {
          status = platform->MemsetAsync(stream, dst, step.value, step.size);
        } else {
          // Ordered after the kernels already queued on the device, as the application would.
          status = platform->StreamSynchronize(stream);
          if (status.ok()) status = platform->Memset(dst, step.value, step.size);
        }
        if (!status.ok()) fail("memset into #" + std::to_string(step.index), status);
        break;
      }
      case StepKind::kMemcpy: {
        const AllocationPlan& plan = w.allocations[static_cast<std::size_t>(step.index)];
        StreamId stream = platform->DefaultStream(plan.device);
        DevicePtr dst = allocations[static_cast<std::size_t>(step.index)] + step.dst_offset;
        DevicePtr src = allocations[static_cast<std::size_t>(step.source)] + step.src_offset;
        Status status = OkStatus();
        if (step.asynchronous) {
          status = platform->MemcpyAsync(stream, dst, src, step.size);
        } else {
          status = platform->StreamSynchronize(stream);
          if (status.ok()) status = platform->Memcpy(dst, src, step.size);
        }
        if (!status.ok()) fail("memcpy into #" + std::to_string(step.index), status);
        break;
      }
      case StepKind::kFillConstant: {
        const VariablePlan& plan = w.variables[static_cast<std::size_t>(step.index)];
        const ModulePlan& module = w.modules[static_cast<std::size_t>(plan.module)];
        Status status = platform->StreamSynchronize(platform->DefaultStream(module.device));
        StatusOr<DevicePtr> address =
            platform->VariableAddress(modules[static_cast<std::size_t>(plan.module)], plan.name);
        if (!address.ok()) {
          fail("resolving " + plan.name, address.status());
          break;
        }
        if (status.ok())
          status = platform->Memcpy(*address + step.dst_offset, host_ptr(step.bytes.data()), step.size);
        if (!status.ok()) fail("filling constant " + plan.name, status);
        break;
      }
      case StepKind::kLaunch: {
        const KernelPlan& plan = w.kernels[static_cast<std::size_t>(step.index)];
        auto resolve = [&](const std::vector<Access>& accesses) {
          std::vector<ResolvedAccess> out;
          for (const Access& a : accesses) {
            ResolvedAccess r;
            r.access = a;
            if (a.target == TargetKind::kAllocation) {
              r.allocation = allocations[static_cast<std::size_t>(a.index)];
            } else {
              const VariablePlan& variable = w.variables[static_cast<std::size_t>(a.index)];
              r.module = modules[static_cast<std::size_t>(variable.module)];
              r.variable = variable.name;
            }
            out.push_back(std::move(r));
          }
          return out;
        };
        Kernel kernel;
        kernel.name = "kernel" + std::to_string(plan.launch);
        kernel.module = plan.module >= 0 ? modules[static_cast<std::size_t>(plan.module)] : 0;
        kernel.body = [platform, &plan, reads = resolve(plan.reads), writes = resolve(plan.writes),
                       log](const KernelContext& ctx) {
          RunKernelBody(*platform, plan, reads, writes, *log, ctx);
        };
        StreamId stream = platform->DefaultStream(plan.device);
        CompletionSignal* signal = &signals.emplace_back();
        Status launched;
        if (plan.kind == LaunchKind::kGraph) {
          // An empty node, then the kernel: node-by-node replay runs the node before the kernel
          // again before each pass.
          std::vector<device::host::GraphNodeSpec> nodes(2);
          nodes[0].type = device::GraphNodeType::kEmpty;
          nodes[1].kernel = kernel;
          nodes[1].dependencies = {0};
          StatusOr<device::host::GraphId> graph = platform->CreateGraph(plan.device, std::move(nodes));
          launched = graph.ok() ? platform->LaunchGraph(stream, *graph, signal) : graph.status();
          if (graph.ok() && launched.ok()) launched = platform->DestroyGraph(*graph);
        } else {
          launched = plan.kind == LaunchKind::kBatch ? platform->LaunchBatch(stream, {kernel}, signal)
                                                     : platform->Launch(stream, kernel, signal);
        }
        if (!launched.ok()) fail("launching " + kernel.name, launched);
        break;
      }
    }
  }

  for (int d = 0; d < w.device_count; ++d) {
    Status synced = platform->DeviceSynchronize(d);
    if (!synced.ok()) fail("synchronizing device " + std::to_string(d), synced);
  }
  result.allocations.resize(w.allocations.size());
  for (std::size_t i = 0; i < w.allocations.size(); ++i) {
    if (!live[i]) continue;
    const auto* p = static_cast<const std::uint8_t*>(to_ptr(allocations[i]));
    result.allocations[i].emplace(p, p + w.allocations[i].size);
  }
  result.variables.resize(w.variables.size());
  for (std::size_t v = 0; v < w.variables.size(); ++v) {
    const VariablePlan& plan = w.variables[v];
    ModuleId module = modules[static_cast<std::size_t>(plan.module)];
    if (module == 0 || plan.size == 0 || !platform->ModuleLoaded(module)) continue;
    StatusOr<DevicePtr> address = platform->VariableAddress(module, plan.name);
    if (!address.ok()) {
      fail("resolving " + plan.name + " at the end", address.status());
      continue;
    }
    const auto* p = static_cast<const std::uint8_t*>(to_ptr(*address));
    result.variables[v].emplace(p, p + plan.size);
  }
  for (const CompletionSignal& signal : signals) result.signal_counts.push_back(signal.count());
  if (rig != nullptr && rig->controller() != nullptr) result.records = rig->controller()->records();
  for (FaultPoint point : kInjectablePoints) result.fired[point] = platform->FaultsFired(point);
  {
    std::lock_guard<std::mutex> lock(log->mu);
    result.executions = log->executions;
  }
  return result;
}

// ---- checking ------------------------------------------------------------------------------------

// Where two byte vectors first differ, or "" when equal.
std::string FirstDifference(const std::vector<std::uint8_t>& replayed,
                            const std::vector<std::uint8_t>& reference) {
  if (replayed.size() != reference.size()) {
    return "size " + std::to_string(replayed.size()) + " vs " + std::to_string(reference.size());
  }
  auto [a, b] = std::mismatch(replayed.begin(), replayed.end(), reference.begin());
  if (a == replayed.end()) return "";
  std::uint64_t offset = static_cast<std::uint64_t>(a - replayed.begin());
  std::uint64_t differing = 0;
  for (std::size_t i = 0; i < replayed.size(); ++i) differing += replayed[i] != reference[i] ? 1u : 0u;
  std::ostringstream out;
  out << "first difference at offset " << offset << " (replayed 0x" << std::hex << int{*a}
      << ", unreplayed 0x" << int{*b} << std::dec << "), " << differing << " differing byte(s) of "
      << replayed.size();
  return out.str();
}

struct Totals {
  std::uint64_t replayed = 0;
  std::uint64_t graphs_replayed = 0;  // of `replayed`, graph launches (whole or node by node)
  std::uint64_t declined = 0;
  std::uint64_t passes = 0;
  std::map<DeclineReason, std::uint64_t> reasons;
  std::map<FaultPoint, std::uint64_t> fired;
};

// Compares a replayed run with the unreplayed reference; adds gtest failures (the caller's
// SCOPED_TRACE names the seed); stops at the first violation.
void Check(const Workload& w, const RunResult& replayed, const RunResult& reference, Totals& totals) {
  ASSERT_EQ(replayed.error, "") << "replayed run";
  ASSERT_EQ(reference.error, "") << "unreplayed run";
  const int passes = w.options.passes;
  const std::size_t launches = w.kernels.size();

  // The reference: every launch ran once, unreplayed.
  std::vector<std::uint64_t> reference_input(launches, 0);
  std::vector<int> reference_runs(launches, 0);
  for (const Execution& e : reference.executions) {
    ASSERT_EQ(e.error, "") << "launch " << e.launch << " (unreplayed)";
    ASSERT_EQ(e.pass, 0) << "launch " << e.launch << " ran with a pass number without replay";
    reference_input[static_cast<std::size_t>(e.launch)] = e.input_hash;
    ++reference_runs[static_cast<std::size_t>(e.launch)];
  }
  for (std::size_t i = 0; i < launches; ++i)
    ASSERT_EQ(reference_runs[i], 1) << "launch " << i << " (unreplayed)";

  // Every launch went through the controller and has exactly one record.
  ASSERT_EQ(replayed.records.size(), launches);
  std::vector<const ReplayRecord*> records(launches, nullptr);
  for (const ReplayRecord& r : replayed.records) {
    ASSERT_LT(r.launch_index, launches);
    ASSERT_EQ(records[r.launch_index], nullptr) << "two records for launch " << r.launch_index;
    records[r.launch_index] = &r;
  }
  std::vector<std::vector<const Execution*>> runs(launches);
  for (const Execution& e : replayed.executions) {
    ASSERT_EQ(e.error, "") << "launch " << e.launch << " pass " << e.pass;
    runs[static_cast<std::size_t>(e.launch)].push_back(&e);
  }

  for (std::size_t i = 0; i < launches; ++i) {
    const KernelPlan& plan = w.kernels[i];
    const ReplayRecord& record = *records[i];
    const auto& executed = runs[i];
    EXPECT_EQ(replayed.signal_counts[i], 1)
        << "launch " << i << ": the application's completion must be signalled once";
    if (record.replayed) {
      ++totals.replayed;
      totals.passes += executed.size();
      const bool graph = plan.kind == LaunchKind::kGraph;
      EXPECT_TRUE(plan.kind == LaunchKind::kKernel || (graph && w.options.graph_replay != GraphReplay::kOff))
          << "launch " << i << " of kind " << device::LaunchKindName(plan.kind) << " was replayed";
      if (graph) {
        ++totals.graphs_replayed;
        EXPECT_EQ(record.replay_mode,
                  w.options.graph_replay == GraphReplay::kNode ? ReplayMode::kNode : ReplayMode::kGraph)
            << "launch " << i;
      }
      EXPECT_EQ(record.decline_reason, DeclineReason::kNone);
      EXPECT_EQ(record.passes.size(), static_cast<std::size_t>(passes)) << "launch " << i;
      ASSERT_EQ(executed.size(), static_cast<std::size_t>(passes))
          << "replayed launch " << i << " ran " << executed.size() << " time(s), not " << passes;
      for (int p = 0; p < passes; ++p) {
        ASSERT_EQ(executed[static_cast<std::size_t>(p)]->pass, p + 1) << "launch " << i;
        // (a): identical inputs in every pass, and the unreplayed run's inputs.
        ASSERT_EQ(executed[static_cast<std::size_t>(p)]->input_hash, reference_input[i])
            << "launch " << i << " pass " << p + 1 << " saw different inputs than "
            << (p == 0 ? "the unreplayed run" : "pass 1");
      }
      EXPECT_TRUE(record.deterministic)
          << "launch " << i << ": a deterministic kernel was reported nondeterministic";
    } else {
      ++totals.declined;
      ++totals.reasons[record.decline_reason];
      std::set<DeclineReason> allowed;
      if (plan.kind == LaunchKind::kGraph) {
        allowed = {DeclineReason::kGraphLaunch};
        if (w.options.graph_replay != GraphReplay::kOff) {
          allowed = {};
          if (!w.faults.empty()) allowed = {DeclineReason::kIncompleteSnapshot, DeclineReason::kDrainTimeout};
        }
      }
      if (plan.kind == LaunchKind::kBatch) allowed = {DeclineReason::kMultiDispatch};
      if (plan.kind == LaunchKind::kKernel && !w.faults.empty()) {
        allowed = {DeclineReason::kIncompleteSnapshot, DeclineReason::kDrainTimeout};
      }
      EXPECT_EQ(allowed.count(record.decline_reason), 1u)
          << "launch " << i << " (" << device::LaunchKindName(plan.kind)
          << ") declined: " << DeclineReasonName(record.decline_reason) << ": " << record.decline_detail;
      ASSERT_EQ(executed.size(), 1u) << "declined launch " << i << " ("
                                     << DeclineReasonName(record.decline_reason) << ") ran "
                                     << executed.size() << " time(s)";
      EXPECT_EQ(executed[0]->pass, 0) << "declined launch " << i;
      ASSERT_EQ(executed[0]->input_hash, reference_input[i])
          << "declined launch " << i << " saw different inputs";
    }
  }

  // (b)/(c): identical memory, compared by allocation / variable index (addresses differ).
  for (std::size_t i = 0; i < w.allocations.size(); ++i) {
    ASSERT_EQ(replayed.allocations[i].has_value(), reference.allocations[i].has_value())
        << "allocation #" << i;
    if (!replayed.allocations[i]) continue;
    std::string diff = FirstDifference(*replayed.allocations[i], *reference.allocations[i]);
    ASSERT_EQ(diff, "") << "allocation #" << i << " (device " << w.allocations[i].device << ", "
                        << w.allocations[i].size << " bytes, "
                        << device::MemoryKindName(w.allocations[i].kind)
                        << (w.allocations[i].stream_ordered ? ", stream-ordered" : "") << ")";
  }
  for (std::size_t v = 0; v < w.variables.size(); ++v) {
    ASSERT_EQ(replayed.variables[v].has_value(), reference.variables[v].has_value())
        << "variable #" << v << " loaded";
    if (!replayed.variables[v]) continue;
    const VariablePlan& plan = w.variables[v];
    std::string diff = FirstDifference(*replayed.variables[v], *reference.variables[v]);
    ASSERT_EQ(diff, "") << "module variable " << w.modules[static_cast<std::size_t>(plan.module)].name
                        << "::" << plan.name << " (" << plan.size << " bytes"
                        << (plan.is_constant ? ", constant" : "")
                        << (w.modules[static_cast<std::size_t>(plan.module)].lazy ? ", lazy module" : "")
                        << ")";
  }
  for (const auto& [point, fired] : replayed.fired) totals.fired[point] += static_cast<std::uint64_t>(fired);
}

void RunProperty(bool with_faults) {
  // Declines and restore failures are expected by the thousand here; their warnings would drown
  // the output.
  base::LogLevel saved_level = base::CurrentLogLevel();
  base::SetLogLevel(base::LogLevel::kOff);
  PropertyConfig config = ReadConfig();
  Totals totals;
  for (std::uint64_t i = 0; i < config.iterations; ++i) {
    std::uint64_t seed = config.seed + i;
    Workload w = Generator(seed, with_faults).Take();
    SCOPED_TRACE(Describe(w) + "\n  reproduce: GPUPROF_PROPERTY_SEED=" + std::to_string(seed) +
                 " GPUPROF_PROPERTY_ITERATIONS=1 replay_property_test --gtest_filter=" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "." +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    RunResult replayed = Execute(w, /*replay=*/true);
    RunResult reference = Execute(w, /*replay=*/false);
    Check(w, replayed, reference, totals);
    if (::testing::Test::HasFailure()) break;
  }
  base::SetLogLevel(saved_level);
  std::cout << "workloads: " << config.iterations << ", launches replayed: " << totals.replayed
            << " (passes run: " << totals.passes << "; graph launches: " << totals.graphs_replayed
            << "), declined: " << totals.declined << std::endl;
  for (const auto& [reason, n] : totals.reasons)
    std::cout << "  declined " << DeclineReasonName(reason) << ": " << n << "\n";
  for (const auto& [point, n] : totals.fired) {
    if (n > 0) std::cout << "  faults fired at " << device::host::FaultPointName(point) << ": " << n << "\n";
  }
  if (::testing::Test::HasFailure() || config.iterations < 200) return;
  // Guard against a vacuous run: the generator must keep producing replays, declines and, with
  // faults, failures at every injected point.
  EXPECT_GT(totals.replayed, config.iterations / 2);
  EXPECT_GT(totals.reasons[DeclineReason::kGraphLaunch], 0u);
  EXPECT_GT(totals.graphs_replayed, 0u);
  EXPECT_GT(totals.reasons[DeclineReason::kMultiDispatch], 0u);
  if (with_faults) {
    for (FaultPoint point : kInjectablePoints) {
      EXPECT_GT(totals.fired[point], 0u) << "no fault fired at " << device::host::FaultPointName(point);
    }
    EXPECT_GT(totals.reasons[DeclineReason::kIncompleteSnapshot], 0u);
  } else {
    EXPECT_EQ(totals.reasons[DeclineReason::kIncompleteSnapshot], 0u);
  }
}

TEST(ReplayPropertyTest, ReplayedWorkloadsSeeIdenticalInputsAndLeaveUnreplayedResults) { RunProperty(false); }

TEST(ReplayPropertyTest, InjectedFaultsNeverChangeResultsOrRunCounts) { RunProperty(true); }

// Found by this property with two restore-copy faults in one window: the restore before pass 2
// fails half-way and its first full retry fails too. Transient copy failures
// are retried, so every pass still sees identical inputs and the application's result is the
// unreplayed one. (Copies that never succeed stop the replay with kRestoreFailed: see
// ControllerTest.RestoreThatKeepsFailingStopsTheReplay.)
TEST(ReplayPropertyTest, RestoreFailingTwiceIsRetriedAndLeavesTheUnreplayedResult) {
  gpuprof::testing::ReplayRig rig;
  ReplayOptions options;
  options.passes = 3;
  options.restore = RestoreMode::kFull;
  rig.Configure(options);
  HostPlatform& platform = rig.platform();
  constexpr std::uint64_t kBytes = 64;
  StatusOr<DevicePtr> a = platform.Malloc(0, kBytes);
  StatusOr<DevicePtr> b = platform.Malloc(0, kBytes);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(platform.Memset(*a, 1, kBytes).ok());
  ASSERT_TRUE(platform.Memset(*b, 1, kBytes).ok());
  auto* pa = reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(*a));
  auto* pb = reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(*b));
  Kernel increment{"increment", [pa, pb](const KernelContext&) {
                     for (std::uint64_t i = 0; i < kBytes; ++i) {
                       ++pa[i];
                       ++pb[i];
                     }
                   }};
  // The batched restore before pass 2 fails half-way (the first region written, the second
  // not), and so does its first full retry.
  platform.InjectFault(FaultPoint::kRestoreCopy, 2);
  ASSERT_TRUE(platform.Launch(platform.DefaultStream(0), increment).ok());
  ASSERT_TRUE(platform.DeviceSynchronize(0).ok());

  std::vector<ReplayRecord> records = rig.controller()->records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].replayed);
  EXPECT_EQ(records[0].passes.size(), 3u);
  EXPECT_EQ(platform.FaultsFired(FaultPoint::kRestoreCopy), 2);
  // One increment, as an unreplayed run leaves it, in both buffers.
  EXPECT_EQ(std::vector<std::uint8_t>(pa, pa + kBytes), std::vector<std::uint8_t>(kBytes, 2));
  EXPECT_EQ(std::vector<std::uint8_t>(pb, pb + kBytes), std::vector<std::uint8_t>(kBytes, 2));
}

}  // namespace
}  // namespace gpuprof::replay
