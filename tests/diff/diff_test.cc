// The diff engine on hand-built trees: union semantics, normalization,
// recursion folding, verdict thresholds, groups and statistics, metric
// resolution, and input selection. Expected values follow from each tree's
// construction (written in the comments).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>

#include "cct/node_values.h"
#include "cct/tree.h"
#include "cct/tree_ops.h"
#include "diff/align.h"
#include "diff/diff.h"
#include "diff/inputs.h"
#include "store/database.h"
#include "tests/test_util.h"

using cct::FrameKind;
using cct::NodeId;
using cct::Tree;
using diff::NodeStatus;
using diff::Verdict;

namespace {

struct EngineStack {
  std::string path;  // "main;a;x"
  double value;
};

// A tree from folded-style stacks of function frames; values are exclusive.
Tree Build(const std::vector<EngineStack>& stacks, const std::string& metric = "work", cct::Unit unit = cct::Unit::kCount) {
  Tree t;
  cct::MetricDesc d;
  d.name = metric;
  d.unit = unit;
  const cct::MetricId m = t.metrics().Register(d).value();
  for (const EngineStack& s : stacks) {
    NodeId n = cct::kRootNode;
    std::istringstream in(s.path);
    std::string frame;
    while (std::getline(in, frame, ';')) n = t.InternChild(n, t.InternFrame(FrameKind::kFunction, frame));
    t.AddValue(n, m, s.value);
  }
  return t;
}

diff::Side Single(Tree t, const std::string& label = "run") {
  diff::Side s;
  s.label = label;
  s.runs.push_back(diff::RunTree{label, 0, std::move(t)});
  return s;
}

diff::Side Group(std::vector<Tree> trees) {
  diff::Side s;
  s.group = true;
  s.label = "group";
  for (size_t i = 0; i < trees.size(); ++i)
    s.runs.push_back(diff::RunTree{"run " + std::to_string(i + 1), static_cast<uint32_t>(i + 1), std::move(trees[i])});
  return s;
}

diff::DiffResult Diff(Tree base, Tree cand, diff::DiffOptions o = {}) {
  auto r = diff::Compare(Single(std::move(base)), Single(std::move(cand)), o);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return std::move(r).value();
}

// The union node with these display names from the root, or kNoNode.
NodeId Find(const diff::DiffResult& r, const std::vector<std::string>& path) {
  for (NodeId n = 1; n < r.size(); ++n)
    if (r.Path(n) == path) return n;
  return cct::kNoNode;
}

diff::DiffOptions NoMinAbs() {
  diff::DiffOptions o;
  o.min_abs = {false, 0};
  return o;
}

}  // namespace

TEST_CASE("diff engine: the union keeps every node, marked both, gone or new") {
  // base: main(5) -> a -> x(10); main -> b(20)      main incl 35
  // cand: main(5) -> a -> y(30); main -> c(7)       main incl 42
  const auto r = Diff(Build({{"main;a;x", 10}, {"main;b", 20}, {"main", 5}}),
                      Build({{"main;a;y", 30}, {"main;c", 7}, {"main", 5}}));
  CHECK(r.size() == 7);  // root, main, a, x, b, y, c
  const NodeId main = Find(r, {"main"}), a = Find(r, {"main", "a"}), x = Find(r, {"main", "a", "x"}),
               b = Find(r, {"main", "b"}), y = Find(r, {"main", "a", "y"}), c = Find(r, {"main", "c"});
  for (NodeId n : {main, a, x, b, y, c}) REQUIRE(n != cct::kNoNode);
  CHECK(r.status(main) == NodeStatus::kBoth);
  CHECK(r.status(a) == NodeStatus::kBoth);
  CHECK(r.status(x) == NodeStatus::kGone);
  CHECK(r.status(b) == NodeStatus::kGone);
  CHECK(r.status(y) == NodeStatus::kNew);
  CHECK(r.status(c) == NodeStatus::kNew);

  const diff::MetricDiff& m = r.metrics().front();
  CHECK(m.name == "work");
  CHECK(m.base_inc[cct::kRootNode] == 35);
  CHECK(m.cand_inc[cct::kRootNode] == 42);
  CHECK(m.base_inc[main] == 35);
  CHECK(m.cand_inc[main] == 42);
  CHECK(m.base_exc[main] == 5);
  CHECK(m.cand_exc[main] == 5);
  CHECK(m.base_inc[a] == 10);
  CHECK(m.cand_inc[a] == 30);
  CHECK(m.base_exc[a] == 0);
  // Gone and new nodes keep their values on their side, 0 on the other.
  CHECK(m.base_inc[x] == 10);
  CHECK(m.cand_inc[x] == 0);
  CHECK(m.base_inc[y] == 0);
  CHECK(m.cand_inc[y] == 30);
  CHECK(r.Change(0, x) == -1);
  CHECK(std::isinf(r.Change(0, y)));
  CHECK(r.Change(0, y) > 0);
  CHECK(!r.Ratio(0, y).has_value());
  CHECK(*r.Ratio(0, x) == 0);
  CHECK(*r.Ratio(0, main) == doctest::Approx(42.0 / 35));
  for (NodeId n = 0; n < r.size(); ++n) {
    CHECK(std::isfinite(m.base_inc[n]));
    CHECK(std::isfinite(m.cand_inc[n]));
  }
  CHECK(!r.tested());
  CHECK(std::isnan(r.PValue(0, main)));

  // Defaults: > 5% and > 1% of 35. Every changed node qualifies.
  CHECK(m.verdict[cct::kRootNode] == Verdict::kRegression);
  CHECK(r.Ranked(0, Verdict::kRegression) == std::vector<NodeId>{y, a, main, c});  // |delta| 30, 20, 7, 7 (by id)
  CHECK(r.Ranked(0, Verdict::kImprovement) == std::vector<NodeId>{b, x});           // 20, 10
  CHECK(r.SubtreeRoots(0, NodeStatus::kNew) == std::vector<NodeId>{y, c});
  CHECK(r.SubtreeRoots(0, NodeStatus::kGone) == std::vector<NodeId>{b, x});
  // Causes (diff.h): y and c are leaves; a's own change is -10 once y's
  // +30 is taken out (x went), main's -20 once a's and c's are: both only
  // carry what is below them, and the root carries main.
  CHECK(r.Causes(0, Verdict::kRegression) == std::vector<NodeId>{y, c});
  CHECK(r.Context(0, Verdict::kRegression) == std::vector<NodeId>{a, main});
  CHECK(r.Causes(0, Verdict::kImprovement) == std::vector<NodeId>{b, x});
  CHECK(r.Context(0, Verdict::kImprovement).empty());
  CHECK_FALSE(r.IsCause(0, cct::kRootNode));
  CHECK(r.regressions() == 2);  // y, c (was 5: root, main, a, y, c)
}

