#include "reports/flat_groups.h"

#include <algorithm>
#include <thread>
#include <unordered_map>

#include "cct/beside.h"
#include "cct/prefetch.h"
#include "cct/tree_ops.h"

namespace reports {

using cct::FrameKind;
using cct::MetricId;
using cct::NodeId;

namespace {

constexpr uint32_t kNoFlatGroup = UINT32_MAX;

bool InGroupKinds(GroupBy by, FrameKind k) {
  switch (by) {
    case GroupBy::kFunction: return k == FrameKind::kFunction || k == FrameKind::kUnknown;
    case GroupBy::kModule: return k == FrameKind::kFunction || k == FrameKind::kKernel;
    case GroupBy::kKernel: return k == FrameKind::kKernel;
    case GroupBy::kNvtx: return k == FrameKind::kNvtx;
    case GroupBy::kLine: return k == FrameKind::kLine;
  }
  return false;
}

}  // namespace

std::string_view GroupHeader(GroupBy by) {
  switch (by) {
    case GroupBy::kFunction: return "function";
    case GroupBy::kModule: return "module";
    case GroupBy::kKernel: return "kernel";
    case GroupBy::kNvtx: return "NVTX range";
    case GroupBy::kLine: return "source line";
  }
  return "";
}

FlatGroups::FlatGroups(const cct::Tree& tree, GroupBy by, const std::vector<char>* only) {
  // Group key per frame.
  std::vector<uint32_t> frame_group(tree.frames().size(), kNoFlatGroup);
  std::unordered_map<std::string, uint32_t> by_key;
  for (cct::FrameId f = 0; f < tree.frames().size(); ++f) {
    const cct::Frame fr = tree.frames().Get(f);
    if (!InGroupKinds(by, fr.kind)) continue;
    std::string key;
    switch (by) {
      case GroupBy::kModule: key = std::string(tree.str(fr.module)); break;
      case GroupBy::kLine: key = std::string(tree.str(fr.file)) + ':' + std::to_string(fr.line); break;
      case GroupBy::kFunction: key = std::string(tree.str(fr.name)) + '\x1f' + std::string(tree.str(fr.module)); break;
      default: key = std::string(tree.str(fr.name));
    }
    const auto inserted = by_key.emplace(key, static_cast<uint32_t>(groups_.size()));
    if (inserted.second) {
      FlatGroup g;
      g.kind = fr.kind;
      switch (by) {
        case GroupBy::kModule: g.name = fr.module ? std::string(tree.str(fr.module)) : "<unknown module>"; break;
        case GroupBy::kLine: g.name = cct::LineName(tree.str(fr.file), fr.line); break;
        default: g.name = std::string(tree.str(fr.name));
      }
      g.module = std::string(tree.str(fr.module));
      groups_.push_back(std::move(g));
    }
    frame_group[f] = inserted.first->second;
  }

  // One pass in preorder. Per node it touches one 8-byte entry of its frame
  // (group, node count) and one bit of its group (an outermost node of the
  // group is open): 10^7 nodes of 2·10^5 frames miss the cache far less
  // than with per-group records (a FlatGroup is 100+ bytes) and open counts.
  // A big stored tree is walked in two halves at once: the second starts
  // with its first node's ancestors open, as the whole walk would have them
  // there; what each writes (its nodes' entries, its own frame counts) is
  // the same as one walk's, whatever the split.
  struct FrameCount {
    uint32_t group, nodes;
  };
  struct Part {
    size_t begin, end;  // walk positions
    std::vector<FrameCount> frame_count;
    std::vector<uint32_t> frame_first;  // walk position of the frame's first node in this part
    bool preorder = true;
  };
  const size_t n = tree.size();
  n_ = n;
  node_group_.reset(new uint32_t[n]);  // every entry written by the walk
  outermost_.reset(new char[n]);
  // Stored trees are numbered in preorder (children in id order), so the
  // walk is the ids in order, with the open ancestors on a stack; a tree
  // built in memory in another order is walked in its computed preorder.
  std::vector<NodeId> order;  // empty: the ids are the preorder
  auto walk = [&](Part& part) {
    std::vector<uint64_t> open_bits((groups_.size() + 63) / 64);
    part.frame_count.resize(frame_group.size());
    for (size_t f = 0; f < frame_group.size(); ++f) part.frame_count[f] = {frame_group[f], 0};
    part.frame_first.assign(frame_group.size(), 0);
    std::vector<FrameCount>& frame_count = part.frame_count;
    // The open nodes (the current node's ancestors), each with the group
    // whose bit it set, as its group's outermost open node, or none: closing
    // it clears that bit without looking its frame up again (those lookups
    // missed the cache on 10^7 nodes). They start as the part's first
    // node's ancestors.
    struct Open {
      NodeId node;
      uint32_t group;  // kNoFlatGroup: it set no bit
    };
    std::vector<Open> open_nodes;
    std::vector<NodeId> chain;
    if (part.begin > 0) {
      // One walk would have the previous node's ancestors (and itself)
      // open here: this node's parent must be among them.
      const NodeId p = tree.parent(static_cast<NodeId>(part.begin));
      NodeId a = static_cast<NodeId>(part.begin - 1);
      while (a != cct::kNoNode && a != p) a = tree.parent(a);
      if (a == cct::kNoNode) {
        part.preorder = false;
        return;
      }
      for (a = p; a != cct::kNoNode; a = tree.parent(a)) chain.push_back(a);
      std::reverse(chain.begin(), chain.end());
      for (NodeId c : chain) {
        const uint32_t g = frame_group[tree.frame_id(c)];
        const bool outer = (!only || (*only)[c]) && g != kNoFlatGroup && !(open_bits[g / 64] >> (g % 64) & 1);
        if (outer) open_bits[g / 64] |= uint64_t{1} << (g % 64);
        open_nodes.push_back({c, outer ? g : kNoFlatGroup});
      }
    }
    constexpr size_t kAhead = 16;  // frame entries loaded ahead: their misses overlap
    for (size_t i = part.begin; i < part.end; ++i) {
      const NodeId v = order.empty() ? static_cast<NodeId>(i) : order[i];
      if (i + kAhead < part.end)
        cct::Prefetch(&frame_count[tree.frame_id(order.empty() ? static_cast<NodeId>(i + kAhead) : order[i + kAhead])]);
      if (v != cct::kRootNode) {
        const NodeId p = tree.parent(v);
        while (!open_nodes.empty() && open_nodes.back().node != p) {
          const uint32_t g = open_nodes.back().group;
          if (g != kNoFlatGroup) open_bits[g / 64] &= ~(uint64_t{1} << (g % 64));
          open_nodes.pop_back();
        }
        if (open_nodes.empty()) {
          part.preorder = false;
          return;
        }
      }
      open_nodes.push_back({v, kNoFlatGroup});
      node_group_[v] = kNoFlatGroup;
      outermost_[v] = 0;
      if (only && !(*only)[v]) continue;
      FrameCount& fc = frame_count[tree.frame_id(v)];
      const uint32_t g = fc.group;
      if (g == kNoFlatGroup) continue;
      if (fc.nodes++ == 0) part.frame_first[tree.frame_id(v)] = static_cast<uint32_t>(i);
      node_group_[v] = g;
      uint64_t& word = open_bits[g / 64];
      const uint64_t bit = uint64_t{1} << (g % 64);
      if (!(word & bit)) {
        outermost_[v] = 1;
        open_nodes.back().group = g;
        word |= bit;
      }
    }
  };
  std::vector<Part> parts;
  const bool halves = n >= cct::kParallelNodes && std::thread::hardware_concurrency() > 1;
  if (halves) parts = {Part{0, n / 2, {}, {}}, Part{n / 2, n, {}, {}}};
  else parts = {Part{0, n, {}, {}}};
  if (n > 0) {
    cct::RunBeside(
        halves,
        [&] {
          if (halves) walk(parts[1]);
        },
        [&] { walk(parts[0]); });
    if (!std::all_of(parts.begin(), parts.end(), [](const Part& p) { return p.preorder; })) {
      order = cct::Preorder(tree, cct::BuildChildren(tree));
      parts = {Part{0, n, {}, {}}};
      walk(parts[0]);
    }
  }
  // Per frame, the parts' counts and the first part's first node that has one.
  std::vector<FrameCount> frame_count(frame_group.size());
  std::vector<uint32_t> frame_first(frame_group.size(), 0);
  for (size_t f = 0; f < frame_group.size(); ++f) {
    frame_count[f] = {frame_group[f], 0};
    for (const Part& part : parts) {
      if (part.frame_count.empty() || part.frame_count[f].nodes == 0) continue;
      if (frame_count[f].nodes == 0) frame_first[f] = part.frame_first[f];
      frame_count[f].nodes += part.frame_count[f].nodes;
    }
  }
  // A group's nodes are its frames' nodes; its first node the earliest of
  // its frames' first ones.
  std::vector<uint32_t> group_first(groups_.size(), UINT32_MAX);
  for (size_t f = 0; f < frame_count.size(); ++f) {
    const FrameCount& fc = frame_count[f];
    if (fc.group == kNoFlatGroup || fc.nodes == 0) continue;
    groups_[fc.group].nodes += fc.nodes;
    group_first[fc.group] = std::min(group_first[fc.group], frame_first[f]);
  }
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].nodes > 0)
      groups_[g].first_node = order.empty() ? static_cast<NodeId>(group_first[g]) : order[group_first[g]];
  if (by == GroupBy::kLine)
    for (FlatGroup& g : groups_)
      if (g.nodes > 0) g.detail = std::string(tree.name(tree.parent(g.first_node)));
}

