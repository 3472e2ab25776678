// Aggregation across ranks and threads (tree/top -m METRIC@AGG) and ensemble
// statistics (stats) through cct-query: hand-built runs with values worked
// out in the comments, Hatchet's HPCToolkit dataframe read straight from its
// CSV, and a Python reference (tests/reports/stats_reference.py, no numpy)
// for the statistics.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "reports/reports.h"
#include "tests/interop_util.h"

using cct::FrameKind;

namespace {

constexpr double kStatsSec = 1e9;


// One run with three threads, cputime exclusive (s):
//   [thread] main      main/work 3, main/io 1
//   [thread] worker-1  main/work 5
//   [thread] worker-2  main/work 1, main/other 2
// Merged: main 12 (4, 5, 3 per thread), work 9 (3, 5, 1), io 1 (1, 0, 0),
// other 2 (0, 0, 2).
std::string StatsThreadsDb(const testutil::TempDir& dir) {
  const std::string db = dir / "threads.db";
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  auto put = [&](const std::string& thread, const std::string& leaf, double s) {
    t.AddValue(interop::AddPath(t, {{FrameKind::kThread, thread}, {FrameKind::kFunction, "main"},
                                    {FrameKind::kFunction, leaf}}),
               cpu, s * kStatsSec);
  };
  put("main", "work", 3);
  put("main", "io", 1);
  put("worker-1", "work", 5);
  put("worker-2", "work", 1);
  put("worker-2", "other", 2);
  interop::StoreRun(db, t, "threads", {});
  return db;
}

// The five runs of the ensemble: exclusive cputime (s) per path; some paths
// are missing in some runs (0 there).
const std::vector<std::map<std::string, double>>& StatsRuns() {
  static const std::vector<std::map<std::string, double>> kRuns = {
      {{"main", 0.5}, {"main/solve", 10}, {"main/solve/dgemm", 4}, {"main/io", 1}},
      {{"main", 0.5}, {"main/solve", 12}, {"main/solve/dgemm", 5}},
      {{"main", 0.25}, {"main/solve", 11}, {"main/solve/dgemm", 4.5}, {"main/io", 3}},
      {{"main", 0.75}, {"main/solve", 13}, {"main/solve/dgemm", 6}, {"main/io", 2}, {"main/extra", 0.5}},
      {{"main", 0.5}, {"main/solve", 9}, {"main/solve/dgemm", 3.5}, {"main/io", 1.5}},
  };
  return kRuns;
}

std::string StatsEnsembleDb(const testutil::TempDir& dir) {
  const std::string db = dir / "ensemble.db";
  for (const auto& run : StatsRuns()) {
    cct::Tree t;
    const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
    for (const auto& entry : run) {
      std::vector<std::pair<FrameKind, std::string>> frames;
      std::stringstream ss(entry.first);
      for (std::string part; std::getline(ss, part, '/');) frames.push_back({FrameKind::kFunction, part});
      t.AddValue(interop::AddPath(t, frames), cpu, entry.second * kStatsSec);
    }
    interop::StoreRun(db, t, "rep", {{"exp", "ens"}});
  }
  // One more run of another experiment: one run alone is no ensemble.
  cct::Tree t;
  t.AddValue(interop::AddPath(t, {{FrameKind::kFunction, "main"}}), *t.metrics().RegisterStandard("cputime"), 1e9);
  interop::StoreRun(db, t, "alone", {{"exp", "solo"}});
  return db;
}

// The reference statistics of stats_reference.py for the runs above.
nlohmann::json StatsReference(const std::vector<double>& percentiles, bool exclusive) {
  nlohmann::json spec;
  spec["percentiles"] = percentiles;
  spec["exclusive"] = exclusive;
  spec["runs"] = nlohmann::json::array();
  for (const auto& run : StatsRuns()) {
    nlohmann::json r = nlohmann::json::object();
    for (const auto& entry : run) r[entry.first] = entry.second;
    spec["runs"].push_back(r);
  }
  testutil::TempDir dir;
  testutil::WriteFileOrDie(dir / "spec.json", spec.dump());
  const auto r = testutil::Run({"/bin/sh", "-c",
                                "/usr/bin/python3 " + testutil::SourceDir() + "/tests/reports/stats_reference.py < " +
                                    dir / "spec.json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return nlohmann::json::parse(r.out);
}

// Visits the nodes of a stats JSON tree with their '/'-joined paths.
void StatsWalk(const nlohmann::json& node, const std::string& path,
               const std::function<void(const std::string&, const nlohmann::json&)>& f) {
  f(path, node);
  for (const auto& c : node["children"]) {
    const std::string name = c["name"].get<std::string>();
    StatsWalk(c, path.empty() ? name : path + "/" + name, f);
  }
}

}  // namespace

TEST_CASE("tree and top -m METRIC@AGG across the threads of a run") {
  testutil::TempDir dir;
  const std::string db = StatsThreadsDb(dir);
  auto text = interop::Query(db, {"tree", "latest", "-m", "cputime@sum", "-m", "cputime@max", "-m",
                                  "cputime@imbalance", "--width", "0"});
  REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  // The merged tree: no thread nodes; main's imbalance 5/4 at worker-1.
  CHECK(text.out.find("[thread]") == std::string::npos);
  CHECK(text.out.find("across 3 threads") != std::string::npos);
  CHECK(text.out.find("1.25 (thread 'worker-1')") != std::string::npos);
  CHECK(text.out.find("3.00 (thread 'main')") != std::string::npos);  // io: 1 / (1/3)
  CHECK_MESSAGE(testutil::CheckGolden("tree_aggregate.txt", text.out) == "",
                testutil::CheckGolden("tree_aggregate.txt", text.out));

  auto json = interop::Query(db, {"tree", "latest", "-m", "cputime@mean", "-m", "cputime@min", "-m",
                                  "cputime@imbalance", "--format", "json"});
  REQUIRE_MESSAGE(json.exit_code == 0, json.err);
  const auto doc = nlohmann::json::parse(json.out);
  const auto& main = doc["children"][0];
  REQUIRE(main["name"] == "main");
  CHECK(main["inclusive"]["cputime@mean"].get<double>() == doctest::Approx(4.0));
  CHECK(main["inclusive"]["cputime@min"].get<double>() == doctest::Approx(3.0));
  CHECK(main["inclusive"]["cputime@imbalance"].get<double>() == doctest::Approx(1.25));
  CHECK(main["inclusive"]["cputime@imbalance_at"] == "thread 'worker-1'");
  CHECK(main["exclusive"]["cputime@imbalance"].is_null());  // main's own time is 0 in every thread
  for (const auto& c : main["children"]) {
    if (c["name"] != "work") continue;
    // work: 3, 5, 1 -> mean 3, min 1, imbalance 5/3 at worker-1.
    CHECK(c["exclusive"]["cputime@mean"].get<double>() == doctest::Approx(3.0));
    CHECK(c["exclusive"]["cputime@min"].get<double>() == doctest::Approx(1.0));
    CHECK(c["exclusive"]["cputime@imbalance"].get<double>() == doctest::Approx(5.0 / 3.0));
    CHECK(c["exclusive"]["cputime@imbalance_at"] == "thread 'worker-1'");
  }

  auto csv = interop::Query(db, {"tree", "latest", "-m", "cputime@imbalance", "--format", "csv"});
  REQUIRE_MESSAGE(csv.exit_code == 0, csv.err);
  const auto rows = testutil::ReadCsvRows(csv.out);
  REQUIRE(rows.size() == 5);  // root, main, work, other, io
  CHECK(rows[1].at("name") == "main");
  CHECK(std::stod(rows[1].at("cputime@imbalance (inc)")) == doctest::Approx(1.25));
  CHECK(rows[1].at("cputime@imbalance at (inc)") == "thread 'worker-1'");
  CHECK(rows[1].at("cputime@imbalance (exc)").empty());

  // top: per function, each thread's value first. other: 0, 0, 2 -> max 2
  // at worker-2, min 0, mean 2/3.
  auto top = interop::Query(db, {"top", "latest", "-m", "cputime@max", "-m", "cputime@min", "-m", "cputime@mean",
                                 "-m", "cputime@imbalance", "--format", "csv"});
  REQUIRE_MESSAGE(top.exit_code == 0, top.err);
  std::map<std::string, std::map<std::string, std::string>> by_name;
  for (const auto& r : testutil::ReadCsvRows(top.out)) by_name[r.at("name")] = r;
  REQUIRE(by_name.count("other"));
  CHECK(std::stod(by_name["other"].at("cputime@max (inc)")) == doctest::Approx(2.0));
  CHECK(std::stod(by_name["other"].at("cputime@min (inc)")) == 0);
  CHECK(std::stod(by_name["other"].at("cputime@mean (inc)")) == doctest::Approx(2.0 / 3.0));
  CHECK(by_name["other"].at("cputime@imbalance at (inc)") == "thread 'worker-2'");
  CHECK(std::stod(by_name["main"].at("cputime@max (inc)")) == doctest::Approx(5.0));
  auto top_text = interop::Query(db, {"top", "latest", "-m", "cputime@mean", "-m", "cputime@imbalance", "--width", "0"});
  REQUIRE_MESSAGE(top_text.exit_code == 0, top_text.err);
  CHECK_MESSAGE(testutil::CheckGolden("top_aggregate.txt", top_text.out) == "",
                testutil::CheckGolden("top_aggregate.txt", top_text.out));

  // Bad aggregations: one line, exit 2.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"tree", "latest", "-m", "cputime@foo"}, {"top", "latest", "-m", "cputime@"},
        {"tree", "latest", "-m", "@max"}, {"tree", "latest", "-m", "nosuch@max"}}) {
    auto r = interop::Query(db, bad);
    CAPTURE(bad.back());
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
  }
  auto foo = interop::Query(db, {"tree", "latest", "-m", "cputime@foo"});
  CHECK(foo.err.find("unknown aggregation 'foo'") != std::string::npos);
}

