// FlatGroups walks a stored tree's ids in order (they are its preorder) and
// falls back to a computed preorder for trees built in another order: both
// give the same groups, counts, representative nodes and sums.
#include <doctest/doctest.h>

#include <map>

#include "cct/node_values.h"
#include "reports/flat_groups.h"
#include "store/tree_codec.h"

using namespace cct;

namespace {

struct FlatOrderSums {
  size_t nodes;
  std::string first_parent;  // the name of the representative node's parent
  double exc, inc;
};

std::map<std::string, FlatOrderSums> FlatOrderGroups(const Tree& t, const std::vector<char>* only = nullptr) {
  const reports::FlatGroups flat(t, reports::GroupBy::kFunction, only);
  NodeValues values(t);
  std::vector<double> exc, inc;
  flat.Accumulate(values.Exclusive(0), values.Inclusive(0), exc, inc);
  std::map<std::string, FlatOrderSums> out;
  for (size_t g = 0; g < flat.groups().size(); ++g) {
    const reports::FlatGroup& grp = flat.groups()[g];
    if (grp.nodes == 0) continue;
    out[grp.name] = {grp.nodes, std::string(t.name(t.parent(grp.first_node))), exc[g], inc[g]};
  }
  return out;
}

}  // namespace

TEST_CASE("flat groups: a tree out of preorder groups as its stored (preorder) copy does") {
  Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  auto fn = [&](const char* name) { return t.InternFrame(FrameKind::kFunction, name); };
  // Ids in creation order, not preorder: main's second child (solve) comes
  // before main's first child's (work's) children.
  const NodeId main = t.InternChild(kRootNode, fn("main"));
  const NodeId work = t.InternChild(main, fn("work"));
  const NodeId solve = t.InternChild(main, fn("solve"));
  const NodeId work_solve = t.InternChild(work, fn("solve"));
  const NodeId inner_work = t.InternChild(work_solve, fn("work"));  // work inside work: recursion
  const NodeId leaf = t.InternChild(inner_work, fn("leaf"));
  t.AddValue(work, cpu, 1);
  t.AddValue(solve, cpu, 2);
  t.AddValue(work_solve, cpu, 4);
  t.AddValue(inner_work, cpu, 8);
  t.AddValue(leaf, cpu, 16);
  REQUIRE(t.parent(work_solve) < solve);  // the ids are not the preorder

  const auto built = FlatOrderGroups(t);
  auto stored = store::DecodeTree(store::EncodeTree(t));
  REQUIRE(stored.ok());
  const auto read = FlatOrderGroups(*stored);

  // Expected from the construction: work's inclusive value counts the outer
  // work's subtree once (1+4+8+16), its exclusive both work nodes (1+8).
  REQUIRE(built.count("work"));
  CHECK(built.at("work").nodes == 2);
  CHECK(built.at("work").exc == 9);
  CHECK(built.at("work").inc == 29);
  CHECK(built.at("work").first_parent == "main");
  CHECK(built.at("solve").nodes == 2);
  CHECK(built.at("solve").exc == 6);
  CHECK(built.at("solve").inc == 2 + 28);  // two outermost solve nodes: main>solve and main>work>solve
  // The first node in preorder: main > work > solve comes before main > solve.
  CHECK(built.at("solve").first_parent == "work");
  CHECK(built.at("leaf").inc == 16);
  REQUIRE(read.size() == built.size());
  for (const auto& [name, sums] : built) {
    REQUIRE(read.count(name));
    CHECK(read.at(name).nodes == sums.nodes);
    CHECK(read.at(name).first_parent == sums.first_parent);
    CHECK(read.at(name).exc == sums.exc);
    CHECK(read.at(name).inc == sums.inc);
  }
}

