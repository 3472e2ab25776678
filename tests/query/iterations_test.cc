// Iterations in queries: LoadProfile with @iter=K, @iter=K..J and
// @iter=median against hand-computed values, its errors, and the CLI
// (tree, top, show, export, iterations, cct-diff) on a run written through
// the store API (the collector's path, without the collector).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "query/profile.h"
#include "store/database.h"
#include "tests/test_util.h"

using cct::FrameKind;
using cct::MetricId;
using cct::NodeId;

namespace {

constexpr int64_t kRunStart = 1700000000000000000;
constexpr double kMs = 1e6;

// The leaves that carry values, in the order of the tables below.
const char* const kLeaves[] = {"forward", "backward", "io"};

// cputime (ms) and samples of forward, backward, io in iterations 1..4.
const double kCpu[4][3] = {{10, 20, 0}, {12, 18, 5}, {30, 25, 0}, {11, 19, 1}};
const double kSamples[4][3] = {{60, 40, 0}, {4, 4, 2}, {20, 30, 0}, {30, 29, 1}};
// Outside every iteration: main 7 ms / 7 samples, io 3 ms / 3 samples.
const int64_t kStartMs[4] = {2, 40, 80, 145};
const int64_t kDurationMs[4] = {35, 38, 60, 33};

// main -> [nvtx] step -> forward, backward; main -> io. io is created
// between forward and backward, so the store's preorder renumbers nodes.
struct Train {
  cct::Tree tree;
  NodeId main, step, leaf[3];
  MetricId cpu, samples;
  Train() {
    cpu = tree.metrics().RegisterStandard("cputime").value();
    samples = tree.metrics().RegisterStandard("samples").value();
    main = tree.InternChild(cct::kRootNode, tree.InternFrame(FrameKind::kFunction, "main"));
    step = tree.InternChild(main, tree.InternFrame(FrameKind::kNvtx, "step"));
    leaf[0] = tree.InternChild(step, tree.InternFrame(FrameKind::kFunction, "forward"));
    leaf[2] = tree.InternChild(main, tree.InternFrame(FrameKind::kFunction, "io"));
    leaf[1] = tree.InternChild(step, tree.InternFrame(FrameKind::kFunction, "backward"));
  }
};

// The run's tree (iteration values plus what lies outside iterations, times
// `scale`) and its iterations.
std::pair<cct::Tree, store::RunIterations> MakeTrain(double scale = 1) {
  Train t;
  store::RunIterations its;
  its.range = "step";
  for (uint32_t i = 0; i < 4; ++i) {
    store::Iteration it;
    it.index = i;
    it.start_ns = kRunStart + kStartMs[i] * 1000000;
    it.duration_ns = kDurationMs[i] * 1000000;
    store::IterationColumn c{t.cpu, {}, {}}, s{t.samples, {}, {}};
    for (int k = 0; k < 3; ++k) {
      t.tree.AddValue(t.leaf[k], t.cpu, kCpu[i][k] * kMs * scale);
      t.tree.AddValue(t.leaf[k], t.samples, kSamples[i][k] * scale);
      if (kCpu[i][k] == 0) continue;
      c.nodes.push_back(t.leaf[k]);
      c.values.push_back(kCpu[i][k] * kMs * scale);
      s.nodes.push_back(t.leaf[k]);
      s.values.push_back(kSamples[i][k] * scale);
    }
    it.columns = {c, s};
    its.iterations.push_back(std::move(it));
  }
  t.tree.AddValue(t.main, t.cpu, 7 * kMs * scale);
  t.tree.AddValue(t.main, t.samples, 7 * scale);
  t.tree.AddValue(t.leaf[2], t.cpu, 3 * kMs * scale);
  t.tree.AddValue(t.leaf[2], t.samples, 3 * scale);
  return {std::move(t.tree), std::move(its)};
}

// Writes, through the store API as the collector does:
//   1 'train'  4 iterations of /step/, tag g=1
//   2 'plain'  the same tree, no iterations
//   3 'train2' values doubled, 4 iterations, tag g=1
//   4 'empty'  a range that matched nothing (0 iterations)
struct IterDb {
  testutil::TempDir dir;
  std::string db = dir / "iter.db";
  IterDb() {
    auto opened = store::Database::Open(db, store::Database::Mode::kWrite);
    REQUIRE(opened.ok());
    store::Database& d = **opened;
    auto meta = [](const std::string& name) {
      store::RunMeta m;
      m.name = name;
      m.state = store::RunState::kComplete;
      m.source = "test";
      m.start_time_ns = kRunStart;
      m.duration_ns = 200000000;
      return m;
    };
    auto [tree, its] = MakeTrain();
    store::RunMeta m1 = meta("train");
    m1.tags = {{"g", "1"}};
    REQUIRE(d.CreateRun(m1, &tree, &its).ok());
    store::RunMeta m2 = meta("plain");
    REQUIRE(d.CreateRun(m2, &tree).ok());
    auto [tree2, its2] = MakeTrain(2);
    store::RunMeta m3 = meta("train2");
    m3.tags = {{"g", "1"}};
    REQUIRE(d.CreateRun(m3, &tree2, &its2).ok());
    store::RunIterations none;
    none.range = "nomatch";
    store::RunMeta m4 = meta("empty");
    REQUIRE(d.CreateRun(m4, &tree, &none).ok());
  }
  testutil::RunResult Query(std::vector<std::string> args) const {
    std::vector<std::string> argv{testutil::Tool("cct-query"), "-d", db};
    argv.insert(argv.end(), args.begin(), args.end());
    return testutil::Run(argv, {{"TZ", "UTC"}});
  }
  cct::Result<query::Profile> Load(const std::string& sel, const query::LoadOptions& o = {}) const {
    return query::LoadProfile(sel, db, o);
  }
};

// Exclusive values of a profile's tree by leaf name.
std::map<std::string, double> Leaves(query::Profile& p, const std::string& metric) {
  const MetricId m = p.tree.metrics().Find(metric);
  std::map<std::string, double> out;
  cct::NodeValues v(p.tree);
  for (NodeId n = 0; n < p.tree.size(); ++n) out[std::string(p.tree.name(n))] = v.Exclusive(m)[n];
  return out;
}

// Hand-computed: the sum over iterations first..last (1-based) of a table.
std::map<std::string, double> Expected(const double (*table)[3], int first, int last, double unit) {
  std::map<std::string, double> out{{"<root>", 0}, {"main", 0}, {"step", 0}};
  for (int k = 0; k < 3; ++k) {
    double sum = 0;
    for (int i = first; i <= last; ++i) sum += table[i - 1][k];
    out[kLeaves[k]] = sum * unit;
  }
  return out;
}

}  // namespace

