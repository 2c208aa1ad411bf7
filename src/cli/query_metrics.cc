#include "cli/query_metrics.h"

#include <dlfcn.h>

#include <cstddef>
#include <ostream>

#include "base/json.h"
#include "cli/report.h"
#include "replay/metric_catalog.h"

namespace gpuprof::cli {
namespace {

// gpuprof_c.h's signatures, spelled here: the CLI does not include the session's header.
using QueryMetricsFn = int (*)(int, const char*, char*, std::size_t, std::size_t*);
using LastErrorFn = const char* (*)();
constexpr int kInvalidArgument = 1;  // GPUPROF_ERROR_INVALID_ARGUMENT

void SkipSpace(std::string_view text, std::size_t* pos) {
  while (*pos < text.size() &&
         (text[*pos] == ' ' || text[*pos] == '\n' || text[*pos] == '\t' || text[*pos] == '\r'))
    ++*pos;
}

bool Expect(std::string_view text, std::size_t* pos, char c) {
  SkipSpace(text, pos);
  if (*pos >= text.size() || text[*pos] != c) return false;
  ++*pos;
  return true;
}

Status Malformed(std::size_t pos) {
  return InvalidArgumentError("libgpuprof.so's metric list is not the expected JSON (at offset " +
                              std::to_string(pos) + ")");
}

std::string InfoJson(const std::vector<replay::MetricInfo>& metrics) {
  std::string out = "[";
  for (const replay::MetricInfo& m : metrics) {
    if (out.size() > 1) out += ", ";
    out += "{\"name\": " + base::JsonQuote(m.name) + ", \"unit\": " + base::JsonQuote(m.unit) +
           ", \"description\": " + base::JsonQuote(m.description) + "}";
  }
  return out + "]";
}

void PrintTable(std::ostream& out, const std::vector<replay::MetricInfo>& metrics) {
  TextTable table({{"metric"}, {"unit"}, {"description"}});
  for (const replay::MetricInfo& m : metrics)
    table.AddRow({m.name, m.unit.empty() ? "-" : m.unit, m.description});
  table.Print(out, "  ");
}

}  // namespace

StatusOr<std::vector<replay::MetricInfo>> ParseMetricsJson(std::string_view json) {
  std::vector<replay::MetricInfo> metrics;
  std::size_t pos = 0;
  if (!Expect(json, &pos, '[')) return Malformed(pos);
  SkipSpace(json, &pos);
  if (pos < json.size() && json[pos] == ']') return metrics;
  while (true) {
    if (!Expect(json, &pos, '{')) return Malformed(pos);
    replay::MetricInfo info;
    while (true) {
      SkipSpace(json, &pos);
      std::string key;
      std::string value;
      if (!base::ReadJsonString(json, &pos, &key).ok() || !Expect(json, &pos, ':')) return Malformed(pos);
      SkipSpace(json, &pos);
      if (!base::ReadJsonString(json, &pos, &value).ok()) return Malformed(pos);
      if (key == "name") info.name = std::move(value);
      if (key == "unit") info.unit = std::move(value);
      if (key == "description") info.description = std::move(value);
      if (Expect(json, &pos, ',')) continue;
      if (Expect(json, &pos, '}')) break;
      return Malformed(pos);
    }
    metrics.push_back(std::move(info));
    if (Expect(json, &pos, ',')) continue;
    if (Expect(json, &pos, ']')) break;
    return Malformed(pos);
  }
  SkipSpace(json, &pos);
  if (pos != json.size()) return Malformed(pos);
  return metrics;
}

StatusOr<std::vector<replay::MetricInfo>> QueryCounterMetrics(const QueryMetricsOptions& options) {
  // RTLD_LOCAL: the library's symbols stay out of the CLI's namespace. Loading it starts nothing
  // (a session starts on gpuprof_start or InitializeInjection only).
  void* handle = dlopen(options.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return UnavailableError("cannot load " + options.library +
                            " to ask for the counter metrics: " + (why != nullptr ? why : "dlopen failed"));
  }
  auto query = reinterpret_cast<QueryMetricsFn>(dlsym(handle, "gpuprof_query_metrics_v1"));
  auto last_error = reinterpret_cast<LastErrorFn>(dlsym(handle, "gpuprof_last_error"));
  if (query == nullptr || last_error == nullptr) {
    return UnavailableError(options.library +
                            " has no gpuprof_query_metrics_v1: it is older than this gpuprof; rebuild it");
  }
  // The library stays loaded (it is built -z nodelete anyway).
  std::string buffer(std::size_t{1} << 20, '\0');
  std::size_t required = 0;
  const char* chip = options.chip.empty() ? nullptr : options.chip.c_str();
  int code = query(options.device, chip, buffer.data(), buffer.size(), &required);
  if (code == kInvalidArgument && required > buffer.size()) {
    buffer.assign(required, '\0');
    code = query(options.device, chip, buffer.data(), buffer.size(), &required);
  }
  if (code != 0) {
    const char* why = last_error();
    return UnavailableError(why != nullptr && *why != '\0' ? why : "gpuprof_query_metrics_v1 failed");
  }
  buffer.resize(required > 0 ? required - 1 : 0);
  return ParseMetricsJson(buffer);
}

void PrintMetrics(std::ostream& out, const QueryMetricsOptions& options,
                  const StatusOr<std::vector<replay::MetricInfo>>& counters) {
  const std::vector<replay::MetricInfo> launch = replay::LaunchMetricInfos();
  const std::string source = options.chip.empty() ? "device " + std::to_string(options.device) : options.chip;
  if (options.json) {
    out << "{\"launch_metrics\": " << InfoJson(launch) << ", \"source\": " << base::JsonQuote(source)
        << ", \"counter_metrics\": " << (counters.ok() ? InfoJson(*counters) : "null")
        << ", \"counter_error\": " << (counters.ok() ? "null" : base::JsonQuote(counters.status().message()))
        << "}\n";
    return;
  }
  out << "Launch metrics (from the launch itself; no counter pass, no profiling permission):\n";
  PrintTable(out, launch);
  if (!counters.ok()) {
    out << "\nCounter metrics of " << source << ": none listed: " << counters.status().message() << "\n";
    return;
  }
  out << "\nCounter metrics of " << source << " (" << counters->size()
      << "; collected over counter passes):\n";
  PrintTable(out, *counters);
  out << "\nSections and sets of these names: docs/metrics.md (--section, --set).\n";
}

}  // namespace gpuprof::cli
