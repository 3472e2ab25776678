#include <doctest/doctest.h>
#include <malloc.h>

#include <cmath>
#include <map>
#include <random>

#include "cct/node_values.h"
#include "cct/tree.h"
#include "cct/tree_ops.h"

using namespace cct;

namespace {

// Builds root -> main -> {compute -> kernel_a, io}, main -> compute via
// another path, with cputime values chosen so sums are easy to check by hand.
struct Example {
  Tree tree;
  MetricId cpu = 0;
  NodeId main = 0, compute = 0, work = 0, io = 0, compute2 = 0;

  Example() {
    cpu = tree.metrics().RegisterStandard("cputime").value();
    const FrameId f_main = tree.InternFrame(FrameKind::kFunction, "main", "/bin/app");
    const FrameId f_compute = tree.InternFrame(FrameKind::kFunction, "compute", "/usr/lib/libm.so.6");
    const FrameId f_work = tree.InternFrame(FrameKind::kFunction, "work", "/bin/app");
    const FrameId f_io = tree.InternFrame(FrameKind::kFunction, "io", "/bin/app");
    main = tree.InternChild(kRootNode, f_main);
    compute = tree.InternChild(main, f_compute);
    work = tree.InternChild(compute, f_work);
    io = tree.InternChild(main, f_io);
    compute2 = tree.InternChild(io, f_compute);
    tree.AddValue(main, cpu, 1);
    tree.AddValue(compute, cpu, 10);
    tree.AddValue(work, cpu, 100);
    tree.AddValue(io, cpu, 1000);
    tree.AddValue(compute2, cpu, 10000);
  }
};

}  // namespace

TEST_CASE("InternChild returns the same node for the same parent and frame") {
  Example ex;
  Tree& t = ex.tree;
  const FrameId f_compute = t.frame_id(ex.compute);
  CHECK(t.InternChild(ex.main, f_compute) == ex.compute);
  CHECK(t.InternChild(ex.io, f_compute) == ex.compute2);
  CHECK(ex.compute != ex.compute2);  // same frame, other parent: another node
  CHECK(t.size() == 6);
  CHECK(t.FindChild(ex.main, t.frame_id(ex.work)) == kNoNode);
  // Equal frames intern to one id.
  CHECK(t.InternFrame(FrameKind::kFunction, "compute", "/usr/lib/libm.so.6") == f_compute);
  CHECK(t.InternFrame(FrameKind::kKernel, "compute", "/usr/lib/libm.so.6") != f_compute);
  for (NodeId n = 1; n < t.size(); ++n) CHECK(t.parent(n) < n);
}

TEST_CASE("inclusive values are subtree sums") {
  Example ex;
  NodeValues v(ex.tree);
  const auto& inc = v.Inclusive(ex.cpu);
  const auto& exc = v.Exclusive(ex.cpu);
  CHECK(exc[ex.compute] == 10);
  CHECK(inc[ex.work] == 100);
  CHECK(inc[ex.compute] == 110);
  CHECK(inc[ex.io] == 11000);
  CHECK(inc[ex.main] == 11111);
  CHECK(inc[kRootNode] == 11111);
  CHECK(v.Total(ex.cpu) == 11111);
}

