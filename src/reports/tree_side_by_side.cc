// `cct-query tree A B C`: several runs' trees side by side. The trees are
// aligned by path identity with cct-diff's aligner (names normalized the
// same way), so a column per run lines up the same calling context even
// where addresses, library versions or template spellings differ; values
// are not compared (cct-diff does that), only shown.
#include <algorithm>
#include <cmath>

#include "cct/pattern.h"
#include "cct/tree_ops.h"
#include "diff/align.h"
#include "diff/diff.h"
#include "output/format.h"
#include "output/tree_json.h"
#include "reports/registry.h"
#include "reports/reports.h"

namespace reports {

using cct::NodeId;
using cct::Status;

namespace {

constexpr size_t kSideHeadingColumns = 60;  // per name of a --focus heading

// The union tree and, per run, a copy of it holding that run's values, so
// cct::NodeValues evaluates derived metrics per run as it does for one.
struct SideBySide {
  cct::Tree shape;
  std::vector<cct::Tree> runs;
  std::vector<std::unique_ptr<cct::NodeValues>> values;
  std::vector<std::vector<cct::MetricId>> ids;  // per run, per requested metric
  std::vector<std::string> names;               // the requested metrics
  std::vector<cct::MetricDesc> descs;           // as the first run registers them
  std::vector<std::string> display;             // per union node

