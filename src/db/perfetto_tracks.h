// `gpuprof export` (perfetto_export.h): the processes and threads (tracks) seen while streaming
// the tables, with the synthetic ids for tracks that have no real process or thread, named by
// metadata events at the end. Internal to the export.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "db/perfetto_event.h"
#include "db/thread_names.h"

namespace gpuprof::db::perfetto_internal {

// Synthetic ids. Linux pids and tids stay below 2^22, so these never collide with real ones.
constexpr std::uint32_t kSyntheticPidBase = 1u << 24;
constexpr std::uint32_t kGcTid = 0x7fff0001u;
constexpr std::uint32_t kReplayTid = 0x7fff0002u;

// ---- Processes and threads seen while streaming; named by metadata events at the end ----------

struct DbContext {
  std::size_t index = 0;
  std::string label;  // "rank 0" or the file name
  std::string host_name;
  std::map<std::int64_t, std::string> device_names;  // NPU_INFO
  ThreadNames thread_names;                          // META_DATA gpuprof_thread_names
  std::string thread_names_problem;                  // why they could not be read ("": none)
};

class Tracks {
 public:
  std::uint32_t HostPid(const DbContext& db, std::int64_t real_pid) {
    auto key = std::make_pair(db.index, real_pid);
    auto it = host_pids_.find(key);
    if (it != host_pids_.end()) return it->second;
    std::uint32_t pid = 0;
    const bool plausible = real_pid > 0 && real_pid < static_cast<std::int64_t>(kSyntheticPidBase);
    if (plausible && used_pids_.count(static_cast<std::uint32_t>(real_pid)) == 0) {
      pid = static_cast<std::uint32_t>(real_pid);
    } else {
      pid = kSyntheticPidBase + next_synthetic_++;  // another rank's process had this pid
    }
    used_pids_.insert(pid);
    host_pids_.emplace(key, pid);
    std::string name = db.label + " pid " + std::to_string(real_pid);
    if (!db.host_name.empty()) name += " (" + db.host_name + ")";
    processes_.push_back({pid, std::move(name), SortIndex(db, 0)});
    if (!db.thread_names.empty()) thread_names_.emplace(pid, db.thread_names);
    return pid;
  }

  std::uint32_t DevicePid(const DbContext& db, std::int64_t device) {
    auto key = std::make_pair(db.index, device);
    auto it = device_pids_.find(key);
    if (it != device_pids_.end()) return it->second;
    std::uint32_t pid = kSyntheticPidBase + next_synthetic_++;
    used_pids_.insert(pid);
    device_pids_.emplace(key, pid);
    std::string name = db.label + " device " + std::to_string(device);
    auto named = db.device_names.find(device);
    if (named != db.device_names.end() && !named->second.empty()) name += " (" + named->second + ")";
    processes_.push_back({pid, std::move(name), SortIndex(db, 1)});
    return pid;
  }

  void Thread(std::uint32_t pid, std::uint32_t tid, std::string_view kind) {
    if (last_thread_ == std::make_pair(pid, tid)) return;
    last_thread_ = {pid, tid};
    auto [it, inserted] = threads_.try_emplace({pid, tid});
    if (!inserted) return;
    if (kind == "stream") {
      it->second = {"stream " + std::to_string(tid), static_cast<std::int64_t>(tid)};
    } else if (tid == kGcTid) {
      it->second = {"Python GC", std::int64_t{1} << 40};
    } else if (tid == kReplayTid) {
      it->second = {"gpuprof replay", std::int64_t{1} << 41};
    } else {
      it->second = {"thread " + std::to_string(tid), static_cast<std::int64_t>(tid)};
    }
  }

  // `pid` is a Python process: the Python package recorded its torch ops or Python functions.
  void MarkPython(std::uint32_t pid) { python_pids_.insert(pid); }

  void EmitMetadata(std::string* out, bool* first_event) {
    // A Python process's main thread (tid == pid) is the one Python names "MainThread"; torch's
    // own threads (autograd) have no Python name and keep their number.
    for (const auto& [key, pid] : host_pids_) {
      if (python_pids_.count(pid) == 0 || key.second <= 0) continue;
      auto main = threads_.find({pid, static_cast<std::uint32_t>(key.second)});
      if (main != threads_.end()) main->second.name = "MainThread";
    }
    // The names the program gave its threads (Python's threading names), where recorded.
    for (const auto& [pid, names] : thread_names_) {
      for (auto it = threads_.lower_bound({pid, 0}); it != threads_.end() && it->first.first == pid; ++it) {
        auto named = names.find(it->first.second);
        if (named != names.end() && !named->second.empty()) it->second.name = named->second;
      }
    }
    for (const Process& process : processes_) {
      {
        Event event(out, first_event, 0);
        event.Str("ph", "M")
            .Str("name", "process_name")
            .Uint("pid", process.pid)
            .BeginArgs()
            .Str("name", process.name)
            .EndArgs();
      }
      Event event(out, first_event, 0);
      event.Str("ph", "M")
          .Str("name", "process_sort_index")
          .Uint("pid", process.pid)
          .BeginArgs()
          .Int("sort_index", process.sort_index)
          .EndArgs();
    }
    for (const auto& [key, thread] : threads_) {
      {
        Event event(out, first_event, 0);
        event.Str("ph", "M")
            .Str("name", "thread_name")
            .Uint("pid", key.first)
            .Uint("tid", key.second)
            .BeginArgs()
            .Str("name", thread.name)
            .EndArgs();
      }
      Event event(out, first_event, 0);
      event.Str("ph", "M")
          .Str("name", "thread_sort_index")
          .Uint("pid", key.first)
          .Uint("tid", key.second)
          .BeginArgs()
          .Int("sort_index", thread.sort_index)
          .EndArgs();
    }
  }

 private:
  struct Process {
    std::uint32_t pid;
    std::string name;
    std::int64_t sort_index;
  };
  struct ThreadInfo {
    std::string name;
    std::int64_t sort_index = 0;
  };
  static std::int64_t SortIndex(const DbContext& db, int kind) {
    return static_cast<std::int64_t>(db.index) * 2 + kind;
  }

  std::map<std::pair<std::size_t, std::int64_t>, std::uint32_t> host_pids_;
  std::map<std::pair<std::size_t, std::int64_t>, std::uint32_t> device_pids_;
  std::set<std::uint32_t> used_pids_;
  std::uint32_t next_synthetic_ = 0;
  std::vector<Process> processes_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, ThreadInfo> threads_;
  std::map<std::uint32_t, ThreadNames> thread_names_;  // per host pid, from its DB
  std::pair<std::uint32_t, std::uint32_t> last_thread_{0, 0};
  std::set<std::uint32_t> python_pids_;
};

inline std::int64_t PidOf(std::int64_t global_tid) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(global_tid) >> 32);
}
inline std::uint32_t TidOf(std::int64_t global_tid) {
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(global_tid) & 0xffffffffu);
}

}  // namespace gpuprof::db::perfetto_internal
