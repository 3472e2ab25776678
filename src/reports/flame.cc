// Flame graph SVG writer (see flame.h). The SVG carries its own small
// script and style, so the file is all a browser needs. One drawer serves
// both graphs: a FlameSource says per node how wide, what colour and what
// hover text; WriteFlameGraph fills it from a tree, WriteDiffFlameGraph from
// a cct-diff comparison.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "output/format.h"
#include "output/progress.h"
#include "reports/diff_report_internal.h"
#include "reports/flame.h"
#include "reports/registry.h"
#include "reports/reports.h"

namespace reports {

using cct::FrameKind;
using cct::MetricId;
using cct::NodeId;
using cct::Status;

namespace {

constexpr double kFrameHeight = 16;
constexpr double kFontSize = 12;
constexpr double kCharWidth = 0.59;  // of the font size, Verdana's average advance
constexpr double kPad = 10;
constexpr double kTop = 54;        // title, subtitle, buttons, one row of legend
constexpr double kLegendRow = 16;  // each further row of legend
constexpr double kBottom = 34;     // details line, below a flame graph
constexpr double kIcicleDetails = 18;  // details line, above an icicle's frames
constexpr double kMinShownWidth = 200;  // narrower windows scroll
constexpr double kSearchBoxWidth = 170;

// Text for XML character data and attribute values: markup characters
// escaped, invalid UTF-8 replaced by U+FFFD and control characters (not
// allowed in XML 1.0) by '?', so any frame name gives a well-formed file.
std::string Xml(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        case '\n': out += "&#10;"; break;
        case '\t': out += ' '; break;
        default: out.push_back(c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c));
      }
      ++i;
      continue;
    }
    size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len == 2 && c < 0xC2) ok = false;  // overlong
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s.empty() || s == "-" ? "0" : s;
}

const char* KindClass(FrameKind k) {
  switch (k) {
    case FrameKind::kFunction:
    case FrameKind::kLine:
    case FrameKind::kLoop: return "cpu";
    case FrameKind::kNvtx: return "nvtx";
    case FrameKind::kGpuOp:
    case FrameKind::kKernel: return "gpu";
    case FrameKind::kThread: return "thread";
    default: return "other";
  }
}

// Deterministic pseudo-random shade per name, like FlameGraph's palettes but
// stable across runs of the same program.
std::string KindColour(FrameKind k, std::string_view name) {
  const uint64_t h = cct::HashBytes(name);
  const double a = static_cast<double>(h & 0xffff) / 65535.0, b = static_cast<double>((h >> 16) & 0xffff) / 65535.0;
  int r, g, bl;
  switch (k) {
    case FrameKind::kNvtx: r = 150 + static_cast<int>(50 * a); g = 110 + static_cast<int>(40 * b); bl = 215 + static_cast<int>(35 * a); break;
    case FrameKind::kGpuOp:
    case FrameKind::kKernel: r = 60 + static_cast<int>(60 * a); g = 175 + static_cast<int>(60 * b); bl = 90 + static_cast<int>(50 * a); break;
    case FrameKind::kThread: r = 170 + static_cast<int>(20 * a); g = 180 + static_cast<int>(20 * a); bl = 200 + static_cast<int>(20 * a); break;
    case FrameKind::kUnknown:
    case FrameKind::kRoot: r = g = bl = 190 + static_cast<int>(30 * a); break;
    default: r = 205 + static_cast<int>(50 * b); g = static_cast<int>(200 * a); bl = static_cast<int>(55 * b); break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "rgb(%d,%d,%d)", r, g, bl);
  return buf;
}

std::string FitLabel(std::string_view name, double width_px) {
  const int chars = static_cast<int>((width_px - 6) / (kFontSize * kCharWidth));
  if (chars < 3) return "";
  if (static_cast<int>(output::DisplayWidth(name)) <= chars) return std::string(name);
  return output::ElideMiddle(name, static_cast<size_t>(chars), true).substr(0, std::string::npos);
}