TEST_CASE("derived metrics evaluate from inclusive accumulators") {
  Tree t;
  const MetricId blk = t.metrics().RegisterStandard("gker:blk_thr").value();
  const MetricId acc = t.metrics().Find("gker:blk_thr_acc");
  const MetricId count = t.metrics().Find("gker:count");
  REQUIRE(acc != kNoMetric);
  REQUIRE(count != kNoMetric);
  CHECK(t.metrics().Get(blk).kind == MetricKind::kDerived);
  const NodeId a = t.InternChild(kRootNode, t.InternFrame(FrameKind::kFunction, "a"));
  const NodeId k1 = t.InternChild(a, t.InternFrame(FrameKind::kKernel, "k1"));
  const NodeId k2 = t.InternChild(a, t.InternFrame(FrameKind::kKernel, "k2"));
  // k1: 3 launches of 256 threads per block; k2: 1 launch of 1024.
  t.AddValue(k1, count, 3);
  t.AddValue(k1, acc, 3 * 256);
  t.AddValue(k2, count, 1);
  t.AddValue(k2, acc, 1024);
  NodeValues v(t);
  CHECK(v.Inclusive(blk)[k1] == 256);
  CHECK(v.Inclusive(blk)[k2] == 1024);
  CHECK(v.Inclusive(blk)[a] == doctest::Approx((3 * 256 + 1024) / 4.0));
  CHECK(v.Exclusive(blk)[a] == 0);  // no launches of its own: no value
  // The gpuop sum over GPU times.
  const MetricId gpuop = t.metrics().RegisterStandard("gpuop").value();
  t.AddValue(k1, t.metrics().Find("gker"), 50);
  t.AddValue(a, t.metrics().Find("gsync"), 7);
  NodeValues v2(t);
  CHECK(v2.Inclusive(gpuop)[a] == 57);
  CHECK(v2.Exclusive(gpuop)[k1] == 50);
}

TEST_CASE("metric registry rejects conflicts and bad formulas") {
  MetricRegistry r;
  CHECK(r.Register({"x", Unit::kBytes, MetricKind::kAdditive, "", ""}).ok());
  CHECK(r.Register({"x", Unit::kBytes, MetricKind::kAdditive, "", ""}).value() == 0);
  CHECK_FALSE(r.Register({"x", Unit::kNanoseconds, MetricKind::kAdditive, "", ""}).ok());
  CHECK_FALSE(r.Register({"y", Unit::kNone, MetricKind::kDerived, "", "x / missing"}).ok());
  CHECK_FALSE(r.Register({"y", Unit::kNone, MetricKind::kDerived, "", "x / (2"}).ok());
  CHECK_FALSE(r.Register({"z", Unit::kNone, MetricKind::kAdditive, "", "x"}).ok());
  CHECK(r.Register({"y", Unit::kNone, MetricKind::kDerived, "", "x / 2"}).ok());
  CHECK_FALSE(r.RegisterStandard("no-such-metric").ok());
}

TEST_CASE("a formula over derived metrics is inlined: registered formulas read additive metrics only") {
  MetricRegistry r;
  const MetricId x = r.Register({"x", Unit::kBytes, MetricKind::kAdditive, "", ""}).value();
  const MetricId n = r.Register({"n", Unit::kCount, MetricKind::kAdditive, "", ""}).value();
  REQUIRE(r.Register({"y", Unit::kBytes, MetricKind::kDerived, "", "x / n"}).ok());
  auto w = r.Register({"w", Unit::kNone, MetricKind::kDerived, "", "y * 2 + y - n"});
  REQUIRE(w.ok());
  CHECK(r.Get(*w).formula == "y * 2 + y - n");  // the text as written
  const std::vector<MetricId>& ops = r.operand_ids(*w);
  CHECK(ops == std::vector<MetricId>{x, n});
  // x = 12, n = 4: y = 3, w = 3 * 2 + 3 - 4 = 5.
  const double v = r.formula(*w)->Eval([&](size_t i) { return ops[i] == x ? 12.0 : 4.0; });
  CHECK(v == 5);
}

