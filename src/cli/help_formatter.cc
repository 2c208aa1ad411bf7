#include "cli/help_formatter.h"

#include <sstream>
#include <vector>

namespace gpuprof::cli {
namespace {

// CLI11's name for a value type ("UINT", "INT:INT in [2 - 16]", "TEXT:{a,b}") as a placeholder.
std::string Placeholder(const std::string& type_name) {
  const std::string head = type_name.substr(0, type_name.find(':'));
  if (head == "UINT" || head == "INT" || head == "FLOAT" || head == "NUMBER") return "N";
  if (head == "TEXT" || head.empty()) return "VALUE";
  return head;  // ours: DIR, LIST, N, auto|exact|full, ...
}

// Where the description of an option or subcommand line starts: after its name and a gap of two
// or more spaces; npos for other lines.
std::size_t DescriptionColumn(std::string_view line) {
  const std::size_t name = line.find_first_not_of(' ');
  if (name == std::string_view::npos || name == 0 || name > 4) return std::string_view::npos;
  const std::size_t gap = line.find("  ", name);
  if (gap == std::string_view::npos) return std::string_view::npos;
  const std::size_t text = line.find_first_not_of(' ', gap);
  return text == std::string_view::npos ? std::string_view::npos : text;
}

}  // namespace

std::string WrapHelpText(std::string_view text, std::size_t width) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    const bool last = end == std::string_view::npos;
    std::string_view line = text.substr(start, last ? std::string_view::npos : end - start);
    std::size_t indent = DescriptionColumn(line);
    if (indent == std::string_view::npos || indent >= width / 2) {
      indent = line.find_first_not_of(' ');
      if (indent == std::string_view::npos || indent >= width / 2) indent = 0;
    }
    std::string current(line);
    while (current.size() > width) {
      std::size_t cut = current.rfind(' ', width);
      while (cut != std::string::npos && cut > indent && current[cut - 1] == ' ') --cut;  // a gap of spaces
      std::size_t resume = 0;
      if (cut == std::string::npos || cut <= indent) {
        // One word longer than the line (a path pattern): broken after a '/', else kept whole.
        cut = current.rfind('/', width - 1);
        if (cut == std::string::npos || cut <= indent) break;
        resume = ++cut;
      } else {
        resume = current.find_first_not_of(' ', cut);
      }
      out.append(current, 0, cut);
      out.push_back('\n');
      const std::size_t rest = resume;
      current = std::string(indent, ' ') + (rest == std::string::npos ? "" : current.substr(rest));
    }
    out += current;
    if (last) break;
    out.push_back('\n');
    start = end + 1;
  }
  return out;
}

std::string HelpFormatter::make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const {
  return WrapHelpText(CLI::Formatter::make_help(app, std::move(name), mode));
}

std::string HelpFormatter::make_usage(const CLI::App* app, std::string name) const {
  auto found = usage_.find(app);
  if (found == usage_.end()) return CLI::Formatter::make_usage(app, std::move(name));
  return found->second + (found->second.empty() || found->second.back() == '\n' ? "" : "\n");
}

std::string HelpFormatter::make_option_name(const CLI::Option* opt, bool is_positional) const {
  if (is_positional) return opt->get_name(true, false);
  std::string names;
  for (const std::string& name : opt->get_snames()) names += (names.empty() ? "-" : ",-") + name;
  for (const std::string& name : opt->get_lnames()) names += (names.empty() ? "--" : ",--") + name;
  return names.empty() ? opt->get_name(false, false) : names;
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  const std::string name = "  " + make_option_name(opt, is_positional) + make_option_opts(opt);
  const std::string description = make_option_desc(opt);
  const std::size_t column = get_column_width();
  std::string out = name;
  if (!description.empty()) {
    if (name.size() + 2 <= column) {
      out.append(column - name.size(), ' ');
    } else {
      out += '\n' + std::string(column, ' ');
    }
    for (char c : description) {
      out.push_back(c);
      if (c == '\n') out.append(column, ' ');
    }
  }
  out.push_back('\n');
  return out;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  // A positional's name is its placeholder; a flag takes no value.
  if (opt->get_positional() || opt->get_type_name().empty() || opt->get_expected_max() == 0) return "";
  if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
  std::string out = " " + Placeholder(opt->get_type_name());
  if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
  if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
  return out;
}

}  // namespace gpuprof::cli
