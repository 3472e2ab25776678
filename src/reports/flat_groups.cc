#include "reports/flat_groups.h"

#include <algorithm>
#include <unordered_map>

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
  struct FrameCount {
    uint32_t group, nodes;
  };
  std::vector<FrameCount> frame_count(frame_group.size());
  for (size_t f = 0; f < frame_group.size(); ++f) frame_count[f] = {frame_group[f], 0};
  std::vector<uint32_t> frame_first(frame_group.size(), 0);  // walk position of the frame's first node
  std::vector<uint64_t> open_bits((groups_.size() + 63) / 64);
  const size_t n = tree.size();
  node_group_.assign(n, kNoFlatGroup);
  outermost_.assign(n, 0);
  // Stored trees are numbered in preorder (children in id order), so the
  // walk is the ids in order, with the open ancestors on a stack; a tree
  // built in memory in another order is walked in its computed preorder.
  std::vector<NodeId> order;  // empty: the ids are the preorder
  std::vector<NodeId> open_nodes;
  auto walk = [&]() -> bool {
    open_nodes.clear();
    constexpr size_t kAhead = 16;  // frame entries loaded ahead: their misses overlap
    for (size_t i = 0; i < n; ++i) {
      const NodeId v = order.empty() ? static_cast<NodeId>(i) : order[i];
      if (i + kAhead < n)
        __builtin_prefetch(&frame_count[tree.frame_id(order.empty() ? static_cast<NodeId>(i + kAhead) : order[i + kAhead])]);
      if (v != cct::kRootNode) {
        const NodeId p = tree.parent(v);
        while (!open_nodes.empty() && open_nodes.back() != p) {
          const NodeId closed = open_nodes.back();
          if (outermost_[closed]) open_bits[node_group_[closed] / 64] &= ~(uint64_t{1} << (node_group_[closed] % 64));
          open_nodes.pop_back();
        }
        if (open_nodes.empty()) return false;  // not in preorder
      }
      open_nodes.push_back(v);
      if (only && !(*only)[v]) continue;
      FrameCount& fc = frame_count[tree.frame_id(v)];
      const uint32_t g = fc.group;
      if (g == kNoFlatGroup) continue;
      if (fc.nodes++ == 0) frame_first[tree.frame_id(v)] = static_cast<uint32_t>(i);
      node_group_[v] = g;
      uint64_t& word = open_bits[g / 64];
      const uint64_t bit = uint64_t{1} << (g % 64);
      if (!(word & bit)) {
        outermost_[v] = 1;
        word |= bit;
      }
    }
    return true;
  };
  if (n > 0 && !walk()) {
    order = cct::Preorder(tree, cct::BuildChildren(tree));
    std::fill(node_group_.begin(), node_group_.end(), kNoFlatGroup);
    std::fill(outermost_.begin(), outermost_.end(), 0);
    for (FrameCount& fc : frame_count) fc.nodes = 0;
    std::fill(open_bits.begin(), open_bits.end(), 0);
    walk();
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
  const size_t count = node_group_.size();
  for (NodeId n = 0; n < count; ++n) {
    if (n + kAhead < count && node_group_[n + kAhead] != kNoFlatGroup) {
      __builtin_prefetch(&group_exc[node_group_[n + kAhead]], 1);
      __builtin_prefetch(&group_inc[node_group_[n + kAhead]], 1);
    }
    const uint32_t g = node_group_[n];
    if (g == kNoFlatGroup) continue;
    group_exc[g] += exc[n];
    if (outermost_[n]) group_inc[g] += inc[n];
  }
}

std::vector<MetricId> AdditiveOperands(const cct::MetricRegistry& reg, const std::vector<MetricId>& ids) {
  std::vector<MetricId> additive;
  auto need = [&](MetricId m) {
    if (std::find(additive.begin(), additive.end(), m) == additive.end()) additive.push_back(m);
  };
  for (MetricId m : ids) {
    if (reg.Get(m).kind == cct::MetricKind::kAdditive) need(m);
    else
      for (MetricId op : reg.operand_ids(m)) need(op);
  }
  return additive;
}

std::vector<double> SelectedValues(const cct::MetricRegistry& reg, const std::vector<MetricId>& ids,
                                   const std::vector<MetricId>& additive, const std::vector<double>& sums) {
  auto sum_of = [&](MetricId m) { return sums[std::find(additive.begin(), additive.end(), m) - additive.begin()]; };
  std::vector<double> v;
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
  return v;
}

}  // namespace reports
