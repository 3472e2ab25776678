// Aggregation units: the parts of a profile that ran side by side (MPI ranks,
// threads) or were repeated (the runs of a group), laid on one merged tree by
// path identity, and statistics across them per node of that tree.
//
// A unit is a thread node's subtree (threads of one run, "rank R" nodes of an
// HPCToolkit import), a process of an invocation (SEL/all: MPI ranks), or a
// run of a group. A node a unit lacks counts as 0 in it, as Hatchet and
// Thicket count it. The merged tree holds the sum over units, so it is the
// tree `--merge-threads` (or an invocation's total) shows.
//
// Everything here is a pure function of its arguments; Units owns its trees
// and values. Thread-compatible: const use from several threads is safe once
// merged.EnsureIndexes() ran.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cct/node_values.h"
#include "cct/status.h"
#include "cct/tree.h"
#include "query/profile.h"

namespace query {

struct Unit {
  enum class Kind { kThread, kRank, kRun };
  Kind kind = Kind::kThread;
  std::string name;  // the thread's name, the rank's number, the run's label ("run 3 'name'")
  // "rank 3", "thread 'worker-2'", "run 3 'name'"; an unnamed thread (a run
  // without thread nodes) is "whole run".
  std::string Label() const;
};

struct Units {
  cct::Tree merged;         // threads folded, runs merged; exclusive values: the sum over units
  std::vector<Unit> units;  // in the order the aggregation reports them (ties go to the first)
  // exclusive[u][m]: unit u's exclusive values of merged's metric m, on
  // merged's node ids (additive metrics only; derived ones are empty).
  std::vector<std::vector<cct::SparseColumn>> exclusive;
};

// The thread nodes of `tree` as units (a thread's name "rank R" or "rank R
// thread T", as the HPCToolkit and Hatchet importers name them, makes a rank
// unit). Values outside every thread node (none in recorded or imported runs)
// belong to no unit. A tree without thread nodes is one unit.
Units ThreadUnits(const cct::Tree& tree);

// Each tree one unit, merged by path identity (cct::MergeInto). With
// `fold_threads` their thread nodes are folded first, so a unit is a whole
// process (ranks); without, the trees keep them (the runs of a group, whose
// threads align by name). Errors: a metric registered with two units.
cct::Result<Units> TreeUnits(std::vector<Unit> units, const std::vector<const cct::Tree*>& trees, bool fold_threads);

// The units of a loaded profile: a job's ranks (job:ID, job:ID/all), or a
// group whose runs all carry a launcher rank (an MPI job's ranks, each
// recorded on its own), as its ranks (in rank order, each rank's processes
// merged); an invocation's processes (ranks when the launcher gave them
// one, else runs); all of these need LoadOptions::keep_run_trees; else the
// threads of its tree.
cct::Result<Units> ProfileUnits(const Profile& profile);

// An aggregate run (cct-aggregate, src/aggregate) stores its statistics as
// summary metrics (M@mean, M@min, M@max, M@imbalance, M@argmax) and names
// its units in meta.extra[kAggregateUnitsKey]["units"], in unit order.
inline constexpr std::string_view kAggregateUnitsKey = "aggregate";
// Those labels ("rank 3", "run 7 'name'"); nullopt for other runs.
std::optional<std::vector<std::string>> StoredUnitLabels(const store::RunMeta& run);

// Calls f(u, values) for each unit u in order, `values` being unit u's
// values on merged's nodes (inclusive, exclusive and derived metrics as
// NodeValues computes them for a tree holding only that unit's values).
void ForEachUnit(const Units& units, const std::function<void(size_t unit, cct::NodeValues& values)>& f);

// --- per node across units: sum, mean, min, max, imbalance (Hatchet's
// max/mean) with the unit holding the max.

enum class Aggregation { kSum, kMean, kMin, kMax, kImbalance };
// "sum", "mean", "min", "max", "imbalance"; anything else is kInvalidArgument.
cct::Result<Aggregation> ParseAggregation(std::string_view name);
std::string_view AggregationName(Aggregation a);

// One metric's values across units, per merged node.
struct UnitAggregate {
  size_t units = 0;
  std::vector<double> sum, min, max;
  std::vector<uint32_t> argmax;  // the first unit holding the max

  double mean(cct::NodeId n) const { return units ? sum[n] / static_cast<double>(units) : 0.0; }
  // max/mean; NaN where the mean is 0 (no imbalance to speak of).
  double imbalance(cct::NodeId n) const;
  double Get(Aggregation a, cct::NodeId n) const;

  // Sized for `entries` values (nodes, or groups of nodes) over `units`.
  void Reset(size_t entries, size_t units);
  // Unit u's value x at entry i; units come in order 0, 1, ...
  void Add(size_t u, size_t i, double x);
};

struct AggregateRequest {
  cct::MetricId metric;
  bool inclusive;
};
// One UnitAggregate per request, from one pass over the units.
std::vector<UnitAggregate> AggregateUnits(const Units& units, const std::vector<AggregateRequest>& requests);

// --- ensemble statistics (Thicket's statsframe): one value per unit.

struct Summary {
  double mean = 0, median = 0, sd = 0, cv = 0, min = 0, max = 0;
  std::vector<double> percentiles;  // as asked, in order
};
// `values` (one per unit, at least one): sd is the sample standard deviation
// (n-1; NaN for one value), cv = sd/mean (NaN where the mean is 0), the
// median and percentiles by linear interpolation between closest ranks
// (numpy's default: position p/100·(n-1) in the sorted values). `values` is
// sorted in place.
Summary Summarize(std::vector<double>& values, const std::vector<double>& percentiles);
// The p-th percentile (0..100) of sorted values by that interpolation.
double Percentile(const std::vector<double>& sorted, double p);

}  // namespace query
