// Aggregation across units (query/aggregate.h): threads of one tree, trees
// as units, per-node sum/mean/min/max/imbalance, and the ensemble summary,
// all against values worked out by hand in the comments.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "cct/tree_ops.h"
#include "query/aggregate.h"
#include "tests/interop_util.h"

using cct::FrameKind;
using cct::NodeId;

namespace {

constexpr double kAggSec = 1e9;

// Three threads, cputime exclusive (s):
//   [thread] main      main 0, main/work 3, main/io 1
//   [thread] worker-1  main/work 5
//   [thread] worker-2  main/work 1, main/other 2
// The merged tree: main -> work, io, other.
cct::Tree AggThreeThreads() {
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  auto put = [&](const std::string& thread, const std::string& leaf, double s) {
    t.AddValue(interop::AddPath(t, {{FrameKind::kThread, thread}, {FrameKind::kFunction, "main"},
                                    {FrameKind::kFunction, leaf}}),
               cpu, s * kAggSec);
  };
  put("main", "work", 3);
  put("main", "io", 1);
  put("worker-1", "work", 5);
  put("worker-2", "work", 1);
  put("worker-2", "other", 2);
  return t;
}

NodeId AggFind(const cct::Tree& t, const std::vector<std::string>& names) {
  NodeId n = cct::kRootNode;
  for (const std::string& name : names) {
    NodeId next = cct::kNoNode;
    for (NodeId c = 1; c < t.size(); ++c)
      if (t.parent(c) == n && t.name(c) == name) next = c;
    if (next == cct::kNoNode) return cct::kNoNode;
    n = next;
  }
  return n;
}

}  // namespace

TEST_CASE("aggregate: threads of one tree, per merged node") {
  const cct::Tree t = AggThreeThreads();
  const query::Units u = query::ThreadUnits(t);
  REQUIRE(u.units.size() == 3);
  CHECK(u.units[0].Label() == "thread 'main'");
  CHECK(u.units[1].Label() == "thread 'worker-1'");
  for (NodeId n = 0; n < u.merged.size(); ++n) CHECK(u.merged.kind(n) != FrameKind::kThread);
  CHECK(u.merged.size() == 5);  // root, main, work, io, other
  const cct::MetricId cpu = u.merged.metrics().Find("cputime");
  const NodeId main = AggFind(u.merged, {"main"}), work = AggFind(u.merged, {"main", "work"}),
               io = AggFind(u.merged, {"main", "io"}), other = AggFind(u.merged, {"main", "other"});
  REQUIRE(main != cct::kNoNode);
  REQUIRE(work != cct::kNoNode);
  REQUIRE(io != cct::kNoNode);
  REQUIRE(other != cct::kNoNode);

  const std::vector<query::UnitAggregate> a = query::AggregateUnits(u, {{cpu, true}, {cpu, false}});
  const query::UnitAggregate& inc = a[0];
  const query::UnitAggregate& exc = a[1];
  // work: 3, 5, 1 -> sum 9, mean 3, min 1, max 5 (worker-1), imbalance 5/3.
  CHECK(exc.sum[work] == doctest::Approx(9 * kAggSec));
  CHECK(exc.mean(work) == doctest::Approx(3 * kAggSec));
  CHECK(exc.min[work] == doctest::Approx(1 * kAggSec));
  CHECK(exc.max[work] == doctest::Approx(5 * kAggSec));
  CHECK(exc.argmax[work] == 1);
  CHECK(exc.imbalance(work) == doctest::Approx(5.0 / 3.0));
  // io only in main: 1, 0, 0 -> min 0 (absent counts 0), mean 1/3, imbalance 3.
  CHECK(exc.min[io] == 0);
  CHECK(exc.mean(io) == doctest::Approx(kAggSec / 3));
  CHECK(exc.argmax[io] == 0);
  CHECK(exc.imbalance(io) == doctest::Approx(3.0));
  // other only in worker-2: max at unit 2.
  CHECK(exc.argmax[other] == 2);
  // main inclusive: 4, 5, 3 -> sum 12, mean 4, min 3, max 5 (worker-1), 1.25.
  CHECK(inc.sum[main] == doctest::Approx(12 * kAggSec));
  CHECK(inc.min[main] == doctest::Approx(3 * kAggSec));
  CHECK(inc.max[main] == doctest::Approx(5 * kAggSec));
  CHECK(inc.argmax[main] == 1);
  CHECK(inc.Get(query::Aggregation::kImbalance, main) == doctest::Approx(1.25));
  // main exclusive is 0 everywhere: no imbalance to speak of.
  CHECK(std::isnan(exc.imbalance(main)));
  // The merged tree holds the sum.
  cct::NodeValues merged(u.merged);
  CHECK(merged.Inclusive(cpu)[main] == doctest::Approx(12 * kAggSec));
}

