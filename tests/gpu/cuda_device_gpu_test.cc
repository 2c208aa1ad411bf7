// CudaDevice's snapshot arena and RunChunkOp on a real GPU (rules B1-B3): every storage tier
// captures, finds changed chunks and restores them; one table may mix tiers; the arena grows
// geometrically and reports its generations; MakeRoomFor frees the device tier only; the spill
// file leaves no name behind; bad tables are errors, not crashes.
//
// Label gpu: needs a GPU. libcuda.so.1 is opened with dlopen (CudaDriver::Get), so the binary
// starts, and CTest lists its cases, on machines without a driver; there every case skips.
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "device/cuda/chunk_hash_reference.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_driver.h"

namespace gpuprof::device::cuda {
namespace {

constexpr std::uint64_t kChunk = 4096;
constexpr StorageTier kTiers[] = {StorageTier::kDevice, StorageTier::kPinnedHost, StorageTier::kPageableHost,
                                  StorageTier::kFile};

std::vector<std::byte> RandomBytes(std::size_t size, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> bytes(size);
  for (std::byte& b : bytes) b = static_cast<std::byte>(rng() & 0xFF);
  return bytes;
}

std::uint64_t ChunkCount(std::uint64_t bytes) { return bytes / kChunk + (bytes % kChunk != 0 ? 1 : 0); }

// The names in `directory`, "." and ".." left out.
std::vector<std::string> ListDirectory(const std::string& directory) {
  std::vector<std::string> names;
  if (DIR* dir = opendir(directory.c_str()); dir != nullptr) {
    while (const dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(dir);
  }
  return names;
}

// Device memory the test owns, with what it holds now.
struct TestRegion {
  CUdeviceptr allocation = 0;
  CUdeviceptr base = 0;  // allocation + an offset that sets the alignment
  std::vector<std::byte> bytes;
};

class CudaDeviceGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) GTEST_SKIP() << "no CUDA driver (libcuda.so.1 does not load)";
    auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(library, "cuInit"));
    ASSERT_NE(init, nullptr);
    const CUresult initialized = init(0);
    if (initialized == CUDA_ERROR_NO_DEVICE) GTEST_SKIP() << "no CUDA device";
    ASSERT_EQ(initialized, CUDA_SUCCESS);
    StatusOr<const CudaDriver*> driver = CudaDriver::Get();
    ASSERT_TRUE(driver.ok()) << driver.status().ToString();
    driver_ = *driver;

