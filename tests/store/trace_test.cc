// Traces in the store (store/trace.h): the kind-8 section's round trip with
// node ids remapped to the stored (preorder) tree, its validation of damaged
// payloads (kCorrupt, never a crash), Database::CreateRun/UpdateRun/ReadTrace,
// and run files carrying a trace into a database.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cct/tree.h"
#include "store/check.h"
#include "store/database.h"
#include "store/run_file.h"
#include "store/trace_codec.h"
#include "store/tree_codec.h"
#include "tests/test_util.h"

using cct::ErrorCode;
using cct::FrameKind;
using cct::GpuOpKind;
using cct::NodeId;
using cct::Tree;
using store::RunTrace;

namespace {

constexpr int64_t kTraceEpoch = 1'700'000'000'000'000'000;

// Three threads, functions below them attached to random earlier nodes (so
// creation order is not preorder and the store renumbers), NVTX ranges and
// GPU placeholders.
struct TraceTreeFixture {
  Tree tree;
  std::vector<NodeId> threads, nodes, ranges, placeholders;
};

TraceTreeFixture MakeTraceTree(unsigned seed, int functions = 120) {
  TraceTreeFixture f;
  Tree& t = f.tree;
  t.metrics().RegisterStandard("cputime").value();
  std::mt19937 rng(seed);
  std::vector<NodeId> all;
  for (int i = 0; i < 3; ++i) {
    f.threads.push_back(t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kThread, "thread " + std::to_string(i))));
    all.push_back(f.threads.back());
  }
  for (int i = 0; i < functions; ++i) {
    const NodeId parent = all[rng() % all.size()];
    const bool range = i % 9 == 0;
    const NodeId n = t.InternChild(parent, t.InternFrame(range ? FrameKind::kNvtx : FrameKind::kFunction,
                                                         "f" + std::to_string(i)));
    all.push_back(n);
    (range ? f.ranges : f.nodes).push_back(n);
  }
  for (GpuOpKind k : {GpuOpKind::kKernel, GpuOpKind::kCopyIn, GpuOpKind::kMemset})
    f.placeholders.push_back(
        t.InternChild(f.threads[0], t.InternFrame(FrameKind::kGpuOp, std::string(cct::GpuOpPlaceholder(k)))));
  return f;
}