TEST_CASE("diff engine: a caller whose own code also slowed is a cause beside its callee") {
  // main's exclusive work grows 20 -> 40 and leaf's 50 -> 100 (base total
  // 70): leaf is a cause; main's own change, +20 of its own 20 once leaf's
  // +50 is taken out, passes the thresholds too. A caller of only the leaf
  // (mid) is context.
  const auto r = Diff(Build({{"main", 20}, {"main;mid;leaf", 50}}), Build({{"main", 40}, {"main;mid;leaf", 100}}));
  const NodeId main = Find(r, {"main"}), mid = Find(r, {"main", "mid"}), leaf = Find(r, {"main", "mid", "leaf"});
  CHECK(r.Causes(0, Verdict::kRegression) == std::vector<NodeId>{main, leaf});  // by inclusive change: +70, +50
  CHECK(r.Context(0, Verdict::kRegression) == std::vector<NodeId>{mid});
  CHECK(r.regressions() == 2);
  // With 5 runs a side the own change is tested too: main's own code
  // unchanged (20 in every run, noise below 1%) leaves it context.
  std::vector<Tree> base, cand;
  for (int i = 0; i < 5; ++i) {
    const double e = 1 + 0.001 * i;
    base.push_back(Build({{"main", 20 * e}, {"main;mid;leaf", 50 * e}}));
    cand.push_back(Build({{"main", 20 * e}, {"main;mid;leaf", 100 * e}}));
  }
  auto compared = diff::Compare(Group(std::move(base)), Group(std::move(cand)), {});
  REQUIRE(compared.ok());
  const diff::DiffResult& g = *compared;
  const NodeId gm = Find(g, {"main"}), gl = Find(g, {"main", "mid", "leaf"});
  CHECK(g.tested());
  CHECK(g.metrics()[0].verdict[gm] == Verdict::kRegression);
  CHECK(g.Causes(0, Verdict::kRegression) == std::vector<NodeId>{gl});
  CHECK_FALSE(g.IsCause(0, gm));
}

TEST_CASE("diff engine: the union of random trees matches their paths") {
  // Two random trees over a small name pool (so they share most shallow
  // paths). Expected values come from each tree on its own: cct::PathNames
  // and cct::NodeValues, keyed by the path.
  auto random_tree = [](unsigned seed) {
    std::mt19937 rng(seed);
    Tree t;
    cct::MetricDesc d;
    d.name = "work";
    const cct::MetricId m = t.metrics().Register(d).value();
    std::vector<NodeId> nodes{cct::kRootNode};
    for (int i = 0; i < 4000; ++i) {
      const NodeId parent = nodes[rng() % nodes.size()];
      const NodeId n = t.InternChild(parent, t.InternFrame(FrameKind::kFunction, "f" + std::to_string(rng() % 12)));
      if (n == nodes.size()) nodes.push_back(n);
      t.AddValue(n, m, 1 + rng() % 100);
    }
    return t;
  };
  auto by_path = [](const Tree& t) {
    cct::NodeValues values(t);
    const std::vector<double>& inc = values.Inclusive(0);
    const std::vector<double>& exc = values.Exclusive(0);
    std::map<std::vector<std::string>, std::pair<double, double>> out;
    for (NodeId n = 1; n < t.size(); ++n) out[cct::PathNames(t, n)] = {inc[n], exc[n]};
    return out;
  };
  for (unsigned seed : {1u, 2u, 3u}) {
    const Tree a = random_tree(seed), b = random_tree(seed + 100);
    const auto pa = by_path(a), pb = by_path(b);
    std::set<std::vector<std::string>> all;
    for (const auto& [k, v] : pa) all.insert(k);
    for (const auto& [k, v] : pb) all.insert(k);
    const auto r = Diff(Tree(a), Tree(b), NoMinAbs());
    REQUIRE(r.size() == all.size() + 1);
    const diff::MetricDiff& m = r.metrics()[0];
    std::set<std::vector<std::string>> seen;
    for (NodeId u = 1; u < r.size(); ++u) {
      CHECK(r.tree().parent(u) < u);
      const std::vector<std::string> path = r.Path(u);
      seen.insert(path);
      const auto ia = pa.find(path), ib = pb.find(path);
      const bool in_a = ia != pa.end(), in_b = ib != pb.end();
      CHECK(r.status(u) == (in_a && in_b ? NodeStatus::kBoth : in_a ? NodeStatus::kGone : NodeStatus::kNew));
      CHECK(m.base_inc[u] == (in_a ? ia->second.first : 0));
      CHECK(m.base_exc[u] == (in_a ? ia->second.second : 0));
      CHECK(m.cand_inc[u] == (in_b ? ib->second.first : 0));
      CHECK(m.cand_exc[u] == (in_b ? ib->second.second : 0));
    }
    CHECK(seen == all);
  }
}

