// The command line of the C++ benchmarks (one copy of the parsing they share): "--name value" or
// "--name=value" options, plain switches, and --help / -h.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace gpuprof::bench {

// What a benchmark's option handler says of one "--name value": nullopt, not one of its options;
// "" taken; else what the value should have been ("a non-negative integer").
using OptionResult = std::optional<std::string_view>;

// Reads argv[1..]: --help or -h sets *help and stops (true); a name for which is_switch(name)
// holds is passed to on_switch; any other "--name[=value]" takes its value (after '=' or the next
// argument) and is passed to on_value. On an unknown argument, a missing value or a refused one,
// prints one line naming `program` and the argument, and returns false.
inline bool ParseArgs(
    std::string_view program, int argc, char** argv,
    const std::function<bool(std::string_view name)>& is_switch,
    const std::function<void(std::string_view name)>& on_switch,
    const std::function<OptionResult(std::string_view name, std::string_view value)>& on_value, bool* help) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  const auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "%.*s: %s (try --help)\n", static_cast<int>(program.size()), program.data(),
                 why.c_str());
    return false;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return true;
    }
    if (is_switch(arg)) {
      on_switch(arg);
      continue;
    }
    std::string_view name = arg;
    std::optional<std::string_view> value;
    if (const std::size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        // Unknown or valueless: ask the handler which, with an empty value it may refuse.
        if (!on_value(name, {}).has_value()) return fail("unknown argument '" + std::string(arg) + "'");
        return fail(std::string(name) + " needs a value");
      }
      value = args[++i];
    }
    const OptionResult result = on_value(name, *value);
    if (!result.has_value()) return fail("unknown argument '" + std::string(name) + "'");
    if (!result->empty()) {
      return fail(std::string(name) + " expects " + std::string(*result) + ", got '" + std::string(*value) +
                  "'");
    }
  }
  return true;
}

// A whole non-negative decimal integer.
inline bool ParseUint(std::string_view text, std::uint64_t* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

// A whole positive decimal number.
inline bool ParsePositiveDouble(std::string_view text, double* out) {
  if (text.empty()) return false;
  const std::string copy(text);
  std::size_t used = 0;
  try {
    const double value = std::stod(copy, &used);
    if (used != copy.size() || !(value > 0.0)) return false;
    *out = value;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace gpuprof::bench
