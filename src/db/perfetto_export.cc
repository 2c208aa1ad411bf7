#include "db/perfetto_export.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "db/db_constants.h"
#include "db/output_file.h"
#include "db/perfetto_exporter.h"
#include "db/thread_names.h"

namespace gpuprof::db {
namespace {

using perfetto_internal::AppendInt;
using perfetto_internal::AppendUint;
using perfetto_internal::DbContext;
using perfetto_internal::Exporter;

constexpr std::int64_t kNsPerSecond = 1'000'000'000;

// The earliest session start (or, without SESSION_TIME_INFO, the earliest op or task), floored to
// a whole second. 0 when a DB has no times at all.
StatusOr<std::optional<std::int64_t>> EarliestTime(const ProfileReader& reader) {
  std::optional<std::int64_t> earliest;
  auto consider = [&](std::string_view table, std::string_view sql) -> Status {
    if (!reader.HasTable(table)) return OkStatus();
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare(sql));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row && !query.IsNull(0) && query.Int(0) > 0)
      earliest = std::min(earliest.value_or(query.Int(0)), query.Int(0));
    return OkStatus();
  };
  GPUPROF_ASSIGN_OR_RETURN(bool session, reader.HasColumns("SESSION_TIME_INFO", {"startTimeNs"}));
  if (session)
    GPUPROF_RETURN_IF_ERROR(consider("SESSION_TIME_INFO", "SELECT MIN(startTimeNs) FROM SESSION_TIME_INFO"));
  if (!earliest.has_value()) {
    // TASK's index (startNs, globalTaskId) makes its MIN a lookup; PYTORCH_API is one scan.
    GPUPROF_ASSIGN_OR_RETURN(bool task, reader.HasColumns("TASK", {"startNs"}));
    if (task) GPUPROF_RETURN_IF_ERROR(consider("TASK", "SELECT MIN(startNs) FROM TASK"));
    GPUPROF_ASSIGN_OR_RETURN(bool ops, reader.HasColumns("PYTORCH_API", {"startNs"}));
    if (ops)
      GPUPROF_RETURN_IF_ERROR(
          consider("PYTORCH_API", "SELECT MIN(CAST(startNs AS INTEGER)) FROM PYTORCH_API"));
  }
  return earliest;
}

StatusOr<DbContext> LoadContext(const ProfileReader& reader, const ProfileDbFile& file, std::size_t index) {
  DbContext db;
  db.index = index;
  std::optional<std::int64_t> rank;
  GPUPROF_ASSIGN_OR_RETURN(bool has_rank, reader.HasColumns("RANK_DEVICE_MAP", {"rankId"}));
  if (has_rank) {
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT rankId FROM RANK_DEVICE_MAP LIMIT 1"));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row && !query.IsNull(0) && query.Int(0) >= 0) rank = query.Int(0);
  }
  if (!rank.has_value() && file.rank.has_value()) rank = *file.rank;
  db.label = rank.has_value() ? "rank " + std::to_string(*rank) : "db " + std::to_string(index);
  GPUPROF_ASSIGN_OR_RETURN(bool has_host, reader.HasColumns("HOST_INFO", {"hostName"}));
  if (has_host) {
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT hostName FROM HOST_INFO LIMIT 1"));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row) db.host_name = std::string(query.Text(0));
  }
  GPUPROF_ASSIGN_OR_RETURN(bool has_npu, reader.HasColumns("NPU_INFO", {"id", "name"}));
  if (has_npu) {
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT id, name FROM NPU_INFO"));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) break;
      db.device_names.emplace(query.Int(0), std::string(query.Text(1)));
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(bool has_meta, reader.HasColumns("META_DATA", {"name", "value"}));
  if (has_meta) {
    GPUPROF_ASSIGN_OR_RETURN(Query query,
                             reader.Prepare("SELECT value FROM META_DATA WHERE name = ?1 LIMIT 1"));
    query.BindText(1, kMetaThreadNames);
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row && !query.IsNull(0)) {
      StatusOr<ThreadNames> names = DecodeThreadNames(query.Text(0));
      if (names.ok()) {
        db.thread_names = std::move(names).value();
      } else {
        db.thread_names_problem = names.status().message();
      }
    }
  }
  return db;
}

}  // namespace