namespace {

// A random tree of `n` nodes, shaped for the large-union tests: half the
// nodes go under one of the last 64 made (call chains), half anywhere;
// names come from a pool of 40, and a third of them carry an offset
// ("f7+0x10"), which alignment drops, so such a node and its sibling "f7"
// are one union node. A node gets a value 1-100 with probability 0.7, else
// none; a node without values below it is not part of the run.
Tree LargeRandomTree(unsigned seed, size_t n) {
  std::mt19937 rng(seed);
  Tree t;
  cct::MetricDesc d;
  d.name = "work";
  const cct::MetricId m = t.metrics().Register(d).value();
  std::vector<cct::FrameId> frames;
  for (int i = 0; i < 40; ++i) {
    frames.push_back(t.InternFrame(FrameKind::kFunction, "f" + std::to_string(i)));
    frames.push_back(t.InternFrame(FrameKind::kFunction, "f" + std::to_string(i) + "+0x10"));
  }
  while (t.size() < n) {
    const size_t size = t.size();
    const NodeId parent = rng() % 2 ? static_cast<NodeId>(size - 1 - rng() % std::min<size_t>(size, 64))
                                    : static_cast<NodeId>(rng() % size);
    const cct::FrameId f = frames[2 * (rng() % 40) + (rng() % 3 == 0)];
    const NodeId c = t.InternChild(parent, f);
    if (rng() % 10 < 7) t.AddValue(c, m, 1 + rng() % 100);
  }
  return t;
}

// Keys for paths with offsets dropped from the names (equal keys: equal
// paths), shared between trees: a path's key is given out by (its parent
// path's key, its last name's).
struct PathKeys {
  std::unordered_map<std::string, uint32_t> names;
  std::unordered_map<uint64_t, uint32_t> paths;
  PathKeys() { paths.reserve(size_t{3} << 20); }

  // Per node of `t`, its path's key; with `add` false, a path no tree had
  // gets UINT32_MAX.
  std::vector<uint32_t> Of(const Tree& t, bool add = true) {
    std::vector<uint32_t> name_key(t.frames().size());
    for (cct::FrameId f = 0; f < t.frames().size(); ++f) {
      std::string name(t.str(t.frames().Get(f).name));
      if (const size_t plus = name.find("+0x"); plus != std::string::npos) name.resize(plus);
      name_key[f] = names.emplace(name, static_cast<uint32_t>(names.size())).first->second;
    }
    std::vector<uint32_t> key(t.size(), 0);
    for (NodeId n = 1; n < t.size(); ++n) {
      if (key[t.parent(n)] == UINT32_MAX) {
        key[n] = UINT32_MAX;
        continue;
      }
      const uint64_t k = (uint64_t{key[t.parent(n)]} << 32) | name_key[t.frame_id(n)];
      if (add) {
        key[n] = paths.emplace(k, static_cast<uint32_t>(paths.size() + 1)).first->second;
      } else {
        const auto it = paths.find(k);
        key[n] = it == paths.end() ? UINT32_MAX : it->second;
      }
    }
    return key;
  }
};

}  // namespace

TEST_CASE("diff engine: a union of a million nodes (aligned and summed on two threads) matches the trees' paths") {
  // Large enough that the aligner prepares one tree beside the other's
  // probes and the values are summed on two threads. Expected values come
  // from each tree on its own, summed by path key: a union node's value is
  // the sum over the nodes of that tree on its path.
  const size_t n = 640000;
  const Tree a = LargeRandomTree(11, n), b = LargeRandomTree(12, n);
  PathKeys keys;
  const std::vector<uint32_t> ka = keys.Of(a), kb = keys.Of(b);
  const size_t n_keys = keys.paths.size();
  struct Sums {
    double inc = 0, exc = 0;
  };
  auto sums = [&](const Tree& t, const std::vector<uint32_t>& key) {
    cct::NodeValues values(t);
    const std::vector<double>& inc = values.Inclusive(0);
    const std::vector<double>& exc = values.Exclusive(0);
    std::vector<Sums> out(n_keys + 1);
    std::vector<char> present(n_keys + 1, 0);
    for (NodeId x = 1; x < t.size(); ++x) {
      if (inc[x] == 0) continue;  // nothing below: not part of the run
      out[key[x]].inc += inc[x];
      out[key[x]].exc += exc[x];
      present[key[x]] = 1;
    }
    return std::make_pair(out, present);
  };
  const auto [sa, in_a] = sums(a, ka);
  const auto [sb, in_b] = sums(b, kb);
  size_t expected_size = 1;
  for (size_t k = 1; k <= n_keys; ++k) expected_size += in_a[k] || in_b[k];
  REQUIRE(expected_size >= (size_t{1} << 20));  // the values are summed on two threads too

  const auto r = Diff(Tree(a), Tree(b), NoMinAbs());
  REQUIRE(r.size() == expected_size);
  const diff::MetricDiff& m = r.metrics()[0];
  const std::vector<uint32_t> ku = keys.Of(r.tree(), /*add=*/false);  // a path neither tree had: wrong
  std::vector<char> seen(n_keys + 1, 0);
  size_t wrong = 0;
  for (NodeId u = 1; u < r.size(); ++u) {
    const uint32_t k = ku[u];
    if (k >= seen.size() || seen[k]) {
      ++wrong;
      continue;
    }
    seen[k] = 1;
    const NodeStatus status = in_a[k] && in_b[k] ? NodeStatus::kBoth : in_a[k] ? NodeStatus::kGone : NodeStatus::kNew;
    wrong += r.status(u) != status || m.base_inc[u] != sa[k].inc || m.base_exc[u] != sa[k].exc ||
             m.cand_inc[u] != sb[k].inc || m.cand_exc[u] != sb[k].exc;
  }
  CHECK(wrong == 0);
}

