#include "diff/align.h"

#include <cstdint>

#include "cct/beside.h"
#include "cct/huge_pages.h"
#include "cct/prefetch.h"
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
  if (!slots_.empty()) cct::Prefetch(&slots_[cct::MixHash((uint64_t{parent} << 32) | frame) & mask_]);
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
//
// The level order scatters a level's nodes over the tree's arrays, so what
// the probes need is first laid out in that order (Prepare): each node's
// parent as a level-order position (the positions of a level's parents
// ascend) and its union frame. They are written while the tree is read in
// id order, where a parent is mostly close to its child and the writes go to
// one stream per level. Reading the tree in level order in the probe loop
// instead cost a cache miss per array and node, more than the probes
// themselves at 10^7 nodes.
Aligner::Prepared Aligner::Prepare(const cct::Tree& tree, const std::vector<char>* keep) {
  const size_t n_nodes = tree.size();
  Prepared p;
  p.out.assign(n_nodes, cct::kRootNode);
  if (n_nodes <= 1) return p;
  p.parent_at.resize(n_nodes - 1);
  p.frames.resize(n_nodes - 1);
  // out[n] holds n's depth first, then its level position plus one (the
  // root's: 0). A counting sort on depth: stable, so ids ascend within a
  // level.
  std::vector<NodeId>& out = p.out;
  out[cct::kRootNode] = 0;
  uint32_t max_depth = 0;
  for (NodeId n = 1; n < n_nodes; ++n) {
    out[n] = out[tree.parent(n)] + 1;
    max_depth = std::max(max_depth, out[n]);
  }
  std::vector<uint32_t> start(max_depth + 2, 0);
  for (NodeId n = 1; n < n_nodes; ++n) ++start[out[n] + 1];
  for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
  constexpr FrameId kUnmapped = UINT32_MAX;
  std::vector<FrameId> frame_map(tree.frames().size(), kUnmapped);
  for (NodeId n = 1; n < n_nodes; ++n) {
    const uint32_t i = start[out[n]]++;  // start[d]: nodes above depth d (less the root)
    out[n] = i + 1;
    p.parent_at[i] = out[tree.parent(n)];  // already a position: a parent's id is below its child's
    if (keep && !(*keep)[n]) {
      p.frames[i] = kLeftOut;
      continue;
    }
    FrameId& f = frame_map[tree.frame_id(n)];
    if (f == kUnmapped) f = UnionFrame(tree, tree.frame_id(n));
    p.frames[i] = f;
  }
  return p;
}

// Room to map a tree of n_nodes: the index and the node arrays sized for
// the union so far or the tree, whichever is larger, plus an eighth (the
// trees of a comparison share most of their nodes). mapped_ is kept from
// one tree to the next: a second tree of the size of the first writes into
// memory already faulted in.
void Aligner::Reserve(size_t n_nodes) {
  index_.Reserve(std::max(size(), n_nodes) + n_nodes / 8);
  parent_.reserve(std::max(size(), n_nodes) + n_nodes / 8);
  frame_.reserve(parent_.capacity());
  if (mapped_.size() < std::max<size_t>(n_nodes, 1)) mapped_.resize(std::max<size_t>(n_nodes, 1));
}

std::vector<NodeId> Aligner::Probe(Prepared&& p) {
  constexpr size_t kAhead = 16;
  std::vector<NodeId> out = std::move(p.out);
  const size_t n_nodes = out.size(), below = p.frames.size();
  Reserve(n_nodes);
  NodeId* mapped = mapped_.data();  // level position plus one -> union node
  mapped[0] = cct::kRootNode;
  for (size_t i = 0; i < below; ++i) {
    // mapped[0 .. i] are set: a node ahead whose parent is among them can
    // have its probe started.
    if (i + kAhead < below) {
      const uint32_t ahead_parent = p.parent_at[i + kAhead];
      const FrameId f = p.frames[i + kAhead];
      if (ahead_parent <= i && f != kLeftOut && mapped[ahead_parent] != cct::kNoNode)
        index_.Prefetch(mapped[ahead_parent], f);
    }
    const NodeId parent = mapped[p.parent_at[i]];
    const FrameId f = p.frames[i];
    NodeId& u = mapped[i + 1];
    if (parent == cct::kNoNode || f == kLeftOut) {
      u = cct::kNoNode;
    } else if (options_.fold_recursion && parent != cct::kRootNode && frame_[parent] == f) {
      u = parent;
    } else {
      const NodeId next = static_cast<NodeId>(parent_.size());
      u = index_.FindOrInsert(parent, f, next);
      if (u == next) {
        parent_.push_back(parent);
        frame_.push_back(f);
      }
    }
  }
  for (NodeId& x : out) x = mapped[x];
  return out;
}

std::vector<NodeId> Aligner::Add(const cct::Tree& tree, const std::vector<char>* keep) {
  synced_ = false;
  return Probe(Prepare(tree, keep));
}

// Prepare touches the union's strings and frames (UnionFrame), Probe the
// node arrays and the index: the next tree is prepared while this one is
// probed. The order of each kind of step is that of Add in turn, so the ids
// are too.
std::vector<std::vector<NodeId>> Aligner::AddAll(const std::vector<const cct::Tree*>& trees,
                                                 const std::vector<std::vector<char>>& keeps) {
  synced_ = false;
  auto keep = [&](size_t i) { return keeps[i].empty() ? nullptr : &keeps[i]; };
  std::vector<std::vector<NodeId>> maps(trees.size());
  if (trees.empty()) return maps;
  // The index (hundreds of MB at 10^7 nodes, all of it written) is made
  // beside the first tree's preparation.
  size_t largest = 0, all = 0;
  for (const cct::Tree* t : trees) {
    largest = std::max(largest, t->size());
    all += t->size();
  }
  Prepared next;
  cct::RunBeside(
      all >= cct::kParallelNodes, [&] { Reserve(largest); }, [&] { next = Prepare(*trees[0], keep(0)); });
  for (size_t i = 0; i < trees.size(); ++i) {
    Prepared current = std::move(next);
    const bool more = i + 1 < trees.size();
    const bool parallel = more && current.out.size() + trees[i + 1]->size() >= cct::kParallelNodes;
    cct::RunBeside(
        parallel,
        [&] {
          if (more) next = Prepare(*trees[i + 1], keep(i + 1));
        },
        [&] { maps[i] = Probe(std::move(current)); });
  }
  return maps;
}

}  // namespace diff