TEST_CASE("aggregate: rank threads, ties, trees as units and a tree without threads") {
  // HPCToolkit's thread names make rank units; equal maxima go to the first.
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  for (const char* r : {"rank 0", "rank 1", "rank 2 thread 1"})
    t.AddValue(interop::AddPath(t, {{FrameKind::kThread, r}, {FrameKind::kFunction, "f"}}), cpu, 2 * kAggSec);
  const query::Units u = query::ThreadUnits(t);
  REQUIRE(u.units.size() == 3);
  CHECK(u.units[0].kind == query::Unit::Kind::kRank);
  CHECK(u.units[0].Label() == "rank 0");
  CHECK(u.units[2].Label() == "rank 2 thread 1");
  const NodeId f = AggFind(u.merged, {"f"});
  const auto a = query::AggregateUnits(u, {{u.merged.metrics().Find("cputime"), true}});
  CHECK(a[0].argmax[f] == 0);
  CHECK(a[0].imbalance(f) == doctest::Approx(1.0));

  // "rank x" and "rankless" are thread names, not ranks.
  cct::Tree odd;
  const cct::MetricId c2 = *odd.metrics().RegisterStandard("cputime");
  odd.AddValue(interop::AddPath(odd, {{FrameKind::kThread, "rank x"}, {FrameKind::kFunction, "f"}}), c2, 1);
  CHECK(query::ThreadUnits(odd).units[0].Label() == "thread 'rank x'");

  // Two trees as units: g is only in the second (min 0), threads folded.
  cct::Tree a1, a2;
  const cct::MetricId m1 = *a1.metrics().RegisterStandard("cputime");
  const cct::MetricId m2 = *a2.metrics().RegisterStandard("cputime");
  a1.AddValue(interop::AddPath(a1, {{FrameKind::kThread, "main"}, {FrameKind::kFunction, "f"}}), m1, 4 * kAggSec);
  a2.AddValue(interop::AddPath(a2, {{FrameKind::kThread, "main"}, {FrameKind::kFunction, "f"}}), m2, 2 * kAggSec);
  a2.AddValue(interop::AddPath(a2, {{FrameKind::kThread, "io"}, {FrameKind::kFunction, "g"}}), m2, 6 * kAggSec);
  auto tu = query::TreeUnits({{query::Unit::Kind::kRank, "0"}, {query::Unit::Kind::kRank, "1"}}, {&a1, &a2}, true);
  REQUIRE(tu.ok());
  const NodeId tf = AggFind(tu->merged, {"f"}), tg = AggFind(tu->merged, {"g"});
  REQUIRE(tf != cct::kNoNode);
  REQUIRE(tg != cct::kNoNode);
  const auto ta = query::AggregateUnits(*tu, {{tu->merged.metrics().Find("cputime"), true}});
  CHECK(ta[0].min[tg] == 0);
  CHECK(ta[0].max[tg] == doctest::Approx(6 * kAggSec));
  CHECK(ta[0].argmax[tg] == 1);
  CHECK(ta[0].mean(tf) == doctest::Approx(3 * kAggSec));
  CHECK(ta[0].max[cct::kRootNode] == doctest::Approx(8 * kAggSec));  // rank 1: 2 + 6
  // Without folding, the thread nodes stay and align by name.
  auto kept = query::TreeUnits({{query::Unit::Kind::kRun, "a"}, {query::Unit::Kind::kRun, "b"}}, {&a1, &a2}, false);
  REQUIRE(kept.ok());
  CHECK(AggFind(kept->merged, {"main", "f"}) != cct::kNoNode);

  // No thread nodes: one unit, the whole run.
  cct::Tree plain;
  const cct::MetricId pm = *plain.metrics().RegisterStandard("cputime");
  plain.AddValue(interop::AddPath(plain, {{FrameKind::kFunction, "f"}}), pm, 7);
  const query::Units pu = query::ThreadUnits(plain);
  REQUIRE(pu.units.size() == 1);
  CHECK(pu.units[0].Label() == "whole run");
  const auto pa = query::AggregateUnits(pu, {{pm, true}});
  CHECK(pa[0].sum[AggFind(pu.merged, {"f"})] == 7);
}

TEST_CASE("aggregate: derived metrics are evaluated per unit") {
  // gker:thr_reg = gker:thr_reg_acc / gker:count (the catalog's average per launch).
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("gker:thr_reg_acc");
  const cct::MetricId samples = *t.metrics().RegisterStandard("gker:count");
  auto derived = t.metrics().RegisterStandard("gker:thr_reg");
  REQUIRE_MESSAGE(derived.ok(), derived.status().message());
  // thread a: 10 registers over 2 launches -> 5; thread b: 9 over 1 -> 9.
  const NodeId fa = interop::AddPath(t, {{FrameKind::kThread, "a"}, {FrameKind::kFunction, "f"}});
  const NodeId fb = interop::AddPath(t, {{FrameKind::kThread, "b"}, {FrameKind::kFunction, "f"}});
  t.AddValue(fa, cpu, 10);
  t.AddValue(fa, samples, 2);
  t.AddValue(fb, cpu, 9);
  t.AddValue(fb, samples, 1);
  const query::Units u = query::ThreadUnits(t);
  const auto a = query::AggregateUnits(u, {{u.merged.metrics().Find("gker:thr_reg"), false}});
  const NodeId f = AggFind(u.merged, {"f"});
  // Per unit 5 and 9 (not the merged 19/3): mean 7, min 5, max 9 at b.
  CHECK(a[0].mean(f) == doctest::Approx(7));
  CHECK(a[0].min[f] == doctest::Approx(5));
  CHECK(a[0].max[f] == doctest::Approx(9));
  CHECK(a[0].argmax[f] == 1);
}

