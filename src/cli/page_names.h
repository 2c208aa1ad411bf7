// Names from a profile DB as `gpuprof report`'s page shows them: whole up to kShownNameBytes, past
// that their start, an ellipsis and their length, with a tooltip of at most kTitleNameBytes. A
// 20M-character op name, written whole into every row, bar and suggestion, made a 300 MB page.
// Header-only; no state.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "base/utf8.h"

namespace gpuprof::cli {

inline constexpr std::size_t kShownNameBytes = 200;
inline constexpr std::size_t kTitleNameBytes = 2000;

// `full_bytes`: the length of a name the reader already cut (db::TimelineItem); 0 when whole.
inline std::string ShownName(std::string_view name, std::size_t full_bytes = 0) {
  full_bytes = std::max(full_bytes, name.size());
  if (full_bytes <= kShownNameBytes) return std::string(name);
  return std::string(base::Utf8Prefix(name, kShownNameBytes)) + "… (" + std::to_string(full_bytes) +
         " bytes)";
}

// The tooltip of a name ShownName cuts; "" for one shown whole.
inline std::string NameTitle(std::string_view name) {
  if (name.size() <= kShownNameBytes) return "";
  std::string title(base::Utf8Prefix(name, kTitleNameBytes));
  if (title.size() < name.size()) title += "…";
  return title;
}

}  // namespace gpuprof::cli
