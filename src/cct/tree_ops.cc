#include "cct/tree_ops.h"

#include <algorithm>
#include <unordered_map>

namespace cct {

// A counting sort with no second cursor array: counts go two slots ahead,
// so that after the prefix sum offsets[p + 1] is p's start, and filling
// advances it to p's end, which is p + 1's start (10^7-node trees: one
// 40 MB array fewer to fault in and copy).
Children BuildChildren(const Tree& tree) {
  const size_t n = tree.size();
  Children c;
  c.offsets.assign(n + 2, 0);
  for (NodeId i = 1; i < n; ++i) ++c.offsets[tree.parent(i) + 2];
  for (size_t i = 1; i < n + 2; ++i) c.offsets[i] += c.offsets[i - 1];
  c.ids.resize(n > 0 ? n - 1 : 0);
  for (NodeId i = 1; i < n; ++i) c.ids[c.offsets[tree.parent(i) + 1]++] = i;
  c.offsets.pop_back();
  return c;
}

std::vector<NodeId> Preorder(const Tree& tree, const Children& children) {
  std::vector<NodeId> order;
  order.reserve(tree.size());
  std::vector<NodeId> stack{kRootNode};
  while (!stack.empty()) {
    const NodeId n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (const NodeId* it = children.end(n); it != children.begin(n);) stack.push_back(*--it);
  }
  return order;
}

size_t LevelsBelow(const Tree& tree, NodeId top, size_t limit) {
  // A parent's id is below its children's: depths are known in id order, and
  // top's before any node after it.
  std::vector<uint32_t> d{0};
  size_t deepest = 0;
  for (NodeId n = 1; n < tree.size(); ++n) {
    d.push_back(d[tree.parent(n)] + 1);
    deepest = std::max<size_t>(deepest, d[n]);
    if (n >= top && deepest - d[top] >= limit) break;
  }
  return top < d.size() ? std::min(deepest - std::min<size_t>(deepest, d[top]), limit) : 0;
}

std::string_view ModuleIdentity(std::string_view module) {
  const size_t slash = module.rfind('/');
  if (slash != std::string_view::npos) module.remove_prefix(slash + 1);
  const size_t so = module.find(".so.");
  if (so != std::string_view::npos) module = module.substr(0, so + 3);
  return module;
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string LineName(std::string_view file, uint32_t line) {
  std::string name(BaseName(file));
  name += ':';
  name += std::to_string(line);
  return name;
}

std::string LoopName(std::string_view file, uint32_t line) { return "loop at " + LineName(file, line); }

std::string FrameIdentity(const Tree& tree, FrameId id) {
  const Frame f = tree.frames().Get(id);
  std::string key;
  key.push_back(static_cast<char>('a' + static_cast<int>(f.kind)));
  switch (f.kind) {
    case FrameKind::kFunction:
    case FrameKind::kKernel:
    case FrameKind::kLoop:
      key.append(tree.str(f.name));
      key.push_back('\x1f');
      key.append(ModuleIdentity(tree.str(f.module)));
      if (f.kind == FrameKind::kLoop) {
        key.push_back('\x1f');
        key.append(std::to_string(f.line));
      }
      break;
    case FrameKind::kLine:
      key.append(BaseName(tree.str(f.file)));
      key.push_back(':');
      key.append(std::to_string(f.line));
      break;
    default:
      key.append(tree.str(f.name));
  }
  return key;
}

std::string PathIdentity(const Tree& tree, NodeId node) {
  std::vector<NodeId> path;
  for (NodeId n = node; n != kRootNode && n != kNoNode; n = tree.parent(n)) path.push_back(n);
  std::string out;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    if (!out.empty()) out.push_back('\n');
    out.append(FrameIdentity(tree, tree.frame_id(*it)));
  }
  return out;
}

std::vector<std::string> PathNames(const Tree& tree, NodeId node) {
  std::vector<std::string> names;
  for (NodeId n = node; n != kRootNode && n != kNoNode; n = tree.parent(n)) names.emplace_back(tree.name(n));
  std::reverse(names.begin(), names.end());
  return names;
}

namespace {

// Values of `src` onto `dst` through `nodes` (src node -> dst node; folded[n]
// when n went into an ancestor). Additive values add up. A summary metric's
// values (statistics across units, not sums) stay on the nodes that stay as
// they were: a folded node's, and those of nodes merged into one, are
// dropped, since no statistic of the merged node follows from them.
void CopyValues(const Tree& src, Tree& dst, const std::vector<NodeId>& nodes, const std::vector<char>& folded) {
  std::vector<uint32_t> hits;
  for (MetricId m = 0; m < src.metrics().size(); ++m) {
    if (src.metrics().Get(m).kind != MetricKind::kSummary) {
      src.column(m).ForEach([&](NodeId n, double v) { dst.AddValue(nodes[n], m, v); });
      continue;
    }
    if (hits.empty()) {
      hits.assign(dst.size(), 0);
      for (NodeId n = 0; n < src.size(); ++n)
        if (!folded[n]) ++hits[nodes[n]];
    }
    auto keep = [&](NodeId n) { return n < nodes.size() && !folded[n] && hits[nodes[n]] == 1; };
    SparseColumn inc;
    src.column(m).ForEach([&](NodeId n, double v) {
      if (keep(n)) dst.SetValue(nodes[n], m, v);
    });
    src.inclusive_column(m).ForEach([&](NodeId n, double v) {
      if (keep(n)) inc.Set(nodes[n], v);
    });
    dst.SetInclusiveColumn(m, std::move(inc));
  }
}

}  // namespace

Tree Rebuild(const Tree& src, const std::function<FrameId(Tree& dst, FrameId src_frame)>& map,
             bool fold_recursion, std::vector<NodeId>* node_map) {
  Tree dst;
  dst.strings() = src.strings();
  dst.frames() = src.frames();
  dst.metrics() = src.metrics();
  dst.Reserve(src.size());

  constexpr FrameId kUnmapped = UINT32_MAX - 1;
  std::vector<FrameId> frame_map(src.frames().size(), kUnmapped);
  std::vector<NodeId> nodes(src.size(), kRootNode);
  std::vector<char> folded(src.size(), 0);
  for (NodeId n = 1; n < src.size(); ++n) {
    FrameId& f = frame_map[src.frame_id(n)];
    if (f == kUnmapped) f = map(dst, src.frame_id(n));
    const NodeId parent = nodes[src.parent(n)];
    if (f == kFoldFrame || (fold_recursion && parent != kRootNode && dst.frame_id(parent) == f)) {
      nodes[n] = parent;
      folded[n] = 1;
    } else {
      nodes[n] = dst.InternChild(parent, f);
    }
  }
  CopyValues(src, dst, nodes, folded);
  if (node_map) *node_map = std::move(nodes);
  return dst;
}

Tree FoldNodes(const Tree& src, const std::vector<char>& fold, std::vector<NodeId>* node_map) {
  Tree dst;
  dst.strings() = src.strings();
  dst.frames() = src.frames();
  dst.metrics() = src.metrics();
  dst.Reserve(src.size());
  std::vector<NodeId> nodes(src.size(), kRootNode);
  for (NodeId n = 1; n < src.size(); ++n) {
    const NodeId parent = nodes[src.parent(n)];
    nodes[n] = n < fold.size() && fold[n] ? parent : dst.InternChild(parent, src.frame_id(n));
  }
  std::vector<char> folded(src.size(), 0);
  for (NodeId n = 1; n < src.size() && n < fold.size(); ++n) folded[n] = fold[n];
  CopyValues(src, dst, nodes, folded);
  if (node_map) *node_map = std::move(nodes);
  return dst;
}

bool HasKind(const Tree& tree, FrameKind kind) {
  for (FrameId f = 0; f < tree.frames().size(); ++f)
    if (tree.frames().kind(f) == kind) return true;
  return false;
}

Tree FoldKind(const Tree& src, FrameKind kind) {
  return Rebuild(src, [&](Tree& dst, FrameId f) { return dst.frames().kind(f) == kind ? kFoldFrame : f; });
}

Status MergeInto(Tree& dst, const Tree& src, double scale, std::vector<NodeId>* node_map) {
  // Metrics by name.
  std::vector<MetricId> metric_map(src.metrics().size(), kNoMetric);
  for (MetricId m = 0; m < src.metrics().size(); ++m) {
    const MetricDesc& desc = src.metrics().Get(m);
    if (desc.kind == MetricKind::kSummary)
      return InvalidArgument("metric '" + desc.name +
                             "' is a summary statistic of an aggregate run (cct-aggregate): statistics across "
                             "units do not add up, so the run cannot be merged with other trees");
    if (desc.kind == MetricKind::kDerived) continue;  // registered below, after operands
    CCT_ASSIGN_OR_RETURN(metric_map[m], dst.metrics().Register(desc));
  }
  for (MetricId m = 0; m < src.metrics().size(); ++m) {
    const MetricDesc& desc = src.metrics().Get(m);
    if (desc.kind == MetricKind::kDerived) CCT_RETURN_IF_ERROR(dst.metrics().Register(desc).status());
  }
  // Frames by identity: index dst's frames once.
  std::unordered_map<std::string, FrameId> dst_frames;
  dst_frames.reserve(dst.frames().size());
  for (FrameId f = 0; f < dst.frames().size(); ++f) dst_frames.emplace(FrameIdentity(dst, f), f);
  std::vector<FrameId> frame_map(src.frames().size(), kFoldFrame);
  for (FrameId f = 0; f < src.frames().size(); ++f) {
    const std::string key = FrameIdentity(src, f);
    auto it = dst_frames.find(key);
    if (it != dst_frames.end()) {
      frame_map[f] = it->second;
      continue;
    }
    const Frame sf = src.frames().Get(f);
    const FrameId df = dst.InternFrame(sf.kind, src.str(sf.name), src.str(sf.module), src.str(sf.file), sf.line,
                                       sf.flags);
    dst_frames.emplace(key, df);
    frame_map[f] = df;
  }
  std::vector<NodeId> nodes(src.size(), kRootNode);
  for (NodeId n = 1; n < src.size(); ++n) nodes[n] = dst.InternChild(nodes[src.parent(n)], frame_map[src.frame_id(n)]);
  for (MetricId m = 0; m < src.metrics().size(); ++m) {
    if (metric_map[m] == kNoMetric) continue;
    src.column(m).ForEach([&](NodeId n, double v) { dst.AddValue(nodes[n], metric_map[m], v * scale); });
  }
  if (node_map) *node_map = std::move(nodes);
  return Status::Ok();
}

std::vector<char> NodesWithValues(const Tree& tree) {
  std::vector<char> out(tree.size(), 0);
  const MetricRegistry& reg = tree.metrics();
  for (MetricId m = 0; m < reg.size(); ++m) {
    if (reg.Get(m).kind != MetricKind::kAdditive) continue;
    tree.column(m).ForEach([&](NodeId n, double v) {
      if (v != 0 && n < out.size()) out[n] = 1;
    });
  }
  // Children have larger ids than their parents: one reverse pass.
  for (NodeId n = static_cast<NodeId>(tree.size()); n-- > 1;)
    if (out[n]) out[tree.parent(n)] = 1;
  if (!out.empty()) out[kRootNode] = 1;
  return out;
}

}  // namespace cct
