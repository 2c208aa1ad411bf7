#include "cli/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <tuple>
#include <utility>

#include "base/check.h"
#include "base/utf8.h"

namespace gpuprof::cli {
namespace {

using replay::DeclineReason;
using replay::PassRecord;
using replay::ReplayRecord;

// Columns a UTF-8 string occupies on a terminal: one per code point (no wide characters here).
std::size_t DisplayWidth(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0u) != 0x80u; }));
}

std::string JoinPasses(const std::vector<int>& passes) {
  std::string out;
  for (int pass : passes) {
    if (!out.empty()) out += ",";
    out += std::to_string(pass);
  }
  return out;
}

double Median(std::vector<std::uint64_t> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  std::size_t mid = values.size() / 2;
  if (values.size() % 2 == 1) return static_cast<double>(values[mid]);
  return (static_cast<double>(values[mid - 1]) + static_cast<double>(values[mid])) / 2.0;
}

std::string Plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

}  // namespace

std::string FormatBytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  // Whole numbers without the ".0": buffer sizes read as "64 KiB", measured ones as "22.3 MiB".
  if (value == static_cast<double>(static_cast<std::uint64_t>(value))) {
    std::snprintf(text, sizeof(text), "%.0f %s", value, kUnits[unit]);
  } else {
    std::snprintf(text, sizeof(text), "%.1f %s", value, kUnits[unit]);
  }
  return text;
}

std::string FormatMicros(double ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", ns / 1000.0);
  return text;
}

std::string FormatFixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

std::string FormatMillis(std::int64_t ns) { return FormatFixed(static_cast<double>(ns) / 1e6, 3); }

std::string FormatPercent(std::int64_t part, std::int64_t whole) {
  if (whole <= 0) return "-";
  return FormatFixed(100.0 * static_cast<double>(part) / static_cast<double>(whole), 1);
}

std::string ShortHash(std::uint64_t hash) {
  if (hash == 0) return "-";
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return std::string(text, 8);
}

