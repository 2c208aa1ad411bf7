// Progress of long work: the layer doing the work says what it is doing and how far it got; the
// CLI shows it (cli/live_line.h: a live line on a terminal, nothing when stderr is not one).
//
//   Status Export(..., base::Progress* progress) {
//     base::Progress::StageOf(progress, "rank 0: TASK");   // a new stage; its count restarts at 0
//     for (row : rows) { ...; base::Progress::AdvanceOf(progress, 1); }
//
// A null Progress* means nobody watches (the static helpers take one). Implementations are cheap
// to call once per row and safe to call from the working thread while another thread reads them.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpuprof::base {

class Progress {
 public:
  virtual ~Progress() = default;
  // What is being done now, in words ("rank 0: exporting TASK"); restarts the stage's count.
  virtual void Stage(std::string_view what) = 0;
  // `units` more rows (events, ...) done in the current stage.
  virtual void Advance(std::uint64_t units) = 0;

  static void StageOf(Progress* progress, std::string_view what) {
    if (progress != nullptr) progress->Stage(what);
  }
  static void AdvanceOf(Progress* progress, std::uint64_t units) {
    if (progress != nullptr) progress->Advance(units);
  }
};

}  // namespace gpuprof::base
