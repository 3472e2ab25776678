#include "reports/diff_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "output/format.h"
#include "output/json_writer.h"
#include "output/text_table.h"

namespace cctdiff {

using cct::NodeId;
using diff::DiffResult;
using diff::MetricDiff;
using diff::NodeStatus;
using diff::Verdict;

cct::Result<Format> ParseFormat(const std::string& s) {
  if (s == "text") return Format::kText;
  if (s == "json") return Format::kJson;
  if (s == "markdown" || s == "md") return Format::kMarkdown;
  if (s == "csv") return Format::kCsv;
  return cct::InvalidArgument("unknown format '" + s + "' (expected text, json, markdown or csv)");
}

namespace {

constexpr const char* kRed = "\x1b[31m";
constexpr const char* kGreen = "\x1b[32m";
constexpr const char* kReset = "\x1b[0m";

// ------------------------------------------------------------ formatting

std::string Display(const DiffResult& r, NodeId n) {
  const std::string name(r.name(n));
  switch (r.tree().kind(n)) {
    case cct::FrameKind::kNvtx: return "[nvtx] " + name;
    case cct::FrameKind::kThread: return "[thread] " + name;
    default: return name;
  }
}

std::vector<std::string> DisplayPath(const DiffResult& r, NodeId n) {
  std::vector<std::string> out;
  for (; n != cct::kRootNode; n = r.tree().parent(n)) out.push_back(Display(r, n));
  std::reverse(out.begin(), out.end());
  return out;
}

std::string Value(double v, cct::Unit unit, bool ascii) { return query::FormatValue(v, unit, ascii); }

// A difference of percentages is in percentage points ("+25.0 pp"), so it
// cannot be read as a relative change.
std::string Delta(double d, cct::Unit unit, bool ascii) {
  if (d == 0) return "0";
  std::string s = query::FormatValue(d, unit, ascii);
  if (unit == cct::Unit::kPercent && !s.empty() && s.back() == '%') s.replace(s.size() - 1, 1, " pp");
  return d > 0 ? "+" + s : s;
}

// Three significant digits with a sign: +11.8, -0.52, +123, +1234.
std::string SignedSig3(double x) {
  char buf[64];
  const double a = std::fabs(x);
  const int decimals = a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2;
  std::snprintf(buf, sizeof buf, "%+.*f", decimals, x);
  return buf;
}

std::string Percent(double fraction) { return SignedSig3(100 * fraction) + "%"; }

std::string ChangeText(const DiffResult& r, size_t m, NodeId n) {
  switch (r.status(n)) {
    case NodeStatus::kNew: return "new";
    case NodeStatus::kGone: return "gone";
    case NodeStatus::kBoth: break;
  }
  const MetricDiff& md = r.metrics()[m];
  if (md.base_inc[n] == md.cand_inc[n]) return "";
  if (md.base_inc[n] == 0) return "new";
  return Percent(r.Change(m, n));
}

std::string IntervalText(const std::optional<std::pair<double, double>>& ci) {
  if (!ci) return "";
  return SignedSig3(100 * (ci->first - 1)) + ".." + SignedSig3(100 * (ci->second - 1)) + "%";
}

std::string PText(double p) {
  if (std::isnan(p)) return "";
  if (p < 0.0001) return "<0.0001";
  if (p >= 0.9995) return "1";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", p);
  return buf;
}

std::string MinAbsText(const DiffResult& r, const MetricDiff& md, bool ascii) {
  std::string s = query::FormatValue(md.min_abs, md.unit, ascii);
  if (md.unit == cct::Unit::kPercent && !s.empty() && s.back() == '%') s.replace(s.size() - 1, 1, " pp");
  if (r.options().min_abs.fraction) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", 100 * r.options().min_abs.value);
    s += " (" + std::string(buf) + "% of the base total)";
  }
  return s;
}

std::string ThresholdText(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", 100 * t);
  return buf;
}

std::string RunsText(size_t n) { return std::to_string(n) + (n == 1 ? " run" : " runs"); }

// Header facts shared by the text and markdown summaries.
struct Facts {
  std::vector<std::pair<std::string, std::string>> lines;  // key, value
  std::string headline;                                   // "3 regressions, 1 improvement"
};

Facts GatherFacts(const DiffResult& r, const diff::Side& base, const diff::Side& cand, bool ascii) {
  Facts f;
  f.lines.emplace_back("base", base.label);
  f.lines.emplace_back("candidate", cand.label);
  std::string metrics;
  for (const MetricDiff& md : r.metrics()) metrics += (metrics.empty() ? "" : ", ") + md.name;
  if (r.options().normalize_total) metrics += " as shares of each run's total (--normalize-total)";
  f.lines.emplace_back(r.metrics().size() == 1 ? "metric" : "metrics", metrics);
  std::string align = "path identity";
  if (r.options().align.normalize.kernels) align += ", kernel and function names normalized";
  if (r.options().align.fold_recursion) align += ", direct recursion folded";
  f.lines.emplace_back("aligned", align);
  const double alpha = r.options().alpha;
  char alpha_text[32];
  std::snprintf(alpha_text, sizeof alpha_text, "%g", alpha);
  if (r.tested()) {
    f.lines.emplace_back("test", "Mann-Whitney U (two-sided), alpha " + std::string(alpha_text) +
                                     "; 95% interval of the ratio of means");
  }
  for (const MetricDiff& md : r.metrics()) {
    std::string v = "change > " + ThresholdText(r.options().threshold) + " and > " + MinAbsText(r, md, ascii);
    if (r.tested()) v += " and p < " + std::string(alpha_text);
    f.lines.emplace_back(r.metrics().size() == 1 ? "verdict" : "verdict " + md.name, v);
  }
  const size_t nb = r.base_runs(), nc = r.cand_runs();
  if (nb == 1 && nc == 1 && !base.group && !cand.group) {
    f.lines.emplace_back("note", "single runs: no significance test, so noise counts as change; compare "
                                 "groups (tag:KEY=VALUE) of 5+ runs a side");
  } else if (!r.tested()) {
    f.lines.emplace_back("note", RunsText(nb) + " vs " + RunsText(nc) + ": fewer than " +
                                     std::to_string(diff::kMinRunsForTest) +
                                     " on a side, so no significance test; verdicts use the thresholds only");
  } else if (r.smallest_p() >= alpha) {
    f.lines.emplace_back("note", RunsText(nb) + " vs " + RunsText(nc) + ": no p-value can fall below " +
                                     PText(r.smallest_p()) + ", not below alpha " + alpha_text +
                                     ", so nothing can be significant; use 5+ runs a side");
  }
  // Counted as the lists show them: the root is the total, reported apart.
  size_t reg = 0, imp = 0;
  bool total_reg = false, total_imp = false;
  for (const MetricDiff& md : r.metrics()) {
    const Verdict root = md.verdict[cct::kRootNode];
    total_reg |= root == Verdict::kRegression;
    total_imp |= root == Verdict::kImprovement;
    reg += md.regressions - (root == Verdict::kRegression);
    imp += md.improvements - (root == Verdict::kImprovement);
  }
  auto count = [](size_t n, const char* one, const char* many) {
    return (n == 0 ? std::string("no") : std::to_string(n)) + " " + (n == 1 ? one : many);
  };
  f.headline = count(reg, "regression", "regressions") + ", " + count(imp, "improvement", "improvements");
  if (total_reg && total_imp) f.headline += "; totals moved both ways";
  else if (total_reg) f.headline += "; the total regressed";
  else if (total_imp) f.headline += "; the total improved";
  return f;
}

// ------------------------------------------------------------ text tables

// A table whose last column is a calling-context path. Value columns are
// right-aligned; when the path would get narrower than `min_name`, columns
// are dropped, highest `drop` first. Paths elide the frames they share with
// the row above ("… › slow") and, when still too wide, leading frames.
class PathTable {
 public:
  struct Column {
    std::string header;
    int drop = 0;
    bool left = false;
  };
  PathTable(std::vector<Column> columns, std::string name_header, size_t min_name)
      : columns_(std::move(columns)), name_header_(std::move(name_header)), min_name_(min_name) {}

