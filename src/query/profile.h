// Profile: the tree a report reads, loaded from a RUN selector.
//
// One run gives its own tree. A group (tag:K=V) gives the union of its runs'
// trees by path identity holding the mean per run, so every report also works
// on groups. Source-line nodes are folded into their functions unless asked
// for (top --by line, tree --lines). Owns its tree; not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "store/database.h"
#include "store/selector.h"

namespace query {

struct LoadOptions {
  bool keep_lines = false;     // keep kLine nodes
  bool merge_threads = false;  // fold thread nodes: one tree for all threads
};

struct Profile {
  std::string db_path;
  store::RunSelector selector;
  std::vector<store::RunMeta> runs;  // the run, or the group's runs
  std::string label;                 // "run 3 'name'", "group tag:k=v (5 runs)"
  cct::Tree tree;
};

cct::Result<Profile> LoadProfile(const std::string& selector_text, const std::string& default_db,
                                 const LoadOptions& options);

// Resolves metric names against a tree; no names gives the first metric.
// Unknown names are an error that lists the metrics the run has.
cct::Result<std::vector<cct::MetricId>> ResolveMetrics(const cct::Tree& tree, const std::vector<std::string>& names);

// "run 3 'name'" for one run.
std::string RunLabel(const store::RunMeta& run);

}  // namespace query