TEST_CASE("aligner: AddAll over large trees gives what Add in turn gives") {
  // Three trees, each pair above the size from which AddAll works on two
  // threads; with fold_recursion and keep vectors, so every branch of the
  // probe loop is taken. Node ids depend on the order of the steps, so
  // equal ids show the order held.
  const size_t n = 600000;
  const std::vector<Tree> trees = {LargeRandomTree(21, n), LargeRandomTree(22, n), LargeRandomTree(23, n)};
  std::vector<std::vector<char>> keep;
  for (const Tree& t : trees) {
    std::vector<char> k(t.size(), 0);
    for (NodeId x = 1; x < t.size(); ++x) k[x] = x % 5 != 0;
    for (NodeId x = static_cast<NodeId>(t.size()); x-- > 1;)  // a kept node's ancestors are kept
      if (k[x]) k[t.parent(x)] = 1;
    keep.push_back(std::move(k));
  }
  diff::AlignOptions options;
  options.fold_recursion = true;
  diff::Aligner one_by_one(options), all(options);
  std::vector<std::vector<NodeId>> maps;
  for (size_t i = 0; i < trees.size(); ++i) maps.push_back(one_by_one.Add(trees[i], &keep[i]));
  const auto all_maps = all.AddAll({&trees[0], &trees[1], &trees[2]}, keep);
  CHECK(all_maps == maps);
  REQUIRE(all.size() == one_by_one.size());
  CHECK(all.size() > n);
  size_t differ = 0;
  for (NodeId u = 1; u < all.size(); ++u)
    differ += all.tree().parent(u) != one_by_one.tree().parent(u) || all.display_name(u) != one_by_one.display_name(u);
  CHECK(differ == 0);
  // Left out: every fifth node of a tree and what hangs below it.
  for (size_t i = 0; i < trees.size(); ++i) {
    size_t mismatched = 0;
    for (NodeId x = 1; x < trees[i].size(); ++x) mismatched += (maps[i][x] == cct::kNoNode) == bool(keep[i][x]);
    CHECK(mismatched == 0);
  }
}

TEST_CASE("diff engine: a new subtree is reported at its root only") {
  const auto r = Diff(Build({{"main", 10}}), Build({{"main", 10}, {"main;n1;n2;n3", 5}}));
  const NodeId n1 = Find(r, {"main", "n1"});
  CHECK(r.SubtreeRoots(0, NodeStatus::kNew) == std::vector<NodeId>{n1});
  CHECK(r.metrics()[0].cand_inc[n1] == 5);
  CHECK(r.status(Find(r, {"main", "n1", "n2", "n3"})) == NodeStatus::kNew);
  CHECK(r.SubtreeRoots(0, NodeStatus::kGone).empty());
}

TEST_CASE("diff engine: nodes without values are not part of a run") {
  // An iteration's tree keeps every node of its run; those its iteration
  // did not reach hold no value and must not show up as new or gone.
  const auto r = Diff(Build({{"main;a", 10}, {"main;ghost;deeper", 0}}), Build({{"main;a", 12}, {"main;b", 0}}));
  CHECK(r.size() == 3);  // root, main, a
  CHECK(Find(r, {"main", "ghost"}) == cct::kNoNode);
  CHECK(Find(r, {"main", "b"}) == cct::kNoNode);
  CHECK(r.SubtreeRoots(0, NodeStatus::kNew).empty());
  CHECK(r.SubtreeRoots(0, NodeStatus::kGone).empty());
  CHECK(r.metrics()[0].cand_inc[Find(r, {"main", "a"})] == 12);
}

TEST_CASE("diff engine: identical trees have no changes") {
  const std::vector<EngineStack> stacks{{"main;a", 3}, {"main;b;c", 4}, {"main", 1}};
  const auto r = Diff(Build(stacks), Build(stacks));
  for (NodeId n = 0; n < r.size(); ++n) {
    CHECK(r.status(n) == NodeStatus::kBoth);
    CHECK(r.metrics()[0].verdict[n] == Verdict::kNone);
    CHECK(r.Change(0, n) == 0);
  }
}

