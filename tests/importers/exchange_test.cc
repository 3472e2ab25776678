// Imports and exports: round trips, Hatchet's own numbers, malformed input.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "importers/importer.h"
#include "tests/test_util.h"

namespace {

std::vector<std::string> SortedLines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

testutil::RunResult Import(const std::string& db, const std::string& from, const std::string& file,
                           std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{testutil::Tool("cct-import"), "-d", db, "--from", from, file};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return testutil::Run(argv);
}

testutil::RunResult Query(const std::string& db, std::vector<std::string> args) {
  std::vector<std::string> argv{testutil::Tool("cct-query"), "-d", db};
  argv.insert(argv.end(), args.begin(), args.end());
  return testutil::Run(argv);
}

// Leaf-to-root names and exclusive values of every node, for comparing trees
// that came through different formats.
std::map<std::string, std::map<std::string, double>> Flatten(const cct::Tree& t) {
  std::map<std::string, std::map<std::string, double>> out;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    std::string path;
    for (const std::string& p : cct::PathNames(t, n)) path += p + ";";
    path += std::string(cct::FrameKindName(t.kind(n)));
    auto& vals = out[path];
    for (cct::MetricId m = 0; m < t.metrics().size(); ++m)
      if (t.Value(n, m) != 0) vals[t.metrics().Get(m).name] = t.Value(n, m);
  }
  return out;
}

}  // namespace

TEST_CASE("folded: import then export gives back the same stacks and values exactly") {
  testutil::TempDir dir;
  std::mt19937 rng(11);
  const std::vector<std::string> names = {"main", "std::vector<int>::push_back(int const&)", "operator new(unsigned long)",
                                          "λ-calculus", "f", "g", "[unknown]", "a b c"};
  std::set<std::string> stacks;
  while (stacks.size() < 400) {
    std::string s;
    const int depth = 1 + static_cast<int>(rng() % 12);
    for (int d = 0; d < depth; ++d) s += (d ? ";" : "") + names[rng() % names.size()];
    stacks.insert(s);
  }
  std::string input;
  for (const std::string& s : stacks) input += s + " " + std::to_string(1 + rng() % 1000000) + "\n";
  const std::string file = dir / "in.folded", db = dir / "f.db";
  testutil::WriteFileOrDie(file, input);
  REQUIRE(Import(db, "folded", file).exit_code == 0);
  auto out = Query(db, {"export", "1", "--to", "folded"});
  REQUIRE(out.exit_code == 0);
  CHECK(SortedLines(out.out) == SortedLines(input));
  // With a metric and unit: values come back in stored units (ns).
  REQUIRE(Import(db, "folded", file, {"--metric", "cputime", "--unit", "us"}).exit_code == 0);
  auto ns = Query(db, {"export", "2", "--to", "folded"});
  auto first = SortedLines(input).front(), back = SortedLines(ns.out).front();
  CHECK(back.substr(0, back.rfind(' ')) == first.substr(0, first.rfind(' ')));
  CHECK(std::stod(back.substr(back.rfind(' '))) == std::stod(first.substr(first.rfind(' '))) * 1000);
  // -o writes a file.
  REQUIRE(Query(db, {"export", "1", "--to", "folded", "-o", dir / "out.folded"}).exit_code == 0);
  CHECK(SortedLines(testutil::ReadFileOrDie(dir / "out.folded")) == SortedLines(input));
}

