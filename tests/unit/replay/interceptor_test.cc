#include "replay/interceptor.h"

#include <gtest/gtest.h>

#include <memory>

#include "device/host/host_platform.h"
#include "fakes/replay_rig.h"

namespace gpuprof::replay {
namespace {

using device::MemoryKind;
using device::host::HostPlatform;
using gpuprof::testing::ReplayRig;

TEST(InterceptorTest, RecordsAllocationsAndFreesMadeThroughTheRuntime) {
  ReplayRig rig;
  rig.inventory().EnableRecording(true);
  auto& platform = rig.platform();
  auto a = platform.Malloc(0, 4096);
  auto b = platform.Malloc(1, 100);
  ASSERT_TRUE(a.ok() && b.ok());
  auto stream = platform.CreateStream(0);
  ASSERT_TRUE(stream.ok());
  auto c = platform.MallocAsync(*stream, 512);  // stream-ordered allocations are tracked too
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(rig.inventory().tracked_count(), 3u);
  EXPECT_EQ(rig.inventory().SnapshotInventory(1).size(), 1u);
  EXPECT_EQ(rig.inventory().SnapshotInventory(1)[0].size, 100u);
  ASSERT_TRUE(platform.Free(*a).ok());
  ASSERT_TRUE(platform.FreeAsync(*stream, *c).ok());
  ASSERT_TRUE(platform.StreamSynchronize(*stream).ok());
  EXPECT_EQ(rig.inventory().tracked_count(), 1u);
}

TEST(InterceptorTest, RecordsNothingUntilReplayIsConfigured) {
  ReplayRig rig;
  ASSERT_TRUE(rig.platform().Malloc(0, 4096).ok());
  EXPECT_EQ(rig.inventory().tracked_count(), 0u);
  rig.Configure(ReplayOptions{});
  ASSERT_TRUE(rig.platform().Malloc(0, 4096).ok());
  EXPECT_EQ(rig.inventory().tracked_count(), 1u);
}

TEST(InterceptorTest, ClassifiesRuntimePoolsAndHostKindsAsExcluded) {
  ReplayRig rig;
  rig.inventory().EnableRecording(true);
  auto& platform = rig.platform();
  // Stream creation allocates the stream's kernarg pool and executable pool through the table.
  ASSERT_TRUE(platform.CreateStream(0).ok());
  EXPECT_GE(rig.inventory().excluded(MemoryKind::kKernelArgument).allocations, 1u);
  EXPECT_GE(rig.inventory().excluded(MemoryKind::kRuntimeInternal).allocations, 1u);
  for (MemoryKind kind : {MemoryKind::kHost, MemoryKind::kHostMapped, MemoryKind::kFineGrained,
                          MemoryKind::kManaged, MemoryKind::kIpcImported}) {
    ASSERT_TRUE(platform.Malloc(0, 1000, kind).ok()) << device::MemoryKindName(kind);
    EXPECT_EQ(rig.inventory().excluded(kind).allocations, 1u) << device::MemoryKindName(kind);
  }
  EXPECT_EQ(rig.inventory().tracked_count(), 0u);
  EXPECT_EQ(rig.inventory().untracked_writable_live_bytes(), 3000u);
}

TEST(InterceptorTest, SecondInstanceAttachesInsteadOfWrappingTheWrapper) {
  ReplayRig rig;
  rig.inventory().EnableRecording(true);
  Inventory second_inventory;
  second_inventory.EnableRecording(true);
  Interceptor second(second_inventory, rig.devices());
  ASSERT_TRUE(second.Install(rig.platform().api_table()).ok());
  EXPECT_TRUE(second.attached());
  EXPECT_EQ(Interceptor::InstalledIn(rig.platform().api_table()), &rig.interceptor());
  // One allocation is recorded exactly once, by the first instance, and the call returns
  // (a wrapped wrapper would recurse or record twice).
  auto ptr = rig.platform().Malloc(0, 256);
  ASSERT_TRUE(ptr.ok());
  EXPECT_EQ(rig.inventory().tracked_count(), 1u);
  EXPECT_EQ(second_inventory.tracked_count(), 0u);
  EXPECT_FALSE(second.Install(rig.platform().api_table()).ok()) << "installing twice must be refused";
}

TEST(InterceptorTest, RuntimeTeardownAfterInterceptorIsGoneDoesNotTouchIt) {
  auto platform = std::make_unique<HostPlatform>();
  ASSERT_TRUE(platform->CreateStream(1).ok());
  {
    auto inventory = std::make_unique<Inventory>();
    inventory->EnableRecording(true);
    std::vector<device::Device*> devices{&platform->device_interface(0), &platform->device_interface(1)};
    auto interceptor = std::make_unique<Interceptor>(*inventory, devices);
    ASSERT_TRUE(interceptor->Install(platform->api_table()).ok());
    ASSERT_TRUE(platform->CreateStream(0).ok());
    ASSERT_TRUE(platform->Malloc(0, 64).ok());
    interceptor.reset();
    EXPECT_TRUE(inventory->finalizing());
    inventory.reset();  // our state is gone, as after static destruction
  }
  // The runtime's own teardown frees its stream pools through the table: this must neither
  // crash nor touch the destroyed inventory (ASan reports a use-after-free if it does).
  ASSERT_TRUE(platform->Malloc(0, 64).ok());
  platform.reset();
}

}  // namespace
}  // namespace gpuprof::replay