// The script: fitting the window, zoom, search, details; also the
// URL-fragment hooks for tests. Frames carry their place as fractions of the
// drawn total (data-x, data-w), so any width lays them out.
constexpr const char* kScript = R"JS(
"use strict";
var svg = document.documentElement, details, matchedtxt, searchbox, unzoombtn;
var W = +svg.getAttribute("data-width"), H = +svg.getAttribute("height"), PAD = +svg.getAttribute("data-pad");
var FS = +svg.getAttribute("data-fontsize"), CW = +svg.getAttribute("data-charwidth");
var MINW = +svg.getAttribute("data-min-shown-width"), SW = +svg.getAttribute("data-search-width");
var zoomed = null, searching = null;
function frames() { return document.querySelectorAll("g.f"); }
function fx(g) { return +g.getAttribute("data-x"); }
function fw(g) { return +g.getAttribute("data-w"); }
function fd(g) { return +g.getAttribute("data-d"); }
function place(g, x, w) {
  var r = g.querySelector("rect"), t = g.querySelector("text");
  r.setAttribute("x", (PAD + x).toFixed(2));
  r.setAttribute("width", Math.max(0, w).toFixed(2));
  t.setAttribute("x", (PAD + x + 3).toFixed(2));
  var name = g.getAttribute("data-n"), chars = Math.floor((w - 6) / (FS * CW));
  if (chars < 3) t.textContent = "";
  else if (name.length <= chars) t.textContent = name;
  else { var keep = chars - 2, head = Math.ceil(keep / 2); t.textContent = name.substr(0, head) + ".." + name.substr(name.length - (keep - head)); }
}
// Frames at the current width: all of them, or the zoomed frame's subtree
// across the width with its ancestors as a dimmed base.
function layout() {
  var plot = W - 2 * PAD;
  if (zoomed === null) {
    frames().forEach(function (g) {
      g.classList.remove("hide"); g.classList.remove("parent");
      place(g, fx(g) * plot, fw(g) * plot);
    });
    return;
  }
  var x0 = fx(zoomed), w0 = fw(zoomed), d0 = fd(zoomed), eps = 1e-9, scale = plot / w0;
  frames().forEach(function (g) {
    var x = fx(g), w = fw(g), d = fd(g);
    g.classList.remove("hide"); g.classList.remove("parent");
    if (d < d0 && x <= x0 + eps && x + w >= x0 + w0 - eps) { g.classList.add("parent"); place(g, 0, plot); }
    else if (d >= d0 && x >= x0 - eps && x + w <= x0 + w0 + eps) { place(g, (x - x0) * scale, w * scale); }
    else { g.classList.add("hide"); }
  });
}
function zoom(target) {
  zoomed = target; layout();
  svg.setAttribute("data-zoomed", target.getAttribute("data-n"));
  unzoombtn.classList.remove("hide");
}
function unzoom() {
  zoomed = null; layout();
  svg.removeAttribute("data-zoomed");
  unzoombtn.classList.add("hide");
}
// The graph takes the window's width (the file's own width is for viewers
// without scripts); the header's right-hand items move with it.
function fit() {
  svg.setAttribute("width", "100%");
  var w = Math.floor(svg.getBoundingClientRect().width);
  if (!(w >= MINW)) { w = MINW; svg.setAttribute("width", String(w)); }
  W = w;
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.setAttribute("data-shown-width", String(W));
  document.getElementById("background").setAttribute("width", String(W));
  document.getElementById("title").setAttribute("x", (W / 2).toFixed(2));
  document.getElementById("subtitle").setAttribute("x", (W / 2).toFixed(2));
  document.getElementById("searchfield").setAttribute("x", (W - PAD - SW).toFixed(2));
  matchedtxt.setAttribute("x", (W - PAD - 110).toFixed(2));
  layout();
}
function search(re) {
  var rx;
  try { rx = new RegExp(re); } catch (e) { matchedtxt.textContent = "Bad regular expression"; return; }
  var ranges = [];
  frames().forEach(function (g) {
    var r = g.querySelector("rect");
    if (rx.test(g.getAttribute("data-n"))) {
      if (!r.hasAttribute("data-fill")) r.setAttribute("data-fill", r.getAttribute("fill"));
      r.setAttribute("fill", "rgb(230,0,230)"); g.classList.add("match");
      ranges.push([fx(g), fx(g) + fw(g)]);
    } else if (r.hasAttribute("data-fill")) {
      r.setAttribute("fill", r.getAttribute("data-fill")); r.removeAttribute("data-fill"); g.classList.remove("match");
    }
  });
  // Matched share: the union of the matching frames' ranges (nested matches count once).
  ranges.sort(function (a, b) { return a[0] - b[0]; });
  var total = 0, end = -1;
  ranges.forEach(function (r) { if (r[0] >= end) { total += r[1] - r[0]; end = r[1]; } else if (r[1] > end) { total += r[1] - end; end = r[1]; } });
  searching = re;
  matchedtxt.textContent = "Matched: " + (100 * total).toFixed(1) + "%";
  svg.setAttribute("data-search", re);
}
function resetsearch() {
  frames().forEach(function (g) {
    var r = g.querySelector("rect");
    if (r.hasAttribute("data-fill")) { r.setAttribute("fill", r.getAttribute("data-fill")); r.removeAttribute("data-fill"); }
    g.classList.remove("match");
  });
  searching = null; matchedtxt.textContent = ""; svg.removeAttribute("data-search");
}
function frameOf(e) {
  for (var n = e.target; n && n !== svg; n = n.parentNode) if (n.classList && n.classList.contains("f")) return n;
  return null;
}
function init() {
  details = document.getElementById("details"); matchedtxt = document.getElementById("matched");
  searchbox = document.getElementById("searchbox"); unzoombtn = document.getElementById("unzoom");
  svg.addEventListener("click", function (e) { var g = frameOf(e); if (g) zoom(g); });
  svg.addEventListener("mouseover", function (e) {
    var g = frameOf(e); if (g) details.textContent = g.querySelector("title").textContent.replace(/\n/g, "  ");
  });
  svg.addEventListener("mouseout", function (e) { if (frameOf(e)) details.textContent = " "; });
  unzoombtn.addEventListener("click", function (e) { e.stopPropagation(); unzoom(); });
  searchbox.addEventListener("input", function () { if (searchbox.value) search(searchbox.value); else resetsearch(); });
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); searchbox.focus(); searchbox.select(); }
    else if (e.key === "Escape") { unzoom(); searchbox.value = ""; resetsearch(); }
  });
  window.addEventListener("resize", fit);
  fit();
  (window.location.hash || "").slice(1).split("&").forEach(function (part) {
    var h = decodeURIComponent(part);
    if (h.indexOf("zoom=") === 0) {
      var want = h.slice(5), all = frames();
      for (var i = 0; i < all.length; ++i)
        if (all[i].getAttribute("data-n") === want) { all[i].dispatchEvent(new MouseEvent("click", {bubbles: true})); break; }
    } else if (h.indexOf("search=") === 0) {
      searchbox.value = h.slice(7); searchbox.dispatchEvent(new Event("input"));
    } else if (h === "unzoom") {
      unzoombtn.dispatchEvent(new MouseEvent("click", {bubbles: true}));
    }
  });
}
if (document.readyState === "loading") window.addEventListener("load", init); else init();
)JS";