TEST_CASE("folded: duplicate stacks add up; malformed lines name file and line") {
  testutil::TempDir dir;
  const std::string db = dir / "m.db";
  testutil::WriteFileOrDie(dir / "dup.folded", "a;b 3\n\na;b 4\r\n  a 1  \n");
  REQUIRE(Import(db, "folded", dir / "dup.folded").exit_code == 0);
  auto out = Query(db, {"export", "1", "--to", "folded"});
  CHECK(SortedLines(out.out) == std::vector<std::string>{"a 1", "a;b 7"});

  testutil::WriteFileOrDie(dir / "bad.folded", "a;b 3\na;c x\nnovalue\n;a 2\na;b inf\na;d 5\n");
  auto r = Import(db, "folded", dir / "bad.folded");
  CHECK(r.exit_code == 2);
  CHECK(testutil::LineCount(r.err) == 1);
  CHECK(r.err.find("bad.folded:2: 'x' is not a number") != std::string::npos);
  auto skip = Import(db, "folded", dir / "bad.folded", {"--skip-bad-lines"});
  CHECK(skip.exit_code == 0);
  CHECK(skip.err.find("skipped 4 malformed record(s); first: " + (dir / "bad.folded") + ":2") != std::string::npos);
  auto kept = Query(db, {"export", "latest", "--to", "folded"});
  CHECK(SortedLines(kept.out) == std::vector<std::string>{"a;b 3", "a;d 5"});
  auto show = Query(db, {"show", "latest"});
  CHECK(show.out.find("import_skipped_records 4") != std::string::npos);

  testutil::WriteFileOrDie(dir / "empty.folded", "\n\n");
  CHECK(Import(db, "folded", dir / "empty.folded").exit_code == 2);
  CHECK(Import(db, "folded", dir / "absent.folded").exit_code == 2);
  CHECK(Import(db, "folded", dir / "dup.folded", {"--unit", "furlongs"}).exit_code == 2);
  CHECK(Import(db, "folded", dir / "dup.folded", {"--metric", "cputime", "--unit", "bytes"}).exit_code == 2);
  CHECK(Import(db, "pprof", dir / "dup.folded").exit_code == 2);
}

TEST_CASE("hatchet: Hatchet's own test profile imports with the numbers Hatchet asserts") {
  // ../shared/data/hatchet/README.md: 24 nodes; "(inc)" inclusive, others exclusive.
  const std::string file = testutil::SharedData("hatchet/hatchet-graph-literal.json");
  if (access(file.c_str(), R_OK) != 0) {
    MESSAGE("SKIPPED: " << file << " is not there (the shared data beside the checkout)");
    return;
  }
  importers::ImportOptions io;
  auto r = importers::ImportHatchet(file, io);
  REQUIRE(r.ok());
  const cct::Tree& t = r->tree;
  CHECK(t.size() == 25);  // 24 + our root
  const cct::MetricId time = t.metrics().Find("time");
  REQUIRE(time != cct::kNoMetric);
  cct::NodeValues v(t);
  // Roots foo (135 inclusive) and waldo (30), read off the file's dataframe.
  const nlohmann::json doc = nlohmann::json::parse(testutil::ReadFileOrDie(file));
  double inc_sum_of_roots = 0;
  for (const auto& row : doc["dataframe"])
    if (row["node"] == 0 || row["node"] == 20) inc_sum_of_roots += row["time (inc)"].get<double>();
  CHECK(inc_sum_of_roots == 165);
  CHECK(v.Total(time) == 165);
  const cct::Children ch = cct::BuildChildren(t);
  REQUIRE(ch.count(cct::kRootNode) == 2);
  for (const cct::NodeId* c = ch.begin(cct::kRootNode); c != ch.end(cct::kRootNode); ++c) {
    if (t.name(*c) == "foo") CHECK(v.Inclusive(time)[*c] == 135);
    if (t.name(*c) == "waldo") CHECK(v.Inclusive(time)[*c] == 30);
  }
}

TEST_CASE("hatchet: export and re-import round trips, literal and graph+dataframe inputs") {
  testutil::TempDir dir;
  const std::string db = dir / "h.db";
  for (const std::string& file :
       {testutil::SharedData("hatchet/hatchet-graph-literal.json"), testutil::SourceDir() + "/examples/sample-profile.json"}) {
    CAPTURE(file);
    if (access(file.c_str(), R_OK) != 0) {
      MESSAGE("SKIPPED: " << file << " is not there (the shared data beside the checkout)");
      continue;
    }
    importers::ImportOptions io;
    auto original = importers::ImportHatchet(file, io);
    REQUIRE(original.ok());
    REQUIRE(Import(db, "hatchet", file).exit_code == 0);
    const std::string out = dir / "export.json";
    REQUIRE(Query(db, {"export", "latest", "--to", "hatchet", "-o", out}).exit_code == 0);
    // The export is the literal format: a list of roots with frame/metrics/children.
    const nlohmann::json lit = nlohmann::json::parse(testutil::ReadFileOrDie(out));
    REQUIRE(lit.is_array());
    CHECK(lit[0].contains("frame"));
    CHECK(lit[0]["metrics"].size() % 2 == 0);  // each metric exclusive and "(inc)"
    auto again = importers::ImportHatchet(out, io);
    REQUIRE(again.ok());
    const auto a = Flatten(original->tree), b = Flatten(again->tree);
    REQUIRE(a.size() == b.size());
    for (const auto& entry : a) {
      const auto& path = entry.first;
      const auto& vals = entry.second;
      CAPTURE(path);
      REQUIRE(b.count(path));
      for (const auto& [m, x] : vals) CHECK(b.at(path).at(m) == doctest::Approx(x).epsilon(1e-12));
    }
  }
}