  void Add(std::vector<std::string> cells, std::vector<std::string> path, Verdict verdict = Verdict::kNone) {
    cells.resize(columns_.size());
    rows_.push_back({std::move(cells), std::move(path), verdict});
  }

  void Render(std::ostream& out, size_t width, bool ascii, bool color, const std::string& indent) const {
    std::vector<size_t> w(columns_.size(), 0);
    for (size_t c = 0; c < columns_.size(); ++c) {
      w[c] = query::DisplayWidth(columns_[c].header);
      for (const Row& r : rows_) w[c] = std::max(w[c], query::DisplayWidth(r.cells[c]));
    }
    std::vector<bool> shown(columns_.size(), true);
    auto used = [&] {
      size_t total = indent.size();
      for (size_t c = 0; c < columns_.size(); ++c)
        if (shown[c] && w[c] > 0) total += w[c] + 2;
      return total;
    };
    while (width > 0 && used() + min_name_ > width) {
      size_t victim = columns_.size();
      for (size_t c = 0; c < columns_.size(); ++c)
        if (shown[c] && columns_[c].drop > 0 && (victim == columns_.size() || columns_[c].drop > columns_[victim].drop))
          victim = c;
      if (victim == columns_.size()) break;
      shown[victim] = false;
    }
    const size_t budget = width > used() ? width - used() : (width == 0 ? 0 : min_name_);
    auto line = [&](const std::vector<std::string>& cells, const std::string& name) {
      std::string s = indent;
      for (size_t c = 0; c < columns_.size(); ++c) {
        if (!shown[c] || w[c] == 0) continue;
        s += columns_[c].left ? query::PadRight(cells[c], w[c]) : query::PadLeft(cells[c], w[c]);
        s += "  ";
      }
      s += name;
      while (!s.empty() && s.back() == ' ') s.pop_back();
      return s;
    };
    std::vector<std::string> headers;
    for (const Column& c : columns_) headers.push_back(c.header);
    out << line(headers, name_header_) << '\n';
    const std::vector<std::string>* prev = nullptr;
    for (const Row& r : rows_) {
      const std::string text = line(r.cells, CompactPath(r.path, prev, budget, ascii));
      const char* on = !color ? nullptr : r.verdict == Verdict::kRegression ? kRed
                                        : r.verdict == Verdict::kImprovement ? kGreen : nullptr;
      if (on) out << on << text << kReset << '\n';
      else out << text << '\n';
      prev = &r.path;
    }
  }

