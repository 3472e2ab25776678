// ShallowTree against NodeValues on the whole tree: the same nodes (every
// node within the depth, none deeper, parents and frames kept), and values
// equal bit for bit, on random trees whose values are not integers (so a sum
// taken in another order would differ in its last bits).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cct/node_values.h"
#include "cct/shallow_tree.h"
#include "cct/tree.h"
#include "cct/tree_ops.h"

using namespace cct;

namespace {

struct Metrics {
  MetricId cpu, samples, per_sample, worst;
};

// A random tree in creation order: most nodes below a recent one (call
// chains), some below any earlier one; cputime on most nodes (a dense
// column), samples on few (sparse), a derived metric over both, and a
// summary metric with stored exclusive and inclusive values on some nodes.
Tree RandomTree(uint32_t seed, size_t nodes, Metrics& m) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Tree t;
  m.cpu = t.metrics().RegisterStandard("cputime").value();
  m.samples = t.metrics().Register({"samples", Unit::kCount, MetricKind::kAdditive, "", ""}).value();
  m.per_sample = t.metrics().Define("per_sample=cputime/samples").value();
  m.worst = t.metrics().Register({"worst", Unit::kNanoseconds, MetricKind::kSummary, "", ""}).value();
  std::vector<FrameId> frames;
  for (int f = 0; f < 40; ++f) frames.push_back(t.InternFrame(FrameKind::kFunction, "f" + std::to_string(f)));
  // Values spread over magnitudes: adding them in another order rounds
  // differently.
  auto value = [&] { return unit(rng) * std::pow(10.0, std::floor(unit(rng) * 12.0) - 6.0); };
  std::vector<NodeId> all{kRootNode};
  while (all.size() < nodes) {
    const NodeId parent = unit(rng) < 0.7 ? all[all.size() - 1 - std::min<size_t>(all.size() - 1, rng() % 4)]
                                          : all[rng() % all.size()];
    const size_t before = t.size();
    const NodeId n = t.InternChild(parent, frames[rng() % frames.size()]);
    if (t.size() == before) continue;  // that child existed
    all.push_back(n);
    if (unit(rng) < 0.8) t.AddValue(n, m.cpu, value());
    if (unit(rng) < 0.05) t.AddValue(n, m.samples, std::floor(unit(rng) * 5.0) + 1.0);
    if (unit(rng) < 0.1) t.SetValue(n, m.worst, value());
  }
  SparseColumn worst_inclusive;
  for (NodeId n = 0; n < t.size(); n += 3) worst_inclusive.Set(n, value());
  worst_inclusive.Set(5, -0.0);
  t.SetInclusiveColumn(m.worst, std::move(worst_inclusive));
  return t;
}

// The same tree with its ids in preorder (as the store numbers them).
Tree InPreorder(const Tree& t) {
  Tree out;
  out.strings() = t.strings();
  out.frames() = t.frames();
  out.metrics() = t.metrics();
  const std::vector<NodeId> order = Preorder(t, BuildChildren(t));
  std::vector<NodeId> to(t.size(), kNoNode);
  to[kRootNode] = kRootNode;
  for (NodeId n : order)
    if (n != kRootNode) to[n] = out.InternChild(to[t.parent(n)], t.frame_id(n));
  for (MetricId m = 0; m < t.metrics().size(); ++m) {
    if (t.metrics().Get(m).kind == MetricKind::kDerived) continue;
    SparseColumn own, stored;
    t.column(m).ForEach([&](NodeId n, double v) { own.Set(to[n], v); });
    t.inclusive_column(m).ForEach([&](NodeId n, double v) { stored.Set(to[n], v); });
    out.SetColumn(m, std::move(own));
    if (t.metrics().Get(m).kind == MetricKind::kSummary) out.SetInclusiveColumn(m, std::move(stored));
  }
  return out;
}

std::vector<size_t> Depths(const Tree& t) {
  std::vector<size_t> d(t.size(), 0);
  for (NodeId n = 1; n < t.size(); ++n) d[n] = d[t.parent(n)] + 1;
  return d;
}

uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