TEST_CASE("metric definitions: NAME=EXPR, unit inferred from the formula, clear errors") {
  MetricRegistry r;
  REQUIRE(r.Register({"cputime", Unit::kNanoseconds, MetricKind::kAdditive, "", ""}).ok());
  REQUIRE(r.Register({"gker", Unit::kNanoseconds, MetricKind::kAdditive, "", ""}).ok());
  REQUIRE(r.Register({"gker:count", Unit::kCount, MetricKind::kAdditive, "", ""}).ok());
  REQUIRE(r.Register({"inst", Unit::kCount, MetricKind::kAdditive, "", ""}).ok());
  REQUIRE(r.Register({"bytes", Unit::kBytes, MetricKind::kAdditive, "", ""}).ok());
  struct Case {
    const char* spec;
    Unit unit;
  };
  for (const Case& c : std::vector<Case>{
           {"total=cputime + gker", Unit::kNanoseconds},          // sum of one unit
           {"per_launch=gker / {gker:count}", Unit::kNanoseconds},  // per-event average
           {"ratio=gker / cputime", Unit::kNone},                // ratio of one unit
           {"ipc=inst / gker:count", Unit::kNone},               // count / count
           {"twice = 2 * cputime", Unit::kNanoseconds},          // scaled
           {"half=cputime / 2", Unit::kNanoseconds},
           {"mixed=cputime + bytes", Unit::kNone},               // mixing units has none
           {"bw=bytes / cputime", Unit::kNone},
           {"m=max(cputime, gker) - 1", Unit::kNanoseconds},
           {"k=3", Unit::kNone},
       }) {
    CAPTURE(c.spec);
    auto id = r.Define(c.spec);
    REQUIRE(id.ok());
    CHECK(r.Get(*id).unit == c.unit);
    CHECK(r.Get(*id).kind == MetricKind::kDerived);
    CHECK(r.Get(*id).name == std::string(MetricRegistry::DefinedName(c.spec)));
  }
  CHECK(MetricRegistry::DefinedName("twice = 2 * cputime") == "twice");
  CHECK(MetricRegistry::IsDefinition("a=b"));
  CHECK_FALSE(MetricRegistry::IsDefinition("gker:count"));
  // A definition may read another: per_launch is inlined.
  auto dd = r.Define("per_launch_ms=per_launch / 1000000");
  REQUIRE(dd.ok());
  CHECK(r.Get(*dd).unit == Unit::kNanoseconds);
  for (MetricId op : r.operand_ids(*dd)) CHECK(r.Get(op).kind == MetricKind::kAdditive);

  auto err = [&](const char* spec, const char* expect) {
    auto id = r.Define(spec);
    REQUIRE_FALSE(id.ok());
    CHECK_MESSAGE(id.status().message().find(expect) != std::string::npos, id.status().message());
  };
  err("cputime=gker", "already has a metric 'cputime'");
  err("=gker", "must be a word");
  err("a b=gker", "must be a word");
  err("9x=gker", "must be a word");
  err("x=nosuch * 2", "reads 'nosuch', which this run does not have; it has: cputime, gker");
  err("x=gker *", "formula 'gker *'");
}

TEST_CASE("formula precedence, functions and division by zero") {
  auto eval = [](const char* text, std::map<std::string, double> vars) {
    auto f = Formula::Parse(text);
    REQUIRE(f.ok());
    return f->Eval([&](size_t i) { return vars[f->operands()[i]]; });
  };
  CHECK(eval("1 + 2 * 3", {}) == 7);
  CHECK(eval("(1 + 2) * 3", {}) == 9);
  CHECK(eval("-a - -b", {{"a", 2}, {"b", 5}}) == 3);
  CHECK(eval("{gker:count} / 2", {{"gker:count", 8}}) == 4);
  CHECK(eval("gker:blk_thr_acc / gker:count", {{"gker:blk_thr_acc", 512}, {"gker:count", 2}}) == 256);
  CHECK(eval("max(a, b) - min(a, b)", {{"a", 2}, {"b", 9}}) == 7);
  CHECK(eval("10 / 4 / 5", {}) == doctest::Approx(0.5));
  CHECK(std::isnan(eval("a / b", {{"a", 1}, {"b", 0}})));
  CHECK_FALSE(Formula::Parse("1 +").ok());
  CHECK_FALSE(Formula::Parse("a b").ok());
  CHECK_FALSE(Formula::Parse("{}").ok());
  CHECK_FALSE(Formula::Parse(std::string(100, '(') + "1" + std::string(100, ')')).ok());
}

