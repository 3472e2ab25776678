#include "store/trace_codec.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace store {

using cct::Corrupt;
using cct::InvalidArgument;
using cct::NodeId;
using cct::Result;

namespace {

// Fixed part of the payload: node_count, streams, lanes (u32 each), ranges,
// activities, limit_bytes, dropped (u64 each).
constexpr size_t kTraceHeaderBytes = 3 * 4 + 4 * 8;
// The fewest bytes each entry can take: a bound on counts before anything
// is allocated for them.
constexpr size_t kMinLaneBytes = 2, kMinStreamBytes = 5, kMinSampleBytes = 2, kMinRangeBytes = 4,
                 kMinGpuBytes = 5;
constexpr unsigned kGpuKindBits = 3;  // GpuOpKind's 8 values
static_assert(static_cast<unsigned>(cct::GpuOpKind::kSync) < (1u << kGpuKindBits));

int64_t NodeDelta(NodeId node, NodeId base) { return static_cast<int64_t>(node) - static_cast<int64_t>(base); }

// A start: the first absolute (zigzag), the others as the (non-negative)
// step from the one before, so an out-of-order start cannot be written.
[[gnu::always_inline]] inline void PutStart(ByteWriter& w, int64_t start, int64_t& prev, bool first) {
  if (first) w.Zigzag(start);
  else w.Varint(static_cast<uint64_t>(start) - static_cast<uint64_t>(prev));
  prev = start;
}

// The order that sorts `key(i)` for i < n, stably; empty when already sorted.
template <class Key>
std::vector<size_t> SortOrder(size_t n, Key key) {
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; ++i) sorted = key(i - 1) <= key(i);
  if (sorted) return {};
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  return order;
}

}  // namespace

Result<Section> EncodeTrace(const RunTrace& trace, const cct::Tree& tree, const std::vector<NodeId>& stored_ids) {
  if (stored_ids.size() != tree.size())
    return cct::Status(cct::ErrorCode::kInternal, "trace: the stored id map does not match the tree");
  // The first node beyond the tree, reported once encoding is done (the
  // per-event path stays a compare and a load).
  const char* bad_what = nullptr;
  NodeId bad_node = 0;
  const size_t tree_size = tree.size();
  auto stored = [&](NodeId n, const char* what) -> NodeId {
    if (n < tree_size) [[likely]]
      return stored_ids[n];
    if (!bad_what) {
      bad_what = what;
      bad_node = n;
    }
    return 0;
  };
  auto beyond = [&] {
    return InvalidArgument(std::string("trace: ") + bad_what + " node " + std::to_string(bad_node) +
                           " is beyond the tree (" + std::to_string(tree_size) + " nodes)");
  };

  // Streams by stored thread id, each thread once.
  std::vector<std::pair<NodeId, const TraceSamples*>> streams;
  for (const TraceSamples& s : trace.samples) {
    if (s.time_ns.size() != s.node.size())
      return InvalidArgument("trace: a sample stream has " + std::to_string(s.time_ns.size()) + " times but " +
                             std::to_string(s.node.size()) + " nodes");
    if (!s.time_ns.empty()) streams.emplace_back(stored(s.thread, "thread"), &s);
  }
  if (bad_what) return beyond();
  std::sort(streams.begin(), streams.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < streams.size(); ++i)
    if (streams[i].first == streams[i - 1].first)
      return InvalidArgument("trace: thread node " + std::to_string(streams[i].second->thread) +
                             " has two sample streams");

  // GPU (device, stream) pairs, each stored once.
  std::vector<std::pair<uint32_t, uint32_t>> lanes;
  for (const TraceGpuActivity& g : trace.gpu) {
    if (g.end_ns < g.start_ns) return InvalidArgument("trace: a GPU activity ends before it starts");
    if (static_cast<unsigned>(g.kind) > static_cast<unsigned>(cct::GpuOpKind::kSync))
      return InvalidArgument("trace: a GPU activity has an unknown kind");
    lanes.emplace_back(g.device, g.stream);
  }
  std::sort(lanes.begin(), lanes.end());
  lanes.erase(std::unique(lanes.begin(), lanes.end()), lanes.end());
  for (const TraceRange& r : trace.ranges)
    if (r.end_ns < r.start_ns) return InvalidArgument("trace: an NVTX range ends before it starts");

  ByteWriter w;
  size_t samples = 0;
  for (const auto& s : streams) samples += s.second->time_ns.size();
  w.Reserve(kTraceHeaderBytes + 4 * samples + 12 * (trace.ranges.size() + trace.gpu.size()) + 64);
  w.U32(static_cast<uint32_t>(tree.size()));
  w.U32(static_cast<uint32_t>(streams.size()));
  w.U32(static_cast<uint32_t>(lanes.size()));
  w.U64(trace.ranges.size());
  w.U64(trace.gpu.size());
  w.U64(trace.limit_bytes);
  w.U64(trace.dropped);
  for (const auto& [device, stream] : lanes) {
    w.Varint(device);
    w.Varint(stream);
  }

  ByteWriter body;
  for (const auto& stream : streams) {
    // Named, not a structured binding: the lambda below captures it (clang 14).
    const NodeId thread = stream.first;
    const TraceSamples* s = stream.second;
    const size_t n = s->time_ns.size();
    const std::vector<size_t> order = SortOrder(n, [s](size_t i) { return s->time_ns[i]; });
    body.Reserve(5 * n);
    int64_t prev_time = 0;
    NodeId prev_node = thread;  // samples land below their thread: near it in preorder
    for (size_t k = 0; k < n; ++k) {
      const size_t i = order.empty() ? k : order[k];
      PutStart(body, s->time_ns[i], prev_time, k == 0);
      const NodeId node = stored(s->node[i], "sample");
      body.Zigzag(NodeDelta(node, prev_node));
      prev_node = node;
    }
    w.Varint(thread);
    w.Varint(n);
    w.Varint(body.size());
    w.Bytes(body.bytes());
    body = ByteWriter();
  }

  {
    const auto& rs = trace.ranges;
    const std::vector<size_t> order = SortOrder(rs.size(), [&rs](size_t i) { return rs[i].start_ns; });
    int64_t prev = 0;
    for (size_t k = 0; k < rs.size(); ++k) {
      const TraceRange& r = rs[order.empty() ? k : order[k]];
      const NodeId thread = stored(r.thread, "range thread");
      w.Varint(thread);
      w.Zigzag(NodeDelta(stored(r.node, "range"), thread));
      PutStart(w, r.start_ns, prev, k == 0);
      // 0 for an open range, else the duration + 1.
      w.Varint(r.open() ? 0 : static_cast<uint64_t>(r.end_ns) - static_cast<uint64_t>(r.start_ns) + 1);
    }
  }

  {
    const auto& gs = trace.gpu;
    const std::vector<size_t> order = SortOrder(gs.size(), [&gs](size_t i) { return gs[i].start_ns; });
    int64_t prev = 0;
    NodeId prev_node = 0;
    for (size_t k = 0; k < gs.size(); ++k) {
      const TraceGpuActivity& g = gs[order.empty() ? k : order[k]];
      const size_t lane = static_cast<size_t>(
          std::lower_bound(lanes.begin(), lanes.end(), std::pair{g.device, g.stream}) - lanes.begin());
      w.Varint((static_cast<uint64_t>(lane) << kGpuKindBits) | static_cast<uint64_t>(g.kind));
      PutStart(w, g.start_ns, prev, k == 0);
      w.Varint(static_cast<uint64_t>(g.end_ns) - static_cast<uint64_t>(g.start_ns));
      w.Varint(g.bytes);
      const NodeId node = stored(g.node, "GPU activity");
      w.Zigzag(NodeDelta(node, prev_node));
      prev_node = node;
    }
  }
  if (bad_what) return beyond();
  return Section{SectionKind::kTrace, 0, w.Take()};
}

