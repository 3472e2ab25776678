// Per-iteration values in the store: the kind-6 section's round trip with
// node ids remapped to the stored (preorder) tree, replacement by UpdateRun,
// bad input, and damaged sections (kCorrupt, never a crash).
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>

#include "cct/tree.h"
#include "store/database.h"
#include "store/iteration_codec.h"
#include "store/lmdb_env.h"
#include "store/tree_codec.h"
#include "tests/test_util.h"

using namespace cct;
using store::Database;
using store::RunIterations;
using store::RunMeta;

namespace {

// A tree built out of preorder (random parents), so the store renumbers.
Tree MakeIterTree(int seed, int nodes = 2000) {
  Tree t;
  t.metrics().RegisterStandard("cputime").value();
  t.metrics().RegisterStandard("gxcopy:h2d").value();
  t.metrics().RegisterStandard("gker:blk_thr").value();  // derived, with additive operands
  std::mt19937 rng(seed);
  std::vector<NodeId> all{kRootNode};
  for (int i = 0; i < nodes; ++i) {
    const NodeId parent = all[rng() % all.size()];
    const FrameKind k = i % 7 == 0 ? FrameKind::kNvtx : FrameKind::kFunction;
    const NodeId n = t.InternChild(parent, t.InternFrame(k, "f" + std::to_string(rng() % 500)));
    all.push_back(n);
  }
  return t;
}

std::string PathOf(const Tree& t, NodeId n) {
  std::string key;
  for (; n != kRootNode; n = t.parent(n))
    key += std::to_string(static_cast<int>(t.kind(n))) + ":" + std::string(t.name(n)) + "/";
  return key;
}

// Iterations with random sparse values on `t`, including repeated nodes in
// a column, zeros, and two columns of the same metric.
RunIterations MakeIterations(const Tree& t, int seed, int count) {
  std::mt19937 rng(seed);
  RunIterations its;
  its.range = "step.*";
  const MetricId cpu = t.metrics().Find("cputime"), bytes = t.metrics().Find("gxcopy:h2d");
  for (int i = 0; i < count; ++i) {
    store::Iteration it;
    it.index = static_cast<uint32_t>(i);
    it.start_ns = 1700000000000000000 + i * 1000000;
    it.duration_ns = 900000 + static_cast<int64_t>(rng() % 1000);
    store::IterationColumn c{cpu, {}, {}}, b{bytes, {}, {}}, c2{cpu, {}, {}};
    for (int k = 0; k < 50; ++k) {
      c.nodes.push_back(static_cast<NodeId>(rng() % t.size()));
      c.values.push_back(static_cast<double>(rng() % 1000) + 0.5);
    }
    c.nodes.push_back(c.nodes.front());  // repeated: summed
    c.values.push_back(1);
    c.nodes.push_back(static_cast<NodeId>(rng() % t.size()));  // zero: dropped
    c.values.push_back(0);
    for (int k = 0; k < 5; ++k) {
      b.nodes.push_back(static_cast<NodeId>(rng() % t.size()));
      b.values.push_back(static_cast<double>(rng() % 100000));
    }
    c2.nodes.push_back(static_cast<NodeId>(rng() % t.size()));  // a second cputime column: merged
    c2.values.push_back(7);
    it.columns = {c, b, c2};
    if (i % 3 == 2) it.columns.clear();  // an iteration with no values at all
    its.iterations.push_back(std::move(it));
  }
  return its;
}

// Values by (metric name, full path): what must survive the store.
using PathValues = std::map<std::pair<std::string, std::string>, double>;
PathValues ByPath(const Tree& t, const store::Iteration& it) {
  PathValues out;
  for (const auto& c : it.columns)
    for (size_t k = 0; k < c.nodes.size(); ++k) out[{t.metrics().Get(c.metric).name, PathOf(t, c.nodes[k])}] += c.values[k];
  for (auto i = out.begin(); i != out.end();) i = i->second == 0 ? out.erase(i) : std::next(i);
  return out;
}

void CheckSameIterations(const Tree& wrote_tree, const RunIterations& wrote, const Tree& read_tree,
                         const RunIterations& read) {
  CHECK(read.range == wrote.range);
  REQUIRE(read.iterations.size() == wrote.iterations.size());
  for (size_t i = 0; i < wrote.iterations.size(); ++i) {
    CAPTURE(i);
    const store::Iteration& a = wrote.iterations[i];
    const store::Iteration& b = read.iterations[i];
    CHECK(b.index == i);
    CHECK(b.start_ns == a.start_ns);
    CHECK(b.duration_ns == a.duration_ns);
    CHECK(ByPath(read_tree, b) == ByPath(wrote_tree, a));
    for (size_t c = 1; c < b.columns.size(); ++c) CHECK(b.columns[c - 1].metric < b.columns[c].metric);
  }
}

RunMeta Meta(const std::string& name) {
  RunMeta m;
  m.name = name;
  m.state = store::RunState::kComplete;
  m.source = "test";
  m.start_time_ns = 1700000000000000000;
  return m;
}

using testutil::Query;

}  // namespace

