// CSV export: one row per node, for pandas, DuckDB and spreadsheets.
//
//   node,parent,depth,kind,name,module,file,line,path,<m> (inc),<m> (exc),...
//
// `node` and `parent` are the run's node ids (preorder, parent before child;
// the root is node 0 and has no row, so `parent` is empty for the nodes
// directly under it), `path` the frame names from the root's
// child down to the node joined by ';' (a ';' inside a name is written as
// ':', as in folded stacks). Every metric of the run (or the -m ones) gets an
// inclusive and an exclusive column in export units: seconds for times,
// bytes, counts; derived metrics are empty where they have no value.
// Streams: rows are written in preorder as the tree is walked.
#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "exporters/exporter.h"
#include "output/format.h"
#include "output/metric_columns.h"
#include "output/progress.h"

namespace exporters {

using cct::MetricId;
using cct::NodeId;
using cct::Status;
using output::CsvField;

Status WriteNodeCsv(const cct::Tree& tree, const std::vector<std::string>& names, std::ostream& out,
                    output::Progress* progress) {
  std::vector<MetricId> ids;
  if (names.empty()) {
    for (MetricId m = 0; m < tree.metrics().size(); ++m) ids.push_back(m);
    if (ids.empty()) return cct::NotFound("the run has no metrics to export");
  } else {
    CCT_ASSIGN_OR_RETURN(ids, query::ResolveMetrics(tree, names));
  }
  cct::NodeValues values(tree);
  output::MetricColumns cols(values, ids);
  const cct::Children children = cct::BuildChildren(tree);
  if (progress) progress->SetTotal(tree.size());

  out << "node,parent,depth,kind,name,module,file,line,path," << cols.CsvHeader() << '\n';
  struct Item {
    NodeId node;
    uint32_t depth;
    size_t path_len;  // length of the parent's path
  };
  std::string path;
  std::vector<Item> stack;
  for (const NodeId* c = children.end(cct::kRootNode); c != children.begin(cct::kRootNode);) stack.push_back({*--c, 1, 0});
  uint64_t done = 0;
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    path.resize(it.path_len);
    if (!path.empty()) path.push_back(';');
    for (char c : tree.name(it.node)) path.push_back(c == ';' ? ':' : c);
    const cct::Frame f = tree.frame(it.node);
    out << it.node << ',' << (tree.parent(it.node) == cct::kRootNode ? std::string() : std::to_string(tree.parent(it.node)))
        << ',' << it.depth << ',' << cct::FrameKindName(f.kind) << ',' << CsvField(tree.str(f.name)) << ','
        << CsvField(tree.str(f.module)) << ',' << CsvField(tree.str(f.file)) << ',' << f.line << ',' << CsvField(path)
        << ',' << cols.CsvCells(cols.NodeInclusive(it.node), cols.NodeExclusive(it.node)) << '\n';
    const size_t len = path.size();
    for (const NodeId* c = children.end(it.node); c != children.begin(it.node);)
      stack.push_back({*--c, it.depth + 1, len});
    if (progress) progress->Update(++done);
  }
  return Status::Ok();
}

Status ExportCsv(const query::Profile& profile, const ExportOptions& options, std::ostream& out) {
  return WriteNodeCsv(profile.tree, options.metrics, out, options.progress);
}

}  // namespace exporters