TEST_CASE("path identity: frames from the root, without addresses, paths or library versions") {
  Example ex;
  Tree& t = ex.tree;
  const std::string id = PathIdentity(t, ex.work);
  // Three frames, separated by newlines.
  CHECK(std::count(id.begin(), id.end(), '\n') == 2);
  CHECK(id.find("libm.so") != std::string::npos);
  CHECK(id.find("libm.so.6") == std::string::npos);
  CHECK(id.find("/usr/lib") == std::string::npos);
  CHECK(ModuleIdentity("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05") == "libcuda.so");
  CHECK(ModuleIdentity("app") == "app");
  // The same path built in another tree, with modules at other places and
  // frames interned in another order, has the same identity.
  Tree other;
  const FrameId io = other.InternFrame(FrameKind::kFunction, "io", "/opt/x/app");
  const FrameId main = other.InternFrame(FrameKind::kFunction, "main", "/opt/x/app");
  const FrameId compute = other.InternFrame(FrameKind::kFunction, "compute", "/lib/libm.so.7");
  const FrameId work = other.InternFrame(FrameKind::kFunction, "work", "/opt/x/app");
  (void)io;
  const NodeId w = other.InternChild(other.InternChild(other.InternChild(kRootNode, main), compute), work);
  CHECK(PathIdentity(other, w) == id);
  CHECK(PathIdentity(t, ex.compute) != PathIdentity(t, ex.compute2));
  CHECK(PathNames(t, ex.work) == std::vector<std::string>{"main", "compute", "work"});
}

TEST_CASE("MergeInto unions trees by path identity and scales values") {
  Example a, b;
  // b gets an extra node and a different value at a shared node.
  const NodeId extra = b.tree.InternChild(b.main, b.tree.InternFrame(FrameKind::kFunction, "extra", "/bin/app"));
  b.tree.AddValue(extra, b.cpu, 5);
  Tree merged;
  REQUIRE(MergeInto(merged, a.tree).ok());
  std::vector<NodeId> map;
  REQUIRE(MergeInto(merged, b.tree, 0.5, &map).ok());
  CHECK(merged.size() == 7);  // root + 5 shared + extra
  NodeValues v(merged);
  const MetricId cpu = merged.metrics().Find("cputime");
  CHECK(v.Exclusive(cpu)[map[b.work]] == 150);  // 100 + 0.5*100
  CHECK(v.Exclusive(cpu)[map[extra]] == 2.5);
  CHECK(v.Total(cpu) == doctest::Approx(11111 + 0.5 * (11111 + 5)));
  // Units must agree.
  Tree c;
  REQUIRE(c.metrics().Register({"cputime", Unit::kBytes, MetricKind::kAdditive, "", ""}).ok());
  CHECK_FALSE(MergeInto(merged, c).ok());
}

TEST_CASE("FoldKind moves line nodes into their functions") {
  Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const NodeId f = t.InternChild(kRootNode, t.InternFrame(FrameKind::kFunction, "f"));
  const NodeId l1 = t.InternChild(f, t.InternFrame(FrameKind::kLine, "a.c:10", "", "a.c", 10));
  const NodeId l2 = t.InternChild(f, t.InternFrame(FrameKind::kLine, "a.c:11", "", "a.c", 11));
  const NodeId g = t.InternChild(f, t.InternFrame(FrameKind::kFunction, "g"));
  const NodeId l3 = t.InternChild(g, t.InternFrame(FrameKind::kLine, "a.c:20", "", "a.c", 20));
  t.AddValue(l1, cpu, 3);
  t.AddValue(l2, cpu, 4);
  t.AddValue(f, cpu, 1);
  t.AddValue(l3, cpu, 9);
  CHECK(HasKind(t, FrameKind::kLine));
  std::vector<NodeId> map;
  Tree folded = Rebuild(t, [](Tree& d, FrameId fr) { return d.frames().kind(fr) == FrameKind::kLine ? kFoldFrame : fr; },
                        false, &map);
  CHECK(folded.size() == 3);
  CHECK(map[l1] == map[f]);
  CHECK(folded.Value(map[f], cpu) == 8);
  CHECK(folded.Value(map[g], cpu) == 9);
  CHECK(FoldKind(t, FrameKind::kLine).size() == 3);
}

