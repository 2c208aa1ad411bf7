#include "replay/counter_passes.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "replay/metric_catalog.h"

namespace gpuprof::replay {

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
  std::vector<std::string> counted;
  bool launch_metrics = false;
  for (const std::string& name : options.metrics) {
    if (IsLaunchMetric(name)) {
      launch_metrics = true;
    } else {
      counted.push_back(name);
    }
  }
  std::vector<MetricValue> from_launch;
  std::vector<MetricValue> from_counters;
  std::vector<std::string> problems;
  if (launch_metrics) {
    StatusOr<device::LaunchShape> shape = executor.DescribeLaunch();
    if (!shape.ok()) {
      problems.push_back("launch attributes unavailable: " + shape.status().message());
    } else {
      for (const std::string& name : options.metrics) {
        if (!IsLaunchMetric(name)) continue;
        StatusOr<MetricValue> value = LaunchMetric(name, *shape);
        if (value.ok()) {
          from_launch.push_back(*std::move(value));
        } else {
          problems.push_back(value.status().message());
        }
      }
    }
  }

  bool healthy = true;
  const std::shared_ptr<CounterBackend> backend = *backend_.rlock();
  if (!counted.empty()) {
    if (backend == nullptr) {
      problems.push_back(
          "no counter backend: hardware counters need the CUDA build of gpuprof with CUPTI's "
          "profiling API");
    } else if (StatusOr<CounterPlan> plan = backend->Plan(record.device, counted); !plan.ok()) {
      problems.push_back(plan.status().message());
    } else if (plan->passes > options.max_counter_passes) {
      problems.push_back("the metrics need " + std::to_string(plan->passes) +
                         " counter passes, more than the " + std::to_string(options.max_counter_passes) +
                         " allowed; ask for fewer metrics");
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
          for (std::size_t i = 0; i < from_counters.size() && i < plan->metric_passes.size(); ++i) {
            if (from_counters[i].passes == 0) from_counters[i].passes = plan->metric_passes[i];
            if (from_counters[i].unit.empty() && i < plan->units.size())
              from_counters[i].unit = plan->units[i];
          }
        }
      }
      if (!failure.empty()) problems.push_back(failure);
    }
  }

  // In the order asked.
  for (const std::string& name : options.metrics) {
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
  return healthy;
}

void CounterPasses::WarnNoCounters(const ReplayRecord& record) {
  if (!warned_.wlock()->insert(record.counter_status).second) return;
  GPUPROF_LOG(kWarning)
      << "replay of " << record.kernel_name << " on device " << record.device << ": no hardware counters ("
      << record.counter_status
      << "); the launch is still replayed and timed (this warning is shown once per reason)";
}

}  // namespace gpuprof::replay