constexpr const char* kStyle = R"CSS(
text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: 12px; fill: rgb(0,0,0); }
#title { font-size: 17px; text-anchor: middle; }
#subtitle { fill: rgb(80,80,80); text-anchor: middle; }
#searchbox { width: 160px; font: 12px Verdana, "DejaVu Sans", sans-serif; }
.button { cursor: pointer; fill: rgb(40,40,160); }
.hide { display: none; }
g.f { cursor: pointer; }
g.f text { pointer-events: none; font-size: 12px; }
g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }
g.f.parent rect { opacity: 0.5; }
g.f.gone rect, rect.legend.gone { stroke: rgb(60,80,170); stroke-width: 1; stroke-dasharray: 3,2; }
g.f.new rect, rect.legend.new { stroke: rgb(0,0,0); stroke-width: 1; stroke-dasharray: 2,1; }
rect.legend { stroke: rgb(120,120,120); stroke-width: 0.5; }
)CSS";

// Base-only frames of a differential graph: diagonal stripes, so they read
// as "not there any more" at any colour setting.
constexpr const char* kGoneHatchId = "gone-hatch";
std::string GoneHatchDefs() {
  return std::string(R"~(<defs><pattern id=")~") + kGoneHatchId +
         R"~(" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">)~"
         R"~(<rect x="0" y="0" width="6" height="6" fill="rgb(236,238,248)"/>)~"
         R"~(<rect x="0" y="0" width="2" height="6" fill="rgb(90,110,190)"/></pattern></defs>)~" "\n";
}
std::string GoneFill() { return std::string("url(#") + kGoneHatchId + ")"; }