TEST_CASE("iterations: LoadProfile @iter=K is that iteration's values on the whole tree") {
  IterDb s;
  auto whole = s.Load("train");
  REQUIRE(whole.ok());
  for (int k = 1; k <= 4; ++k) {
    CAPTURE(k);
    auto p = s.Load("train@iter=" + std::to_string(k));
    REQUIRE_MESSAGE(p.ok(), p.status().message());
    CHECK(p->label == "run 1 'train' iteration " + std::to_string(k));
    CHECK(p->tree.size() == whole->tree.size());  // io keeps existing, with zeros
    const std::vector<char> touched = cct::NodesWithValues(p->tree);
    size_t shown = 0;
    for (char c : touched) shown += c != 0;
    CHECK(shown == (k == 1 || k == 3 ? 5u : 6u));  // root, main, step, forward, backward (+ io)
    CHECK(Leaves(*p, "cputime") == Expected(kCpu, k, k, kMs));
    CHECK(Leaves(*p, "samples") == Expected(kSamples, k, k, 1));
  }
  // 'main' and the run's values outside iterations are not in any iteration.
  auto p = s.Load("1@iter=1");
  REQUIRE(p.ok());
  cct::NodeValues v(p->tree);
  CHECK(v.Total(p->tree.metrics().Find("cputime")) == 30 * kMs);
}