TEST_CASE("aggregate: names, and the ensemble summary by numpy's definitions") {
  for (const char* n : {"sum", "mean", "min", "max", "imbalance"}) {
    auto a = query::ParseAggregation(n);
    REQUIRE(a.ok());
    CHECK(query::AggregationName(*a) == n);
  }
  CHECK(!query::ParseAggregation("foo").ok());
  CHECK(!query::ParseAggregation("").ok());

  // 10, 1, 4, 3, 2: sorted 1 2 3 4 10; mean 4; median 3;
  // sd = sqrt((9+4+1+0+36)/4) = sqrt(12.5); cv = sd/4;
  // p10: position 0.4 -> 1.4; p25: 1 -> 2; p75: 3 -> 4; p90: 3.6 -> 4 + 0.6*6 = 7.6.
  std::vector<double> v{10, 1, 4, 3, 2};
  const query::Summary s = query::Summarize(v, {10, 25, 75, 90, 0, 100});
  CHECK(s.mean == doctest::Approx(4));
  CHECK(s.median == doctest::Approx(3));
  CHECK(s.sd == doctest::Approx(std::sqrt(12.5)));
  CHECK(s.cv == doctest::Approx(std::sqrt(12.5) / 4));
  CHECK(s.min == 1);
  CHECK(s.max == 10);
  REQUIRE(s.percentiles.size() == 6);
  CHECK(s.percentiles[0] == doctest::Approx(1.4));
  CHECK(s.percentiles[1] == doctest::Approx(2));
  CHECK(s.percentiles[2] == doctest::Approx(4));
  CHECK(s.percentiles[3] == doctest::Approx(7.6));
  CHECK(s.percentiles[4] == 1);
  CHECK(s.percentiles[5] == 10);
  // Even count: the median halfway between the middle two.
  std::vector<double> even{4, 1, 3, 2};
  CHECK(query::Summarize(even, {}).median == doctest::Approx(2.5));
  // One value: no sample deviation; mean 0: no cv.
  std::vector<double> one{5};
  CHECK(std::isnan(query::Summarize(one, {}).sd));
  std::vector<double> zeros{0, 0};
  const query::Summary z = query::Summarize(zeros, {});
  CHECK(z.sd == 0);
  CHECK(std::isnan(z.cv));
}

TEST_CASE("aggregate: an invocation's processes are ranks") {
  // SEL/all of an MPI job: one run per process, the launcher's rank in each
  // run's metadata (here out of order, and one process without a rank).
  query::Profile p;
  p.selector.all_processes = true;
  for (int i = 0; i < 3; ++i) {
    store::RunMeta run;
    run.id = static_cast<store::RunId>(7 + i);
    run.name = "job";
    if (i < 2) {
      run.launcher = store::LauncherRank{};
      run.launcher->rank = 1 - i;
    }
    p.runs.push_back(run);
    cct::Tree t;
    const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
    // Each process: main/solve (i+1) s on its main thread, 1 s in a helper thread.
    t.AddValue(interop::AddPath(t, {{FrameKind::kThread, "main"}, {FrameKind::kFunction, "main"},
                                    {FrameKind::kFunction, "solve"}}),
               cpu, (i + 1) * kAggSec);
    t.AddValue(interop::AddPath(t, {{FrameKind::kThread, "helper"}, {FrameKind::kFunction, "main"}}), cpu, kAggSec);
    p.run_trees.push_back(std::move(t));
  }
  auto u = query::ProfileUnits(p);
  REQUIRE_MESSAGE(u.ok(), u.status().message());
  REQUIRE(u->units.size() == 3);
  CHECK(u->units[0].Label() == "rank 1");
  CHECK(u->units[1].Label() == "rank 0");
  CHECK(u->units[2].Label() == "run 9 'job'");
  // Threads folded per process: main = 2, 3, 4 s; solve = 1, 2, 3 s.
  const NodeId main = AggFind(u->merged, {"main"}), solve = AggFind(u->merged, {"main", "solve"});
  REQUIRE(main != cct::kNoNode);
  REQUIRE(solve != cct::kNoNode);
  const auto a = query::AggregateUnits(*u, {{u->merged.metrics().Find("cputime"), true}});
  CHECK(a[0].mean(main) == doctest::Approx(3 * kAggSec));
  CHECK(a[0].max[solve] == doctest::Approx(3 * kAggSec));
  CHECK(a[0].argmax[solve] == 2);
  CHECK(a[0].imbalance(solve) == doctest::Approx(1.5));

  // Without the processes' trees (LoadOptions::keep_run_trees): an error, not a guess.
  p.run_trees.clear();
  CHECK(!query::ProfileUnits(p).ok());
}