// A random trace on the fixture's tree: the second thread's samples are
// given out of time order (the store sorts them), one range is open.
RunTrace MakeTrace(const TraceTreeFixture& f, unsigned seed, int samples_per_thread = 200) {
  std::mt19937 rng(seed);
  RunTrace tr;
  for (size_t th = 0; th < f.threads.size(); ++th) {
    store::TraceSamples s;
    s.thread = f.threads[th];
    int64_t t = kTraceEpoch + static_cast<int64_t>(th) * 1000;
    for (int i = 0; i < samples_per_thread; ++i) {
      t += rng() % 4 == 0 ? 0 : 1'000'000 + static_cast<int64_t>(rng() % 20000);
      s.time_ns.push_back(t);
      s.node.push_back(f.nodes[rng() % f.nodes.size()]);
    }
    if (th == 1) {
      std::reverse(s.time_ns.begin(), s.time_ns.end());
      std::reverse(s.node.begin(), s.node.end());
    }
    tr.samples.push_back(std::move(s));
  }
  for (int i = 0; i < 20; ++i) {
    const int64_t start = kTraceEpoch + static_cast<int64_t>(rng() % 100'000'000);
    tr.ranges.push_back({f.threads[rng() % 3], f.ranges[rng() % f.ranges.size()], start,
                         i == 7 ? store::kTraceOpenEnd : start + static_cast<int64_t>(rng() % 5'000'000)});
  }
  for (int i = 0; i < 30; ++i) {
    store::TraceGpuActivity g;
    g.device = rng() % 2;
    g.stream = 7 + rng() % 3;
    g.kind = static_cast<GpuOpKind>(rng() % 8);
    g.start_ns = kTraceEpoch + static_cast<int64_t>(rng() % 100'000'000);
    g.end_ns = g.start_ns + static_cast<int64_t>(rng() % 100'000);
    g.bytes = g.kind == GpuOpKind::kKernel ? 0 : rng() % (1u << 30);
    g.node = f.placeholders[rng() % f.placeholders.size()];
    tr.gpu.push_back(g);
  }
  tr.limit_bytes = 64 << 20;
  return tr;
}

// What a trace reads back as: ids mapped through `to`, streams by mapped
// thread id, samples by time, ranges and activities by start (all stable).
RunTrace ExpectedTrace(const RunTrace& in, const std::function<NodeId(NodeId)>& to) {
  RunTrace out = in;
  out.samples.clear();
  for (const store::TraceSamples& s : in.samples) {
    if (s.time_ns.empty()) continue;
    std::vector<std::pair<int64_t, NodeId>> ev;
    for (size_t i = 0; i < s.time_ns.size(); ++i) ev.emplace_back(s.time_ns[i], to(s.node[i]));
    std::stable_sort(ev.begin(), ev.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    store::TraceSamples m;
    m.thread = to(s.thread);
    for (const auto& e : ev) {
      m.time_ns.push_back(e.first);
      m.node.push_back(e.second);
    }
    out.samples.push_back(std::move(m));
  }
  std::sort(out.samples.begin(), out.samples.end(), [](const auto& a, const auto& b) { return a.thread < b.thread; });
  for (store::TraceRange& r : out.ranges) {
    r.thread = to(r.thread);
    r.node = to(r.node);
  }
  for (store::TraceGpuActivity& g : out.gpu) g.node = to(g.node);
  auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
  std::stable_sort(out.ranges.begin(), out.ranges.end(), by_start);
  std::stable_sort(out.gpu.begin(), out.gpu.end(), by_start);
  return out;
}

void CheckSameTrace(const RunTrace& want, const RunTrace& got) {
  CHECK(got.limit_bytes == want.limit_bytes);
  CHECK(got.dropped == want.dropped);
  REQUIRE(got.samples.size() == want.samples.size());
  for (size_t i = 0; i < want.samples.size(); ++i) {
    CHECK(got.samples[i].thread == want.samples[i].thread);
    CHECK(got.samples[i].time_ns == want.samples[i].time_ns);
    CHECK(got.samples[i].node == want.samples[i].node);
  }
  REQUIRE(got.ranges.size() == want.ranges.size());
  for (size_t i = 0; i < want.ranges.size(); ++i) {
    CHECK(got.ranges[i].thread == want.ranges[i].thread);
    CHECK(got.ranges[i].node == want.ranges[i].node);
    CHECK(got.ranges[i].start_ns == want.ranges[i].start_ns);
    CHECK(got.ranges[i].end_ns == want.ranges[i].end_ns);
  }
  REQUIRE(got.gpu.size() == want.gpu.size());
  for (size_t i = 0; i < want.gpu.size(); ++i) {
    const store::TraceGpuActivity &a = want.gpu[i], &b = got.gpu[i];
    CHECK(b.device == a.device);
    CHECK(b.stream == a.stream);
    CHECK(b.kind == a.kind);
    CHECK(b.start_ns == a.start_ns);
    CHECK(b.end_ns == a.end_ns);
    CHECK(b.bytes == a.bytes);
    CHECK(b.node == a.node);
  }
}

// A node's path of kinds and names: the same node in the written and the
// read tree, whatever ids the store gave it.
std::string TracePathOf(const Tree& t, NodeId n) {
  std::string key;
  for (; n != cct::kRootNode; n = t.parent(n))
    key += std::to_string(static_cast<int>(t.kind(n))) + ":" + std::string(t.name(n)) + "/";
  return key;
}

// Maps the written tree's ids to the read tree's, by path.
std::function<NodeId(NodeId)> TraceByPath(const Tree& written, const Tree& read) {
  auto index = std::make_shared<std::map<std::string, NodeId>>();
  for (NodeId n = 0; n < read.size(); ++n) (*index)[TracePathOf(read, n)] = n;
  return [index, &written](NodeId n) {
    auto it = index->find(TracePathOf(written, n));
    REQUIRE(it != index->end());
    return it->second;
  };
}

std::vector<NodeId> StoredIds(const Tree& t) {
  std::vector<NodeId> ids;
  store::EncodeTree(t, &ids);
  return ids;
}

// A hand-written payload: the header of docs/format.md, then `body`.
std::string TracePayload(uint32_t nodes, uint32_t streams, uint32_t lanes, uint64_t ranges, uint64_t gpu,
                         const std::string& body) {
  store::ByteWriter w;
  w.U32(nodes);
  w.U32(streams);
  w.U32(lanes);
  w.U64(ranges);
  w.U64(gpu);
  w.U64(0);
  w.U64(0);
  w.Bytes(body);
  return w.Take();
}

store::RunMeta TraceMeta(const std::string& name) {
  store::RunMeta m;
  m.name = name;
  m.source = "cct-record";
  m.state = store::RunState::kComplete;
  return m;
}

}  // namespace

TEST_CASE("trace codec: random traces round trip with ids mapped to the stored tree") {
  const TraceTreeFixture f = MakeTraceTree(11);
  const std::vector<NodeId> ids = StoredIds(f.tree);
  bool moved = false;
  for (NodeId n = 0; n < f.tree.size(); ++n) moved |= ids[n] != n;
  REQUIRE(moved);  // the store renumbers this tree: the mapping is exercised
  for (unsigned seed : {1u, 2u, 3u}) {
    RunTrace tr = MakeTrace(f, seed);
    tr.dropped = seed == 2 ? 12345 : 0;
    auto s = store::EncodeTrace(tr, f.tree, ids);
    REQUIRE(s.ok());
    CHECK(s->kind == store::SectionKind::kTrace);
    auto back = store::DecodeTrace(s->payload, f.tree.size());
    REQUIRE(back.ok());
    CheckSameTrace(ExpectedTrace(tr, [&ids](NodeId n) { return ids[n]; }), *back);
    CHECK(std::count_if(back->ranges.begin(), back->ranges.end(), [](const store::TraceRange& r) { return r.open(); }) ==
          1);
    // Encoding what was decoded (identity ids) gives the same bytes.
    std::vector<NodeId> identity(f.tree.size());
    for (NodeId n = 0; n < identity.size(); ++n) identity[n] = n;
    auto again = store::EncodeTrace(*back, f.tree, identity);
    REQUIRE(again.ok());
    CHECK(again->payload == s->payload);
  }
}

TEST_CASE("trace codec: empty traces, empty streams, span and event count") {
  const TraceTreeFixture f = MakeTraceTree(5, 10);
  const std::vector<NodeId> ids = StoredIds(f.tree);
  RunTrace empty;
  empty.dropped = 7;  // everything was dropped
  empty.samples.push_back({f.threads[0], {}, {}});
  auto s = store::EncodeTrace(empty, f.tree, ids);
  REQUIRE(s.ok());
  auto back = store::DecodeTrace(s->payload, f.tree.size());
  REQUIRE(back.ok());
  CHECK(back->samples.empty());  // the empty stream is left out
  CHECK(back->ranges.empty());
  CHECK(back->gpu.empty());
  CHECK(back->dropped == 7);
  CHECK(store::SpanOf(*back).empty());
  CHECK(store::TraceEventCount(*back) == 0);

  RunTrace tr;
  tr.samples.push_back({f.threads[1], {100, 250}, {f.nodes[0], f.nodes[1]}});
  tr.ranges.push_back({f.threads[0], f.ranges[0], 50, store::kTraceOpenEnd});
  tr.gpu.push_back({0, 1, GpuOpKind::kKernel, 200, 400, 0, f.placeholders[0]});
  CHECK(store::TraceEventCount(tr) == 4);
  const store::TraceSpan span = store::SpanOf(tr);
  CHECK(span.first_ns == 50);   // the open range's start
  CHECK(span.last_ns == 400);   // the kernel's end; the open range does not reach kTraceOpenEnd
}

TEST_CASE("trace codec: bad input is kInvalidArgument") {
  const TraceTreeFixture f = MakeTraceTree(6, 10);
  const std::vector<NodeId> ids = StoredIds(f.tree);
  const NodeId beyond = static_cast<NodeId>(f.tree.size());
  auto code = [&](const RunTrace& t) { return store::EncodeTrace(t, f.tree, ids).status().code(); };
  RunTrace t;
  t.samples.push_back({f.threads[0], {1}, {beyond}});
  CHECK(code(t) == ErrorCode::kInvalidArgument);
  t.samples = {{f.threads[0], {1, 2}, {f.nodes[0]}}};
  CHECK(code(t) == ErrorCode::kInvalidArgument);
  t.samples = {{f.threads[0], {1}, {f.nodes[0]}}, {f.threads[0], {2}, {f.nodes[0]}}};
  CHECK(code(t) == ErrorCode::kInvalidArgument);
  t.samples.clear();
  t.ranges = {{f.threads[0], f.ranges[0], 10, 9}};
  CHECK(code(t) == ErrorCode::kInvalidArgument);
  t.ranges = {{beyond, f.ranges[0], 10, 11}};
  CHECK(code(t) == ErrorCode::kInvalidArgument);
  t.ranges.clear();
  t.gpu = {{0, 0, GpuOpKind::kKernel, 10, 9, 0, f.placeholders[0]}};
  CHECK(code(t) == ErrorCode::kInvalidArgument);
  t.gpu = {{0, 0, GpuOpKind::kKernel, 10, 11, 0, beyond}};
  CHECK(code(t) == ErrorCode::kInvalidArgument);
  t.gpu = {{0, 0, static_cast<GpuOpKind>(8), 10, 11, 0, f.placeholders[0]}};
  CHECK(code(t) == ErrorCode::kInvalidArgument);
}

TEST_CASE("trace codec: truncation and flipped bytes are kCorrupt or decode to a valid trace, never a crash") {
  const TraceTreeFixture f = MakeTraceTree(7, 10);
  const std::vector<NodeId> ids = StoredIds(f.tree);
  RunTrace tr;
  tr.samples.push_back({f.threads[0], {kTraceEpoch, kTraceEpoch + 1'000'000, kTraceEpoch + 2'000'000},
                        {f.nodes[0], f.nodes[0], f.nodes[3]}});
  tr.samples.push_back({f.threads[2], {kTraceEpoch + 5, kTraceEpoch + 300}, {f.nodes[1], f.nodes[2]}});
  tr.ranges.push_back({f.threads[0], f.ranges[0], kTraceEpoch, kTraceEpoch + 500});
  tr.ranges.push_back({f.threads[2], f.ranges[1], kTraceEpoch + 10, store::kTraceOpenEnd});
  tr.gpu.push_back({0, 3, GpuOpKind::kCopyIn, kTraceEpoch + 7, kTraceEpoch + 90, 4096, f.placeholders[1]});
  tr.gpu.push_back({1, 3, GpuOpKind::kKernel, kTraceEpoch + 8, kTraceEpoch + 800, 0, f.placeholders[0]});
  tr.dropped = 3;
  auto s = store::EncodeTrace(tr, f.tree, ids);
  REQUIRE(s.ok());
  const std::string& p = s->payload;
  const size_t nodes = f.tree.size();
  REQUIRE(store::DecodeTrace(p, nodes).ok());
  // Every proper prefix (the decoder consumes exactly what the counts say).
  for (size_t len = 0; len < p.size(); ++len)
    CHECK(store::DecodeTrace(std::string_view(p).substr(0, len), nodes).status().code() == ErrorCode::kCorrupt);
  CHECK(store::DecodeTrace(p + '\0', nodes).status().code() == ErrorCode::kCorrupt);
  CHECK(store::DecodeTrace(p, nodes + 1).status().code() == ErrorCode::kCorrupt);
  // Every byte changed three ways: whatever is accepted is a valid trace.
  size_t accepted = 0, refused = 0;
  for (size_t i = 0; i < p.size(); ++i)
    for (unsigned char x : {0x01, 0x80, 0xff}) {
      std::string d = p;
      d[i] = static_cast<char>(d[i] ^ x);
      auto r = store::DecodeTrace(d, nodes);
      if (!r.ok()) {
        CHECK(r.status().code() == ErrorCode::kCorrupt);
        ++refused;
        continue;
      }
      ++accepted;
      for (const store::TraceSamples& st : r->samples) {
        CHECK(st.thread < nodes);
        CHECK(std::is_sorted(st.time_ns.begin(), st.time_ns.end()));
        for (NodeId n : st.node) CHECK(n < nodes);
      }
      for (const store::TraceRange& x2 : r->ranges) CHECK((x2.thread < nodes && x2.node < nodes && x2.end_ns >= x2.start_ns));
      for (const store::TraceGpuActivity& g : r->gpu) CHECK((g.node < nodes && g.end_ns >= g.start_ns));
    }
  CHECK(refused > 0);
  CHECK(accepted > 0);  // times and bytes are free: many flips there decode
}

TEST_CASE("trace codec: hand-made damage: counts, ids, order, varints") {
  using store::ByteWriter;
  const size_t nodes = 10;
  auto corrupt = [&](const std::string& payload) {
    auto r = store::DecodeTrace(payload, nodes);
    return !r.ok() && r.status().code() == ErrorCode::kCorrupt;
  };
  auto varints = [](std::initializer_list<uint64_t> v) {
    ByteWriter w;
    for (uint64_t x : v) w.Varint(x);
    return w.Take();
  };
  auto zz = [](int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); };
  // A valid one first: thread 1 with two samples at 100 (node 2) and 105 (node 2).
  const std::string body = varints({zz(100), zz(1), 5, zz(0)});
  REQUIRE(store::DecodeTrace(TracePayload(10, 1, 0, 0, 0, varints({1, 2, body.size()}) + body), nodes).ok());
  // Counts the payload cannot hold: refused before anything is reserved.
  CHECK(corrupt(TracePayload(10, 0, 0, uint64_t{1} << 60, 0, "")));
  CHECK(corrupt(TracePayload(10, 0, 0, 0, uint64_t{1} << 62, "")));
  CHECK(corrupt(TracePayload(10, UINT32_MAX, UINT32_MAX, 0, 0, "")));
  CHECK(corrupt(TracePayload(10, 1, 0, 0, 0, varints({1, uint64_t{1} << 40, body.size()}) + body)));
  CHECK(corrupt(TracePayload(10, 1, 0, 0, 0, varints({1, 2, uint64_t{1} << 50}) + body)));
  // A thread, a sample node beyond the tree.
  CHECK(corrupt(TracePayload(10, 1, 0, 0, 0, varints({10, 2, body.size()}) + body)));
  const std::string far = varints({zz(100), zz(9), 5, zz(0)});  // 1 + 9 = node 10
  CHECK(corrupt(TracePayload(10, 1, 0, 0, 0, varints({1, 2, far.size()}) + far)));
  const std::string below = varints({zz(100), zz(-2), 5, zz(0)});  // node -1
  CHECK(corrupt(TracePayload(10, 1, 0, 0, 0, varints({1, 2, below.size()}) + below)));
  // Times out of order: a step that would pass INT64_MAX (the only way a
  // step can go backwards), a step above INT64_MAX.
  const std::string wrap = varints({zz(INT64_MAX - 3), zz(1), 5, zz(0)});
  CHECK(corrupt(TracePayload(10, 1, 0, 0, 0, varints({1, 2, wrap.size()}) + wrap)));
  const std::string huge = varints({zz(100), zz(1), uint64_t{1} << 63, zz(0)});
  CHECK(corrupt(TracePayload(10, 1, 0, 0, 0, varints({1, 2, huge.size()}) + huge)));
  // Two streams of one thread, streams out of order.
  const std::string one = varints({zz(100), zz(0)});
  CHECK(corrupt(TracePayload(10, 2, 0, 0, 0, varints({3, 1, one.size()}) + one + varints({3, 1, one.size()}) + one)));
  CHECK(corrupt(TracePayload(10, 2, 0, 0, 0, varints({4, 1, one.size()}) + one + varints({3, 1, one.size()}) + one)));
  // A stream body longer than its count says.
  CHECK(corrupt(TracePayload(10, 1, 0, 0, 0, varints({1, 1, body.size()}) + body)));
  // Overlong (0x81 0x00 for 1) and truncated varints; one above 64 bits.
  CHECK(corrupt(TracePayload(10, 1, 0, 0, 0, std::string("\x81\x00", 2) + varints({2, body.size()}) + body)));
  CHECK(corrupt(TracePayload(10, 1, 0, 0, 0, std::string("\x81", 1))));
  CHECK(corrupt(TracePayload(10, 0, 1, 0, 1, std::string(9, '\xff') + "\x02" + varints({3, 1, zz(50), 10, 4096, zz(4)}))));
  CHECK(corrupt(TracePayload(10, 0, 0, 1, 0, varints({1, zz(1), zz(5)}) + std::string(9, '\xff') + "\x02")));
  // Ranges: a closed range ending at INT64_MAX (that value means open), an
  // end past INT64_MAX, a node beyond the tree.
  CHECK(store::DecodeTrace(TracePayload(10, 0, 0, 1, 0, varints({1, zz(1), zz(5), 0})), nodes).ok());
  CHECK(corrupt(TracePayload(10, 0, 0, 1, 0, varints({1, zz(1), zz(INT64_MAX - 4), 5}))));
  CHECK(corrupt(TracePayload(10, 0, 0, 1, 0, varints({1, zz(1), zz(INT64_MAX - 4), 7}))));
  CHECK(corrupt(TracePayload(10, 0, 0, 1, 0, varints({1, zz(9), zz(5), 1}))));
  // GPU: a lane beyond the table, lanes out of order, a lane no activity
  // uses, device ids above 32 bits, a placeholder beyond the tree.
  const std::string lane = varints({0, 3});
  const std::string act = varints({0 << 3 | 1, zz(50), 10, 4096, zz(4)});
  REQUIRE(store::DecodeTrace(TracePayload(10, 0, 1, 0, 1, lane + act), nodes).ok());
  CHECK(corrupt(TracePayload(10, 0, 1, 0, 1, lane + varints({1 << 3 | 1, zz(50), 10, 4096, zz(4)}))));
  CHECK(corrupt(TracePayload(10, 0, 2, 0, 1, varints({0, 3, 0, 3}) + act)));
  CHECK(corrupt(TracePayload(10, 0, 2, 0, 1, varints({0, 3, 0, 4}) + act)));
  CHECK(corrupt(TracePayload(10, 0, 1, 0, 1, varints({uint64_t{1} << 32, 3}) + act)));
  CHECK(corrupt(TracePayload(10, 0, 1, 0, 1, lane + varints({0 << 3 | 1, zz(50), 10, 4096, zz(10)}))));
  // Nothing may follow the last activity; the node count must be the tree's.
  CHECK(corrupt(TracePayload(10, 0, 1, 0, 1, lane + act + "x")));
  CHECK(corrupt(TracePayload(11, 0, 1, 0, 1, lane + act)));
}

