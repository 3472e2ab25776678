// `cct-query match RUN QUERY`: the ends of a path query's matching paths
// (docs/query.md), each as its whole path with its values, largest first;
// and the query matching the tree and top reports share.
#include <algorithm>
#include <cmath>

#include "cct/tree_ops.h"
#include "output/format.h"
#include "reports/registry.h"
#include "reports/reports.h"

namespace reports {

using cct::NodeId;
using cct::Status;

cct::Result<query::PathQueryMatch> MatchReportQuery(const cct::Tree& tree, const std::string& text,
                                                    bool require_match) {
  CCT_ASSIGN_OR_RETURN(const query::PathQuery q, query::PathQuery::Parse(text));
  CCT_ASSIGN_OR_RETURN(query::PathQueryMatch match, query::MatchPathQuery(tree, q));
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
  CCT_ASSIGN_OR_RETURN(const query::PathQueryMatch match, MatchReportQuery(tree, query_text, false));

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

  const std::string_view separator = opt.ascii ? " > " : " › ";
  auto display_path = [&](NodeId n) {
    std::vector<NodeId> chain;
    for (NodeId v = n; v != cct::kRootNode; v = tree.parent(v)) chain.push_back(v);
    std::string s;
    for (size_t i = chain.size(); i-- > 0;) {
      s += output::DisplayName(tree, chain[i]);
      if (i) s += separator;
    }
    return s;
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
        const cct::Frame f = tree.frame(n);
        w.BeginObject().Key("path").BeginArray();
        for (const std::string& p : cct::PathNames(tree, n)) w.String(p);
        w.EndArray();
        w.Field("name", tree.str(f.name)).Field("kind", cct::FrameKindName(f.kind));
        w.Field("module", tree.str(f.module)).Field("file", tree.str(f.file)).FieldInt("line", f.line);
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
