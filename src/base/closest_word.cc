#include "base/closest_word.h"

#include <algorithm>
#include <cstddef>

namespace gpuprof::base {
namespace {

// Edit distance with a swap of two neighbours counting as one edit (optimal string alignment).
std::size_t Distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string_view StripDashes(std::string_view word) {
  return word.substr(std::min(word.find_first_not_of('-'), word.size()));
}

}  // namespace

std::string ClosestWord(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string_view bare = StripDashes(word);
  if (bare.empty()) return "";
  // Short words tolerate one edit, longer ones two: "stat" is "stats", "run" is not "demo".
  const std::size_t allowed = bare.size() <= 4 ? 1 : 2;
  std::string best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& candidate : candidates) {
    const std::string_view other = StripDashes(candidate);
    std::size_t distance = Distance(bare, other);
    // "--form" for "--format": a prefix of three letters or more counts as close.
    if (distance > allowed && bare.size() >= 3 && other.substr(0, bare.size()) == bare) distance = allowed;
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

}  // namespace gpuprof::base
