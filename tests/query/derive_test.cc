// cct-query derive: the tree operations on hand-built trees against
// hand-computed trees, then the command through the real tools (metadata,
// reports, exports and cct-diff on a derived run, errors).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "query/derive.h"
#include "query/profile.h"
#include "store/database.h"
#include "store/selector.h"
#include "tests/test_util.h"

namespace {

using cct::FrameKind;
using cct::MetricId;
using cct::NodeId;

// The function node at "a/b/c" below `under`, made as needed.
NodeId DtPath(cct::Tree& t, NodeId under, const std::string& path) {
  std::istringstream in(path);
  for (std::string part; std::getline(in, part, '/');)
    under = t.InternChild(under, t.InternFrame(FrameKind::kFunction, part));
  return under;
}

NodeId DtThread(cct::Tree& t, const std::string& name) {
  return t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kThread, name));
}

// Every node's exclusive value of `m` by its path of names ("" is the
// root), so a comparison checks the shape as well as the values.
std::map<std::string, double> DtValues(const cct::Tree& t, MetricId m) {
  std::map<std::string, double> out;
  for (NodeId n = 0; n < t.size(); ++n) {
    std::string path;
    for (const std::string& name : cct::PathNames(t, n)) path += (path.empty() ? "" : "/") + name;
    CHECK_MESSAGE(out.count(path) == 0, "two nodes at " << path);
    out[path] = t.Value(n, m);
  }
  return out;
}

double DtSum(const cct::Tree& t, MetricId m) {
  double s = 0;
  t.column(m).ForEach([&](NodeId, double v) { s += v; });
  return s;
}

// root -> main(1) -> {solve(2) -> {dgemm(60), dtrsm(8)}, io(29)}: total 100.
cct::Tree DtSolver() {
  cct::Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  t.AddValue(DtPath(t, cct::kRootNode, "main"), cpu, 1);
  t.AddValue(DtPath(t, cct::kRootNode, "main/solve"), cpu, 2);
  t.AddValue(DtPath(t, cct::kRootNode, "main/solve/dgemm"), cpu, 60);
  t.AddValue(DtPath(t, cct::kRootNode, "main/solve/dtrsm"), cpu, 8);
  t.AddValue(DtPath(t, cct::kRootNode, "main/io"), cpu, 29);
  return t;
}

// Three threads and a node outside them:
//   t0: main 1, main/f 4, main/g 2
//   t1: (the thread node itself) 5, main 3, main/f 6
//   t2: main 2, main/h 9
//   orphan 7 (under the root, in no thread)
cct::Tree DtThreads() {
  cct::Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const NodeId t0 = DtThread(t, "t0"), t1 = DtThread(t, "t1"), t2 = DtThread(t, "t2");
  t.AddValue(DtPath(t, t0, "main"), cpu, 1);
  t.AddValue(DtPath(t, t0, "main/f"), cpu, 4);
  t.AddValue(DtPath(t, t0, "main/g"), cpu, 2);
  t.AddValue(t1, cpu, 5);
  t.AddValue(DtPath(t, t1, "main"), cpu, 3);
  t.AddValue(DtPath(t, t1, "main/f"), cpu, 6);
  t.AddValue(DtPath(t, t2, "main"), cpu, 2);
  t.AddValue(DtPath(t, t2, "main/h"), cpu, 9);
  t.AddValue(DtPath(t, cct::kRootNode, "orphan"), cpu, 7);
  return t;
}

query::DeriveOp DtOp(const std::string& option, const std::string& value, const std::string& metric = "") {
  auto op = query::ParseDeriveOp(option, value, metric);
  REQUIRE_MESSAGE(op.ok(), op.status().message());
  return *op;
}

cct::Tree DtApply(const cct::Tree& src, const std::vector<query::DeriveOp>& ops, query::DeriveSource source = {}) {
  auto r = query::ApplyDerive(src, ops, source);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return std::move(r->tree);
}

}  // namespace

TEST_CASE("derive --keep-min folds the nodes under PCT % of the total into their nearest kept ancestor") {
  const cct::Tree src = DtSolver();
  // Inclusive: main 100, solve 70, dgemm 60, dtrsm 8, io 29. At 10 %, dtrsm
  // folds into solve (2 + 8); at 30 %, io folds into main (1 + 29) too.
  const cct::Tree ten = DtApply(src, {DtOp("keep-min", "10")});
  CHECK(DtValues(ten, 0) == std::map<std::string, double>{
                                {"", 0}, {"main", 1}, {"main/solve", 10}, {"main/solve/dgemm", 60}, {"main/io", 29}});
  const cct::Tree thirty = DtApply(src, {DtOp("keep-min", "30")});
  CHECK(DtValues(thirty, 0) ==
        std::map<std::string, double>{{"", 0}, {"main", 30}, {"main/solve", 10}, {"main/solve/dgemm", 60}});
  // Exactly at the share is kept (>=): io is 29 %.
  CHECK(DtValues(DtApply(src, {DtOp("keep-min", "29")}), 0).count("main/io") == 1);
  // 0 keeps everything; 100 keeps the nodes holding the whole total.
  CHECK(DtApply(src, {DtOp("keep-min", "0")}).size() == src.size());
  CHECK(DtValues(DtApply(src, {DtOp("keep-min", "100")}), 0) == std::map<std::string, double>{{"", 0}, {"main", 100}});
  for (const char* pct : {"0", "10", "30", "99.5"}) CHECK(DtSum(DtApply(src, {DtOp("keep-min", pct)}), 0) == 100);
}

