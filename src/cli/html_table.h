// The report's sortable table (the page's script sorts a column on a click) and its two cell
// kinds; the sections (html_sections.cc, html_ranges.cc) are made of it. Private to src/cli.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/html_report.h"
#include "cli/html_report_parts.h"
#include "cli/page_names.h"

namespace gpuprof::cli::html {

// A table whose columns sort on a click (the page's script); numeric cells carry data-v.
class HtmlTable {
 public:
  struct Column {
    std::string title;
    bool numeric;
  };
  HtmlTable(std::string id, std::vector<Column> columns) : id_(std::move(id)), columns_(std::move(columns)) {}
  // Cells: text (escaped here) and, for numeric columns, the value it sorts by.
  struct Cell {
    std::string text;
    double value = 0;
    std::string figure;  // data-figure name, or ""
    std::string html;    // markup drawn after the text (a small chart), already safe; "" for none
    std::string title;   // a tooltip (the longer part of a cut name), or ""
  };
  // `row_class`: the <tr>'s class ("changed" marks a row the page's style highlights), "" for none.
  void AddRow(std::vector<Cell> cells, std::string row_class = "") {
    rows_.push_back(std::move(cells));
    row_classes_.push_back(std::move(row_class));
  }
  std::string Html() const {
    std::string out = "<table class=\"sortable\" id=\"" + id_ + "\"><thead><tr>";
    for (const Column& column : columns_) {
      out += std::string("<th") + (column.numeric ? " class=\"num\"" : "") + ">" + HtmlEscape(column.title) +
             "</th>";
    }
    out += "</tr></thead><tbody>";
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      const std::vector<Cell>& row = rows_[r];
      out += row_classes_[r].empty() ? "<tr>" : "<tr class=\"" + HtmlEscape(row_classes_[r]) + "\">";
      for (std::size_t i = 0; i < row.size() && i < columns_.size(); ++i) {
        const Cell& cell = row[i];
        out += "<td";
        if (columns_[i].numeric) out += " class=\"num\" data-v=\"" + Fixed(cell.value, 6) + "\"";
        if (!cell.figure.empty()) out += " data-figure=\"" + HtmlEscape(cell.figure) + "\"";
        if (!cell.title.empty()) out += " title=\"" + HtmlEscape(cell.title) + "\"";
        out += ">" + HtmlEscape(cell.text) + cell.html + "</td>";
      }
      out += "</tr>";
    }
    return out + "</tbody></table>";
  }

 private:
  std::string id_;
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
  std::vector<std::string> row_classes_;
};

inline HtmlTable::Cell N(std::string text, double value, std::string figure = "") {
  return {std::move(text), value, std::move(figure), "", ""};
}
// A text cell; a long text (a name from the DB) is cut, with its start as the tooltip.
inline HtmlTable::Cell T(std::string text, std::string figure = "") {
  return {ShownName(text), 0, std::move(figure), "", NameTitle(text)};
}

}  // namespace gpuprof::cli::html