TEST_CASE("diff engine: names are normalized before aligning") {
  // Kernels launched from main under a <gpu kernel> placeholder; the
  // template arguments differ between the two builds.
  auto kernels = [](const char* kernel, const char* module, const char* address_frame, const char* lambda) {
    Tree t;
    const cct::MetricId m = t.metrics().RegisterStandard("gker").value();
    const NodeId main = t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kFunction, "main", "/build/app"));
    const NodeId op = t.InternChild(main, t.InternFrame(FrameKind::kGpuOp, "<gpu kernel>"));
    t.AddValue(t.InternChild(op, t.InternFrame(FrameKind::kKernel, kernel)), m, 100);
    t.AddValue(t.InternChild(main, t.InternFrame(FrameKind::kFunction, address_frame, module)), m, 10);
    t.AddValue(t.InternChild(main, t.InternFrame(FrameKind::kFunction, lambda, "/build/app")), m, 1);
    return t;
  };
  auto base = [&] {
    return kernels("void gemm<float, 128>(float*)", "/usr/lib/libfoo.so.1", "libfoo.so.1+0x1234",
                   "main::{lambda(int)#1}::operator()(int) const");
  };
  auto cand = [&] {
    return kernels("void gemm<double, 128>(double*) [clone .constprop.0]", "/opt/lib/libfoo.so.2",
                   "libfoo.so.2+0x9f00", "main::{lambda(int)#4}::operator()(int) const");
  };
  {
    // Default: lambda numbering never splits nodes; template arguments do,
    // and so do offsets into a module: another build of libfoo has other
    // code at 0x9f00 than the old one had at 0x1234.
    const auto r = Diff(base(), cand());
    const NodeId lib = Find(r, {"main", "libfoo.so.1+0x1234"});
    REQUIRE(lib != cct::kNoNode);
    CHECK(r.status(lib) == NodeStatus::kGone);
    CHECK(r.metrics()[0].base_inc[lib] == 10);
    CHECK(r.status(Find(r, {"main", "libfoo.so.2+0x9f00"})) == NodeStatus::kNew);
    const NodeId lambda = Find(r, {"main", "main::{lambda(int)#1}::operator()(int) const"});
    REQUIRE(lambda != cct::kNoNode);
    CHECK(r.status(lambda) == NodeStatus::kBoth);
    CHECK(r.status(Find(r, {"main", "<gpu kernel>", "void gemm<float, 128>(float*)"})) == NodeStatus::kGone);
    CHECK(r.status(Find(r, {"main", "<gpu kernel>", "void gemm<double, 128>(double*) [clone .constprop.0]"})) ==
          NodeStatus::kNew);
    CHECK(r.size() == 8);
  }
  {
    diff::DiffOptions o;
    o.align.normalize.kernels = true;
    const auto r = Diff(base(), cand(), o);
    const NodeId gemm = Find(r, {"main", "<gpu kernel>", "gemm"});
    REQUIRE(gemm != cct::kNoNode);
    CHECK(r.status(gemm) == NodeStatus::kBoth);
    CHECK(r.metrics()[0].base_inc[gemm] == 100);
    CHECK(r.metrics()[0].cand_inc[gemm] == 100);
    CHECK(r.size() == 7);
  }
}

TEST_CASE("diff engine: distinct offsets into one module stay distinct nodes, named as the tree names them") {
  // Issue 20: every "python3.11+0x…" frame of a run was one node, shown
  // under one of their names. Two places in python3.11 under main, with
  // values from construction.
  auto run = [](double a, double b) {
    Tree t;
    const cct::MetricId m = t.metrics().RegisterStandard("cputime").value();
    const NodeId main = t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kFunction, "main", "/usr/bin/python3.11"));
    t.AddValue(t.InternChild(main, t.InternFrame(FrameKind::kFunction, "python3.11+0x25176f", "/usr/bin/python3.11")), m, a);
    t.AddValue(t.InternChild(main, t.InternFrame(FrameKind::kFunction, "python3.11+0x2456ee", "/usr/bin/python3.11")), m, b);
    return t;
  };
  const auto r = Diff(run(10, 5), run(12, 5));
  CHECK(r.size() == 4);  // root main and the two places
  const NodeId x = Find(r, {"main", "python3.11+0x25176f"}), y = Find(r, {"main", "python3.11+0x2456ee"});
  REQUIRE(x != cct::kNoNode);
  REQUIRE(y != cct::kNoNode);
  CHECK(x != y);
  CHECK(r.metrics()[0].base_inc[x] == 10);
  CHECK(r.metrics()[0].cand_inc[x] == 12);
  CHECK(r.metrics()[0].base_inc[y] == 5);
  CHECK(r.metrics()[0].cand_inc[y] == 5);
}

TEST_CASE("diff engine: --fold-recursion collapses direct recursion") {
  // base recursion depth 3, candidate depth 2; the same total work.
  const std::vector<EngineStack> base{{"main;fib", 1}, {"main;fib;fib", 2}, {"main;fib;fib;fib", 4}, {"main;fib;fib;fib;leaf", 8}};
  const std::vector<EngineStack> cand{{"main;fib", 1}, {"main;fib;fib", 6}, {"main;fib;fib;leaf", 8}};
  {
    const auto r = Diff(Build(base), Build(cand));
    CHECK(r.size() == 7);  // root main fib fib fib leaf(base) leaf(cand)
    CHECK(r.status(Find(r, {"main", "fib", "fib", "fib"})) == NodeStatus::kGone);
  }
  diff::DiffOptions o;
  o.align.fold_recursion = true;
  const auto r = Diff(Build(base), Build(cand), o);
  CHECK(r.size() == 4);  // root main fib leaf
  const NodeId fib = Find(r, {"main", "fib"}), leaf = Find(r, {"main", "fib", "leaf"});
  CHECK(r.metrics()[0].base_exc[fib] == 7);
  CHECK(r.metrics()[0].cand_exc[fib] == 7);
  CHECK(r.metrics()[0].base_inc[leaf] == 8);
  CHECK(r.status(leaf) == NodeStatus::kBoth);
  CHECK(r.regressions() == 0);
}

