// HostLaunchExecutor: the launch handle that HostPlatform's launch entry (or a tool's wrapper)
// drives for one Launch/LaunchBatch call. Not a public header: only files of this component
// include it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "device/host/host_platform_internal.h"
#include "gpuprof/status.h"

namespace gpuprof::device::host {

class HostLaunchExecutor final : public LaunchExecutor {
 public:
  HostLaunchExecutor(HostPlatform::Impl& impl, Stream& stream, std::span<const Kernel> kernels,
                     CompletionSignal* signal)
      : impl_(impl), stream_(stream), kernels_(kernels), signal_(signal) {}

  Status RunOriginal() override {
    GPUPROF_RETURN_IF_ERROR(LoadModules());
    auto bodies = Bodies();
    const KernelContext context{stream_.device(), stream_.id(), 0};
    if (recorded_ != nullptr) {
      // Range replay's pass 1: the application's own execution, timed.
      stream_.Enqueue(
          [recorded = recorded_, context] { recorded->set_original_duration_ns(recorded->Run(context)); });
    } else {
      for (std::size_t i = 0; i < bodies->size(); ++i) {
        stream_.Enqueue([bodies, i, context] { (*bodies)[i](context); });
      }
    }
    if (signal_ != nullptr) {
      stream_.Enqueue([signal = signal_] { signal->Signal(); });
    }
    return OkStatus();
  }

  Status PrepareForSnapshot() override { return LoadModules(); }

  StatusOr<PassTiming> RunPass(int pass) override {
    GPUPROF_RETURN_IF_ERROR(LoadModules());
    auto bodies = Bodies();
    struct PassResult {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      std::uint64_t duration_ns = 0;
      std::string error;
    };
    auto result = std::make_shared<PassResult>();
    const KernelContext context{stream_.device(), stream_.id(), pass};
    stream_.Enqueue([bodies, context, result] {
      std::string error;
      const auto start = std::chrono::steady_clock::now();
      try {
        for (const auto& body : *bodies) body(context);
      } catch (const std::exception& e) {
        error = e.what();
      } catch (...) {
        error = "a non-standard exception";
      }
      const auto elapsed = std::chrono::steady_clock::now() - start;
      std::lock_guard<std::mutex> lock(result->mu);
      result->duration_ns =
          static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
      result->error = std::move(error);
      result->done = true;
      result->cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(result->mu);
    result->cv.wait(lock, [&] { return result->done; });
    if (!result->error.empty()) {
      return InternalError("RunPass: kernel '" + kernels_.front().name + "' threw during pass " +
                           std::to_string(pass) + " on stream " + std::to_string(stream_.id()) +
                           " of device " + std::to_string(stream_.device()) + ": " + result->error);
    }
    PassTiming timing;
    timing.duration_ns = result->duration_ns;
    return timing;
  }

  StatusOr<LaunchShape> DescribeLaunch() override {
    if (kernels_.empty() || !kernels_.front().shape.has_value()) {
      return UnimplementedError("host kernel '" + (kernels_.empty() ? std::string() : kernels_.front().name) +
                                "' was launched without a shape");
    }
    return *kernels_.front().shape;
  }

  StatusOr<std::shared_ptr<const RecordedLaunch>> RecordForRange() override {
    if (recorded_ == nullptr)
      recorded_ =
          std::make_shared<HostRecordedLaunch>(kernels_.front().name, Bodies(), kernels_.front().shape);
    return std::shared_ptr<const RecordedLaunch>(recorded_);
  }

  // Each call signals once: the signal's count exposes a caller that signals twice.
  void SignalCompletion() override {
    if (signal_ != nullptr) signal_->Signal();
  }

 private:
  using BodyList = std::vector<std::function<void(const KernelContext&)>>;

  Status LoadModules() {
    for (const Kernel& kernel : kernels_) {
      if (kernel.module == 0) continue;
      Status status = impl_.EnsureModuleLoaded(kernel.module);
      if (!status.ok()) {
        return status.WithContext("Launch of '" + kernel.name + "' on device " +
                                  std::to_string(stream_.device()));
      }
    }
    return OkStatus();
  }

  // The bodies, copied once per launch: the ops run after the caller's Kernels are gone.
  std::shared_ptr<const BodyList> Bodies() {
    if (bodies_ == nullptr) {
      auto bodies = std::make_shared<BodyList>();
      bodies->reserve(kernels_.size());
      for (const Kernel& kernel : kernels_) bodies->push_back(kernel.body);
      bodies_ = std::move(bodies);
    }
    return bodies_;
  }

  HostPlatform::Impl& impl_;
  Stream& stream_;
  std::span<const Kernel> kernels_;
  CompletionSignal* signal_;
  std::shared_ptr<const BodyList> bodies_;
  std::shared_ptr<HostRecordedLaunch> recorded_;  // set by RecordForRange
};

}  // namespace gpuprof::device::host
