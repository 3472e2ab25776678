#include "cct/tree.h"

#include "cct/text.h"

namespace cct {

// ---------------------------------------------------------------- SparseColumn

void SparseColumn::EnsureIndex() const {
  if (indexed_ == 0 && !nodes_.empty()) index_.Reserve(nodes_.size());
  for (; indexed_ < nodes_.size(); ++indexed_)
    index_.Insert(MixHash(nodes_[indexed_]), static_cast<uint32_t>(indexed_));
}

size_t SparseColumn::Slot(NodeId node) {
  // Collectors and importers mostly touch the most recent node again.
  if (!nodes_.empty() && nodes_.back() == node) return nodes_.size() - 1;
  EnsureIndex();
  const uint32_t found = index_.Find(MixHash(node), [&](uint32_t i) { return nodes_[i] == node; });
  if (found != FlatIndex::kNone) return found;
  nodes_.push_back(node);
  values_.push_back(0);
  return nodes_.size() - 1;
}

// Past a third of the nodes a dense array (8 bytes a node) is smaller than
// the sparse entries (12 bytes) plus their index (8+ bytes).
void SparseColumn::MaybeDensify(NodeId node) {
  if (!DenseFor(nodes_.size(), static_cast<size_t>(node) + 1)) return;
  NodeId max_node = 0;
  for (NodeId n : nodes_) max_node = std::max(max_node, n);
  dense_.assign(static_cast<size_t>(max_node) + 1, 0.0);
  for (size_t i = 0; i < nodes_.size(); ++i) dense_[nodes_[i]] += values_[i];
  nodes_ = {};
  values_ = {};
  index_.Clear();
  indexed_ = 0;
  dense_mode_ = true;
}

SparseColumn SparseColumn::FromDense(std::vector<double> dense) {
  SparseColumn c;
  c.dense_mode_ = true;
  c.dense_ = std::move(dense);
  return c;
}

SparseColumn SparseColumn::FromSparse(std::vector<NodeId> nodes, std::vector<double> values) {
  SparseColumn c;
  c.nodes_ = std::move(nodes);
  c.values_ = std::move(values);
  return c;
}

void SparseColumn::Add(NodeId node, double v) {
  if (dense_mode_) {
    if (node >= dense_.size()) dense_.resize(std::max<size_t>(node + 1, dense_.size() * 3 / 2), 0.0);
    dense_[node] += v;
    return;
  }
  values_[Slot(node)] += v;
  MaybeDensify(node);
}

void SparseColumn::Set(NodeId node, double v) {
  if (dense_mode_) {
    if (node >= dense_.size()) dense_.resize(std::max<size_t>(node + 1, dense_.size() * 3 / 2), 0.0);
    dense_[node] = v;
    return;
  }
  values_[Slot(node)] = v;
  MaybeDensify(node);
}

double SparseColumn::Get(NodeId node) const {
  if (dense_mode_) return node < dense_.size() ? dense_[node] : 0.0;
  EnsureIndex();
  const uint32_t found = index_.Find(MixHash(node), [&](uint32_t i) { return nodes_[i] == node; });
  return found == FlatIndex::kNone ? 0.0 : values_[found];
}

size_t SparseColumn::count() const {
  if (!dense_mode_) return nodes_.size();
  size_t n = 0;
  for (double v : dense_) n += (v != 0);
  return n;
}

size_t SparseColumn::MemoryBytes() const {
  return dense_.capacity() * 8 + nodes_.capacity() * 4 + values_.capacity() * 8 + index_.MemoryBytes();
}

// ------------------------------------------------------------------------ Tree

Tree::Tree() {
  const FrameId root = InternFrame(FrameKind::kRoot, kRootName);
  parent_.push_back(kNoNode);
  frame_.push_back(root);
}

FrameId Tree::InternFrame(FrameKind kind, std::string_view name, std::string_view module, std::string_view file,
                          uint32_t line, uint8_t flags) {
  Frame f;
  f.kind = kind;
  f.flags = flags;
  // Over-long names are stored cut (text.h kMaxNameBytes); interning the cut
  // form merges what only differed in the cut part, as a reader would.
  auto intern = [&](std::string_view s) {
    return s.size() > kMaxNameBytes ? strings_.Intern(CutToBytes(s, kMaxNameBytes)) : strings_.Intern(s);
  };
  f.name = intern(name);
  f.module = module.empty() ? 0 : intern(module);
  f.file = file.empty() ? 0 : intern(file);
  f.line = line;
  return frames_.Intern(f);
}

void Tree::EnsureChildIndex() const {
  if (child_indexed_) return;
  child_index_.Clear();
  child_index_.Reserve(size());
  for (NodeId n = 1; n < size(); ++n) child_index_.Insert(ChildHash(parent_[n], frame_[n]), n);
  child_indexed_ = true;
}

NodeId Tree::FindChild(NodeId parent, FrameId frame) const {
  EnsureChildIndex();
  const uint32_t found = child_index_.Find(
      ChildHash(parent, frame), [&](uint32_t n) { return parent_[n] == parent && frame_[n] == frame; });
  return found == FlatIndex::kNone ? kNoNode : found;
}

NodeId Tree::InternChild(NodeId parent, FrameId frame) {
  EnsureChildIndex();
  const uint64_t h = ChildHash(parent, frame);
  const uint32_t found =
      child_index_.Find(h, [&](uint32_t n) { return parent_[n] == parent && frame_[n] == frame; });
  if (found != FlatIndex::kNone) return found;
  const NodeId id = static_cast<NodeId>(size());
  parent_.push_back(parent);
  frame_.push_back(frame);
  child_index_.Insert(h, id);
  return id;
}

void Tree::Reserve(size_t nodes) {
  parent_.reserve(nodes);
  frame_.reserve(nodes);
  child_index_.Reserve(nodes);
}

void Tree::AddValue(NodeId node, MetricId metric, double v) {
  if (metric >= columns_.size()) columns_.resize(metric + 1);
  columns_[metric].Add(node, v);
}

void Tree::SetValue(NodeId node, MetricId metric, double v) {
  if (metric >= columns_.size()) columns_.resize(metric + 1);
  columns_[metric].Set(node, v);
}

double Tree::Value(NodeId node, MetricId metric) const {
  return metric < columns_.size() ? columns_[metric].Get(node) : 0.0;
}

const SparseColumn& Tree::column(MetricId metric) const {
  static const SparseColumn kEmpty;
  return metric < columns_.size() ? columns_[metric] : kEmpty;
}

void Tree::SetColumn(MetricId metric, SparseColumn column) {
  if (metric >= columns_.size()) columns_.resize(metric + 1);
  columns_[metric] = std::move(column);
}

const SparseColumn& Tree::inclusive_column(MetricId metric) const {
  static const SparseColumn kEmpty;
  return metric < inclusive_columns_.size() ? inclusive_columns_[metric] : kEmpty;
}

void Tree::SetInclusiveColumn(MetricId metric, SparseColumn column) {
  if (metric >= inclusive_columns_.size()) inclusive_columns_.resize(metric + 1);
  inclusive_columns_[metric] = std::move(column);
}

void Tree::EnsureIndexes() const {
  EnsureChildIndex();
  strings_.Find("");
  frames_.Find(Frame{});
  for (const SparseColumn& c : columns_) c.Get(0);
  for (const SparseColumn& c : inclusive_columns_) c.Get(0);
}

size_t Tree::MemoryBytes() const {
  size_t b = strings_.MemoryBytes() + frames_.MemoryBytes() + parent_.capacity() * 4 + frame_.capacity() * 4 +
             child_index_.MemoryBytes();
  for (const SparseColumn& c : columns_) b += c.MemoryBytes();
  for (const SparseColumn& c : inclusive_columns_) b += c.MemoryBytes();
  return b;
}

Status Tree::AssignNodes(std::vector<NodeId> parent, std::vector<FrameId> frame) {
  if (parent.empty() || parent.size() != frame.size()) return Corrupt("node columns have different lengths");
  if (parent[0] != kNoNode) return Corrupt("node 0 is not the root");
  for (size_t n = 1; n < parent.size(); ++n)
    if (parent[n] >= n) return Corrupt("node " + std::to_string(n) + " precedes its parent");
  for (FrameId f : frame)
    if (f >= frames_.size()) return Corrupt("node refers to frame " + std::to_string(f) + " beyond the table");
  parent_ = std::move(parent);
  frame_ = std::move(frame);
  child_index_.Clear();
  child_indexed_ = false;
  return Status::Ok();
}

}  // namespace cct
