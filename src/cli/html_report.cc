#include "cli/html_report.h"

#include <string>
#include <string_view>

#include "cli/default_output.h"
#include "cli/html_collected.h"
#include "cli/html_report_parts.h"

namespace gpuprof::cli {
namespace {

constexpr std::string_view kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#2b3a4a;color:#fff;padding:12px 24px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#cdd}nav{padding:6px 24px;background:#e8ecf0}nav a{margin-right:14px;color:#2b3a4a}
section{background:#fff;margin:16px 24px;padding:8px 18px 16px;border:1px solid #ddd;border-radius:6px}
h2{font-size:18px;border-bottom:1px solid #eee;padding-bottom:4px}h3{font-size:15px;margin-top:18px}h4{font-size:14px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left}
th{background:#f2f4f6;cursor:pointer;user-select:none}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td{max-width:520px;overflow-wrap:anywhere}.absent,.note{color:#666}.chart{display:block;margin:8px 0}
.label{font-size:11px;fill:#333}svg.spark{vertical-align:middle}.tiny{font-size:8px;fill:#333}pre{white-space:pre-wrap;font-size:12px}
code{background:#f2f4f6;padding:1px 4px}.timeline-row{display:flex;overflow:hidden}
svg.zoomable{border:1px solid #eee;cursor:grab;display:block}.timeline-plot{position:relative}
svg.timeline-labels{position:absolute;left:1px;top:1px;pointer-events:none}.bar-name{font-size:9px;fill:#111}
svg.timeline-axis{display:block;margin:2px 0 0 -20px}.axis-title{fill:#444}tr.changed td{background:#fdecea}section.lost{border-color:#e15759;background:#fff5f5}
)";

// Sorts a table by the clicked column (numbers by data-v); zooms and pans the step timelines by
// their viewBox, redrawing their time axis (round ticks in the unit that suits the part shown, as
// html_axes.cc picks them) and moving the bars' names to where their bars are, and switches the
// step shown. No network, no library.
constexpr std::string_view kScript = R"(
var SVG_NS = 'http://www.w3.org/2000/svg';
function relayout(svg){
  var vb = svg.viewBox.baseVal, full = parseFloat(svg.getAttribute('data-full')), plot = svg.parentNode;
  plot.querySelectorAll('text.bar-name').forEach(function(t){
    var a = (parseFloat(t.getAttribute('data-a')) - vb.x) / vb.width * full;
    var b = (parseFloat(t.getAttribute('data-b')) - vb.x) / vb.width * full;
    var x = Math.max(a, 0) + 2;
    t.setAttribute('x', x.toFixed(1));
    t.removeAttribute('display');
    var w = parseFloat(t.getAttribute('data-w')) || t.getComputedTextLength();
    if (w > 0) t.setAttribute('data-w', w);
    if (b - x - 2 < w || b < 0 || a > full) t.setAttribute('display', 'none');
  });
  var axis = plot.querySelector('svg.timeline-axis');
  if (!axis) return;
  var span = parseFloat(axis.getAttribute('data-span-ns'));
  var t0 = vb.x / full * span, t1 = (vb.x + vb.width) / full * span, d = t1 - t0;
  var unit = d < 2e3 ? [1, 'ns'] : d < 2e6 ? [1e3, '\u00b5s'] : d < 2e9 ? [1e6, 'ms'] : [1e9, 's'];
  var raw = d / unit[0] / 8, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = 10 * mag;
  [1, 2, 5].some(function(m){ if (m * mag >= raw) { step = m * mag; return true; } return false; });
  var decimals = Math.max(0, Math.ceil(-Math.log10(step) - 1e-9));
  var g = axis.querySelector('g.x-axis');
  g.querySelectorAll('g.tick').forEach(function(old){ g.removeChild(old); });
  var title = g.querySelector('text.axis-title');
  title.textContent = title.textContent.replace(/\([^)]*\)$/, '(' + unit[1] + ')');
  for (var v = Math.ceil(t0 / unit[0] / step - 1e-9) * step; v <= t1 / unit[0] + step * 1e-9; v += step) {
    var x = (v * unit[0] - t0) / d * full, tick = document.createElementNS(SVG_NS, 'g');
    tick.setAttribute('class', 'tick');
    var line = document.createElementNS(SVG_NS, 'line');
    line.setAttribute('x1', x); line.setAttribute('x2', x); line.setAttribute('y1', 4); line.setAttribute('y2', 8);
    line.setAttribute('stroke', '#888');
    var label = document.createElementNS(SVG_NS, 'text');
    label.setAttribute('x', x); label.setAttribute('y', 19); label.setAttribute('class', 'label');
    label.setAttribute('text-anchor', 'middle');
    label.textContent = (Math.abs(v) < step * 1e-9 ? 0 : v).toFixed(decimals);
    tick.appendChild(line); tick.appendChild(label); g.insertBefore(tick, title);
  }
}
document.querySelectorAll('svg.zoomable').forEach(function(svg){
  var full = parseFloat(svg.getAttribute('data-full')), vb = svg.viewBox.baseVal, drag = null;
  svg.addEventListener('wheel', function(e){
    e.preventDefault();
    var r = svg.getBoundingClientRect(), at = vb.x + (e.clientX - r.left) / r.width * vb.width;
    var w = Math.min(full, Math.max(full / 5000, vb.width * (e.deltaY < 0 ? 0.8 : 1.25)));
    vb.x = Math.min(Math.max(0, at - (at - vb.x) * w / vb.width), full - w); vb.width = w; relayout(svg);
  }, {passive: false});
  svg.addEventListener('mousedown', function(e){ drag = {x: e.clientX, vx: vb.x}; });
  window.addEventListener('mouseup', function(){ drag = null; });
  svg.addEventListener('mousemove', function(e){
    if (!drag) return;
    var r = svg.getBoundingClientRect();
    vb.x = Math.min(Math.max(0, drag.vx - (e.clientX - drag.x) / r.width * vb.width), full - vb.width);
    relayout(svg);
  });
  svg.addEventListener('dblclick', function(){ vb.x = 0; vb.width = full; relayout(svg); });
});
document.querySelectorAll('div.timeline:not([hidden]) svg.zoomable').forEach(relayout);
document.querySelectorAll('select.step-choice').forEach(function(select){
  select.addEventListener('change', function(){
    var prefix = select.getAttribute('data-for') + '-';
    document.querySelectorAll('div.timeline').forEach(function(div){
      if (div.id.indexOf(prefix) === 0) div.hidden = div.id !== prefix + select.value;
    });
    document.querySelectorAll('div.timeline:not([hidden]) svg.zoomable').forEach(relayout);
  });
});
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, column){
    th.addEventListener('click', function(){
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var down = th.getAttribute('data-dir') !== 'down';
      rows.sort(function(a, b){
        var x = a.cells[column], y = b.cells[column];
        var vx = x.hasAttribute('data-v') ? parseFloat(x.getAttribute('data-v')) : x.textContent;
        var vy = y.hasAttribute('data-v') ? parseFloat(y.getAttribute('data-v')) : y.textContent;
        var c = vx < vy ? -1 : vx > vy ? 1 : 0;
        return down ? -c : c;
      });
      rows.forEach(function(r){ body.appendChild(r); });
      th.setAttribute('data-dir', down ? 'down' : 'up');
    });
  });
});
)";

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
          out += "\xEF\xBF\xBD";  // U+FFFD
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

namespace html {

std::string PageHead(std::string_view title_mark, std::string_view title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         // Nothing may be fetched: no script, style, image, font or frame from anywhere.
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
         "'unsafe-inline'; "
         "script-src 'unsafe-inline'; img-src data:\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">" +
         std::string(title_mark) + HtmlEscape(title) + "</title><style>" + std::string(kStyle) +
         "</style></head><body>";
}

std::string PageEnd() { return "<script>" + std::string(kScript) + "</script></body></html>\n"; }

}  // namespace html

std::string RenderHtmlReport(const HtmlReportInput& input) {
  std::string page = html::PageHead(kReportTitleMark, input.path);
  page += "<header><h1>gpuprof report</h1><p>" + HtmlEscape(input.path) + " &middot; " +
          std::to_string(input.dbs.size()) + " profile DB(s)</p></header>";
  page += "<nav><a href=\"#overview\">Overview</a>";
  // Several ranks: the cluster comes right after the overview, before any one rank's detail.
  const bool cluster_first = input.cluster != nullptr && input.dbs.size() > 1;
  if (cluster_first) page += "<a href=\"#cluster\">Cluster</a>";
  page +=
      "<a href=\"#steps\">Steps</a><a "
      "href=\"#timeline\">Timeline</a><a href=\"#ops\">Ops and "
      "kernels</a>"
      "<a href=\"#memory\">Memory</a><a href=\"#replay\">Replay</a>";
  bool ranges = false;
  for (const db::ReportDb& db : input.dbs) ranges = ranges || !db.stats.range_kernels.empty();
  if (ranges) page += "<a href=\"#ranges\">Step roofline</a>";
  if (input.cluster != nullptr && !cluster_first) page += "<a href=\"#cluster\">Cluster</a>";
  page += "<a href=\"#collected\">Stacks and modules</a></nav>";
  page += html::LostRecords(input);
  page += html::Overview(input);
  if (cluster_first) page += html::Cluster(input);
  page += html::Steps(input);
  page += html::Timeline(input);
  page += html::OpsAndKernels(input);
  page += html::StacksAndModules(input);
  page += html::Memory(input);
  page += html::Replay(input);
  page += html::Ranges(input);
  if (!cluster_first) page += html::Cluster(input);
  return page + html::PageEnd();
}

}  // namespace gpuprof::cli
