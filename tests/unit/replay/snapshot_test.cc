#include "replay/snapshot.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "base/logging.h"
#include "device/host/host_platform.h"
#include "fakes/replay_rig.h"

namespace gpuprof::replay {
namespace {

using device::DevicePtr;
using device::host::FaultPoint;
using device::host::ModuleSpec;
using device::host::ModuleVariableSpec;
using gpuprof::testing::ReplayRig;

std::uint8_t* Bytes(DevicePtr p) { return reinterpret_cast<std::uint8_t*>(p); }

SnapshotOptions Options(std::uint64_t chunk = 4096, std::uint64_t max_symbol = 1ull << 30,
                        device::StorageTier tier = device::StorageTier::kDevice) {
  SnapshotOptions options;
  options.chunk_size = chunk;
  options.max_symbol_bytes = max_symbol;
  options.fastest_tier = tier;
  return options;
}

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override { rig_.inventory().EnableRecording(true); }

  DevicePtr Alloc(int device, std::uint64_t size, std::uint8_t fill) {
    auto ptr = rig_.platform().Malloc(device, size);
    EXPECT_TRUE(ptr.ok()) << ptr.status().ToString();
    std::memset(Bytes(*ptr), fill, size);
    return *ptr;
  }

  // A fresh snapshot (a first, complete capture) of `device`.
  std::unique_ptr<Snapshot> Capture(int device = 0, std::uint64_t chunk = 4096,
                                    std::uint64_t max_symbol = 1ull << 30,
                                    device::StorageTier tier = device::StorageTier::kDevice) {
    auto snapshot = std::make_unique<Snapshot>(rig_.device(device));
    snapshot->Capture(rig_.inventory(), Options(chunk, max_symbol, tier));
    return snapshot;
  }