TEST_CASE("iterations: store round trip with node ids remapped to the stored tree") {
  testutil::TempDir dir;
  const std::string path = dir / "it.db";
  const Tree t = MakeIterTree(1);
  const RunIterations its = MakeIterations(t, 2, 12);
  {
    auto db = Database::Open(path, Database::Mode::kWrite);
    REQUIRE(db.ok());
    RunMeta m = Meta("train");
    REQUIRE((*db)->CreateRun(m, &t, &its).ok());
    CHECK(m.iteration_regex == "step.*");  // filled in from the iterations
    RunMeta plain = Meta("plain");
    REQUIRE((*db)->CreateRun(plain, &t).ok());
  }
  auto db = Database::Open(path, Database::Mode::kRead);
  REQUIRE(db.ok());
  CHECK((*db)->GetRun(1)->iteration_regex == "step.*");
  auto tree = (*db)->ReadTree(1);
  REQUIRE(tree.ok());
  // The store renumbered nodes: the ids it hands back are the read tree's.
  std::vector<NodeId> stored;
  store::EncodeTree(t, &stored);
  bool moved = false;
  for (NodeId n = 0; n < t.size(); ++n) moved |= stored[n] != n;
  REQUIRE(moved);
  auto read = (*db)->ReadIterations(1);
  REQUIRE(read.ok());
  REQUIRE(read->has_value());
  CheckSameIterations(t, its, *tree, **read);
  CHECK((**read).iterations[2].columns.empty());

  // A run without iterations has none; an unknown run is not found.
  auto none = (*db)->ReadIterations(2);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  CHECK((*db)->ReadIterations(9).status().code() == ErrorCode::kNotFound);
  // Storage reports the section.
  bool seen = false;
  auto sizes = (*db)->SectionSizes(1);
  REQUIRE(sizes.ok());
  for (auto [kind, bytes] : *sizes) seen |= kind == store::SectionKind::kIterations && bytes > 0;
  CHECK(seen);
}

TEST_CASE("iterations: a big section is chunked and still round trips") {
  testutil::TempDir dir;
  const std::string path = dir / "big.db";
  const Tree t = MakeIterTree(3, 20000);
  RunIterations its;
  its.range = "iter";
  std::mt19937 rng(4);
  for (uint32_t i = 0; i < 40; ++i) {  // 40 x 4000 entries x 12 B: about 2 MiB
    store::Iteration it;
    it.index = i;
    it.start_ns = i;
    it.duration_ns = 1;
    store::IterationColumn c;
    c.metric = 0;
    for (int k = 0; k < 4000; ++k) {
      c.nodes.push_back(static_cast<NodeId>(rng() % t.size()));
      c.values.push_back(k + 1);
    }
    it.columns.push_back(std::move(c));
    its.iterations.push_back(std::move(it));
  }
  auto db = Database::Open(path, Database::Mode::kWrite);
  REQUIRE(db.ok());
  RunMeta m = Meta("big");
  REQUIRE((*db)->CreateRun(m, &t, &its).ok());
  auto tree = (*db)->ReadTree(m.id);
  auto read = (*db)->ReadIterations(m.id);
  REQUIRE(tree.ok());
  REQUIRE(read.ok());
  REQUIRE(read->has_value());
  CheckSameIterations(t, its, *tree, **read);
}