TEST_CASE("-m METRIC@AGG by rank on HPCToolkit's cpi database matches Hatchet's dataframe") {
  const std::string dbdir = testutil::SharedData("hatchet/hpctoolkit-cpi-database");
  const std::string ref_csv = testutil::SharedData("hatchet/hpctoolkit-cpi-graphframe.csv");
  if (!std::filesystem::exists(dbdir + "/experiment.xml") || !std::filesystem::exists(ref_csv)) {
    MESSAGE("SKIPPED: " << dbdir << " is not there (the shared data beside the checkout)");
    return;
  }
  testutil::TempDir dir;
  const std::string db = dir / "h.db";
  auto imp = interop::Import(db, {"--from", "hpctoolkit", dbdir});
  REQUIRE_MESSAGE(imp.exit_code == 0, imp.err);

  // Hatchet's rows (node x rank): inclusive time per procedure name (its
  // "LINE:" call-site prefix taken off) and rank, for the names one node
  // carries (a name several nodes share sums differently per group).
  std::map<std::string, std::map<int, double>> ref;
  std::map<std::string, int> rows_per_name;
  for (const auto& row : testutil::ReadCsvRows(testutil::ReadFileOrDie(ref_csv))) {
    if (row.at("type") == "S") continue;
    const std::string name = std::regex_replace(row.at("name"), std::regex("^[0-9]+:"), "");
    ref[name][std::stoi(row.at("rank"))] = std::stod(row.at("time (inc)"));
    ++rows_per_name[name];
  }
  const std::string m = "CPUTIME (usec)";
  auto top = interop::Query(db, {"top", "latest", "-n", "0", "--format", "csv", "-m", m + "@sum", "-m", m + "@mean",
                                 "-m", m + "@min", "-m", m + "@max", "-m", m + "@imbalance"});
  REQUIRE_MESSAGE(top.exit_code == 0, top.err);
  std::map<std::string, int> ours_rows;
  std::map<std::string, std::map<std::string, std::string>> ours;
  for (const auto& r : testutil::ReadCsvRows(top.out)) {
    ++ours_rows[r.at("name")];
    ours[r.at("name")] = r;
  }
  size_t compared = 0;
  for (const auto& entry : ref) {
    const std::string& name = entry.first;
    const std::map<int, double>& per_rank = entry.second;
    if (rows_per_name[name] != 4 || ours_rows[name] != 1) continue;
    double sum = 0, mn = INFINITY, mx = -INFINITY;
    int at = -1;
    for (const auto& rv : per_rank) {
      sum += rv.second;
      mn = std::min(mn, rv.second);
      if (rv.second > mx) mx = rv.second, at = rv.first;
    }
    const double mean = sum / 4;
    if (mean == 0) continue;  // nothing ran there: top lists no row
    CAPTURE(name);
    const auto& r = ours.at(name);
    CHECK(std::stod(r.at(m + "@sum (inc)")) == doctest::Approx(sum).epsilon(1e-9));
    CHECK(std::stod(r.at(m + "@mean (inc)")) == doctest::Approx(mean).epsilon(1e-9));
    CHECK(std::stod(r.at(m + "@min (inc)")) == doctest::Approx(mn).epsilon(1e-9));
    CHECK(std::stod(r.at(m + "@max (inc)")) == doctest::Approx(mx).epsilon(1e-9));
    CHECK(std::stod(r.at(m + "@imbalance (inc)")) == doctest::Approx(mx / mean).epsilon(1e-9));
    CHECK(r.at(m + "@imbalance at (inc)") == "rank " + std::to_string(at));
    ++compared;
  }
  // program root, main, MPI_Finalize .. psm_dofinalize, __GI_sched_yield.
  CHECK(compared >= 8);
  REQUIRE(ours.count("__GI_sched_yield"));
  // Ranks 0 and 1 only: 17989 and 17991 -> imbalance 17991 / 8995 at rank 1.
  CHECK(std::stod(ours["__GI_sched_yield"].at(m + "@imbalance (inc)")) ==
        doctest::Approx(17991.0 / 8995.0).epsilon(1e-9));

  auto tree = interop::Query(db, {"tree", "latest", "-m", m + "@mean", "-m", m + "@imbalance", "--focus",
                                  "^PMPI_Finalize$", "--min", "1", "--width", "0"});
  REQUIRE_MESSAGE(tree.exit_code == 0, tree.err);
  CHECK(tree.out.find("across 4 ranks") != std::string::npos);
  CHECK_MESSAGE(testutil::CheckGolden("tree_aggregate_hpctoolkit.txt", tree.out) == "",
                testutil::CheckGolden("tree_aggregate_hpctoolkit.txt", tree.out));
}

