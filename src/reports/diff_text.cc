// cct-diff's summary as text: facts, then per metric the regressions,
// improvements, new and gone subtrees as tables of paths.
#include "reports/diff_report_internal.h"

#include <algorithm>

namespace reports::diff_report {

void WriteText(const DiffResult& r, const diff::Side& base, const diff::Side& cand, const DiffReportOptions& o,
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
    for (const MetricDiff& md : r.metrics()) name_width = std::max(name_width, output::DisplayWidth(md.name));
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
      const std::vector<NodeId> nodes = r.Causes(m, v);
      const size_t shown = Shown(nodes.size(), o.limit);
      out << '\n'
          << ListTitle(v == Verdict::kRegression ? "regressions" : "improvements", md.name, nodes.size(), shown)
          << '\n';
      if (shown > 0) {
        PathTable t(cc.columns, "calling context", 24);
        for (size_t i = 0; i < shown; ++i) t.Add(cc.Cells(r, m, nodes[i], o.ascii), DisplayPath(r, nodes[i]), v);
        t.Render(out, o.width, o.ascii, o.color, "  ");
      }
      // Callers whose change is only what these brought up: shown so the
      // path to a cause reads, not counted.
      const std::vector<NodeId> context = r.Context(m, v);
      const size_t shown_context = Shown(context.size(), o.limit);
      if (shown_context == 0) continue;
      out << "  " << ContextTitle(context.size(), shown_context) << '\n';
      PathTable t(cc.columns, "calling context", 24);
      for (size_t i = 0; i < shown_context; ++i)
        t.Add(cc.Cells(r, m, context[i], o.ascii), DisplayPath(r, context[i]), Verdict::kNone);
      t.Render(out, o.width, o.ascii, false, "    ");
    }
    for (NodeStatus s : {NodeStatus::kNew, NodeStatus::kGone}) {
      const bool is_new = s == NodeStatus::kNew;
      const SplitRoots split = MajorRoots(r, m, s);
      const std::vector<NodeId>& nodes = split.major;
      const size_t shown = Shown(nodes.size(), o.limit);
      out << '\n' << ListTitle(is_new ? "new" : "gone", md.name, nodes.size(), shown) << '\n';
      if (const std::string minor = MinorLine(r, m, s, split, o.ascii); !minor.empty())
        out << "  " << FitLine(minor, o.width > 2 ? o.width - 2 : o.width, o.ascii) << '\n';
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

}  // namespace reports::diff_report
