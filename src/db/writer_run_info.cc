// What Finalize records about the run itself: the one-per-run tables (RANK_DEVICE_MAP,
// SESSION_TIME_INFO, NPU_INFO, HOST_INFO, META_DATA's gpuprof rows) and profiler_info[_<rank>].json.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/hash.h"
#include "base/json.h"
#include "db/lost_records.h"
#include "db/schema.h"
#include "db/writer_impl.h"
#include "db/writer_rows.h"

#ifndef GPUPROF_VERSION_STRING
#define GPUPROF_VERSION_STRING "unknown"
#endif

namespace gpuprof::db::internal {

// META_DATA's parallel_group_info and distributed_args (see WriteRunTables), also the content of
// profiler_metadata.json. No pp_info: pipeline stages are not recorded, and msprof-analyze's
// pp_chart reads pp_info's "pp_type" with .lower(), so "{}" made it log an AttributeError; without
// the row it says that pp_info is not known. gpuprof records no group but the default one, which
// holds every rank, so a distributed job is described as data parallelism over all its ranks
// (msprof-analyze's step trace then gives each rank its data-parallel index).
std::vector<std::pair<std::string_view, std::string>> DistributedMetaData(const trace::RunInfo& run) {
  std::string groups = "{}";
  std::string args = "{}";
  if (run.world_size > 0 && run.rank >= 0) {
    std::string ranks;
    for (std::int32_t r = 0; r < run.world_size; ++r) ranks += (r ? ", " : "") + std::to_string(r);
    groups = "{\"" + std::string(kDefaultGroupName) + "\": {\"group_name\": \"" +
             std::string(kDefaultGroupName) + "\", \"group_rank\": " + std::to_string(run.rank) +
             ", \"global_ranks\": [" + ranks + "]}}";
    const std::string world = std::to_string(run.world_size);
    args = "{\"world_size\": " + world + ", \"rank\": " + std::to_string(run.rank) +
           ", \"data_parallel_size\": " + world +
           ", \"tensor_model_parallel_size\": 1, \"pipeline_model_parallel_size\": 1}";
  }
  return {{"parallel_group_info", groups}, {"distributed_args", args}};
}

std::string ProfilerMetadataJson(const trace::RunInfo& run) {
  std::string out = "{";
  for (const auto& [name, value] : DistributedMetaData(run)) {
    out += (out.size() > 1 ? ",\n  \"" : "\n  \"") + std::string(name) + "\": " + value;
  }
  return out + "\n}\n";
}

namespace {

// A stable id for this host: the hash of /etc/machine-id, or of the hostname where there is none.
std::string HostUid(const std::string& hostname) {
  std::string source;
  std::ifstream in("/etc/machine-id");
  if (in) std::getline(in, source);
  if (source.empty()) source = hostname;
  return std::to_string(base::HashBytes(source.data(), source.size()));
}

}  // namespace

// The per-run tables, one statement each, at the end of Finalize's rows.
Status RowSink::WriteRunTables(const trace::RunInfo& run, std::int64_t end_ns) {
  // Per-run tables. RANK_DEVICE_MAP: exactly one row (msprof-analyze CROSS JOINs it, §3.8).
  auto run_one = [this](Statement& s) -> Status {
    GPUPROF_RETURN_IF_ERROR(s.Run());
    ++rows_;
    return OkStatus();
  };
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement s,
                             Statement::Prepare(conn_, "INSERT INTO RANK_DEVICE_MAP VALUES (?1, ?2)"));
    s.BindInt(1, run.rank < 0 ? -1 : run.rank);
    s.BindInt(2, run.device < 0 ? -1 : run.device);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
  }
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement s,
                             Statement::Prepare(conn_, "INSERT INTO SESSION_TIME_INFO VALUES (?1, ?2)"));
    s.BindInt(1, run.start_ns);
    s.BindInt(2, end_ns);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
  }
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(conn_, "INSERT INTO NPU_INFO VALUES (?1, ?2)"));
    for (const auto& [id, name] : run.devices) {
      s.BindInt(1, id);
      s.BindStaticText(2, name);
      GPUPROF_RETURN_IF_ERROR(run_one(s));
    }
  }
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(conn_, "INSERT INTO HOST_INFO VALUES (?1, ?2)"));
    std::string uid = HostUid(run.hostname);
    s.BindStaticText(1, uid);
    s.BindStaticText(2, run.hostname);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
  }
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(conn_, "INSERT INTO META_DATA VALUES (?1, ?2)"));
    s.BindStaticText(1, kMetaGpuprofVersion);
    s.BindStaticText(2, GPUPROF_VERSION_STRING);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
    s.BindStaticText(1, kMetaGpuprofConfig);
    s.BindStaticText(2, run.config_json);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
    // torch_npu's distributed rows, which msprof-analyze's ep_load_balance and
    // computational_op_masking read (json.loads; a missing row fails them): what is known of the
    // job, "{}" when it is not distributed. The default group holds every rank; its key is
    // COMMUNICATION_OP.groupName's value (computational_op_masking joins on it). Subgroups are not
    // recorded; pipeline stages neither, so there is no pp_info row (DistributedMetaData).
    // Always, zeros included: the row says the losses were counted (a DB without it says nothing).
    const std::string lost = EncodeLostRecords(run.lost_records);
    s.BindStaticText(1, kMetaLostRecords);
    s.BindStaticText(2, lost);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
    if (!thread_names_.empty()) {
      const std::string names = EncodeThreadNames(thread_names_);
      s.BindStaticText(1, kMetaThreadNames);
      s.BindStaticText(2, names);
      GPUPROF_RETURN_IF_ERROR(run_one(s));
    }
    const std::vector<std::pair<std::string_view, std::string>> distributed = DistributedMetaData(run);
    for (const auto& [name, value] : distributed) {
      s.BindStaticText(1, name);
      s.BindStaticText(2, value);
      GPUPROF_RETURN_IF_ERROR(run_one(s));
    }
  }
  return OkStatus();
}

std::string ProfilerInfoJson(const trace::RunInfo& run, const OutputLayout& layout, std::int64_t end_ns) {
  // The configuration is embedded as given when it is a JSON object, else as a JSON string.
  std::string_view config = run.config_json;
  std::size_t first = config.find_first_not_of(" \t\r\n");
  std::string config_value = config.empty() || first == std::string_view::npos ? "{}"
                             : config[first] == '{'                            ? std::string(config)
                                                                               : base::JsonQuote(config);
  std::ostringstream out;
  out << "{\n"
      << "  \"config\": " << config_value << ",\n"
      << "  \"rank_id\": " << run.rank << ",\n"
      << "  \"device_id\": " << run.device << ",\n"
      << "  \"host_name\": " << base::JsonQuote(run.hostname) << ",\n"
      << "  \"pid\": " << run.pid << ",\n"
      << "  \"start_ns\": " << run.start_ns << ",\n"
      << "  \"end_ns\": " << end_ns << ",\n"
      << "  \"db\": "
      << base::JsonQuote(std::filesystem::path(layout.db_path).lexically_relative(layout.run_dir).string())
      << ",\n"
      << "  \"gpuprof_version\": " << base::JsonQuote(GPUPROF_VERSION_STRING) << "\n"
      << "}\n";
  return out.str();
}

}  // namespace gpuprof::db::internal
