// Knobs of ProfileWriter that are not part of its public options. Private to src/db and its tests.
#pragma once

#include <cstddef>
#include <memory>

#include "db/profile_writer.h"

namespace gpuprof::db::internal {

// Records that may wait in the writer's queue. A Submit that would go past it is dropped whole
// (counted in WriterStats::dropped_records, one warning per writer): the profiled program is never
// blocked on the writer.
inline constexpr std::size_t kDefaultMaxQueuedRecords = 4'000'000;

// ProfileWriter::Create with another queue limit (tests of the drop path).
StatusOr<std::unique_ptr<ProfileWriter>> CreateProfileWriter(const WriterOptions& options,
                                                             std::size_t max_queued_records);

}  // namespace gpuprof::db::internal
