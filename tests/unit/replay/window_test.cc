// Rule R13 / B5: while a replay window is open on a device, other threads' launches, frees and
// copies on that device wait until it closes; other devices carry on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "base/hash.h"
#include "device/host/host_platform.h"
#include "fakes/replay_rig.h"
#include "replay/controller.h"

namespace gpuprof::replay {
namespace {

using device::DevicePtr;
using device::host::Kernel;
using device::host::KernelContext;
using gpuprof::testing::ReplayRig;

std::uint32_t* Words(DevicePtr p) { return reinterpret_cast<std::uint32_t*>(p); }

class ControllerWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ReplayOptions options;
    options.passes = 3;
    options.selector.name = "replayed";
    rig_.Configure(options);
    buffer_ = *rig_.platform().Malloc(0, kWords * 4);
    std::memset(Words(buffer_), 1, kWords * 4);
  }

  // A replayed kernel whose pass 1 starts `during_pass_one` on another thread and gives it a
  // moment to run into the window before the pass goes on.
  Kernel Replayed(std::function<void()> during_pass_one) {
    return Kernel{"replayed", [this, during_pass_one](const KernelContext& context) {
                    {
                      std::lock_guard<std::mutex> lock(mu_);
                      events_.push_back("pass" + std::to_string(context.pass));
                      input_hashes_.push_back(base::HashBytes(Words(buffer_), kWords * 4));
                    }
                    if (context.pass == 1) {
                      other_ = std::thread(during_pass_one);
                      std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    }
                    for (std::size_t i = 0; i < kWords; ++i) Words(buffer_)[i] += 1;
                  }};
  }

  void Event(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(what));
  }

  void RunReplayed(Kernel kernel) {
    auto& platform = rig_.platform();
    ASSERT_TRUE(platform.Launch(platform.DefaultStream(0), kernel).ok());
    ASSERT_TRUE(platform.DeviceSynchronize(0).ok());
    if (other_.joinable()) other_.join();
    ASSERT_TRUE(platform.DeviceSynchronize(0).ok());
    ASSERT_TRUE(platform.DeviceSynchronize(1).ok());
  }

  bool InputsIdentical() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto h : input_hashes_) {
      if (h != input_hashes_.front()) return false;
    }
    return input_hashes_.size() == 3;
  }

  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

  static constexpr std::size_t kWords = 4096;
  ReplayRig rig_;
  DevicePtr buffer_ = 0;
  std::thread other_;
  std::mutex mu_;
  std::vector<std::string> events_;
  std::vector<std::uint64_t> input_hashes_;
};

TEST_F(ControllerWindowTest, AnotherThreadsLaunchOnTheSameDeviceWaitsForTheWindow) {
  auto& platform = rig_.platform();
  auto stream = platform.CreateStream(0);
  ASSERT_TRUE(stream.ok());
  Kernel intruder{"intruder", [this](const KernelContext&) {
                    Event("intruder");
                    Words(buffer_)[0] = 999;
                  }};
  RunReplayed(Replayed([&] { EXPECT_TRUE(platform.Launch(*stream, intruder).ok()); }));
  ASSERT_TRUE(platform.StreamSynchronize(*stream).ok());
  EXPECT_EQ(events(), (std::vector<std::string>{"pass1", "pass2", "pass3", "intruder"}));
  EXPECT_TRUE(InputsIdentical());
}

TEST_F(ControllerWindowTest, AFreeOnAnotherThreadWaitsUntilTheWindowCloses) {
  auto& platform = rig_.platform();
  std::atomic<bool> freed{false};
  RunReplayed(Replayed([&] {
    EXPECT_TRUE(platform.Free(buffer_).ok());
    freed = true;
    Event("freed");
  }));
  EXPECT_TRUE(freed);
  EXPECT_EQ(events().back(), "freed");
  EXPECT_TRUE(InputsIdentical());
}

TEST_F(ControllerWindowTest, AsynchronousCopiesAndMemsetsOnAnotherThreadWaitForTheWindow) {
  auto& platform = rig_.platform();
  auto stream = platform.CreateStream(0);
  ASSERT_TRUE(stream.ok());
  std::vector<std::uint32_t> zeros(kWords, 0);
  RunReplayed(Replayed([&] {
    EXPECT_TRUE(platform.MemcpyAsync(*stream, buffer_, reinterpret_cast<DevicePtr>(zeros.data()), 64).ok());
    EXPECT_TRUE(platform.MemsetAsync(*stream, buffer_ + 1024, 0xEE, 64).ok());
    EXPECT_TRUE(platform.Memset(buffer_ + 2048, 0xDD, 64).ok());
    Event("copied");
  }));
  ASSERT_TRUE(platform.StreamSynchronize(*stream).ok());
  EXPECT_TRUE(InputsIdentical());
  EXPECT_EQ(events().back(), "copied");
  EXPECT_EQ(Words(buffer_)[0], 0u);  // the copy landed after the window, on the final state
}

TEST_F(ControllerWindowTest, OtherDevicesKeepWorkingDuringTheWindow) {
  auto& platform = rig_.platform();
  DevicePtr other_buffer = *platform.Malloc(1, 64);
  std::promise<void> ran;
  std::future<void> ran_future = ran.get_future();
  std::atomic<bool> ran_during_window{false};
  Kernel on_device_one{"device_one_work", [&](const KernelContext&) {
                         Words(other_buffer)[0] = 5;
                         ran.set_value();
                       }};
  Kernel replayed{"replayed", [&](const KernelContext& context) {
                    if (context.pass == 1) {
                      other_ = std::thread([&] {
                        EXPECT_TRUE(platform.Launch(platform.DefaultStream(1), on_device_one).ok());
                      });
                      // Device 1 is not in this window: its kernel completes while we wait here.
                      ran_during_window =
                          ran_future.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
                    }
                  }};
  RunReplayed(replayed);
  EXPECT_TRUE(ran_during_window);
  EXPECT_EQ(Words(other_buffer)[0], 5u);
}

}  // namespace
}  // namespace gpuprof::replay
