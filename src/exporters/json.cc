// --to json: the tree as `cct-query tree --format json` writes it, with
// every metric (or the -m ones), nothing hidden.
#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "exporters/exporter.h"
#include "output/json_writer.h"
#include "output/metric_columns.h"
#include "output/tree_json.h"

namespace exporters {

cct::Status ExportJson(const query::Profile& profile, const ExportOptions& options, std::ostream& out) {
  const cct::Tree& tree = profile.tree;
  auto ids = ExportMetrics(tree, options.metrics, false);
  if (!ids.ok()) return ids.status();
  cct::NodeValues values(tree);
  output::MetricColumns cols(values, *ids);
  const cct::Children children = cct::BuildChildren(tree);
  // An iteration keeps the run's whole tree; export only what it touched.
  const std::vector<char> with_values = profile.selector.iteration ? cct::NodesWithValues(tree) : std::vector<char>();
  output::VisibleTree vis(tree, children, values.Inclusive(cols.first()), 0.0, -1,
                  profile.selector.iteration ? &with_values : nullptr);
  output::JsonWriter w(out);
  output::WriteTreeJson(tree, vis, cols, cct::kRootNode, w, false);
  out << '\n';
  return cct::Status::Ok();
}

}  // namespace exporters
