#include "replay/counter_passes.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "replay/metric_catalog.h"

namespace gpuprof::replay {

namespace {

// The metrics that need counter passes (launch__* come from the launch itself).
std::vector<std::string> CountedMetrics(const std::vector<std::string>& metrics) {
  std::vector<std::string> counted;
  for (const std::string& name : metrics) {
    if (!IsLaunchMetric(name)) counted.push_back(name);
  }
  return counted;
}

// The launch__* metrics of `metrics`, from the launch's shape.
void LaunchMetrics(const std::vector<std::string>& metrics, const StatusOr<device::LaunchShape>& shape,
                   std::vector<MetricValue>* out, std::vector<std::string>* problems) {
  if (std::none_of(metrics.begin(), metrics.end(),
                   [](const std::string& name) { return IsLaunchMetric(name); })) {
    return;
  }
  if (!shape.ok()) {
    problems->push_back("launch attributes unavailable: " + shape.status().message());
    return;
  }
  for (const std::string& name : metrics) {
    if (!IsLaunchMetric(name)) continue;
    StatusOr<MetricValue> value = LaunchMetric(name, *shape);
    if (value.ok()) {
      out->push_back(*std::move(value));
    } else {
      problems->push_back(value.status().message());
    }
  }
}

// The plan of `counted` on `device`, refused when the backend is missing or it needs too many passes.
StatusOr<CounterPlan> PlanWithin(const std::shared_ptr<CounterBackend>& backend, int device,
                                 const std::vector<std::string>& counted, const ReplayOptions& options) {
  if (backend == nullptr) {
    return FailedPreconditionError(
        "no counter backend: hardware counters need the CUDA build of gpuprof with CUPTI's profiling API");
  }
  StatusOr<CounterPlan> plan = backend->Plan(device, counted);
  if (plan.ok() && plan->passes > options.max_counter_passes) {
    return ResourceExhaustedError(
        "the metrics need " + std::to_string(plan->passes) + " counter passes, more than the " +
        std::to_string(options.max_counter_passes) + " allowed; ask for fewer metrics");
  }
  return plan;
}

// Units and passes a backend left for the plan to fill.
void FillFromPlan(const CounterPlan& plan, std::vector<MetricValue>& values) {
  for (std::size_t i = 0; i < values.size() && i < plan.metric_passes.size(); ++i) {
    if (values[i].passes == 0) values[i].passes = plan.metric_passes[i];
    if (values[i].unit.empty() && i < plan.units.size()) values[i].unit = plan.units[i];
  }
}

// record.metrics in the order asked, and the problems as record.counter_status.
void PutInAskedOrder(const std::vector<std::string>& metrics, std::vector<MetricValue> from_launch,
                     std::vector<MetricValue> from_counters, const std::vector<std::string>& problems,
                     ReplayRecord& record) {
  for (const std::string& name : metrics) {
    for (std::vector<MetricValue>* source : {&from_launch, &from_counters}) {
      auto it =
          std::find_if(source->begin(), source->end(), [&](const MetricValue& v) { return v.name == name; });
      if (it != source->end()) {
        record.metrics.push_back(std::move(*it));
        source->erase(it);
        break;
      }
    }
  }
  for (std::size_t i = 0; i < problems.size(); ++i) {
    if (i > 0) record.counter_status += "; ";
    record.counter_status += problems[i];
  }
}

}  // namespace

void CounterPasses::SetBackend(std::shared_ptr<CounterBackend> backend) {
  *backend_.wlock() = std::move(backend);
}

void CounterPasses::Idle() noexcept {
  std::shared_ptr<CounterBackend> backend;
  try {
    backend = *backend_.rlock();
  } catch (...) {
    return;
  }
  if (backend != nullptr) backend->Idle();
}

void CounterPasses::Run(ReplayRecord& record, device::LaunchExecutor& executor, const ReplayOptions& options,
                        const ReplayUnit& unit, const RestoreInputs& restore_inputs) {
  if (!options.metrics.empty() && record.decline_reason == DeclineReason::kNone &&
      !Collect(record, executor, options, unit, restore_inputs)) {
    GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << record.decline_detail;
  }
  if (!record.counter_status.empty()) WarnNoCounters(record);
}

bool CounterPasses::Collect(ReplayRecord& record, device::LaunchExecutor& executor,
                            const ReplayOptions& options, const ReplayUnit& unit,
                            const RestoreInputs& restore_inputs) {
  // Launch metrics come from the launch itself; the rest from counter passes, in one list.
  const std::vector<std::string> counted = CountedMetrics(options.metrics);
  std::vector<MetricValue> from_launch;
  std::vector<MetricValue> from_counters;
  std::vector<std::string> problems;
  if (counted.size() < options.metrics.size()) {
    LaunchMetrics(options.metrics, executor.DescribeLaunch(), &from_launch, &problems);
  }

  bool healthy = true;
  const std::shared_ptr<CounterBackend> backend = *backend_.rlock();
  if (!counted.empty()) {
    if (StatusOr<CounterPlan> plan = PlanWithin(backend, record.device, counted, options); !plan.ok()) {
      problems.push_back(plan.status().message());
    } else if (StatusOr<std::unique_ptr<CounterCollection>> collection =
                   backend->Begin(record.device, counted);
               !collection.ok()) {
      problems.push_back(collection.status().message());
    } else {
      // Every counter pass starts from the inputs every timing pass saw. A backend that keeps
      // asking is stopped a little past its plan.
      const int limit = std::max(plan->passes, 1) + 2;
      bool submitted = false;
      std::string failure;
      while (!submitted && record.counter_passes < limit) {
        std::uint64_t output_hash = 0;
        std::string inputs_failure;
        RestoreStats restored = restore_inputs(&output_hash, &inputs_failure);
        if (record.counter_passes == 0 && !record.passes.empty() && record.passes.back().output_hash == 0) {
          record.passes.back().output_hash = output_hash;  // the last timing pass's output
        }
        if (restored.regions_failed > 0) {
          record.decline_reason = DeclineReason::kRestoreFailed;
          record.decline_detail = std::to_string(restored.regions_failed) +
                                  " region(s) could not be written back before counter pass " +
                                  std::to_string(record.counter_passes + 1) + "; replay stopped";
          healthy = false;
          break;
        }
        if (!inputs_failure.empty()) {
          record.decline_reason = DeclineReason::kLaunchFailed;
          record.decline_detail = "running the graph's nodes before this one again for counter pass " +
                                  std::to_string(record.counter_passes + 1) + " failed: " + inputs_failure;
          healthy = false;
          break;
        }
        if (Status prepared = unit.prepare_counter_pass(); !prepared.ok()) {
          failure = "preparing counter pass " + std::to_string(record.counter_passes + 1) + ": " +
                    prepared.message();
          break;
        }
        if (Status begun = (*collection)->BeginPass(); !begun.ok()) {
          failure = begun.message();
          break;
        }
        Status ran = unit.run_counter_pass(options.passes + record.counter_passes + 1);
        ++record.counter_passes;
        if (!ran.ok()) {
          record.decline_reason = DeclineReason::kLaunchFailed;
          record.decline_detail = "counter pass " + std::to_string(record.counter_passes) +
                                  " failed to launch: " + ran.ToString();
          healthy = false;
          break;
        }
        StatusOr<bool> ended = (*collection)->EndPass();
        if (!ended.ok()) {
          failure = ended.status().message();
          break;
        }
        submitted = *ended;
      }
      if (healthy && failure.empty() && !submitted) {
        failure = "the counter backend still wanted passes after " + std::to_string(record.counter_passes) +
                  " (planned " + std::to_string(plan->passes) + ")";
      }
      if (healthy && failure.empty()) {
        StatusOr<std::vector<MetricValue>> values = (*collection)->Finish();
        if (!values.ok()) {
          failure = values.status().message();
        } else {
          from_counters = *std::move(values);
          FillFromPlan(*plan, from_counters);
        }
      }
      if (!failure.empty()) problems.push_back(failure);
    }
  }

  PutInAskedOrder(options.metrics, std::move(from_launch), std::move(from_counters), problems, record);
  return healthy;
}

bool CounterPasses::RunRange(std::vector<ReplayRecord>& records, int device, const ReplayOptions& options,
                             const std::vector<StatusOr<device::LaunchShape>>& shapes,
                             const std::function<bool()>& restore,
                             const std::function<Status(int pass)>& reissue, std::string* failure) {
  if (options.metrics.empty() || records.empty()) return true;
  const std::vector<std::string> counted = CountedMetrics(options.metrics);
  std::vector<std::string> problems;
  std::vector<std::vector<MetricValue>> per_launch(records.size());
  int passes = 0;
  const std::shared_ptr<CounterBackend> backend = *backend_.rlock();
  if (!counted.empty()) {
    StatusOr<CounterPlan> plan = PlanWithin(backend, device, counted, options);
    StatusOr<std::unique_ptr<CounterCollection>> collection =
        plan.ok() ? backend->BeginRange(device, counted, static_cast<std::uint32_t>(records.size()))
                  : StatusOr<std::unique_ptr<CounterCollection>>(plan.status());
    if (!collection.ok()) {
      problems.push_back(collection.status().message());
    } else {
      // One Start/Stop per pass for the whole range; a backend that keeps asking is stopped a
      // little past its plan.
      const int limit = std::max(plan->passes, 1) + 2;
      bool submitted = false;
      std::string trouble;
      while (!submitted && passes < limit && trouble.empty()) {
        if (!restore()) {
          *failure = "a restore before counter pass " + std::to_string(passes + 1) + " failed";
          return false;
        }
        if (Status begun = (*collection)->BeginPass(); !begun.ok()) {
          trouble = begun.message();
          break;
        }
        Status ran = reissue(options.passes + passes + 1);
        ++passes;
        if (!ran.ok()) {
          *failure = "counter pass " + std::to_string(passes) + ": " + ran.ToString();
          return false;
        }
        StatusOr<bool> ended = (*collection)->EndPass();
        if (!ended.ok()) {
          trouble = ended.status().message();
        } else {
          submitted = *ended;
        }
      }
      if (trouble.empty() && !submitted) {
        trouble = "the counter backend still wanted passes after " + std::to_string(passes) + " (planned " +
                  std::to_string(plan->passes) + ")";
      }
      if (trouble.empty()) {
        StatusOr<std::vector<std::vector<MetricValue>>> values = (*collection)->FinishPerLaunch();
        if (!values.ok()) {
          trouble = values.status().message();
        } else if (values->size() != records.size()) {
          trouble = "the counter backend decoded " + std::to_string(values->size()) + " ranges for " +
                    std::to_string(records.size()) + " launches";
        } else {
          per_launch = *std::move(values);
          for (std::vector<MetricValue>& launch : per_launch) FillFromPlan(*plan, launch);
        }
      }
      if (!trouble.empty()) problems.push_back(trouble);
    }
  }
  for (std::size_t i = 0; i < records.size(); ++i) {
    std::vector<MetricValue> from_launch;
    std::vector<std::string> launch_problems = problems;
    if (counted.size() < options.metrics.size()) {
      LaunchMetrics(
          options.metrics,
          i < shapes.size() ? shapes[i] : StatusOr<device::LaunchShape>(UnimplementedError("no shape")),
          &from_launch, &launch_problems);
    }
    records[i].counter_passes = passes;
    PutInAskedOrder(options.metrics, std::move(from_launch), std::move(per_launch[i]), launch_problems,
                    records[i]);
    if (!records[i].counter_status.empty()) WarnNoCounters(records[i]);
  }
  return true;
}

void CounterPasses::WarnNoCounters(const ReplayRecord& record) {
  if (!warned_.wlock()->insert(record.counter_status).second) return;
  GPUPROF_LOG(kWarning)
      << "replay of " << record.kernel_name << " on device " << record.device << ": no hardware counters ("
      << record.counter_status
      << "); the launch is still replayed and timed (this warning is shown once per reason)";
}

}  // namespace gpuprof::replay