// Checks `shallow` (cut at max_depth from `tree`) node by node against the
// whole tree's values of `metrics`.
void CheckAgainstWhole(const Tree& tree, ShallowTree& shallow, size_t max_depth, const std::vector<MetricId>& metrics) {
  const std::vector<size_t> depth = Depths(tree);
  size_t within = 0;
  for (size_t d : depth) within += d <= max_depth;
  const Tree& cut = shallow.tree();
  REQUIRE(cut.size() == within);
  NodeValues whole(tree);
  NodeValues& part = shallow.values();
  size_t mismatches = 0;
  for (NodeId s = 0; s < cut.size(); ++s) {
    const NodeId o = shallow.origin(s);
    if (s > 0) REQUIRE(o > shallow.origin(s - 1));  // same relative order
    REQUIRE(depth[o] <= max_depth);
    REQUIRE(cut.frame_id(s) == tree.frame_id(o));
    if (s == 0) REQUIRE(cut.parent(s) == kNoNode);
    else REQUIRE(shallow.origin(cut.parent(s)) == tree.parent(o));
    for (MetricId m : metrics) {
      mismatches += Bits(part.Inclusive(m)[s]) != Bits(whole.Inclusive(m)[o]);
      mismatches += Bits(part.Exclusive(m)[s]) != Bits(whole.Exclusive(m)[o]);
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("ShallowTree: the nodes within a depth, with the whole tree's values bit for bit") {
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    Metrics m;
    const Tree built = RandomTree(seed, 3000, m);
    const Tree tree = InPreorder(built);
    REQUIRE(tree.size() == built.size());
    const std::vector<std::vector<MetricId>> selections{
        {m.cpu},                                     // one additive metric: the common case's loop
        {m.cpu, m.samples},                          // several
        {m.per_sample},                              // derived: its operands' values
        {m.worst},                                   // summary: stored, not summed
        {m.samples, m.per_sample, m.worst, m.cpu}};  // all at once
    for (size_t max_depth : {size_t{0}, size_t{1}, size_t{2}, size_t{4}, size_t{7}, size_t{1000}}) {
      for (const std::vector<MetricId>& metrics : selections) {
        CAPTURE(seed);
        CAPTURE(max_depth);
        CAPTURE(metrics.size());
        std::unique_ptr<ShallowTree> shallow = ShallowTree::Make(tree, max_depth, metrics);
        REQUIRE(shallow != nullptr);
        CheckAgainstWhole(tree, *shallow, max_depth, metrics);
      }
    }
  }
}

TEST_CASE("ShallowTree: the subtree sums are the whole tree's, not a sum in another order") {
  // A node whose children's values are half and whole units in the last
  // place of its own: the reverse pass adds them last child first,
  // ((own + c3) + c2) + c1, which here rounds differently from adding them
  // first child first.
  Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const FrameId a = t.InternFrame(FrameKind::kFunction, "a"), b = t.InternFrame(FrameKind::kFunction, "b"),
                c = t.InternFrame(FrameKind::kFunction, "c"), d = t.InternFrame(FrameKind::kFunction, "d");
  const NodeId top = t.InternChild(kRootNode, a);
  const double own = 1.0, c1 = 0x1p-53, c2 = 0x1p-53, c3 = 0x1p-52;
  t.AddValue(top, cpu, own);
  t.AddValue(t.InternChild(top, b), cpu, c1);
  t.AddValue(t.InternChild(top, c), cpu, c2);
  t.AddValue(t.InternChild(top, d), cpu, c3);
  REQUIRE(Bits(((own + c3) + c2) + c1) != Bits(((own + c1) + c2) + c3));  // the orders differ here
  NodeValues whole(t);
  REQUIRE(Bits(whole.Inclusive(cpu)[top]) == Bits(((own + c3) + c2) + c1));
  std::unique_ptr<ShallowTree> shallow = ShallowTree::Make(t, 1, {cpu});
  REQUIRE(shallow != nullptr);
  REQUIRE(shallow->tree().size() == 2);
  CHECK(Bits(shallow->values().Inclusive(cpu)[1]) == Bits(((own + c3) + c2) + c1));
  CHECK(shallow->values().Exclusive(cpu)[1] == own);
  CHECK(shallow->values().Total(cpu) == whole.Total(cpu));
}

TEST_CASE("ShallowTree: none for ids out of preorder or a cut holding more than asked") {
  Metrics m;
  const Tree built = RandomTree(7, 500, m);
  // Creation order is not a preorder here: some node's parent is off the
  // path to the node before it.
  const std::vector<size_t> depth = Depths(built);
  bool preorder = true;
  for (NodeId n = 1; n < built.size(); ++n) {
    NodeId up = n - 1;
    while (up != kNoNode && up != built.parent(n)) up = built.parent(up);
    preorder &= up != kNoNode;
  }
  REQUIRE_FALSE(preorder);
  CHECK(ShallowTree::Make(built, 3, {m.cpu}) == nullptr);
  // The one way out of preorder whose parent is still the last node seen at
  // its depth: d's parent b was closed when c, shallower, came.
  {
    Tree t;
    const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
    auto fn = [&](const char* name) { return t.InternFrame(FrameKind::kFunction, name); };
    const NodeId a = t.InternChild(kRootNode, fn("a"));
    const NodeId b = t.InternChild(a, fn("b"));
    t.InternChild(kRootNode, fn("c"));
    const NodeId d = t.InternChild(b, fn("d"));
    t.AddValue(d, cpu, 1);
    CHECK(ShallowTree::Make(t, 1, {cpu}) == nullptr);
    CHECK(ShallowTree::Make(InPreorder(t), 1, {cpu}) != nullptr);
  }
  const Tree tree = InPreorder(built);
  CHECK(ShallowTree::Make(tree, 3, {m.cpu}) != nullptr);
  size_t within = 0;
  for (size_t d : Depths(tree)) within += d <= 3;
  CHECK(ShallowTree::Make(tree, 3, {m.cpu}, within) != nullptr);
  CHECK(ShallowTree::Make(tree, 3, {m.cpu}, within - 1) == nullptr);
}

TEST_CASE("ShallowTree: a chain deeper than depths are held in is shown whole instead") {
  Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const FrameId f = t.InternFrame(FrameKind::kFunction, "recurse");
  NodeId n = kRootNode;
  for (int i = 0; i < 70000; ++i) n = t.InternChild(n, f);  // a distinct child each level: a new node
  t.AddValue(n, cpu, 1);
  CHECK(ShallowTree::Make(t, 4, {cpu}) == nullptr);
  Tree shorter;
  const MetricId cpu2 = shorter.metrics().RegisterStandard("cputime").value();
  const FrameId g = shorter.InternFrame(FrameKind::kFunction, "recurse");
  n = kRootNode;
  for (int i = 0; i < 60000; ++i) n = shorter.InternChild(n, g);
  shorter.AddValue(n, cpu2, 1);
  std::unique_ptr<ShallowTree> cut = ShallowTree::Make(shorter, 4, {cpu2});
  REQUIRE(cut != nullptr);
  CHECK(cut->tree().size() == 5);
  CHECK(cut->values().Inclusive(cpu2)[4] == 1.0);
}
