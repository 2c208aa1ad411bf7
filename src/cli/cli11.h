// CLI11 for the cli component. With GCC 12 at -O2, CLI11 2.1's own CLI::detail::split can be
// reported as a potential null dereference (-Wnull-dereference, a false positive inside the
// library), depending on what the including file inlines; the warning is off for CLI11's code alone.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <CLI/CLI.hpp>
#pragma GCC diagnostic pop
