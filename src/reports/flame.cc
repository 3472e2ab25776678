// Flame graph SVG writer (see flame.h). The SVG carries its own small
// script and style, so the file is all a browser needs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "output/format.h"
#include "output/progress.h"
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
constexpr double kTop = 54;     // title, subtitle, buttons, legend
constexpr double kBottom = 34;  // details line

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

// Red for more, blue for less, white for no change; `strength` in [0, 1].
std::string DeltaColour(double delta, double strength) {
  if (delta == 0 || strength <= 0) return "rgb(250,250,250)";
  const int k = static_cast<int>(std::round(40 + 190 * std::min(1.0, strength)));
  char buf[48];
  if (delta > 0) std::snprintf(buf, sizeof buf, "rgb(255,%d,%d)", 255 - k, 255 - k);
  else std::snprintf(buf, sizeof buf, "rgb(%d,%d,255)", 255 - k, 255 - k);
  return buf;
}

std::string SignedValue(double v, cct::Unit unit) {
  if (v == 0) return "0";
  return (v > 0 ? "+" : "-") + output::FormatValue(std::fabs(v), unit, false);
}

std::string FitLabel(std::string_view name, double width_px) {
  const int chars = static_cast<int>((width_px - 6) / (kFontSize * kCharWidth));
  if (chars < 3) return "";
  if (static_cast<int>(output::DisplayWidth(name)) <= chars) return std::string(name);
  return output::ElideMiddle(name, static_cast<size_t>(chars), true).substr(0, std::string::npos);
}

// The script: zoom, search, details; also the URL-fragment hooks for tests.
constexpr const char* kScript = R"JS(
"use strict";
var svg = document.documentElement, details, matchedtxt, searchbtn, unzoombtn;
var W = +svg.getAttribute("data-width"), PAD = +svg.getAttribute("data-pad");
var FS = +svg.getAttribute("data-fontsize"), CW = +svg.getAttribute("data-charwidth");
var searching = null;
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
function zoom(target) {
  var x0 = fx(target), w0 = fw(target), d0 = fd(target), eps = 1e-9, scale = (W - 2 * PAD) / w0;
  frames().forEach(function (g) {
    var x = fx(g), w = fw(g), d = fd(g);
    g.classList.remove("hide"); g.classList.remove("parent");
    if (d < d0 && x <= x0 + eps && x + w >= x0 + w0 - eps) { g.classList.add("parent"); place(g, 0, W - 2 * PAD); }
    else if (d >= d0 && x >= x0 - eps && x + w <= x0 + w0 + eps) { place(g, (x - x0) * scale, w * scale); }
    else { g.classList.add("hide"); }
  });
  svg.setAttribute("data-zoomed", target.getAttribute("data-n"));
  unzoombtn.classList.remove("hide");
}
function unzoom() {
  frames().forEach(function (g) {
    g.classList.remove("hide"); g.classList.remove("parent");
    place(g, fx(g) * (W - 2 * PAD), fw(g) * (W - 2 * PAD));
  });
  svg.removeAttribute("data-zoomed");
  unzoombtn.classList.add("hide");
}
function search(re) {
  var rx;
  try { rx = new RegExp(re); } catch (e) { return; }
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
  searchbtn.classList.add("active");
}
function resetsearch() {
  frames().forEach(function (g) {
    var r = g.querySelector("rect");
    if (r.hasAttribute("data-fill")) { r.setAttribute("fill", r.getAttribute("data-fill")); r.removeAttribute("data-fill"); }
    g.classList.remove("match");
  });
  searching = null; matchedtxt.textContent = ""; svg.removeAttribute("data-search");
  searchbtn.classList.remove("active");
}
function frameOf(e) {
  for (var n = e.target; n && n !== svg; n = n.parentNode) if (n.classList && n.classList.contains("f")) return n;
  return null;
}
function init() {
  details = document.getElementById("details"); matchedtxt = document.getElementById("matched");
  searchbtn = document.getElementById("search"); unzoombtn = document.getElementById("unzoom");
  svg.addEventListener("click", function (e) { var g = frameOf(e); if (g) zoom(g); });
  svg.addEventListener("mouseover", function (e) {
    var g = frameOf(e); if (g) details.textContent = g.querySelector("title").textContent.replace(/\n/g, "  ");
  });
  svg.addEventListener("mouseout", function (e) { if (frameOf(e)) details.textContent = " "; });
  unzoombtn.addEventListener("click", function (e) { e.stopPropagation(); unzoom(); });
  searchbtn.addEventListener("click", function (e) {
    e.stopPropagation();
    if (searching !== null) { resetsearch(); return; }
    var re = prompt("Search frames (regular expression):", ""); if (re) search(re);
  });
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); var re = prompt("Search frames (regular expression):", ""); if (re) search(re); }
    else if (e.key === "Escape") { unzoom(); resetsearch(); }
  });
  var h = decodeURIComponent((window.location.hash || "").slice(1));
  if (h.indexOf("zoom=") === 0) {
    var want = h.slice(5), all = frames();
    for (var i = 0; i < all.length; ++i)
      if (all[i].getAttribute("data-n") === want) { all[i].dispatchEvent(new MouseEvent("click", {bubbles: true})); break; }
  } else if (h.indexOf("search=") === 0) {
    search(h.slice(7));
  }
}
if (document.readyState === "loading") window.addEventListener("load", init); else init();
)JS";