TEST_CASE("stats: the ensemble statistics of five runs match a Python reference") {
  testutil::TempDir dir;
  const std::string db = StatsEnsembleDb(dir);
  struct Case {
    std::vector<std::string> extra;
    std::vector<double> percentiles;
    bool exclusive;
  };
  for (const Case& c : {Case{{}, {10, 25, 75, 90}, false}, Case{{"--percentiles", "5,50,95"}, {5, 50, 95}, false},
                        Case{{"--exclusive"}, {10, 25, 75, 90}, true}}) {
    std::vector<std::string> args{"stats", "tag:exp=ens", "--format", "json"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    auto r = interop::Query(db, args);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["runs"] == 5);
    const nlohmann::json ref = StatsReference(c.percentiles, c.exclusive);
    size_t seen = 0;
    StatsWalk(doc["trees"][0], "", [&](const std::string& path, const nlohmann::json& node) {
      if (path.empty()) return;  // the root
      CAPTURE(path);
      REQUIRE(ref.contains(path));
      const auto& want = ref[path];
      const auto& got = node["stats"]["cputime"];
      for (const auto& item : want.items()) {
        CAPTURE(item.key());
        if (item.value().is_null()) {
          CHECK(got[item.key()].is_null());
        } else {
          REQUIRE(got.contains(item.key()));
          CHECK(got[item.key()].get<double>() == doctest::Approx(item.value().get<double>()).epsilon(1e-9));
        }
      }
      ++seen;
    });
    CHECK(seen == ref.size());
  }

  auto text = interop::Query(db, {"stats", "tag:exp=ens", "--width", "0"});
  REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  CHECK_MESSAGE(testutil::CheckGolden("stats_tree.txt", text.out) == "",
                testutil::CheckGolden("stats_tree.txt", text.out));
  // Two selectors naming the same runs twice: still five runs.
  auto twice = interop::Query(db, {"stats", "tag:exp=ens", "1", "--format", "json"});
  REQUIRE_MESSAGE(twice.exit_code == 0, twice.err);
  CHECK(nlohmann::json::parse(twice.out)["runs"] == 5);

  // The flat list by function, sorted by mean: solve's inclusive values
  // 14 17 15.5 19 12.5 (with dgemm) -> mean 15.6; dgemm 4 5 4.5 6 3.5 ->
  // 4.6; io's 1 0 3 2 1.5 -> mean 1.5, median 1.5, min 0; extra 0.1.
  auto flat = interop::Query(db, {"stats", "tag:exp=ens", "--by", "function", "--format", "csv"});
  REQUIRE_MESSAGE(flat.exit_code == 0, flat.err);
  const auto rows = testutil::ReadCsvRows(flat.out);
  REQUIRE(rows.size() == 5);
  CHECK(rows[0].at("name") == "main");
  CHECK(rows[1].at("name") == "solve");
  CHECK(std::stod(rows[1].at("cputime mean")) == doctest::Approx(15.6));
  CHECK(rows[2].at("name") == "dgemm");
  CHECK(std::stod(rows[2].at("cputime mean")) == doctest::Approx(4.6));
  CHECK(rows[3].at("name") == "io");
  CHECK(std::stod(rows[3].at("cputime median")) == doctest::Approx(1.5));
  CHECK(std::stod(rows[3].at("cputime min")) == 0);
  auto flat_text = interop::Query(db, {"stats", "tag:exp=ens", "--by", "function", "-n", "3", "--width", "0"});
  REQUIRE_MESSAGE(flat_text.exit_code == 0, flat_text.err);
  CHECK_MESSAGE(testutil::CheckGolden("stats_top.txt", flat_text.out) == "",
                testutil::CheckGolden("stats_top.txt", flat_text.out));

  // Errors: one line, exit 2.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"stats", "tag:exp=solo"}, {"stats", "latest"}, {"stats", "tag:exp=ens", "-m", "cputime@max"},
        {"stats", "tag:exp=ens", "--percentiles", "5,x"}, {"stats", "tag:exp=ens", "--percentiles", "101"},
        {"stats", "tag:exp=ens", "--percentiles", ""}, {"stats", "tag:exp=ens", "-m", "nosuch"},
        {"stats", "tag:exp=none"}, {"stats", "tag:exp=ens", "--focus", "("}}) {
    auto r = interop::Query(db, bad);
    CAPTURE(bad.back());
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
  }
  auto one = interop::Query(db, {"stats", "tag:exp=solo"});
  CHECK(one.err.find("stats needs at least 2 runs") != std::string::npos);
}

TEST_CASE("stats: percentile lists") {
  auto p = reports::ParsePercentiles("5,50,95");
  REQUIRE(p.ok());
  CHECK(*p == std::vector<double>{5, 50, 95});
  auto q = reports::ParsePercentiles("0,2.5,100");
  REQUIRE(q.ok());
  CHECK((*q)[1] == 2.5);
  for (const char* bad : {"", ",", "5,", "-1", "100.5", "nan", "1e", "5;50"}) {
    CAPTURE(bad);
    CHECK(!reports::ParsePercentiles(bad).ok());
  }
}
