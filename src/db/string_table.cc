#include "db/string_table.h"

#include <cstring>

#include "base/hash.h"

namespace gpuprof::db {
namespace {
constexpr std::size_t kBlockSize = std::size_t{256} * 1024;
}  // namespace

std::size_t StringTable::Hash::operator()(std::string_view s) const noexcept {
  return static_cast<std::size_t>(base::HashBytes(s.data(), s.size()));
}

StringTable::Interned StringTable::Intern(StringSpace space, std::string_view value) {
  if (value.empty()) return {};
  Map& map = maps_[static_cast<std::size_t>(space)];
  if (auto it = map.find(value); it != map.end()) return {it->second, false, it->first};
  if (map.size() >= kStringSpaceSize) {
    ++overflowed_;
    return {};
  }
  std::uint64_t id = StringSpaceBase(space) + map.size();
  std::string_view stored = Store(value);
  map.emplace(stored, id);
  return {id, true, stored};
}

StringTable::Interned StringTable::InternEmpty(StringSpace space) {
  Map& map = maps_[static_cast<std::size_t>(space)];
  if (auto it = map.find(std::string_view()); it != map.end()) return {it->second, false, it->first};
  if (map.size() >= kStringSpaceSize) {
    ++overflowed_;
    return {};
  }
  std::uint64_t id = StringSpaceBase(space) + map.size();
  const std::string_view empty("");  // a non-null pointer: SQLite binds a null one as NULL
  map.emplace(empty, id);
  return {id, true, empty};
}

std::uint64_t StringTable::Find(StringSpace space, std::string_view value) const {
  const Map& map = maps_[static_cast<std::size_t>(space)];
  auto it = map.find(value);
  return it == map.end() ? kInvalidStringId : it->second;
}

std::string_view StringTable::Store(std::string_view value) {
  if (value.size() > kBlockSize / 4) {
    // Large values (long call stacks, shape lists) get a block of their own so they do not waste
    // the tail of a shared block.
    auto& block = blocks_.emplace_back(std::make_unique<char[]>(value.size()));
    std::memcpy(block.get(), value.data(), value.size());
    return {block.get(), value.size()};
  }
  if (left_ < value.size()) {
    // Start a new shared block; views into the earlier ones stay valid (blocks never move).
    cursor_ = blocks_.emplace_back(std::make_unique<char[]>(kBlockSize)).get();
    left_ = kBlockSize;
  }
  char* out = cursor_;
  std::memcpy(out, value.data(), value.size());
  cursor_ += value.size();
  left_ -= value.size();
  return {out, value.size()};
}

}  // namespace gpuprof::db