TEST_CASE("iterations: LoadProfile @iter=K..J sums, @iter=median picks, groups average") {
  IterDb s;
  auto range = s.Load("train@iter=2..4");
  REQUIRE(range.ok());
  CHECK(range->label == "run 1 'train' iterations 2..4 (sum)");
  CHECK(Leaves(*range, "cputime") == Expected(kCpu, 2, 4, kMs));
  CHECK(Leaves(*range, "samples") == Expected(kSamples, 2, 4, 1));
  auto all = s.Load("train@iter=1..4");
  REQUIRE(all.ok());
  CHECK(Leaves(*all, "cputime") == Expected(kCpu, 1, 4, kMs));

  // cputime totals 30, 35, 55, 31 ms: sorted 1, 4, 2, 3; four iterations,
  // so the lower middle one, iteration 4.
  auto median = s.Load("train@iter=median");
  REQUIRE(median.ok());
  CHECK(median->label == "run 1 'train' iteration 4 (median of 4 by cputime)");
  CHECK(Leaves(*median, "cputime") == Expected(kCpu, 4, 4, kMs));
  // samples totals 100, 10, 50, 60: sorted 2, 3, 4, 1 -> iteration 3.
  query::LoadOptions by_samples;
  by_samples.median_metric = "samples";
  auto median_s = s.Load("train@iter=median", by_samples);
  REQUIRE(median_s.ok());
  CHECK(median_s->label == "run 1 'train' iteration 3 (median of 4 by samples)");
  CHECK(Leaves(*median_s, "samples") == Expected(kSamples, 3, 3, 1));
  by_samples.median_metric = "nosuch";
  CHECK(s.Load("train@iter=median", by_samples).status().message().find("no metric 'nosuch'") != std::string::npos);

  // A group: each run's iteration, then the mean (run 3 is run 1 doubled).
  auto group = s.Load("tag:g=1@iter=2");
  REQUIRE(group.ok());
  CHECK(group->label == "group tag:g=1@iter=2 (mean of 2 runs)");
  CHECK(Leaves(*group, "cputime").at("forward") == doctest::Approx(1.5 * 12 * kMs));

  // Merged threads and folded lines still apply.
  query::LoadOptions merge;
  merge.merge_threads = true;
  CHECK(s.Load("train@iter=3", merge).ok());
}

TEST_CASE("iterations: median helpers") {
  CHECK(query::MedianIteration({5}) == 0);
  CHECK(query::MedianIteration({3, 1}) == 1);        // lower of the two middle ones
  CHECK(query::MedianIteration({1, 3}) == 0);
  CHECK(query::MedianIteration({2, 2, 2, 2}) == 1);  // ties: earlier first
  CHECK(query::MedianIteration({9, 1, 5}) == 2);
  CHECK(query::MedianIteration({NAN, 1, 2}) == 2);   // NaN last
}

TEST_CASE("iterations: LoadProfile errors") {
  IterDb s;
  struct Case {
    std::string selector, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"plain@iter=1", "'plain@iter=1': run 2 'plain' has no iterations (record with --iteration REGEX)"},
           {"empty@iter=1", "run 4 'empty' has no iterations (no NVTX range matched /nomatch/)"},
           {"train@iter=5", "'train@iter=5': run 1 'train' has 4 iterations (1..4), not iteration 5"},
           {"train@iter=3..9", "run 1 'train' has 4 iterations (1..4), not iterations 3..9"},
           {"plain@iter=median", "has no iterations"},
           {"tag:g=1@iter=5", "run 1 'train' has 4 iterations"},
       }) {
    CAPTURE(c.selector);
    auto p = s.Load(c.selector);
    REQUIRE_FALSE(p.ok());
    CHECK_MESSAGE(p.status().message().find(c.expect) != std::string::npos, p.status().message());
  }
}