  ReplayRig rig_;
};

TEST_F(SnapshotTest, CapturesOnlyTheOwningDevicesAllocations) {
  DevicePtr a = Alloc(0, 10000, 1);
  Alloc(1, 5000, 2);
  auto snapshot = Capture(0);
  ASSERT_TRUE(snapshot->ok()) << snapshot->failure();
  ASSERT_EQ(snapshot->regions().size(), 1u);
  EXPECT_EQ(snapshot->regions()[0].base, a);
  EXPECT_EQ(snapshot->total_bytes(), 10000u);
  EXPECT_EQ(snapshot->regions()[0].chunk_hashes.size(), 3u);  // 4096-byte chunks, short last one
}

TEST_F(SnapshotTest, ExcludedKindsAreNeverCaptured) {
  ASSERT_TRUE(rig_.platform().Malloc(0, 1000, device::MemoryKind::kManaged).ok());
  ASSERT_TRUE(rig_.platform().Malloc(0, 1000, device::MemoryKind::kHostMapped).ok());
  ASSERT_TRUE(rig_.platform().CreateStream(0).ok());  // kernarg + executable pools
  auto snapshot = Capture(0);
  ASSERT_TRUE(snapshot->ok());
  EXPECT_EQ(snapshot->regions().size(), 0u);
}

TEST_F(SnapshotTest, RestoreWritesEveryRegionBackAndCountsThem) {
  DevicePtr a = Alloc(0, 8192, 0x11);
  DevicePtr b = Alloc(0, 100, 0x22);
  auto snapshot = Capture();
  ASSERT_TRUE(snapshot->ok());
  std::memset(Bytes(a), 0xFF, 8192);
  std::memset(Bytes(b), 0xFF, 100);
  RestoreStats stats = snapshot->Restore(rig_.inventory(), RestoreMode::kFull, nullptr);
  EXPECT_EQ(stats.regions_restored, 2u);
  EXPECT_EQ(stats.bytes_restored, 8292u);
  EXPECT_EQ(Bytes(a)[8191], 0x11);
  EXPECT_EQ(Bytes(b)[0], 0x22);
}

TEST_F(SnapshotTest, CapturesModuleVariablesWithTheirContentsAtSnapshotTime) {
  ModuleSpec spec;
  spec.name = "m";
  spec.variables.push_back(ModuleVariableSpec{"counter", 4, false, {7, 0, 0, 0}});
  spec.variables.push_back(ModuleVariableSpec{"table", 64, true, {}});
  auto module = rig_.platform().LoadModule(0, spec);
  ASSERT_TRUE(module.ok());
  DevicePtr table = *rig_.platform().VariableAddress(*module, "table");
  DevicePtr counter = *rig_.platform().VariableAddress(*module, "counter");
  // Constant memory filled after load (cudaMemcpyToSymbol): the snapshot must read it now.
  std::uint8_t fill[64];
  std::memset(fill, 0x5A, sizeof fill);
  ASSERT_TRUE(rig_.platform().Memcpy(table, reinterpret_cast<DevicePtr>(fill), sizeof fill).ok());
  auto snapshot = Capture();
  ASSERT_TRUE(snapshot->ok());
  EXPECT_EQ(snapshot->regions().size(), 2u);
  Bytes(counter)[0] = 99;
  Bytes(table)[10] = 0;
  RestoreStats stats = snapshot->Restore(rig_.inventory(), RestoreMode::kAuto, nullptr);
  EXPECT_EQ(stats.regions_restored, 2u);
  EXPECT_EQ(Bytes(counter)[0], 7);
  EXPECT_EQ(Bytes(table)[10], 0x5A);
}

TEST_F(SnapshotTest, SkipsZeroSizeAndOversizedModuleVariables) {
  ModuleSpec spec;
  spec.name = "big";
  spec.variables.push_back(ModuleVariableSpec{"empty", 0, false, {}});
  spec.variables.push_back(ModuleVariableSpec{"huge", (1ull << 30) + (1ull << 29), false, {}});  // 1.5 GiB
  spec.variables.push_back(ModuleVariableSpec{"medium", 100 * 1024, false, {}});
  spec.variables.push_back(ModuleVariableSpec{"small", 16, false, {}});
  ASSERT_TRUE(rig_.platform().LoadModule(0, spec).ok());
  base::ScopedLogCapture log;
  auto snapshot = Capture();
  ASSERT_TRUE(snapshot->ok()) << snapshot->failure();
  EXPECT_EQ(snapshot->regions().size(), 2u);  // medium and small
  EXPECT_EQ(snapshot->symbols_skipped(), 1u);
  EXPECT_EQ(log.Count("'huge'"), 1);
  // The cap is configurable.
  auto capped = Capture(0, 4096, 64 * 1024);
  ASSERT_TRUE(capped->ok());
  EXPECT_EQ(capped->regions().size(), 1u);
  EXPECT_EQ(capped->symbols_skipped(), 2u);
}

struct CaptureFault {
  FaultPoint point;
  const char* expected_words;
};

void PrintTo(const CaptureFault& fault, std::ostream* os) {
  *os << device::host::FaultPointName(fault.point);
}

class SnapshotFaultTest : public SnapshotTest, public ::testing::WithParamInterface<CaptureFault> {};

TEST_P(SnapshotFaultTest, CaptureFailureMakesTheSnapshotIncompleteWithTheReason) {
  Alloc(0, 10000, 1);
  Alloc(0, 10000, 2);
  ModuleSpec spec;
  spec.name = "m";
  spec.variables.push_back(ModuleVariableSpec{"g", 8, false, {}});
  ASSERT_TRUE(rig_.platform().LoadModule(0, spec).ok());
  rig_.platform().InjectFault(GetParam().point, 1, 0);
  auto snapshot = Capture();
  EXPECT_FALSE(snapshot->ok());
  EXPECT_NE(snapshot->failure().find(GetParam().expected_words), std::string::npos) << snapshot->failure();
  EXPECT_EQ(rig_.platform().FaultsFired(GetParam().point), 1);
  // Nothing is fatal: the next capture, without the fault, is complete, and complete from scratch.
  EXPECT_TRUE(snapshot->Capture(rig_.inventory(), Options()));
  EXPECT_TRUE(snapshot->ok()) << snapshot->failure();
  EXPECT_EQ(snapshot->regions().size(), 3u);
  EXPECT_TRUE(snapshot->last_capture().complete);
}

INSTANTIATE_TEST_SUITE_P(
    EveryCaptureFailure, SnapshotFaultTest,
    ::testing::Values(CaptureFault{FaultPoint::kSaveCopy, "capturing 3 region(s) failed"},
                      CaptureFault{FaultPoint::kMetadataAllocation, "metadata"},
                      CaptureFault{FaultPoint::kModuleEnumeration, "module-variable enumeration"}),
    [](const ::testing::TestParamInfo<CaptureFault>& param_info) {
      std::string name;
      for (char c : device::host::FaultPointName(param_info.param.point)) {
        if (std::isalnum(static_cast<unsigned char>(c))) name += c;
      }
      return name;
    });

TEST_F(SnapshotTest, ArenaThatCannotGrowSendsTheSnapshotToTheNextTier) {
  DevicePtr a = Alloc(0, 10000, 1);
  rig_.platform().InjectFault(FaultPoint::kArenaGrowth, 1, 0);
  auto snapshot = Capture();
  ASSERT_TRUE(snapshot->ok()) << snapshot->failure();
  EXPECT_EQ(snapshot->regions()[0].tier, device::StorageTier::kPinnedHost);
  EXPECT_EQ(snapshot->device_bytes(), 0u);
  std::memset(Bytes(a), 0, 10000);
  EXPECT_EQ(snapshot->Restore(rig_.inventory(), RestoreMode::kAuto, nullptr).regions_restored, 1u);
  EXPECT_EQ(Bytes(a)[9999], 1);
  // An exhausted pinned pool too: pageable host memory takes it.
  rig_.platform().InjectFault(FaultPoint::kPinnedPoolExhausted, 1, 0);
  rig_.device(0).ReleaseArena();
  rig_.platform().InjectFault(FaultPoint::kArenaGrowth, 1, 0);
  auto pageable = Capture();
  ASSERT_TRUE(pageable->ok()) << pageable->failure();
  EXPECT_EQ(pageable->regions()[0].tier, device::StorageTier::kPageableHost);
  // When no tier can grow the snapshot is incomplete, with the reason.
  rig_.device(0).ReleaseArena();
  rig_.platform().InjectFault(FaultPoint::kArenaGrowth, 100, 0);
  auto none = Capture();
  EXPECT_FALSE(none->ok());
  EXPECT_NE(none->failure().find("no storage tier has room"), std::string::npos) << none->failure();
}

TEST_F(SnapshotTest, SpillFileTierWritesAFailureOnlyAsAnIncompleteSnapshot) {
  char name[] = "/tmp/gpuprof_spill_test_XXXXXX";
  ASSERT_NE(::mkdtemp(name), nullptr);
  const std::string dir = name;
  {
    device::host::HostPlatformOptions options;
    options.arena.spill_directory = dir;
    gpuprof::testing::ReplayRig rig(options);
    rig.inventory().EnableRecording(true);
    StatusOr<DevicePtr> a = rig.platform().Malloc(0, 3 * 4096 + 10);
    ASSERT_TRUE(a.ok());
    std::memset(Bytes(*a), 5, 3 * 4096 + 10);
    Snapshot snapshot(rig.device(0));
    ASSERT_TRUE(snapshot.Capture(rig.inventory(), Options(4096, 1ull << 30, device::StorageTier::kFile)))
        << snapshot.failure();
    EXPECT_EQ(snapshot.regions()[0].tier, device::StorageTier::kFile);
    EXPECT_EQ(snapshot.tier_bytes()[3], 3u * 4096 + 10);
    std::memset(Bytes(*a) + 4096, 0, 100);
    RestoreStats restored = snapshot.Restore(rig.inventory(), RestoreMode::kAuto, nullptr);
    EXPECT_EQ(restored.dirty_chunks, 1u);
    EXPECT_EQ(Bytes(*a)[4096], 5);
    // A full disk while writing the spill file: incomplete, never a partial snapshot in use.
    rig.platform().InjectFault(FaultPoint::kSpillFileWrite, 1, 0);
    std::memset(Bytes(*a), 6, 10);
    EXPECT_FALSE(snapshot.Capture(rig.inventory(), Options(4096, 1ull << 30, device::StorageTier::kFile)));
    EXPECT_NE(snapshot.failure().find("spill file"), std::string::npos) << snapshot.failure();
    EXPECT_EQ(snapshot.Restore(rig.inventory(), RestoreMode::kAuto, nullptr).regions_restored, 0u);
    EXPECT_EQ(Bytes(*a)[0], 6) << "an incomplete snapshot restores nothing";
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the spill file is gone with the device";
  std::filesystem::remove_all(dir);
}

TEST_F(SnapshotTest, FreedRegionIsSkippedOnRestore) {
  DevicePtr a = Alloc(0, 4096, 1);
  DevicePtr b = Alloc(0, 4096, 2);
  auto snapshot = Capture();
  ASSERT_TRUE(snapshot->ok());
  ASSERT_TRUE(rig_.platform().Free(a).ok());
  std::memset(Bytes(b), 0, 4096);
  base::ScopedLogCapture log;
  RestoreStats stats = snapshot->Restore(rig_.inventory(), RestoreMode::kFull, nullptr);
  EXPECT_EQ(stats.regions_skipped, 1u);
  EXPECT_EQ(stats.regions_restored, 1u);
  EXPECT_EQ(Bytes(b)[0], 2);
  EXPECT_EQ(log.Count("freed, reallocated or shrunk"), 1);
}

TEST_F(SnapshotTest, ReallocatedOrShrunkRegionIsSkippedOnRestore) {
  // Caching allocators return the same base: identity is (base, size, generation).
  Inventory& inventory = rig_.inventory();
  DevicePtr a = Alloc(0, 8192, 1);
  DevicePtr b = Alloc(0, 8192, 2);
  auto snapshot = Capture();
  ASSERT_TRUE(snapshot->ok());
  inventory.RecordFree(a);
  inventory.RecordAlloc(
      device::PointerInfo{a, 8192, device::MemoryKind::kDeviceLocal, 0});  // same base and size
  inventory.RecordFree(b);
  inventory.RecordAlloc(device::PointerInfo{b, 4096, device::MemoryKind::kDeviceLocal, 0});  // shrunk
  std::memset(Bytes(a), 0x77, 8192);
  std::memset(Bytes(b), 0x77, 8192);
  RestoreStats stats = snapshot->Restore(inventory, RestoreMode::kFull, nullptr);
  EXPECT_EQ(stats.regions_skipped, 2u);
  EXPECT_EQ(Bytes(a)[0], 0x77);
  EXPECT_EQ(Bytes(b)[0], 0x77);
}

TEST_F(SnapshotTest, FailedBatchedRestoreIsRepairedByAFullOneNeverLeftPartial) {
  DevicePtr a = Alloc(0, 4096, 1);
  DevicePtr b = Alloc(0, 4096, 2);
  auto snapshot = Capture();
  ASSERT_TRUE(snapshot->ok());
  std::memset(Bytes(a), 0, 4096);
  std::memset(Bytes(b), 0, 4096);
  // The dirty restore fails half-way (a written, b not): a full restore follows.
  rig_.platform().InjectFault(FaultPoint::kRestoreCopy, 1, 0);
  base::ScopedLogCapture log;
  RestoreStats stats = snapshot->Restore(rig_.inventory(), RestoreMode::kAuto, nullptr);
  EXPECT_TRUE(stats.fell_back_to_full);
  EXPECT_EQ(stats.device_ops, 2u);
  EXPECT_EQ(stats.regions_failed, 0u);
  EXPECT_EQ(stats.regions_restored, 2u);
  EXPECT_EQ(Bytes(a)[0], 1);
  EXPECT_EQ(Bytes(b)[0], 2);
  EXPECT_EQ(log.Count("writing every region back"), 1);
  // When the full restores fail too, the restore says so: the caller stops the replay.
  std::memset(Bytes(b), 0, 4096);
  rig_.platform().InjectFault(FaultPoint::kRestoreCopy, 4, 0);
  RestoreStats failed = snapshot->Restore(rig_.inventory(), RestoreMode::kAuto, nullptr);
  EXPECT_EQ(failed.regions_failed, 2u);
  EXPECT_EQ(failed.device_ops, 4u);
}

TEST_F(SnapshotTest, FreeRacingARestoreNeverSeesItsMemoryWrittenAfterRelease) {
  DevicePtr victim = Alloc(0, 1 << 20, 3);
  DevicePtr other = Alloc(0, 4096, 4);
  auto snapshot = Capture();
  ASSERT_TRUE(snapshot->ok());
  std::memset(Bytes(victim), 0, 1 << 20);
  std::thread racer;
  std::atomic<bool> freed{false};
  // When the restore reaches the victim, another thread frees it. The free must wait for the
  // copy (inventory read lock held across lookup and copy); under ASan a copy into released
  // memory is reported.
  rig_.platform().SetBeforeRestoreCopyHook([&](DevicePtr dst) {
    if (dst == victim && !racer.joinable()) {
      racer = std::thread([&] {
        EXPECT_TRUE(rig_.platform().Free(victim).ok());
        freed = true;
      });
    }
  });
  RestoreStats first = snapshot->Restore(rig_.inventory(), RestoreMode::kFull, nullptr);
  racer.join();
  rig_.platform().SetBeforeRestoreCopyHook({});
  EXPECT_TRUE(freed);
  EXPECT_EQ(first.regions_restored + first.regions_skipped, 2u);
  // Once freed, the region is skipped by every later restore.
  RestoreStats second = snapshot->Restore(rig_.inventory(), RestoreMode::kFull, nullptr);
  EXPECT_EQ(second.regions_skipped, 1u);
  EXPECT_EQ(Bytes(other)[0], 4);
}

TEST_F(SnapshotTest, DirtyRestoreWritesBackOnlyChangedChunksAndHashesTheOutput) {
  constexpr std::uint64_t kChunk = 4096;
  DevicePtr a = Alloc(0, 8 * kChunk, 9);
  auto snapshot = Capture(0, kChunk);
  ASSERT_TRUE(snapshot->ok());
  Bytes(a)[1 * kChunk + 5] = 0;
  Bytes(a)[2 * kChunk + 7] = 0;
  Bytes(a)[5 * kChunk] = 0;
  StatusOr<std::uint64_t> inspected = snapshot->Inspect(rig_.inventory());
  ASSERT_TRUE(inspected.ok());
  EXPECT_NE(*inspected, snapshot->input_hash());
  std::uint64_t output = 0;
  RestoreStats stats = snapshot->Restore(rig_.inventory(), RestoreMode::kAuto, &output);
  EXPECT_EQ(output, *inspected) << "the restore hashes the bytes it found";
  EXPECT_EQ(stats.dirty_chunks, 3u);
  EXPECT_EQ(stats.bytes_restored, 3 * kChunk);
  EXPECT_EQ(stats.device_ops, 1u);
  for (std::uint64_t i = 0; i < 8 * kChunk; ++i) ASSERT_EQ(Bytes(a)[i], 9) << "byte " << i;
  StatusOr<std::uint64_t> after = snapshot->Inspect(rig_.inventory());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, snapshot->input_hash());
  RestoreStats clean = snapshot->Restore(rig_.inventory(), RestoreMode::kAuto, nullptr);
  EXPECT_EQ(clean.bytes_restored, 0u);
  EXPECT_EQ(clean.dirty_chunks, 0u);
}

TEST_F(SnapshotTest, FullRestoreWritesBackEveryByteEvenWhenClean) {
  Alloc(0, 10000, 9);
  auto snapshot = Capture(0, 4096);
  ASSERT_TRUE(snapshot->ok());
  RestoreStats stats = snapshot->Restore(rig_.inventory(), RestoreMode::kFull, nullptr);
  EXPECT_EQ(stats.bytes_restored, 10000u);
  EXPECT_EQ(stats.dirty_chunks, 3u);
}

TEST_F(SnapshotTest, ExactRestoreComparesBytesOfADeviceResidentSnapshot) {
  constexpr std::uint64_t kChunk = 4096;
  for (device::StorageTier tier : {device::StorageTier::kDevice, device::StorageTier::kPinnedHost}) {
    SCOPED_TRACE(std::string(device::StorageTierName(tier)));
    DevicePtr a = Alloc(0, 4 * kChunk, 9);
    auto snapshot = Capture(0, kChunk, 1ull << 30, tier);
    ASSERT_TRUE(snapshot->ok()) << snapshot->failure();
    EXPECT_EQ(snapshot->device_bytes(), tier == device::StorageTier::kDevice ? 4 * kChunk : 0u);
    Bytes(a)[2 * kChunk + 100] = 0;
    RestoreStats stats = snapshot->Restore(rig_.inventory(), RestoreMode::kExact, nullptr);
    EXPECT_EQ(stats.dirty_chunks, 1u);
    EXPECT_EQ(Bytes(a)[2 * kChunk + 100], 9);
    // A failing byte compare falls back to a full restore.
    Bytes(a)[0] = 0;
    rig_.platform().InjectFault(FaultPoint::kCompareChunks, 1, 0);
    RestoreStats fallback = snapshot->Restore(rig_.inventory(), RestoreMode::kExact, nullptr);
    EXPECT_EQ(fallback.fell_back_to_full, tier == device::StorageTier::kDevice);
    EXPECT_EQ(Bytes(a)[0], 9);
    rig_.platform().ClearFaults();
    ASSERT_TRUE(rig_.platform().Free(a).ok());
  }
}

// ---- incremental snapshots (B3) ----------------------------------------------------------------

TEST_F(SnapshotTest, NextCaptureRefreshesOnlyWhatChangedAndFollowsFreesAndReallocations) {
  constexpr std::uint64_t kChunk = 4096;
  DevicePtr a = Alloc(0, 16 * kChunk, 1);
  DevicePtr b = Alloc(0, 4 * kChunk, 2);
  Snapshot snapshot(rig_.device(0));
  ASSERT_TRUE(snapshot.Capture(rig_.inventory(), Options(kChunk)));
  EXPECT_TRUE(snapshot.last_capture().complete);
  EXPECT_EQ(snapshot.last_capture().bytes_copied, 20 * kChunk);
  const std::uint64_t arena_generation = rig_.device(0).arena_stats().generation;

  // Between two replayed launches the application writes two chunks of a, frees b and allocates c.
  Bytes(a)[3 * kChunk] = 7;
  ASSERT_TRUE(rig_.platform().Memset(a + 9 * kChunk + 1, 8, 10).ok());
  ASSERT_TRUE(rig_.platform().Free(b).ok());
  DevicePtr c = Alloc(0, 2 * kChunk, 3);
  ASSERT_TRUE(snapshot.Capture(rig_.inventory(), Options(kChunk)));
  const CaptureStats& second = snapshot.last_capture();
  EXPECT_FALSE(second.complete);
  EXPECT_EQ(second.regions_kept, 1u);
  EXPECT_EQ(second.regions_added, 1u);
  EXPECT_EQ(second.regions_dropped, 1u);
  EXPECT_EQ(second.bytes_copied, 2 * kChunk + 2 * kChunk) << "two changed chunks of a, and all of c";
  EXPECT_EQ(rig_.device(0).arena_stats().generation, arena_generation) << "the arena was reused";
  ASSERT_EQ(snapshot.regions().size(), 2u);

  // What the restore puts back is the state at the second capture.
  std::memset(Bytes(a), 0, 16 * kChunk);
  std::memset(Bytes(c), 0, 2 * kChunk);
  snapshot.Restore(rig_.inventory(), RestoreMode::kAuto, nullptr);
  EXPECT_EQ(Bytes(a)[0], 1);
  EXPECT_EQ(Bytes(a)[3 * kChunk], 7);
  EXPECT_EQ(Bytes(a)[9 * kChunk + 1], 8);
  EXPECT_EQ(Bytes(c)[0], 3);
  StatusOr<std::uint64_t> now = snapshot.Inspect(rig_.inventory());
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(*now, snapshot.input_hash());

  // Freed and handed out again at the same address and size, as a caching allocator does: a new
  // generation, captured in full.
  rig_.inventory().RecordFree(c);
  rig_.inventory().RecordAlloc(device::PointerInfo{c, 2 * kChunk, device::MemoryKind::kDeviceLocal, 0});
  ASSERT_TRUE(snapshot.Capture(rig_.inventory(), Options(kChunk)));
  EXPECT_EQ(snapshot.last_capture().regions_added, 1u);
  EXPECT_EQ(snapshot.last_capture().regions_kept, 1u);
  EXPECT_EQ(snapshot.last_capture().bytes_copied, 2 * kChunk);
}

TEST_F(SnapshotTest, ReleasedArenaMakesTheNextCaptureCompleteAgain) {
  Alloc(0, 8192, 1);
  Snapshot snapshot(rig_.device(0));
  ASSERT_TRUE(snapshot.Capture(rig_.inventory(), Options()));
  rig_.device(0).ReleaseArena();
  ASSERT_TRUE(snapshot.Capture(rig_.inventory(), Options()));
  EXPECT_TRUE(snapshot.last_capture().complete);
  EXPECT_EQ(snapshot.last_capture().bytes_copied, 8192u);
}

// ---- range replay's kept output (W4) ------------------------------------------------------------

// Changes chunks 1, 4 and 5 of `a` (three chunks in two runs) and returns the bytes as changed.
std::vector<std::uint8_t> ChangeTwoRuns(DevicePtr a, std::uint64_t size, std::uint8_t value) {
  for (std::uint64_t chunk : {1u, 4u, 5u}) std::memset(Bytes(a) + chunk * 4096, value, 4096);
  return std::vector<std::uint8_t>(Bytes(a), Bytes(a) + size);
}

TEST_F(SnapshotTest, KeptOutputGoesToTheArenasRoomInOneBatchedCopyOnceTheCaptureReservedIt) {
  constexpr std::uint64_t kSize = 8 * 4096;
  DevicePtr a = Alloc(0, kSize, 1);
  Snapshot snapshot(rig_.device(0));
  device::host::HostDevice& device = rig_.platform().device(0);
  for (int range = 1; range <= 2; ++range) {
    SCOPED_TRACE("range " + std::to_string(range));
    ASSERT_TRUE(snapshot.Capture(rig_.inventory(), Options())) << snapshot.failure();
    const std::vector<std::uint8_t> output = ChangeTwoRuns(a, kSize, static_cast<std::uint8_t>(10 + range));
    device.ResetCallCounts();
    StatusOr<Snapshot::KeptChunks> kept = snapshot.KeepChanged(rig_.inventory(), nullptr);
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    EXPECT_EQ(kept->bytes, 3u * 4096);
    if (range == 2) {
      // The first range told the capture how much room to keep: nothing goes through host memory.
      EXPECT_EQ(kept->host_bytes, 0u);
      EXPECT_EQ(kept->arena_runs.size(), 2u);
      EXPECT_EQ(device.call_counts().calls, 2u) << "one hash and one batched copy, not one copy per run";
    }
    // The passes write over everything; the restore and the put-back leave the application's output.
    std::memset(Bytes(a), 0x77, kSize);
    ASSERT_EQ(snapshot.Restore(rig_.inventory(), RestoreMode::kAuto, nullptr).regions_failed, 0u);
    ASSERT_TRUE(snapshot.PutBack(*kept).ok());
    EXPECT_EQ(std::vector<std::uint8_t>(Bytes(a), Bytes(a) + kSize), output);
  }
}

TEST_F(SnapshotTest, KeptOutputInAReleasedArenaIsReportedNeverPutBackFromStaleBytes) {
  constexpr std::uint64_t kSize = 8 * 4096;
  DevicePtr a = Alloc(0, kSize, 1);
  Snapshot snapshot(rig_.device(0));
  StatusOr<Snapshot::KeptChunks> kept = InternalError("not kept");
  for (int range = 1; range <= 2; ++range) {
    ASSERT_TRUE(snapshot.Capture(rig_.inventory(), Options())) << snapshot.failure();
    ChangeTwoRuns(a, kSize, static_cast<std::uint8_t>(20 + range));
    kept = snapshot.KeepChanged(rig_.inventory(), nullptr);
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  }
  ASSERT_FALSE(kept->arena_runs.empty());
  rig_.device(0).ReleaseArena();
  Status put_back = snapshot.PutBack(*kept);
  EXPECT_EQ(put_back.code(), StatusCode::kFailedPrecondition) << put_back.ToString();
}

TEST_F(SnapshotTest, KeptOutputGoesThroughHostMemoryWhenNoArenaTierHasRoom) {
  constexpr std::uint64_t kSize = 8 * 4096;
  DevicePtr a = Alloc(0, kSize, 1);
  Snapshot snapshot(rig_.device(0));
  ASSERT_TRUE(snapshot.Capture(rig_.inventory(), Options())) << snapshot.failure();
  ChangeTwoRuns(a, kSize, 31);
  ASSERT_TRUE(snapshot.KeepChanged(rig_.inventory(), nullptr).ok());
  // The next capture asks for room, but neither the device nor the pinned tier can grow.
  rig_.device(0).ReleaseArena();
  rig_.platform().InjectFault(FaultPoint::kArenaGrowth, 1, 0);
  rig_.platform().InjectFault(FaultPoint::kPinnedPoolExhausted, 1, 0);
  ASSERT_TRUE(snapshot.Capture(rig_.inventory(), Options())) << snapshot.failure();
  const std::vector<std::uint8_t> output = ChangeTwoRuns(a, kSize, 32);
  StatusOr<Snapshot::KeptChunks> kept = snapshot.KeepChanged(rig_.inventory(), nullptr);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->host_bytes, kept->bytes);
  std::memset(Bytes(a), 0x55, kSize);
  ASSERT_EQ(snapshot.Restore(rig_.inventory(), RestoreMode::kAuto, nullptr).regions_failed, 0u);
  ASSERT_TRUE(snapshot.PutBack(*kept).ok());
  EXPECT_EQ(std::vector<std::uint8_t>(Bytes(a), Bytes(a) + kSize), output);
}

