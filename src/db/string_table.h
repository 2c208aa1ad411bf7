// String interning for STRING_IDS (DB_SPEC.md "Decisions", §3.1).
//
// Three id spaces, so ids written by different producers never collide and a reader can tell a
// string's origin from its id:
//   kDevice     from 0        kernel names, CANN_API names, task types, mstx messages/domains
//   kFramework  from 1 << 28  op names, shapes, dtypes, call-stack frames
//   kMemory     from 2 << 28  allocator component names (PTA, ...)
// A value used in two spaces gets two ids (one STRING_IDS row each); every id is unique. The empty
// string is never interned: it maps to kInvalidStringId (4294967295, DB_INVALID_VALUE), and callers
// that must write NULL for "not recorded" test for empty themselves.
//
// Strings are copied once into arena blocks that never move, and the hash maps are keyed by
// string_views into them, so a lookup of an existing string allocates nothing.
//
// Thread-safety: none for StringTable (one thread owns it); SharedStrings wraps one for two threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "db/db_constants.h"

namespace gpuprof::db {

enum class StringSpace : std::uint8_t { kDevice = 0, kFramework = 1, kMemory = 2 };

inline constexpr std::uint64_t kInvalidStringId = kDbInvalidValue;  // the empty string
inline constexpr std::uint64_t kStringSpaceSize = 1ull << 28;

constexpr std::uint64_t StringSpaceBase(StringSpace space) noexcept {
  return static_cast<std::uint64_t>(space) * kStringSpaceSize;
}

class StringTable {
 public:
  struct Interned {
    std::uint64_t id = kInvalidStringId;
    bool is_new = false;     // first sight: the caller writes the STRING_IDS row (id, value)
    std::string_view value;  // the table's copy, valid for the table's lifetime (empty for invalid)
  };

  StringTable() = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  // The id of `value` in `space`, assigned densely from the space's base on first sight. Empty
  // values, and values arriving after a space's 1 << 28 ids are used up, get kInvalidStringId
  // (the latter counted in overflowed()).
  Interned Intern(StringSpace space, std::string_view value);
  // An id for the empty string itself, for the columns whose readers join STRING_IDS and need a
  // row with the value '' (COMPUTE_TASK_INFO's shapes of a kernel no op launched); kInvalidStringId
  // when the space is used up.
  Interned InternEmpty(StringSpace space);

  // Id of a value already interned, or kInvalidStringId.
  std::uint64_t Find(StringSpace space, std::string_view value) const;

  std::size_t size(StringSpace space) const noexcept { return maps_[static_cast<std::size_t>(space)].size(); }
  std::uint64_t overflowed() const noexcept { return overflowed_; }

 private:
  struct Hash {
    std::size_t operator()(std::string_view s) const noexcept;
  };
  using Map = std::unordered_map<std::string_view, std::uint64_t, Hash>;

  // Copies `value` into the arena; the returned view stays valid for the table's lifetime.
  std::string_view Store(std::string_view value);

  std::array<Map, 3> maps_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* cursor_ = nullptr;
  std::size_t left_ = 0;
  std::uint64_t overflowed_ = 0;
};

// The writer's device and memory id spaces, interned by the SQLite thread and by the
// kernel side thread both, so a kernel name gets one id whichever thread sees it first.
//
// Thread-safety: every member may be called from any thread. Interned::value views stay valid
// (the table's arena never moves a stored string).
class SharedStrings {
 public:
  StringTable::Interned Intern(StringSpace space, std::string_view value) {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.Intern(space, value);
  }
  StringTable::Interned InternEmpty(StringSpace space) {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.InternEmpty(space);
  }
  // Runs `intern(table)` under one lock: many lookups for the price of one lock.
  template <typename F>
  void WithTable(F&& intern) {
    std::lock_guard<std::mutex> lock(mu_);
    intern(table_);
  }
  std::uint64_t overflowed() {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.overflowed();
  }

 private:
  std::mutex mu_;
  StringTable table_;  // guarded by mu_
};

}  // namespace gpuprof::db
