// A CounterBackend for the host tests (replay/counter_backend.h): metrics are declared with their
// unit, the passes each needs and the value it evaluates to; errors can be injected at every step.
// The plan of a list needs the sum of its metrics' passes (no sharing), and a collection reports
// "all submitted" once it has that many (plus `extra_passes`, to model a backend that keeps asking).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "replay/counter_backend.h"

namespace gpuprof::testing {

class FakeCounterBackend final : public replay::CounterBackend {
 public:
  struct Metric {
    std::string unit;
    int passes = 1;
    double value = 0;
  };
  std::map<std::string, Metric> metrics;
  Status plan_error;
  Status begin_error;
  Status begin_pass_error;
  Status finish_error;
  int extra_passes = 0;
  // Calls seen.
  int plans = 0;
  int begins = 0;
  int begin_passes = 0;
  int end_passes = 0;
  int finishes = 0;
  int idles = 0;
  int range_begins = 0;

  void Idle() noexcept override { ++idles; }

  StatusOr<replay::CounterPlan> Plan(int device, const std::vector<std::string>& names) override {
    static_cast<void>(device);
    ++plans;
    if (!plan_error.ok()) return plan_error;
    replay::CounterPlan plan;
    for (const std::string& name : names) {
      auto it = metrics.find(name);
      if (it == metrics.end()) return NotFoundError("unknown metric " + name);
      plan.passes += it->second.passes;
      plan.metric_passes.push_back(it->second.passes);
      plan.units.push_back(it->second.unit);
    }
    return plan;
  }

  StatusOr<std::unique_ptr<replay::CounterCollection>> Begin(int device,
                                                             const std::vector<std::string>& names) override {
    ++begins;
    if (!begin_error.ok()) return begin_error;
    StatusOr<replay::CounterPlan> plan = Plan(device, names);
    --plans;
    if (!plan.ok()) return plan.status();
    return std::unique_ptr<replay::CounterCollection>(
        std::make_unique<Collection>(*this, names, plan->passes + extra_passes));
  }

  // A range's values: each launch's is the metric's value plus its launch index.
  StatusOr<std::unique_ptr<replay::CounterCollection>> BeginRange(int device,
                                                                  const std::vector<std::string>& names,
                                                                  std::uint32_t launches) override {
    ++range_begins;
    StatusOr<std::unique_ptr<replay::CounterCollection>> collection = Begin(device, names);
    --begins;
    if (collection.ok()) static_cast<Collection&>(**collection).launches_ = launches;
    return collection;
  }

  StatusOr<std::vector<replay::MetricInfo>> ListMetrics(int device) override {
    static_cast<void>(device);
    std::vector<replay::MetricInfo> out;
    for (const auto& [name, metric] : metrics) out.push_back({name, metric.unit, "fake " + name});
    return out;
  }

 private:
  class Collection final : public replay::CounterCollection {
   public:
    Collection(FakeCounterBackend& backend, std::vector<std::string> names, int needed)
        : backend_(backend), names_(std::move(names)), needed_(needed) {}
    Status BeginPass() override {
      ++backend_.begin_passes;
      return backend_.begin_pass_error;
    }
    StatusOr<bool> EndPass() override {
      ++backend_.end_passes;
      return ++done_ >= needed_;
    }
    StatusOr<std::vector<replay::MetricValue>> Finish() override {
      ++backend_.finishes;
      if (!backend_.finish_error.ok()) return backend_.finish_error;
      std::vector<replay::MetricValue> values;
      // Units and passes left for the controller to fill from the plan.
      for (const std::string& name : names_) values.push_back({name, "", backend_.metrics.at(name).value, 0});
      return values;
    }

    StatusOr<std::vector<std::vector<replay::MetricValue>>> FinishPerLaunch() override {
      ++backend_.finishes;
      if (!backend_.finish_error.ok()) return backend_.finish_error;
      std::vector<std::vector<replay::MetricValue>> values(launches_);
      for (std::uint32_t i = 0; i < launches_; ++i) {
        for (const std::string& name : names_) {
          values[i].push_back({name, "", backend_.metrics.at(name).value + i, 0});
        }
      }
      return values;
    }
    std::uint32_t launches_ = 0;

   private:
    FakeCounterBackend& backend_;
    std::vector<std::string> names_;
    int needed_;
    int done_ = 0;
  };
};

}  // namespace gpuprof::testing