    char spill[] = "/tmp/gpuprof-cuda-device-test-XXXXXX";
    ASSERT_NE(mkdtemp(spill), nullptr);
    spill_directory_ = spill;
    CudaDeviceOptions options;
    options.device_reserve_bytes = std::uint64_t{256} << 20;
    options.pinned_limit_bytes = std::uint64_t{1} << 30;
    options.spill_directory = spill_directory_;
    options.staging_bytes = 3 * kChunk + 100;  // small: the host tiers' copies take several fills
    StatusOr<std::unique_ptr<CudaDevice>> made = CudaDevice::Create(*driver_, 0, options);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    device_ = std::move(made).value();
    ASSERT_EQ(driver_->CtxPushCurrent(device_->context()), CUDA_SUCCESS);
    pushed_ = true;
  }

  void TearDown() override {
    for (const TestRegion& region : regions_) driver_->MemFree(region.allocation);
    device_.reset();
    if (pushed_) {
      CUcontext popped = nullptr;
      driver_->CtxPopCurrent(&popped);
    }
    if (!spill_directory_.empty()) {
      EXPECT_EQ(ListDirectory(spill_directory_), std::vector<std::string>{})
          << "the spill file was left behind";
      rmdir(spill_directory_.c_str());
    }
  }

  // A device region of `size` random bytes at `offset` past a fresh allocation.
  TestRegion& AddRegion(std::size_t size, std::size_t offset, std::uint64_t seed) {
    TestRegion region;
    region.bytes = RandomBytes(size, seed);
    EXPECT_EQ(driver_->MemAlloc(&region.allocation, size + offset), CUDA_SUCCESS);
    region.base = region.allocation + offset;
    EXPECT_TRUE(device_->CopyHostToDevice(region.base, region.bytes.data(), size).ok());
    regions_.push_back(std::move(region));
    return regions_.back();
  }

  // Inverts one byte of `region` (on the device and in its expected bytes).
  void Flip(TestRegion& region, std::size_t offset) {
    region.bytes.at(offset) = ~region.bytes.at(offset);
    ASSERT_TRUE(device_->CopyHostToDevice(region.base + offset, &region.bytes[offset], 1).ok());
  }

  std::vector<std::byte> Read(const TestRegion& region) {
    std::vector<std::byte> bytes(region.bytes.size());
    EXPECT_TRUE(device_->CopyDeviceToHost(bytes.data(), region.base, bytes.size()).ok());
    return bytes;
  }

  // The table of every region added so far, all in `tier`, placed one after another.
  std::vector<ArenaRegion> TableIn(StorageTier tier, std::uint64_t* bytes) {
    std::vector<ArenaRegion> table;
    std::uint64_t offset = 0;
    for (const TestRegion& region : regions_) {
      table.push_back({region.base, region.bytes.size(), tier, offset});
      offset += ChunkCount(region.bytes.size()) * kChunk;
    }
    *bytes = offset;
    return table;
  }

  std::vector<std::uint64_t> ReferenceHashes() {
    std::vector<std::uint64_t> hashes;
    for (const TestRegion& region : regions_) {
      for (std::size_t begin = 0; begin < region.bytes.size(); begin += kChunk) {
        const std::size_t length = std::min<std::size_t>(kChunk, region.bytes.size() - begin);
        hashes.push_back(ChunkHashReference(std::span(region.bytes).subspan(begin, length)));
      }
    }
    return hashes;
  }

  const CudaDriver* driver_ = nullptr;
  std::unique_ptr<CudaDevice> device_;
  bool pushed_ = false;
  std::string spill_directory_;
  std::deque<TestRegion> regions_;  // a deque: AddRegion's references stay valid
};

TEST_F(CudaDeviceGpuTest, EveryTierCapturesAndRestoresExactlyTheChangedChunks) {
  AddRegion(64 * kChunk + 3, 0, 1);  // 16-byte aligned, ragged last chunk
  AddRegion(20 * kChunk, 3, 2);      // unaligned: the byte paths
  AddRegion(5, 8, 3);                // smaller than a chunk
  for (StorageTier tier : kTiers) {
    for (ChunkOp restore : {ChunkOp::kRestoreChanged, ChunkOp::kRestoreDiffering}) {
      SCOPED_TRACE(std::string(StorageTierName(tier)) + ", " + std::string(ChunkOpName(restore)));
      std::uint64_t bytes = 0;
      const std::vector<ArenaRegion> table = TableIn(tier, &bytes);
      TierBytes reserve{};
      reserve[static_cast<std::size_t>(tier)] = bytes;
      ASSERT_TRUE(device_->ReserveArena(reserve, kChunk).ok());
      const std::vector<std::uint64_t> reference = ReferenceHashes();
      std::vector<std::uint64_t> hashes(reference.size());

      StatusOr<ChunkOpResult> captured = device_->RunChunkOp(ChunkOp::kCapture, table, kChunk, hashes);
      ASSERT_TRUE(captured.ok()) << captured.status().ToString();
      EXPECT_EQ(captured->chunks, reference.size());
      EXPECT_EQ(captured->copied_chunks, reference.size());
      EXPECT_EQ(captured->copied_bytes, regions_[0].bytes.size() + regions_[1].bytes.size() + 5);
      EXPECT_EQ(hashes, reference);

      // Three chunks change: the first of region 0, its ragged last one, one of region 1.
      const std::vector<std::vector<std::byte>> before = {regions_[0].bytes, regions_[1].bytes,
                                                          regions_[2].bytes};
      ASSERT_NO_FATAL_FAILURE(Flip(regions_[0], 1));
      ASSERT_NO_FATAL_FAILURE(Flip(regions_[0], regions_[0].bytes.size() - 1));
      ASSERT_NO_FATAL_FAILURE(Flip(regions_[1], 7 * kChunk + 100));
      StatusOr<ChunkOpResult> hashed = device_->RunChunkOp(ChunkOp::kHash, table, kChunk, hashes);
      ASSERT_TRUE(hashed.ok()) << hashed.status().ToString();
      EXPECT_EQ(hashed->copied_chunks, 0u);
      EXPECT_EQ(hashes, ReferenceHashes());

      StatusOr<ChunkOpResult> restored = device_->RunChunkOp(restore, table, kChunk, {});
      ASSERT_TRUE(restored.ok()) << restored.status().ToString();
      EXPECT_EQ(restored->copied_chunks, 3u);
      EXPECT_EQ(restored->copied_bytes, 2 * kChunk + 3);
      for (std::size_t i = 0; i < before.size(); ++i) {
        EXPECT_TRUE(Read(regions_[i]) == before[i]) << "region " << i << " not restored";
        regions_[i].bytes = before[i];
      }
      restored = device_->RunChunkOp(restore, table, kChunk, {});
      ASSERT_TRUE(restored.ok()) << restored.status().ToString();
      EXPECT_EQ(restored->copied_chunks, 0u) << "nothing differs after a restore";
    }
  }
}