// The differential colour scale: cct-diff's verdict picks the hue, how far
// the inclusive change goes the step. A step's lower bound is the verdict's
// own threshold or the step's bound, whichever is larger.
constexpr const char* kNeutralFill = "rgb(221,221,221)";
constexpr const char* kRegressionFill[3] = {"rgb(250,190,175)", "rgb(240,120,95)", "rgb(205,40,25)"};
constexpr const char* kImprovementFill[3] = {"rgb(190,205,250)", "rgb(120,150,240)", "rgb(40,80,210)"};
constexpr double kRegressionStepTop[3] = {0.25, 1.0, HUGE_VAL};  // change up to +25%, +100%, beyond
constexpr double kImprovementStepTop[3] = {0.2, 0.5, 1.0};      // change down to -20%, -50%, beyond

// 1..3 for a change with a verdict (a new frame's +inf is the top step).
int ChangeStep(diff::Verdict v, double change) {
  const double size = std::fabs(change);
  const double* top = v == diff::Verdict::kRegression ? kRegressionStepTop : kImprovementStepTop;
  for (int s = 0; s < 2; ++s)
    if (size <= top[s]) return s + 1;
  return 3;
}

std::string ChangeFill(diff::Verdict v, double change) {
  if (v == diff::Verdict::kNone) return kNeutralFill;
  const int s = ChangeStep(v, change) - 1;
  return v == diff::Verdict::kRegression ? kRegressionFill[s] : kImprovementFill[s];
}

std::string StepPercent(double fraction, bool regression) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%g%%", regression ? "> +" : "< -", 100 * fraction);
  return buf;
}

// One drawn frame: how it looks and what hovering says.
struct DrawnFrame {
  std::string name;   // as shown (and searched)
  std::string info;   // hover text
  std::string fill;
  std::string cls;    // further classes of the frame's <g> ("gone", "new")
  std::string attrs;  // further attributes, escaped, each with a leading space
  const char* kind;   // data-k
};

struct LegendItem {
  std::string fill;   // empty: a label without a swatch
  std::string label;
  std::string cls;    // the swatch's further classes ("gone", "new")
  std::string attrs;  // the swatch's further attributes, escaped, each with a leading space
  bool new_row = false;  // starts a row of its own (groups stay whole in a narrow window)
};

// What the drawer needs of a graph.
struct FlameSource {
  const cct::Tree* tree = nullptr;
  const std::vector<double>* width = nullptr;          // drawn inclusive width per node, metric units
  std::function<std::string_view(NodeId)> order_key;  // siblings sorted by it
  std::function<DrawnFrame(NodeId)> frame;
  const char* mode = "plain";
  std::string metric_name;
  std::string title;     // default title
  std::string subtitle;  // whole
  std::string defs;
  std::vector<LegendItem> legend;
};

bool UseIcicle(FlameOrientation o, uint32_t levels) {
  switch (o) {
    case FlameOrientation::kFlame: return false;
    case FlameOrientation::kIcicle: return true;
    case FlameOrientation::kAuto: break;
  }
  return levels > kFirstScreenLevels;
}

