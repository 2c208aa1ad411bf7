// `gpuprof export` (perfetto_export.h): the SQL side of the export: which columns each table has
// (so a DB from another writer version still exports), STRING_IDS joins, and a replayed launch's
// hardware counters looked up per slice. Internal to the export.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "db/perfetto_event.h"
#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db::perfetto_internal {

// ---- SQL helpers -------------------------------------------------------------------------------

// The columns of each table, read once, so optional columns become NULL in the SELECT list
// instead of failing the statement on a DB from another writer version.
class Schema {
 public:
  static StatusOr<Schema> Load(const ProfileReader& reader, const std::vector<std::string_view>& tables) {
    Schema schema;
    for (std::string_view table : tables) {
      GPUPROF_ASSIGN_OR_RETURN(std::vector<ColumnInfo> columns, reader.Columns(table));
      std::set<std::string> names;
      std::size_t keys = 0;
      bool id_is_key = false;
      for (ColumnInfo& column : columns) {
        keys += column.primary_key ? 1 : 0;
        id_is_key = id_is_key || (column.primary_key && column.name == "id");
        names.insert(std::move(column.name));
      }
      if (table == "STRING_IDS") schema.unique_string_ids_ = keys == 1 && id_is_key;
      if (!names.empty()) schema.tables_.emplace(std::string(table), std::move(names));
    }
    schema.has_strings_ = schema.Has("STRING_IDS", "value");
    return schema;
  }

  bool HasTable(std::string_view table) const { return tables_.count(std::string(table)) > 0; }
  bool Has(std::string_view table, std::string_view column) const {
    auto it = tables_.find(std::string(table));
    return it != tables_.end() && it->second.count(std::string(column)) > 0;
  }
  bool HasAll(std::string_view table, const std::vector<std::string_view>& columns) const {
    return std::all_of(columns.begin(), columns.end(), [&](std::string_view c) { return Has(table, c); });
  }
  // "alias.column", or "NULL" when the table lacks it.
  std::string Col(std::string_view table, std::string_view alias, std::string_view column) const {
    return Has(table, column) ? std::string(alias) + "." + std::string(column) : "NULL";
  }
  bool has_strings() const noexcept { return has_strings_; }
  // STRING_IDS.id is its primary key (as the format declares it), so no id has two rows.
  bool unique_string_ids() const noexcept { return unique_string_ids_; }

 private:
  std::map<std::string, std::set<std::string>> tables_;
  bool has_strings_ = false;
  bool unique_string_ids_ = false;
};

// A STRING_IDS lookup for `id_expr` as a LEFT JOIN aliased `alias`: {select expression, join}.
inline std::pair<std::string, std::string> StringJoin(const Schema& schema, const std::string& id_expr,
                                                      const std::string& alias) {
  if (id_expr == "NULL") return {"NULL", ""};
  if (!schema.has_strings()) return {"CAST(" + id_expr + " AS TEXT)", ""};
  // A STRING_IDS without its primary key may hold an id twice; joined as it is, every repeat
  // multiplied the rows (an op's name, shapes and dtypes each k times: k^3 events). Each id then
  // resolves once, to its smallest value (`gpuprof check` names the repeated ids).
  const std::string strings = schema.unique_string_ids()
                                  ? "STRING_IDS"
                                  : "(SELECT id, MIN(value) AS value FROM STRING_IDS GROUP BY id)";
  return {alias + ".value", " LEFT JOIN " + strings + " " + alias + " ON " + alias + ".id = " + id_expr};
}

// ---- A replayed launch's hardware counters, as slice args ----------------------------------------

// Looks up one launch's GPUPROF_REPLAY_METRIC rows (through GpuprofReplayMetricIndex) and its
// counterStatus, for the slices of that launch: what is read per slice is one launch's metrics,
// so memory stays bounded. A DB without the table or the column (written before hardware
// counters) adds nothing.
class ReplayCounters {
 public:
  Status Prepare(const ProfileReader& reader, const Schema& schema) {
    *this = {};
    if (!schema.Has("GPUPROF_REPLAY_KERNEL", "id")) return OkStatus();
    if (schema.HasAll("GPUPROF_REPLAY_METRIC", {"kernelId", "name", "unit", "value"})) {
      auto [name, name_join] = StringJoin(schema, "m.name", "mn");
      auto [unit, unit_join] = StringJoin(schema, "m.unit", "mu");
      GPUPROF_ASSIGN_OR_RETURN(
          metrics_, reader.Prepare("SELECT " + name + ", " + unit + ", m.value FROM GPUPROF_REPLAY_METRIC m" +
                                   name_join + unit_join + " WHERE m.kernelId = ?1 ORDER BY m.rowid"));
      has_metrics_ = true;
    }
    if (schema.Has("GPUPROF_REPLAY_KERNEL", "counterStatus")) {
      GPUPROF_ASSIGN_OR_RETURN(
          status_, reader.Prepare("SELECT counterStatus FROM GPUPROF_REPLAY_KERNEL WHERE id = ?1 AND "
                                  "counterStatus IS NOT NULL AND counterStatus != ''"));
      has_status_ = true;
    }
    return OkStatus();
  }

  // An SQL condition on GPUPROF_REPLAY_KERNEL's columns: the launches with something to add; ""
  // when no launch can have any.
  std::string LaunchFilter() const {
    std::string filter;
    if (has_metrics_) filter = "id IN (SELECT kernelId FROM GPUPROF_REPLAY_METRIC)";
    if (has_status_) {
      filter +=
          (filter.empty() ? "" : " OR ") + std::string("(counterStatus IS NOT NULL AND counterStatus != '')");
    }
    return filter;
  }

  // Adds "counter status" (when set) and "metrics": {"<name> (<unit>)": value, ...} (when any) to
  // the args being written.
  Status AppendArgs(std::int64_t kernel_id, Event* event) {
    if (has_status_) {
      status_.Reset();
      status_.BindInt(1, kernel_id);
      GPUPROF_ASSIGN_OR_RETURN(bool row, status_.Step());
      if (row) event->Str("counter status", status_.Text(0));
    }
    if (!has_metrics_) return OkStatus();
    metrics_.Reset();
    metrics_.BindInt(1, kernel_id);
    bool any = false;
    std::string key;
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, metrics_.Step());
      if (!row) break;
      if (metrics_.IsNull(2)) continue;  // a NaN the writer was given
      if (!any) event->BeginObject("metrics");
      any = true;
      key.assign(metrics_.IsNull(0) ? std::string_view("[unnamed metric]") : metrics_.Text(0));
      if (!metrics_.IsNull(1) && !metrics_.Text(1).empty()) {
        key.append(" (");
        key.append(metrics_.Text(1));
        key.append(")");
      }
      event->Double(key, metrics_.Double(2));
    }
    if (any) event->EndObject();
    return OkStatus();
  }

 private:
  Query metrics_;
  Query status_;
  bool has_metrics_ = false;
  bool has_status_ = false;
};

}  // namespace gpuprof::db::perfetto_internal
