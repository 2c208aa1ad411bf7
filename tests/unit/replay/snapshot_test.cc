#include "replay/snapshot.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <thread>
#include <vector>

#include "base/logging.h"
#include "device/host/host_platform.h"
#include "fakes/replay_rig.h"

namespace gpuprof::replay {
namespace {

using device::ByteRange;
using device::DevicePtr;
using device::host::FaultPoint;
using device::host::ModuleSpec;
using device::host::ModuleVariableSpec;
using gpuprof::testing::ReplayRig;

std::uint8_t* Bytes(DevicePtr p) { return reinterpret_cast<std::uint8_t*>(p); }

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override { rig_.inventory().EnableRecording(true); }

  DevicePtr Alloc(int device, std::uint64_t size, std::uint8_t fill) {
    auto ptr = rig_.platform().Malloc(device, size);
    EXPECT_TRUE(ptr.ok()) << ptr.status().ToString();
    std::memset(Bytes(*ptr), fill, size);
    return *ptr;
  }

  Snapshot Capture(int device = 0, std::uint64_t chunk = 4096, std::uint64_t max_symbol = 1ull << 30) {
    SnapshotOptions options;
    options.chunk_size = chunk;
    options.max_symbol_bytes = max_symbol;
    return Snapshot::Capture(rig_.device(device), rig_.inventory(), options);
  }

  ReplayRig rig_;
};

TEST_F(SnapshotTest, CapturesOnlyTheOwningDevicesAllocations) {
  DevicePtr a = Alloc(0, 10000, 1);
  Alloc(1, 5000, 2);
  Snapshot snapshot = Capture(0);
  ASSERT_TRUE(snapshot.ok()) << snapshot.failure();
  ASSERT_EQ(snapshot.regions().size(), 1u);
  EXPECT_EQ(snapshot.regions()[0].base, a);
  EXPECT_EQ(snapshot.total_bytes(), 10000u);
  EXPECT_EQ(snapshot.regions()[0].chunk_hashes.size(), 3u);  // 4096-byte chunks, short last one
}

TEST_F(SnapshotTest, ExcludedKindsAreNeverCaptured) {
  ASSERT_TRUE(rig_.platform().Malloc(0, 1000, device::MemoryKind::kManaged).ok());
  ASSERT_TRUE(rig_.platform().Malloc(0, 1000, device::MemoryKind::kHostMapped).ok());
  ASSERT_TRUE(rig_.platform().CreateStream(0).ok());  // kernarg + executable pools
  Snapshot snapshot = Capture(0);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot.regions().size(), 0u);
}

TEST_F(SnapshotTest, RestoreWritesEveryRegionBackAndCountsThem) {
  DevicePtr a = Alloc(0, 8192, 0x11);
  DevicePtr b = Alloc(0, 100, 0x22);
  Snapshot snapshot = Capture();
  ASSERT_TRUE(snapshot.ok());
  std::memset(Bytes(a), 0xFF, 8192);
  std::memset(Bytes(b), 0xFF, 100);
  RestoreStats stats = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kFull, nullptr);
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
  Snapshot snapshot = Capture();
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot.regions().size(), 2u);
  Bytes(counter)[0] = 99;
  Bytes(table)[10] = 0;
  RestoreStats stats = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kAuto, nullptr);
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
  Snapshot snapshot = Capture();
  ASSERT_TRUE(snapshot.ok()) << snapshot.failure();
  EXPECT_EQ(snapshot.regions().size(), 2u);  // medium and small
  EXPECT_EQ(snapshot.symbols_skipped(), 1u);
  EXPECT_EQ(log.Count("'huge'"), 1);
  // The cap is configurable.
  Snapshot capped = Capture(0, 4096, 64 * 1024);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped.regions().size(), 1u);
  EXPECT_EQ(capped.symbols_skipped(), 2u);
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
  rig_.platform().InjectFault(GetParam().point, 1, 1);
  if (GetParam().point == FaultPoint::kModuleEnumeration ||
      GetParam().point == FaultPoint::kMetadataAllocation) {
    rig_.platform().ClearFaults();
    rig_.platform().InjectFault(GetParam().point, 1, 0);
  }
  Snapshot snapshot = Capture();
  EXPECT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.failure().find(GetParam().expected_words), std::string::npos) << snapshot.failure();
  EXPECT_EQ(rig_.platform().FaultsFired(GetParam().point), 1);
  // Nothing is fatal: the next capture, without the fault, is complete.
  Snapshot again = Capture();
  EXPECT_TRUE(again.ok()) << again.failure();
  EXPECT_EQ(again.regions().size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(
    EveryCaptureFailure, SnapshotFaultTest,
    ::testing::Values(CaptureFault{FaultPoint::kBackingAllocation, "capturing allocation"},
                      CaptureFault{FaultPoint::kSaveCopy, "capturing allocation"},
                      CaptureFault{FaultPoint::kMetadataAllocation, "metadata"},
                      CaptureFault{FaultPoint::kModuleEnumeration, "module-variable enumeration"}),
    [](const ::testing::TestParamInfo<CaptureFault>& param_info) {
      std::string name;
      for (char c : device::host::FaultPointName(param_info.param.point)) {
        if (std::isalnum(static_cast<unsigned char>(c))) name += c;
      }
      return name;
    });

TEST_F(SnapshotTest, FreedRegionIsSkippedOnRestore) {
  DevicePtr a = Alloc(0, 4096, 1);
  DevicePtr b = Alloc(0, 4096, 2);
  Snapshot snapshot = Capture();
  ASSERT_TRUE(snapshot.ok());
  ASSERT_TRUE(rig_.platform().Free(a).ok());
  std::memset(Bytes(b), 0, 4096);
  base::ScopedLogCapture log;
  RestoreStats stats = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kFull, nullptr);
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
  Snapshot snapshot = Capture();
  ASSERT_TRUE(snapshot.ok());
  inventory.RecordFree(a);
  inventory.RecordAlloc(
      device::PointerInfo{a, 8192, device::MemoryKind::kDeviceLocal, 0});  // same base and size
  inventory.RecordFree(b);
  inventory.RecordAlloc(device::PointerInfo{b, 4096, device::MemoryKind::kDeviceLocal, 0});  // shrunk
  std::memset(Bytes(a), 0x77, 8192);
  std::memset(Bytes(b), 0x77, 8192);
  RestoreStats stats = snapshot.Restore(rig_.device(0), inventory, RestoreMode::kFull, nullptr);
  EXPECT_EQ(stats.regions_skipped, 2u);
  EXPECT_EQ(Bytes(a)[0], 0x77);
  EXPECT_EQ(Bytes(b)[0], 0x77);
}