Status DrawFlame(const FlameSource& src, const FlameOptions& opt, std::ostream& out) {
  if (opt.width < kMinShownWidth) return cct::InvalidArgument("flame graph width must be at least 200 pixels");
  const cct::Tree& tree = *src.tree;
  const std::vector<double>& inc = *src.width;
  const double total = std::max(0.0, inc[cct::kRootNode]);
  const double plot_w = static_cast<double>(opt.width) - 2 * kPad;
  const double px_per_unit = total > 0 ? plot_w / total : 0;
  const cct::Children children = cct::BuildChildren(tree);
  auto drawn = [&](NodeId n) { return inc[n] > 0 && inc[n] * px_per_unit >= opt.min_width_px; };
  // Children of n in key order (stable: equal keys keep creation order).
  auto sorted_children = [&](NodeId n) {
    std::vector<NodeId> kids;
    for (const NodeId* c = children.begin(n); c != children.end(n); ++c)
      if (drawn(*c)) kids.push_back(*c);
    std::stable_sort(kids.begin(), kids.end(), [&](NodeId a, NodeId b) { return src.order_key(a) < src.order_key(b); });
    return kids;
  };

  // Pass 1: levels drawn, for the height and the orientation.
  uint32_t max_depth = 0;
  {
    std::vector<std::pair<NodeId, uint32_t>> stack{{cct::kRootNode, 0}};
    while (!stack.empty()) {
      const auto [n, d] = stack.back();
      stack.pop_back();
      max_depth = std::max(max_depth, d);
      for (const NodeId* c = children.begin(n); c != children.end(n); ++c)
        if (drawn(*c)) stack.push_back({*c, d + 1});
    }
  }
  const uint32_t levels = max_depth + 1;
  const bool icicle = UseIcicle(opt.orientation, levels);

  // Legend items flow left to right and wrap at the file's width.
  struct PlacedItem {
    const LegendItem* item;
    double x, y;
  };
  std::vector<PlacedItem> placed;
  double legend_rows = 1;
  {
    double x = kPad;
    for (const LegendItem& it : src.legend) {
      if (it.fill.empty() && x > kPad) x += 12;  // a group's heading stands apart from the group before
      const double w = (it.fill.empty() ? 0 : 14) + output::DisplayWidth(it.label) * kFontSize * kCharWidth + 12;
      if (x > kPad && (it.new_row || x + w > static_cast<double>(opt.width) - kPad)) {
        x = kPad;
        ++legend_rows;
      }
      placed.push_back({&it, x, 40 + (legend_rows - 1) * kLegendRow});
      x += w;
    }
  }
  const double header = kTop + (legend_rows - 1) * kLegendRow;
  const double frames_top = icicle ? header + kIcicleDetails : header;
  const double height = frames_top + levels * kFrameHeight + (icicle ? kPad : kBottom);
  const double details_y = icicle ? header + 12 : height - 12;
  if (opt.progress) opt.progress->SetTotal(tree.size());

  const std::string title = opt.title.empty() ? src.title : opt.title;
  out << R"(<?xml version="1.0" encoding="UTF-8" standalone="no"?>)" << '\n'
      << R"(<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width=")" << opt.width << R"(" height=")"
      << Num(height) << R"(" viewBox="0 0 )" << opt.width << ' ' << Num(height) << R"(" data-width=")" << opt.width
      << R"(" data-pad=")" << Num(kPad) << R"(" data-fontsize=")" << Num(kFontSize) << R"(" data-charwidth=")"
      << kCharWidth << R"(" data-min-shown-width=")" << Num(kMinShownWidth) << R"(" data-search-width=")"
      << Num(kSearchBoxWidth) << R"(" data-metric=")" << Xml(src.metric_name) << R"(" data-total=")"
      << output::NumberText(total) << R"(" data-mode=")" << src.mode << R"(" data-orientation=")"
      << (icicle ? "icicle" : "flame") << "\">\n";
  out << "<style type=\"text/css\"><![CDATA[" << kStyle << "]]></style>\n";
  out << "<script type=\"text/ecmascript\"><![CDATA[" << kScript << "]]></script>\n";
  out << src.defs;
  out << R"(<rect id="background" x="0" y="0" width=")" << opt.width << R"(" height=")" << Num(height)
      << R"~(" fill="rgb(248,248,240)"/>)~" << '\n';
  out << R"(<text id="title" x=")" << Num(opt.width / 2.0) << R"(" y="20">)" << Xml(title) << "</text>\n";
  out << R"(<text id="subtitle" x=")" << Num(opt.width / 2.0) << R"(" y="36">)" << Xml(src.subtitle) << "</text>\n";
  out << R"(<text id="unzoom" class="button hide" x=")" << Num(kPad) << R"(" y="20">Reset zoom</text>)" << '\n';
  out << R"(<foreignObject id="searchfield" x=")" << Num(opt.width - kPad - kSearchBoxWidth)
      << R"(" y="4" width=")" << Num(kSearchBoxWidth) << R"(" height="24">)"
      << R"(<input xmlns="http://www.w3.org/1999/xhtml" id="searchbox" type="search" )"
      << R"~(placeholder="Search (regex)" title="Frames whose names match a regular expression"/></foreignObject>)~"
      << '\n';
  for (const PlacedItem& p : placed) {
    double x = p.x;
    if (!p.item->fill.empty()) {
      out << R"(<rect class="legend)" << (p.item->cls.empty() ? "" : " " + p.item->cls) << '"' << p.item->attrs
          << R"( x=")" << Num(x) << R"(" y=")" << Num(p.y)
          << R"(" width="10" height="10" fill=")" << p.item->fill << R"("/>)";
      x += 14;
    }
    out << R"(<text x=")" << Num(x) << R"(" y=")" << Num(p.y + 9) << R"(">)" << Xml(p.item->label) << "</text>\n";
  }
  out << R"(<text id="details" x=")" << Num(kPad) << R"(" y=")" << Num(details_y) << R"("> </text>)" << '\n';
  out << R"(<text id="matched" x=")" << Num(opt.width - kPad - 110) << R"(" y=")" << Num(details_y)
      << R"("></text>)" << '\n';
  out << "<g id=\"frames\">\n";

  // Pass 2: frames, preorder, x accumulated along the siblings.
  struct Item {
    NodeId node;
    uint32_t depth;
    double x;  // in metric units from the left edge
  };
  std::vector<Item> stack{{cct::kRootNode, 0, 0}};
  uint64_t done = 0;
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const NodeId n = it.node;
    const double w = inc[n];
    const DrawnFrame f = src.frame(n);
    const double fx = total > 0 ? it.x / total : 0, fw = total > 0 ? w / total : 0;
    const double px = kPad + fx * plot_w, pw = fw * plot_w;
    const double y = icicle ? frames_top + it.depth * kFrameHeight : frames_top + (max_depth - it.depth) * kFrameHeight;
    out << "<g class=\"f" << (f.cls.empty() ? "" : " " + f.cls) << "\" data-k=\"" << f.kind << "\" data-n=\""
        << Xml(f.name) << "\" data-d=\"" << it.depth << "\" data-x=\"" << output::NumberText(fx) << "\" data-w=\""
        << output::NumberText(fw) << "\"" << f.attrs << "><title>" << Xml(f.info) << "</title><rect x=\"" << Num(px)
        << "\" y=\"" << Num(y) << "\" width=\"" << Num(pw) << "\" height=\"" << Num(kFrameHeight - 1)
        << "\" fill=\"" << f.fill << "\" rx=\"2\" ry=\"2\"/><text x=\"" << Num(px + 3) << "\" y=\""
        << Num(y + kFrameHeight - 5) << "\">" << Xml(FitLabel(f.name, pw)) << "</text></g>\n";
    const std::vector<NodeId> kids = sorted_children(n);
    double x = it.x;
    std::vector<Item> next;
    for (NodeId c : kids) {
      next.push_back({c, it.depth + 1, x});
      x += inc[c];
    }
    for (auto r = next.rbegin(); r != next.rend(); ++r) stack.push_back(*r);
    if (opt.progress) opt.progress->Update(++done);
  }
  out << "</g>\n</svg>\n";
  if (!out) return cct::IoError("cannot write the flame graph");
  return Status::Ok();
}

}  // namespace

