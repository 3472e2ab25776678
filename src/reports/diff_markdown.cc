// cct-diff --format markdown: the summary as a comment for a pull request.
#include "reports/diff_report_internal.h"

#include <algorithm>

namespace reports::diff_report {

namespace {

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

}  // namespace

void WriteMarkdown(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const DiffReportOptions& o,
                   std::ostream& out) {
  const Facts facts = GatherFacts(r, base, cand, false);
  out << "### cct-diff: " << facts.headline << "\n\n";
  for (const auto& [k, v] : facts.lines) out << "- **" << k << "**: " << output::MarkdownCell(v) << '\n';
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
    row(output::MarkdownCell(r.metrics()[m].name) +
            (v == Verdict::kNone ? "" : " (**" + std::string(diff::VerdictName(v)) + "**)"),
        m, cct::kRootNode);
  }
  for (size_t m = 0; m < r.metrics().size(); ++m) {
    const MetricDiff& md = r.metrics()[m];
    if (NothingToList(r, m)) {
      out << "\n#### " << output::MarkdownCell(NothingLine(md.name)) << '\n';
      continue;
    }
    auto section = [&](const std::string& title, const std::vector<NodeId>& nodes, bool changes, bool is_new) {
      const size_t shown = Shown(nodes.size(), o.limit);
      out << "\n#### " << title << " in " << output::MarkdownCell(md.name) << ": ";
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
        const std::string path = output::MarkdownCell(MdCode(PathTable::CompactPath(paths.back(), prev, 0, false)));
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

}  // namespace reports::diff_report