TEST_CASE("derive --keep-min reads -m, and refuses a derived metric") {
  cct::Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const MetricId regs = t.metrics().RegisterStandard("gker:thr_reg").value();  // derived: acc / count
  const MetricId acc = t.metrics().Find("gker:thr_reg_acc"), count = t.metrics().Find("gker:count");
  const NodeId a = DtPath(t, cct::kRootNode, "a"), b = DtPath(t, cct::kRootNode, "b");
  t.AddValue(a, cpu, 90);
  t.AddValue(b, cpu, 10);
  t.AddValue(a, count, 1);
  t.AddValue(b, count, 3);
  t.AddValue(a, acc, 32);
  t.AddValue(b, acc, 3 * 64);
  // By cputime, b (10 %) goes at 50 %; by launches, a (25 %) goes.
  CHECK(DtValues(DtApply(t, {DtOp("keep-min", "50")}), cpu).count("b") == 0);
  const cct::Tree by_count = DtApply(t, {DtOp("keep-min", "50", "gker:count")});
  CHECK(DtValues(by_count, count) == std::map<std::string, double>{{"", 1}, {"b", 3}});
  // The derived metric stays derived, its formula over the moved accumulators.
  REQUIRE(by_count.metrics().Get(regs).kind == cct::MetricKind::kDerived);
  CHECK(by_count.metrics().Get(regs).formula == t.metrics().Get(regs).formula);
  cct::NodeValues v(by_count);
  CHECK(v.Total(regs) == doctest::Approx((32.0 + 192.0) / 4.0));
  auto refused = query::ApplyDerive(t, {DtOp("keep-min", "5", "gker:thr_reg")}, {});
  REQUIRE(!refused.ok());
  CHECK(refused.status().message().find("derived") != std::string::npos);
  auto unknown = query::ApplyDerive(t, {DtOp("keep-min", "5", "nosuch")}, {});
  REQUIRE(!unknown.ok());
  CHECK(unknown.status().message().find("no metric 'nosuch'") != std::string::npos);
}

TEST_CASE("derive --merge-threads: sum, mean, min and max of the threads' exclusive values") {
  const cct::Tree src = DtThreads();
  CHECK(query::ThreadNodes(src).size() == 3);
  // Per merged node, the values in t0, t1, t2 (absent = 0):
  //   root (thread nodes' own) 0,5,0   main 1,3,2   main/f 4,6,0   main/g 2,0,0
  //   main/h 0,0,9   orphan: in no thread, 7 whatever the statistic.
  using Values = std::map<std::string, double>;
  CHECK(DtValues(DtApply(src, {DtOp("merge-threads", "sum")}), 0) ==
        Values{{"", 5}, {"main", 6}, {"main/f", 10}, {"main/g", 2}, {"main/h", 9}, {"orphan", 7}});
  const Values mean = DtValues(DtApply(src, {DtOp("merge-threads", "mean")}), 0);
  const Values mean_expected{{"", 5.0 / 3}, {"main", 2}, {"main/f", 10.0 / 3}, {"main/g", 2.0 / 3},
                             {"main/h", 3}, {"orphan", 7}};
  REQUIRE(mean.size() == mean_expected.size());
  for (const auto& entry : mean_expected) {
    const std::string& path = entry.first;  // CAPTURE takes no structured binding (clang 14)
    CAPTURE(path);
    CHECK(mean.at(path) == doctest::Approx(entry.second));
  }
  CHECK(DtValues(DtApply(src, {DtOp("merge-threads", "min")}), 0) ==
        Values{{"", 0}, {"main", 1}, {"main/f", 0}, {"main/g", 0}, {"main/h", 0}, {"orphan", 7}});
  CHECK(DtValues(DtApply(src, {DtOp("merge-threads", "max")}), 0) ==
        Values{{"", 5}, {"main", 3}, {"main/f", 6}, {"main/g", 2}, {"main/h", 9}, {"orphan", 7}});
  // Min and max are per node: the merged tree's inclusive values are sums of
  // per-node extremes, not the extreme thread's inclusive value. Under min,
  // main's inclusive is 1 + 0 + 0 + 0 = 1, while the least busy thread's
  // main has 7 (t0: 1 + 4 + 2; t1: 3 + 6 = 9; t2: 2 + 9 = 11).
  cct::Tree min_tree = DtApply(src, {DtOp("merge-threads", "min")});
  cct::NodeValues mv(min_tree);
  const NodeId min_main = min_tree.FindChild(cct::kRootNode, min_tree.InternFrame(FrameKind::kFunction, "main"));
  REQUIRE(min_main != cct::kNoNode);
  CHECK(mv.Inclusive(0)[min_main] == 1);
  // A tree without threads is left as it is; the sum keeps the total.
  CHECK(DtValues(DtApply(DtSolver(), {DtOp("merge-threads", "mean")}), 0) == DtValues(DtSolver(), 0));
  CHECK(DtSum(DtApply(src, {DtOp("merge-threads", "sum")}), 0) == DtSum(src, 0));
}