cct::Result<FlameOrientation> ParseFlameOrientation(const std::string& text) {
  if (text == "auto") return FlameOrientation::kAuto;
  if (text == "flame") return FlameOrientation::kFlame;
  if (text == "icicle") return FlameOrientation::kIcicle;
  return cct::InvalidArgument("--orientation must be auto, flame or icicle");
}

Status WriteFlameGraph(const cct::Tree& tree, const FlameOptions& opt, std::ostream& out) {
  const cct::MetricRegistry& reg = tree.metrics();
  MetricId metric = cct::kNoMetric;
  if (opt.metric.empty()) {
    for (MetricId m = 0; m < reg.size() && metric == cct::kNoMetric; ++m)
      if (reg.Get(m).kind == cct::MetricKind::kAdditive) metric = m;
    if (metric == cct::kNoMetric) return cct::NotFound("the run has no additive metric to draw");
  } else {
    CCT_ASSIGN_OR_RETURN(std::vector<MetricId> ids, query::ResolveMetrics(tree, {opt.metric}));
    metric = ids.front();
    if (reg.Get(metric).kind != cct::MetricKind::kAdditive)
      return cct::InvalidArgument("flame graph widths need an additive metric; '" + opt.metric + "' is " +
                                  std::string(cct::MetricKindName(reg.Get(metric).kind)));
  }
  std::vector<MetricId> detail_ids;
  if (!opt.details.empty()) {
    CCT_ASSIGN_OR_RETURN(detail_ids, query::ResolveMetrics(tree, opt.details));
  }
  const cct::MetricDesc& md = reg.Get(metric);
  cct::NodeValues values(tree);
  const std::vector<double>& inc = values.Inclusive(metric);
  const std::vector<double>& exc = values.Exclusive(metric);
  std::vector<const std::vector<double>*> dinc, dexc;
  for (MetricId m : detail_ids) {
    dinc.push_back(&values.Inclusive(m));
    dexc.push_back(&values.Exclusive(m));
  }
  const double total = std::max(0.0, inc[cct::kRootNode]);

  FlameSource src;
  src.tree = &tree;
  src.width = &inc;
  src.order_key = [&](NodeId n) { return tree.name(n); };
  src.frame = [&](NodeId n) {
    DrawnFrame f;
    const double w = inc[n];
    f.name = n == cct::kRootNode ? "all" : output::DisplayName(tree, n);
    f.info = f.name + "\n" + md.name + ": " + output::FormatValue(w, md.unit, false) + " (" +
             output::FormatPercent(w, total) + ")";
    if (exc[n] != 0) f.info += ", self " + output::FormatValue(exc[n], md.unit, false);
    for (size_t i = 0; i < detail_ids.size(); ++i) {
      const cct::MetricDesc& d = reg.Get(detail_ids[i]);
      const double v = (*dinc[i])[n], e = (*dexc[i])[n];
      if (v == 0 && e == 0) continue;
      f.info += "\n" + d.name + ": " + output::FormatValue(v, d.unit, false);
      if (e != 0 && d.kind == cct::MetricKind::kAdditive) f.info += ", self " + output::FormatValue(e, d.unit, false);
    }
    const cct::Frame fr = tree.frame(n);
    f.fill = n == cct::kRootNode ? "rgb(200,200,200)" : KindColour(fr.kind, tree.name(n));
    f.kind = n == cct::kRootNode ? "root" : KindClass(fr.kind);
    return f;
  };
  src.metric_name = md.name;
  src.title = "Flame graph";
  const std::string totals = md.name + " " + output::FormatValue(total, md.unit, false) + " total";
  src.subtitle = opt.subtitle.empty() ? totals : opt.subtitle + ": " + totals;
  src.legend = {{"rgb(230,100,20)", "CPU", "", ""},
                {"rgb(170,125,230)", "NVTX", "", ""},
                {"rgb(90,205,115)", "GPU", "", ""},
                {"rgb(180,190,210)", "thread", "", ""}};
  return DrawFlame(src, opt, out);
}