std::string ShortName(std::string_view raw, std::size_t max_chars) {
  std::string name = base::PrintableText(raw);
  if (name.size() <= max_chars) return name;
  std::size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0u) == 0x80u) --cut;
  return name.substr(0, cut) + "...";
}

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::AddRow(std::vector<std::string> cells) {
  GPUPROF_CHECK(cells.size() <= columns_.size())
      << "table row has " << cells.size() << " cells for " << columns_.size() << " columns";
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::Print(std::ostream& out, std::string_view indent) const {
  std::vector<std::size_t> widths(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = DisplayWidth(columns_[c].header);
    for (const auto& row : rows_) widths[c] = std::max(widths[c], DisplayWidth(row[c]));
  }
  auto print_line = [&](auto cell_of) {
    std::string line(indent);
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = cell_of(c);
      std::string pad(widths[c] - DisplayWidth(cell), ' ');
      if (c > 0) line += "  ";
      line += columns_[c].align == Align::kRight ? pad + cell : cell + pad;
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  };
  print_line([&](std::size_t c) -> const std::string& { return columns_[c].header; });
  for (const auto& row : rows_) print_line([&](std::size_t c) -> const std::string& { return row[c]; });
}

void PrintPassTable(std::ostream& out, const std::vector<ReplayRecord>& records) {
  using Align = TextTable::Align;
  TextTable table({{"kernel", Align::kLeft},
                   {"dev", Align::kRight},
                   {"pass", Align::kRight},
                   {"duration (µs)", Align::kRight},
                   {"restored (B)", Align::kRight},
                   {"dirty chunks", Align::kRight},
                   {"output hash", Align::kLeft}});
  for (const ReplayRecord& record : records) {
    for (const PassRecord& pass : record.passes) {
      table.AddRow({record.kernel_name, std::to_string(record.device), std::to_string(pass.pass),
                    FormatMicros(static_cast<double>(pass.duration_ns)), std::to_string(pass.bytes_restored),
                    std::to_string(pass.dirty_chunks), ShortHash(pass.output_hash)});
    }
  }
  if (table.empty()) {
    out << "  (no launch was replayed)\n";
    return;
  }
  table.Print(out, "  ");
}

void PrintSummary(std::ostream& out, const std::vector<ReplayRecord>& records) {
  using Align = TextTable::Align;
  TextTable table({{"kernel", Align::kLeft},
                   {"dev", Align::kRight},
                   {"passes", Align::kRight},
                   {"min µs", Align::kRight},
                   {"median µs", Align::kRight},
                   {"max µs", Align::kRight},
                   {"snapshot", Align::kRight},
                   {"restored/pass", Align::kRight},
                   {"deterministic", Align::kLeft}});

  // Declined launches of one kernel for one reason are one row: a graph launched in a loop
  // would otherwise fill the table.
  struct Declined {
    std::uint64_t launches = 0;
    std::string detail;
  };
  std::map<std::tuple<std::string, int, DeclineReason>, Declined> declined;
  std::vector<std::string> notes;

  for (const ReplayRecord& record : records) {
    if (record.passes.empty()) {
      Declined& entry = declined[{record.kernel_name, record.device, record.decline_reason}];
      if (entry.launches++ == 0) {
        table.AddRow({record.kernel_name, std::to_string(record.device), "-", "-", "-", "-", "-", "-",
                      "declined (" + std::string(replay::DeclineReasonName(record.decline_reason)) + ")"});
      }
      entry.detail = record.decline_detail;
      continue;
    }
    std::vector<std::uint64_t> durations;
    std::uint64_t restored = 0;
    for (const PassRecord& pass : record.passes) {
      durations.push_back(pass.duration_ns);
      if (pass.pass > 1) restored += pass.bytes_restored;
    }
    auto [min_it, max_it] = std::minmax_element(durations.begin(), durations.end());
    std::string per_pass =
        record.passes.size() > 1 ? FormatBytes(restored / (record.passes.size() - 1)) : "-";
    std::string deterministic;
    if (record.decline_reason != DeclineReason::kNone) {
      deterministic = "stopped early (" + std::string(replay::DeclineReasonName(record.decline_reason)) + ")";
      notes.push_back("stopped early: " + record.kernel_name + " on device " + std::to_string(record.device) +
                      ": " + record.decline_detail);
    } else if (record.deterministic) {
      deterministic = "yes";
    } else {
      deterministic = "NO (passes " + JoinPasses(record.mismatched_passes) + " differ from pass 1)";
      notes.push_back("nondeterministic: " + record.kernel_name + " on device " +
                      std::to_string(record.device) + ": from identical inputs, passes " +
                      JoinPasses(record.mismatched_passes) + " wrote different bytes than pass 1");
    }
    table.AddRow({record.kernel_name, std::to_string(record.device), std::to_string(record.passes.size()),
                  FormatMicros(static_cast<double>(*min_it)), FormatMicros(Median(durations)),
                  FormatMicros(static_cast<double>(*max_it)), FormatBytes(record.snapshot_bytes), per_pass,
                  deterministic});
  }
  for (const auto& [key, entry] : declined) {
    const auto& [kernel, device, reason] = key;
    notes.push_back("declined: " + kernel + " on device " + std::to_string(device) + ", " +
                    Plural(entry.launches, "launch", "launches") + " (" +
                    std::string(replay::DeclineReasonName(reason)) + "): " + entry.detail + "; " +
                    (entry.launches == 1 ? "it ran once" : "each ran once"));
  }

  if (table.empty()) {
    out << "  (no launch was selected for replay)\n";
    return;
  }
  table.Print(out, "  ");
  if (!notes.empty()) out << '\n';
  for (const std::string& note : notes) out << "  " << note << '\n';
}

}  // namespace gpuprof::cli
