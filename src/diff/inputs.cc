#include "diff/inputs.h"

#include "store/database.h"
#include "store/selector.h"

namespace diff {

using cct::Result;

namespace {
std::string Label(const store::RunMeta& run) {
  std::string s = "run " + std::to_string(run.id);
  if (!run.name.empty()) s += " '" + run.name + "'";
  return s;
}
}  // namespace

Result<Side> LoadSide(const std::string& selector, const std::string& default_db, const TreeLoader& loader) {
  CCT_ASSIGN_OR_RETURN(store::RunSelector sel, store::ParseSelector(selector, default_db));
  Side side;
  side.selector = selector;
  const bool range = sel.iteration && !sel.iteration->median && sel.iteration->first != sel.iteration->last;
  if (!sel.is_group() && !range) {
    CCT_ASSIGN_OR_RETURN(RunTree t, loader(selector, default_db));
    side.label = t.label;
    side.runs.push_back(std::move(t));
    return side;
  }

  std::vector<store::RunMeta> runs;
  {
    // Closed again before loading: LMDB forbids one process to hold the
    // same environment open twice, and the loader opens it itself.
    CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(sel.db_path, store::Database::Mode::kRead));
    CCT_ASSIGN_OR_RETURN(runs, store::SelectRuns(*db, sel));
  }
  std::vector<std::string> suffixes;
  if (!sel.iteration) {
    suffixes.emplace_back();
  } else if (sel.iteration->median) {
    suffixes.emplace_back("@iter=median");
  } else {
    for (uint32_t k = sel.iteration->first; k <= sel.iteration->last; ++k)
      suffixes.push_back("@iter=" + std::to_string(k));
  }
  side.group = true;
  for (const store::RunMeta& run : runs) {
    for (const std::string& suffix : suffixes) {
      CCT_ASSIGN_OR_RETURN(RunTree t, loader(std::to_string(run.id) + suffix, sel.db_path));
      side.runs.push_back(std::move(t));
    }
  }
  if (sel.is_group()) {
    side.label = "group " + selector + " (" + std::to_string(side.runs.size()) + " runs)";
  } else {
    side.label = Label(runs.front()) + " @iter=" + std::to_string(sel.iteration->first) + ".." +
                 std::to_string(sel.iteration->last) + " (" + std::to_string(side.runs.size()) + " iterations)";
  }
  return side;
}

TreeLoader StoreLoader() {
  return [](const std::string& selector, const std::string& db_path) -> Result<RunTree> {
    CCT_ASSIGN_OR_RETURN(store::RunSelector sel, store::ParseSelector(selector, db_path));
    if (sel.iteration) return cct::InvalidArgument("'" + selector + "': this reader does not know iterations");
    CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(sel.db_path, store::Database::Mode::kRead));
    CCT_ASSIGN_OR_RETURN(std::vector<store::RunMeta> runs, store::SelectRuns(*db, sel));
    if (runs.size() != 1) return cct::InvalidArgument("'" + selector + "' names a group, not one run");
    RunTree t;
    t.label = Label(runs.front());
    t.run_id = runs.front().id;
    CCT_ASSIGN_OR_RETURN(t.tree, db->ReadTree(t.run_id));
    return t;
  };
}

}  // namespace diff