TEST_CASE("diff engine: verdict thresholds") {
  // base total 20000, so the default min-abs is 200.
  const Tree base = Build({{"main;a", 1000},
                           {"main;b", 1000},
                           {"main;c", 1000},
                           {"main;d", 1000},
                           {"main;e", 10},
                           {"main;f", 200},
                           {"main;g", 200},
                           {"main;pad", 15590}});
  const Tree cand = Build({{"main;a", 1050},   // +5% exactly: not more than 5%
                           {"main;b", 1051},   // +5.1%
                           {"main;c", 950},    // -5% exactly
                           {"main;d", 949},    // -5.1%
                           {"main;e", 15},     // +50%, +5
                           {"main;f", 401},    // +100.5%, +201
                           {"main;g", 400},    // +100%, +200 exactly
                           {"main;pad", 15590}});
  auto verdict = [](const diff::DiffResult& r, const char* name) {
    return r.metrics()[0].verdict[Find(r, {"main", name})];
  };
  {
    const auto r = Diff(base, cand, NoMinAbs());
    CHECK(verdict(r, "a") == Verdict::kNone);
    CHECK(verdict(r, "b") == Verdict::kRegression);
    CHECK(verdict(r, "c") == Verdict::kNone);
    CHECK(verdict(r, "d") == Verdict::kImprovement);
    CHECK(verdict(r, "e") == Verdict::kRegression);
    CHECK(verdict(r, "pad") == Verdict::kNone);
  }
  {
    const auto r = Diff(base, cand);  // min-abs 1% of 20000 = 200
    CHECK(r.metrics()[0].min_abs == 200);
    CHECK(verdict(r, "b") == Verdict::kNone);
    CHECK(verdict(r, "d") == Verdict::kNone);
    CHECK(verdict(r, "e") == Verdict::kNone);
    CHECK(verdict(r, "f") == Verdict::kRegression);
    CHECK(verdict(r, "g") == Verdict::kNone);
  }
  {
    diff::DiffOptions o = NoMinAbs();
    o.threshold = 0.10;
    const auto r = Diff(base, cand, o);
    CHECK(verdict(r, "b") == Verdict::kNone);
    CHECK(verdict(r, "e") == Verdict::kRegression);
  }
  {
    // An absolute min-abs for a time metric is given in seconds.
    diff::DiffOptions o;
    o.min_abs = {false, 150e-9};
    const auto r = Diff(Build({{"main;f", 200}, {"main;pad", 800}}, "cputime", cct::Unit::kNanoseconds),
                        Build({{"main;f", 351}, {"main;pad", 800}}, "cputime", cct::Unit::kNanoseconds), o);
    CHECK(r.metrics()[0].min_abs == doctest::Approx(150));
    CHECK(verdict(r, "f") == Verdict::kRegression);
  }
}

TEST_CASE("diff engine: groups of runs, significance gates noise") {
  // Five runs a side. "steady" moves +20% with little noise: complete
  // separation, p = 2/252. "noisy" moves +10% (mean 100 -> 110) inside its
  // noise: large p, no verdict. pad keeps min-abs (1% of ~500) at ~5.
  const double steady_b[] = {100, 101, 99, 100, 100}, steady_c[] = {120, 121, 119, 120, 122};
  const double noisy_b[] = {100, 130, 70, 110, 90}, noisy_c[] = {120, 75, 140, 95, 120};
  std::vector<Tree> base, cand;
  for (int i = 0; i < 5; ++i) {
    base.push_back(Build({{"main;steady", steady_b[i]}, {"main;noisy", noisy_b[i]}, {"main;pad", 300}}));
    cand.push_back(Build({{"main;steady", steady_c[i]}, {"main;noisy", noisy_c[i]}, {"main;pad", 300}}));
  }
  // The first runs alone: noisy's +20% passes the thresholds.
  {
    const auto r = Diff(Tree(base[0]), Tree(cand[0]));
    CHECK(r.metrics()[0].verdict[Find(r, {"main", "noisy"})] == Verdict::kRegression);
  }
  auto res = diff::Compare(Group(base), Group(cand), diff::DiffOptions{});
  REQUIRE(res.ok());
  const diff::DiffResult& r = *res;
  CHECK(r.tested());
  CHECK(r.smallest_p() == doctest::Approx(2.0 / 252));
  const diff::MetricDiff& m = r.metrics().front();
  const NodeId steady = Find(r, {"main", "steady"}), noisy = Find(r, {"main", "noisy"}),
               pad = Find(r, {"main", "pad"});
  // Means and sample standard deviations, by hand.
  CHECK(m.base_inc[steady] == doctest::Approx(100));
  CHECK(m.cand_inc[steady] == doctest::Approx(120.4));
  CHECK(m.base_sd[steady] == doctest::Approx(std::sqrt(0.5)));
  CHECK(m.cand_sd[steady] == doctest::Approx(std::sqrt(1.3)));
  CHECK(m.base_inc[noisy] == doctest::Approx(100));
  CHECK(m.cand_inc[noisy] == doctest::Approx(110));
  CHECK(r.PValue(0, steady) == doctest::Approx(2.0 / 252));
  CHECK(r.PValue(0, noisy) == doctest::Approx(0.5158730158730159));  // exact_p() in reference_values.py
  CHECK(r.PValue(0, pad) == 1);
  CHECK(m.verdict[steady] == Verdict::kRegression);
  CHECK(m.verdict[noisy] == Verdict::kNone);
  CHECK(m.verdict[pad] == Verdict::kNone);
  const auto ci = r.Interval(0, steady);
  REQUIRE(ci.has_value());
  CHECK(ci->first > 1.15);
  CHECK(ci->first < 1.204);
  CHECK(ci->second > 1.204);
  CHECK(ci->second < 1.25);
  const auto noisy_ci = r.Interval(0, noisy);
  REQUIRE(noisy_ci.has_value());
  CHECK(noisy_ci->first < 1);  // the interval covers "no change"
  CHECK(noisy_ci->second > 1.1);
}

