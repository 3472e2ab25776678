// Derive: the tree operations behind `cct-query derive`, which makes a new
// run out of a profile: squashing (folding nodes into their nearest kept
// ancestor: the ends of a path query, the nodes off a query's paths, the
// nodes under a share of a metric), merging the threads' subtrees with a
// statistic, and normalizing values; and the record of those operations
// that the new run's metadata keeps (docs/format.md, `derived_from`).
//
// The operations are pure functions of their inputs (thread-safe on
// distinct trees); loading the source and storing the result is the
// command's (src/reports/derive.cc). A DeriveOp is a plain value.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "query/path_query.h"

namespace query {

enum class DeriveOpKind { kDrop, kQuery, kKeepMin, kMergeThreads, kNormalize };
// How --merge-threads combines a node's per-thread exclusive values.
enum class ThreadStat { kSum, kMean, kMin, kMax };
// What --normalize divides by.
enum class NormalizeBy { kPerIteration, kPerThread, kTotal, kNumber };

// One operation as the command line gave it, checked.
struct DeriveOp {
  DeriveOpKind kind = DeriveOpKind::kDrop;
  std::string option;  // the cct-query option: "drop", "query", "keep-min", "merge-threads", "normalize"
  std::string value;   // its argument as given
  std::optional<PathQuery> query;  // drop, query
  double pct = 0;                  // keep-min
  std::string metric;              // keep-min: -m (empty: the tree's first metric)
  ThreadStat stat = ThreadStat::kSum;
  NormalizeBy by = NormalizeBy::kNumber;
  double number = 0;  // normalize NUMBER
};

// Parses `--OPTION VALUE` (`metric`: derive's -m, read by keep-min).
// kInvalidArgument with one line naming the option: an unknown option, a
// query that does not parse, PCT outside [0, 100], an unknown statistic or
// normalization, a NUMBER that is not a positive finite number.
cct::Result<DeriveOp> ParseDeriveOp(std::string_view option, const std::string& value, const std::string& metric);

// The facts about the source run(s) that some operations need besides the
// tree: --normalize per-iteration divides by `iterations`, per-thread by
// `threads` (the thread nodes of the source as loaded, before any
// operation: so per-thread means the same before and after --merge-threads).
struct DeriveSource {
  size_t iterations = 0;  // 0: the source has none (per-iteration is an error)
  size_t threads = 0;     // 0: no thread nodes (per-thread is an error)
};

struct DeriveResult {
  cct::Tree tree;
  // One JSON object per operation, in order: what it was and what it did
  // (docs/format.md lists the members).
  std::vector<nlohmann::json> operations;
};

// Applies `ops` in order to `src`, then drops frames and strings no node
// uses any more. Errors (kInvalidArgument): a --query that matches no path,
// --keep-min's metric unknown or derived, a normalization the source cannot
// give (no iterations, no threads), a query naming a metric the tree lacks.
cct::Result<DeriveResult> ApplyDerive(const cct::Tree& src, const std::vector<DeriveOp>& ops,
                                      const DeriveSource& source);

// --- the operations, each on its own (ApplyDerive chains them)

// Per node: its inclusive value of `metric` (additive) is below `pct` % of
// the metric's total, both taken as absolute values (the root never is).
std::vector<char> BelowShare(const cct::Tree& tree, cct::MetricId metric, double pct);

// The outermost thread nodes: thread nodes without a thread ancestor. Each
// stands for one thread (or, in HPCToolkit imports, one rank or rank/thread).
std::vector<cct::NodeId> ThreadNodes(const cct::Tree& tree);

// Folds every thread node away, so that the threads' paths merge; each
// merged node's exclusive value of each additive metric is `stat` over the
// threads (ThreadNodes) of that node's exclusive value in each thread, a
// thread without the node counting 0. Values outside every thread's
// subtree (the root's own, nodes not under a thread) are kept as they are.
// A tree without thread nodes is returned as it is.
cct::Tree MergeThreads(const cct::Tree& tree, ThreadStat stat);

// Divides every additive metric's values by `divisor` (> 0).
void DivideValues(cct::Tree& tree, double divisor);

// Divides every additive metric's values by the metric's total, so that
// they are fractions of 1 (a metric whose total is 0 keeps its values); every
// metric's unit becomes 1 (dimensionless). Returns the totals, by metric id
// (0 for derived metrics).
std::vector<double> DivideByTotals(cct::Tree& tree);

// `tree` with only the frames and strings its nodes use (the operations
// keep their source's tables whole); nodes, values and metrics unchanged.
cct::Tree CompactFrames(const cct::Tree& tree);

// --- the record

// "--drop 'QUERY'", "--keep-min 1 -m cputime", "--merge-threads mean",
// "--normalize per-iteration": an operation record as the option that
// makes it again.
std::string DescribeOperation(const nlohmann::json& op);
// What the operation did: "12 nodes folded", "4 threads", "divided by 10";
// empty when the record does not say.
std::string DescribeEffect(const nlohmann::json& op);

std::string_view ThreadStatName(ThreadStat stat);
std::string_view NormalizeByName(NormalizeBy by);

}  // namespace query
