// cct-diff --flame FILE, and the loader cct-diff reads its sides with.
#include "cct/tree_ops.h"
#include "output/write_file.h"
#include "reports/diff_report.h"
#include "reports/flame.h"

namespace reports {

cct::Status WriteDiffFlame(const diff::DiffResult& result, const diff::Side& base, const diff::Side& cand,
                           const std::string& path) {
  CCT_ASSIGN_OR_RETURN(cct::Tree b, diff::SideTree(base));
  CCT_ASSIGN_OR_RETURN(cct::Tree c, diff::SideTree(cand));
  FlameOptions fo;
  for (const diff::MetricDiff& m : result.metrics())
    if (m.additive && fo.metric.empty()) fo.metric = m.name;
  fo.subtitle = base.label + " -> " + cand.label;
  return output::WriteFileAtomically(path, [&](std::ostream& out) { return WriteDiffFlameGraph(b, c, fo, out); });
}

diff::TreeLoader ProfileTreeLoader(const query::LoadOptions& load) {
  return [load](const std::string& selector, const std::string& db) -> cct::Result<diff::RunTree> {
    CCT_ASSIGN_OR_RETURN(query::Profile p, query::LoadProfile(selector, db, load));
    diff::RunTree t;
    t.label = p.label;
    t.run_id = p.runs.empty() ? 0 : p.runs.front().id;
    t.tree = std::move(p.tree);
    return t;
  };
}

}  // namespace reports
