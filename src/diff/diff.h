// The diff engine: compares a base and a candidate, each one run or a group
// of runs, node by node over the union of their trees.
//
// For every selected metric and union node: the mean per run of the
// inclusive and exclusive values on each side (a node absent from a run
// counts 0 there), for groups the standard deviation, the Mann-Whitney
// p-value and, on request, a 95% interval of the ratio (diff/stats.h). A
// node is in both trees, base-only ("gone") or candidate-only ("new"); new
// and gone nodes keep their values and never yield NaN. A node counts as
// present in a run when its subtree holds a value of some additive metric
// (an iteration's tree keeps all of its run's nodes, most of them empty).
//
// Verdicts, on the inclusive value: a node regresses when its relative change
// exceeds `threshold` AND its absolute change exceeds `min_abs` AND, with at
// least 3 runs on each side, its p-value is below `alpha`; improvements
// likewise with the signs turned. A new node's relative change counts as
// +infinity, a gone node's as -100%. With fewer than 3 runs on a side no
// test is made and verdicts rest on the thresholds alone.
//
// Causes: one slowdown raises the inclusive value of every ancestor, so
// verdicts alone name a chain. A node with a verdict is a cause when the
// part of its change that its children with the same verdict do not
// explain (its own, "unexplained" change: the change of its inclusive value
// minus theirs, per run) passes the same three tests, the relative one
// against the same part of its base value; else it is context: it only
// inherits changes found below it. The deepest node of every flagged chain
// is a cause. A derived metric (a ratio, not a sum over children) has no
// context: each node with a verdict is a cause. Counts (regressions,
// improvements, regressions()) are of causes.
//
// Ownership: a DiffResult owns the union tree and all values; it does not
// refer to the input trees. Plain data once computed; const methods are
// thread-compatible.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cct/metric.h"
#include "cct/status.h"
#include "cct/tree.h"
#include "cct/tree_ops.h"
#include "diff/align.h"

namespace diff {

class MannWhitney;  // diff/stats.h

// One run (or one iteration of a run) and its tree.
struct RunTree {
  std::string label;  // "run 3 'v1'"
  uint32_t run_id = 0;
  cct::Tree tree;
};

// One side of the comparison.
struct Side {
  std::string selector;  // as the user wrote it
  std::string label;     // "run 3 'v1'", "group tag:commit=abc (5 runs)"
  bool group = false;    // a tag group or an iteration range, even of one member
  std::vector<RunTree> runs;
};

enum class NodeStatus : uint8_t { kBoth = 0, kGone = 1, kNew = 2 };
enum class Verdict : uint8_t { kNone = 0, kRegression = 1, kImprovement = 2 };
std::string_view StatusName(NodeStatus s);  // "both", "gone", "new"
std::string_view VerdictName(Verdict v);    // "", "regression", "improvement"

// The smallest absolute change that counts: a fraction of the base total,
// or a value in export units (seconds for times, else the metric's unit;
// percentage points with --normalize-total).
struct MinAbs {
  bool fraction = true;
  double value = 0.01;
};

// cct-diff's option texts (options.cc). --threshold: "5" or "5%" -> 0.05.
// --min-abs: "1%" (of the base total), "0.01" (seconds for times), "10ms",
// "4KiB". kInvalidArgument for anything else (and for a negative --min-abs).
cct::Result<double> ParsePercent(std::string text);
cct::Result<MinAbs> ParseMinAbs(const std::string& text);

struct DiffOptions {
  std::vector<std::string> metrics;  // empty: the first metric the inputs share
  AlignOptions align;
  bool normalize_total = false;  // compare shares of each run's total (percent)
  double threshold = 0.05;       // relative change
  MinAbs min_abs;
  double alpha = 0.01;
};

// Runs needed on each side before a significance test is made.
inline constexpr size_t kMinRunsForTest = 3;

struct MetricDiff {
  std::string name;
  cct::Unit unit = cct::Unit::kCount;  // kPercent under --normalize-total
  bool additive = true;
  double min_abs = 0;  // resolved, in stored units
  // Means per run, per union node.
  std::vector<double> base_inc, cand_inc, base_exc, cand_exc;
  // Groups only (empty otherwise): inclusive standard deviations, and the
  // per-run inclusive values the intervals are computed from.
  std::vector<double> base_sd, cand_sd;
  std::vector<std::vector<double>> base_runs, cand_runs;
  std::vector<double> p_value;  // empty without a test
  std::vector<Verdict> verdict;
  std::vector<char> cause;  // of nodes with a verdict: its own change passes the tests (see above)
  size_t regressions = 0, improvements = 0;  // causes, root included
};

class DiffResult {
 public:
  DiffResult(Aligner aligner, DiffOptions options) : aligner_(std::move(aligner)), options_(std::move(options)) {}