TEST_CASE("iterations: cct-query reports see the iteration's values") {
  IterDb s;
  // tree: JSON values are the iteration's (seconds).
  auto tree = s.Query({"tree", "train@iter=3", "--format", "json"});
  REQUIRE_MESSAGE(tree.exit_code == 0, tree.err);
  const auto root = nlohmann::json::parse(tree.out);
  CHECK(root["inclusive"]["cputime"].get<double>() == doctest::Approx(0.055));
  std::map<std::string, double> got;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& n) {
    got[n["name"]] = n["exclusive"]["cputime"].get<double>();
    for (const auto& c : n["children"]) walk(c);
  };
  walk(root);
  CHECK(got["forward"] == doctest::Approx(0.030));
  CHECK(got["backward"] == doctest::Approx(0.025));
  CHECK(got.count("io") == 0);  // in the profile (with zeros), not shown: iteration 3 did not touch it
  CHECK(got.count("main") == 1);
  auto csv = s.Query({"tree", "train@iter=3", "--format", "csv"});
  REQUIRE(csv.exit_code == 0);
  CHECK(csv.out.find(",io,") == std::string::npos);
  auto callers_io = s.Query({"callers", "train@iter=3", "^io$"});
  REQUIRE(callers_io.exit_code == 0);
  CHECK(callers_io.out.find("└─ main") == std::string::npos);
  CHECK(callers_io.out.find("cputime 0") != std::string::npos);

  // top: the sum of iterations 1..2.
  auto top = s.Query({"top", "train@iter=1..2", "--format", "json", "-n", "0"});
  REQUIRE_MESSAGE(top.exit_code == 0, top.err);
  std::map<std::string, double> rows;
  const auto top_doc = nlohmann::json::parse(top.out);
  for (const auto& r : top_doc["rows"]) rows[r["name"].get<std::string>()] = r["exclusive"]["cputime"].get<double>();
  CHECK(rows["forward"] == doctest::Approx(0.022));
  CHECK(rows["backward"] == doctest::Approx(0.038));
  CHECK(rows["io"] == doctest::Approx(0.005));

  // The label says which iteration; median follows -m.
  auto text = s.Query({"tree", "train@iter=median", "-m", "samples"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("run 1 'train' iteration 3 (median of 4 by samples): samples 50 total") == 0);

  // callers, metrics, export: iteration values too.
  auto callers = s.Query({"callers", "train@iter=2", "^io$", "--format", "json"});
  REQUIRE_MESSAGE(callers.exit_code == 0, callers.err);
  CHECK(nlohmann::json::parse(callers.out)["total"]["cputime"].get<double>() == doctest::Approx(0.005));
  auto metrics = s.Query({"metrics", "train@iter=2", "--format", "json"});
  REQUIRE(metrics.exit_code == 0);
  CHECK(nlohmann::json::parse(metrics.out)[0]["total"].get<double>() == doctest::Approx(0.035));
  auto exported = s.Query({"export", "train@iter=4", "--to", "folded"});
  REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
  CHECK(exported.out.find("io") != std::string::npos);
  auto shown = s.Query({"show", "train@iter=4", "--format", "json"});
  REQUIRE(shown.exit_code == 0);
  const auto show = nlohmann::json::parse(shown.out);
  CHECK(show["label"] == "run 1 'train' iteration 4");
  CHECK(show["totals"]["cputime"].get<double>() == doctest::Approx(0.031));
  CHECK(show["runs"][0]["iteration_count"] == 4);

  // The golden tree of one iteration.
  auto golden = s.Query({"tree", "train@iter=2"});
  REQUIRE(golden.exit_code == 0);
  const std::string diff = testutil::CheckGolden("iterations_tree.txt", golden.out);
  CHECK_MESSAGE(diff.empty(), diff);
}

