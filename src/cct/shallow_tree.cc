#include "cct/shallow_tree.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace cct {

namespace {

// Depths are held in 16 bits (20 MB for 10^7 nodes); a deeper tree is
// shown from the whole tree instead.
using Depth = uint16_t;
constexpr size_t kMaxDepth = UINT16_MAX - 1;

// The shallow nodes, as the forward pass finds them.
struct Shallow {
  std::vector<NodeId> origin, parent;
  std::vector<FrameId> frame;
  size_t deepest = 0;  // the tree's depth
};

// Forwards, in id order, with no branch on the tree's shape but the rare
// shallow node's: each node's depth is its parent's plus one, and in a
// preorder a node's parent is on the path to the node before it, that is,
// it is the last node seen at its depth, and no deeper than that node.
// The same array gives a shallow node's parent in the result: the last
// shallow node at the depth above. False when the ids are not a preorder,
// the tree is too deep, or more than `max_nodes` nodes are shallow.
bool FindShallow(const Tree& tree, size_t max_depth, size_t max_nodes, Shallow& out) {
  const size_t n = tree.size();
  std::unique_ptr<Depth[]> depth(new Depth[n]);
  std::vector<NodeId> last(kMaxDepth + 2, kNoNode);  // per depth: the last node seen there
  std::vector<NodeId> last_shallow(max_depth + 1, kNoNode);  // per depth: its id in the result
  depth[0] = 0;
  last[0] = kRootNode;
  last_shallow[0] = 0;
  out.origin.push_back(kRootNode);
  out.parent.push_back(kNoNode);
  out.frame.push_back(tree.frame_id(kRootNode));
  size_t prev = 0;  // the depth of the node before
  bool preorder = true;
  for (NodeId i = 1; i < n; ++i) {
    const NodeId p = tree.parent(i);
    const size_t dp = depth[p];
    preorder &= (last[dp] == p) & (dp <= prev);
    const size_t d = dp + 1;
    if (d > kMaxDepth) return false;
    depth[i] = static_cast<Depth>(d);
    last[d] = i;
    prev = d;
    out.deepest = std::max(out.deepest, d);
    if (d <= max_depth) {
      if (out.origin.size() >= max_nodes) return false;
      last_shallow[d] = static_cast<NodeId>(out.origin.size());
      out.origin.push_back(i);
      out.parent.push_back(last_shallow[d - 1]);
      out.frame.push_back(tree.frame_id(i));
    }
  }
  return preorder;
}

// Backwards, in decreasing id order, a preorder visits each node after its
// subtree and its children from the last to the first: the order NodeValues'
// reverse pass adds them into their parent's value. A node's sum is opened
// when its last child is done, as its own value plus that child's, and the
// other children are added as they are done. The nodes with a sum open are
// ancestors of the node visited, so they are a stack, its top the one a
// child is added to; each step is a pair of selects, no branch. K: the
// number of metrics, or 0 for `exc.size()` (one is the common case, and a
// constant stride keeps this loop, 10^7 turns, short).
template <size_t K>
void SumSubtrees(const Tree& tree, const Shallow& shallow, const std::vector<const std::vector<double>*>& exc,
                 std::vector<std::vector<double>>& inc_at, std::vector<std::vector<double>>& exc_at) {
  const size_t n = tree.size(), k = K ? K : exc.size(), count = shallow.origin.size();
  std::vector<const double*> own(k);
  for (size_t j = 0; j < k; ++j) {
    own[j] = exc[j]->data();
    inc_at[j].resize(count);
    exc_at[j].resize(count);
  }
  // Slot 0 is a floor no node id matches.
  std::vector<NodeId> open(shallow.deepest + 2, kNoNode);
  std::vector<double> sum((shallow.deepest + 2) * k, 0.0);
  size_t top = 0, next = count;  // shallow.origin[0, next): not reached yet
  double s[K ? K : 1];
  std::vector<double> s_many(K ? 0 : k);
  double* const done = K ? s : s_many.data();
  // Each select picks an address by index, from a pair: compilers branch on
  // a ?: of values or of addresses alike, and these branches follow the
  // tree's shape, which no predictor can.
  for (NodeId i = static_cast<NodeId>(n); i-- > 0;) {
    const size_t has_children = open[top] == i;
    for (size_t j = 0; j < k; ++j) {
      const double* from[2] = {own[j] + i, sum.data() + top * k + j};
      done[j] = *from[has_children];
    }
    top -= has_children;
    if (next > 0 && shallow.origin[next - 1] == i) {
      --next;
      for (size_t j = 0; j < k; ++j) {
        inc_at[j][next] = done[j];
        exc_at[j][next] = own[j][i];
      }
    }
    if (i == kRootNode) break;
    const NodeId p = tree.parent(i);
    const size_t same = open[top] == p;
    for (size_t j = 0; j < k; ++j) {
      const double* base[2] = {own[j] + p, sum.data() + top * k + j};
      sum[(top + 1 - same) * k + j] = *base[same] + done[j];
    }
    top += 1 - same;
    open[top] = p;
  }
}

}  // namespace

std::unique_ptr<ShallowTree> ShallowTree::Make(const Tree& tree, size_t max_depth, const std::vector<MetricId>& metrics,
                                               size_t max_nodes) {
  if (max_depth > kMaxDepth) return nullptr;
  Shallow shallow;
  if (!FindShallow(tree, max_depth, max_nodes, shallow)) return nullptr;

  const MetricRegistry& registry = tree.metrics();
  const std::vector<MetricId> additive = registry.AdditiveOperands(metrics);
  // The whole tree's exclusive values as NodeValues reads them (a dense
  // column in place, no copy; a sparse one spread out as the full path
  // would).
  NodeValues whole(tree);
  std::vector<const std::vector<double>*> exc;
  for (MetricId m : additive) exc.push_back(&whole.Exclusive(m));
  std::vector<std::vector<double>> inc_at(additive.size()), exc_at(additive.size());
  if (additive.size() == 1) SumSubtrees<1>(tree, shallow, exc, inc_at, exc_at);
  else if (!additive.empty()) SumSubtrees<0>(tree, shallow, exc, inc_at, exc_at);

  std::unique_ptr<ShallowTree> out(new ShallowTree());
  Tree& t = out->tree_;
  t.strings() = tree.strings();
  t.frames() = tree.frames();
  t.metrics() = tree.metrics();
  if (!t.AssignNodes(std::move(shallow.parent), std::move(shallow.frame)).ok()) return nullptr;  // (ids kept their order)
  for (size_t j = 0; j < additive.size(); ++j) {
    t.SetColumn(additive[j], SparseColumn::FromDense(std::move(exc_at[j])));
    out->values_.SetInclusive(additive[j], std::move(inc_at[j]));
  }
  // A summary metric's values are kept per node, not summed: read at the
  // shallow nodes alone.
  for (MetricId m : metrics) {
    if (registry.Get(m).kind != MetricKind::kSummary) continue;
    const std::vector<double>& own = whole.Exclusive(m);
    const std::vector<double>& stored = whole.Inclusive(m);
    std::vector<double> own_at(shallow.origin.size()), stored_at(shallow.origin.size());
    for (size_t s = 0; s < shallow.origin.size(); ++s) {
      own_at[s] = own[shallow.origin[s]];
      stored_at[s] = stored[shallow.origin[s]];
    }
    t.SetColumn(m, SparseColumn::FromDense(std::move(own_at)));
    out->values_.SetInclusive(m, std::move(stored_at));
  }
  out->origin_ = std::move(shallow.origin);
  return out;
}

}  // namespace cct