// ---- the batched interface's cost ---------------------------------------------------------------

// Device calls and host waits of one capture, one restore and one inspection, for `regions`
// regions of which `dirty` chunks (of 64 bytes) changed.
struct PassCost {
  device::host::DeviceCallCounts capture;
  device::host::DeviceCallCounts restore;
  device::host::DeviceCallCounts inspect;
};

PassCost MeasurePass(std::uint64_t regions, std::uint64_t chunks_per_region, std::uint64_t dirty) {
  constexpr std::uint64_t kChunk = 64;
  gpuprof::testing::ReplayRig rig;
  rig.inventory().EnableRecording(true);
  std::vector<DevicePtr> pointers;
  for (std::uint64_t i = 0; i < regions; ++i) {
    StatusOr<DevicePtr> ptr = rig.platform().Malloc(0, chunks_per_region * kChunk);
    EXPECT_TRUE(ptr.ok());
    pointers.push_back(*ptr);
  }
  device::host::HostDevice& device = rig.platform().device(0);
  Snapshot snapshot(device);
  PassCost cost;
  device.ResetCallCounts();
  EXPECT_TRUE(snapshot.Capture(rig.inventory(), Options(kChunk)));
  cost.capture = device.call_counts();
  // Every other chunk, strided, so that no two dirty chunks are adjacent.
  const std::uint64_t total = regions * chunks_per_region;
  for (std::uint64_t k = 0; k < dirty; ++k) {
    const std::uint64_t chunk = (2 * k) % total;
    Bytes(pointers[chunk / chunks_per_region])[(chunk % chunks_per_region) * kChunk] ^= 0xFF;
  }
  device.ResetCallCounts();
  std::uint64_t output = 0;
  RestoreStats restored = snapshot.Restore(rig.inventory(), RestoreMode::kAuto, &output);
  cost.restore = device.call_counts();
  EXPECT_EQ(restored.dirty_chunks, dirty);
  device.ResetCallCounts();
  EXPECT_TRUE(snapshot.Inspect(rig.inventory()).ok());
  cost.inspect = device.call_counts();
  return cost;
}