TEST_CASE("derive --merge-threads: a thread's nested thread nodes count as that thread") {
  // HPCToolkit-like ranks with a thread node below one of them: r1's inner
  // node is part of r1, so there are two threads, not three.
  cct::Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const NodeId r0 = DtThread(t, "rank 0"), r1 = DtThread(t, "rank 1");
  t.AddValue(DtPath(t, r0, "main"), cpu, 4);
  const NodeId inner = t.InternChild(DtPath(t, r1, "main"), t.InternFrame(FrameKind::kThread, "omp"));
  t.AddValue(t.FindChild(r1, t.InternFrame(FrameKind::kFunction, "main")), cpu, 1);
  t.AddValue(DtPath(t, inner, "work"), cpu, 6);
  CHECK(query::ThreadNodes(t).size() == 2);
  // rank 1's main: 1, and its work (below the folded omp node): 6.
  CHECK(DtValues(DtApply(t, {DtOp("merge-threads", "min")}), cpu) ==
        std::map<std::string, double>{{"", 0}, {"main", 1}, {"main/work", 0}});
  CHECK(DtValues(DtApply(t, {DtOp("merge-threads", "mean")}), cpu) ==
        std::map<std::string, double>{{"", 0}, {"main", 2.5}, {"main/work", 3}});
}

TEST_CASE("derive --normalize: per-iteration, per-thread, total and a number") {
  const cct::Tree src = DtSolver();
  query::DeriveSource source;
  source.iterations = 4;
  source.threads = 5;
  using Values = std::map<std::string, double>;
  CHECK(DtValues(DtApply(src, {DtOp("normalize", "per-iteration")}, source), 0) ==
        Values{{"", 0}, {"main", 0.25}, {"main/solve", 0.5}, {"main/solve/dgemm", 15}, {"main/solve/dtrsm", 2},
               {"main/io", 7.25}});
  CHECK(DtValues(DtApply(src, {DtOp("normalize", "per-thread")}, source), 0) ==
        Values{{"", 0}, {"main", 0.2}, {"main/solve", 0.4}, {"main/solve/dgemm", 12}, {"main/solve/dtrsm", 1.6},
               {"main/io", 5.8}});
  CHECK(DtValues(DtApply(src, {DtOp("normalize", "2")}, source), 0)["main/io"] == 14.5);
  // total: fractions of 1, and no unit any more (time over time).
  const cct::Tree frac = DtApply(src, {DtOp("normalize", "total")}, source);
  CHECK(DtValues(frac, 0) == Values{{"", 0}, {"main", 0.01}, {"main/solve", 0.02}, {"main/solve/dgemm", 0.6},
                                    {"main/solve/dtrsm", 0.08}, {"main/io", 0.29}});
  CHECK(src.metrics().Get(0).unit == cct::Unit::kNanoseconds);
  CHECK(frac.metrics().Get(0).unit == cct::Unit::kNone);
  CHECK(frac.metrics().Get(0).name == "cputime");
  // What the source lacks is an error, not a silent division.
  for (const char* by : {"per-iteration", "per-thread"}) {
    auto r = query::ApplyDerive(src, {DtOp("normalize", by)}, {});
    CHECK(!r.ok());
  }
}

TEST_CASE("derive: operations apply in the order given") {
  const cct::Tree src = DtThreads();  // total 39
  // keep-min 20 then merge. 20 % of 39 is 7.8. Inclusive per thread: t0 7
  // (all of it folds into the root), t1 14 (main 9 keeps, f 6 folds into
  // main), t2 11 (main 11 and h 9 keep); orphan 7 folds into the root. Then
  // merged: root 7 + 7 + 5 (t1's own) = 19; main 9 + 2 = 11; main/h 9.
  const cct::Tree a = DtApply(src, {DtOp("keep-min", "20"), DtOp("merge-threads", "sum")});
  CHECK(DtValues(a, 0) == std::map<std::string, double>{{"", 19}, {"main", 11}, {"main/h", 9}});
  // merge then keep-min 20: root 5, main 6, f 10, g 2, h 9, orphan 7; main
  // (27), f and h keep, g folds into main (8), orphan into the root (12).
  const cct::Tree b = DtApply(src, {DtOp("merge-threads", "sum"), DtOp("keep-min", "20")});
  CHECK(DtValues(b, 0) == std::map<std::string, double>{{"", 12}, {"main", 8}, {"main/f", 10}, {"main/h", 9}});
  CHECK(DtSum(a, 0) == 39);
  CHECK(DtSum(b, 0) == 39);
  // Operations may repeat: normalize twice divides twice.
  query::DeriveSource source;
  CHECK(DtValues(DtApply(DtSolver(), {DtOp("normalize", "2"), DtOp("normalize", "5")}, source), 0)["main/io"] ==
        doctest::Approx(2.9));
}