TEST_CASE("FoldNodes folds marked nodes into their nearest kept ancestor, merging children by frame") {
  // root -> main(1) -> {compute(10) -> work(100), io(1000) -> compute(10000)}.
  Example ex;
  std::vector<char> fold(ex.tree.size(), 0);
  fold[ex.io] = 1;  // io's value goes to main; its compute merges with main's compute
  std::vector<NodeId> map;
  Tree t = FoldNodes(ex.tree, fold, &map);
  CHECK(t.size() == 4);  // root, main, compute, work
  CHECK(map[ex.io] == map[ex.main]);
  CHECK(map[ex.compute2] == map[ex.compute]);
  CHECK(t.Value(map[ex.main], ex.cpu) == 1 + 1000);
  CHECK(t.Value(map[ex.compute], ex.cpu) == 10 + 10000);
  CHECK(t.Value(map[ex.work], ex.cpu) == 100);
  CHECK(t.parent(map[ex.work]) == map[ex.compute]);
  CHECK(NodeValues(t).Total(ex.cpu) == 11111);
  // A chain folded at two levels: work's value skips both to main; the
  // root's own entry is ignored.
  std::fill(fold.begin(), fold.end(), 0);
  fold[kRootNode] = fold[ex.compute] = fold[ex.work] = 1;
  Tree u = FoldNodes(ex.tree, fold, &map);
  CHECK(u.size() == 4);  // root, main, io, io/compute
  CHECK(u.Value(map[ex.main], ex.cpu) == 111);
  CHECK(u.Value(map[ex.compute2], ex.cpu) == 10000);
  CHECK(map[ex.work] == map[ex.main]);
}

TEST_CASE("Rebuild folds direct recursion") {
  Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const FrameId fr = t.InternFrame(FrameKind::kFunction, "rec");
  NodeId n = t.InternChild(kRootNode, t.InternFrame(FrameKind::kFunction, "main"));
  for (int i = 0; i < 40; ++i) {
    n = t.InternChild(n, fr);
    t.AddValue(n, cpu, 1);
  }
  Tree folded = Rebuild(t, [](Tree&, FrameId f) { return f; }, /*fold_recursion=*/true);
  CHECK(folded.size() == 3);  // root, main, rec
  NodeValues v(folded);
  CHECK(v.Total(cpu) == 40);
}

TEST_CASE("sparse columns stay exact through densification") {
  SparseColumn c;
  std::map<NodeId, double> expect;
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const NodeId n = rng() % 30000;
    const double v = static_cast<double>(rng() % 100);
    c.Add(n, v);
    expect[n] += v;
  }
  for (const auto& e : expect) CHECK_MESSAGE(c.Get(e.first) == e.second, "node " << e.first);
  CHECK(c.Get(31000) == 0);
  double sum = 0, want = 0;
  c.ForEach([&](NodeId, double v) { sum += v; });
  for (const auto& [n, v] : expect) want += v;
  CHECK(sum == want);
}

TEST_CASE("string and frame tables intern and reject damaged columns") {
  StringTable s;
  CHECK(s.Intern("") == 0);
  const StringId a = s.Intern("alpha");
  CHECK(s.Intern("alpha") == a);
  CHECK(s.Get(a) == "alpha");
  CHECK(s.Find("beta") == FlatIndex::kNone);
  CHECK_FALSE(s.Assign({0, 5, 3}, "abcde"));      // decreasing offsets
  CHECK_FALSE(s.Assign({0, 0, 9}, "abc"));        // beyond the characters
  CHECK_FALSE(s.Assign({0, 1}, "x"));             // id 0 must be empty
  REQUIRE(s.Assign({0, 0, 2, 5}, "abcde"));
  CHECK(s.Get(1) == "ab");
  CHECK(s.Find("cde") == 2);  // index rebuilt after Assign
  CHECK(s.Intern("new") == 3);
}

TEST_CASE("FlatIndex finds every id among many with colliding hashes") {
  FlatIndex idx;
  std::vector<uint64_t> keys;
  for (uint32_t i = 0; i < 100000; ++i) {
    keys.push_back(MixHash(i) & 0xffff00000000ffffULL);  // many collisions in the folded hash
    idx.Insert(keys.back(), i);
  }
  for (uint32_t i = 0; i < keys.size(); i += 97)
    CHECK(idx.Find(keys[i], [&](uint32_t id) { return id == i; }) == i);
  CHECK(idx.Find(12345, [](uint32_t) { return false; }) == FlatIndex::kNone);
}