TEST_CASE("iterations: cct-query iterations lists them (golden text, JSON, CSV)") {
  IterDb s;
  for (const auto& entry : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"iterations.txt", {"iterations", "train"}},
           {"iterations.json", {"iterations", "train", "--format", "json"}},
           {"iterations.csv", {"iterations", "train", "--format", "csv", "-m", "samples"}},
       }) {
    const auto& golden = entry.first;
    const auto& args = entry.second;
    CAPTURE(golden);
    auto r = s.Query(args);
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.err.empty());
    const std::string diff = testutil::CheckGolden(golden, r.out);
    CHECK_MESSAGE(diff.empty(), diff);
  }
  auto text = s.Query({"iterations", "train", "--width", "80"});
  for (size_t start = 0, end; start < text.out.size(); start = end + 1) {
    end = text.out.find('\n', start);
    CHECK(end - start <= 80);
  }
  // JSON: absolute starts, shares of the run's total, the median's index.
  auto json = s.Query({"iterations", "train", "--format", "json"});
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  REQUIRE(doc["iterations"].size() == 4);
  CHECK(doc["iterations"][1]["start_time_ns"] == kRunStart + 40000000);
  CHECK(doc["iterations"][1]["start"].get<double>() == doctest::Approx(0.040));
  CHECK(doc["iterations"][2]["value"].get<double>() == doctest::Approx(0.055));
  CHECK(doc["iterations"][2]["share"].get<double>() == doctest::Approx(55.0 / 161.0));
  CHECK(doc["duration"]["median"].get<double>() == doctest::Approx(0.0365));
  CHECK(doc["median_iteration"] == 4);
  // A range that matched nothing lists nothing.
  auto empty = s.Query({"iterations", "empty"});
  CHECK(empty.exit_code == 0);
  CHECK(empty.out == "run 4 'empty': 0 iterations of NVTX range /nomatch/\n");
  // show mentions the count and the pattern.
  auto show = s.Query({"show", "train"});
  REQUIRE(show.exit_code == 0);
  CHECK(show.out.find("iterations   4 of NVTX range /step/") != std::string::npos);
  CHECK(show.out.find("without strings and iterations") != std::string::npos);
  auto plain = s.Query({"show", "plain"});
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.out.find("iterations") == std::string::npos);
}

TEST_CASE("iterations: command-line errors exit 2 with one line") {
  IterDb s;
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {{"iterations", "plain"}, "run 2 'plain' has no iterations"},
           {{"iterations"}, "iterations expects one RUN"},
           {{"iterations", "train@iter=2"}, "drop the @iter="},
           {{"iterations", "tag:g=1"}, "names a group of 2 runs"},
           {{"iterations", "train", "-m", "nosuch"}, "no metric 'nosuch'"},
           {{"iterations", "train", "-m", "cputime", "-m", "samples"}, "one metric"},
           {{"iterations", "train", "--depth", "2"}, "--depth does not apply to 'iterations'"},
           {{"tree", "train@iter=9"}, "run 1 'train' has 4 iterations (1..4), not iteration 9"},
           {{"top", "plain@iter=1"}, "has no iterations"},
           {{"tree", "empty@iter=median"}, "no NVTX range matched /nomatch/"},
           {{"tree", "train@iter=0"}, "numbered from 1"},
       }) {
    CAPTURE(c.expect);
    auto r = s.Query(c.args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(testutil::LineCount(r.err) == 1);
    CHECK_MESSAGE(r.err.find(c.expect) != std::string::npos, r.err);
  }
}

TEST_CASE("iterations: cct-diff compares iterations through LoadProfile") {
  IterDb s;
  auto r = testutil::Run({testutil::Tool("cct-diff"), "-d", s.db, "train@iter=1", "train@iter=3", "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("iteration 1") != std::string::npos);
  CHECK(r.out.find("iteration 3") != std::string::npos);
  auto bad = testutil::Run({testutil::Tool("cct-diff"), "-d", s.db, "plain@iter=1", "train@iter=3"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("has no iterations") != std::string::npos);
}