TEST_CASE("trace in a database: CreateRun, ReadTrace, UpdateRun, damage stays in the trace") {
  testutil::TempDir dir;
  const std::string path = dir / "trace.db";
  const TraceTreeFixture f = MakeTraceTree(21);
  const RunTrace tr = MakeTrace(f, 9, 50);
  {
    auto db = store::Database::Open(path, store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    store::RunMeta m = TraceMeta("traced"), plain = TraceMeta("plain");
    REQUIRE((*db)->CreateRun(m, &f.tree, nullptr, &tr).ok());
    REQUIRE((*db)->CreateRun(plain, &f.tree).ok());
    RunTrace bad = tr;
    bad.samples[0].node[3] = static_cast<NodeId>(f.tree.size());
    store::RunMeta refused = TraceMeta("refused");
    CHECK((*db)->CreateRun(refused, &f.tree, nullptr, &bad).code() == ErrorCode::kInvalidArgument);
    CHECK((*db)->ListRuns()->size() == 2);  // nothing written for it
    store::RunMeta no_tree = TraceMeta("no tree");
    CHECK((*db)->CreateRun(no_tree, nullptr, nullptr, &tr).code() == ErrorCode::kInvalidArgument);
  }
  auto db = store::Database::Open(path, store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  auto tree = (*db)->ReadTree(1);
  REQUIRE(tree.ok());
  auto read = (*db)->ReadTrace(1);
  REQUIRE(read.ok());
  REQUIRE(read->has_value());
  // The same events on the same nodes, found by path in the read tree.
  CheckSameTrace(ExpectedTrace(tr, TraceByPath(f.tree, *tree)), **read);
  auto none = (*db)->ReadTrace(2);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  CHECK((*db)->ReadTrace(9).status().code() == ErrorCode::kNotFound);
  bool listed = false;
  for (const auto& [kind, bytes] : *(*db)->SectionSizes(1)) listed |= kind == store::SectionKind::kTrace && bytes > 0;
  CHECK(listed);

  // New metadata alone keeps the trace; a new tree without one drops it; a
  // new tree with one replaces it.
  store::RunMeta m = *(*db)->GetRun(1);
  m.name = "renamed";
  REQUIRE((*db)->UpdateMeta(m).ok());
  CHECK((*db)->ReadTrace(1)->has_value());
  REQUIRE((*db)->UpdateRun(m, &f.tree).ok());
  CHECK_FALSE((*db)->ReadTrace(1)->has_value());
  RunTrace small;
  small.samples.push_back({f.threads[2], {5}, {f.nodes[4]}});
  small.dropped = 99;
  REQUIRE((*db)->UpdateRun(m, &f.tree, nullptr, &small).ok());
  auto replaced = (*db)->ReadTrace(1);
  REQUIRE((replaced.ok() && replaced->has_value()));
  CheckSameTrace(ExpectedTrace(small, TraceByPath(f.tree, *(*db)->ReadTree(1))), **replaced);

  // A damaged trace: ReadTrace fails, the tree still reads, check names it.
  REQUIRE((*db)->WriteSection(1, store::Section{store::SectionKind::kTrace, 0, "garbage"}).ok());
  auto damaged = (*db)->ReadTrace(1);
  CHECK(damaged.status().code() == ErrorCode::kCorrupt);
  CHECK(damaged.status().message().find("run 1") != std::string::npos);
  CHECK((*db)->ReadTree(1).ok());
  db->reset();
  auto checked = store::CheckDatabase(path);
  REQUIRE(checked.ok());
  REQUIRE(checked->runs.size() == 2);
  CHECK(checked->runs[0].problem.find("trace") != std::string::npos);
  CHECK(checked->runs[1].problem.empty());
}

TEST_CASE("trace in run files: version 2 only with a trace, validated, gathered into a database") {
  const TraceTreeFixture f = MakeTraceTree(31, 40);
  const RunTrace tr = MakeTrace(f, 4, 30);
  auto run_of = [&](const RunTrace* trace) {
    store::RunFile run;
    run.meta = TraceMeta("proc");
    run.key = trace ? "00000000000000b1" : "00000000000000b2";
    auto sections = store::EncodeRun(run.meta, &f.tree, nullptr, trace);
    REQUIRE(sections.ok());
    run.sections = std::move(sections).value();
    return run;
  };
  auto version_of = [](const std::string& bytes) {
    uint32_t v = 0;
    std::memcpy(&v, bytes.data() + 16, 4);
    return v;
  };
  const std::string traced = store::EncodeRunFile(run_of(&tr)), plain = store::EncodeRunFile(run_of(nullptr));
  CHECK(version_of(traced) == 2);
  CHECK(version_of(plain) == 1);  // what readers from before traces take

  auto decoded = store::DecodeRunFile(traced);
  REQUIRE(decoded.ok());
  // Kind 8 in a version 1 file is refused (that version has no such kind).
  std::string v1 = traced;
  const uint32_t one = 1;
  std::memcpy(v1.data() + 16, &one, 4);
  CHECK(store::DecodeRunFile(v1).status().code() == ErrorCode::kCorrupt);
  // A trace that does not decode (its CRC intact) makes the file unreadable.
  store::RunFile broken = *decoded;
  for (store::Section& s : broken.sections)
    if (s.kind == store::SectionKind::kTrace) s.payload.back() ^= 0x40;
  CHECK(store::DecodeRunFile(store::EncodeRunFile(broken)).status().code() == ErrorCode::kCorrupt);
  store::RunFile twice = *decoded;
  for (const store::Section& s : decoded->sections)
    if (s.kind == store::SectionKind::kTrace) twice.sections.push_back(s);
  CHECK(store::DecodeRunFile(store::EncodeRunFile(twice)).status().code() == ErrorCode::kCorrupt);

  // Gathered (PutRuns, as cct-record does) with a traceless run beside it.
  testutil::TempDir dir;
  auto db = store::Database::Open(dir / "gather.db", store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  std::vector<store::RunFile> runs;
  runs.push_back(std::move(decoded).value());
  runs.push_back(*store::DecodeRunFile(plain));
  REQUIRE((*db)->PutRuns(runs).ok());
  auto read = (*db)->ReadTrace(runs[0].meta.id);
  REQUIRE((read.ok() && read->has_value()));
  CheckSameTrace(ExpectedTrace(tr, TraceByPath(f.tree, *(*db)->ReadTree(runs[0].meta.id))), **read);
  CHECK_FALSE((*db)->ReadTrace(runs[1].meta.id)->has_value());
  // The next checkpoint of the traced run, without a trace, drops it.
  store::RunFile next = run_of(nullptr);
  next.meta.id = runs[0].meta.id;
  std::vector<store::RunFile> again{next};
  REQUIRE((*db)->PutRuns(again).ok());
  CHECK_FALSE((*db)->ReadTrace(runs[0].meta.id)->has_value());
}