constexpr const char* kStyle = R"CSS(
text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: 12px; fill: rgb(0,0,0); }
#title { font-size: 17px; text-anchor: middle; }
#subtitle { fill: rgb(80,80,80); text-anchor: middle; }
.button { cursor: pointer; fill: rgb(40,40,160); }
.button.active { font-weight: bold; }
.hide { display: none; }
g.f { cursor: pointer; }
g.f text { pointer-events: none; font-size: 12px; }
g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }
g.f.parent rect { opacity: 0.5; }
rect.legend { stroke: rgb(120,120,120); stroke-width: 0.5; }
)CSS";

}  // namespace

cct::Result<FlameBaseline> MatchFlameBaseline(const cct::Tree& base, const cct::Tree& cand, const std::string& metric) {
  const MetricId cm = metric.empty() ? cct::kNoMetric : cand.metrics().Find(metric);
  if (cm == cct::kNoMetric) return cct::InvalidArgument("no metric '" + metric + "' in the candidate");
  if (cand.metrics().Get(cm).kind != cct::MetricKind::kAdditive)
    return cct::InvalidArgument("flame graphs need an additive metric; '" + metric + "' is derived");
  FlameBaseline out;
  out.inclusive.assign(cand.size(), 0.0);
  out.exclusive.assign(cand.size(), 0.0);
  const MetricId bm = base.metrics().Find(metric);
  if (bm == cct::kNoMetric) return out;
  if (base.metrics().Get(bm).kind != cct::MetricKind::kAdditive)
    return cct::InvalidArgument("'" + metric + "' is derived in the baseline");
  // Frames of both trees by identity, as small integers.
  std::unordered_map<std::string, uint32_t> identity;
  auto ids_of = [&](const cct::Tree& t) {
    std::vector<uint32_t> v(t.frames().size());
    for (cct::FrameId f = 0; f < t.frames().size(); ++f)
      v[f] = identity.emplace(cct::FrameIdentity(t, f), static_cast<uint32_t>(identity.size())).first->second;
    return v;
  };
  const std::vector<uint32_t> base_ids = ids_of(base), cand_ids = ids_of(cand);
  std::unordered_map<uint64_t, NodeId> base_child;  // (parent, identity) -> first such child
  base_child.reserve(base.size());
  for (NodeId n = 1; n < base.size(); ++n)
    base_child.emplace((static_cast<uint64_t>(base.parent(n)) << 32) | base_ids[base.frame_id(n)], n);
  cct::NodeValues bv(base);
  const std::vector<double>& binc = bv.Inclusive(bm);
  const std::vector<double>& bexc = bv.Exclusive(bm);
  std::vector<NodeId> match(cand.size(), cct::kNoNode);
  match[cct::kRootNode] = cct::kRootNode;
  out.inclusive[cct::kRootNode] = binc[cct::kRootNode];
  out.exclusive[cct::kRootNode] = bexc[cct::kRootNode];
  for (NodeId n = 1; n < cand.size(); ++n) {
    const NodeId bp = match[cand.parent(n)];
    if (bp == cct::kNoNode) continue;
    auto it = base_child.find((static_cast<uint64_t>(bp) << 32) | cand_ids[cand.frame_id(n)]);
    if (it == base_child.end()) continue;
    match[n] = it->second;
    out.inclusive[n] = binc[it->second];
    out.exclusive[n] = bexc[it->second];
  }
  return out;
}