  double Inc(size_t run, size_t metric, NodeId n) { return values[run]->Inclusive(ids[run][metric])[n]; }
  double Exc(size_t run, size_t metric, NodeId n) { return values[run]->Exclusive(ids[run][metric])[n]; }
  double Total(size_t run, size_t metric) { return values[run]->Total(ids[run][metric]); }
};

cct::Result<SideBySide> Align(std::vector<query::Profile>& profiles, const ReportOptions& opt) {
  SideBySide s;
  // Every run must have every metric; the default is the first run's first.
  for (const std::string& spec : opt.metrics) s.names.emplace_back(cct::MetricRegistry::DefinedName(spec));
  if (s.names.empty()) {
    CCT_ASSIGN_OR_RETURN(std::vector<cct::MetricId> first, query::ResolveMetrics(profiles.front().tree, {}));
    s.names.push_back(profiles.front().tree.metrics().Get(first.front()).name);
  }
  for (query::Profile& p : profiles) {
    auto resolved = query::ResolveMetrics(p.tree, s.names);
    if (!resolved.ok()) return resolved.status().WithContext(p.label);
    const std::vector<cct::MetricId>& ids = *resolved;
    for (size_t i = 0; i < ids.size(); ++i) {
      const cct::MetricDesc& d = p.tree.metrics().Get(ids[i]);
      if (s.descs.size() <= i) {
        s.descs.push_back(d);
      } else if (d.unit != s.descs[i].unit) {
        return cct::InvalidArgument("metric '" + d.name + "' has unit " + std::string(cct::UnitName(d.unit)) +
                                    " in " + p.label + " but " + std::string(cct::UnitName(s.descs[i].unit)) +
                                    " in " + profiles.front().label);
      }
    }
  }

  const diff::AlignOptions align = diff::DiffOptions{}.align;
  diff::Aligner aligner(align);
  std::vector<const cct::Tree*> trees;
  std::vector<std::vector<char>> keep(profiles.size());  // empty: the whole tree
  for (size_t i = 0; i < profiles.size(); ++i) {
    trees.push_back(&profiles[i].tree);
    // An iteration keeps its run's whole tree: align only what it touched.
    if (profiles[i].selector.iteration) keep[i] = cct::NodesWithValues(profiles[i].tree);
  }
  const std::vector<std::vector<NodeId>> maps = aligner.AddAll(trees, keep);
  keep.clear();
  s.shape = aligner.tree();
  s.display.reserve(aligner.size());
  for (NodeId n = 0; n < aligner.size(); ++n) s.display.emplace_back(aligner.display_name(n));

  for (size_t r = 0; r < profiles.size(); ++r) {
    const cct::Tree& src = profiles[r].tree;
    cct::Tree t = s.shape;
    // The run's metrics in registration order: a derived one's operands come first.
    std::vector<cct::MetricId> to(src.metrics().size(), cct::kNoMetric);
    for (cct::MetricId m = 0; m < src.metrics().size(); ++m) {
      auto id = t.metrics().Register(src.metrics().Get(m));
      if (!id.ok()) return id.status().WithContext(profiles[r].label);
      to[m] = *id;
    }
    for (cct::MetricId m = 0; m < src.metrics().size(); ++m) {
      if (src.metrics().Get(m).kind != cct::MetricKind::kAdditive) continue;
      src.column(m).ForEach([&](NodeId n, double v) {
        if (maps[r][n] != cct::kNoNode) t.AddValue(maps[r][n], to[m], v);
      });
    }
    s.ids.emplace_back();
    for (const std::string& name : s.names) s.ids.back().push_back(t.metrics().Find(name));
    s.runs.push_back(std::move(t));
  }
  for (const cct::Tree& t : s.runs) s.values.push_back(std::make_unique<cct::NodeValues>(t));
  return s;
}

std::string RunColumn(size_t run) { return "#" + std::to_string(run + 1); }

void WriteSideText(SideBySide& s, const output::VisibleTree& vis, const ReportOptions& opt, NodeId top,
                   std::ostream& out) {
  const size_t nm = s.names.size(), nr = s.runs.size();
  std::vector<output::TextTable::Column> columns;
  for (size_t m = 0; m < nm; ++m)
    for (size_t r = 0; r < nr; ++r) {
      const std::string head = nm == 1 ? RunColumn(r) : s.names[m] + " " + RunColumn(r);
      columns.push_back({head, 0, false, nm == 1 ? "" : RunColumn(r)});
      // Percentages go before any value when names need room.
      if (s.descs[m].kind == cct::MetricKind::kAdditive) columns.push_back({"%", m == 0 ? 4 : 6});
    }
  output::TextTable table(std::move(columns), "calling context");
  const output::TreeGlyphs& g = output::Glyphs(opt.ascii);
  struct Item {
    NodeId node;
    int depth;
    std::string prefix, child_prefix;
  };
  std::vector<Item> stack{{top, 0, "", ""}};
  while (!stack.empty()) {
    Item it = std::move(stack.back());
    stack.pop_back();
    std::vector<std::string> cells;
    for (size_t m = 0; m < nm; ++m)
      for (size_t r = 0; r < nr; ++r) {
        const double v = s.Inc(r, m, it.node);
        cells.push_back(v == 0 || std::isnan(v) ? "" : output::FormatValue(v, s.descs[m].unit, opt.ascii));
        if (s.descs[m].kind == cct::MetricKind::kAdditive)
          cells.push_back(v == 0 ? "" : output::FormatPercent(v, s.Total(r, m)));
      }
    std::string name = it.node == cct::kRootNode ? std::string(cct::kRootName) : s.display[it.node];
    if (s.shape.kind(it.node) == cct::FrameKind::kNvtx) name = "[nvtx] " + name;
    if (s.shape.kind(it.node) == cct::FrameKind::kThread) name = "[thread] " + name;
    table.AddRow(std::move(cells), it.prefix, std::move(name));
    const std::vector<NodeId> kids = vis.Children(it.node, it.depth);
    for (size_t i = kids.size(); i-- > 0;) {
      const bool last = i + 1 == kids.size();
      stack.push_back({kids[i], it.depth + 1, it.child_prefix + (last ? g.last : g.branch),
                       it.child_prefix + (last ? g.space : g.pipe)});
    }
  }
  table.Render(out, opt.width, opt.ascii);
}

// The nodes as `tree --format json` writes them, each value an array with
// one entry per run.
void WriteSideJson(SideBySide& s, const output::VisibleTree& vis, NodeId top, output::JsonWriter& w) {
  output::WriteNestedJson(
      w, top,
      [&](NodeId n) {
        output::WriteFrameFields(w, s.shape, n, n == cct::kRootNode ? std::string_view(cct::kRootName) : s.display[n]);
        for (const bool inclusive : {true, false}) {
          w.Key(inclusive ? "inclusive" : "exclusive").BeginObject();
          for (size_t m = 0; m < s.names.size(); ++m) {
            w.Key(s.names[m]).BeginArray();
            for (size_t r = 0; r < s.runs.size(); ++r)
              w.Number(output::ExportValue(inclusive ? s.Inc(r, m, n) : s.Exc(r, m, n), s.descs[m].unit));
            w.EndArray();
          }
          w.EndObject();
        }
      },
      [&](NodeId n, int depth) { return vis.Children(n, depth); });
}

void WriteSideCsv(SideBySide& s, const std::vector<query::Profile>& profiles, const output::VisibleTree& vis,
                  NodeId top, bool header, std::ostream& out) {
  if (header) {
    out << "depth,name,kind,module,file,line";
    for (size_t m = 0; m < s.names.size(); ++m)
      for (const query::Profile& p : profiles)
        for (const char* part : {" (inc) [", " (exc) ["})
          out << ',' << output::CsvField(s.names[m] + part + p.selector.text + "]");
    out << ",path\n";
  }
  vis.Preorder(top, [&](NodeId node, int depth) {
    const cct::Frame f = s.shape.frame(node);
    out << depth << ',' << output::CsvField(node == cct::kRootNode ? cct::kRootName : s.display[node]) << ','
        << cct::FrameKindName(f.kind) << ',' << output::CsvField(s.shape.str(f.module)) << ','
        << output::CsvField(s.shape.str(f.file)) << ',' << f.line;
    for (size_t m = 0; m < s.names.size(); ++m)
      for (size_t r = 0; r < s.runs.size(); ++r)
        for (const double v : {s.Inc(r, m, node), s.Exc(r, m, node)}) {
          // As `tree --format csv`: a derived metric without a value is blank.
          const bool none = std::isnan(v) || (v == 0 && s.descs[m].kind == cct::MetricKind::kDerived);
          out << ',' << (none ? std::string() : output::NumberText(output::ExportValue(v, s.descs[m].unit)));
        }
    std::string path;
    for (NodeId a = node; a != cct::kRootNode; a = s.shape.parent(a))
      path = s.display[a] + (path.empty() ? "" : ";") + path;
    out << ',' << output::CsvField(path) << '\n';
  });
}

}  // namespace

Status WriteSideBySideTreeReport(std::vector<query::Profile>& profiles, const ReportOptions& opt, std::ostream& out) {
  if (profiles.size() < 2) return cct::InvalidArgument("a side-by-side tree needs two runs or more");
  // A query's metric predicates read one run's values: which run's, side by
  // side, would be a guess.
  if (!opt.query.empty())
    return cct::InvalidArgument("--query applies to one run's tree; derive a run per input (cct-query derive RUN "
                                "--query Q) and show those side by side");
  CCT_ASSIGN_OR_RETURN(SideBySide s, Align(profiles, opt));
  const size_t nr = s.runs.size();

  // Order and --min by a node's largest share of its run's total of the
  // first metric in any run: a context heavy in one run only is not buried.
  std::vector<double> key(s.shape.size(), 0.0);
  for (size_t r = 0; r < nr; ++r) {
    const double total = std::fabs(s.Total(r, 0));
    for (NodeId n = 0; n < s.shape.size(); ++n) {
      const double v = std::fabs(s.Inc(r, 0, n));
      const double share = total > 0 ? v / total : (v > 0 ? 1.0 : 0.0);
      if (!std::isnan(share)) key[n] = std::max(key[n], share);
    }
  }
  const cct::Children children = cct::BuildChildren(s.shape);
  output::VisibleTree vis(s.shape, children, key, opt.min_pct / 100.0, opt.depth);

  std::vector<NodeId> tops{cct::kRootNode};
  if (!opt.focus.empty()) {
    CCT_ASSIGN_OR_RETURN(const cct::Pattern focus, cct::Pattern::Compile(opt.focus, "--focus pattern"));
    tops = cct::OutermostMatches(s.shape, focus);
    if (tops.empty()) return cct::NotFound("no frame matches --focus '" + cct::ElideMiddle(opt.focus, 80) + "'");
  }

  switch (opt.format) {
    case OutputFormat::kText: {
      for (size_t r = 0; r < nr; ++r) {
        out << RunColumn(r) << ' ' << profiles[r].label << ':';
        for (size_t m = 0; m < s.names.size(); ++m)
          out << (m ? ", " : " ") << s.names[m] << ' ' << output::FormatValue(s.Total(r, m), s.descs[m].unit, opt.ascii)
              << " total";
        out << '\n';
      }
      for (NodeId top : tops) {
        out << '\n';
        if (!opt.focus.empty()) {
          out << "focus: ";
          std::vector<std::string> path;
          for (NodeId a = top; a != cct::kRootNode; a = s.shape.parent(a)) path.insert(path.begin(), s.display[a]);
          for (size_t i = 0; i < path.size(); ++i)
            out << (i ? (opt.ascii ? " > " : " › ") : "")
                << (opt.width ? output::ElideMiddle(path[i], kSideHeadingColumns, opt.ascii) : path[i]);
          out << '\n';
        }
        WriteSideText(s, vis, opt, top, out);
      }
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginObject();
      w.Key("runs").BeginArray();
      for (size_t r = 0; r < nr; ++r) {
        w.BeginObject();
        w.Field("selector", profiles[r].selector.text);
        w.Field("label", profiles[r].label);
        w.Key("totals").BeginObject();
        for (size_t m = 0; m < s.names.size(); ++m)
          w.Field(s.names[m], output::ExportValue(s.Total(r, m), s.descs[m].unit));
        w.EndObject();
        w.EndObject();
      }
      w.EndArray();
      w.Key("metrics").BeginArray();
      for (size_t m = 0; m < s.names.size(); ++m) {
        w.BeginObject();
        w.Field("name", s.names[m]);
        w.Field("unit", cct::UnitName(s.descs[m].unit));
        w.EndObject();
      }
      w.EndArray();
      w.Key("trees").BeginArray();
      for (NodeId top : tops) WriteSideJson(s, vis, top, w);
      w.EndArray();
      w.EndObject();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      bool header = true;
      for (NodeId top : tops) {
        WriteSideCsv(s, profiles, vis, top, header, out);
        header = false;
      }
      break;
    }
  }
  return Status::Ok();
}

cct::Status TreeCommand(const ReportRequest& request, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(ReportOptions opt, ParseReportOptions(request));
  std::vector<query::Profile> profiles;
  for (size_t i = 0; i < request.args.size(); ++i) {
    CCT_ASSIGN_OR_RETURN(query::Profile p, LoadRequestProfile(request, /*keep_lines=*/false, i));
    profiles.push_back(std::move(p));
  }
  if (profiles.size() == 1) return WriteTreeReport(profiles.front(), opt, out);
  return WriteSideBySideTreeReport(profiles, opt, out);
}

}  // namespace reports
