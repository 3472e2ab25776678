// cct-diff --flame FILE, and the loader cct-diff reads its sides with.
#include "output/write_file.h"
#include "reports/diff_report.h"
#include "reports/flame.h"

namespace reports {

cct::Status WriteDiffFlame(const diff::DiffResult& result, const diff::Side& base, const diff::Side& cand,
                           const FlameOptions& options, const std::string& path) {
  size_t metric = result.metrics().size();
  for (size_t m = 0; m < result.metrics().size() && metric == result.metrics().size(); ++m)
    if (result.metrics()[m].additive) metric = m;
  if (metric == result.metrics().size())
    return cct::InvalidArgument("--flame needs an additive metric among those compared");
  FlameOptions fo = options;
  fo.metric = result.metrics()[metric].name;
  fo.subtitle = base.label + " -> " + cand.label;
  return output::WriteFileAtomically(path,
                                     [&](std::ostream& out) { return WriteDiffFlameGraph(result, metric, fo, out); });
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
