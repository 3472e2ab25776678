// Profile: the tree a report reads, loaded from a RUN selector.
//
// One run gives its own tree. A group (tag:K=V) gives the union of its runs'
// trees by path identity holding the mean per run, so every report also works
// on groups. An invocation (SEL/all) gives the union of its processes' trees
// holding their total (the same path in two processes adds up). Source-line nodes are folded into their functions unless asked
// for (top --by line, tree --lines). An @iter= selector replaces every
// additive metric's values with those of the chosen iteration(s) on the
// run's whole tree (nodes without values in them carry zeros); for a group,
// each run's iteration(s), then the mean. An @t= or @range= selector does the
// same with the values of a time window of each run's trace
// (query/time_window.h). Owns its tree; not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "store/database.h"
#include "store/iterations.h"
#include "store/selector.h"

namespace query {

struct LoadOptions {
  bool keep_lines = false;     // keep kLine nodes
  bool merge_threads = false;  // fold thread nodes: one tree for all threads
  // @iter=median: the metric whose per-iteration totals choose the iteration
  // (empty: the run's first metric).
  std::string median_metric;
  // The -m list: its NAME=EXPR definitions are registered in the loaded
  // tree (DefineMetrics), so every report, export and diff can show them.
  std::vector<std::string> metrics;
  // Keep each run's own tree beside the merged one (Profile::run_trees), for
  // statistics across a group's runs or an invocation's processes.
  bool keep_run_trees = false;
  // With keep_run_trees: leave Profile::tree empty for a group or an
  // invocation (a caller that merges the runs its own way saves a merge).
  bool skip_merged_tree = false;
};

struct Profile {
  std::string db_path;
  store::RunSelector selector;
  std::vector<store::RunMeta> runs;  // the run, or the group's runs
  std::string label;                 // "run 3 'name'", "run 3 'name' iteration 4", "group tag:k=v (mean of 5 runs)",
                                     // "invocation job/all (total of 3 processes)"
  cct::Tree tree;
  // With LoadOptions::keep_run_trees: each run's tree, as `runs` orders them
  // (its iteration values when selected; source lines and threads folded as
  // in `tree`).
  std::vector<cct::Tree> run_trees;
};

cct::Result<Profile> LoadProfile(const std::string& selector_text, const std::string& default_db,
                                 const LoadOptions& options);

// Registers the derived metrics that `specs` define ("NAME=EXPR", see
// cct::MetricRegistry::Define); other specs are metric names and left alone.
// A definition the tree already holds with the same formula is kept (a tree
// loaded twice through @iter=median).
cct::Status DefineMetrics(cct::Tree& tree, const std::vector<std::string>& specs);

// Resolves metric names against a tree; no names gives the first metric. A
// NAME=EXPR definition resolves to NAME (define it first). Unknown names are
// an error that lists the metrics the run has.
cct::Result<std::vector<cct::MetricId>> ResolveMetrics(const cct::Tree& tree, const std::vector<std::string>& names);

// "run 3 'name'" for one run.
std::string RunLabel(const store::RunMeta& run);
// "invocation job/all (total of 3 processes)".
std::string InvocationLabel(const std::string& selector_text, size_t processes);

// Each iteration's total of `metric`: the sum of its exclusive values for an
// additive metric; for a derived one, its formula over those sums.
std::vector<double> IterationTotals(const store::RunIterations& iterations, const cct::MetricRegistry& metrics,
                                    cct::MetricId metric);

// The median iteration (0-based) by these totals: the iterations sorted by
// total (ties: earlier first, NaN last), the one at position (n-1)/2, so an
// even count gives the lower of the two middle ones. n must be > 0.
size_t MedianIteration(const std::vector<double>& totals);

// Replaces every additive metric's values in `tree` (the run's tree as
// ReadTree returns it) with the sum over iterations [first, last] (0-based,
// inclusive). kCorrupt when a value does not fit the tree.
cct::Status ApplyIterations(cct::Tree& tree, const store::RunIterations& iterations, size_t first, size_t last);

}  // namespace query