TEST_CASE("diff engine: fewer than 3 runs a side means no test") {
  auto runs = [](std::vector<double> values) {
    std::vector<Tree> out;
    for (double v : values) out.push_back(Build({{"main;x", v}, {"main;pad", 100}}));
    return out;
  };
  {
    auto r = diff::Compare(Group(runs({10, 11})), Group(runs({20, 21})), diff::DiffOptions{});
    REQUIRE(r.ok());
    CHECK(!r->tested());
    CHECK(r->metrics()[0].p_value.empty());
    CHECK(r->metrics()[0].base_sd[Find(*r, {"main", "x"})] == doctest::Approx(std::sqrt(0.5)));
    CHECK(!r->Interval(0, Find(*r, {"main", "x"})).has_value());
    // Thresholds alone decide.
    CHECK(r->metrics()[0].verdict[Find(*r, {"main", "x"})] == Verdict::kRegression);
  }
  {
    // 4 vs 4 completely separated: the smallest p, 2/70, is above 0.01.
    auto r = diff::Compare(Group(runs({10, 11, 12, 13})), Group(runs({20, 21, 22, 23})), diff::DiffOptions{});
    REQUIRE(r.ok());
    CHECK(r->tested());
    CHECK(r->smallest_p() == doctest::Approx(2.0 / 70));
    CHECK(r->PValue(0, Find(*r, {"main", "x"})) == doctest::Approx(2.0 / 70));
    CHECK(r->regressions() == 0);
  }
}

TEST_CASE("diff engine: --normalize-total compares shares") {
  // The candidate does twice the work everywhere: the same shares.
  const Tree base = Build({{"main;a", 50}, {"main;b", 50}});
  {
    diff::DiffOptions o;
    o.normalize_total = true;
    const auto r = Diff(base, Build({{"main;a", 100}, {"main;b", 100}}), o);
    const diff::MetricDiff& m = r.metrics()[0];
    CHECK(m.unit == cct::Unit::kPercent);
    CHECK(m.base_inc[cct::kRootNode] == 100);
    CHECK(m.cand_inc[cct::kRootNode] == 100);
    CHECK(m.base_inc[Find(r, {"main", "a"})] == 50);
    CHECK(m.cand_inc[Find(r, {"main", "a"})] == 50);
    CHECK(r.regressions() == 0);
    const auto absolute = Diff(base, Build({{"main;a", 100}, {"main;b", 100}}));
    CHECK(absolute.regressions() == 2);  // a and b; root and main only carry them
  }
  {
    // a's share grows from 50% to 75%: +25 points, above 1 point (1% of 100).
    diff::DiffOptions o;
    o.normalize_total = true;
    const auto r = Diff(base, Build({{"main;a", 150}, {"main;b", 50}}), o);
    const NodeId a = Find(r, {"main", "a"}), b = Find(r, {"main", "b"});
    CHECK(r.metrics()[0].cand_inc[a] == 75);
    CHECK(r.metrics()[0].verdict[a] == Verdict::kRegression);
    CHECK(r.metrics()[0].verdict[b] == Verdict::kImprovement);
    CHECK(r.metrics()[0].verdict[cct::kRootNode] == Verdict::kNone);
  }
}

TEST_CASE("diff engine: metrics are resolved by name across all inputs") {
  auto two = [](const char* first, const char* second) {
    Tree t;
    const cct::MetricId a = t.metrics().RegisterStandard(first).value();
    const cct::MetricId b = t.metrics().RegisterStandard(second).value();
    const NodeId n = t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kFunction, "main"));
    t.AddValue(n, a, 1);
    t.AddValue(n, b, 2);
    return t;
  };
  {
    // Default: the base's first metric that every input has.
    const auto r = Diff(two("samples", "cputime"), two("cputime", "samples"));
    REQUIRE(r.metrics().size() == 1);
    CHECK(r.metrics()[0].name == "samples");
    CHECK(r.metrics()[0].base_inc[0] == 1);
    CHECK(r.metrics()[0].cand_inc[0] == 2);
  }
  {
    diff::DiffOptions o;
    o.metrics = {"cputime", "samples"};
    const auto r = Diff(two("samples", "cputime"), two("cputime", "samples"), o);
    REQUIRE(r.metrics().size() == 2);
    CHECK(r.metrics()[0].name == "cputime");
    CHECK(r.metrics()[0].unit == cct::Unit::kNanoseconds);
    CHECK(r.metrics()[0].base_inc[0] == 2);
    CHECK(r.metrics()[0].cand_inc[0] == 1);
  }
  {
    diff::DiffOptions o;
    o.metrics = {"gker"};
    const auto r = diff::Compare(Single(two("samples", "cputime")), Single(two("cputime", "samples")), o);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == cct::ErrorCode::kInvalidArgument);
    CHECK(r.status().message().find("no metric 'gker'") != std::string::npos);
  }
  {
    const auto r = diff::Compare(Single(two("samples", "cputime")), Single(two("gker", "gxcopy")), {});
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("no metric in common") != std::string::npos);
  }
  {
    const auto r = diff::Compare(Single(Build({{"main", 1}}, "work", cct::Unit::kCount)),
                                 Single(Build({{"main", 1}}, "work", cct::Unit::kBytes)), {});
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("incompatible") != std::string::npos);
  }
}