TEST_F(CudaDeviceGpuTest, RefreshedChunksAreWhatRestoreAllWritesBack) {
  AddRegion(30 * kChunk + 17, 0, 4);
  for (StorageTier tier : kTiers) {
    SCOPED_TRACE(StorageTierName(tier));
    std::uint64_t bytes = 0;
    const std::vector<ArenaRegion> table = TableIn(tier, &bytes);
    TierBytes reserve{};
    reserve[static_cast<std::size_t>(tier)] = bytes;
    ASSERT_TRUE(device_->ReserveArena(reserve, kChunk).ok());
    ASSERT_TRUE(device_->RunChunkOp(ChunkOp::kCapture, table, kChunk, {}).ok());
    // Adjacent chunks 4 and 5 change (one run on the host tiers) and chunk 20.
    ASSERT_NO_FATAL_FAILURE(Flip(regions_[0], 4 * kChunk));
    ASSERT_NO_FATAL_FAILURE(Flip(regions_[0], 5 * kChunk + kChunk - 1));
    ASSERT_NO_FATAL_FAILURE(Flip(regions_[0], 20 * kChunk + 9));
    StatusOr<ChunkOpResult> refreshed = device_->RunChunkOp(ChunkOp::kRefreshChanged, table, kChunk, {});
    ASSERT_TRUE(refreshed.ok()) << refreshed.status().ToString();
    EXPECT_EQ(refreshed->copied_chunks, 3u);
    EXPECT_EQ(refreshed->copied_bytes, 3 * kChunk);
    ASSERT_EQ(driver_->MemsetD8Async(regions_[0].base, 0, regions_[0].bytes.size(), nullptr), CUDA_SUCCESS);
    ASSERT_EQ(driver_->CtxSynchronize(), CUDA_SUCCESS);
    StatusOr<ChunkOpResult> restored = device_->RunChunkOp(ChunkOp::kRestoreAll, table, kChunk, {});
    ASSERT_TRUE(restored.ok()) << restored.status().ToString();
    EXPECT_EQ(restored->copied_chunks, ChunkCount(regions_[0].bytes.size()));
    EXPECT_EQ(restored->copied_bytes, regions_[0].bytes.size());
    EXPECT_TRUE(Read(regions_[0]) == regions_[0].bytes);
  }
}