Status WriteDiffFlameGraph(const diff::DiffResult& r, size_t metric, const FlameOptions& opt, std::ostream& out) {
  using diff::NodeStatus;
  using diff::Verdict;
  if (metric >= r.metrics().size()) return cct::InvalidArgument("no such metric in the comparison");
  const diff::MetricDiff& md = r.metrics()[metric];
  if (!md.additive)
    return cct::InvalidArgument("flame graph widths need an additive metric; '" + md.name + "' is derived");
  const cct::Tree& tree = r.tree();
  // Drawn widths: the candidate's exclusive values, a gone frame's base
  // ones, summed up the tree (a child's id is above its parent's), so a gone
  // subtree widens its ancestors by what it took in the base.
  std::vector<double> width(tree.size(), 0.0);
  for (NodeId n = 0; n < tree.size(); ++n)
    width[n] = std::max(0.0, r.status(n) == NodeStatus::kGone ? md.base_exc[n] : md.cand_exc[n]);
  for (NodeId n = static_cast<NodeId>(tree.size()); n-- > 1;) width[tree.parent(n)] += width[n];

  FlameSource src;
  src.tree = &tree;
  src.width = &width;
  src.order_key = [&](NodeId n) { return r.name(n); };
  src.frame = [&](NodeId n) {
    namespace dr = diff_report;
    DrawnFrame f;
    f.name = n == cct::kRootNode ? "all" : dr::Display(r, n);
    const double b = md.base_inc[n], c = md.cand_inc[n];
    const Verdict v = md.verdict[n];
    const NodeStatus s = r.status(n);
    f.info = f.name + "\n" + md.name + ": " + dr::Value(b, md.unit, false) + " -> " + dr::Value(c, md.unit, false);
    const std::string change = dr::ChangeText(r, metric, n);
    if (c != b) f.info += " (" + dr::Delta(c - b, md.unit, false) + (change.empty() ? "" : ", " + change) + ")";
    f.info += "\nself: " + dr::Value(md.base_exc[n], md.unit, false) + " -> " + dr::Value(md.cand_exc[n], md.unit, false);
    f.info += "\nverdict: " + (v == Verdict::kNone ? std::string("none") : std::string(diff::VerdictName(v)));
    if (r.tested()) f.info += ", p " + dr::PText(r.PValue(metric, n));
    f.fill = s == NodeStatus::kGone ? GoneFill() : ChangeFill(v, r.Change(metric, n));
    if (s != NodeStatus::kBoth) f.cls = std::string(diff::StatusName(s));
    f.attrs = " data-s=\"" + std::string(diff::StatusName(s)) + "\" data-v=\"" + std::string(diff::VerdictName(v)) +
              "\"";
    if (v != Verdict::kNone) f.attrs += " data-step=\"" + std::to_string(ChangeStep(v, r.Change(metric, n))) + "\"";
    f.kind = n == cct::kRootNode ? "root" : KindClass(tree.kind(n));
    return f;
  };
  src.mode = "diff";
  src.metric_name = md.name;
  src.title = "Differential flame graph";
  const std::string rule = diff_report::VerdictRuleText(r, md, false);
  src.subtitle = (opt.subtitle.empty() ? "" : opt.subtitle + ": ") + md.name + " " +
                 diff_report::Value(md.base_inc[cct::kRootNode], md.unit, false) + " -> " +
                 diff_report::Value(md.cand_inc[cct::kRootNode], md.unit, false) + "; verdict: " + rule;
  src.defs = GoneHatchDefs();
  // The legend is the scale ChangeFill draws with, at this comparison's
  // threshold: steps a verdict cannot reach are left out.
  const double t = r.options().threshold;
  for (const Verdict v : {Verdict::kRegression, Verdict::kImprovement}) {
    const bool reg = v == Verdict::kRegression;
    src.legend.push_back({"", reg ? "regression:" : "improvement:", "", ""});
    const double* top = reg ? kRegressionStepTop : kImprovementStepTop;
    for (int s = 0; s < 3; ++s) {
      const double low = std::max(t, s == 0 ? 0.0 : top[s - 1]);
      if (low >= top[s]) continue;
      src.legend.push_back({reg ? kRegressionFill[s] : kImprovementFill[s], StepPercent(low, reg), "",
                            " data-v=\"" + std::string(diff::VerdictName(v)) + "\" data-step=\"" +
                                std::to_string(s + 1) + "\""});
    }
  }
  // The scales on one row, what is not a change on the next: each row fits
  // a window of about 600 px.
  src.legend.push_back({kNeutralFill, "no verdict: inside the noise band", "", " data-v=\"\"", true});
  src.legend.push_back({GoneFill(), "gone: base only, at its base width", "gone", " data-s=\"gone\""});
  src.legend.push_back({kNeutralFill, "new: candidate only", "new", " data-s=\"new\""});
  return DrawFlame(src, opt, out);
}

cct::Status FlameCommand(const ReportRequest& request, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(ReportOptions opt, ParseReportOptions(request));
  CCT_ASSIGN_OR_RETURN(query::Profile profile, LoadRequestProfile(request, /*keep_lines=*/false));
  FlameOptions fo;
  if (opt.metrics.size() > 1) {
    fo.metric = opt.metrics.front();
    fo.details.assign(opt.metrics.begin() + 1, opt.metrics.end());
  } else if (!opt.metrics.empty()) {
    fo.metric = opt.metrics.front();
  }
  if (request.title) fo.title = *request.title;
  if (request.min_width) {
    fo.min_width_px = *request.min_width;
    if (!(fo.min_width_px >= 0)) return cct::InvalidArgument("--min-width must be 0 or more pixels");
  }
  if (request.image_width) fo.width = *request.image_width;
  if (request.orientation) {
    CCT_ASSIGN_OR_RETURN(fo.orientation, ParseFlameOrientation(*request.orientation));
  }
  fo.subtitle = profile.label;
  output::Progress progress = output::Progress::ForStderr("drawing flame graph");
  fo.progress = &progress;
  cct::Status s = WriteFlameGraph(profile.tree, fo, out);
  progress.Finish();
  return s;
}

}  // namespace reports
