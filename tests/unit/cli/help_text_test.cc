// The hand-written parts of every --help (descriptions, footers, usage blocks) are laid out so that
// WrapHelpText breaks no line in the middle of a paragraph: a long line hand-broken before the
// next came out as a ragged short line (issue 39: `replay --help`'s "(writes to it cannot be
// undone)." on a line of its own, an example's last word under the next example). A paragraph
// written as one long line is the wrapper's to break evenly; option descriptions are indented
// under their column by it.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli11.h"
#include "cli/db_commands.h"
#include "cli/help_formatter.h"
#include "cli/run_command.h"

namespace gpuprof::cli {
namespace {

TEST(HelpTextTest, FreeTextFitsTheColumnsWithoutWrapping) {
  CLI::App app{"gpuprof", "gpuprof"};
  auto formatter = std::make_shared<HelpFormatter>();
  app.formatter(formatter);
  DbCommands db_commands(app);
  RunCommand run(app);
  RunCommand replay(app, /*replay=*/true);
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    // CLI11's layout with our entries, before WrapHelpText.
    const std::string raw =
        formatter->CLI::Formatter::make_help(command, command->get_name(), CLI::AppFormatMode::Normal);
    std::vector<std::string> lines;
    std::istringstream stream(raw);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    bool in_list = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      if (line.empty()) {
        in_list = false;
        continue;
      }
      if (line == "Options:" || line == "Positionals:" || line == "OPTIONS:" || line == "POSITIONALS:") {
        in_list = true;
        continue;
      }
      if (in_list || line.size() <= kHelpColumns) continue;  // option descriptions: the wrapper's
      const bool paragraph_ends =
          i + 1 == lines.size() || lines[i + 1].empty() || lines[i + 1].rfind("Usage:", 0) == 0;
      EXPECT_TRUE(paragraph_ends) << command->get_name() << ": a line of " << line.size()
                                  << " columns inside a paragraph:\n"
                                  << line << "\n"
                                  << lines[i + 1];
    }
  }
}

TEST(HelpTextTest, ANameOneSpaceShortOfTheColumnPutsItsDescriptionBelow) {
  CLI::App app{"test", "gpuprof"};
  app.formatter(std::make_shared<HelpFormatter>());
  bool flag = false;
  app.add_flag("--replay-with-live-arrays", flag, "Replay launches while CUDA arrays exist");
  app.add_flag("--strict", flag, "Decline launches");
  const std::string help = app.help();
  EXPECT_NE(help.find("  --replay-with-live-arrays\n                            Replay launches while CUDA "
                      "arrays exist\n"),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("  --strict                  Decline launches\n"), std::string::npos) << help;
}

}  // namespace
}  // namespace gpuprof::cli
