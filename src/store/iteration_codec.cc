#include "store/iteration_codec.h"

#include <algorithm>
#include <map>

namespace store {

using cct::Corrupt;
using cct::InvalidArgument;
using cct::MetricId;
using cct::NodeId;
using cct::Result;
using cct::Status;

Result<Section> EncodeIterations(const RunIterations& its, const cct::Tree& tree,
                                 const std::vector<NodeId>& stored_ids) {
  if (stored_ids.size() != tree.size())
    return cct::Status(cct::ErrorCode::kInternal, "iterations: the stored id map does not match the tree");
  if (its.iterations.size() >= UINT32_MAX) return InvalidArgument("iterations: too many iterations");
  const cct::MetricRegistry& reg = tree.metrics();
  const size_t n = its.iterations.size();
  std::vector<int64_t> start(n), duration(n);
  std::vector<uint32_t> column_end(n);
  std::vector<uint16_t> metric;
  std::vector<uint64_t> entry_end;
  std::vector<uint32_t> node;
  std::vector<double> value;
  std::vector<std::pair<NodeId, double>> entries;
  for (size_t i = 0; i < n; ++i) {
    const Iteration& it = its.iterations[i];
    const std::string where = "iteration " + std::to_string(i);
    if (it.index != i)
      return InvalidArgument(where + " has index " + std::to_string(it.index) +
                             " (iterations must be numbered 0, 1, ... in order)");
    start[i] = it.start_ns;
    duration[i] = it.duration_ns;
    // Columns of one iteration, by metric id (merged when repeated).
    std::map<MetricId, std::vector<const IterationColumn*>> by_metric;
    for (const IterationColumn& c : it.columns) {
      if (c.nodes.empty() && c.values.empty()) continue;
      if (c.nodes.size() != c.values.size())
        return InvalidArgument(where + ": a column has " + std::to_string(c.nodes.size()) + " nodes but " +
                               std::to_string(c.values.size()) + " values");
      if (c.metric >= reg.size() || reg.Get(c.metric).kind != cct::MetricKind::kAdditive)
        return InvalidArgument(where + ": metric id " + std::to_string(c.metric) +
                               " is not an additive metric of the run's tree");
      by_metric[c.metric].push_back(&c);
    }
    for (const auto& [m, columns] : by_metric) {
      entries.clear();
      for (const IterationColumn* c : columns) {
        for (size_t k = 0; k < c->nodes.size(); ++k) {
          if (c->nodes[k] >= tree.size())
            return InvalidArgument(where + ": node " + std::to_string(c->nodes[k]) + " is beyond the tree (" +
                                   std::to_string(tree.size()) + " nodes)");
          entries.emplace_back(stored_ids[c->nodes[k]], c->values[k]);
        }
      }
      std::stable_sort(entries.begin(), entries.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      const size_t before = node.size();
      for (size_t k = 0; k < entries.size();) {
        const NodeId id = entries[k].first;
        double sum = 0;
        for (; k < entries.size() && entries[k].first == id; ++k) sum += entries[k].second;
        if (sum == 0) continue;
        node.push_back(id);
        value.push_back(sum);
      }
      if (node.size() == before) continue;  // nothing but zeros
      metric.push_back(m);
      entry_end.push_back(node.size());
    }
    column_end[i] = static_cast<uint32_t>(metric.size());
  }
  ByteWriter w;
  w.U32(static_cast<uint32_t>(tree.size()));
  w.U32(static_cast<uint32_t>(n));
  w.U32(static_cast<uint32_t>(metric.size()));
  w.U64(node.size());
  w.U32(static_cast<uint32_t>(its.range.size()));
  w.Bytes(its.range);
  w.Array(start);
  w.Array(duration);
  w.Array(column_end);
  w.Array(metric);
  w.Array(entry_end);
  w.Array(node);
  w.Array(value);
  return Section{SectionKind::kIterations, 0, w.Take()};
}

Result<RunIterations> DecodeIterations(std::string_view payload, size_t node_count,
                                       const cct::MetricRegistry& metrics) {
  ByteReader r(payload);
  uint32_t stored_nodes = 0, n = 0, c = 0, range_len = 0;
  uint64_t e = 0;
  RunIterations out;
  if (!r.U32(stored_nodes) || !r.U32(n) || !r.U32(c) || !r.U64(e) || !r.U32(range_len) ||
      !r.Bytes(out.range, range_len))
    return Corrupt("iteration section is truncated");
  if (stored_nodes != node_count)
    return Corrupt("iteration section is for a tree of " + std::to_string(stored_nodes) + " nodes, the run has " +
                   std::to_string(node_count));
  if (e > r.remaining()) return Corrupt("iteration section is truncated");
  std::vector<int64_t> start, duration;
  std::vector<uint32_t> column_end, node;
  std::vector<uint16_t> metric;
  std::vector<uint64_t> entry_end;
  std::vector<double> value;
  if (!r.Array(start, n) || !r.Array(duration, n) || !r.Array(column_end, n) || !r.Array(metric, c) ||
      !r.Array(entry_end, c) || !r.Array(node, e) || !r.Array(value, e))
    return Corrupt("iteration section is truncated");
  if (r.remaining() != 0) return Corrupt("iteration section is longer than its counts say");
  if ((n == 0 ? 0 : column_end.back()) != c) return Corrupt("iteration columns do not add up");
  if ((c == 0 ? 0 : entry_end.back()) != e) return Corrupt("iteration values do not add up");

  out.iterations.resize(n);
  uint32_t col = 0;
  uint64_t entry = 0;
  for (uint32_t i = 0; i < n; ++i) {
    Iteration& it = out.iterations[i];
    it.index = i;
    it.start_ns = start[i];
    it.duration_ns = duration[i];
    if (column_end[i] < col || column_end[i] > c) return Corrupt("iteration column offsets are out of order");
    it.columns.reserve(column_end[i] - col);
    const uint32_t first = col;
    for (; col < column_end[i]; ++col) {
      const MetricId m = metric[col];
      if (m >= metrics.size() || metrics.Get(m).kind != cct::MetricKind::kAdditive)
        return Corrupt("iteration values are stored for an unknown metric");
      if (col > first && metric[col - 1] >= m)
        return Corrupt("iteration columns are out of order");
      if (entry_end[col] <= entry || entry_end[col] > e) return Corrupt("iteration value offsets are out of order");
      IterationColumn& column = it.columns.emplace_back();
      column.metric = m;
      const size_t begin = entry, end = entry_end[col];
      for (size_t k = begin; k < end; ++k) {
        if (node[k] >= node_count || (k > begin && node[k] <= node[k - 1]))
          return Corrupt("iteration values refer to nodes out of order or beyond the tree");
      }
      column.nodes.assign(node.begin() + static_cast<ptrdiff_t>(begin), node.begin() + static_cast<ptrdiff_t>(end));
      column.values.assign(value.begin() + static_cast<ptrdiff_t>(begin), value.begin() + static_cast<ptrdiff_t>(end));
      entry = end;
    }
  }
  return out;
}

}  // namespace store