TEST_CASE("flat groups: with `only`, a group counts the nodes kept; an inner node kept alone is outermost") {
  Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  auto fn = [&](const char* name) { return t.InternFrame(FrameKind::kFunction, name); };
  const NodeId main = t.InternChild(kRootNode, fn("main"));
  const NodeId outer = t.InternChild(main, fn("work"));
  const NodeId mid = t.InternChild(outer, fn("solve"));
  const NodeId inner = t.InternChild(mid, fn("work"));  // work inside work
  const NodeId leaf = t.InternChild(inner, fn("leaf"));
  t.AddValue(outer, cpu, 1);
  t.AddValue(mid, cpu, 2);
  t.AddValue(inner, cpu, 4);
  t.AddValue(leaf, cpu, 8);
  std::vector<char> only(t.size(), 1);
  only[inner] = 0;  // the outer work only: its subtree, inner work's included
  auto groups = FlatOrderGroups(t, &only);
  REQUIRE(groups.count("work"));
  CHECK(groups.at("work").nodes == 1);
  CHECK(groups.at("work").exc == 1);
  CHECK(groups.at("work").inc == 15);
  std::fill(only.begin(), only.end(), 1);
  only[outer] = 0;  // the inner work only: outermost among the kept
  groups = FlatOrderGroups(t, &only);
  CHECK(groups.at("work").nodes == 1);
  CHECK(groups.at("work").exc == 4);
  CHECK(groups.at("work").inc == 12);
  CHECK(groups.at("solve").inc == 14);
  (void)main;
  (void)leaf;
}

TEST_CASE("flat groups: a tree past the two-halves size groups exactly as an ancestor-by-ancestor count says") {
  // 1.2·10^6 nodes (walked in two halves at once), recursion everywhere:
  // four names, each node under a recent one, at most 40 deep.
  Tree built;
  const MetricId cpu = built.metrics().RegisterStandard("cputime").value();
  const char* names[] = {"work", "solve", "leaf", "io"};
  std::vector<int> depth{0};
  uint64_t x = 42;
  auto next = [&] { return x = x * 6364136223846793005ull + 1442695040888963407ull, x >> 33; };
  while (built.size() < 1200000) {
    NodeId p = static_cast<NodeId>(built.size() - 1 - next() % std::min<size_t>(64, built.size()));
    if (depth[p] >= 40) p = kRootNode;
    // A line of its own: every node a new child (a function's frames differ by line, its group does not).
    const NodeId c = built.InternChild(
        p, built.InternFrame(FrameKind::kFunction, names[next() % 4], "", "f.cc", static_cast<uint32_t>(built.size())));
    if (c != depth.size()) FAIL("a node was not new");
    depth.push_back(depth[p] + 1);
    built.AddValue(c, cpu, static_cast<double>(next() % 1000));
  }
  auto stored = store::DecodeTree(store::EncodeTree(built));  // numbered in preorder, as stored runs are
  REQUIRE(stored.ok());
  const Tree& t = *stored;
  NodeValues values(t);
  const std::vector<double>& exc = values.Exclusive(0);
  const std::vector<double>& inc = values.Inclusive(0);
  std::map<std::string, FlatOrderSums> expected;
  for (NodeId n = 1; n < t.size(); ++n) {
    const std::string name(t.name(n));
    FlatOrderSums& e = expected[name];
    ++e.nodes;
    e.exc += exc[n];
    bool outermost = true;
    for (NodeId a = t.parent(n); a != kNoNode && outermost; a = t.parent(a)) outermost = t.name(a) != name;
    if (outermost) e.inc += inc[n];
  }
  const auto got = FlatOrderGroups(t);
  REQUIRE(got.size() == expected.size());
  for (const auto& [name, e] : expected) {
    CAPTURE(name);
    REQUIRE(got.count(name));
    CHECK(got.at(name).nodes == e.nodes);
    CHECK(got.at(name).exc == doctest::Approx(e.exc).epsilon(1e-12));
    CHECK(got.at(name).inc == doctest::Approx(e.inc).epsilon(1e-12));
  }
}