TEST_CASE("diff engine: derived metrics are evaluated per node from their operands") {
  // Threads per block: accumulator / launches. base 2 launches of 256,
  // candidate 2 launches of 512.
  auto kernel = [](double threads) {
    Tree t;
    const cct::MetricId avg = t.metrics().RegisterStandard("gker:blk_thr").value();
    (void)avg;
    const cct::MetricId acc = t.metrics().Find("gker:blk_thr_acc"), count = t.metrics().Find("gker:count");
    const NodeId n = t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kKernel, "k"));
    t.AddValue(n, acc, 2 * threads);
    t.AddValue(n, count, 2);
    return t;
  };
  diff::DiffOptions o;
  o.metrics = {"gker:blk_thr"};
  const auto r = Diff(kernel(256), kernel(512), o);
  const NodeId k = Find(r, {"k"});
  CHECK(!r.metrics()[0].additive);
  CHECK(r.metrics()[0].base_inc[k] == 256);
  CHECK(r.metrics()[0].cand_inc[k] == 512);
  CHECK(r.metrics()[0].base_exc[k] == 256);
  CHECK(r.Change(0, k) == 1.0);
}

TEST_CASE("diff inputs: selectors become sides; groups load member by member") {
  testutil::TempDir dir;
  const std::string db_path = dir / "runs.db";
  {
    auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    for (int i = 0; i < 3; ++i) {
      store::RunMeta meta;
      meta.name = "r" + std::to_string(i + 1);
      meta.state = store::RunState::kComplete;
      if (i < 2) meta.tags["k"] = "v";
      const Tree t = Build({{"main", static_cast<double>(10 * (i + 1))}});
      REQUIRE((*db)->CreateRun(meta, &t).ok());
    }
  }
  std::vector<std::pair<std::string, std::string>> calls;
  const diff::TreeLoader recorder = [&](const std::string& sel, const std::string& db) -> cct::Result<diff::RunTree> {
    calls.emplace_back(sel, db);
    return diff::RunTree{"member " + sel, 0, Build({{"main", 1}})};
  };
  {
    // A single run (or iteration) goes to the loader as written.
    auto s = diff::LoadSide("latest@iter=median", db_path, recorder);
    REQUIRE(s.ok());
    CHECK(!s->group);
    CHECK(calls == std::vector<std::pair<std::string, std::string>>{{"latest@iter=median", db_path}});
  }
  calls.clear();
  {
    auto s = diff::LoadSide("tag:k=v@iter=2..3", db_path, recorder);
    REQUIRE(s.ok());
    CHECK(s->group);
    CHECK(s->runs.size() == 4);
    CHECK(calls == std::vector<std::pair<std::string, std::string>>{
                       {"1@iter=2", db_path}, {"1@iter=3", db_path}, {"2@iter=2", db_path}, {"2@iter=3", db_path}});
  }
  calls.clear();
  {
    auto s = diff::LoadSide("r3@iter=1..2", db_path, recorder);
    REQUIRE(s.ok());
    CHECK(s->group);
    CHECK(s->label == "run 3 'r3' @iter=1..2 (2 iterations)");
    CHECK(calls == std::vector<std::pair<std::string, std::string>>{{"3@iter=1", db_path}, {"3@iter=2", db_path}});
  }
  {
    // Another database by path.
    calls.clear();
    auto s = diff::LoadSide(db_path + ":tag:k=v", dir / "other.db", recorder);
    REQUIRE(s.ok());
    CHECK(calls == std::vector<std::pair<std::string, std::string>>{{"1", db_path}, {"2", db_path}});
  }
  {
    auto s = diff::LoadSide("tag:k=v", db_path, diff::StoreLoader());
    REQUIRE(s.ok());
    REQUIRE(s->runs.size() == 2);
    CHECK(s->label == "group tag:k=v (2 runs)");
    CHECK(s->runs[0].run_id == 1);
    CHECK(s->runs[1].label == "run 2 'r2'");
    auto res = diff::Compare(*s, *s, {});
    REQUIRE(res.ok());
    CHECK(res->metrics()[0].base_inc[0] == 15);  // mean of 10 and 20
  }
  {
    auto s = diff::LoadSide("tag:k=nothing", db_path, diff::StoreLoader());
    REQUIRE(!s.ok());
    CHECK(s.status().code() == cct::ErrorCode::kNotFound);
    auto bad = diff::LoadSide("tag:=x", db_path, diff::StoreLoader());
    CHECK(bad.status().code() == cct::ErrorCode::kInvalidArgument);
  }
}
