// NodeValues: dense per-node exclusive and inclusive values of a tree's
// metrics, computed on first use and cached.
//
// Inclusive values of additive metrics are subtree sums: one reverse pass
// over node ids (children have larger ids than parents). Derived metrics are
// evaluated node by node from the inclusive (or exclusive) values of their
// operands. Summary metrics (aggregate runs) read both from the tree as
// stored. Borrows the Tree, which must outlive it and not change meanwhile
// (a dense column of exclusive values is returned in place, not copied).
// Not thread-safe (lazy caches).
#pragma once

#include <memory>
#include <vector>

#include "cct/tree.h"

namespace cct {

class NodeValues {
 public:
  explicit NodeValues(const Tree& tree) : tree_(tree) {}

  const std::vector<double>& Exclusive(MetricId metric);
  const std::vector<double>& Inclusive(MetricId metric);
  double Total(MetricId metric) { return Inclusive(metric)[kRootNode]; }
  // Inclusive values computed elsewhere, one per node, used instead of this
  // tree's own sums (a ShallowTree's: sums over the whole tree it was cut
  // from).
  void SetInclusive(MetricId metric, std::vector<double> values);
  const Tree& tree() const { return tree_; }

 private:
  std::vector<double> Derive(MetricId metric, bool inclusive);

  const Tree& tree_;
  std::vector<std::unique_ptr<std::vector<double>>> exclusive_, inclusive_;
  // Per metric the exclusive values returned: exclusive_'s, or a dense
  // column of the tree used in place (10^7 nodes: 80 MB not copied).
  std::vector<const std::vector<double>*> exclusive_ref_;
};

}  // namespace cct
