// Tree: the calling-context tree of one run, with its frames, strings,
// metric registry and exclusive metric values.
//
// Append-only: InternChild(parent, frame) returns the existing child with that
// frame or appends one, so a child's id is always greater than its parent's.
// Every algorithm that derives inclusive values relies on that order (one
// reverse pass). Node 0 is the root.
//
// Values are sparse per metric (SparseColumn): most nodes carry one or two
// metrics. Memory for 10^6 nodes and one metric stays under 100 MB
// (tests/cct/tree_test.cc measures it).
//
// Ownership: a Tree owns everything it refers to. Thread-compatible: const
// methods may be called concurrently only while nothing mutates the tree
// (lookups build lazy indexes, so even Find* is a mutation on a loaded tree;
// call EnsureIndexes() before sharing).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "cct/flat_index.h"
#include "cct/frame.h"
#include "cct/metric.h"
#include "cct/prefetch.h"
#include "cct/string_table.h"

namespace cct {

using NodeId = uint32_t;
inline constexpr NodeId kRootNode = 0;
inline constexpr NodeId kNoNode = UINT32_MAX;

// Exclusive values of one additive metric. Sparse while few nodes carry a
// value, dense (one double per node) once most do; callers see the same API.
class SparseColumn {
 public:
  // Whole columns at once (deserialization): `dense` has one value per node;
  // `nodes`/`values` are parallel, each node at most once.
  static SparseColumn FromDense(std::vector<double> dense);
  // From this many entries on, a column whose entries reach a third of its
  // nodes is dense (MaybeDensify; the store decodes such columns dense).
  static constexpr size_t kDenseFrom = 4096;
  // That rule: whether `entries` values on nodes below `span` are held dense.
  static constexpr bool DenseFor(size_t entries, size_t span) { return entries >= kDenseFrom && entries * 3 >= span; }
  static SparseColumn FromSparse(std::vector<NodeId> nodes, std::vector<double> values);

  void Add(NodeId node, double v);
  void Set(NodeId node, double v);
  double Get(NodeId node) const;
  // Calls f(node, value) for each stored entry (zeros may be included).
  template <class F>
  void ForEach(F&& f) const {
    if (dense_mode_) {
      for (NodeId n = 0; n < dense_.size(); ++n)
        if (dense_[n] != 0) f(n, dense_[n]);
    } else {
      for (size_t i = 0; i < nodes_.size(); ++i) f(nodes_[i], values_[i]);
    }
  }
  // The dense values (one per node up to size()), or null for a sparse
  // column: readers that want one value per node can use them in place.
  const std::vector<double>* dense_values() const { return dense_mode_ ? &dense_ : nullptr; }
  size_t count() const;  // stored entries
  bool empty() const { return count() == 0; }
  size_t MemoryBytes() const;

 private:
  size_t Slot(NodeId node);  // finds or appends the sparse entry
  void EnsureIndex() const;
  void MaybeDensify(NodeId node);

  bool dense_mode_ = false;
  std::vector<double> dense_;
  std::vector<NodeId> nodes_;
  std::vector<double> values_;
  mutable FlatIndex index_;
  mutable size_t indexed_ = 0;  // entries of nodes_ covered by index_
};

class Tree {
 public:
  Tree();

  // --- nodes
  size_t size() const { return parent_.size(); }
  NodeId parent(NodeId n) const { return parent_[n]; }
  FrameId frame_id(NodeId n) const { return frame_[n]; }
  Frame frame(NodeId n) const { return frames_.Get(frame_[n]); }
  FrameKind kind(NodeId n) const { return frames_.kind(frame_[n]); }
  std::string_view name(NodeId n) const { return strings_.Get(frames_.name(frame_[n])); }
  // Asks for node n's frame id ahead of name()/kind() (a hint; readers of
  // many scattered nodes issue it a few nodes ahead).
  void Prefetch(NodeId n) const { cct::Prefetch(frame_.data() + n); }
  // For a loop reading name() (and kind()) of node_at(0), ...,
  // node_at(count - 1) in turn, called at entry i: a name is three dependent
  // loads past the frame id (frame entry, name offsets, text), and a hint
  // whose address is itself a miss stalls as a read would. So each stage is
  // asked for some entries after the one before it, for entries this far
  // ahead: the frame id 32, the frame's entry 24, the offsets 16, the text 8.
  template <class NodeAt>
  void PrefetchNamesAhead(size_t i, size_t count, NodeAt&& node_at) const {
    if (i + 32 < count) Prefetch(node_at(i + 32));
    if (i + 24 < count) frames_.Prefetch(frame_[node_at(i + 24)]);
    if (i + 16 < count) strings_.PrefetchOffsets(frames_.name(frame_[node_at(i + 16)]));
    if (i + 8 < count) strings_.Prefetch(frames_.name(frame_[node_at(i + 8)]));
  }

  NodeId InternChild(NodeId parent, FrameId frame);
  NodeId FindChild(NodeId parent, FrameId frame) const;  // kNoNode when absent
  void Reserve(size_t nodes);

  // --- frames and strings
  FrameId InternFrame(FrameKind kind, std::string_view name, std::string_view module = {},
                      std::string_view file = {}, uint32_t line = 0, uint8_t flags = 0);
  StringTable& strings() { return strings_; }
  const StringTable& strings() const { return strings_; }
  FrameTable& frames() { return frames_; }
  const FrameTable& frames() const { return frames_; }
  std::string_view str(StringId id) const { return strings_.Get(id); }

  // --- metrics
  MetricRegistry& metrics() { return metrics_; }
  const MetricRegistry& metrics() const { return metrics_; }
  // Adds to the exclusive value of an additive metric.
  void AddValue(NodeId node, MetricId metric, double v);
  void SetValue(NodeId node, MetricId metric, double v);
  double Value(NodeId node, MetricId metric) const;  // exclusive; 0 when absent or derived
  const SparseColumn& column(MetricId metric) const;
  void SetColumn(MetricId metric, SparseColumn column);
  // A summary metric's stored inclusive values (its exclusive ones are
  // column()): statistics across units are not subtree sums, so they are
  // kept rather than derived. Empty for other kinds.
  const SparseColumn& inclusive_column(MetricId metric) const;
  void SetInclusiveColumn(MetricId metric, SparseColumn column);

  // Builds lazy lookup indexes now, so concurrent readers can use Find*.
  void EnsureIndexes() const;
  size_t MemoryBytes() const;

  // Replaces the nodes with deserialized columns (parent < child required;
  // checked). The child index is rebuilt lazily on the first lookup.
  Status AssignNodes(std::vector<NodeId> parent, std::vector<FrameId> frame);

 private:
  static uint64_t ChildHash(NodeId parent, FrameId frame) {
    return HashCombine(MixHash(parent), frame);
  }
  void EnsureChildIndex() const;

  StringTable strings_;
  FrameTable frames_;
  MetricRegistry metrics_;
  std::vector<NodeId> parent_;
  std::vector<FrameId> frame_;
  std::vector<SparseColumn> columns_;  // by MetricId
  std::vector<SparseColumn> inclusive_columns_;  // by MetricId; summary metrics only
  mutable FlatIndex child_index_;
  mutable bool child_indexed_ = true;
};

}  // namespace cct