  // The path as shown: frames shared with the previous row become "…"
  // (never the whole path), then leading frames go while it is too wide.
  static std::string CompactPath(const std::vector<std::string>& path, const std::vector<std::string>* prev,
                                 size_t budget, bool ascii) {
    const std::string sep = ascii ? " > " : " › ";
    const std::string dots = ascii ? "..." : "…";
    size_t skip = 0;
    if (prev && path.size() > 1) {
      while (skip + 1 < path.size() && skip < prev->size() && (*prev)[skip] == path[skip]) ++skip;
    }
    auto join = [&](size_t from) {
      std::string s = from > 0 ? dots : "";
      for (size_t i = from; i < path.size(); ++i) s += (s.empty() ? "" : sep) + path[i];
      return s;
    };
    std::string s = join(skip);
    if (budget == 0) return s;
    while (query::DisplayWidth(s) > budget && skip + 1 < path.size()) s = join(++skip);
    if (query::DisplayWidth(s) > budget) {
      const std::string head = skip > 0 ? dots + sep : "";
      const size_t room = budget > query::DisplayWidth(head) + 8 ? budget - query::DisplayWidth(head) : 8;
      s = head + query::ElideMiddle(path.back(), room, ascii);
    }
    return s;
  }

 private:
  struct Row {
    std::vector<std::string> cells;
    std::vector<std::string> path;
    Verdict verdict;
  };
  std::vector<Column> columns_;
  std::string name_header_;
  size_t min_name_;
  std::vector<Row> rows_;
};

// Lines are shortened to the width, keeping their start.
std::string FitLine(const std::string& s, size_t width, bool ascii) {
  if (width == 0 || query::DisplayWidth(s) <= width) return s;
  std::string out;
  size_t cols = 0;
  const std::string dots = ascii ? "..." : "…";
  const size_t keep = width - query::DisplayWidth(dots);
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) {
      if (cols == keep) break;
      ++cols;
    }
    out.push_back(s[i]);
  }
  return out + dots;
}

// "key  value" lines; long values wrap at spaces under the value column.
void WriteFacts(const Facts& facts, size_t width, bool ascii, std::ostream& out) {
  size_t key_width = 0;
  for (const auto& [k, v] : facts.lines) key_width = std::max(key_width, k.size());
  const size_t indent = key_width + 2;
  for (const auto& [k, v] : facts.lines) {
    std::string line = query::PadRight(k, key_width) + "  ";
    size_t col = indent;
    size_t start = 0;
    while (start < v.size()) {
      size_t end = v.find(' ', start);
      if (end == std::string::npos) end = v.size();
      const std::string word = v.substr(start, end - start);
      const size_t ww = query::DisplayWidth(word);
      if (col > indent && width > 0 && col + 1 + ww > width) {
        out << line << '\n';
        line = std::string(indent, ' ');
        col = indent;
      } else if (col > indent) {
        line += ' ';
        ++col;
      }
      line += word;
      col += ww;
      start = end + 1;
    }
    out << FitLine(line, width, ascii) << '\n';
  }
}

// Cells shared by the totals and the change lists.
struct ChangeCells {
  std::vector<PathTable::Column> columns;
  std::vector<std::string> Cells(const DiffResult& r, size_t m, NodeId n, bool ascii) const {
    const MetricDiff& md = r.metrics()[m];
    std::vector<std::string> c;
    c.push_back(Value(md.base_inc[n], md.unit, ascii));
    if (sd) c.push_back(md.base_sd.empty() ? "" : "±" + Value(md.base_sd[n], md.unit, ascii));
    c.push_back(Value(md.cand_inc[n], md.unit, ascii));
    if (sd) c.push_back(md.cand_sd.empty() ? "" : "±" + Value(md.cand_sd[n], md.unit, ascii));
    c.push_back(Delta(md.cand_inc[n] - md.base_inc[n], md.unit, ascii));
    c.push_back(ChangeText(r, m, n));
    if (tested) {
      c.push_back(IntervalText(r.Interval(m, n)));
      c.push_back(PText(r.PValue(m, n)));
    }
    return c;
  }
  bool sd = false, tested = false;
};

ChangeCells MakeChangeCells(const DiffResult& r) {
  ChangeCells cc;
  cc.sd = !r.metrics().empty() && !r.metrics().front().base_sd.empty();
  cc.tested = r.tested();
  cc.columns.push_back({"base", 3});
  if (cc.sd) cc.columns.push_back({"±sd", 6});
  cc.columns.push_back({"cand", 5});
  if (cc.sd) cc.columns.push_back({"±sd", 7});
  cc.columns.push_back({"delta", 0});
  cc.columns.push_back({"change", 0});
  if (cc.tested) {
    cc.columns.push_back({"95% CI", 4});
    cc.columns.push_back({"p", 0});
  }
  return cc;
}

std::string ListTitle(const char* what, const std::string& metric, size_t count, size_t shown) {
  std::string s = std::string(what) + " in " + metric + ": ";
  if (count == 0) return s + "none";
  s += std::to_string(count);
  if (shown < count) s += ", the " + std::to_string(shown) + " largest shown";
  return s;
}

size_t Shown(size_t count, size_t limit) { return limit == 0 ? count : std::min(count, limit); }

// Whether a metric has nothing to list: then one line says so instead of
// four empty sections.
bool NothingToList(const DiffResult& r, size_t m) {
  return r.Ranked(m, Verdict::kRegression).empty() && r.Ranked(m, Verdict::kImprovement).empty() &&
         r.SubtreeRoots(m, NodeStatus::kNew).empty() && r.SubtreeRoots(m, NodeStatus::kGone).empty();
}
std::string NothingLine(const std::string& metric) {
  return metric + ": no regressions or improvements, nothing new or gone";
}

