// Helpers the exporters share.
#include "exporters/exporter.h"

namespace exporters {

using cct::MetricId;

// Additive metrics to export: the named ones, or all.
cct::Result<std::vector<MetricId>> ExportMetrics(const cct::Tree& tree, const std::vector<std::string>& names,
                                                 bool additive_only) {
  if (!names.empty()) return query::ResolveMetrics(tree, names);
  std::vector<MetricId> ids;
  for (MetricId m = 0; m < tree.metrics().size(); ++m)
    if (!additive_only || tree.metrics().Get(m).kind == cct::MetricKind::kAdditive) ids.push_back(m);
  if (ids.empty()) return cct::NotFound("the run has no metrics to export");
  return ids;
}

}  // namespace exporters
