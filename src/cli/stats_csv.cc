#include "cli/stats_csv.h"

#include <charconv>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/db_command_common.h"
#include "cli/exit_codes.h"
#include "cli/findings_output.h"
#include "db/findings.h"
#include "db/profile_reader.h"
#include "db/range_stats.h"
#include "db/stats.h"

namespace gpuprof::cli {
namespace {

// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
void AppendCsvField(std::string* line, std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) {
    line->append(field);
    return;
  }
  line->push_back('"');
  for (char c : field) {
    if (c == '"') line->push_back('"');
    line->push_back(c);
  }
  line->push_back('"');
}

// The shortest text that reads back as the same double.
std::string ExactNumber(double value) {
  char text[32];
  auto result = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, result.ptr);
}

constexpr std::string_view kMetricCsvHeader = "rank,kernelId,kernel,launchIndex,metric,unit,value,passes";

// Opens each DB under PATH in turn for `each`, which writes its rows and sets `absent` when the DB
// has none (a note on `err`, naming `what` is missing); the exit code.
int ForEachCsvDb(
    const std::string& path, std::string_view what, std::ostream& err,
    const std::function<Status(const db::ProfileDbFile&, const db::ProfileReader&, std::string*)>& each) {
  std::optional<db::ResolvedProfiles> resolved = Resolve(path, err);
  if (!resolved.has_value()) return kExitFailure;
  int exit_code = kExitOk;
  for (const db::ProfileDbFile& file : resolved->dbs) {
    StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(file.path);
    if (!reader.ok()) {
      PrintError(err, reader.status());
      exit_code = kExitFailure;
      continue;
    }
    std::string absent;
    if (Status status = each(file, **reader, &absent); !status.ok()) {
      PrintError(err, status);
      exit_code = kExitFailure;
      continue;
    }
    if (!absent.empty()) err << "gpuprof: note: " << file.path << ": " << absent << "; no " << what << "\n";
  }
  return exit_code;
}

// The rank column: the DB's own RANK_DEVICE_MAP rank, else the one its path says.
std::string RankText(std::optional<std::int64_t> rank, const db::ProfileDbFile& file) {
  if (!rank.has_value() || *rank < 0) rank = file.rank;
  return rank.has_value() ? std::to_string(*rank) : "";
}

std::string OptionalNumber(const std::optional<double>& value) { return value ? ExactNumber(*value) : ""; }

constexpr std::string_view kRangeCsvHeader =
    "rank,deviceId,rangeId,rangeLaunch,kernelId,kernel,replayed,declineReason,passes,medianNs,minNs,maxNs,"
    "spreadPct,computePct,memoryPct,occupancyPct,bottleneck,flops,dramBytes,durationNs";

// The tables of `stats --csv=TABLE` that are rows of `stats --format json`: each the JSON array's
// fields in the JSON's own names, after `rank`, so a row and its JSON object hold the same figures.
struct JsonTable {
  std::string_view name;  // --csv's value
  std::string_view what;  // for the note on a DB without rows
  std::vector<std::string_view> fields;
};

const std::vector<JsonTable>& JsonTables() {
  static const std::vector<JsonTable> tables = {
      {"ops", "ops", {"name", "calls", "total_ms", "self_ms"}},
      {"kernels", "kernels", {"name", "calls", "total_ms"}},
      {"steps", "steps", {"id", "start_ns", "duration_ms"}},
      {"findings",
       "findings",
       {"id", "severity", "title", "at_stake_ms", "at_stake_ms_per_step", "at_stake_percent",
        "threshold_percent", "occurrences", "fix"}},
  };
  return tables;
}

// A JSON scalar as a CSV field: strings quoted when needed, numbers as the JSON writes them (the
// shortest text that reads back as the same double), null as "".
void AppendJsonField(std::string* line, const nlohmann::ordered_json& value) {
  if (value.is_string()) {
    AppendCsvField(line, value.get_ref<const std::string&>());
  } else if (value.is_number_float()) {
    line->append(ExactNumber(value.get<double>()));
  } else if (!value.is_null()) {
    line->append(value.dump());
  }
}

}  // namespace

std::vector<std::string> StatsCsvTables() {
  std::vector<std::string> names = {"metrics", "ranges"};
  for (const JsonTable& table : JsonTables()) names.emplace_back(table.name);
  return names;
}

