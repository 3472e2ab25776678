// cct-diff --tree: the differential tree as text, JSON or CSV.
#include "reports/diff_report_internal.h"

#include "output/json_writer.h"
#include "output/tree_json.h"

#include <algorithm>
#include <sstream>

namespace reports::diff_report {

namespace {

void TreeNodeJson(output::JsonWriter& w, const DiffResult& r, NodeId n) {
  output::WriteFrameFields(w, r.tree(), n, n == cct::kRootNode ? cct::kRootName : r.name(n));
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

}  // namespace

void WriteTreeText(const DiffResult& r, const TreeView& view, const DiffReportOptions& o, std::ostream& out) {
  std::vector<output::TextTable::Column> cols;
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
  output::TextTable table(cols, "calling context");
  const output::TreeGlyphs& g = output::Glyphs(o.ascii);
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
    // Solid where the change is the node's own (a cause), hollow where it
    // only carries its children's (context, diff.h).
    const bool cause = v != Verdict::kNone && r.IsCause(0, it.node);
    const char* mark = v == Verdict::kRegression    ? (o.ascii ? (cause ? "^" : "'") : (cause ? "▲" : "△"))
                       : v == Verdict::kImprovement ? (o.ascii ? (cause ? "v" : ",") : (cause ? "▼" : "▽"))
                                                    : "";
    cells.push_back(mark);
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

void WriteTreeJson(const DiffResult& r, const TreeView& view, std::ostream& out) {
  output::JsonWriter w(out);
  output::WriteNestedJson(
      w, cct::kRootNode, [&](NodeId n) { TreeNodeJson(w, r, n); },
      [&](NodeId n, int depth) { return view.Children(n, depth); });
  out << '\n';
}

void WriteTreeCsv(const DiffResult& r, const TreeView& view, std::ostream& out) {
  out << "depth,name,kind,status";
  for (const MetricDiff& md : r.metrics()) {
    for (const char* col : {"base", "candidate", "delta", "ratio", "base_exclusive", "candidate_exclusive"})
      out << ',' << output::CsvField(md.name + " " + col);
    if (r.tested()) out << ',' << output::CsvField(md.name + " p_value");
    out << ',' << output::CsvField(md.name + " verdict");
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
    out << it.depth << ',' << output::CsvField(n == cct::kRootNode ? cct::kRootName : r.name(n)) << ','
        << cct::FrameKindName(r.tree().kind(n)) << ',' << diff::StatusName(r.status(n));
    for (size_t m = 0; m < r.metrics().size(); ++m) {
      const MetricDiff& md = r.metrics()[m];
      auto num = [&](double v) { return output::NumberText(Export(v, md.unit)); };
      const auto ratio = r.Ratio(m, n);
      out << ',' << num(md.base_inc[n]) << ',' << num(md.cand_inc[n]) << ',' << num(md.cand_inc[n] - md.base_inc[n])
          << ',' << (ratio ? output::NumberText(*ratio) : "") << ',' << num(md.base_exc[n]) << ','
          << num(md.cand_exc[n]);
      if (r.tested()) out << ',' << output::NumberText(r.PValue(m, n));
      out << ',' << diff::VerdictName(md.verdict[n]);
    }
    out << ',' << output::CsvField(path) << '\n';
    const std::vector<NodeId> kids = view.Children(n, it.depth);
    for (size_t i = kids.size(); i-- > 0;) stack.push_back({kids[i], it.depth + 1});
  }
}

}  // namespace reports::diff_report
