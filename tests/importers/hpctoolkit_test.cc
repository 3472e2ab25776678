// HPCToolkit databases (experiment.xml + metric-db): the real database from
// Hatchet's test suite (../shared/data/hatchet/), checked against the numbers
// its README states and against Hatchet's own dataframe of it
// (hpctoolkit-cpi-graphframe.csv).
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "importers/importer.h"
#include "tests/interop_util.h"

namespace {


}  // namespace

TEST_CASE("hpctoolkit: Hatchet's cpi database imports with the totals Hatchet asserts") {
  const std::string dbdir = testutil::SharedData("hatchet/hpctoolkit-cpi-database");
  const std::string ref_csv = testutil::SharedData("hatchet/hpctoolkit-cpi-graphframe.csv");
  if (!std::filesystem::exists(dbdir + "/experiment.xml") || !std::filesystem::exists(ref_csv)) {
    MESSAGE("SKIPPED: " << dbdir << " is not there (the shared data beside the checkout)");
    return;
  }
  testutil::TempDir dir;
  const std::string db = dir / "h.db";
  auto r = interop::Import(db, {"--from", "hpctoolkit", dbdir});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const cct::Tree t = interop::ReadRun(db, 1);
  const cct::MetricId time = t.metrics().Find("CPUTIME (usec)");
  REQUIRE(time != cct::kNoMetric);
  cct::NodeValues v(t);
  const std::vector<double>& exc = v.Exclusive(time);
  const std::vector<double>& inc = v.Inclusive(time);

  // README: Σ time = 3,998,242; root inclusive time on rank 0 = 999,238.
  CHECK(v.Total(time) == doctest::Approx(3998242).epsilon(1e-12));
  std::map<std::string, cct::NodeId> ranks;
  const cct::Children ch = cct::BuildChildren(t);
  for (const cct::NodeId* c = ch.begin(cct::kRootNode); c != ch.end(cct::kRootNode); ++c) {
    CHECK(t.kind(*c) == cct::FrameKind::kThread);
    ranks[std::string(t.name(*c))] = *c;
  }
  REQUIRE(ranks.size() == 4);
  CHECK(inc[ranks.at("rank 0")] == doctest::Approx(999238).epsilon(1e-12));
  // README: 5 modules, 11 files.
  std::set<std::string> modules, files;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    const cct::Frame f = t.frame(n);
    if (f.module) modules.insert(std::string(t.str(f.module)));
    if (f.file) files.insert(std::string(t.str(f.file)));
  }
  CHECK(modules.size() == 5);
  CHECK(files.size() == 11);

  // Hatchet's dataframe, row by row (node x rank): exclusive time per
  // (rank, procedure), with Hatchet's "LINE:" call-site prefix taken off the
  // names; statements per rank in total (Hatchet names a statement after the
  // file of the procedure it read last, not the one it belongs to, so names
  // differ there; totals cannot).
  std::map<std::pair<std::string, std::string>, double> ref_fn, ours_fn;
  std::map<std::string, double> ref_stmt, ours_stmt, ref_main_inc, ours_main_inc;
  double ref_sum = 0;
  size_t rows = 0;
  for (const auto& row : testutil::ReadCsvRows(testutil::ReadFileOrDie(ref_csv))) {
    ++rows;
    const std::string rank = "rank " + row.at("rank");
    const double time_exc = std::stod(row.at("time"));
    ref_sum += time_exc;
    if (row.at("type") == "S") {
      ref_stmt[rank] += time_exc;
    } else {
      ref_fn[{rank, std::regex_replace(row.at("name"), std::regex("^[0-9]+:"), "")}] += time_exc;
      if (row.at("name") == "main") ref_main_inc[rank] += std::stod(row.at("time (inc)"));
    }
  }
  CHECK(rows == 136);  // 34 nodes x 4 ranks, as the README says
  CHECK(ref_sum == doctest::Approx(3998242).epsilon(1e-12));
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    if (t.kind(n) == cct::FrameKind::kThread) continue;
    cct::NodeId top = n;
    while (t.parent(top) != cct::kRootNode) top = t.parent(top);
    const std::string rank(t.name(top));
    if (t.kind(n) == cct::FrameKind::kLine) ours_stmt[rank] += exc[n];
    else ours_fn[{rank, std::string(t.name(n))}] += exc[n];
    if (t.name(n) == "main") ours_main_inc[rank] += inc[n];
  }
  CHECK(ref_fn.size() == ours_fn.size());
  for (const auto& entry : ref_fn) {
    const auto& key = entry.first;
    const auto& value = entry.second;
    CAPTURE(key.first);
    CAPTURE(key.second);
    REQUIRE(ours_fn.count(key));
    CHECK(ours_fn.at(key) == doctest::Approx(value).epsilon(1e-9));
  }
  for (const auto& [rank, value] : ref_stmt) CHECK(ours_stmt.at(rank) == doctest::Approx(value).epsilon(1e-9));
  for (const auto& [rank, value] : ref_main_inc) CHECK(ours_main_inc.at(rank) == doctest::Approx(value).epsilon(1e-9));

  // --metric/--unit turn HPCToolkit's microseconds into our time unit.
  auto us = interop::Import(db, {"--from", "hpctoolkit", dbdir, "--metric", "CPUTIME (usec)", "--unit", "us"});
  REQUIRE_MESSAGE(us.exit_code == 0, us.err);
  const cct::Tree t2 = interop::ReadRun(db, 2);
  const cct::MetricId time2 = t2.metrics().Find("CPUTIME (usec)");
  CHECK(t2.metrics().Get(time2).unit == cct::Unit::kNanoseconds);
  cct::NodeValues v2(t2);
  CHECK(v2.Total(time2) == doctest::Approx(3998242e3).epsilon(1e-12));
}