std::vector<std::string_view> ExportFormats() { return {kPerfettoFormat}; }

void AppendMicros(std::string* out, std::int64_t ns) {
  auto magnitude = static_cast<std::uint64_t>(ns);
  if (ns < 0) {
    out->push_back('-');
    magnitude = ~magnitude + 1;  // two's complement negation, defined for INT64_MIN too
  }
  AppendUint(out, magnitude / 1000);
  const auto fraction = static_cast<unsigned>(magnitude % 1000);
  out->push_back('.');
  out->push_back(static_cast<char>('0' + fraction / 100));
  out->push_back(static_cast<char>('0' + fraction / 10 % 10));
  out->push_back(static_cast<char>('0' + fraction % 10));
}

StatusOr<ExportSummary> ExportPerfettoTrace(const std::vector<ProfileDbFile>& dbs,
                                            const std::string& output_path, base::Progress* progress) {
  if (dbs.empty()) return InvalidArgumentError("export: no profile database given");
  if (output_path.empty()) return InvalidArgumentError("export: no output path given (-o trace.json)");

  for (const ProfileDbFile& file : dbs) {
    std::error_code ec;
    if (std::filesystem::equivalent(file.path, output_path, ec)) {
      return InvalidArgumentError("export: the output " + output_path + " is the input database " +
                                  file.path + "; choose another -o");
    }
  }
  // What -o names is checked first (a directory or a dangling link is refused before any work); every
  // DB is opened (and so validated) before the output is created.
  GPUPROF_RETURN_IF_ERROR(OutputFile::ClassifyOutput(output_path, "trace.json").status());
  std::vector<std::unique_ptr<ProfileReader>> readers;
  std::optional<std::int64_t> earliest;
  for (const ProfileDbFile& file : dbs) {
    GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<ProfileReader> reader, ProfileReader::Open(file.path));
    GPUPROF_ASSIGN_OR_RETURN(std::optional<std::int64_t> first, EarliestTime(*reader));
    if (first.has_value()) earliest = std::min(earliest.value_or(*first), *first);
    readers.push_back(std::move(reader));
  }

  ExportSummary summary;
  summary.dbs = dbs.size();
  const std::int64_t value = earliest.value_or(0);
  summary.time_base_ns = value - ((value % kNsPerSecond) + kNsPerSecond) % kNsPerSecond;

  GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file, OutputFile::Create(output_path, "trace.json"));
  std::string* out = file->buffer();
  // displayTimeUnit is a display hint only (ts and dur stay microseconds, as in catapult and
  // current trace processors); first, because older trace processors ignore it after the events.
  out->append(R"({"displayTimeUnit":"ns","otherData":{"producer":"gpuprof export","gpuprof_time_base_ns":)");
  AppendInt(out, summary.time_base_ns);
  out->append(",\"ts_unit\":\"microseconds since gpuprof_time_base_ns (Unix epoch ns)\"},\"traceEvents\":[");

  Exporter exporter(file.get(), summary.time_base_ns, &summary, progress);
  for (std::size_t i = 0; i < readers.size(); ++i) {
    GPUPROF_ASSIGN_OR_RETURN(DbContext db, LoadContext(*readers[i], dbs[i], i));
    if (!db.thread_names_problem.empty()) {
      summary.notes.push_back(db.label + ": " + db.thread_names_problem + "; threads keep their numbers");
    }
    GPUPROF_RETURN_IF_ERROR(exporter.ExportDb(*readers[i], db));
  }
  exporter.Finish();
  out->append("\n]}\n");
  GPUPROF_ASSIGN_OR_RETURN(summary.bytes, file->Commit());
  return summary;
}

}  // namespace gpuprof::db