TEST_CASE("iterations: UpdateRun replaces them, and a tree without iterations removes them") {
  testutil::TempDir dir;
  const std::string path = dir / "up.db";
  auto db = Database::Open(path, Database::Mode::kWrite);
  REQUIRE(db.ok());
  const Tree t1 = MakeIterTree(5, 500);
  const RunIterations a = MakeIterations(t1, 6, 4);
  RunMeta m = Meta("growing");
  m.state = store::RunState::kRecording;
  REQUIRE((*db)->CreateRun(m, &t1, &a).ok());
  {
    auto read = (*db)->ReadIterations(m.id);
    REQUIRE(read.ok());
    REQUIRE(read->has_value());
    CHECK((**read).iterations.size() == 4);
  }
  // A checkpoint: a bigger tree (same prefix grown) and more iterations.
  const Tree t2 = MakeIterTree(5, 3000);
  RunIterations b = MakeIterations(t2, 7, 9);
  b.range = "other";
  m.checkpoints = 1;
  REQUIRE((*db)->UpdateRun(m, &t2, &b).ok());
  {
    auto tree = (*db)->ReadTree(m.id);
    auto read = (*db)->ReadIterations(m.id);
    REQUIRE(tree.ok());
    REQUIRE(read.ok());
    REQUIRE(read->has_value());
    CheckSameIterations(t2, b, *tree, **read);
  }
  // Metadata only: the iterations stay.
  m.state = store::RunState::kComplete;
  REQUIRE((*db)->UpdateMeta(m).ok());
  CHECK((*db)->ReadIterations(m.id)->has_value());
  // A new tree without iterations: the old ones (ids of the old tree) go.
  REQUIRE((*db)->UpdateRun(m, &t1).ok());
  auto gone = (*db)->ReadIterations(m.id);
  REQUIRE(gone.ok());
  CHECK_FALSE(gone->has_value());
  CHECK((*db)->ReadTree(m.id)->size() == t1.size());
  // Zero iterations (the range matched nothing) are stored as such.
  RunIterations empty;
  empty.range = "nomatch";
  REQUIRE((*db)->UpdateRun(m, &t1, &empty).ok());
  auto zero = (*db)->ReadIterations(m.id);
  REQUIRE(zero.ok());
  REQUIRE(zero->has_value());
  CHECK((**zero).iterations.empty());
  CHECK((**zero).range == "nomatch");
}

TEST_CASE("iterations: bad input is refused and nothing is written") {
  testutil::TempDir dir;
  const std::string path = dir / "bad.db";
  auto db = Database::Open(path, Database::Mode::kWrite);
  REQUIRE(db.ok());
  const Tree t = MakeIterTree(8, 100);
  const MetricId derived = t.metrics().Find("gker:blk_thr");
  REQUIRE(derived != kNoMetric);
  auto with = [&](const std::function<void(RunIterations&)>& spoil) {
    RunIterations its = MakeIterations(t, 9, 3);
    spoil(its);
    return its;
  };
  const std::vector<std::pair<std::string, RunIterations>> cases = {
      {"index", with([](RunIterations& i) { i.iterations[1].index = 5; })},
      {"derived metric", with([&](RunIterations& i) { i.iterations[0].columns[0].metric = derived; })},
      {"unknown metric", with([](RunIterations& i) { i.iterations[0].columns[0].metric = 99; })},
      {"node beyond the tree", with([&](RunIterations& i) { i.iterations[0].columns[0].nodes[0] = 100000; })},
      {"nodes and values", with([](RunIterations& i) { i.iterations[0].columns[0].values.pop_back(); })},
  };
  for (const auto& entry : cases) {
    const auto& what = entry.first;
    const auto& its = entry.second;
    CAPTURE(what);
    RunMeta m = Meta(what);
    const Status s = (*db)->CreateRun(m, &t, &its);
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(s.message().find("cannot store iterations") != std::string::npos);
  }
  // Iterations without their tree.
  const RunIterations good = MakeIterations(t, 9, 3);
  RunMeta m = Meta("no tree");
  CHECK((*db)->CreateRun(m, nullptr, &good).code() == ErrorCode::kInvalidArgument);
  CHECK((*db)->ListRuns()->empty());
  // An empty column is ignored whatever its metric (kNoMetric included).
  RunIterations lenient = good;
  lenient.iterations[0].columns.push_back(store::IterationColumn{kNoMetric, {}, {}});
  REQUIRE((*db)->CreateRun(m, &t, &lenient).ok());
  // UpdateRun refuses too, and leaves the run as it was.
  RunIterations bad = good;
  bad.iterations[0].columns[0].nodes[0] = 100000;
  CHECK((*db)->UpdateRun(m, &t, &bad).code() == ErrorCode::kInvalidArgument);
  auto still = (*db)->ReadIterations(m.id);
  REQUIRE(still.ok());
  REQUIRE(still->has_value());
  CHECK((**still).iterations.size() == 3);
}