TEST_CASE("derive: the record of each operation, and the option that makes it again") {
  auto r = query::ApplyDerive(DtThreads(),
                              {DtOp("keep-min", "20"), DtOp("merge-threads", "mean"), DtOp("normalize", "2.5")}, {});
  REQUIRE(r.ok());
  REQUIRE(r->operations.size() == 3);
  CHECK(r->operations[0]["op"] == "keep-min");
  CHECK(r->operations[0]["pct"] == 20.0);
  CHECK(r->operations[0]["metric"] == "cputime");
  CHECK(r->operations[0]["folded"] == 6);  // t0, t0/main, t0/main/f, t0/main/g, t1/main/f, orphan
  CHECK(r->operations[1]["threads"] == 2);  // t0 folded into the root: its values are no thread's now
  CHECK(r->operations[2]["divisor"] == 2.5);
  CHECK(query::DescribeOperation(r->operations[0]) == "--keep-min 20 -m cputime");
  CHECK(query::DescribeEffect(r->operations[0]) == "6 nodes folded");
  CHECK(query::DescribeOperation(r->operations[1]) == "--merge-threads mean");
  CHECK(query::DescribeEffect(r->operations[1]) == "2 threads");
  CHECK(query::DescribeOperation(r->operations[2]) == "--normalize 2.5");
  CHECK(query::DescribeEffect(r->operations[2]) == "divided by 2.5");
  CHECK(query::DescribeOperation(nlohmann::json{{"op", "drop"}, {"query", "* it's"}}) == "--drop '* it'\\''s'");
  CHECK(query::DescribeOperation(nlohmann::json(3)) == "(not an operation record)");
  // Frames no node uses are gone from the result (t0..t2, f, g, orphan).
  CHECK(r->tree.frames().size() == 3);  // root, main, h
  CHECK(r->tree.size() == 3);
}

TEST_CASE("derive: operations that do not parse") {
  auto bad = [](const std::string& option, const std::string& value) {
    auto op = query::ParseDeriveOp(option, value, "");
    REQUIRE(!op.ok());
    CHECK(op.status().code() == cct::ErrorCode::kInvalidArgument);
    return op.status().message();
  };
  CHECK(bad("keep-min", "x").find("--keep-min must be a percentage from 0 to 100") == 0);
  CHECK(!bad("keep-min", "101").empty());
  CHECK(!bad("keep-min", "-1").empty());
  CHECK(!bad("keep-min", "5%").empty());
  CHECK(bad("merge-threads", "median").find("--merge-threads takes sum, mean, min or max") == 0);
  CHECK(!bad("normalize", "0").empty());
  CHECK(!bad("normalize", "-2").empty());
  CHECK(!bad("normalize", "inf").empty());
  CHECK(!bad("normalize", "per-rank").empty());
  CHECK(bad("drop", "[name ~").find("--drop: invalid query at position") == 0);
  CHECK(bad("query", "").find("--query: invalid query") == 0);
}

// --- drop and query: these need the path query language (query/path_query.cc).

TEST_CASE("derive --drop folds the ends of the query's paths; --query keeps the nodes on them") {
  // root -> main(1) -> {solve(2) -> {dgemm(60), dtrsm(8)}, io(29)}, plus
  // main/dgemm(3): dropping solve moves its 2 to main, its dgemm merges with
  // main's (60 + 3) and dtrsm moves up a level.
  cct::Tree src = DtSolver();
  src.AddValue(DtPath(src, cct::kRootNode, "main/dgemm"), 0, 3);
  using Values = std::map<std::string, double>;
  const cct::Tree dropped = DtApply(src, {DtOp("drop", "* solve")});
  CHECK(DtValues(dropped, 0) ==
        Values{{"", 0}, {"main", 3}, {"main/dgemm", 63}, {"main/dtrsm", 8}, {"main/io", 29}});
  // --query: only main -> solve -> dgemm stays; dtrsm folds into solve, io
  // and main/dgemm into main.
  const cct::Tree kept = DtApply(src, {DtOp("query", "main solve dgemm")});
  CHECK(DtValues(kept, 0) == Values{{"", 0}, {"main", 33}, {"main/solve", 10}, {"main/solve/dgemm", 60}});
  CHECK(DtSum(dropped, 0) == 103);
  CHECK(DtSum(kept, 0) == 103);
  auto none = query::ApplyDerive(src, {DtOp("query", "* nosuch")}, {});
  REQUIRE(!none.ok());
  CHECK(none.status().message() == "--query '* nosuch' matches no call path");
  // Dropping what is not there changes nothing.
  CHECK(DtValues(DtApply(src, {DtOp("drop", "* nosuch")}), 0) == DtValues(src, 0));
}

// --- the command, through the real tools