TEST(SnapshotCostTest, DeviceCallsAndHostWaitsPerPassDoNotGrowWithRegionsOrDirtyChunks) {
  const PassCost one = MeasurePass(1, 4, 1);
  EXPECT_EQ(one.restore.calls, 1u);
  EXPECT_EQ(one.restore.host_waits, 1u);
  EXPECT_EQ(one.inspect.host_waits, 1u);
  EXPECT_LE(one.capture.calls, 2u) << "reserving the arena and one batched capture";
  struct Case {
    std::uint64_t regions, chunks_per_region, dirty;
  };
  for (Case c : {Case{4096, 4, 1}, Case{4096, 4, 8000}, Case{16, 12500, 100000}, Case{1, 200000, 100000}}) {
    SCOPED_TRACE(std::to_string(c.regions) + " regions, " + std::to_string(c.dirty) + " dirty chunks");
    const PassCost many = MeasurePass(c.regions, c.chunks_per_region, c.dirty);
    EXPECT_EQ(many.capture.calls, one.capture.calls);
    EXPECT_EQ(many.capture.host_waits, one.capture.host_waits);
    EXPECT_EQ(many.restore.calls, one.restore.calls);
    EXPECT_EQ(many.restore.host_waits, one.restore.host_waits);
    EXPECT_EQ(many.restore.launches, one.restore.launches);
    EXPECT_EQ(many.inspect.calls, one.inspect.calls);
  }
}

}  // namespace
}  // namespace gpuprof::replay
