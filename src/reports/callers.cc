// `cct-query callers RUN REGEX`: bottom-up view of who reaches the frames
// whose names match REGEX.
//
// Every outermost matching node (a match inside a match is already counted
// by the outer one) contributes its inclusive values to an inverted tree: the
// matched frame, then its caller, then the caller's caller, up to the root.
// Each inverted node shows the value that flows through that caller chain
// and its share of everything that reaches the matched frames.
#include <algorithm>
#include <cmath>

#include "cct/tree_ops.h"
#include "output/format.h"
#include "output/tree_json.h"
#include "cct/pattern.h"
#include "reports/registry.h"
#include "reports/reports.h"

namespace reports {

using cct::NodeId;
using cct::Status;

Status WriteCallersReport(query::Profile& profile, const std::string& pattern, const ReportOptions& opt,
                          std::ostream& out) {
  const cct::Tree& tree = profile.tree;
  CCT_ASSIGN_OR_RETURN(std::vector<cct::MetricId> ids, query::ResolveMetrics(tree, opt.metrics));
  cct::NodeValues values(tree);
  output::MetricColumns cols(values, ids);
  CCT_ASSIGN_OR_RETURN(const cct::Pattern re, cct::Pattern::Compile(pattern, "callers pattern"));

  // The inverted tree shares the frames of the profile.
  cct::Tree inv;
  inv.strings() = tree.strings();
  inv.frames() = tree.frames();
  std::vector<std::vector<double>> acc(1, std::vector<double>(ids.size(), 0.0));  // per inverted node
  // An iteration keeps the run's whole tree; callers of what it did not
  // touch carry nothing.
  const std::vector<char> with_values = profile.selector.selects_part() ? cct::NodesWithValues(tree) : std::vector<char>();
  const std::vector<NodeId> matched = cct::OutermostMatches(tree, re);
  for (NodeId n : matched) {
    if (!with_values.empty() && !with_values[n]) continue;
    const std::vector<double> v = cols.NodeInclusive(n);
    NodeId at = cct::kRootNode;
    int level = 0;
    for (NodeId a = n; a != cct::kRootNode; a = tree.parent(a), ++level) {
      if (opt.depth >= 0 && level > opt.depth) break;
      at = inv.InternChild(at, tree.frame_id(a));
      if (at >= acc.size()) acc.resize(at + 1, std::vector<double>(ids.size(), 0.0));
      for (size_t i = 0; i < ids.size(); ++i) acc[at][i] += v[i];
    }
    for (size_t i = 0; i < ids.size(); ++i) acc[0][i] += v[i];
  }
  if (matched.empty()) return cct::NotFound("no frame matches '" + cct::ElideMiddle(pattern, 80) + "'");

  const cct::Children children = cct::BuildChildren(inv);
  auto sorted_children = [&](NodeId n) {
    std::vector<NodeId> kids(children.begin(n), children.end(n));
    std::sort(kids.begin(), kids.end(), [&](NodeId a, NodeId b) {
      if (acc[a][0] != acc[b][0]) return std::fabs(acc[a][0]) > std::fabs(acc[b][0]);
      return inv.name(a) < inv.name(b);
    });
    if (opt.min_pct > 0) {
      const double threshold = std::fabs(acc[0][0]) * opt.min_pct / 100.0;
      kids.erase(std::remove_if(kids.begin(), kids.end(), [&](NodeId k) { return std::fabs(acc[k][0]) < threshold; }),
                 kids.end());
    }
    return kids;
  };
  const double reach = acc[0][0];

  switch (opt.format) {
    case OutputFormat::kText: {
      out << profile.label << ": callers of /" << pattern << "/: ";
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i) out << ", ";
        out << cols.desc(i).name << ' ' << output::FormatValue(acc[0][i], cols.desc(i).unit, opt.ascii);
        if (cols.additive(i) && cols.total(i) != 0)
          out << " (" << output::FormatPercent(acc[0][i], cols.total(i)) << " of "
              << output::FormatValue(cols.total(i), cols.desc(i).unit, opt.ascii) << ")";
      }
      out << '\n';
      std::vector<output::TextTable::Column> header = cols.TextColumns(false);
      header.push_back({"share", 0});
      output::TextTable table(header, "callee <- callers");
      const output::TreeGlyphs& g = output::Glyphs(opt.ascii);
      struct Item {
        NodeId node;
        std::string prefix, child_prefix;
      };
      std::vector<Item> stack;
      const std::vector<NodeId> tops = sorted_children(cct::kRootNode);
      for (size_t i = tops.size(); i-- > 0;) stack.push_back({tops[i], "", ""});
      while (!stack.empty()) {
        Item it = std::move(stack.back());
        stack.pop_back();
        std::vector<std::string> cells = cols.TextCells(acc[it.node], acc[it.node], opt.ascii, false);
        cells.push_back(output::FormatPercent(acc[it.node][0], reach));
        table.AddRow(std::move(cells), it.prefix, output::DisplayName(inv, it.node));
        const std::vector<NodeId> kids = sorted_children(it.node);
        for (size_t i = kids.size(); i-- > 0;) {
          const bool last = i + 1 == kids.size();
          stack.push_back({kids[i], it.child_prefix + (last ? g.last : g.branch),
                           it.child_prefix + (last ? g.space : g.pipe)});
        }
      }
      table.Render(out, opt.width, opt.ascii);
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      // Nested: each entry {name, kind, module, value{}, share, callers[]}.
      w.BeginObject().Field("pattern", pattern).Key("total").BeginObject();
      for (size_t i = 0; i < ids.size(); ++i)
        w.Field(cols.desc(i).name, output::ExportValue(acc[0][i], cols.desc(i).unit));
      w.EndObject().Key("callees").BeginArray();
      for (NodeId top : sorted_children(cct::kRootNode)) {
        output::WriteNestedJson(
            w, top,
            [&](NodeId n) {
              output::WriteFrameFields(w, inv, n);
              w.Key("value").BeginObject();
              for (size_t i = 0; i < ids.size(); ++i)
                w.Field(cols.desc(i).name, output::ExportValue(acc[n][i], cols.desc(i).unit));
              w.EndObject();
              w.Field("share", reach != 0 ? acc[n][0] / reach : 0.0);
            },
            [&](NodeId n, int) { return sorted_children(n); }, "callers");
      }
      w.EndArray().EndObject();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "depth,name,kind,module,";
      for (size_t i = 0; i < ids.size(); ++i) out << output::CsvField(cols.desc(i).name) << ',';
      out << "share,chain\n";
      struct Item {
        NodeId node;
        int depth;
      };
      std::vector<Item> stack;
      const std::vector<NodeId> tops = sorted_children(cct::kRootNode);
      for (size_t i = tops.size(); i-- > 0;) stack.push_back({tops[i], 0});
      while (!stack.empty()) {
        const Item it = stack.back();
        stack.pop_back();
        const cct::Frame f = inv.frame(it.node);
        std::string chain;
        for (const std::string& p : cct::PathNames(inv, it.node)) chain += (chain.empty() ? "" : ";") + p;
        out << it.depth << ',' << output::CsvField(inv.str(f.name)) << ',' << cct::FrameKindName(f.kind) << ','
            << output::CsvField(inv.str(f.module)) << ',';
        for (size_t i = 0; i < ids.size(); ++i)
          out << output::NumberText(output::ExportValue(acc[it.node][i], cols.desc(i).unit)) << ',';
        out << output::NumberText(reach != 0 ? acc[it.node][0] / reach : 0.0) << ',' << output::CsvField(chain) << '\n';
        const std::vector<NodeId> kids = sorted_children(it.node);
        for (size_t i = kids.size(); i-- > 0;) stack.push_back({kids[i], it.depth + 1});
      }
      break;
    }
  }
  return Status::Ok();
}

cct::Status CallersCommand(const ReportRequest& request, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(ReportOptions opt, ParseReportOptions(request));
  CCT_ASSIGN_OR_RETURN(query::Profile profile, LoadRequestProfile(request, /*keep_lines=*/false));
  return WriteCallersReport(profile, request.args.at(1), opt, out);
}

}  // namespace reports
