#include "query/profile.h"

#include "cct/tree_ops.h"

namespace query {

using cct::Result;

std::string RunLabel(const store::RunMeta& run) {
  std::string s = "run " + std::to_string(run.id);
  if (!run.name.empty()) s += " '" + run.name + "'";
  return s;
}

Result<Profile> LoadProfile(const std::string& selector_text, const std::string& default_db,
                            const LoadOptions& options) {
  Profile p;
  CCT_ASSIGN_OR_RETURN(p.selector, store::ParseSelector(selector_text, default_db));
  p.db_path = p.selector.db_path;
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(p.db_path, store::Database::Mode::kRead));
  CCT_ASSIGN_OR_RETURN(p.runs, store::SelectRuns(*db, p.selector));
  if (p.selector.iteration)
    return cct::InvalidArgument("'" + selector_text + "': run " + std::to_string(p.runs.front().id) +
                                " has no iterations (record with --iteration REGEX)");

  if (p.runs.size() == 1 && !p.selector.is_group()) {
    CCT_ASSIGN_OR_RETURN(p.tree, db->ReadTree(p.runs.front().id));
    p.label = RunLabel(p.runs.front());
  } else {
    const double scale = 1.0 / static_cast<double>(p.runs.size());
    for (const store::RunMeta& run : p.runs) {
      CCT_ASSIGN_OR_RETURN(cct::Tree t, db->ReadTree(run.id));
      CCT_RETURN_IF_ERROR(cct::MergeInto(p.tree, t, scale).WithContext(RunLabel(run)));
    }
    p.label = "group " + p.selector.text + " (mean of " + std::to_string(p.runs.size()) + " runs)";
  }
  if (!options.keep_lines && cct::HasKind(p.tree, cct::FrameKind::kLine))
    p.tree = cct::FoldKind(p.tree, cct::FrameKind::kLine);
  if (options.merge_threads && cct::HasKind(p.tree, cct::FrameKind::kThread))
    p.tree = cct::FoldKind(p.tree, cct::FrameKind::kThread);
  return p;
}

Result<std::vector<cct::MetricId>> ResolveMetrics(const cct::Tree& tree, const std::vector<std::string>& names) {
  const cct::MetricRegistry& reg = tree.metrics();
  if (reg.size() == 0) return cct::NotFound("the run has no metrics");
  std::vector<cct::MetricId> out;
  if (names.empty()) {
    out.push_back(0);
    return out;
  }
  for (const std::string& n : names) {
    const cct::MetricId id = reg.Find(n);
    if (id == cct::kNoMetric) {
      std::string have;
      for (cct::MetricId m = 0; m < reg.size(); ++m) have += (m ? ", " : "") + reg.Get(m).name;
      return cct::InvalidArgument("no metric '" + n + "' in this run; it has: " + have);
    }
    out.push_back(id);
  }
  return out;
}

}  // namespace query
