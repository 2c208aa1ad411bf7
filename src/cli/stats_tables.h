// The text tables of `gpuprof stats` (db_commands.h): one profile's ops, kernels, memory, steps, GC
// and replayed launches, and the cluster summary across rank DBs. Internal to the CLI; the "Kernel
// replay" part, which `gpuprof replay` prints too, is db_commands.h's PrintReplayStats.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

namespace gpuprof::db {
struct ClusterStats;
struct FindingsReport;
struct ProfileStats;
}  // namespace gpuprof::db

namespace gpuprof::cli {

// One profile's sections, under its path; its findings first when `findings` is not null.
void PrintStats(std::ostream& out, const db::ProfileStats& stats,
                const db::FindingsReport* findings = nullptr);

// The cluster summary `stats` prints first for two or more DBs (db/cluster_stats.h).
void PrintCluster(std::ostream& out, const std::string& path, const db::ClusterStats& cluster,
                  std::size_t unreadable, std::size_t top);

}  // namespace gpuprof::cli
