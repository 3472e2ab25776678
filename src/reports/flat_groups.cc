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

  // One pass in preorder with a count of open nodes per group.
  node_group_.assign(tree.size(), kNoFlatGroup);
  outermost_.assign(tree.size(), 0);
  const cct::Children children = cct::BuildChildren(tree);
  std::vector<uint32_t> open(groups_.size(), 0);
  struct Item {
    NodeId node;
    bool exit;
  };
  std::vector<Item> stack{{cct::kRootNode, false}};
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const uint32_t g = only && !(*only)[it.node] ? kNoFlatGroup : frame_group[tree.frame_id(it.node)];
    if (it.exit) {
      if (g != kNoFlatGroup) --open[g];
      continue;
    }
    if (g != kNoFlatGroup) {
      FlatGroup& grp = groups_[g];
      if (grp.nodes++ == 0) grp.first_node = it.node;
      node_group_[it.node] = g;
      outermost_[it.node] = open[g] == 0;
      ++open[g];
      stack.push_back({it.node, true});
    }
    for (const NodeId* c = children.end(it.node); c != children.begin(it.node);) stack.push_back({*--c, false});
  }
  if (by == GroupBy::kLine)
    for (FlatGroup& g : groups_)
      if (g.nodes > 0) g.detail = std::string(tree.name(tree.parent(g.first_node)));
}

void FlatGroups::Accumulate(const std::vector<double>& exc, const std::vector<double>& inc,
                            std::vector<double>& group_exc, std::vector<double>& group_inc) const {
  group_exc.assign(groups_.size(), 0.0);
  group_inc.assign(groups_.size(), 0.0);
  for (NodeId n = 0; n < node_group_.size(); ++n) {
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
