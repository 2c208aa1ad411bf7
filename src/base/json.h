// Placeholder until the shared JSON escaper lands (issue 17 item 3).
#pragma once
#include <string>
#include <string_view>
namespace gpuprof::base {
std::string JsonQuote(std::string_view text);
}