void WriteText(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const ReportOptions& o,
               std::ostream& out) {
  const Facts facts = GatherFacts(r, base, cand, o.ascii);
  out << FitLine("cct-diff: " + facts.headline, o.width, o.ascii) << '\n';
  WriteFacts(facts, o.width, o.ascii, out);
  out << '\n';

  const ChangeCells cc = MakeChangeCells(r);
  {
    std::vector<PathTable::Column> cols = cc.columns;
    cols.push_back({"", 0, true});  // verdict
    size_t name_width = 5;
    for (const MetricDiff& md : r.metrics()) name_width = std::max(name_width, query::DisplayWidth(md.name));
    PathTable totals(cols, "total", name_width);
    for (size_t m = 0; m < r.metrics().size(); ++m) {
      std::vector<std::string> cells = cc.Cells(r, m, cct::kRootNode, o.ascii);
      const Verdict v = r.metrics()[m].verdict[cct::kRootNode];
      cells.emplace_back(diff::VerdictName(v));
      totals.Add(cells, {r.metrics()[m].name}, v);
    }
    totals.Render(out, o.width, o.ascii, o.color, "");
  }

  for (size_t m = 0; m < r.metrics().size(); ++m) {
    const MetricDiff& md = r.metrics()[m];
    if (NothingToList(r, m)) {
      out << '\n' << NothingLine(md.name) << '\n';
      continue;
    }
    for (Verdict v : {Verdict::kRegression, Verdict::kImprovement}) {
      const std::vector<NodeId> nodes = r.Ranked(m, v);
      const size_t shown = Shown(nodes.size(), o.limit);
      out << '\n'
          << ListTitle(v == Verdict::kRegression ? "regressions" : "improvements", md.name, nodes.size(), shown)
          << '\n';
      if (shown == 0) continue;
      PathTable t(cc.columns, "calling context", 24);
      for (size_t i = 0; i < shown; ++i) t.Add(cc.Cells(r, m, nodes[i], o.ascii), DisplayPath(r, nodes[i]), v);
      t.Render(out, o.width, o.ascii, o.color, "  ");
    }
    for (NodeStatus s : {NodeStatus::kNew, NodeStatus::kGone}) {
      const bool is_new = s == NodeStatus::kNew;
      const std::vector<NodeId> nodes = r.SubtreeRoots(m, s);
      const size_t shown = Shown(nodes.size(), o.limit);
      out << '\n' << ListTitle(is_new ? "new" : "gone", md.name, nodes.size(), shown) << '\n';
      if (shown == 0) continue;
      std::vector<PathTable::Column> cols = {{is_new ? "cand" : "base", 0}, {"excl", 3}};
      const bool sd = !md.base_sd.empty();
      if (sd) cols.insert(cols.begin() + 1, {"±sd", 4});
      if (r.tested()) cols.push_back({"p", 0});
      PathTable t(cols, "calling context", 24);
      for (size_t i = 0; i < shown; ++i) {
        const NodeId n = nodes[i];
        const std::vector<double>& inc = is_new ? md.cand_inc : md.base_inc;
        const std::vector<double>& exc = is_new ? md.cand_exc : md.base_exc;
        std::vector<std::string> cells = {Value(inc[n], md.unit, o.ascii)};
        if (sd) cells.push_back("±" + Value(is_new ? md.cand_sd[n] : md.base_sd[n], md.unit, o.ascii));
        cells.push_back(exc[n] == 0 ? "" : Value(exc[n], md.unit, o.ascii));
        if (r.tested()) cells.push_back(PText(r.PValue(m, n)));
        t.Add(cells, DisplayPath(r, n), md.verdict[n]);
      }
      t.Render(out, o.width, o.ascii, o.color, "  ");
    }
  }
}

// ------------------------------------------------------------ markdown

std::string MdCell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

// A code span that survives any backticks inside.
std::string MdCode(const std::string& s) {
  const std::string ticks = s.find('`') == std::string::npos ? "`" : "``";
  const std::string pad = ticks.size() > 1 ? " " : "";
  return ticks + pad + s + pad + ticks;
}

std::string MdValueSd(double v, const std::vector<double>& sd, NodeId n, cct::Unit unit) {
  std::string s = Value(v, unit, false);
  if (!sd.empty()) s += " ± " + Value(sd[n], unit, false);
  return s;
}