TEST_CASE("iterations: damaged sections decode to kCorrupt, never a crash") {
  const Tree t = MakeIterTree(10, 300);
  std::vector<NodeId> stored;
  const auto tree_sections = store::EncodeTree(t, &stored);
  auto decoded_tree = store::DecodeTree(tree_sections);
  REQUIRE(decoded_tree.ok());
  const auto section = store::EncodeIterations(MakeIterations(t, 11, 6), t, stored);
  REQUIRE(section.ok());
  CHECK(section->kind == store::SectionKind::kIterations);
  const std::string& payload = section->payload;
  const cct::MetricRegistry& reg = decoded_tree->metrics();
  REQUIRE(store::DecodeIterations(payload, t.size(), reg).ok());
  // Built for another tree.
  CHECK(store::DecodeIterations(payload, t.size() + 1, reg).status().code() == ErrorCode::kCorrupt);
  // Every truncation.
  for (size_t len = 0; len < payload.size(); len += 1 + len / 16) {
    CAPTURE(len);
    auto r = store::DecodeIterations(payload.substr(0, len), t.size(), reg);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kCorrupt);
  }
  CHECK_FALSE(store::DecodeIterations(payload + "x", t.size(), reg).ok());
  // Random bytes changed (valid checksums over inconsistent payloads).
  std::mt19937 rng(12);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string p = payload;
    for (int k = 0; k <= trial % 4; ++k) p[rng() % p.size()] = static_cast<char>(rng());
    auto r = store::DecodeIterations(p, t.size(), reg);  // may succeed (a changed value)
    if (!r.ok()) {
      CHECK(r.status().code() == ErrorCode::kCorrupt);
      continue;
    }
    for (const auto& it : r->iterations)
      for (const auto& c : it.columns) {
        CHECK(c.metric < reg.size());
        CHECK(c.nodes.size() == c.values.size());
        for (NodeId n : c.nodes) CHECK(n < t.size());
      }
  }
  // Targeted: counts far larger than the data.
  for (size_t field : {4, 8, 12}) {
    std::string p = payload;
    const uint32_t huge = 0xFFFFFFF0u;
    std::memcpy(p.data() + field, &huge, 4);
    CHECK(store::DecodeIterations(p, t.size(), reg).status().code() == ErrorCode::kCorrupt);
  }
}