int RunStatsTableCsv(const std::string& path, std::string_view name, bool include_warmup, std::ostream& out,
                     std::ostream& err) {
  if (name == "metrics") return RunStatsCsv(path, out, err);
  if (name == "ranges") return RunRangeCsv(path, out, err);
  const JsonTable* table = nullptr;
  for (const JsonTable& t : JsonTables()) {
    if (t.name == name) table = &t;
  }
  if (table == nullptr) {
    err << "gpuprof: error: unknown --csv table '" << name << "'\n";
    return kExitUsage;
  }
  std::string line = "rank";
  for (std::string_view field : table->fields) line += "," + std::string(field);
  out << line << "\n";
  return ForEachCsvDb(
      path, table->what, err,
      [&](const db::ProfileDbFile& file, const db::ProfileReader& reader, std::string* absent) -> Status {
        nlohmann::ordered_json rows;
        std::optional<std::int64_t> rank;
        if (table->name == "findings") {
          db::FindingsOptions options;
          options.include_warmup = include_warmup;
          GPUPROF_ASSIGN_OR_RETURN(db::FindingsReport findings, db::ComputeFindings(reader, file, options));
          GPUPROF_ASSIGN_OR_RETURN(rank, db::DbRank(reader));
          rows = FindingsJson(findings)["findings"];
          *absent = findings.absent;
        } else {
          // Every row: the top of every table is all of it.
          GPUPROF_ASSIGN_OR_RETURN(db::ProfileStats stats,
                                   db::ComputeStats(reader, db::StatsOptions{static_cast<std::size_t>(-1)}));
          rank = stats.rank;
          rows = table->name == "ops"       ? OpsJson(stats)
                 : table->name == "kernels" ? KernelsJson(stats)
                                            : StepsJson(stats);
          *absent = table->name == "ops"       ? stats.ops_absent
                    : table->name == "kernels" ? stats.kernels_absent
                                               : stats.steps_absent;
          if (!rows.empty()) absent->clear();
        }
        const std::string rank_text = RankText(rank, file);
        for (const nlohmann::ordered_json& row : rows) {
          line = rank_text;
          for (std::string_view field : table->fields) {
            line += ",";
            AppendJsonField(&line, row[std::string(field)]);
          }
          out << line << "\n";
        }
        return OkStatus();
      });
}

// `stats --csv`: every GPUPROF_REPLAY_METRIC row of every DB under PATH, one header.
int RunStatsCsv(const std::string& path, std::ostream& out, std::ostream& err) {
  out << kMetricCsvHeader << "\n";
  std::string line;
  return ForEachCsvDb(
      path, "counter values", err,
      [&](const db::ProfileDbFile& file, const db::ProfileReader& reader, std::string* absent) {
        return db::ForEachReplayMetric(
            reader,
            [&](const db::ReplayMetricRow& row) {
              line = RankText(row.rank, file) + "," + std::to_string(row.kernel_id) + ",";
              AppendCsvField(&line, row.kernel);
              line += "," + std::to_string(row.launch_index) + ",";
              AppendCsvField(&line, row.metric);
              line += ",";
              AppendCsvField(&line, row.unit);
              line += ",";
              if (row.value.has_value()) line += ExactNumber(*row.value);
              line += "," + std::to_string(row.passes) + "\n";
              out << line;
            },
            absent);
      });
}

// `stats --csv=ranges`: every launch of every replayed range under PATH (db/range_stats.h), one header.
int RunRangeCsv(const std::string& path, std::ostream& out, std::ostream& err) {
  out << kRangeCsvHeader << "\n";
  std::string line;
  return ForEachCsvDb(
      path, "range replay results", err,
      [&](const db::ProfileDbFile& file, const db::ProfileReader& reader, std::string* absent) -> Status {
        GPUPROF_ASSIGN_OR_RETURN(std::optional<std::int64_t> rank, db::DbRank(reader));
        const std::string rank_text = RankText(rank, file);
        GPUPROF_ASSIGN_OR_RETURN(
            db::RangeScanSummary summary, db::ForEachRangeKernel(reader, {}, [&](const db::RangeKernel& k) {
              line = rank_text + "," + std::to_string(k.device) + "," + std::to_string(k.range_id) + "," +
                     std::to_string(k.place) + "," + std::to_string(k.kernel_id) + ",";
              AppendCsvField(&line, k.kernel);
              line += std::string(k.replayed ? ",1," : ",0,");
              AppendCsvField(&line, k.decline_reason);
              line += "," + std::to_string(k.passes) + ",";
              if (k.median_ns.has_value()) {
                line += std::to_string(*k.median_ns) + "," + std::to_string(k.min_ns) + "," +
                        std::to_string(k.max_ns);
              } else {
                line += ",,";
              }
              line += "," + OptionalNumber(k.spread_pct) + "," + OptionalNumber(k.compute_pct) + "," +
                      OptionalNumber(k.memory_pct) + "," + OptionalNumber(k.occupancy_pct) + ",";
              if (k.bottleneck != db::Bottleneck::kUnknown) line += db::BottleneckName(k.bottleneck);
              line += "," + OptionalNumber(k.flops) + "," + OptionalNumber(k.dram_bytes) + "," +
                      OptionalNumber(k.duration_ns) + "\n";
              out << line;
            }));
        *absent = summary.absent;
        return OkStatus();
      });
}

}  // namespace gpuprof::cli