void WriteMarkdown(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const ReportOptions& o,
                   std::ostream& out) {
  const Facts facts = GatherFacts(r, base, cand, false);
  out << "### cct-diff: " << facts.headline << "\n\n";
  for (const auto& [k, v] : facts.lines) out << "- **" << k << "**: " << MdCell(v) << '\n';
  out << '\n';
  const bool tested = r.tested();
  auto header = [&](const std::string& first) {
    out << "| " << first << " | base | candidate | delta | change |" << (tested ? " 95% CI | p |" : "") << '\n'
        << "|:--|--:|--:|--:|--:|" << (tested ? "--:|--:|" : "") << '\n';
  };
  auto row = [&](const std::string& first, size_t m, NodeId n) {
    const MetricDiff& md = r.metrics()[m];
    out << "| " << first << " | " << MdValueSd(md.base_inc[n], md.base_sd, n, md.unit) << " | "
        << MdValueSd(md.cand_inc[n], md.cand_sd, n, md.unit) << " | "
        << Delta(md.cand_inc[n] - md.base_inc[n], md.unit, false) << " | " << ChangeText(r, m, n) << " |";
    if (tested) out << ' ' << IntervalText(r.Interval(m, n)) << " | " << PText(r.PValue(m, n)) << " |";
    out << '\n';
  };
  header("total");
  for (size_t m = 0; m < r.metrics().size(); ++m) {
    const Verdict v = r.metrics()[m].verdict[cct::kRootNode];
    row(MdCell(r.metrics()[m].name) + (v == Verdict::kNone ? "" : " (**" + std::string(diff::VerdictName(v)) + "**)"),
        m, cct::kRootNode);
  }
  for (size_t m = 0; m < r.metrics().size(); ++m) {
    const MetricDiff& md = r.metrics()[m];
    if (NothingToList(r, m)) {
      out << "\n#### " << MdCell(NothingLine(md.name)) << '\n';
      continue;
    }
    auto section = [&](const std::string& title, const std::vector<NodeId>& nodes, bool changes, bool is_new) {
      const size_t shown = Shown(nodes.size(), o.limit);
      out << "\n#### " << title << " in " << MdCell(md.name) << ": ";
      if (nodes.empty()) {
        out << "none\n";
        return;
      }
      out << nodes.size();
      if (shown < nodes.size()) out << ", the " << shown << " largest shown";
      out << "\n\n";
      if (changes) {
        header("calling context");
      } else {
        out << "| calling context | " << (is_new ? "candidate" : "base") << " | exclusive |"
            << (tested ? " p |" : "") << "\n|:--|--:|--:|" << (tested ? "--:|" : "") << '\n';
      }
      const std::vector<std::string>* prev = nullptr;
      std::vector<std::vector<std::string>> paths;
      paths.reserve(shown);
      for (size_t i = 0; i < shown; ++i) {
        const NodeId n = nodes[i];
        paths.push_back(DisplayPath(r, n));
        const std::string path = MdCell(MdCode(PathTable::CompactPath(paths.back(), prev, 0, false)));
        prev = &paths.back();
        if (changes) {
          row(path, m, n);
        } else {
          const std::vector<double>& inc = is_new ? md.cand_inc : md.base_inc;
          const std::vector<double>& exc = is_new ? md.cand_exc : md.base_exc;
          out << "| " << path << " | " << MdValueSd(inc[n], is_new ? md.cand_sd : md.base_sd, n, md.unit) << " | "
              << (exc[n] == 0 ? "" : Value(exc[n], md.unit, false)) << " |";
          if (tested) out << ' ' << PText(r.PValue(m, n)) << " |";
          out << '\n';
        }
      }
    };
    section("Regressions", r.Ranked(m, Verdict::kRegression), true, false);
    section("Improvements", r.Ranked(m, Verdict::kImprovement), true, false);
    section("New", r.SubtreeRoots(m, NodeStatus::kNew), false, true);
    section("Gone", r.SubtreeRoots(m, NodeStatus::kGone), false, false);
  }
}

// ------------------------------------------------------------ JSON

double Export(double v, cct::Unit unit) { return query::ExportValue(v, unit); }

