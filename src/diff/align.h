// Aligner: the union of several calling-context trees by path identity.
//
// Every added tree's nodes are mapped to nodes of one union tree: two nodes
// align when the frames from the root down to them have equal identities.
// A frame's identity is its kind and normalized name (diff/normalize.h), for
// functions, kernels and loops also the module's file name without directory
// or library version, for source lines the file's base name and line (the
// same rule as cct::FrameIdentity, plus normalization). Addresses, pids and
// ids never take part.
//
// Speed: identities are computed once per frame, not per node; nodes are
// interned by a hash of (parent union node, union frame) in a table that
// holds its keys, so aligning is one hash probe per node and no allocation
// per node. Nodes are visited level by level, which lets the probes of the
// next few nodes be prefetched (their parents are already mapped): the
// cache misses overlap instead of queueing. AddAll works out the next
// tree's level order while it maps the current one. A child's union id is
// greater than its parent's, so inclusive values follow from one reverse
// pass.
//
// With fold_recursion, a node whose frame identity equals its parent's folds
// into the parent (direct recursion collapses to one level).
//
// Ownership: the Aligner owns the union tree; it does not keep the added
// trees. Not thread-safe (AddAll's second thread is joined before it
// returns).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "cct/tree.h"
#include "diff/normalize.h"

namespace diff {

struct AlignOptions {
  NormalizeOptions normalize;
  bool fold_recursion = false;
};

class Aligner {
 public:
  explicit Aligner(const AlignOptions& options);

  // Maps every node of `tree` to its union node (adding union nodes as
  // needed): result[n] for node n of `tree`. With `keep`, nodes whose entry
  // is 0 (and so their subtrees: keep must hold for a node's ancestors
  // whenever it holds for the node) stay out and map to cct::kNoNode.
  std::vector<cct::NodeId> Add(const cct::Tree& tree, const std::vector<char>* keep = nullptr);

  // Add(*trees[i], &keeps[i]) for each tree in turn (an empty keeps[i]:
  // Add without `keep`), with the same result; with many nodes, the next
  // tree's frames and level order are worked out on a second thread while
  // this tree's nodes are mapped.
  std::vector<std::vector<cct::NodeId>> AddAll(const std::vector<const cct::Tree*>& trees,
                                               const std::vector<std::vector<char>>& keeps);

  // The union tree. Its frames are identities: names normalized, modules
  // reduced to their identity, flags cleared. It carries no metrics.
  const cct::Tree& tree() const;
  size_t size() const { return parent_.size(); }

  // The name to show for a union node: the normalized name with
  // --normalize kernels, else the name as the first tree that had the
  // frame spells it.
  std::string_view display_name(cct::NodeId node) const { return union_.str(display_[frame_[node]]); }

 private:
  // (parent, frame) -> union node, keys stored in the slots: one cache miss
  // per probe where cct::Tree's own index (keys looked up in its node
  // arrays) takes three; aligning a million nodes is mostly these probes.
  class ChildIndex {
   public:
    void Reserve(size_t n);
    // Starts loading the slot FindOrInsert(parent, frame) probes first.
    void Prefetch(uint32_t parent, uint32_t frame) const;
    // The node under `parent` with `frame`, or `id` after inserting it.
    uint32_t FindOrInsert(uint32_t parent, uint32_t frame, uint32_t id);

   private:
    struct Slot {
      uint32_t parent, frame, id;
    };
    static constexpr uint32_t kEmpty = UINT32_MAX;
    void Grow(size_t capacity);
    std::vector<Slot> slots_;
    size_t mask_ = 0, size_ = 0;
  };

  // A tree laid out in level order for Probe (align.cc, Add).
  struct Prepared {
    std::vector<cct::NodeId> out;       // node -> level position plus one (the root: 0)
    std::vector<uint32_t> parent_at;    // level position -> the parent's, plus one
    std::vector<cct::FrameId> frames;   // level position -> union frame, or kLeftOut
  };
  static constexpr cct::FrameId kLeftOut = UINT32_MAX;

  // Reads only `tree` and writes only union_'s strings and frames and
  // display_; Probe writes the rest, so the two can run at once.
  Prepared Prepare(const cct::Tree& tree, const std::vector<char>* keep);
  std::vector<cct::NodeId> Probe(Prepared&& prepared);
  void Reserve(size_t n_nodes);  // writes what Probe writes
  cct::FrameId UnionFrame(const cct::Tree& tree, cct::FrameId frame);

  AlignOptions options_;
  mutable cct::Tree union_;  // strings and frames; nodes copied in by tree()
  mutable bool synced_ = false;
  std::vector<cct::NodeId> parent_;
  std::vector<cct::FrameId> frame_;
  ChildIndex index_;
  std::vector<cct::StringId> display_;  // by union frame
  std::vector<cct::NodeId> mapped_;      // Probe's work array, kept for the next tree
};

}  // namespace diff
