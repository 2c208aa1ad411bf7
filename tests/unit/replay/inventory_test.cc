#include "replay/inventory.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <latch>
#include <thread>
#include <vector>

namespace gpuprof::replay {
namespace {

using device::MemoryKind;
using device::PointerInfo;

PointerInfo Local(device::DevicePtr base, std::uint64_t size, int owner = 0) {
  return PointerInfo{base, size, MemoryKind::kDeviceLocal, owner};
}

TEST(InventoryTest, RecordsNothingWhileRecordingIsOff) {
  Inventory inventory;
  inventory.RecordAlloc(Local(0x1000, 64));
  EXPECT_EQ(inventory.tracked_count(), 0u);
  inventory.EnableRecording(true);
  inventory.RecordAlloc(Local(0x1000, 64));
  EXPECT_EQ(inventory.tracked_count(), 1u);
}

TEST(InventoryTest, TracksOnlyDeviceLocalAndCountsEveryExcludedKind) {
  Inventory inventory;
  inventory.EnableRecording(true);
  std::uint64_t base = 0x10000;
  for (MemoryKind kind :
       {MemoryKind::kHost, MemoryKind::kHostMapped, MemoryKind::kFineGrained, MemoryKind::kManaged,
        MemoryKind::kKernelArgument, MemoryKind::kRuntimeInternal, MemoryKind::kIpcImported}) {
    inventory.RecordAlloc(PointerInfo{base, 100, kind, 0});
    base += 0x1000;
  }
  inventory.RecordAlloc(Local(base, 4096));
  EXPECT_EQ(inventory.tracked_count(), 1u);
  EXPECT_EQ(inventory.excluded(MemoryKind::kKernelArgument).allocations, 1u);
  EXPECT_EQ(inventory.excluded(MemoryKind::kRuntimeInternal).bytes, 100u);
  EXPECT_EQ(inventory.excluded(MemoryKind::kFineGrained).live_bytes, 100u);
  // Host-mapped, managed and IPC-imported memory can still be written by a kernel.
  EXPECT_EQ(inventory.untracked_writable_live_bytes(), 300u);
  inventory.RecordFree(0x10000 + 0x1000);  // the host-mapped one
  EXPECT_EQ(inventory.untracked_writable_live_bytes(), 200u);
  EXPECT_EQ(inventory.excluded(MemoryKind::kHostMapped).live_bytes, 0u);
  EXPECT_EQ(inventory.excluded(MemoryKind::kHostMapped).allocations, 1u);
}

TEST(InventoryTest, SnapshotInventoryIsPerOwningDevice) {
  Inventory inventory;
  inventory.EnableRecording(true);
  inventory.RecordAlloc(Local(0x1000, 16, 0));
  inventory.RecordAlloc(Local(0x2000, 16, 1));
  inventory.RecordAlloc(Local(0x3000, 16, 1));
  EXPECT_EQ(inventory.SnapshotInventory(0).size(), 1u);
  ASSERT_EQ(inventory.SnapshotInventory(1).size(), 2u);
  EXPECT_EQ(inventory.SnapshotInventory(1)[0].owner_device, 1);
  EXPECT_EQ(inventory.OwnerOf(0x3000), 1);
  EXPECT_EQ(inventory.OwnerOf(0x4000), -1);
}

TEST(InventoryTest, ReusedBaseGetsNewGeneration) {
  Inventory inventory;
  inventory.EnableRecording(true);
  inventory.RecordAlloc(Local(0x1000, 64));
  std::uint64_t first = inventory.SnapshotInventory(0).at(0).generation;
  inventory.RecordFree(0x1000);
  EXPECT_EQ(inventory.tracked_count(), 0u);
  inventory.RecordAlloc(Local(0x1000, 64));
  EXPECT_NE(inventory.SnapshotInventory(0).at(0).generation, first);
}

TEST(InventoryTest, FinalizationStopsRecordingWithoutTakingTheLock) {
  Inventory inventory;
  inventory.EnableRecording(true);
  inventory.RecordAlloc(Local(0x1000, 64));
  std::latch holding(1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // Another thread holds the inventory's read lock, as a restore does.
  std::thread reader([&] {
    inventory.WithAllocationsLocked([&](const Inventory::LockedView& view) {
      EXPECT_NE(view.Find(0x1000), nullptr);
      holding.count_down();
      released.wait();
    });
  });
  holding.wait();
  inventory.BeginFinalization();
  // A free arriving during teardown must return at once: it may not lock (the lock may be gone).
  auto freed = std::async(std::launch::async, [&] {
    inventory.RecordFree(0x1000);
    inventory.RecordAlloc(Local(0x5000, 64));
    return inventory.SnapshotInventory(0).size();
  });
  bool returned = freed.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  release.set_value();
  reader.join();
  ASSERT_TRUE(returned)
      << "RecordFree/RecordAlloc/SnapshotInventory blocked on the lock after finalization began";
  EXPECT_EQ(freed.get(), 0u);
  EXPECT_EQ(inventory.tracked_count(), 1u);  // neither the free nor the alloc was applied
}

TEST(InventoryTest, ConcurrentRecordersKeepTheInventoryConsistent) {
  Inventory inventory;
  inventory.EnableRecording(true);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        device::DevicePtr base = (static_cast<std::uint64_t>(t) << 32) | (static_cast<std::uint64_t>(i) << 8);
        inventory.RecordAlloc(Local(base, 256, t % 2));
        if (i % 2 == 0) inventory.RecordFree(base);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(inventory.tracked_count(), static_cast<std::size_t>(kThreads * kPerThread / 2));
  EXPECT_EQ(inventory.SnapshotInventory(0).size() + inventory.SnapshotInventory(1).size(),
            inventory.tracked_count());
}

}  // namespace
}  // namespace gpuprof::replay
