// `gpuprof export` (perfetto_export.h): the exporter that streams one DB's tables as trace events.
// The table producers live in perfetto_export_host.cc (ops, API calls, op flows, marks, GC) and
// perfetto_export_device.cc (tasks, launch flows, memory counters, replay results). Internal to
// the export.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/progress.h"
#include "db/output_file.h"
#include "db/perfetto_event.h"
#include "db/perfetto_export.h"
#include "db/perfetto_schema.h"
#include "db/perfetto_tracks.h"
#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db::perfetto_internal {

class Exporter {
 public:
  Exporter(OutputFile* file, std::int64_t time_base_ns, ExportSummary* summary, base::Progress* progress)
      : file_(file), out_(file->buffer()), base_(time_base_ns), summary_(summary), progress_(progress) {}

  Status ExportDb(const ProfileReader& reader, DbContext& db) {
    GPUPROF_ASSIGN_OR_RETURN(
        Schema schema,
        Schema::Load(reader,
                     {"STRING_IDS", "PYTORCH_API", "CANN_API", "TASK", "COMPUTE_TASK_INFO", "MEMCPY_INFO",
                      "ENUM_MEMCPY_OPERATION", "CONNECTION_IDS", "MEMORY_RECORD", "MSTX_EVENTS", "GC_RECORD",
                      "GPUPROF_REPLAY_KERNEL", "GPUPROF_REPLAY_PASS", "GPUPROF_REPLAY_METRIC"}));
    GPUPROF_RETURN_IF_ERROR(counters_.Prepare(reader, schema));
    // Each part is a stage of the progress shown, counted in rows read.
    auto stage = [&](std::string_view part) {
      base::Progress::StageOf(progress_, db.label + ": " + std::string(part));
    };
    stage("ops (PYTORCH_API)");
    GPUPROF_RETURN_IF_ERROR(ExportOps(reader, schema, db));
    stage("API calls (CANN_API)");
    GPUPROF_RETURN_IF_ERROR(ExportApiCalls(reader, schema, db));
    stage("device tasks (TASK)");
    GPUPROF_RETURN_IF_ERROR(ExportTasks(reader, schema, db));
    stage("launch flows");
    GPUPROF_RETURN_IF_ERROR(ExportTaskFlows(reader, schema, db));
    stage("forward/backward flows");
    GPUPROF_RETURN_IF_ERROR(ExportOpFlows(reader, schema, db));
    stage("memory (MEMORY_RECORD)");
    GPUPROF_RETURN_IF_ERROR(ExportMemory(reader, schema, db));
    stage("marks (MSTX_EVENTS)");
    GPUPROF_RETURN_IF_ERROR(ExportMstx(reader, schema, db));
    stage("GC pauses (GC_RECORD)");
    GPUPROF_RETURN_IF_ERROR(ExportGc(reader, schema, db));
    stage("replay results");
    GPUPROF_RETURN_IF_ERROR(ExportReplay(reader, schema, db));
    counters_ = {};  // its statements belong to this DB's reader
    return OkStatus();
  }

  void Finish() {
    tracks_.EmitMetadata(out_, &first_event_);
    if (cut_.events > 0) {
      summary_->notes.push_back(std::to_string(cut_.distinct.size()) + " string(s) longer than " +
                                std::to_string(kMaxTraceStringBytes) + " bytes (the longest " +
                                std::to_string(cut_.longest_bytes) + ") were cut in " +
                                std::to_string(cut_.events) + " event(s); the DB holds them whole");
    }
  }
  bool* first_event() noexcept { return &first_event_; }

 private:
  Event NewEvent() { return {out_, &first_event_, base_, &cut_}; }

  bool Require(const Schema& schema, const DbContext& db, std::string_view table,
               const std::vector<std::string_view>& columns) {
    if (schema.HasAll(table, columns)) return true;
    summary_->notes.push_back(db.label + ": " + std::string(table) +
                              (schema.HasTable(table) ? " lacks columns this export reads" : " is absent") +
                              "; not exported");
    return false;
  }

  // Runs `sql`, calling `row(query)` per row (which may return a Status that stops the stream) and
  // flushing the buffer as it fills.
  template <typename RowFn>
  Status Stream(const ProfileReader& reader, const std::string& sql, RowFn row) {
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare(sql));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool has_row, query.Step());
      if (!has_row) break;
      base::Progress::AdvanceOf(progress_, 1);
      if constexpr (std::is_same_v<decltype(row(query)), Status>) {
        GPUPROF_RETURN_IF_ERROR(row(query));
      } else {
        row(query);
      }
      GPUPROF_RETURN_IF_ERROR(file_->MaybeFlush());
    }
    summary_->sqlite_steps +=
        static_cast<std::uint32_t>(sqlite3_stmt_status(query.get(), SQLITE_STMTSTATUS_VM_STEP, /*reset=*/0));
    return OkStatus();
  }

  // A flow: "s" on the source slice's track at its start, "f" bound to the enclosing slice on the
  // target track at the target's start. Both come from one row, so every start has its finish.
  void Flow(std::string_view category, std::uint32_t from_pid, std::uint32_t from_tid, std::int64_t from_ns,
            std::uint32_t to_pid, std::uint32_t to_tid, std::int64_t to_ns) {
    const std::uint64_t id = ++next_flow_id_;
    {
      Event start = NewEvent();
      start.Str("ph", "s").Uint("id", id).Str("cat", category).Str("name", category);
      start.Uint("pid", from_pid).Uint("tid", from_tid).Ts(from_ns);
    }
    Event finish = NewEvent();
    finish.Str("ph", "f").Str("bp", "e").Uint("id", id).Str("cat", category).Str("name", category);
    finish.Uint("pid", to_pid).Uint("tid", to_tid).Ts(to_ns);
    ++summary_->flows;
  }

  Status ExportOps(const ProfileReader& reader, const Schema& schema, DbContext& db);
  Status ExportApiCalls(const ProfileReader& reader, const Schema& schema, DbContext& db);
  Status ExportTasks(const ProfileReader& reader, const Schema& schema, DbContext& db);
  Status ExportTaskFlows(const ProfileReader& reader, const Schema& schema, DbContext& db);
  Status ExportOpFlows(const ProfileReader& reader, const Schema& schema, DbContext& db);
  Status ExportMemory(const ProfileReader& reader, const Schema& schema, DbContext& db);
  Status ExportMstx(const ProfileReader& reader, const Schema& schema, DbContext& db);
  Status ExportGc(const ProfileReader& reader, const Schema& schema, DbContext& db);
  Status ExportReplay(const ProfileReader& reader, const Schema& schema, DbContext& db);

  OutputFile* file_;
  std::string* out_;
  std::int64_t base_;
  ExportSummary* summary_;
  base::Progress* progress_;  // null: nobody watches
  Tracks tracks_;
  ReplayCounters counters_;
  bool first_event_ = true;
  std::uint64_t next_flow_id_ = 0;
  CutStrings cut_;
  std::uint64_t next_async_id_ = 0;
};

}  // namespace gpuprof::db::perfetto_internal