namespace {

// Reads starts written by PutStart; false when one would pass INT64_MAX.
[[gnu::always_inline]] inline bool GetStart(ByteReader& r, int64_t& start, bool first) {
  if (first) return r.Zigzag(start);
  uint64_t step = 0;
  if (!r.Varint(step) || step > static_cast<uint64_t>(INT64_MAX)) return false;
  return !__builtin_add_overflow(start, static_cast<int64_t>(step), &start);
}

// base + a zigzag delta, checked to be a node id below node_count.
[[gnu::always_inline]] inline bool GetNode(ByteReader& r, NodeId base, size_t node_count, NodeId& node) {
  int64_t delta = 0, id = 0;
  if (!r.Zigzag(delta) || __builtin_add_overflow(static_cast<int64_t>(base), delta, &id) || id < 0 ||
      static_cast<uint64_t>(id) >= node_count)
    return false;
  node = static_cast<NodeId>(id);
  return true;
}

bool GetEnd(int64_t start, uint64_t duration, int64_t& end) {
  return duration <= static_cast<uint64_t>(INT64_MAX) &&
         !__builtin_add_overflow(start, static_cast<int64_t>(duration), &end);
}

}  // namespace

Result<RunTrace> DecodeTrace(std::string_view payload, size_t node_count) {
  ByteReader r(payload);
  uint32_t stored_nodes = 0, stream_count = 0, lane_count = 0;
  uint64_t range_count = 0, gpu_count = 0;
  RunTrace out;
  if (!r.U32(stored_nodes) || !r.U32(stream_count) || !r.U32(lane_count) || !r.U64(range_count) ||
      !r.U64(gpu_count) || !r.U64(out.limit_bytes) || !r.U64(out.dropped))
    return Corrupt("trace section is truncated");
  if (stored_nodes != node_count)
    return Corrupt("trace section is for a tree of " + std::to_string(stored_nodes) + " nodes, the run has " +
                   std::to_string(node_count));
  // Every entry takes at least a few bytes: counts the rest cannot hold are
  // damage, found before anything is reserved for them.
  const uint64_t rest = r.remaining();
  if (lane_count > rest / kMinLaneBytes || stream_count > rest / kMinStreamBytes ||
      range_count > rest / kMinRangeBytes || gpu_count > rest / kMinGpuBytes ||
      lane_count * kMinLaneBytes + stream_count * kMinStreamBytes + range_count * kMinRangeBytes +
              gpu_count * kMinGpuBytes > rest)
    return Corrupt("trace section's counts are larger than its payload");

  std::vector<std::pair<uint32_t, uint32_t>> lanes(lane_count);
  for (uint32_t i = 0; i < lane_count; ++i) {
    uint64_t device = 0, stream = 0;
    if (!r.Varint(device) || !r.Varint(stream) || device > UINT32_MAX || stream > UINT32_MAX)
      return Corrupt("trace section's GPU streams are damaged");
    lanes[i] = {static_cast<uint32_t>(device), static_cast<uint32_t>(stream)};
    if (i > 0 && lanes[i] <= lanes[i - 1]) return Corrupt("trace section's GPU streams are out of order");
  }

  out.samples.resize(stream_count);
  for (uint32_t i = 0; i < stream_count; ++i) {
    TraceSamples& s = out.samples[i];
    uint64_t thread = 0, n = 0, bytes = 0;
    std::string_view body;
    if (!r.Varint(thread) || !r.Varint(n) || !r.Varint(bytes) || !r.View(body, bytes))
      return Corrupt("trace section's sample streams are truncated");
    if (thread >= node_count || (i > 0 && thread <= out.samples[i - 1].thread))
      return Corrupt("trace section's sample streams name threads out of order or beyond the tree");
    if (n == 0 || n > body.size() / kMinSampleBytes)
      return Corrupt("trace section's sample stream " + std::to_string(i) + " has an implausible count");
    s.thread = static_cast<NodeId>(thread);
    s.time_ns.resize(n);
    s.node.resize(n);
    ByteReader b(body);
    int64_t time = 0;
    NodeId node = s.thread;
    for (uint64_t k = 0; k < n; ++k) {
      if (!GetStart(b, time, k == 0)) return Corrupt("trace section's sample times are damaged");
      if (!GetNode(b, node, node_count, node)) return Corrupt("trace section's samples refer to nodes beyond the tree");
      s.time_ns[k] = time;
      s.node[k] = node;
    }
    if (b.remaining() != 0) return Corrupt("trace section's sample stream " + std::to_string(i) + " is longer than its count");
  }

  out.ranges.resize(range_count);
  int64_t start = 0;
  for (uint64_t i = 0; i < range_count; ++i) {
    TraceRange& x = out.ranges[i];
    uint64_t thread = 0, length = 0;
    if (!r.Varint(thread) || thread >= node_count) return Corrupt("trace section's ranges name threads beyond the tree");
    x.thread = static_cast<NodeId>(thread);
    if (!GetNode(r, x.thread, node_count, x.node)) return Corrupt("trace section's ranges refer to nodes beyond the tree");
    if (!GetStart(r, start, i == 0) || !r.Varint(length)) return Corrupt("trace section's range times are damaged");
    x.start_ns = start;
    if (length == 0) {
      x.end_ns = kTraceOpenEnd;
    } else if (!GetEnd(start, length - 1, x.end_ns) || x.end_ns == kTraceOpenEnd) {
      return Corrupt("trace section's range times are damaged");
    }
  }

  out.gpu.resize(gpu_count);
  std::vector<bool> lane_used(lane_count);
  start = 0;
  NodeId node = 0;
  for (uint64_t i = 0; i < gpu_count; ++i) {
    TraceGpuActivity& g = out.gpu[i];
    uint64_t lane_kind = 0, duration = 0;
    if (!r.Varint(lane_kind) || (lane_kind >> kGpuKindBits) >= lane_count)
      return Corrupt("trace section's GPU activities name unknown streams");
    const auto& lane = lanes[lane_kind >> kGpuKindBits];
    lane_used[lane_kind >> kGpuKindBits] = true;
    g.device = lane.first;
    g.stream = lane.second;
    g.kind = static_cast<cct::GpuOpKind>(lane_kind & ((1u << kGpuKindBits) - 1));
    if (!GetStart(r, start, i == 0) || !r.Varint(duration) || !GetEnd(start, duration, g.end_ns) ||
        !r.Varint(g.bytes))
      return Corrupt("trace section's GPU activity times are damaged");
    g.start_ns = start;
    if (!GetNode(r, node, node_count, node)) return Corrupt("trace section's GPU activities refer to nodes beyond the tree");
    g.node = node;
  }
  if (r.remaining() != 0) return Corrupt("trace section is longer than its counts say");
  // Writers store only the streams their activities use: one encoding per trace.
  if (std::find(lane_used.begin(), lane_used.end(), false) != lane_used.end())
    return Corrupt("trace section lists a GPU stream no activity uses");
  return out;
}

}  // namespace store
