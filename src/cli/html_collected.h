// The report's parts of what was collected beside the ops and kernels (db/collected.h): the records
// lost per source at the top of the page, and a section with the call stacks of the top ops and
// the time per nn.Module by its path. Private to src/cli.
#pragma once

#include <string>

#include "cli/html_report.h"

namespace gpuprof::cli::html {

// A warning block with the records lost per source and DB; "" when no DB lost any.
std::string LostRecords(const HtmlReportInput& input);
// <section id="collected">: per DB, the top ops' call stacks and the top modules.
std::string StacksAndModules(const HtmlReportInput& input);

}  // namespace gpuprof::cli::html