TEST_CASE("iterations: a damaged database gives kCorrupt and exit 2, the tree stays readable") {
  testutil::TempDir dir;
  const std::string good = dir / "good.db";
  const Tree t = MakeIterTree(13, 400);
  const RunIterations its = MakeIterations(t, 14, 5);
  {
    auto db = Database::Open(good, Database::Mode::kWrite);
    REQUIRE(db.ok());
    RunMeta m = Meta("r");
    REQUIRE((*db)->CreateRun(m, &t, &its).ok());
  }
  int rc = 0;
  std::string err;
  Query(good, {"tree", "1@iter=2", "--depth", "1"}, &rc, &err);
  REQUIRE_MESSAGE(rc == 0, err);
  const std::string data = testutil::ReadFileOrDie(good);
  // The iteration section's header: magic "CSEC", version 1, kind 6.
  const std::string magic("CSEC\x01\x00\x06", 7);
  const size_t at = data.find(magic);
  REQUIRE(at != std::string::npos);

  // A flipped payload byte: the checksum catches it.
  {
    const std::string p = dir / "flipped.db";
    std::string b = data;
    b[at + store::kSectionHeaderSize + 20] ^= 0x01;
    testutil::WriteFileOrDie(p, b);
    auto db = Database::Open(p, Database::Mode::kRead);
    REQUIRE(db.ok());
    auto r = (*db)->ReadIterations(1);
    CHECK(r.status().code() == ErrorCode::kCorrupt);
    CHECK(r.status().message().find("damaged: run 1") != std::string::npos);
    CHECK((*db)->ReadTree(1).ok());  // the run's own profile is still there
    db->reset();
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"tree", "1@iter=1"}, {"iterations", "1"}, {"show", "1"}}) {
      CAPTURE(args[0]);
      const std::string out = Query(p, args, &rc, &err);
      CHECK(rc == 2);
      CHECK(out.empty());
      CHECK(testutil::LineCount(err) == 1);
      CHECK(err.find("damaged") != std::string::npos);
    }
    Query(p, {"tree", "1"}, &rc, &err);
    CHECK(rc == 0);
  }
  // A damaged header (bad magic), and a header whose length is too long.
  for (size_t offset : {size_t{0}, size_t{12}}) {
    const std::string p = dir / ("header" + std::to_string(offset) + ".db");
    std::string b = data;
    b[at + offset + 3] ^= 0x10;
    testutil::WriteFileOrDie(p, b);
    auto db = Database::Open(p, Database::Mode::kRead);
    REQUIRE(db.ok());
    CHECK((*db)->ReadIterations(1).status().code() == ErrorCode::kCorrupt);
  }
  // Valid checksums over a section that does not fit the tree (written as a
  // raw section, as a damaged or foreign writer might).
  {
    const std::string p = dir / "misfit.db";
    std::filesystem::copy_file(good, p);
    auto db = Database::Open(p, Database::Mode::kWrite);
    REQUIRE(db.ok());
    const Tree other = MakeIterTree(15, 50);
    std::vector<NodeId> ids;
    store::EncodeTree(other, &ids);
    auto s = store::EncodeIterations(MakeIterations(other, 16, 2), other, ids);
    REQUIRE(s.ok());
    REQUIRE((*db)->WriteSection(1, *s).ok());
    auto r = (*db)->ReadIterations(1);
    CHECK(r.status().code() == ErrorCode::kCorrupt);
    CHECK(r.status().message().find("nodes") != std::string::npos);
    REQUIRE((*db)->WriteSection(1, store::Section{store::SectionKind::kIterations, 0, "garbage"}).ok());
    CHECK((*db)->ReadIterations(1).status().code() == ErrorCode::kCorrupt);
    db->reset();
    Query(p, {"tree", "1@iter=1"}, &rc, &err);
    CHECK(rc == 2);
    CHECK(testutil::LineCount(err) == 1);
  }
  // A missing chunk of a chunked iteration section.
  {
    const std::string p = dir / "chunks.db";
    const Tree big = MakeIterTree(17, 5000);
    RunIterations many;
    for (uint32_t i = 0; i < 30; ++i) {
      store::Iteration it;
      it.index = i;
      store::IterationColumn c;
      for (NodeId n = 0; n < big.size(); ++n) {
        c.nodes.push_back(n);
        c.values.push_back(1.0 + i);
      }
      it.columns.push_back(std::move(c));
      many.iterations.push_back(std::move(it));
    }
    {
      auto db = Database::Open(p, Database::Mode::kWrite);
      REQUIRE(db.ok());
      RunMeta m = Meta("big");
      REQUIRE((*db)->CreateRun(m, &big, &many).ok());
      REQUIRE((*db)->ReadIterations(1).ok());
    }
    {
      auto env = store::LmdbEnv::Open(p, store::LmdbEnv::Mode::kReadWrite);
      REQUIRE(env.ok());
      REQUIRE(store::WithWriteTxn(**env, [](store::LmdbTxn& txn) {
                auto dbi = txn.OpenDb("blobs", false);
                if (!dbi.ok()) return dbi.status();
                // run 1, kind 6, arg 0, chunk 1
                const std::string key("\x00\x00\x00\x01\x06\x00\x00\x00\x00\x00\x01", 11);
                return txn.Delete(**dbi, key);
              }).ok());
    }
    auto db = Database::Open(p, Database::Mode::kRead);
    REQUIRE(db.ok());
    auto r = (*db)->ReadIterations(1);
    CHECK(r.status().code() == ErrorCode::kCorrupt);
    CHECK(r.status().message().find("missing chunks") != std::string::npos);
    CHECK((*db)->ReadTree(1).ok());
  }
  // Random corruption of the whole file: never a crash, never a hang.
  std::mt19937 rng(18);
  for (int trial = 0; trial < 15; ++trial) {
    std::string b = data;
    for (int k = 0; k < 8; ++k) b[at + rng() % (data.size() - at)] = static_cast<char>(rng());
    const std::string p = dir / ("fuzz" + std::to_string(trial) + ".db");
    testutil::WriteFileOrDie(p, b);
    for (const char* cmd : {"iterations", "tree"}) {
      auto r = testutil::Run({testutil::Tool("cct-query"), "-d", p, cmd, cmd[0] == 'i' ? "1" : "1@iter=3"}, {}, 30);
      CAPTURE(trial);
      CHECK_FALSE(r.timed_out);
      CHECK(r.signal == 0);
      CHECK((r.exit_code == 0 || r.exit_code == 2));
      if (r.exit_code == 2) CHECK(testutil::LineCount(r.err) == 1);
    }
  }
}
