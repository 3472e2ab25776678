// cct-diff --format markdown: the summary as a comment for a pull request.
//
// Shaped for where it is read (docs/diff.md, "Markdown"): the verdict on
// the first line; then the totals and the causes, at most
// DiffReportOptions::max_lines lines; then a legend saying what ± and p
// are; everything else — run facts, the callers that only inherit a
// change, rows past the budget, the full text of elided names — in a
// collapsed <details> block. No line is longer than kMaxLine characters:
// long calling contexts are elided in the middle, and their full text in
// the details is wrapped.
#include "reports/diff_report_internal.h"

#include <algorithm>
#include <sstream>

namespace reports::diff_report {

namespace {

constexpr size_t kMaxLine = 200;
constexpr size_t kPathWidth = 90;  // a calling context's cell, before elision

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

// Text cut to `width` columns (an ellipsis at the end).
std::string Cut(const std::string& s, size_t width) { return FitLine(s, width, false); }

// One section's table: the title line, then the header and rows. Rows past
// what the budget allows go to the details.
struct Section {
  std::string title;
  std::string header;  // two lines (header and alignment), or "" for none
  std::vector<std::string> rows;
  std::vector<std::string> notes;  // lines after the table (summaries)
  size_t count = 0;                // nodes the section stands for
};

class Writer {
 public:
  Writer(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const DiffReportOptions& o)
      : r_(r), base_(base), cand_(cand), o_(o), tested_(r.tested()) {}

  void Write(std::ostream& out) {
    const Facts facts = GatherFacts(r_, base_, cand_, false);
    std::vector<Section> sections;
    sections.push_back(Totals());
    std::vector<Section> context;
    for (size_t m = 0; m < r_.metrics().size(); ++m) {
      if (NothingToList(r_, m)) {
        Section s;
        s.title = "#### " + output::MarkdownText(NothingLine(r_.metrics()[m].name));
        sections.push_back(s);
        continue;
      }
      for (Verdict v : {Verdict::kRegression, Verdict::kImprovement}) {
        const bool regression = v == Verdict::kRegression;
        sections.push_back(Changes(regression ? "Regressions" : "Improvements", m, r_.Causes(m, v)));
        const std::vector<NodeId> ctx = r_.Context(m, v);
        if (!ctx.empty()) {
          sections.back().notes.push_back(
              "<sub>" + std::to_string(ctx.size()) + (ctx.size() == 1 ? " caller" : " callers") +
              " only inherit" + (ctx.size() == 1 ? "s" : "") + " these changes: context, not counted (details below)</sub>");
          context.push_back(Changes(std::string(regression ? "Regressions" : "Improvements") + ": context", m, ctx));
        }
      }
      for (NodeStatus s : {NodeStatus::kNew, NodeStatus::kGone}) sections.push_back(Roots(m, s));
    }

    // The visible part: the verdict line, the sections (each after a
    // blank line), a blank and the legend. Rows are cut from the largest sections first, each keeping
    // at least one, until it fits.
    const std::string legend = Legend(facts);
    auto visible_lines = [&](const std::vector<size_t>& keep) {
      size_t lines = 2 + 1 + static_cast<size_t>(std::count(legend.begin(), legend.end(), '\n')) + 1;
      for (size_t i = 0; i < sections.size(); ++i) {
        const Section& s = sections[i];
        lines += 2;  // blank and title
        if (keep[i] > 0) lines += 1 + (s.header.empty() ? 0 : 2) + keep[i];
        lines += s.notes.size();
        if (keep[i] < s.rows.size()) ++lines;  // "more in the details"
        if (keep[i] > 0 && (!s.notes.empty() || keep[i] < s.rows.size())) ++lines;  // blank after the table
      }
      return lines;
    };
    std::vector<size_t> keep(sections.size());
    for (size_t i = 0; i < sections.size(); ++i) keep[i] = Shown(sections[i].rows.size(), o_.limit);
    while (o_.max_lines > 0 && visible_lines(keep) > o_.max_lines) {
      size_t victim = sections.size();
      for (size_t i = 1; i < sections.size(); ++i)  // the totals stay whole
        if (keep[i] > 1 && (victim == sections.size() || keep[i] > keep[victim])) victim = i;
      if (victim == sections.size()) break;
      --keep[victim];
    }

    out << Cut("**cct-diff: " + facts.headline + "**" + TotalsInLine(), kMaxLine) << "\n";
    std::vector<std::string> hidden;  // rows for the details, with their section's title
    for (size_t i = 0; i < sections.size(); ++i) {
      const Section& s = sections[i];
      out << '\n' << s.title << '\n';
      if (keep[i] > 0) {
        out << '\n';
        if (!s.header.empty()) out << s.header;
        for (size_t k = 0; k < keep[i]; ++k) out << s.rows[k] << '\n';
      }
      // A line right after a table would be read as one of its rows.
      const bool after_table = keep[i] > 0;
      if (after_table && (!s.notes.empty() || keep[i] < s.rows.size())) out << '\n';
      for (const std::string& note : s.notes) out << note << '\n';
      if (keep[i] < s.rows.size()) {
        out << "<sub>" << s.rows.size() - keep[i] << " more in the details below</sub>\n";
        hidden.push_back("\n" + s.title + " (continued)\n\n" + s.header);
        for (size_t k = keep[i]; k < s.rows.size(); ++k) hidden.back() += s.rows[k] + "\n";
      }
    }
    out << '\n' << legend << '\n';

    out << "\n<details><summary>Runs, context and full names</summary>\n\n";
    for (const auto& [k, v] : facts.lines)
      out << Cut("- **" + output::MarkdownText(k) + "**: " + output::MarkdownText(v), kMaxLine) << '\n';
    for (const Section& s : context) {
      out << '\n' << s.title << "\n\n" << s.header;
      for (const std::string& row : s.rows) out << row << '\n';
    }
    for (const std::string& h : hidden) out << h;
    if (!full_names_.empty()) {
      out << "\nFull calling contexts of the rows shortened above:\n\n```\n";
      for (const std::string& name : full_names_) {
        // Wrapped, so no line runs past kMaxLine (a C++ name can be
        // thousands of characters).
        for (size_t at = 0; at < name.size(); at += kMaxLine - 4) out << name.substr(at, kMaxLine - 4) << '\n';
      }
      out << "```\n";
    }
    out << "\n</details>\n";
  }

