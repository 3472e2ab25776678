// The pieces both HPCToolkit readers share (hpctoolkit_common.h).
#include "importers/hpctoolkit_common.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "cct/node_values.h"

namespace importers::hpc {

std::string MetricBaseName(std::string name) {
  for (const char* suffix : {" (I)", " (E)"})
    if (name.size() > 4 && name.compare(name.size() - 4, 4, suffix) == 0) name.resize(name.size() - 4);
  return name;
}

cct::Status RegisterMetrics(cct::Tree& tree, std::vector<Metric>& metrics, const ImportOptions& options,
                            const std::string& where) {
  for (Metric& m : metrics) {
    cct::Unit unit = cct::Unit::kNone;
    if (!options.metric.empty() && options.metric == m.name && options.unit) {
      CCT_RETURN_IF_ERROR(ResolveImportUnit(m.name, options.unit, unit, m.scale));
    } else if (const cct::MetricDesc* known = cct::FindStandardMetric(m.name)) {
      unit = known->unit;
    }
    cct::MetricDesc d;
    d.name = m.name;
    d.unit = unit;
    d.kind = cct::MetricKind::kAdditive;
    d.description = "imported from HPCToolkit";
    cct::Result<cct::MetricId> id = tree.metrics().Register(d);
    if (!id.ok()) return cct::BadInput(where + ": " + id.status().message());
    m.id = *id;
  }
  if (!options.metric.empty() && options.unit &&
      std::none_of(metrics.begin(), metrics.end(), [&](const Metric& m) { return m.name == options.metric; })) {
    std::string have;
    for (const Metric& m : metrics) have += (have.empty() ? "" : ", ") + m.name;
    return cct::InvalidArgument("--metric '" + options.metric + "' is not in the database; it has: " + have);
  }
  return cct::Status::Ok();
}

std::string ThreadLabel(uint32_t rank, uint32_t thread, bool show_thread, std::string_view extra) {
  return "rank " + std::to_string(rank) + (show_thread ? " thread " + std::to_string(thread) : "") +
         std::string(extra);
}

bool RanksHaveThreads(const std::vector<std::pair<uint32_t, uint32_t>>& rank_thread) {
  std::map<uint32_t, int> per_rank;
  for (const auto& rt : rank_thread)
    if (++per_rank[rt.first] > 1) return true;
  return false;
}

void ClearDust(cct::Tree& tree, const std::vector<Metric>& metrics) {
  cct::NodeValues nv(tree);
  for (const Metric& m : metrics) {
    const double total = std::fabs(nv.Total(m.id));
    std::vector<std::pair<cct::NodeId, double>> dust;
    tree.column(m.id).ForEach([&](cct::NodeId n, double v) {
      if (std::fabs(v) <= 1e-9 * total) dust.emplace_back(n, v);
    });
    for (const auto& nd : dust) tree.SetValue(nd.first, m.id, 0);
  }
}

}  // namespace importers::hpc