void FlatGroups::Accumulate(const std::vector<double>& exc, const std::vector<double>& inc,
                            std::vector<double>& group_exc, std::vector<double>& group_inc) const {
  group_exc.assign(groups_.size(), 0.0);
  group_inc.assign(groups_.size(), 0.0);
  constexpr size_t kAhead = 16;  // group sums loaded ahead: their misses overlap
  const size_t count = n_;
  for (NodeId n = 0; n < count; ++n) {
    if (n + kAhead < count && node_group_[n + kAhead] != kNoFlatGroup) {
      cct::Prefetch(&group_exc[node_group_[n + kAhead]]);
      cct::Prefetch(&group_inc[node_group_[n + kAhead]]);
    }
    const uint32_t g = node_group_[n];
    if (g == kNoFlatGroup) continue;
    group_exc[g] += exc[n];
    if (outermost_[n]) group_inc[g] += inc[n];
  }
}

std::vector<double> SelectedValues(const cct::MetricRegistry& reg, const std::vector<MetricId>& ids,
                                   const std::vector<MetricId>& additive, const std::vector<double>& sums) {
  std::vector<double> v;
  SelectedValues(reg, ids, additive, sums, v);
  return v;
}

void SelectedValues(const cct::MetricRegistry& reg, const std::vector<MetricId>& ids,
                    const std::vector<MetricId>& additive, const std::vector<double>& sums, std::vector<double>& v) {
  auto sum_of = [&](MetricId m) { return sums[std::find(additive.begin(), additive.end(), m) - additive.begin()]; };
  v.clear();
  for (MetricId m : ids) {
    if (reg.Get(m).kind == cct::MetricKind::kAdditive) {
      v.push_back(sum_of(m));
      continue;
    }
    const std::vector<MetricId>& ops = reg.operand_ids(m);
    bool any = false;
    for (MetricId op : ops) any |= sum_of(op) != 0;
    v.push_back(any ? reg.formula(m)->Eval([&](size_t i) { return sum_of(ops[i]); }) : 0.0);
  }
}

}  // namespace reports
