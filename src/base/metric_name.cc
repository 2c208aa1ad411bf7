#include "base/metric_name.h"

#include <algorithm>

#include "base/json.h"

namespace gpuprof::base {
namespace {

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool IsAllWordChars(std::string_view text) { return std::all_of(text.begin(), text.end(), IsWordChar); }

}  // namespace

bool IsMetricName(std::string_view name) noexcept {
  if (name.empty() || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')))
    return false;
  const std::size_t first_dot = name.find('.');
  const std::string_view head = name.substr(0, first_dot);
  const std::size_t unit_end = head.find("__");
  if (unit_end == std::string_view::npos || unit_end == 0 || unit_end + 2 >= head.size()) return false;
  if (!IsAllWordChars(head)) return false;
  if (first_dot == std::string_view::npos) return true;
  std::string_view rest = name.substr(first_dot + 1);
  while (true) {
    const std::size_t dot = rest.find('.');
    const std::string_view part = rest.substr(0, dot);
    if (part.empty() || !IsAllWordChars(part)) return false;
    if (dot == std::string_view::npos) return true;
    rest.remove_prefix(dot + 1);
  }
}

std::string MetricListProblem(std::string_view list) {
  if (list.empty()) return {};
  while (true) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    if (!IsMetricName(name)) {
      return (name.empty() ? std::string("an empty entry") : JsonQuote(name) + " is not a metric name") +
             "; expected a comma list of Nsight Compute metric names, unit__counter[.rollup[.submetric]], "
             "e.g. dram__bytes_read.sum,gpu__time_duration.sum (regex: and breakdown: are not supported; "
             "gpuprof replay --query-metrics lists them)";
    }
    if (comma == std::string_view::npos) return {};
    list.remove_prefix(comma + 1);
  }
}

}  // namespace gpuprof::base
