// cct-diff on iterations: RUN@iter=K against RUN@iter=median, and an
// iteration range as a group. The run and its iterations are written with
// the store API; cct-diff reads them through query::LoadProfile.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "store/database.h"
#include "store/iterations.h"
#include "tests/diff/diff_cli.h"

namespace {

// main -> a, b, c with three iterations (cputime, ms):
//   1: a 10, b 10         total 20
//   2: a 10, b 30, c 5    total 45
//   3: a 10, b 12         total 22   <- the median by total
void WriteRun(const std::string& db_path) {
  cct::Tree t;
  const cct::MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const cct::NodeId main = t.InternChild(cct::kRootNode, t.InternFrame(cct::FrameKind::kFunction, "main"));
  const cct::NodeId a = t.InternChild(main, t.InternFrame(cct::FrameKind::kFunction, "a"));
  const cct::NodeId b = t.InternChild(main, t.InternFrame(cct::FrameKind::kFunction, "b"));
  const cct::NodeId c = t.InternChild(main, t.InternFrame(cct::FrameKind::kFunction, "c"));
  const double ms = 1e6;
  const std::vector<std::vector<std::pair<cct::NodeId, double>>> per_iteration = {
      {{a, 10}, {b, 10}}, {{a, 10}, {b, 30}, {c, 5}}, {{a, 10}, {b, 12}}};
  store::RunIterations its;
  its.range = "step";
  for (size_t i = 0; i < per_iteration.size(); ++i) {
    store::Iteration it;
    it.index = static_cast<uint32_t>(i);
    store::IterationColumn col;
    col.metric = cpu;
    for (const auto& [node, value] : per_iteration[i]) {
      col.nodes.push_back(node);
      col.values.push_back(value * ms);
      t.AddValue(node, cpu, value * ms);
    }
    it.columns.push_back(std::move(col));
    its.iterations.push_back(std::move(it));
  }
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  store::RunMeta meta;
  meta.name = "trainer";
  meta.state = store::RunState::kComplete;
  meta.iteration_regex = "step";
  REQUIRE((*db)->CreateRun(meta, &t, &its).ok());
}

}  // namespace

TEST_CASE("cct-diff: an iteration against its run's median iteration") {
  difftest::DiffDb d;
  WriteRun(d.db());
  const auto r = d.Diff({"trainer@iter=2", "trainer@iter=median", "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["totals"][0]["base"].get<double>() == doctest::Approx(0.045));
  CHECK(j["totals"][0]["candidate"].get<double>() == doctest::Approx(0.022));
  // b fell from 30 to 12 ms; c ran in iteration 2 only: gone, not zero.
  CHECK(difftest::Paths(j["improvements"]) == std::set<std::vector<std::string>>{{"main", "b"}, {"main", "c"}});
  CHECK(difftest::Paths(j["context"]) == std::set<std::vector<std::string>>{{"main"}});  // -23 ms: b's -18 and c's -5
  CHECK(j["regressions"].empty());
  REQUIRE(j["gone"].size() == 1);
  CHECK(j["gone"][0]["path"] == std::vector<std::string>{"main", "c"});
  CHECK(j["gone"][0]["base"].get<double>() == doctest::Approx(0.005));
  CHECK(j["new"].empty());
  // The median is chosen by the compared metric too (-m).
  const auto m = d.Diff({"trainer@iter=2", "trainer@iter=median", "-m", "cputime", "--format", "json"});
  CHECK(nlohmann::json::parse(m.out)["totals"][0]["candidate"].get<double>() == doctest::Approx(0.022));
}

TEST_CASE("cct-diff: an iteration range is a group of iterations") {
  difftest::DiffDb d;
  WriteRun(d.db());
  const auto r = d.Diff({"1@iter=1..3", "1@iter=2", "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["base"]["group"] == true);
  CHECK(j["base"]["runs"].size() == 3);
  // Mean of 20, 45 and 22; one candidate iteration, so no test.
  CHECK(j["totals"][0]["base"].get<double>() == doctest::Approx(0.029));
  CHECK(j["totals"][0]["candidate"].get<double>() == doctest::Approx(0.045));
  CHECK(j["test"].is_null());
  const auto beyond = d.Diff({"1@iter=4", "1"});
  CHECK(beyond.exit_code == 2);
  CHECK(testutil::LineCount(beyond.err) == 1);
}
