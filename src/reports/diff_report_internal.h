// Internal to src/reports: what the cct-diff report's files share (the
// summary in text, markdown, JSON and CSV, the differential tree, and the
// differential flame graph's hover texts and subtitle): formatting of values
// and changes, the header facts, tables of paths, and each format's writer.
// Not for other modules. Pure functions.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>
#include <cmath>

#include "diff/diff.h"
#include "output/format.h"
#include "output/text_table.h"
#include "reports/diff_report.h"

namespace reports::diff_report {

using cct::NodeId;
using diff::DiffResult;
using diff::MetricDiff;
using diff::NodeStatus;
using diff::Verdict;

inline constexpr const char* kRed = "\x1b[31m";
inline constexpr const char* kGreen = "\x1b[32m";
inline constexpr const char* kReset = "\x1b[0m";

std::string Display(const DiffResult& r, NodeId n);

std::vector<std::string> DisplayPath(const DiffResult& r, NodeId n);

std::string Value(double v, cct::Unit unit, bool ascii);

// A difference of percentages is in percentage points ("+25.0 pp"), so it
// cannot be read as a relative change.
std::string Delta(double d, cct::Unit unit, bool ascii);

// Three significant digits with a sign: +11.8, -0.52, +123, +1234.
std::string SignedSig3(double x);

std::string Percent(double fraction);

// A value as JSON and CSV carry it (output::ExportValue).
double Export(double v, cct::Unit unit);

std::string ChangeText(const DiffResult& r, size_t m, NodeId n);

std::string IntervalText(const std::optional<std::pair<double, double>>& ci);

std::string PText(double p);

std::string MinAbsText(const DiffResult& r, const MetricDiff& md, bool ascii);

std::string ThresholdText(double t);

// What a verdict on `md` needs: "change > 5% and > 2.30 ms (1% of the base
// total)", and "and p < 0.01" with a test. The report's facts and the
// differential flame graph's subtitle say it with the same words.
std::string VerdictRuleText(const DiffResult& r, const MetricDiff& md, bool ascii);

std::string RunsText(size_t n);

// Header facts shared by the text and markdown summaries.
struct Facts {
  std::vector<std::pair<std::string, std::string>> lines;  // key, value
  std::string headline;                                   // "3 regressions, 1 improvement"
};

Facts GatherFacts(const DiffResult& r, const diff::Side& base, const diff::Side& cand, bool ascii);

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
      w[c] = output::DisplayWidth(columns_[c].header);
      for (const Row& r : rows_) w[c] = std::max(w[c], output::DisplayWidth(r.cells[c]));
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
        s += columns_[c].left ? output::PadRight(cells[c], w[c]) : output::PadLeft(cells[c], w[c]);
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
    while (output::DisplayWidth(s) > budget && skip + 1 < path.size()) s = join(++skip);
    if (output::DisplayWidth(s) > budget) {
      const std::string head = skip > 0 ? dots + sep : "";
      const size_t room = budget > output::DisplayWidth(head) + 8 ? budget - output::DisplayWidth(head) : 8;
      s = head + output::ElideMiddle(path.back(), room, ascii);
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
std::string FitLine(const std::string& s, size_t width, bool ascii);

// "key  value" lines; long values wrap at spaces under the value column.
void WriteFacts(const Facts& facts, size_t width, bool ascii, std::ostream& out);

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

ChangeCells MakeChangeCells(const DiffResult& r);

std::string ListTitle(const char* what, const std::string& metric, size_t count, size_t shown);

size_t Shown(size_t count, size_t limit);

// "context, not counted: 4 callers that only inherit these changes".
std::string ContextTitle(size_t count, size_t shown);

// New (or gone) subtree roots split in two: those a reader must see (their
// value passes --min-abs, or they changed significantly) and the rest, the
// sub-threshold churn two runs of one program always show, summarized by
// count and summed value (MinorLine).
struct SplitRoots {
  std::vector<NodeId> major;
  size_t minor = 0;
  double minor_value = 0;
};
SplitRoots MajorRoots(const DiffResult& r, size_t m, NodeStatus status);
// "49 more gone, each below 1.20 ms (--min-abs) and not significant: 3.40 ms
// in all"; "" when there are none.
std::string MinorLine(const DiffResult& r, size_t m, NodeStatus status, const SplitRoots& split, bool ascii);

// Whether a metric has nothing to list: then one line says so instead of
// four empty sections.
bool NothingToList(const DiffResult& r, size_t m);

std::string NothingLine(const std::string& metric);

// Children of every union node in display order: largest absolute change
// of the first metric first, then larger value, then name.
class TreeView {
 public:
  TreeView(const DiffResult& r, const DiffReportOptions& o) : r_(r), o_(o), md_(r.metrics().front()) {
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
  const DiffReportOptions& o_;
  const MetricDiff& md_;
  std::vector<std::vector<NodeId>> kids_;
  double threshold_ = 0;
};

// The writers, one file each: the summary (diff_text.cc, diff_markdown.cc,
// diff_json.cc, diff_csv.cc) and the differential tree (diff_tree.cc).
void WriteText(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const DiffReportOptions& o,
               std::ostream& out);
void WriteMarkdown(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const DiffReportOptions& o,
                   std::ostream& out);
void WriteJson(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const DiffReportOptions& o,
               std::ostream& out);
void WriteCsv(const DiffResult& r, const DiffReportOptions& o, std::ostream& out);
void WriteTreeText(const DiffResult& r, const TreeView& view, const DiffReportOptions& o, std::ostream& out);
void WriteTreeJson(const DiffResult& r, const TreeView& view, std::ostream& out);
void WriteTreeCsv(const DiffResult& r, const TreeView& view, std::ostream& out);

}  // namespace reports::diff_report