TEST_CASE("a 10^6-node tree with one metric fits in 100 MB") {
  // Measured two ways: the tree's own accounting, and what malloc handed out.
  const size_t before = mallinfo2().uordblks + mallinfo2().hblkhd;
  size_t tree_bytes = 0, heap_bytes = 0;
  {
    Tree t;
    const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
    std::vector<FrameId> frames;
    for (int i = 0; i < 5000; ++i) frames.push_back(t.InternFrame(FrameKind::kFunction, "function_" + std::to_string(i), "libx.so"));
    std::mt19937 rng(1);
    std::vector<NodeId> recent{kRootNode};
    while (t.size() < 1000000) {
      const NodeId parent = recent[rng() % recent.size()];
      const NodeId n = t.InternChild(parent, frames[rng() % frames.size()]);
      t.AddValue(n, cpu, 1000);
      if (recent.size() < 64) recent.push_back(n);
      else recent[rng() % 64] = n;
    }
    tree_bytes = t.MemoryBytes();
    heap_bytes = mallinfo2().uordblks + mallinfo2().hblkhd - before;
    MESSAGE("10^6 nodes: tree accounts " << tree_bytes / 1e6 << " MB, heap grew " << heap_bytes / 1e6 << " MB");
  }
  CHECK(tree_bytes <= 100u * 1000 * 1000);
  CHECK(heap_bytes <= 100u * 1000 * 1000);
}

TEST_CASE("metric registry: a name that is not valid UTF-8 is refused (stored metric tables are JSON)") {
  cct::MetricRegistry m;
  CHECK_FALSE(m.Register({"a\xff", cct::Unit::kCount, cct::MetricKind::kAdditive, "", ""}).ok());
  CHECK_FALSE(m.Register({"\xed\xa0\x80", cct::Unit::kCount, cct::MetricKind::kAdditive, "", ""}).ok());  // a surrogate
  CHECK(m.Register({"λ:acc", cct::Unit::kCount, cct::MetricKind::kAdditive, "", ""}).ok());
}

// A random tree (parents drawn among earlier nodes), checked against counts
// made by brute force from the parent array alone.
TEST_CASE("BuildChildren and LevelsBelow agree with brute force on random trees") {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    Tree t;
    const int n = 1 + static_cast<int>(rng() % 600);
    std::vector<FrameId> frames;
    for (int f = 0; f < 40; ++f) frames.push_back(t.InternFrame(FrameKind::kFunction, "f" + std::to_string(f)));
    for (int i = 1; i < n; ++i) {
      // Mostly below recent nodes (chains), sometimes anywhere (fan-out).
      const NodeId size = static_cast<NodeId>(t.size());
      const NodeId p = rng() % 4 == 0 ? static_cast<NodeId>(rng() % size) : size - 1 - static_cast<NodeId>(rng() % std::min<NodeId>(size, 3));
      t.InternChild(p, frames[rng() % frames.size()]);
    }
    const Children c = BuildChildren(t);
    REQUIRE(c.offsets.size() == t.size() + 1);
    std::vector<uint32_t> depth(t.size(), 0);
    for (NodeId v = 1; v < t.size(); ++v) {
      NodeId a = v;
      while (a != kRootNode) a = t.parent(a), ++depth[v];
    }
    for (NodeId v = 0; v < t.size(); ++v) {
      std::vector<NodeId> want;
      for (NodeId u = 1; u < t.size(); ++u)
        if (t.parent(u) == v) want.push_back(u);
      CHECK(std::vector<NodeId>(c.begin(v), c.end(v)) == want);
    }
    const uint32_t deepest = *std::max_element(depth.begin(), depth.end());
    for (int probe = 0; probe < 10; ++probe) {
      const NodeId top = static_cast<NodeId>(rng() % t.size());
      for (size_t limit : {size_t{0}, size_t{1}, size_t{2}, size_t{5}, SIZE_MAX})
        CHECK(LevelsBelow(t, top, limit) == std::min<size_t>(deepest - depth[top], limit));
    }
  }
}