// Many regions over all four tiers in one table: one call captures them all, and the hashes come
// back in table order.
TEST_F(CudaDeviceGpuTest, OneTableMixesEveryTier) {
  for (std::size_t i = 0; i < 64; ++i) AddRegion(1 + i * 997, i % 3, 100 + i);
  std::vector<ArenaRegion> table;
  TierBytes offsets{};
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    const StorageTier tier = kTiers[i % 4];
    std::uint64_t& offset = offsets[static_cast<std::size_t>(tier)];
    table.push_back({regions_[i].base, regions_[i].bytes.size(), tier, offset});
    offset += ChunkCount(regions_[i].bytes.size()) * kChunk;
  }
  ASSERT_TRUE(device_->ReserveArena(offsets, kChunk).ok());
  const std::vector<std::uint64_t> reference = ReferenceHashes();
  std::vector<std::uint64_t> hashes(reference.size());
  StatusOr<ChunkOpResult> captured = device_->RunChunkOp(ChunkOp::kCapture, table, kChunk, hashes);
  ASSERT_TRUE(captured.ok()) << captured.status().ToString();
  EXPECT_EQ(captured->copied_chunks, reference.size());
  EXPECT_EQ(hashes, reference);
  std::vector<std::vector<std::byte>> before;
  for (TestRegion& region : regions_) {
    before.push_back(region.bytes);
    ASSERT_NO_FATAL_FAILURE(Flip(region, region.bytes.size() / 2));
  }
  StatusOr<ChunkOpResult> restored = device_->RunChunkOp(ChunkOp::kRestoreChanged, table, kChunk, {});
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->copied_chunks, regions_.size());
  for (std::size_t i = 0; i < regions_.size(); ++i)
    EXPECT_TRUE(Read(regions_[i]) == before[i]) << "region " << i;
}

TEST_F(CudaDeviceGpuTest, ArenaGrowsGeometricallyAndCountsGenerations) {
  const auto pinned = static_cast<std::size_t>(StorageTier::kPinnedHost);
  TierBytes reserve{};
  reserve[pinned] = 1;
  ASSERT_TRUE(device_->ReserveArena(reserve, kChunk).ok());
  ArenaStats stats = device_->arena_stats();
  EXPECT_EQ(stats.capacity[pinned], kChunk) << "whole chunks";
  const std::uint64_t first_generation = stats.generation;
  reserve[pinned] = 3 * kChunk;  // more than twice: exactly what is asked
  ASSERT_TRUE(device_->ReserveArena(reserve, kChunk).ok());
  EXPECT_EQ(device_->arena_stats().capacity[pinned], 3 * kChunk);
  reserve[pinned] = 4 * kChunk;  // less than twice: doubles
  ASSERT_TRUE(device_->ReserveArena(reserve, kChunk).ok());
  stats = device_->arena_stats();
  EXPECT_EQ(stats.capacity[pinned], 6 * kChunk);
  EXPECT_EQ(stats.generation, first_generation + 2);
  EXPECT_EQ(stats.allocations, 3u);
  reserve[pinned] = 2 * kChunk;  // fits: nothing changes
  ASSERT_TRUE(device_->ReserveArena(reserve, kChunk).ok());
  EXPECT_EQ(device_->arena_stats().generation, stats.generation);
  // Another chunk size voids every slot.
  ASSERT_TRUE(device_->ReserveArena(reserve, 2 * kChunk).ok());
  EXPECT_GT(device_->arena_stats().generation, stats.generation);
  EXPECT_EQ(device_->ArenaLimit(StorageTier::kPinnedHost), std::uint64_t{1} << 30);
}

TEST_F(CudaDeviceGpuTest, MakeRoomForFreesOnlyTheDeviceTier) {
  TestRegion& region = AddRegion(10 * kChunk, 0, 5);
  EXPECT_FALSE(device_->MakeRoomFor(1)) << "no device arena yet";
  TierBytes reserve{};
  reserve[static_cast<std::size_t>(StorageTier::kDevice)] = 10 * kChunk;
  reserve[static_cast<std::size_t>(StorageTier::kPinnedHost)] = 10 * kChunk;
  ASSERT_TRUE(device_->ReserveArena(reserve, kChunk).ok());
  EXPECT_EQ(device_->device_arena_bytes(), 10 * kChunk);
  EXPECT_FALSE(device_->MakeRoomFor(1)) << "a byte fits beside the arena";
  const ArenaStats before = device_->arena_stats();
  EXPECT_TRUE(device_->MakeRoomFor(std::uint64_t{1} << 50));
  const ArenaStats after = device_->arena_stats();
  EXPECT_EQ(after.capacity[static_cast<std::size_t>(StorageTier::kDevice)], 0u);
  EXPECT_EQ(after.capacity[static_cast<std::size_t>(StorageTier::kPinnedHost)], 10 * kChunk);
  EXPECT_EQ(after.releases, before.releases + 1);
  EXPECT_GT(after.generation, before.generation);
  EXPECT_EQ(device_->device_arena_bytes(), 0u);

  const std::vector<ArenaRegion> on_device = {{region.base, region.bytes.size(), StorageTier::kDevice, 0}};
  StatusOr<ChunkOpResult> refused = device_->RunChunkOp(ChunkOp::kCapture, on_device, kChunk, {});
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().ToString();
  const std::vector<ArenaRegion> pinned = {{region.base, region.bytes.size(), StorageTier::kPinnedHost, 0}};
  EXPECT_TRUE(device_->RunChunkOp(ChunkOp::kCapture, pinned, kChunk, {}).ok());

  device_->ReleaseArena();
  EXPECT_EQ(device_->arena_stats().capacity, TierBytes{});
  EXPECT_EQ(device_->arena_stats().releases, after.releases + 1);
}

