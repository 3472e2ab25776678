// `cct-query match RUN QUERY`: the ends of a path query's matching paths
// (docs/query.md), each as its whole path with its values, largest first;
// and the query matching the tree and top reports share.
#include <algorithm>
#include <cmath>

#include "cct/text.h"
#include "cct/tree_ops.h"
#include "output/format.h"
#include "output/tree_json.h"
#include "reports/registry.h"
#include "reports/reports.h"

namespace reports {

using cct::NodeId;
using cct::Status;

cct::Result<query::PathQueryMatch> MatchReportQuery(const cct::Tree& tree, cct::NodeValues& values,
                                                    const std::string& text, bool require_match) {
  CCT_ASSIGN_OR_RETURN(const query::PathQuery q, query::PathQuery::Parse(text));
  CCT_ASSIGN_OR_RETURN(query::PathQueryMatch match, query::MatchPathQuery(tree, q, values));
  if (require_match && match.ends == 0)
    return cct::NotFound("no path matches the query '" + cct::ElideMiddle(text, 80) + "'");
  return match;
}

Status WriteMatchReport(query::Profile& profile, const std::string& query_text, const ReportOptions& opt,
                        std::ostream& out) {
  const cct::Tree& tree = profile.tree;
  CCT_ASSIGN_OR_RETURN(std::vector<cct::MetricId> ids, query::ResolveMetrics(tree, opt.metrics));
  cct::NodeValues values(tree);
  output::MetricColumns cols(values, ids);
  CCT_ASSIGN_OR_RETURN(const query::PathQueryMatch match, MatchReportQuery(tree, values, query_text, false));

  std::vector<NodeId> rows;
  rows.reserve(match.ends);
  for (NodeId n = 0; n < tree.size(); ++n)
    if (match.end[n]) rows.push_back(n);
  const std::vector<double>& key = opt.sort_exclusive ? values.Exclusive(cols.first()) : values.Inclusive(cols.first());
  // Largest first; equal values keep tree (creation) order, so a path's
  // ends read top-down.
  auto larger = [&](NodeId a, NodeId b) {
    const double ka = std::isnan(key[a]) ? 0 : std::fabs(key[a]), kb = std::isnan(key[b]) ? 0 : std::fabs(key[b]);
    return ka != kb ? ka > kb : a < b;
  };
  const size_t shown = opt.limit > 0 ? std::min(opt.limit, rows.size()) : rows.size();
  std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(shown), rows.end(), larger);
  rows.resize(shown);

  // A path wider than the name column keeps as many of its last frames as
  // fit, cut between frames ("… › solve › dgemm"): the end and its nearest
  // callers are what a reader looks for, and TextTable's own cut in the
  // middle of the text would hide them. The name column gets what the value
  // columns (as wide as their widest cell or header, two spaces apart) leave.
  const std::string separator = opt.ascii ? " > " : " › ";
  const std::string ellipsis = opt.ascii ? "..." : "…";
  size_t budget = SIZE_MAX;
  if (opt.width && opt.format == OutputFormat::kText) {
    const std::vector<output::TextTable::Column> columns = cols.TextColumns();
    std::vector<size_t> widths;
    for (const auto& c : columns) widths.push_back(cct::DisplayWidth(c.header));
    for (NodeId n : rows) {
      const std::vector<std::string> cells = cols.NodeTextCells(n, opt.ascii);
      for (size_t i = 0; i < cells.size() && i < widths.size(); ++i)
        widths[i] = std::max(widths[i], cct::DisplayWidth(cells[i]));
    }
    size_t used = 0;
    for (size_t w : widths) used += w + 2;
    budget = std::max<size_t>(24, opt.width > used ? opt.width - used : 0);
  }
  auto display_path = [&](NodeId n) {
    std::string path = output::DisplayName(tree, n);
    size_t width = cct::DisplayWidth(path);
    const size_t cut = cct::DisplayWidth(ellipsis + separator);
    for (NodeId v = tree.parent(n); v != cct::kRootNode; v = tree.parent(v)) {
      const std::string name = output::DisplayName(tree, v);
      const size_t w = cct::DisplayWidth(name) + cct::DisplayWidth(separator);
      const bool last = tree.parent(v) == cct::kRootNode;
      if (width + w + (last ? 0 : cut) > budget) return ellipsis + separator + path;
      path = name + separator + path;
      width += w;
    }
    return path;
  };

  switch (opt.format) {
    case OutputFormat::kText: {
      out << profile.label << ": " << cols.TotalsLine(opt.ascii) << "; " << match.ends
          << (match.ends == 1 ? " path matches" : " paths match");
      if (shown < match.ends) out << ", the " << shown << " largest" << (opt.sort_exclusive ? " (exclusive)" : "");
      out << '\n';
      if (rows.empty()) break;
      output::TextTable table(cols.TextColumns(), "path");
      for (NodeId n : rows) table.AddRow(cols.NodeTextCells(n, opt.ascii), "", display_path(n));
      table.Render(out, opt.width, opt.ascii);
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginObject().Field("query", query_text).FieldInt("matches", static_cast<long long>(match.ends));
      w.Key("rows").BeginArray();
      for (NodeId n : rows) {
        w.BeginObject().Key("path").BeginArray();
        for (const std::string& p : cct::PathNames(tree, n)) w.String(p);
        w.EndArray();
        output::WriteFrameFields(w, tree, n);
        cols.WriteNodeJson(w, n);
        w.EndObject();
      }
      w.EndArray().EndObject();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "name,kind,module,file,line," << cols.CsvHeader() << ",path\n";
      for (NodeId n : rows) {
        const cct::Frame f = tree.frame(n);
        std::string path;
        for (const std::string& p : cct::PathNames(tree, n)) path += (path.empty() ? "" : ";") + p;
        out << output::CsvField(tree.str(f.name)) << ',' << cct::FrameKindName(f.kind) << ','
            << output::CsvField(tree.str(f.module)) << ',' << output::CsvField(tree.str(f.file)) << ',' << f.line
            << ',' << cols.CsvCells(cols.NodeInclusive(n), cols.NodeExclusive(n)) << ',' << output::CsvField(path)
            << '\n';
      }
      break;
    }
  }
  return Status::Ok();
}

cct::Status MatchCommand(const ReportRequest& request, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(ReportOptions opt, ParseReportOptions(request));
  CCT_ASSIGN_OR_RETURN(query::Profile profile, LoadRequestProfile(request, /*keep_lines=*/false));
  return WriteMatchReport(profile, request.args.at(1), opt, out);
}

}  // namespace reports
