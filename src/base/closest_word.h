// "did you mean": the closest of some names to a word that is none of them, when it is close enough
// to be a typo. The one copy: the CLI's unknown commands and options, and the settings table's
// unknown keys (base/settings.h UnknownSettingKey), use it.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuprof::base {

// The candidate closest to `word` when it is close enough to be a typo of it (one or two letters
// wrong, missing, extra or swapped; or `word` a prefix of it); "" when none is. Leading dashes are
// not compared ("--tpo" is "--top").
std::string ClosestWord(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace gpuprof::base
