// Text output of the `gpuprof` CLI: aligned tables and the replay report (per-pass rows and a
// per-kernel summary). Pure formatting: no I/O beyond the stream it is given, no state.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "gpuprof/replay.h"

namespace gpuprof::cli {

// "512 B", "64.0 KiB", "16.0 MiB".
std::string FormatBytes(std::uint64_t bytes);
// Nanoseconds as microseconds with one decimal ("812.3").
std::string FormatMicros(double ns);
// `value` with `decimals` decimals ("0.950").
std::string FormatFixed(double value, int decimals);
// Nanoseconds as milliseconds with three decimals ("1.000").
std::string FormatMillis(std::int64_t ns);
// part / whole as a percentage with one decimal ("13.2"), "-" when whole is not positive.
std::string FormatPercent(std::int64_t part, std::int64_t whole);
// The first 8 hex digits of a 64-bit hash ("-" for 0, which means "not computed").
std::string ShortHash(std::uint64_t hash);
// A name from a DB made safe for the terminal (base::PrintableText) and cut to at most `max_chars`
// bytes at a code-point boundary, with "..." when cut (kernel names can be pages of templates).
std::string ShortName(std::string_view raw, std::size_t max_chars);

// A table printed with every column padded to its widest cell (UTF-8 aware, so "µs" counts as
// two columns, not three). Trailing blanks are trimmed.
class TextTable {
 public:
  enum class Align : std::uint8_t { kLeft, kRight };
  struct Column {
    std::string header;
    Align align = Align::kLeft;
  };

  explicit TextTable(std::vector<Column> columns);
  // Missing trailing cells print empty; extra cells are a programming error (checked).
  void AddRow(std::vector<std::string> cells);
  bool empty() const noexcept { return rows_.empty(); }
  void Print(std::ostream& out, std::string_view indent) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// One row per pass of every replayed launch, in completion order: kernel, device, pass, duration,
// bytes restored before the pass, dirty chunks, output hash.
void PrintPassTable(std::ostream& out, const std::vector<replay::ReplayRecord>& records);

// One row per replayed launch (min/median/max duration, snapshot size, restore traffic,
// deterministic) and one per (kernel, device, reason) of declined launches; then one line per
// nondeterministic kernel and per decline, with the details.
void PrintSummary(std::ostream& out, const std::vector<replay::ReplayRecord>& records);

}  // namespace gpuprof::cli