Status WriteDiffFlameGraph(const cct::Tree& base, const cct::Tree& cand, const FlameOptions& options,
                           std::ostream& out) {
  std::string metric = options.metric;
  if (metric.empty()) {
    for (MetricId m = 0; m < cand.metrics().size() && metric.empty(); ++m)
      if (cand.metrics().Get(m).kind == cct::MetricKind::kAdditive) metric = cand.metrics().Get(m).name;
    if (metric.empty()) return cct::NotFound("the candidate has no additive metric");
  }
  CCT_ASSIGN_OR_RETURN(FlameBaseline baseline, MatchFlameBaseline(base, cand, metric));
  FlameOptions o = options;
  o.metric = metric;
  o.baseline = &baseline;
  return WriteFlameGraph(cand, o, out);
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
      return cct::InvalidArgument("flame graph widths need an additive metric; '" + opt.metric + "' is derived");
  }
  std::vector<MetricId> detail_ids;
  if (!opt.details.empty()) {
    CCT_ASSIGN_OR_RETURN(detail_ids, query::ResolveMetrics(tree, opt.details));
  }
  if (opt.baseline && (opt.baseline->inclusive.size() != tree.size() || opt.baseline->exclusive.size() != tree.size()))
    return cct::InvalidArgument("the flame graph baseline does not match the tree (" +
                                std::to_string(opt.baseline->inclusive.size()) + " values for " +
                                std::to_string(tree.size()) + " nodes)");
  if (opt.width < 200) return cct::InvalidArgument("flame graph width must be at least 200 pixels");

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
  const double plot_w = static_cast<double>(opt.width) - 2 * kPad;
  const double px_per_unit = total > 0 ? plot_w / total : 0;
  const cct::Children children = cct::BuildChildren(tree);
  auto drawn = [&](NodeId n) { return inc[n] > 0 && inc[n] * px_per_unit >= opt.min_width_px; };
  // Children of n in name order (stable: equal names keep creation order).
  auto sorted_children = [&](NodeId n) {
    std::vector<NodeId> kids;
    for (const NodeId* c = children.begin(n); c != children.end(n); ++c)
      if (drawn(*c)) kids.push_back(*c);
    std::stable_sort(kids.begin(), kids.end(), [&](NodeId a, NodeId b) { return tree.name(a) < tree.name(b); });
    return kids;
  };

  // Pass 1: depth of the drawn frames, and the largest change for colours.
  uint32_t max_depth = 0;
  double max_delta = 0;
  {
    std::vector<std::pair<NodeId, uint32_t>> stack{{cct::kRootNode, 0}};
    while (!stack.empty()) {
      const auto [n, d] = stack.back();
      stack.pop_back();
      max_depth = std::max(max_depth, d);
      if (opt.baseline && n != cct::kRootNode)
        max_delta = std::max(max_delta, std::fabs(exc[n] - opt.baseline->exclusive[n]));
      for (const NodeId* c = children.begin(n); c != children.end(n); ++c)
        if (drawn(*c)) stack.push_back({*c, d + 1});
    }
  }
  const double height = kTop + (max_depth + 1) * kFrameHeight + kBottom;
  if (opt.progress) opt.progress->SetTotal(tree.size());

  const std::string title = opt.title.empty() ? (opt.baseline ? "Differential flame graph" : "Flame graph") : opt.title;
  out << R"(<?xml version="1.0" encoding="UTF-8" standalone="no"?>)" << '\n'
      << R"(<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width=")" << opt.width << R"(" height=")"
      << Num(height) << R"(" viewBox="0 0 )" << opt.width << ' ' << Num(height) << R"(" data-width=")" << opt.width
      << R"(" data-pad=")" << Num(kPad) << R"(" data-fontsize=")" << Num(kFontSize) << R"(" data-charwidth=")"
      << kCharWidth << R"(" data-metric=")" << Xml(md.name) << R"(" data-total=")" << output::NumberText(total)
      << R"(" data-mode=")" << (opt.baseline ? "diff" : "plain") << "\">\n";
  out << "<style type=\"text/css\"><![CDATA[" << kStyle << "]]></style>\n";
  out << "<script type=\"text/ecmascript\"><![CDATA[" << kScript << "]]></script>\n";
  out << R"(<rect x="0" y="0" width=")" << opt.width << R"(" height=")" << Num(height)
      << R"~(" fill="rgb(248,248,240)"/>)~" << '\n';
  out << R"(<text id="title" x=")" << Num(opt.width / 2.0) << R"(" y="20">)" << Xml(title) << "</text>\n";
  const std::string totals = md.name + " " + output::FormatValue(total, md.unit, false) + " total";
  const std::string subtitle = opt.subtitle.empty() ? totals : opt.subtitle + ": " + totals;
  out << R"(<text id="subtitle" x=")" << Num(opt.width / 2.0) << R"(" y="36">)" << Xml(subtitle) << "</text>\n";
  out << R"(<text id="unzoom" class="button hide" x=")" << Num(kPad) << R"(" y="20">Reset zoom</text>)" << '\n';
  out << R"(<text id="search" class="button" x=")" << Num(opt.width - kPad - 60) << R"(" y="20">Search</text>)"
      << '\n';
  // Legend.
  {
    double x = kPad;
    auto item = [&](const std::string& fill, const char* label) {
      out << R"(<rect class="legend" x=")" << Num(x) << R"(" y="40" width="10" height="10" fill=")" << fill
          << R"("/><text x=")" << Num(x + 14) << R"(" y="49">)" << label << "</text>\n";
      x += 14 + std::strlen(label) * kFontSize * kCharWidth + 12;
    };
    if (opt.baseline) {
      item(DeltaColour(1, 1), "slower (more in candidate)");
      item(DeltaColour(-1, 1), "faster (less in candidate)");
    } else {
      item("rgb(230,100,20)", "CPU");
      item("rgb(170,125,230)", "NVTX");
      item("rgb(90,205,115)", "GPU");
      item("rgb(180,190,210)", "thread");
    }
  }
  out << R"(<text id="details" x=")" << Num(kPad) << R"(" y=")" << Num(height - 12) << R"("> </text>)" << '\n';
  out << R"(<text id="matched" x=")" << Num(opt.width - kPad - 110) << R"(" y=")" << Num(height - 12)
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
    const cct::Frame f = tree.frame(n);
    const std::string name = n == cct::kRootNode ? "all" : output::DisplayName(tree, n);
    std::string info = name + "\n" + md.name + ": " + output::FormatValue(w, md.unit, false) + " (" +
                       output::FormatPercent(w, total) + ")";
    if (exc[n] != 0) info += ", self " + output::FormatValue(exc[n], md.unit, false);
    std::string fill;
    if (opt.baseline) {
      const double b_inc = opt.baseline->inclusive[n], d_inc = w - b_inc, d_exc = exc[n] - opt.baseline->exclusive[n];
      info += "\nbaseline: " + output::FormatValue(b_inc, md.unit, false) + "; change " + SignedValue(d_inc, md.unit);
      if (b_inc != 0) {
        char pct[32];
        std::snprintf(pct, sizeof pct, " (%+.1f%%)", 100.0 * d_inc / b_inc);
        info += pct;
      } else if (w != 0) {
        info += " (new)";
      }
      info += ", self " + SignedValue(d_exc, md.unit);
      fill = DeltaColour(d_exc, max_delta > 0 ? std::fabs(d_exc) / max_delta : 0);
    } else {
      fill = n == cct::kRootNode ? "rgb(200,200,200)" : KindColour(f.kind, tree.name(n));
    }
    for (size_t i = 0; i < detail_ids.size(); ++i) {
      const cct::MetricDesc& d = reg.Get(detail_ids[i]);
      const double v = (*dinc[i])[n], e = (*dexc[i])[n];
      if (v == 0 && e == 0) continue;
      info += "\n" + d.name + ": " + output::FormatValue(v, d.unit, false);
      if (e != 0 && d.kind == cct::MetricKind::kAdditive) info += ", self " + output::FormatValue(e, d.unit, false);
    }
    const double fx = total > 0 ? it.x / total : 0, fw = total > 0 ? w / total : 0;
    const double px = kPad + fx * plot_w, pw = fw * plot_w;
    const double y = height - kBottom - (it.depth + 1) * kFrameHeight;
    out << "<g class=\"f\" data-k=\"" << (n == cct::kRootNode ? "root" : KindClass(f.kind)) << "\" data-n=\""
        << Xml(name) << "\" data-d=\"" << it.depth << "\" data-x=\"" << output::NumberText(fx) << "\" data-w=\"" << output::NumberText(fw)
        << "\"><title>"
        << Xml(info) << "</title><rect x=\"" << Num(px) << "\" y=\"" << Num(y) << "\" width=\"" << Num(pw)
        << "\" height=\"" << Num(kFrameHeight - 1) << "\" fill=\"" << fill << "\" rx=\"2\" ry=\"2\"/><text x=\""
        << Num(px + 3) << "\" y=\"" << Num(y + kFrameHeight - 5) << "\">" << Xml(FitLabel(name, pw))
        << "</text></g>\n";
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
  fo.subtitle = profile.label;
  output::Progress progress = output::Progress::ForStderr("drawing flame graph");
  fo.progress = &progress;
  cct::Status s = WriteFlameGraph(profile.tree, fo, out);
  progress.Finish();
  return s;
}

}  // namespace reports