TEST_CASE("hatchet: inclusive values that disagree with the exclusive ones are reported") {
  testutil::TempDir dir;
  const std::string file = dir / "bad.json";
  testutil::WriteFileOrDie(file, R"J([{"frame": {"name": "a", "type": "function"}, "metrics": {"time": 1, "time (inc)": 10},
    "children": [{"frame": {"name": "b", "type": "function"}, "metrics": {"time": 2, "time (inc)": 2}, "children": []}]}])J");
  const std::string db = dir / "x.db";
  auto r = Import(db, "hatchet", file);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("node 'a': 'time (inc)' is 10") != std::string::npos);
  CHECK(r.err.find("sum to 3") != std::string::npos);
  CHECK(Import(db, "hatchet", file, {"--skip-bad-lines"}).exit_code == 0);

  // Inclusive-only metrics get exclusive = own inclusive - children's.
  testutil::WriteFileOrDie(file, R"J([{"frame": {"name": "a"}, "metrics": {"t (inc)": 10},
    "children": [{"frame": {"name": "b"}, "metrics": {"t (inc)": 4}, "children": []}]}])J");
  importers::ImportOptions io;
  auto inc_only = importers::ImportHatchet(file, io);
  REQUIRE(inc_only.ok());
  const cct::MetricId t = inc_only->tree.metrics().Find("t");
  CHECK(inc_only->tree.Value(1, t) == 6);
  CHECK(inc_only->tree.Value(2, t) == 4);

  for (const char* bad : {"not json", "{\"x\": 1}", "[{\"metrics\": {}}]", "[{\"frame\": {\"name\": \"a\"}, \"children\": 3}]",
                          R"J({"graph": [{"0": {"data": {"name": "a"}, "children": [7]}}], "dataframe": []})J",
                          R"J({"graph": [{"0": {"data": {"name": "a"}, "children": [0]}}], "dataframe": []})J"}) {
    testutil::WriteFileOrDie(file, bad);
    auto e = Import(db, "hatchet", file);
    CAPTURE(bad);
    CHECK(e.exit_code == 2);
    CHECK(testutil::LineCount(e.err) == 1);
  }
}

TEST_CASE("hatchet: graph+dataframe rows per rank become thread nodes") {
  testutil::TempDir dir;
  const std::string file = dir / "ranks.json";
  testutil::WriteFileOrDie(file, R"J({"graph": [{"0": {"data": {"name": "main", "type": "function"}, "children": [1]},
      "1": {"data": {"name": "solve", "type": "function"}, "children": []}}],
    "dataframe_indices": ["node", "rank"],
    "dataframe": [{"node": 0, "rank": 0, "time": 1, "time (inc)": 4}, {"node": 1, "rank": 0, "time": 3, "time (inc)": 3},
                  {"node": 0, "rank": 1, "time": 2, "time (inc)": 7}, {"node": 1, "rank": 1, "time": 5, "time (inc)": 5}],
    "exclusive_metrics": ["time"], "inclusive_metrics": ["time (inc)"]})J");
  importers::ImportOptions io;
  auto r = importers::ImportHatchet(file, io);
  REQUIRE(r.ok());
  const cct::Tree& t = r->tree;
  CHECK(t.size() == 7);  // root, 2 ranks x (rank, main, solve)
  cct::NodeValues v(t);
  CHECK(v.Total(t.metrics().Find("time")) == 11);
  const cct::Children ch = cct::BuildChildren(t);
  REQUIRE(ch.count(cct::kRootNode) == 2);
  CHECK(t.kind(ch.ids[ch.offsets[0]]) == cct::FrameKind::kThread);
  CHECK(t.name(ch.ids[ch.offsets[0]]) == "rank 0");
}