TEST_F(CudaDeviceGpuTest, SpillFileIsUnlinkedAtOnce) {
  TierBytes reserve{};
  reserve[static_cast<std::size_t>(StorageTier::kFile)] = 8 * kChunk;
  ASSERT_TRUE(device_->ReserveArena(reserve, kChunk).ok());
  EXPECT_EQ(device_->arena_stats().capacity[static_cast<std::size_t>(StorageTier::kFile)], 8 * kChunk);
  EXPECT_EQ(ListDirectory(spill_directory_), std::vector<std::string>{});
  EXPECT_GE(device_->ArenaLimit(StorageTier::kFile), 8 * kChunk);
}

TEST_F(CudaDeviceGpuTest, FileTierNeedsASpillDirectory) {
  StatusOr<std::unique_ptr<CudaDevice>> plain = CudaDevice::Create(*driver_, 0, CudaDeviceOptions{});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ((*plain)->ArenaLimit(StorageTier::kFile), 0u);
  TierBytes reserve{};
  reserve[static_cast<std::size_t>(StorageTier::kFile)] = kChunk;
  EXPECT_EQ((*plain)->ReserveArena(reserve, kChunk).code(), StatusCode::kResourceExhausted);
}

TEST_F(CudaDeviceGpuTest, BadTablesAreRefused) {
  TestRegion& region = AddRegion(4 * kChunk, 0, 6);
  TierBytes reserve{};
  reserve[static_cast<std::size_t>(StorageTier::kDevice)] = 4 * kChunk;
  ASSERT_TRUE(device_->ReserveArena(reserve, kChunk).ok());
  const std::uint64_t size = region.bytes.size();
  auto run = [&](std::vector<ArenaRegion> table, std::uint64_t chunk, std::size_t hashes) {
    std::vector<std::uint64_t> out(hashes);
    return device_->RunChunkOp(ChunkOp::kCapture, table, chunk, out).status().code();
  };
  EXPECT_EQ(run({{region.base, size, StorageTier::kDevice, 0}}, 2 * kChunk, 0),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(run({{region.base, size, StorageTier::kDevice, 100}}, kChunk, 0), StatusCode::kInvalidArgument);
  EXPECT_EQ(run({{region.base, size, StorageTier::kDevice, kChunk}}, kChunk, 0),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(run({{region.base, size, StorageTier::kPinnedHost, 0}}, kChunk, 0),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(run({{region.base, size, StorageTier::kDevice, 0}}, kChunk, 3), StatusCode::kInvalidArgument);
  EXPECT_EQ(run({{region.base, size, StorageTier::kDevice, 0}}, 0, 0), StatusCode::kInvalidArgument);
  EXPECT_EQ(run({}, kChunk, 0), StatusCode::kOk);
  EXPECT_EQ(run({{region.base, size, StorageTier::kDevice, 0}}, kChunk, 4), StatusCode::kOk);
}

TEST_F(CudaDeviceGpuTest, SynchronizeReusesItsHelper) {
  for (int i = 0; i < 3; ++i) {
    Status drained = device_->Synchronize(std::chrono::seconds(10));
    EXPECT_TRUE(drained.ok()) << drained.ToString();
  }
}

}  // namespace
}  // namespace gpuprof::device::cuda
