#include "db/collected.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "db/device_work.h"
#include "db/lost_records.h"
#include "db/plausible.h"
#include "db/stats.h"
#include "db/task_op_link.h"

namespace gpuprof::db {
namespace {

// PYTORCH_API.type of torch ops (ENUM_API_TYPE 'op'), as stats.cc reads them.
constexpr std::int64_t kApiTypeOp = 50001;
// The program's frames shown per stack: enough to name the line and its caller or two.
constexpr std::size_t kStackFrames = 3;
// The domain of the nn.Module ranges (python/gpuprof/profiler.py, msprof-analyze's module_statistic).
constexpr std::string_view kModuleDomain = "Module";

Status ReadLost(const ProfileReader& reader, CollectedStats* out) {
  GPUPROF_ASSIGN_OR_RETURN(bool has_meta, reader.HasColumns("META_DATA", {"name", "value"}));
  if (!has_meta) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(Query query,
                           reader.Prepare("SELECT value FROM META_DATA WHERE name = ?1 LIMIT 1"));
  query.BindText(1, kMetaLostRecords);
  GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
  if (!row) return OkStatus();
  StatusOr<LostRecords> lost = DecodeLostRecords(query.Text(0));
  if (!lost.ok()) {
    out->lost_problem = lost.status().message();
    return OkStatus();
  }
  out->lost_counted = true;
  for (const auto& [source, records] : *lost) {
    if (records > 0) out->lost.push_back({source, LostRecordsSourceText(source), records});
  }
  return OkStatus();
}

Status ReadStacks(const ProfileReader& reader, StringLookup& strings, const CollectedOptions& options,
                  CollectedStats* out) {
  if (options.top_ops.empty()) {
    out->stacks_absent = "no host ops";
    return OkStatus();
  }
  GPUPROF_ASSIGN_OR_RETURN(bool has_chains,
                           reader.HasColumns("PYTORCH_CALLCHAINS", {"id", "stack", "stackDepth"}));
  GPUPROF_ASSIGN_OR_RETURN(
      bool has_ids, reader.HasColumns("PYTORCH_API", {"name", "callchainId", "type", "startNs", "endNs"}));
  if (!has_chains || !has_ids) {
    out->stacks_absent = "no call stacks in this profile";
    return OkStatus();
  }
  // Per (name id, stack): calls and time. Few groups: op names times the stacks each is called from.
  GPUPROF_ASSIGN_OR_RETURN(
      Query groups,
      reader.Prepare(
          "SELECT name, callchainId, COUNT(*), SUM(CAST(endNs AS INTEGER) - CAST(startNs AS INTEGER)) "
          "FROM PYTORCH_API WHERE callchainId IS NOT NULL AND (type IS NULL OR type = " +
          std::to_string(kApiTypeOp) + ") AND " +
          PlausibleSpanSql("startNs", "endNs", options.session_start_ns, options.session_end_ns) +
          " GROUP BY name, callchainId"));
  std::map<std::string, std::size_t> wanted;  // display name -> place in top_ops
  for (std::size_t i = 0; i < options.top_ops.size(); ++i) wanted.emplace(options.top_ops[i], i);
  std::unordered_map<std::int64_t, std::optional<std::size_t>> place_of_name;  // name id -> place
  std::vector<OpStackStat> found(options.top_ops.size());
  std::vector<std::int64_t> chain(options.top_ops.size(), -1);
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, groups.Step());
    if (!row) break;
    const std::optional<std::int64_t> name_id = groups.OptionalInt(0);
    const std::int64_t key = name_id.value_or(-1);
    auto known = place_of_name.find(key);
    if (known == place_of_name.end()) {
      GPUPROF_ASSIGN_OR_RETURN(std::string name, strings.Get(name_id));
      auto it = wanted.find(OpDisplayName(name));
      known = place_of_name.emplace(key, it == wanted.end() ? std::nullopt : std::optional(it->second)).first;
    }
    if (!known->second.has_value()) continue;
    OpStackStat& stat = found[*known->second];
    const std::uint64_t calls = static_cast<std::uint64_t>(groups.Int(2));
    const std::int64_t total = groups.Int(3);
    stat.op_calls += calls;
    if (chain[*known->second] < 0 ||
        std::make_pair(total, calls) > std::make_pair(stat.total_ns, stat.calls)) {
      chain[*known->second] = groups.Int(1);
      stat.calls = calls;
      stat.total_ns = total;
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(
      Query frames, reader.Prepare("SELECT stack FROM PYTORCH_CALLCHAINS WHERE id = ?1 ORDER BY stackDepth"));
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (chain[i] < 0) continue;
    OpStackStat& stat = found[i];
    stat.op = options.top_ops[i];
    frames.Reset();
    frames.BindInt(1, chain[i]);
    std::vector<std::string> all;
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, frames.Step());
      if (!row) break;
      GPUPROF_ASSIGN_OR_RETURN(std::string frame, strings.Get(frames.OptionalInt(0)));
      all.push_back(std::move(frame));
    }
    for (const std::string& frame : all) {
      if (stat.frames.size() < kStackFrames && !LibraryFrame(frame)) stat.frames.push_back(ShortFrame(frame));
    }
    for (std::size_t f = 0; stat.frames.empty() && f < all.size() && f < kStackFrames; ++f) {
      stat.frames.push_back(ShortFrame(all[f]));
    }
    out->op_stacks.push_back(std::move(stat));
  }
  if (out->op_stacks.empty()) out->stacks_absent = "no call stacks recorded for the top ops";
  return OkStatus();
}