void SideJson(query::JsonWriter& w, const diff::Side& s) {
  w.BeginObject();
  w.Field("selector", s.selector);
  w.Field("label", s.label);
  w.Key("group").Bool(s.group);
  w.Key("runs").BeginArray();
  for (const diff::RunTree& run : s.runs) {
    w.BeginObject();
    w.FieldInt("id", run.run_id);
    w.Field("label", run.label);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void EntryJson(query::JsonWriter& w, const DiffResult& r, size_t m, NodeId n, bool with_path) {
  const MetricDiff& md = r.metrics()[m];
  const cct::Unit u = md.unit;
  auto optional = [&](const std::optional<double>& v) {
    if (v) w.Number(*v);
    else w.Null();
  };
  w.BeginObject();
  if (with_path) {
    w.Key("path").BeginArray();
    for (const std::string& p : r.Path(n)) w.String(p);
    w.EndArray();
    w.Field("kind", cct::FrameKindName(r.tree().kind(n)));
    w.Field("status", diff::StatusName(r.status(n)));
  }
  w.Field("metric", md.name);
  w.Field("base", Export(md.base_inc[n], u));
  w.Field("candidate", Export(md.cand_inc[n], u));
  w.Field("delta", Export(md.cand_inc[n] - md.base_inc[n], u));
  w.Key("ratio");
  optional(r.Ratio(m, n));
  w.Key("change");
  const double change = r.Change(m, n);
  if (std::isfinite(change)) w.Number(change);
  else w.Null();
  if (!md.base_sd.empty()) {
    w.Field("base_sd", Export(md.base_sd[n], u));
    w.Field("candidate_sd", Export(md.cand_sd[n], u));
  }
  if (r.tested()) {
    const auto ci = r.Interval(m, n);
    w.Key("ci_low");
    optional(ci ? std::optional<double>(ci->first) : std::nullopt);
    w.Key("ci_high");
    optional(ci ? std::optional<double>(ci->second) : std::nullopt);
    w.Field("p_value", r.PValue(m, n));
  }
  if (with_path) {
    w.Key("exclusive").BeginObject();
    w.Field("base", Export(md.base_exc[n], u));
    w.Field("candidate", Export(md.cand_exc[n], u));
    w.Field("delta", Export(md.cand_exc[n] - md.base_exc[n], u));
    w.Key("ratio");
    optional(r.Ratio(m, n, false));
    w.EndObject();
  }
  w.Field("verdict", diff::VerdictName(md.verdict[n]));
  w.EndObject();
}

void WriteJson(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const ReportOptions& o,
               std::ostream& out) {
  query::JsonWriter w(out, /*pretty=*/true);
  w.BeginObject();
  w.Key("base");
  SideJson(w, base);
  w.Key("candidate");
  SideJson(w, cand);
  w.Key("metrics").BeginArray();
  for (const MetricDiff& md : r.metrics()) {
    w.BeginObject();
    w.Field("name", md.name);
    w.Field("unit", md.unit == cct::Unit::kNanoseconds ? "s" : cct::UnitName(md.unit));
    w.Field("min_abs", Export(md.min_abs, md.unit));
    w.EndObject();
  }
  w.EndArray();
  w.Key("options").BeginObject();
  w.Field("threshold", r.options().threshold);
  w.Field("alpha", r.options().alpha);
  w.Field("normalize", r.options().align.normalize.kernels ? "kernels" : "default");
  w.Key("fold_recursion").Bool(r.options().align.fold_recursion);
  w.Key("normalize_total").Bool(r.options().normalize_total);
  w.EndObject();
  w.Key("test");
  if (r.tested()) {
    w.BeginObject();
    w.Field("name", "mann-whitney-u");
    w.Field("sides", "two-sided");
    w.FieldInt("base_runs", static_cast<long long>(r.base_runs()));
    w.FieldInt("candidate_runs", static_cast<long long>(r.cand_runs()));
    w.Field("smallest_p", r.smallest_p());
    w.Field("interval", "95% ratio of means (delta method, Welch-Satterthwaite)");
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("notes").BeginArray();
  for (const auto& [k, v] : GatherFacts(r, base, cand, false).lines)
    if (k == "note") w.String(v);
  w.EndArray();
  w.Key("totals").BeginArray();
  for (size_t m = 0; m < r.metrics().size(); ++m) EntryJson(w, r, m, cct::kRootNode, false);
  w.EndArray();
  size_t counts[4] = {0, 0, 0, 0};
  const char* names[4] = {"regressions", "improvements", "new", "gone"};
  for (int section = 0; section < 4; ++section) {
    w.Key(names[section]).BeginArray();
    for (size_t m = 0; m < r.metrics().size(); ++m) {
      const std::vector<NodeId> nodes = section == 0   ? r.Ranked(m, Verdict::kRegression)
                                        : section == 1 ? r.Ranked(m, Verdict::kImprovement)
                                        : section == 2 ? r.SubtreeRoots(m, NodeStatus::kNew)
                                                       : r.SubtreeRoots(m, NodeStatus::kGone);
      counts[section] += nodes.size();
      for (size_t i = 0; i < Shown(nodes.size(), o.limit); ++i) EntryJson(w, r, m, nodes[i], true);
    }
    w.EndArray();
  }
  w.Key("counts").BeginObject();
  for (int section = 0; section < 4; ++section) w.FieldInt(names[section], static_cast<long long>(counts[section]));
  w.EndObject();
  w.Key("regression").Bool(r.regressions() > 0);
  w.EndObject();
  out << '\n';
}

// ------------------------------------------------------------ CSV

void CsvRow(std::ostream& out, const char* section, const DiffResult& r, size_t m, NodeId n) {
  const MetricDiff& md = r.metrics()[m];
  const cct::Unit u = md.unit;
  auto num = [&](double v) { return query::NumberText(Export(v, u)); };
  auto opt = [](const std::optional<double>& v) { return v ? query::NumberText(*v) : std::string(); };
  std::string path;
  for (const std::string& p : r.Path(n)) path += (path.empty() ? "" : ";") + p;
  out << section << ',' << query::CsvField(md.name) << ',' << query::CsvField(path) << ','
      << cct::FrameKindName(r.tree().kind(n)) << ',' << diff::StatusName(r.status(n)) << ',' << num(md.base_inc[n])
      << ',' << num(md.cand_inc[n]) << ',' << num(md.cand_inc[n] - md.base_inc[n]) << ',' << opt(r.Ratio(m, n))
      << ',' << num(md.base_exc[n]) << ',' << num(md.cand_exc[n]) << ',' << num(md.cand_exc[n] - md.base_exc[n])
      << ',' << opt(r.Ratio(m, n, false)) << ',';
  if (!md.base_sd.empty()) out << num(md.base_sd[n]) << ',' << num(md.cand_sd[n]);
  else out << ',';
  out << ',';
  if (r.tested()) {
    const auto ci = r.Interval(m, n);
    out << (ci ? query::NumberText(ci->first) : "") << ',' << (ci ? query::NumberText(ci->second) : "") << ','
        << query::NumberText(r.PValue(m, n));
  } else {
    out << ",,";
  }
  out << ',' << diff::VerdictName(md.verdict[n]) << '\n';
}

void WriteCsv(const DiffResult& r, const ReportOptions& o, std::ostream& out) {
  out << "section,metric,path,kind,status,base,candidate,delta,ratio,base_exclusive,candidate_exclusive,"
         "delta_exclusive,ratio_exclusive,base_sd,candidate_sd,ci_low,ci_high,p_value,verdict\n";
  for (size_t m = 0; m < r.metrics().size(); ++m) CsvRow(out, "total", r, m, cct::kRootNode);
  for (size_t m = 0; m < r.metrics().size(); ++m) {
    auto rows = [&](const char* section, const std::vector<NodeId>& nodes) {
      for (size_t i = 0; i < Shown(nodes.size(), o.limit); ++i) CsvRow(out, section, r, m, nodes[i]);
    };
    rows("regression", r.Ranked(m, Verdict::kRegression));
    rows("improvement", r.Ranked(m, Verdict::kImprovement));
    rows("new", r.SubtreeRoots(m, NodeStatus::kNew));
    rows("gone", r.SubtreeRoots(m, NodeStatus::kGone));
  }
}

// ------------------------------------------------------------ tree

// Children of every union node in display order: largest absolute change
// of the first metric first, then larger value, then name.
class TreeView {
 public:
  TreeView(const DiffResult& r, const ReportOptions& o) : r_(r), o_(o), md_(r.metrics().front()) {
    const size_t n = r.size();
    kids_.assign(n, {});
    for (NodeId i = 1; i < n; ++i) kids_[r.tree().parent(i)].push_back(i);
    threshold_ = o.min_pct > 0 ? std::fabs(md_.base_inc[cct::kRootNode]) * o.min_pct / 100 : 0;
  }
  std::vector<NodeId> Children(NodeId n, int depth) const {
    std::vector<NodeId> out;
    if (o_.depth >= 0 && depth >= o_.depth) return out;
    for (NodeId c : kids_[n])
      if (threshold_ <= 0 || std::max(std::fabs(md_.base_inc[c]), std::fabs(md_.cand_inc[c])) >= threshold_)
        out.push_back(c);
    std::sort(out.begin(), out.end(), [&](NodeId a, NodeId b) {
      const double da = std::fabs(md_.cand_inc[a] - md_.base_inc[a]), db = std::fabs(md_.cand_inc[b] - md_.base_inc[b]);
      if (da != db) return da > db;
      const double va = std::max(md_.base_inc[a], md_.cand_inc[a]), vb = std::max(md_.base_inc[b], md_.cand_inc[b]);
      if (va != vb) return va > vb;
      const int c = r_.name(a).compare(r_.name(b));
      return c != 0 ? c < 0 : a < b;
    });
    return out;
  }

 private:
  const DiffResult& r_;
  const ReportOptions& o_;
  const MetricDiff& md_;
  std::vector<std::vector<NodeId>> kids_;
  double threshold_ = 0;
};

void WriteTreeText(const DiffResult& r, const TreeView& view, const ReportOptions& o, std::ostream& out) {
  std::vector<query::TextTable::Column> cols;
  const bool multi = r.metrics().size() > 1;
  for (size_t m = 0; m < r.metrics().size(); ++m) {
    const bool first = m == 0;
    cols.push_back({multi ? r.metrics()[m].name : "base", first ? 2 : 6});
    cols.push_back({"cand", first ? 3 : 7});
    cols.push_back({"delta", first ? 0 : 5});
    cols.push_back({"change", first ? 0 : 4});
    if (r.tested()) cols.push_back({"p", first ? 1 : 8});
  }
  cols.push_back({"", 0, true});  // verdict marker of the first metric
  query::TextTable table(cols, "calling context");
  const query::TreeGlyphs& g = query::Glyphs(o.ascii);
  struct Item {
    NodeId node;
    int depth;
    std::string prefix, child_prefix;
  };
  std::vector<Verdict> row_verdicts;
  std::vector<Item> stack{{cct::kRootNode, 0, "", ""}};
  while (!stack.empty()) {
    Item it = std::move(stack.back());
    stack.pop_back();
    std::vector<std::string> cells;
    for (size_t m = 0; m < r.metrics().size(); ++m) {
      const MetricDiff& md = r.metrics()[m];
      const NodeId n = it.node;
      cells.push_back(md.base_inc[n] == 0 ? "" : Value(md.base_inc[n], md.unit, o.ascii));
      cells.push_back(md.cand_inc[n] == 0 ? "" : Value(md.cand_inc[n], md.unit, o.ascii));
      const double d = md.cand_inc[n] - md.base_inc[n];
      cells.push_back(d == 0 ? "" : Delta(d, md.unit, o.ascii));
      cells.push_back(ChangeText(r, m, n));
      if (r.tested()) cells.push_back(PText(r.PValue(m, n)));
    }
    const Verdict v = r.metrics().front().verdict[it.node];
    cells.push_back(v == Verdict::kRegression ? (o.ascii ? "^" : "▲") : v == Verdict::kImprovement ? (o.ascii ? "v" : "▼") : "");
    row_verdicts.push_back(v);
    table.AddRow(cells, it.prefix, it.node == cct::kRootNode ? std::string(cct::kRootName) : Display(r, it.node));
    const std::vector<NodeId> kids = view.Children(it.node, it.depth);
    for (size_t i = kids.size(); i-- > 0;) {
      const bool last = i + 1 == kids.size();
      stack.push_back({kids[i], it.depth + 1, it.child_prefix + (last ? g.last : g.branch),
                       it.child_prefix + (last ? g.space : g.pipe)});
    }
  }
  std::ostringstream text;
  table.Render(text, o.width, o.ascii);
  if (!o.color) {
    out << text.str();
    return;
  }
  std::istringstream lines(text.str());
  std::string line;
  std::getline(lines, line);  // header
  out << line << '\n';
  for (size_t i = 0; std::getline(lines, line); ++i) {
    const Verdict v = i < row_verdicts.size() ? row_verdicts[i] : Verdict::kNone;
    const char* on = v == Verdict::kRegression ? kRed : v == Verdict::kImprovement ? kGreen : nullptr;
    if (on) out << on << line << kReset << '\n';
    else out << line << '\n';
  }
}

void TreeNodeJson(query::JsonWriter& w, const DiffResult& r, NodeId n) {
  const cct::Frame f = r.tree().frame(n);
  w.Field("name", n == cct::kRootNode ? cct::kRootName : r.name(n));
  w.Field("kind", cct::FrameKindName(f.kind));
  w.Field("module", r.tree().str(f.module));
  w.Field("file", r.tree().str(f.file));
  w.FieldInt("line", f.line);
  w.Field("status", diff::StatusName(r.status(n)));
  for (int pass = 0; pass < 2; ++pass) {
    w.Key(pass == 0 ? "inclusive" : "exclusive").BeginObject();
    for (size_t m = 0; m < r.metrics().size(); ++m) {
      const MetricDiff& md = r.metrics()[m];
      const double b = pass == 0 ? md.base_inc[n] : md.base_exc[n];
      const double c = pass == 0 ? md.cand_inc[n] : md.cand_exc[n];
      w.Key(md.name).BeginObject();
      w.Field("base", Export(b, md.unit));
      w.Field("candidate", Export(c, md.unit));
      w.Field("delta", Export(c - b, md.unit));
      w.Key("ratio");
      if (b != 0) w.Number(c / b);
      else w.Null();
      if (pass == 0 && r.tested()) w.Field("p_value", r.PValue(m, n));
      w.EndObject();
    }
    w.EndObject();
  }
  w.Key("verdicts").BeginObject();
  for (const MetricDiff& md : r.metrics())
    if (md.verdict[n] != Verdict::kNone) w.Field(md.name, diff::VerdictName(md.verdict[n]));
  w.EndObject();
}

void WriteTreeJson(const DiffResult& r, const TreeView& view, std::ostream& out) {
  query::JsonWriter w(out);
  struct Item {
    std::vector<NodeId> kids;
    size_t next;
    int depth;
  };
  auto open = [&](NodeId n, int depth) {
    w.BeginObject();
    TreeNodeJson(w, r, n);
    w.Key("children").BeginArray();
    return Item{view.Children(n, depth), 0, depth};
  };
  std::vector<Item> stack;
  stack.push_back(open(cct::kRootNode, 0));
  while (!stack.empty()) {
    Item& it = stack.back();
    if (it.next < it.kids.size()) {
      const NodeId child = it.kids[it.next++];
      const int depth = it.depth + 1;
      stack.push_back(open(child, depth));
    } else {
      w.EndArray().EndObject();
      stack.pop_back();
    }
  }
  out << '\n';
}

void WriteTreeCsv(const DiffResult& r, const TreeView& view, std::ostream& out) {
  out << "depth,name,kind,status";
  for (const MetricDiff& md : r.metrics()) {
    for (const char* col : {"base", "candidate", "delta", "ratio", "base_exclusive", "candidate_exclusive"})
      out << ',' << query::CsvField(md.name + " " + col);
    if (r.tested()) out << ',' << query::CsvField(md.name + " p_value");
    out << ',' << query::CsvField(md.name + " verdict");
  }
  out << ",path\n";
  struct Item {
    NodeId node;
    int depth;
  };
  std::vector<Item> stack{{cct::kRootNode, 0}};
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const NodeId n = it.node;
    std::string path;
    for (const std::string& p : r.Path(n)) path += (path.empty() ? "" : ";") + p;
    out << it.depth << ',' << query::CsvField(n == cct::kRootNode ? cct::kRootName : r.name(n)) << ','
        << cct::FrameKindName(r.tree().kind(n)) << ',' << diff::StatusName(r.status(n));
    for (size_t m = 0; m < r.metrics().size(); ++m) {
      const MetricDiff& md = r.metrics()[m];
      auto num = [&](double v) { return query::NumberText(Export(v, md.unit)); };
      const auto ratio = r.Ratio(m, n);
      out << ',' << num(md.base_inc[n]) << ',' << num(md.cand_inc[n]) << ',' << num(md.cand_inc[n] - md.base_inc[n])
          << ',' << (ratio ? query::NumberText(*ratio) : "") << ',' << num(md.base_exc[n]) << ','
          << num(md.cand_exc[n]);
      if (r.tested()) out << ',' << query::NumberText(r.PValue(m, n));
      out << ',' << diff::VerdictName(md.verdict[n]);
    }
    out << ',' << query::CsvField(path) << '\n';
    const std::vector<NodeId> kids = view.Children(n, it.depth);
    for (size_t i = kids.size(); i-- > 0;) stack.push_back({kids[i], it.depth + 1});
  }
}

}  // namespace

void WriteReport(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const ReportOptions& o,
                 std::ostream& out) {
  if (o.tree) {
    const TreeView view(r, o);
    switch (o.format) {
      case Format::kText: {
        const Facts facts = GatherFacts(r, base, cand, o.ascii);
        out << FitLine("cct-diff: " + facts.headline, o.width, o.ascii) << '\n';
        WriteFacts(facts, o.width, o.ascii, out);
        out << '\n';
        WriteTreeText(r, view, o, out);
        break;
      }
      case Format::kMarkdown: {
        out << "### cct-diff: " << GatherFacts(r, base, cand, false).headline << "\n\n```\n";
        ReportOptions plain = o;
        plain.color = false;
        WriteTreeText(r, view, plain, out);
        out << "```\n";
        break;
      }
      case Format::kJson: WriteTreeJson(r, view, out); break;
      case Format::kCsv: WriteTreeCsv(r, view, out); break;
    }
    return;
  }
  switch (o.format) {
    case Format::kText: WriteText(r, base, cand, o, out); break;
    case Format::kMarkdown: WriteMarkdown(r, base, cand, o, out); break;
    case Format::kJson: WriteJson(r, base, cand, o, out); break;
    case Format::kCsv: WriteCsv(r, o, out); break;
  }
}

}  // namespace cctdiff