namespace {

// base: main 1, main/solve 2, dgemm 60, dtrsm 8, main/io 29 (ms of cputime).
struct DtDb {
  testutil::TempDir dir;
  std::string db = dir / "d.db";
  DtDb() {
    testutil::WriteFileOrDie(dir / "a.folded", "main;solve;dgemm 60\nmain;solve;dtrsm 8\nmain;solve 2\nmain;io 29\nmain 1\n");
    testutil::WriteFileOrDie(dir / "b.folded", "main;solve;dgemm 40\nmain;io 31\n");
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"a.folded", "--name", "base", "--tag", "v=1"}, {"b.folded", "--name", "other", "--tag", "v=1"}}) {
      std::vector<std::string> argv{testutil::Tool("cct-import"), "-d", db, "--from", "folded", dir / args[0],
                                    "--metric", "cputime", "--unit", "ms"};
      argv.insert(argv.end(), args.begin() + 1, args.end());
      auto r = testutil::Run(argv);
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    }
  }
  testutil::RunResult Query(std::vector<std::string> args) const {
    args.insert(args.begin(), {testutil::Tool("cct-query"), "-d", db});
    return testutil::Run(args, {{"TZ", "UTC"}});
  }
  // The run's tree, as reports load it: exclusive cputime in ms by path.
  std::map<std::string, double> Values(const std::string& run) const {
    query::LoadOptions load;
    load.keep_lines = true;
    auto p = query::LoadProfile(run, db, load);
    REQUIRE_MESSAGE(p.ok(), p.status().message());
    std::map<std::string, double> ms;
    for (const auto& [path, ns] : DtValues(p->tree, 0)) ms[path] = ns / 1e6;
    return ms;
  }
  store::RunMeta Meta(const std::string& run) const {
    auto d = store::Database::Open(db, store::Database::Mode::kRead);
    REQUIRE(d.ok());
    auto sel = store::ParseSelector(run, db);
    REQUIRE(sel.ok());
    auto runs = store::SelectRuns(**d, *sel);
    REQUIRE(runs.ok());
    REQUIRE(runs->size() == 1);
    return runs->front();
  }
};

// Expects exit status 2 and one line on stderr holding `what`.
void DtRefused(const testutil::RunResult& r, const std::string& what) {
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(testutil::LineCount(r.err) == 1);
  CHECK_MESSAGE(r.err.find(what) != std::string::npos, r.err);
}

}  // namespace

TEST_CASE("cct-query derive stores a new run that every report reads") {
  DtDb d;
  auto r = d.Query({"derive", "base", "--keep-min", "10", "--name", "km", "--tag", "kind=squashed"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.empty());
  CHECK(r.out ==
        "derived run 3 'km' from run 1 'base': 5 nodes (from 6)\n"
        "  1. --keep-min 10 -m cputime: 1 node folded\n");
  CHECK(d.Values("km") == std::map<std::string, double>{
                              {"", 0}, {"main", 1}, {"main/solve", 10}, {"main/solve/dgemm", 60}, {"main/io", 29}});
  // The source is untouched.
  CHECK(d.Values("base").at("main/solve/dtrsm") == 8);

  // Metadata: where it came from and how, the source's facts, its own tags.
  const store::RunMeta src = d.Meta("base"), km = d.Meta("km");
  CHECK(km.source == "derive");
  CHECK(km.state == store::RunState::kComplete);
  CHECK(km.command == src.command);
  CHECK(km.host == src.host);
  CHECK(km.tags == std::map<std::string, std::string>{{"kind", "squashed"}});
  CHECK(km.parent_run == 0);
  CHECK(km.root_run == 0);
  const nlohmann::json& from = (*km.extra)["derived_from"];
  CHECK(from["format"] == 1);
  CHECK(from["selector"] == "base");
  CHECK(from["label"] == "run 1 'base'");
  CHECK(from["runs"] == nlohmann::json::array({1}));
  CHECK(from["source_nodes"] == 6);
  REQUIRE(from["operations"].size() == 1);
  CHECK(from["operations"][0] == nlohmann::json{{"op", "keep-min"}, {"pct", 10.0}, {"metric", "cputime"}, {"folded", 1}});
  // The derived run joins no tag group: v=1 still means the two imports.
  auto group = d.Query({"runs", "tag:v=1", "--format", "csv"});
  CHECK(testutil::LineCount(group.out) == 3);

  // Reports and exports.
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"tree", "km"}, {"top", "km"}, {"metrics", "km"}, {"callers", "km", "dgemm"},
                                             {"export", "km", "--to", "json"}, {"export", "km", "--to", "hatchet"},
                                             {"export", "km", "--to", "pprof", "-o", d.dir / "km.pb"}}) {
    auto q = d.Query(args);
    CAPTURE(args[0]);
    CHECK_MESSAGE(q.exit_code == 0, q.err);
  }
  auto folded = d.Query({"export", "km", "--to", "folded"});
  CHECK(folded.out.find("main;solve 10000000\n") != std::string::npos);  // ns
  CHECK(folded.out.find("dtrsm") == std::string::npos);
  auto check = d.Query({"check"});
  CHECK_MESSAGE(check.exit_code == 0, check.out << check.err);
}