TEST_F(SnapshotTest, FailedCopyIsLoggedAndSkippedWithoutAbortingTheRestore) {
  DevicePtr a = Alloc(0, 4096, 1);
  DevicePtr b = Alloc(0, 4096, 2);
  Snapshot snapshot = Capture();
  ASSERT_TRUE(snapshot.ok());
  std::memset(Bytes(a), 0, 4096);
  std::memset(Bytes(b), 0, 4096);
  rig_.platform().InjectFault(FaultPoint::kRestoreCopy, 1, 0);
  base::ScopedLogCapture log;
  RestoreStats stats = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kFull, nullptr);
  EXPECT_EQ(stats.regions_failed, 1u);
  EXPECT_EQ(stats.regions_restored, 1u);
  EXPECT_EQ(Bytes(b)[0], 2);  // the second region was still written back
  EXPECT_EQ(log.Count("failed, skipped"), 1);
}

TEST_F(SnapshotTest, FreeRacingARestoreNeverSeesItsMemoryWrittenAfterRelease) {
  DevicePtr victim = Alloc(0, 1 << 20, 3);
  DevicePtr other = Alloc(0, 4096, 4);
  Snapshot snapshot = Capture();
  ASSERT_TRUE(snapshot.ok());
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
  RestoreStats first = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kFull, nullptr);
  racer.join();
  rig_.platform().SetBeforeRestoreCopyHook({});
  EXPECT_TRUE(freed);
  EXPECT_EQ(first.regions_restored + first.regions_skipped, 2u);
  // Once freed, the region is skipped by every later restore.
  RestoreStats second = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kFull, nullptr);
  EXPECT_EQ(second.regions_skipped, 1u);
  EXPECT_EQ(Bytes(other)[0], 4);
}

TEST_F(SnapshotTest, DirtyRestoreWritesBackOnlyChangedChunksCoalesced) {
  constexpr std::uint64_t kChunk = 4096;
  DevicePtr a = Alloc(0, 8 * kChunk, 9);
  Snapshot snapshot = Capture(0, kChunk);
  ASSERT_TRUE(snapshot.ok());
  Bytes(a)[1 * kChunk + 5] = 0;
  Bytes(a)[2 * kChunk + 7] = 0;
  Bytes(a)[5 * kChunk] = 0;
  auto state = snapshot.Inspect(rig_.device(0), rig_.inventory());
  ASSERT_TRUE(state.ok());
  EXPECT_NE(state->output_hash, 0u);
  RestoreStats stats = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kAuto, &*state);
  EXPECT_EQ(stats.dirty_chunks, 3u);
  EXPECT_EQ(stats.runs, 2u);  // chunks 1-2 merged, chunk 5 alone
  EXPECT_EQ(stats.bytes_restored, 3 * kChunk);
  for (std::uint64_t i = 0; i < 8 * kChunk; ++i) ASSERT_EQ(Bytes(a)[i], 9) << "byte " << i;
  auto after = snapshot.Inspect(rig_.device(0), rig_.inventory());
  ASSERT_TRUE(after.ok());
  RestoreStats clean = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kAuto, &*after);
  EXPECT_EQ(clean.bytes_restored, 0u);
  EXPECT_EQ(clean.dirty_chunks, 0u);
}

