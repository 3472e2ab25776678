// ShallowTree: the nodes of a tree at most some levels below its root, as a
// tree of their own, with the values the whole tree gives them.
//
// A report that shows no deeper than --depth D needs neither a per-node
// inclusive array nor a children index over the whole tree: a --depth 4
// view of a 10^7-node run shows 7.7·10^5 nodes, and those two arrays were
// 160 MB of fresh memory, much of the report's time when the kernel is slow
// to hand pages out. Stored trees number their nodes in preorder, so two
// sequential passes over the parent array suffice: forwards, the shallow
// nodes and their parents; backwards, subtree sums with a stack.
//
// The values are bit for bit those NodeValues computes on the whole tree:
// each subtree sum adds the same terms in the same order (the node's own
// value, then its children's sums from the last child to the first), and
// exclusive values are read through a NodeValues of the whole tree.
//
// A ShallowTree owns its tree (the original's strings, frames and metrics,
// copied) and its values; it does not refer to the original after Make.
// Not thread-safe (NodeValues' lazy caches), like NodeValues.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "cct/node_values.h"
#include "cct/tree.h"

namespace cct {

class ShallowTree {
 public:
  // The nodes of `tree` whose depth is at most `max_depth` (the root's is
  // 0), with their frames, in the same relative order; values of the
  // `metrics` (and of the metrics derived ones are computed from). Null
  // when the tree's ids are not its preorder (only trees built in memory),
  // when it is deeper than 65,534 levels (depths are held in 16 bits), or
  // when more than `max_nodes` nodes are that shallow (the copy would save
  // nothing).
  static std::unique_ptr<ShallowTree> Make(const Tree& tree, size_t max_depth, const std::vector<MetricId>& metrics,
                                           size_t max_nodes = SIZE_MAX);

  const Tree& tree() const { return tree_; }
  // Values over the whole original tree, per node of tree(): inclusive
  // values of additive metrics are the original subtrees' sums.
  NodeValues& values() { return values_; }
  // The original id of node n of tree().
  NodeId origin(NodeId n) const { return origin_[n]; }

  ShallowTree(const ShallowTree&) = delete;
  ShallowTree& operator=(const ShallowTree&) = delete;

 private:
  ShallowTree() = default;

  Tree tree_;
  NodeValues values_{tree_};
  std::vector<NodeId> origin_;
};

}  // namespace cct