 private:
  std::string TableHeader(const std::string& first) const {
    return "| " + first + " | base | candidate | delta | change |" + (tested_ ? " 95% CI | p |" : "") + "\n" +
           "|:--|--:|--:|--:|--:|" + (tested_ ? "--:|--:|" : "") + "\n";
  }

  std::string Row(const std::string& first, size_t m, NodeId n) const {
    const MetricDiff& md = r_.metrics()[m];
    std::string s = "| " + first + " | " + MdValueSd(md.base_inc[n], md.base_sd, n, md.unit) + " | " +
                    MdValueSd(md.cand_inc[n], md.cand_sd, n, md.unit) + " | " +
                    Delta(md.cand_inc[n] - md.base_inc[n], md.unit, false) + " | " + ChangeText(r_, m, n) + " |";
    if (tested_) s += " " + IntervalText(r_.Interval(m, n)) + " | " + PText(r_.PValue(m, n)) + " |";
    return s;
  }

  // A calling context as a code span of at most kPathWidth columns (whole
  // in each row: a table's rows are read one by one); the full one is kept
  // for the details when it had to be shortened.
  std::string PathCell(NodeId n) {
    const std::vector<std::string> path = DisplayPath(r_, n);
    const std::string shown = PathTable::CompactPath(path, nullptr, kPathWidth, false);
    const std::string full = PathTable::CompactPath(path, nullptr, 0, false);
    if (shown != full && std::find(full_names_.begin(), full_names_.end(), full) == full_names_.end())
      full_names_.push_back(full);
    return output::MarkdownCell(MdCode(shown));
  }

  Section Totals() {
    Section s;
    s.title = "#### Totals";
    s.header = TableHeader("metric");
    for (size_t m = 0; m < r_.metrics().size(); ++m) {
      const Verdict v = r_.metrics()[m].verdict[cct::kRootNode];
      s.rows.push_back(Row(output::MarkdownCell(MdCode(r_.metrics()[m].name)) +
                               (v == Verdict::kNone ? "" : " (**" + std::string(diff::VerdictName(v)) + "**)"),
                           m, cct::kRootNode));
    }
    s.count = s.rows.size();
    return s;
  }

