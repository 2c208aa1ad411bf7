// `gpuprof diff A B`: two profiles compared step by step. Each figure is taken per considered step
// (the warm-up steps of each run, warmup.h, are left out, as in findings.h), so every delta comes with
// its spread over the steps, and a delta inside the noise is not reported as a change.
//
// Compared: the step time; each op by name and input shapes (its time per step, nested ops
// included); each kernel by name and launch shape, grid and block (its device time per step); the
// peak allocated memory; each collective by its type (allReduce, broadcast, ...: its time per step)
// and the step's communication not overlapped with compute (cluster_stats.h's split); and, when
// both profiles hold kernel replay results, each replayed kernel's pass duration (its spread over
// the passes instead of the steps: replay times a kernel apart from the steps).
//
// Thread-safety: none. Errors: the reader's Status, naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

// One figure in A and in B: its mean per considered step, its standard deviation over them, and
// whether the difference stands out of the noise (see ComparedFigure::changed).
struct ComparedFigure {
  // "step", "op", "kernel", "memory", "communication", "communication-not-overlapped", "replay"
  std::string kind;
  // The op with its shapes ("aten::mm [[64, 64], [64, 64]]"), the kernel, the collective's type
  // ("allReduce"), "step"; a replayed kernel launched as a graph node ends with " (graph node)".
  std::string name;
  std::string grid;   // kernels: the launch's grid "x,y,z" ("" when the profile does not say)
  std::string block;  // kernels: the launch's block "x,y,z"
  double a_mean = 0;  // ms per step (memory: bytes; replay: ms per pass)
  double b_mean = 0;
  double a_stddev = 0;
  double b_stddev = 0;
  std::uint64_t a_calls = 0;  // over the considered steps (memory: 0; replay: passes)
  std::uint64_t b_calls = 0;
  double delta = 0;          // b_mean - a_mean
  double delta_percent = 0;  // of a_mean (100 when only B has it)
  double noise = 0;          // 3 standard errors of the difference
  // |delta| above the noise and above 5 % of A's step time (memory: above 1 % of A's peak;
  // replay: above 5 % of A's pass duration).
  bool changed = false;
};

struct ProfileDiff {
  std::string a_path;
  std::string b_path;
  std::uint64_t a_steps = 0;  // considered steps
  std::uint64_t b_steps = 0;
  ComparedFigure step;
  std::vector<ComparedFigure> ops;      // changed first, then by |delta|; at most `top`
  std::vector<ComparedFigure> kernels;  // the same; a kernel with another grid or block is its own row
  std::vector<ComparedFigure> memory;   // peak allocated per device
  std::uint64_t ops_compared = 0;       // op keys in A or B
  std::uint64_t kernels_compared = 0;
  std::uint64_t ops_changed = 0;
  std::uint64_t kernels_changed = 0;
  // Collectives by type, as ops; and the step's communication not overlapped with compute. Both
  // empty / unset (has_communication false) when neither profile recorded a collective.
  bool has_communication = false;
  std::vector<ComparedFigure> communication;
  ComparedFigure communication_not_overlapped;
  std::uint64_t communication_compared = 0;
  std::uint64_t communication_changed = 0;
  // Replayed kernels (by name) in both profiles' replay results; `replay_absent` says why there is
  // no comparison when one or both profiles hold none.
  std::vector<ComparedFigure> replay;
  std::uint64_t replay_compared = 0;
  std::uint64_t replay_changed = 0;
  std::string replay_absent;
  std::string note;  // what was left out (warm-up), or why a part could not be compared
};

struct DiffOptions {
  bool include_warmup = false;
  std::size_t top = 15;
};

StatusOr<ProfileDiff> DiffProfiles(const ProfileDbFile& a, const ProfileDbFile& b,
                                   const DiffOptions& options = {});

}  // namespace gpuprof::db