TEST_CASE("hpctoolkit: damaged or foreign databases are one clear line, exit 2") {
  const std::string dbdir = testutil::SharedData("hatchet/hpctoolkit-cpi-database");
  if (!std::filesystem::exists(dbdir + "/experiment.xml")) {
    MESSAGE("SKIPPED: " << dbdir << " is not there");
    return;
  }
  testutil::TempDir dir;
  const std::string db = dir / "h.db";
  namespace fs = std::filesystem;
  auto copy = [&](const std::string& name) {
    const std::string to = dir / name;
    fs::create_directories(to);
    for (const auto& e : fs::directory_iterator(dbdir))
      if (e.is_regular_file()) fs::copy_file(e.path(), to + "/" + e.path().filename().string());
    for (const auto& e : fs::directory_iterator(to)) fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add);
    return to;
  };
  // A truncated metric-db file.
  const std::string trunc = copy("truncated");
  for (const auto& e : fs::directory_iterator(trunc))
    if (e.path().extension() == ".metric-db") {
      fs::resize_file(e.path(), 500);
      break;
    }
  // experiment.xml cut in the middle.
  const std::string cut = copy("cut");
  const std::string xml = testutil::ReadFileOrDie(cut + "/experiment.xml");
  testutil::WriteFileOrDie(cut + "/experiment.xml", xml.substr(0, xml.size() / 2 + 100));
  // The newer format.
  fs::create_directories(dir / "newer");
  testutil::WriteFileOrDie(dir / "newer/meta.db", "HPCTOOLKITmeta");
  fs::create_directories(dir / "empty");
  for (const std::string& bad : {trunc, cut, dir / "newer", dir / "empty", dir / "absent"}) {
    CAPTURE(bad);
    auto r = interop::Import(db, {"--from", "hpctoolkit", bad});
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
  }
  auto newer = interop::Import(db, {"--from", "hpctoolkit", dir / "newer"});
  CHECK(newer.err.find("meta.db") != std::string::npos);
}
