#include "db/trace_args.h"

#include <vector>

#include "base/json.h"

namespace gpuprof::db {
namespace {

std::vector<std::string_view> Inputs(std::string_view encoded) {
  std::vector<std::string_view> inputs;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = encoded.find(';', start);
    inputs.push_back(
        encoded.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
    if (encoded.substr(start, 2) == "\r\n") start += 2;
  }
  return inputs;
}

bool IsInteger(std::string_view text) {
  if (!text.empty() && text[0] == '-') text.remove_prefix(1);
  if (text.empty() || text.size() > 19) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> InputDimsJson(std::string_view encoded) {
  std::string out = "[";
  bool first_input = true;
  for (std::string_view input : Inputs(encoded)) {
    out += first_input ? "[" : ", [";
    first_input = false;
    if (!input.empty()) {
      std::size_t start = 0;
      while (true) {
        const std::size_t end = input.find(',', start);
        const std::string_view dim =
            input.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        if (!IsInteger(dim)) return std::nullopt;
        if (start > 0) out += ", ";
        out += dim;
        if (end == std::string_view::npos) break;
        start = end + 1;
      }
    }
    out += ']';
  }
  out += ']';
  return out;
}

std::string InputTypesJson(std::string_view encoded) {
  std::string out = "[";
  bool first = true;
  for (std::string_view input : Inputs(encoded)) {
    if (!first) out += ", ";
    first = false;
    base::AppendJsonString(&out, input);
  }
  out += ']';
  return out;
}

}  // namespace gpuprof::db