  Section Changes(const std::string& what, size_t m, const std::vector<NodeId>& nodes) {
    Section s;
    s.count = nodes.size();
    s.title = "#### " + what + " in " + output::MarkdownText(r_.metrics()[m].name) + ": " +
              (nodes.empty() ? "none" : std::to_string(nodes.size()));
    if (nodes.empty()) return s;
    s.header = TableHeader("calling context");
    for (NodeId n : nodes) s.rows.push_back(Row(PathCell(n), m, n));
    return s;
  }

  Section Roots(size_t m, NodeStatus status) {
    const bool is_new = status == NodeStatus::kNew;
    const MetricDiff& md = r_.metrics()[m];
    const SplitRoots split = MajorRoots(r_, m, status);
    Section s;
    s.count = split.major.size();
    s.title = "#### " + std::string(is_new ? "New" : "Gone") + " in " + output::MarkdownText(md.name) + ": " +
              (split.major.empty() ? "none" : std::to_string(split.major.size()));
    if (const std::string minor = MinorLine(r_, m, status, split, false); !minor.empty())
      s.notes.push_back("<sub>" + output::MarkdownText(minor) + "</sub>");
    if (split.major.empty()) return s;
    s.header = std::string("| calling context | ") + (is_new ? "candidate" : "base") + " | exclusive |" +
               (tested_ ? " p |" : "") + "\n|:--|--:|--:|" + (tested_ ? "--:|" : "") + "\n";
    const std::vector<double>& inc = is_new ? md.cand_inc : md.base_inc;
    const std::vector<double>& exc = is_new ? md.cand_exc : md.base_exc;
    for (const NodeId n : split.major) {
      std::string row = "| " + PathCell(n) + " | " +
                        MdValueSd(inc[n], is_new ? md.cand_sd : md.base_sd, n, md.unit) + " | " +
                        (exc[n] == 0 ? "" : Value(exc[n], md.unit, false)) + " |";
      if (tested_) row += " " + PText(r_.PValue(m, n)) + " |";
      s.rows.push_back(row);
    }
    return s;
  }

  // The first metric's total on the verdict line: " · cputime 1.20 s →
  // 1.32 s (+10.0%, p 0.0079)".
  std::string TotalsInLine() const {
    if (r_.metrics().empty()) return {};
    const MetricDiff& md = r_.metrics().front();
    const NodeId n = cct::kRootNode;
    std::string s = " · " + output::MarkdownText(md.name) + " " + Value(md.base_inc[n], md.unit, false) + " → " +
                    Value(md.cand_inc[n], md.unit, false);
    const std::string change = ChangeText(r_, 0, n);
    std::string paren = change.empty() ? "unchanged" : change;
    if (tested_) paren += ", p " + PText(r_.PValue(0, n));
    return s + " (" + paren + ")";
  }

  // What the columns mean, in one line: asv, Bencher and codspeed all
  // leave the reader to guess what ± and p are.
  std::string Legend(const Facts& facts) const {
    std::vector<std::string> parts;
    if (!r_.metrics().empty() && !r_.metrics().front().base_sd.empty())
      parts.push_back("± is the standard deviation over a side's runs");
    if (tested_) {
      char alpha[32];
      std::snprintf(alpha, sizeof alpha, "%g", r_.options().alpha);
      parts.push_back("p: Mann-Whitney U test, two-sided (significant below " + std::string(alpha) + ")");
      parts.push_back("95% CI: interval of the ratio of means, as a change");
    } else {
      parts.push_back("no p-values: fewer than " + std::to_string(diff::kMinRunsForTest) + " runs on a side");
    }
    for (const auto& [k, v] : facts.lines)
      if (k.starts_with("verdict")) parts.push_back(k + ": " + v);
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : " · ") + p;
    // The legend may wrap over lines of its own; each stays short.
    std::string out = "<sub>";
    size_t line = out.size();
    bool first = true;
    std::istringstream words(output::MarkdownText(s));
    for (std::string w; words >> w; first = false) {
      if (!first && line + 1 + w.size() > kMaxLine - 6) {
        out += "\n";
        line = 0;
      } else if (!first) {
        out += ' ';
        ++line;
      }
      out += w;
      line += w.size();
    }
    return out + "</sub>";
  }

  const DiffResult& r_;
  const diff::Side& base_;
  const diff::Side& cand_;
  const DiffReportOptions& o_;
  const bool tested_;
  std::vector<std::string> full_names_;
};

}  // namespace

void WriteMarkdown(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const DiffReportOptions& o,
                   std::ostream& out) {
  Writer(r, base, cand, o).Write(out);
}

}  // namespace reports::diff_report