  const cct::Tree& tree() const { return aligner_.tree(); }
  size_t size() const { return aligner_.size(); }
  std::string_view name(cct::NodeId n) const { return aligner_.display_name(n); }
  // Display names from the root's child down to n.
  std::vector<std::string> Path(cct::NodeId n) const;
  NodeStatus status(cct::NodeId n) const { return status_[n]; }
  const std::vector<MetricDiff>& metrics() const { return metrics_; }
  const DiffOptions& options() const { return options_; }

  size_t base_runs() const { return base_runs_; }
  size_t cand_runs() const { return cand_runs_; }
  // Whether p-values were computed (kMinRunsForTest runs on each side).
  bool tested() const { return tested_; }
  // The smallest p-value these sample sizes can reach (1 without a test).
  double smallest_p() const { return smallest_p_; }

  // Inclusive relative change (candidate/base - 1); +inf for a node that
  // appears, 0 when both are 0.
  double Change(size_t metric, cct::NodeId n) const;
  // Candidate/base ratio of the inclusive (or exclusive) means; nullopt
  // when the base is 0.
  std::optional<double> Ratio(size_t metric, cct::NodeId n, bool inclusive = true) const;
  // 95% interval of the inclusive ratio (groups with a test only).
  std::optional<std::pair<double, double>> Interval(size_t metric, cct::NodeId n) const;
  double PValue(size_t metric, cct::NodeId n) const {
    return tested_ ? metrics_[metric].p_value[n] : std::numeric_limits<double>::quiet_NaN();
  }

  // Nodes with the verdict (root excluded), largest absolute inclusive
  // change first; ties by node id.
  std::vector<cct::NodeId> Ranked(size_t metric, Verdict verdict) const;
  // The causes among them (Ranked's order), and the context (the rest).
  std::vector<cct::NodeId> Causes(size_t metric, Verdict verdict) const;
  std::vector<cct::NodeId> Context(size_t metric, Verdict verdict) const;
  bool IsCause(size_t metric, cct::NodeId n) const { return metrics_[metric].cause[n] != 0; }
  // Roots of new (or gone) subtrees with a nonzero inclusive value, largest
  // first.
  std::vector<cct::NodeId> SubtreeRoots(size_t metric, NodeStatus status) const;
  size_t regressions() const;  // over all metrics and nodes

 private:
  friend cct::Result<DiffResult> Compare(const Side& base, const Side& candidate, const DiffOptions& options);
  // Sets the metric's causes and counts from its verdicts (see "Causes").
  void MarkCauses(size_t metric, const cct::Children& kids, MannWhitney& mw);

  Aligner aligner_;
  DiffOptions options_;
  std::vector<NodeStatus> status_;
  std::vector<MetricDiff> metrics_;
  size_t base_runs_ = 0, cand_runs_ = 0;
  bool tested_ = false;
  double smallest_p_ = 1;
};

// Aligns the inputs and computes every metric's values, statistics and
// verdicts. kInvalidArgument for an unknown or incompatible metric, or for
// inputs without a common metric.
cct::Result<DiffResult> Compare(const Side& base, const Side& candidate, const DiffOptions& options);

}  // namespace diff