// The per-name figures of the module sweep.
struct ModuleTotals {
  std::uint64_t calls = 0;
  std::int64_t host_ns = 0;
  std::int64_t gpu_ns = 0;
  std::uint64_t tasks = 0;
};

// A sweep over the module ranges and the linked tasks of each thread, both by time: a task counts
// for the innermost module open when its op started, and a module closing hands its device time on
// to the module around it.
class ModuleSweep {
 public:
  void Module(std::int64_t thread, std::int64_t start_ns, std::int64_t end_ns, std::int64_t name) {
    MoveTo(thread, start_ns);
    open_.push_back({end_ns, name, 0, 0});
    ModuleTotals& totals = totals_[name];
    ++totals.calls;
    totals.host_ns += std::max<std::int64_t>(0, end_ns - start_ns);
  }
  void Task(std::int64_t thread, std::int64_t op_start_ns, std::int64_t duration_ns) {
    MoveTo(thread, op_start_ns);
    if (open_.empty()) return;
    open_.back().gpu_ns += std::max<std::int64_t>(0, duration_ns);
    ++open_.back().tasks;
  }
  void Finish() {
    while (!open_.empty()) Pop();
  }
  const std::unordered_map<std::int64_t, ModuleTotals>& totals() const noexcept { return totals_; }

 private:
  struct Open {
    std::int64_t end_ns;
    std::int64_t name;
    std::int64_t gpu_ns;
    std::uint64_t tasks;
  };
  void MoveTo(std::int64_t thread, std::int64_t time_ns) {
    if (thread_ != thread) Finish();
    thread_ = thread;
    while (!open_.empty() && open_.back().end_ns < time_ns) Pop();
  }
  void Pop() {
    const Open closed = open_.back();
    open_.pop_back();
    ModuleTotals& totals = totals_[closed.name];
    totals.gpu_ns += closed.gpu_ns;
    totals.tasks += closed.tasks;
    if (!open_.empty()) {
      open_.back().gpu_ns += closed.gpu_ns;
      open_.back().tasks += closed.tasks;
    }
  }
  std::optional<std::int64_t> thread_;
  std::vector<Open> open_;
  std::unordered_map<std::int64_t, ModuleTotals> totals_;
};