TEST_F(SnapshotTest, FullRestoreWritesBackEveryByteEvenWhenClean) {
  Alloc(0, 10000, 9);
  Snapshot snapshot = Capture(0, 4096);
  ASSERT_TRUE(snapshot.ok());
  RestoreStats stats = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kFull, nullptr);
  EXPECT_EQ(stats.bytes_restored, 10000u);
  EXPECT_EQ(stats.dirty_chunks, 3u);
}

TEST_F(SnapshotTest, DirtyRestoreFallsBackToFullWhenHashingFails) {
  DevicePtr a = Alloc(0, 3 * 4096, 9);
  Snapshot snapshot = Capture(0, 4096);
  ASSERT_TRUE(snapshot.ok());
  std::memset(Bytes(a), 0, 3 * 4096);
  rig_.platform().InjectFault(FaultPoint::kHashChunks, 1, 0);
  RestoreStats stats = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kAuto, nullptr);
  EXPECT_EQ(stats.bytes_restored, 3u * 4096);
  EXPECT_EQ(Bytes(a)[3 * 4096 - 1], 9);
}

TEST_F(SnapshotTest, DeviceResidentSnapshotIsComparedExactlyWithoutHashing) {
  constexpr std::uint64_t kChunk = 4096;
  DevicePtr a = Alloc(0, 4 * kChunk, 9);
  SnapshotOptions options;
  options.chunk_size = kChunk;
  options.preferred_tier = device::StorageTier::kDevice;
  Snapshot snapshot = Snapshot::Capture(rig_.device(0), rig_.inventory(), options);
  ASSERT_TRUE(snapshot.ok()) << snapshot.failure();
  EXPECT_EQ(snapshot.device_bytes(), 4 * kChunk);
  Bytes(a)[2 * kChunk + 100] = 0;
  // Hashing is broken: only the exact comparison can still find the one changed chunk.
  rig_.platform().InjectFault(FaultPoint::kHashChunks, 100, 0);
  RestoreStats stats = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kAuto, nullptr);
  EXPECT_EQ(stats.regions_compared, 1u);
  EXPECT_EQ(stats.dirty_chunks, 1u);
  EXPECT_EQ(stats.bytes_restored, kChunk);
  EXPECT_EQ(Bytes(a)[2 * kChunk + 100], 9);
  EXPECT_EQ(rig_.platform().FaultsFired(FaultPoint::kHashChunks), 0)
      << "no hashing when the snapshot is on the device";
}

TEST_F(SnapshotTest, DirtyRestoreComparesHashesWhenTheSnapshotIsInHostMemoryOrComparingFails) {
  constexpr std::uint64_t kChunk = 4096;
  for (bool on_device : {false, true}) {
    SCOPED_TRACE(on_device ? "device tier, comparison fails" : "pinned host tier");
    DevicePtr a = Alloc(0, 4 * kChunk, 9);
    SnapshotOptions options;
    options.chunk_size = kChunk;
    options.preferred_tier = on_device ? device::StorageTier::kDevice : device::StorageTier::kPinnedHost;
    Snapshot snapshot = Snapshot::Capture(rig_.device(0), rig_.inventory(), options);
    ASSERT_TRUE(snapshot.ok()) << snapshot.failure();
    EXPECT_EQ(snapshot.device_bytes(), on_device ? 4 * kChunk : 0u);
    Bytes(a)[kChunk] = 0;
    if (on_device) rig_.platform().InjectFault(FaultPoint::kCompareChunks, 1, 0);
    RestoreStats stats = snapshot.Restore(rig_.device(0), rig_.inventory(), RestoreMode::kAuto, nullptr);
    EXPECT_EQ(stats.regions_compared, 0u);
    EXPECT_EQ(stats.dirty_chunks, 1u);
    EXPECT_EQ(stats.bytes_restored, kChunk);
    EXPECT_EQ(Bytes(a)[kChunk], 9);
    ASSERT_TRUE(rig_.platform().Free(a).ok());
  }
}

TEST(CoalesceDirtyChunksTest, MergesAdjacentChunksAndClipsTheLast) {
  EXPECT_EQ(CoalesceDirtyChunks({}, 10, 100), std::vector<ByteRange>{});
  EXPECT_EQ(CoalesceDirtyChunks({0, 1, 2}, 10, 25), (std::vector<ByteRange>{{0, 25}}));
  EXPECT_EQ(CoalesceDirtyChunks({0, 2, 3, 7}, 10, 75), (std::vector<ByteRange>{{0, 10}, {20, 20}, {70, 5}}));
}

}  // namespace
}  // namespace gpuprof::replay
