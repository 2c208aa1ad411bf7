// The small JSON-object scanning that the META_DATA rows gpuprof writes as JSON objects share
// (thread_names.cc, lost_records.cc): whitespace and single punctuation characters. Private to
// src/db; strings are read with base::ReadJsonString.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpuprof::db::meta_json {

inline void SkipSpace(std::string_view text, std::size_t* pos) {
  while (*pos < text.size() &&
         (text[*pos] == ' ' || text[*pos] == '\t' || text[*pos] == '\n' || text[*pos] == '\r'))
    ++*pos;
}

// Skips whitespace, then takes `c` if it comes next.
inline bool Take(std::string_view text, std::size_t* pos, char c) {
  SkipSpace(text, pos);
  if (*pos >= text.size() || text[*pos] != c) return false;
  ++*pos;
  return true;
}

}  // namespace gpuprof::db::meta_json
