#include "diff/align.h"

#include <cstdint>

#include "cct/huge_pages.h"
#include "cct/tree_ops.h"

namespace diff {

using cct::FrameId;
using cct::FrameKind;
using cct::NodeId;
using cct::BaseName;

void Aligner::ChildIndex::Grow(size_t capacity) {
  std::vector<Slot> old = std::move(slots_);
  slots_ = {};
  // Every probe lands on a random slot: at 10^7 nodes the table is 200 MB and
  // with 4 KiB pages nearly every probe (and prefetch) also missed the TLB.
  cct::ReserveHugePages(slots_, capacity);
  slots_.assign(capacity, Slot{0, 0, kEmpty});
  mask_ = capacity - 1;
  for (const Slot& s : old) {
    if (s.id == kEmpty) continue;
    size_t i = cct::MixHash((uint64_t{s.parent} << 32) | s.frame) & mask_;
    while (slots_[i].id != kEmpty) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

void Aligner::ChildIndex::Reserve(size_t n) {
  size_t capacity = slots_.empty() ? 16 : slots_.size();
  while (n * 4 > capacity * 3) capacity *= 2;  // load at most 3/4
  if (capacity != slots_.size()) Grow(capacity);
}

void Aligner::ChildIndex::Prefetch(uint32_t parent, uint32_t frame) const {
  if (!slots_.empty()) __builtin_prefetch(&slots_[cct::MixHash((uint64_t{parent} << 32) | frame) & mask_]);
}

uint32_t Aligner::ChildIndex::FindOrInsert(uint32_t parent, uint32_t frame, uint32_t id) {
  if ((size_ + 1) * 4 > slots_.size() * 3) Grow(slots_.empty() ? 16 : slots_.size() * 2);
  for (size_t i = cct::MixHash((uint64_t{parent} << 32) | frame) & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.id == kEmpty) {
      s = Slot{parent, frame, id};
      ++size_;
      return id;
    }
    if (s.parent == parent && s.frame == frame) return s.id;
  }
}

Aligner::Aligner(const AlignOptions& options) : options_(options) {
  // The root (node 0, frame 0) shows as itself.
  parent_.push_back(cct::kNoNode);
  frame_.push_back(union_.frame_id(cct::kRootNode));
  display_.push_back(union_.frames().name(union_.frame_id(cct::kRootNode)));
}

const cct::Tree& Aligner::tree() const {
  if (!synced_) {
    // Parents precede their children by construction, so this cannot fail.
    cct::Status s = union_.AssignNodes(parent_, frame_);
    (void)s;
    synced_ = true;
  }
  return union_;
}

FrameId Aligner::UnionFrame(const cct::Tree& tree, FrameId id) {
  const cct::Frame f = tree.frames().Get(id);
  const std::string_view name = tree.str(f.name);
  cct::Frame u;
  u.kind = f.kind;
  switch (f.kind) {
    case FrameKind::kRoot:
      return union_.frame_id(cct::kRootNode);
    case FrameKind::kFunction:
    case FrameKind::kKernel:
    case FrameKind::kLoop:
      u.name = union_.strings().Intern(NormalizeName(name, options_.normalize, tree.str(f.module)));
      u.module = union_.strings().Intern(cct::ModuleIdentity(tree.str(f.module)));
      if (f.kind == FrameKind::kLoop) u.line = f.line;
      break;
    case FrameKind::kLine:
      u.name = union_.strings().Intern(name);
      u.file = union_.strings().Intern(BaseName(tree.str(f.file)));
      u.line = f.line;
      break;
    default:
      u.name = union_.strings().Intern(name);
  }
  const size_t before = union_.frames().size();
  const FrameId uid = union_.frames().Intern(u);
  if (uid == before) {
    const bool normalized_display = options_.normalize.kernels &&
                                    (f.kind == FrameKind::kFunction || f.kind == FrameKind::kKernel);
    display_.push_back(normalized_display ? u.name : union_.strings().Intern(name));
  }
  return uid;
}

// Nodes are visited level by level (breadth first; in id order within a
// level), so every node's parent is mapped before the node, and the hash
// probes of the nodes a little ahead can be prefetched: their parents are on
// an earlier level. Without the prefetch each probe waits for a cache (and
// TLB) miss in a table of tens of megabytes; with it the misses overlap.
// Within a level, ids grow, so the tree's own arrays stream forward.
std::vector<NodeId> Aligner::Add(const cct::Tree& tree, const std::vector<char>* keep) {
  constexpr FrameId kUnmapped = UINT32_MAX;
  constexpr NodeId kPending = UINT32_MAX - 1;
  constexpr size_t kAhead = 16;
  const size_t n_nodes = tree.size();
  std::vector<FrameId> frame_map(tree.frames().size(), kUnmapped);
  std::vector<NodeId> nodes(n_nodes, kPending);
  nodes[cct::kRootNode] = cct::kRootNode;
  synced_ = false;
  index_.Reserve(std::max(size(), n_nodes) + n_nodes / 8);
  parent_.reserve(std::max(size(), n_nodes) + n_nodes / 8);
  frame_.reserve(parent_.capacity());

  // Breadth-first order by a counting sort on depth (stable: ids ascend
  // within a level).
  std::vector<uint32_t> depth(n_nodes, 0);
  uint32_t max_depth = 0;
  for (NodeId n = 1; n < n_nodes; ++n) {
    depth[n] = depth[tree.parent(n)] + 1;
    max_depth = std::max(max_depth, depth[n]);
  }
  std::vector<uint32_t> start(max_depth + 2, 0);
  for (NodeId n = 1; n < n_nodes; ++n) ++start[depth[n] + 1];
  for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
  std::vector<NodeId> order(n_nodes > 0 ? n_nodes - 1 : 0);
  for (NodeId n = 1; n < n_nodes; ++n) order[start[depth[n]]++] = n;  // start[d]: nodes above depth d
  depth = {};

  for (size_t i = 0; i < order.size(); ++i) {
    if (i + kAhead < order.size()) {
      const NodeId m = order[i + kAhead];
      const NodeId mp = nodes[tree.parent(m)];
      const FrameId mf = frame_map[tree.frame_id(m)];
      if (mp < kPending && mf != kUnmapped) index_.Prefetch(mp, mf);
    }
    const NodeId n = order[i];
    const NodeId parent = nodes[tree.parent(n)];
    if (parent == cct::kNoNode || (keep && !(*keep)[n])) {
      nodes[n] = cct::kNoNode;
      continue;
    }
    FrameId& f = frame_map[tree.frame_id(n)];
    if (f == kUnmapped) f = UnionFrame(tree, tree.frame_id(n));
    if (options_.fold_recursion && parent != cct::kRootNode && frame_[parent] == f) {
      nodes[n] = parent;
      continue;
    }
    const NodeId next = static_cast<NodeId>(parent_.size());
    const NodeId u = index_.FindOrInsert(parent, f, next);
    if (u == next) {
      parent_.push_back(parent);
      frame_.push_back(f);
    }
    nodes[n] = u;
  }
  return nodes;
}

}  // namespace diff