TEST_CASE("cct-query derive: operations in command-line order, groups, replace") {
  DtDb d;
  // normalize 2, keep-min 30, normalize 5: the share does not care about the
  // first division; the values end divided by 10.
  auto r = d.Query({"derive", "base", "--normalize", "2", "--keep-min", "30", "--normalize", "5", "--name", "n"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json ops = (*d.Meta("n").extra)["derived_from"]["operations"];
  REQUIRE(ops.size() == 3);
  CHECK(ops[0]["op"] == "normalize");
  CHECK(ops[0]["divisor"] == 2.0);
  CHECK(ops[1]["op"] == "keep-min");
  CHECK(ops[2]["divisor"] == 5.0);
  const auto n = d.Values("n");
  CHECK(n.size() == 4);  // root, main, solve, dgemm
  CHECK(n.at("main") == doctest::Approx(3.0));  // (1 + 29) / 10
  CHECK(n.at("main/solve") == doctest::Approx(1.0));

  // A group's mean as a run: (a + b) / 2 per path.
  r = d.Query({"derive", "tag:v=1", "--name", "mean"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(d.Values("mean") == std::map<std::string, double>{{"", 0},
                                                          {"main", 0.5},
                                                          {"main/solve", 1},
                                                          {"main/solve/dgemm", 50},
                                                          {"main/solve/dtrsm", 4},
                                                          {"main/io", 30}});
  CHECK((*d.Meta("mean").extra)["derived_from"]["runs"] == nlohmann::json::array({1, 2}));

  // The name is taken; --replace replaces a derived run in place (same id).
  DtRefused(d.Query({"derive", "base", "--keep-min", "50", "--name", "mean"}), "a run named 'mean' exists already");
  const store::RunId id = d.Meta("mean").id;
  r = d.Query({"derive", "base", "--keep-min", "50", "--name", "mean", "--replace"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.rfind("replaced run " + std::to_string(id) + " 'mean'", 0) == 0);
  CHECK(d.Meta("mean").id == id);
  CHECK(d.Values("mean") ==
        std::map<std::string, double>{{"", 0}, {"main", 30}, {"main/solve", 10}, {"main/solve/dgemm", 60}});
  DtRefused(d.Query({"derive", "mean", "--name", "base", "--replace"}), "was not derived");

  // JSON: what a script needs to go on with.
  r = d.Query({"derive", "base", "--merge-threads", "sum", "--name", "j", "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  CHECK(doc["id"] == d.Meta("j").id);
  CHECK(doc["name"] == "j");
  CHECK(doc["operations"][0]["threads"] == 0);
}

TEST_CASE("cct-query derive --drop: cct-diff shows the dropped frame gone and its time in its parent") {
  DtDb d;
  auto r = d.Query({"derive", "base", "--drop", "* solve", "--name", "nosolve"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(d.Values("nosolve") ==
        std::map<std::string, double>{{"", 0}, {"main", 3}, {"main/dgemm", 60}, {"main/dtrsm", 8}, {"main/io", 29}});
  auto diff = testutil::Run({testutil::Tool("cct-diff"), "-d", d.db, "base", "nosolve", "--format", "json"});
  REQUIRE_MESSAGE(diff.exit_code == 0, diff.err);
  const nlohmann::json doc = nlohmann::json::parse(diff.out);
  CHECK(doc["totals"][0]["delta"] == 0);
  bool solve_gone = false;
  for (const nlohmann::json& row : doc["gone"])
    if (row["path"] == nlohmann::json::array({"main", "solve"})) solve_gone = true;
  CHECK(solve_gone);
  // main's own time grew by solve's 2 ms (seconds in JSON), its inclusive did not.
  auto tree = d.Query({"tree", "nosolve", "--format", "csv"});
  CHECK(tree.out.find("1,main,function,,,0,0.1,0.003,main") != std::string::npos);
}

TEST_CASE("cct-query derive: bad input is one line and status 2") {
  DtDb d;
  DtRefused(d.Query({"derive", "base", "--keep-min", "1"}), "derive needs --name NEW");
  DtRefused(d.Query({"derive", "nosuch", "--keep-min", "1", "--name", "x"}), "no run matches 'nosuch'");
  DtRefused(d.Query({"derive", "base", "--keep-min", "200", "--name", "x"}), "--keep-min must be a percentage");
  DtRefused(d.Query({"derive", "base", "--keep-min", "1", "-m", "nosuch", "--name", "x"}), "no metric 'nosuch'");
  DtRefused(d.Query({"derive", "base", "--drop", "[name ~", "--name", "x"}), "--drop: invalid query at position");
  DtRefused(d.Query({"derive", "base", "--query", "* nosuch", "--name", "x"}), "matches no call path");
  DtRefused(d.Query({"derive", "base", "--merge-threads", "median", "--name", "x"}), "--merge-threads takes");
  DtRefused(d.Query({"derive", "base", "--merge-threads", "--name", "x"}), "--merge-threads needs a value");
  DtRefused(d.Query({"derive", "base", "--normalize", "per-iteration", "--name", "x"}), "has no iterations");
  DtRefused(d.Query({"derive", "base", "--normalize", "per-thread", "--name", "x"}), "no thread nodes");
  DtRefused(d.Query({"derive", "base", "--name", "base"}), "a run named 'base' exists already");
  DtRefused(d.Query({"derive", "base", "--name", "latest~1"}), "reads as a RUN selector");
  DtRefused(d.Query({"derive", "base", "--name", "x", "--format", "csv"}), "text or json");
  DtRefused(d.Query({"tree", "base", "--keep-min", "5"}), "option --keep-min does not apply to 'tree'");
  DtRefused(d.Query({"derive", "base", "--name", "x", "--depth", "2"}), "option --depth does not apply to 'derive'");
  // Nothing was written by any of them.
  CHECK(testutil::LineCount(d.Query({"runs", "--format", "csv"}).out) == 3);
  if (geteuid() != 0) {  // root writes through file permissions
    REQUIRE(chmod(d.db.c_str(), 0444) == 0);
    auto ro = d.Query({"derive", "base", "--name", "x"});
    CHECK(ro.exit_code == 2);
    CHECK(testutil::LineCount(ro.err) == 1);
  }
}

TEST_CASE("cct-query derive --merge-threads on an HPCToolkit import: ranks merge, totals by construction") {
  const std::string dbdir = testutil::SharedData("hatchet/hpctoolkit-cpi-database");
  if (!std::filesystem::exists(dbdir + "/experiment.xml")) {
    MESSAGE("SKIPPED: " << dbdir << " is not there (the shared data beside the checkout)");
    return;
  }
  testutil::TempDir dir;
  const std::string db = dir / "h.db";
  auto imp = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "hpctoolkit",
                            dbdir, "--name", "cpi"});
  REQUIRE_MESSAGE(imp.exit_code == 0, imp.err);
  query::LoadOptions load;
  load.keep_lines = true;
  auto src = query::LoadProfile("cpi", db, load);
  REQUIRE(src.ok());
  const size_t ranks = query::ThreadNodes(src->tree).size();
  CHECK(ranks == 4);  // one metric-db file per rank
  for (const char* stat : {"sum", "mean", "max"}) {
    const std::string name = std::string("cpi-") + stat;
    auto r = testutil::Run({testutil::Tool("cct-query"), "-d", db, "derive", "cpi", "--merge-threads", stat, "--name",
                            name});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    auto p = query::LoadProfile(name, db, load);
    REQUIRE(p.ok());
    CHECK(!cct::HasKind(p->tree, FrameKind::kThread));
    for (MetricId m = 0; m < src->tree.metrics().size(); ++m) {
      if (src->tree.metrics().Get(m).kind != cct::MetricKind::kAdditive) continue;
      CAPTURE(m);
      const double total = DtSum(src->tree, m);
      if (std::string(stat) == "sum") CHECK(DtSum(p->tree, m) == doctest::Approx(total));
      if (std::string(stat) == "mean") CHECK(DtSum(p->tree, m) == doctest::Approx(total / static_cast<double>(ranks)));
      // max over ranks per node: at least the mean, at most the sum.
      if (std::string(stat) == "max") {
        CHECK(DtSum(p->tree, m) >= total / static_cast<double>(ranks) * (1 - 1e-12));
        CHECK(DtSum(p->tree, m) <= total * (1 + 1e-12));
      }
    }
  }
  // per-thread normalization of the sum is the mean.
  auto r = testutil::Run({testutil::Tool("cct-query"), "-d", db, "derive", "cpi", "--merge-threads", "sum",
                          "--normalize", "per-thread", "--name", "cpi-pt"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto mean = query::LoadProfile("cpi-mean", db, load);
  auto per_thread = query::LoadProfile("cpi-pt", db, load);
  REQUIRE(mean.ok());
  REQUIRE(per_thread.ok());
  CHECK(DtValues(per_thread->tree, 0).size() == DtValues(mean->tree, 0).size());
  for (const auto& [path, v] : DtValues(mean->tree, 0)) CHECK(DtValues(per_thread->tree, 0)[path] == doctest::Approx(v));
}

TEST_CASE("cct-query derive from iterations: per-iteration divides by the count selected, untouched nodes go") {
  // main -> {a, b}; iteration 1 spends 2 in a and 1 in main, iteration 2
  // spends 6 in b, iteration 3 spends 4 in a; the run's values are their sum.
  testutil::TempDir dir;
  const std::string db = dir / "it.db";
  cct::Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const NodeId main = DtPath(t, cct::kRootNode, "main"), a = DtPath(t, main, "a"), b = DtPath(t, main, "b");
  t.AddValue(main, cpu, 1);
  t.AddValue(a, cpu, 6);
  t.AddValue(b, cpu, 6);
  store::RunIterations its;
  its.range = "step";
  auto iteration = [&](uint32_t index, std::vector<NodeId> nodes, std::vector<double> values) {
    store::Iteration it;
    it.index = index;
    it.start_ns = 1000 * (index + 1);
    it.duration_ns = 10;
    it.columns.push_back({cpu, std::move(nodes), std::move(values)});
    its.iterations.push_back(std::move(it));
  };
  iteration(0, {main, a}, {1, 2});
  iteration(1, {b}, {6});
  iteration(2, {a}, {4});
  {
    auto d = store::Database::Open(db, store::Database::Mode::kWrite);
    REQUIRE(d.ok());
    store::RunMeta meta;
    meta.name = "train";
    meta.state = store::RunState::kComplete;
    REQUIRE((*d)->CreateRun(meta, &t, &its).ok());
  }
  auto derive = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {testutil::Tool("cct-query"), "-d", db, "derive"});
    auto r = testutil::Run(args);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  };
  query::LoadOptions load;
  auto values = [&](const std::string& run) {
    auto p = query::LoadProfile(run, db, load);
    REQUIRE(p.ok());
    return DtValues(p->tree, cpu);
  };
  using Values = std::map<std::string, double>;
  // The whole run per iteration: (1, 6, 6) / 3.
  derive({"train", "--normalize", "per-iteration", "--name", "per-it"});
  CHECK(values("per-it") == Values{{"", 0}, {"main", 1.0 / 3}, {"main/a", 2}, {"main/b", 2}});
  // Iterations 1..2: (1, 2, 6) / 2.
  derive({"train@iter=1..2", "--normalize", "per-iteration", "--name", "first-two"});
  CHECK(values("first-two") == Values{{"", 0}, {"main", 0.5}, {"main/a", 1}, {"main/b", 3}});
  // Iteration 3 went through a only: b is not in its run.
  derive({"train@iter=3", "--name", "third"});
  CHECK(values("third") == Values{{"", 0}, {"main", 0}, {"main/a", 4}});
}

TEST_CASE("derive --merge-threads and --keep-min against a Python reference on random trees") {
  // tests/query/derive_reference.py computes the same from docs/query.md's
  // definitions, with dictionaries of paths instead of folds.
  testutil::TempDir dir;
  for (uint32_t seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    cct::Tree t;
    const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
    const char* const names[] = {"main", "solve", "io", "mpi_wait", "dgemm", "pack"};
    std::vector<NodeId> threads;
    for (int i = 0; i < 4; ++i) threads.push_back(DtThread(t, "t" + std::to_string(i)));
    DtPath(t, cct::kRootNode, "outside");
    for (int i = 0; i < 400; ++i) {
      const NodeId parent = static_cast<NodeId>(rng() % t.size());
      const bool thread = rng() % 40 == 0;  // a thread node nested somewhere (or a new top-level one)
      const cct::FrameId f = thread ? t.InternFrame(FrameKind::kThread, "inner" + std::to_string(rng() % 3))
                                    : t.InternFrame(FrameKind::kFunction, names[rng() % 6]);
      const NodeId n = t.InternChild(parent, f);
      if (rng() % 3 != 0) t.AddValue(n, cpu, static_cast<double>(1 + rng() % 1000));
    }
    const std::string input = dir / ("tree" + std::to_string(seed) + ".tsv");
    {
      std::string text;
      for (NodeId n = 0; n < t.size(); ++n)
        text += std::to_string(n) + "\t" + (n == 0 ? "-1" : std::to_string(t.parent(n))) + "\t" +
                (t.kind(n) == FrameKind::kThread ? "thread" : n == 0 ? "root" : "function") + "\t" +
                std::string(t.name(n)) + "\t" + std::to_string(t.Value(n, cpu)) + "\n";
      testutil::WriteFileOrDie(input, text);
    }
    auto py = testutil::Run({"/usr/bin/python3", testutil::SourceDir() + "/tests/query/derive_reference.py", input});
    REQUIRE_MESSAGE(py.exit_code == 0, py.err);
    std::map<std::string, std::map<std::string, double>> expected;
    std::istringstream lines(py.out);
    for (std::string line; std::getline(lines, line);) {
      const size_t a = line.find('\t'), b = line.find('\t', a + 1);
      expected[line.substr(0, a)][line.substr(a + 1, b - a - 1)] = std::stod(line.substr(b + 1));
    }
    REQUIRE(expected.size() == 5);
    auto compare = [&](const std::string& what, const cct::Tree& got) {
      const std::map<std::string, double> values = DtValues(got, cpu);
      const std::map<std::string, double>& want = expected[what];
      CHECK(values.size() == want.size());
      for (const auto& entry : want) {
        const std::string& path = entry.first;  // CAPTURE takes no structured binding (clang 14)
        CAPTURE(what);
        CAPTURE(path);
        auto it = values.find(path);
        REQUIRE(it != values.end());
        CHECK(it->second == doctest::Approx(entry.second));
      }
    };
    for (const char* stat : {"sum", "mean", "min", "max"}) compare(stat, DtApply(t, {DtOp("merge-threads", stat)}));
    compare("keep10", DtApply(t, {DtOp("keep-min", "10")}));
  }
}