Status ReadModules(const ProfileReader& reader, StringLookup& strings, const CollectedOptions& options,
                   CollectedStats* out) {
  GPUPROF_ASSIGN_OR_RETURN(bool has_ranges,
                           reader.HasColumns("MSTX_EVENTS", {"startNs", "endNs", "eventType", "message",
                                                             "globalTid", "domainId"}));
  if (!has_ranges || !reader.HasStringValues()) {
    out->modules_absent = "no module ranges in this profile (record them with --with-modules)";
    return OkStatus();
  }
  const std::string plausible =
      PlausibleSpanSql("m.startNs", "m.endNs", options.session_start_ns, options.session_end_ns);
  GPUPROF_ASSIGN_OR_RETURN(
      Query modules,
      reader.Prepare(
          "SELECT m.globalTid, CAST(m.startNs AS INTEGER) AS s, CAST(m.endNs AS INTEGER) AS e, m.message "
          "FROM MSTX_EVENTS m WHERE m.eventType = 2 AND m.domainId IN (SELECT id FROM STRING_IDS "
          "WHERE value = ?1) AND " +
          plausible + " ORDER BY m.globalTid, s, e DESC"));
  modules.BindText(1, kModuleDomain);

  // The tasks linked to the op that launched them (task_op_link.h), by the op's thread and start.
  GPUPROF_ASSIGN_OR_RETURN(bool has_tasks, reader.HasColumns("TASK", {"connectionId", "startNs", "endNs"}));
  GPUPROF_ASSIGN_OR_RETURN(bool has_links, reader.HasColumns("CONNECTION_IDS", {"id", "connectionId"}));
  GPUPROF_ASSIGN_OR_RETURN(
      bool has_ops, reader.HasColumns("PYTORCH_API", {"startNs", "globalTid", "name", "connectionId"}));
  // (op thread, op start, task duration) of every linked task, by thread and start.
  struct LinkedTask {
    std::int64_t tid;
    std::int64_t op_start;
    std::int64_t duration;
  };
  std::vector<LinkedTask> linked;
  if (has_tasks && has_links && has_ops) {
    GPUPROF_ASSIGN_OR_RETURN(const TaskOpLinks links, TaskOpLinks::Read(reader));
    GPUPROF_ASSIGN_OR_RETURN(const std::string device_work, DeviceWorkTaskSql(reader, "t"));
    GPUPROF_ASSIGN_OR_RETURN(
        Query query,
        reader.Prepare(
            "SELECT t.connectionId, CAST(t.startNs AS INTEGER), CAST(t.endNs AS INTEGER) FROM TASK t "
            "WHERE " +
            PlausibleSpanSql("t.startNs", "t.endNs", options.session_start_ns, options.session_end_ns) +
            " AND " + device_work));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) break;
      const LinkedOp* op = links.Find(query.Int(0));
      if (op == nullptr || !op->start_ns.has_value()) continue;
      linked.push_back({op->tid, *op->start_ns, query.Int(2) - query.Int(1)});
    }
    std::stable_sort(linked.begin(), linked.end(), [](const LinkedTask& a, const LinkedTask& b) {
      return std::make_pair(a.tid, a.op_start) < std::make_pair(b.tid, b.op_start);
    });
  }

  ModuleSweep sweep;
  std::size_t next = 0;
  bool any_task = false;
  // Tasks whose op started before (thread, time) are swept first; a task whose op starts with a
  // module counts inside it.
  auto tasks_before = [&](std::int64_t thread, std::int64_t time_ns) -> Status {
    while (next < linked.size() &&
           std::make_pair(linked[next].tid, linked[next].op_start) < std::make_pair(thread, time_ns)) {
      sweep.Task(linked[next].tid, linked[next].op_start, linked[next].duration);
      any_task = true;
      ++next;
    }
    return OkStatus();
  };
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, modules.Step());
    if (!row) break;
    GPUPROF_RETURN_IF_ERROR(tasks_before(modules.Int(0), modules.Int(1)));
    sweep.Module(modules.Int(0), modules.Int(1), modules.Int(2), modules.OptionalInt(3).value_or(-1));
  }
  if (sweep.totals().empty()) {
    out->modules_absent = "no module ranges in this profile (record them with --with-modules)";
    return OkStatus();
  }
  for (; next < linked.size(); ++next) {
    sweep.Task(linked[next].tid, linked[next].op_start, linked[next].duration);
    any_task = true;
  }
  sweep.Finish();
  out->module_gpu = any_task;

  std::map<std::string, ModuleTotals> by_name;
  for (const auto& [id, totals] : sweep.totals()) {
    std::optional<std::int64_t> name_id;
    if (id >= 0) name_id = id;
    GPUPROF_ASSIGN_OR_RETURN(std::string name, strings.Get(name_id));
    ModuleTotals& merged = by_name[name];
    merged.calls += totals.calls;
    merged.host_ns += totals.host_ns;
    merged.gpu_ns += totals.gpu_ns;
    merged.tasks += totals.tasks;
  }
  out->module_names = by_name.size();
  std::vector<ModuleStat> all;
  all.reserve(by_name.size());
  for (const auto& [name, t] : by_name) all.push_back({name, t.calls, t.host_ns, t.gpu_ns, t.tasks});
  const std::size_t n = std::min(options.top_modules, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(),
                    [](const ModuleStat& a, const ModuleStat& b) {
                      return std::make_pair(-a.host_ns, a.name) < std::make_pair(-b.host_ns, b.name);
                    });
  all.resize(n);
  out->top_modules = std::move(all);
  return OkStatus();
}

}  // namespace

std::string ShortFrame(std::string_view frame) {
  // "path(line): function"
  const std::size_t colon = frame.find("): ");
  if (colon == std::string_view::npos) return std::string(frame);
  const std::size_t open = frame.rfind('(', colon);
  if (open == std::string_view::npos) return std::string(frame);
  std::string_view path = frame.substr(0, open);
  const std::size_t slash = path.find_last_of('/');
  if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
  return std::string(path) + ":" + std::string(frame.substr(open + 1, colon - open - 1)) + " " +
         std::string(frame.substr(colon + 3));
}

bool LibraryFrame(std::string_view frame) {
  if (frame.empty() || frame.front() == '<') return true;  // <frozen runpy>, <string>
  for (std::string_view library : {"/site-packages/", "/dist-packages/", "/lib/python3", "/torch/"}) {
    if (frame.find(library) != std::string_view::npos) return true;
  }
  return false;
}

StatusOr<CollectedStats> ComputeCollected(const ProfileReader& reader, StringLookup& strings,
                                          const CollectedOptions& options) {
  CollectedStats out;
  GPUPROF_RETURN_IF_ERROR(ReadLost(reader, &out));
  GPUPROF_RETURN_IF_ERROR(ReadStacks(reader, strings, options, &out));
  GPUPROF_RETURN_IF_ERROR(ReadModules(reader, strings, options, &out));
  return out;
}

}  // namespace gpuprof::db
