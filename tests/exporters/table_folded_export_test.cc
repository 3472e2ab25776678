// The folded export's source lines and unit comment, and the table exports
// (csv, json-rows) of several runs in one file. Expected values come from
// the hand-built trees below.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cct/node_values.h"
#include "tests/interop_util.h"

namespace {

using cct::FrameKind;
using interop::Query;

constexpr double kMsNs = 1e6;

// thread "t": F (5 ms own, and 7 ms at line f.cc:3, 2 ms at f.cc:9) calls
// G (11 ms own); `gpu` adds a kernel metric at a second function when set.
cct::Tree LinesTree(bool gpu, double scale = 1) {
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  auto node = [&](cct::NodeId p, FrameKind k, const std::string& name, const std::string& file = "",
                  uint32_t line = 0) { return t.InternChild(p, t.InternFrame(k, name, "/bin/app", file, line)); };
  const cct::NodeId th = node(cct::kRootNode, FrameKind::kThread, "t");
  const cct::NodeId f = node(th, FrameKind::kFunction, "F", "f.cc", 1);
  t.AddValue(f, cpu, 5 * kMsNs * scale);
  t.AddValue(node(f, FrameKind::kLine, "f.cc:3", "f.cc", 3), cpu, 7 * kMsNs * scale);
  t.AddValue(node(f, FrameKind::kLine, "f.cc:9", "f.cc", 9), cpu, 2 * kMsNs * scale);
  t.AddValue(node(f, FrameKind::kFunction, "G", "g.cc", 1), cpu, 11 * kMsNs * scale);
  if (gpu) {
    const cct::MetricId gker = *t.metrics().RegisterStandard("gker");
    t.AddValue(node(th, FrameKind::kFunction, "launch"), gker, 3 * kMsNs);
  }
  return t;
}

std::map<std::string, double> FoldedLines(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    out[line.substr(0, sp)] += std::stod(line.substr(sp + 1));
  }
  return out;
}

TEST_CASE("folded export: source lines folded into their functions unless --lines") {
  testutil::TempDir dir;
  const std::string db = dir / "f.db";
  interop::StoreRun(db, LinesTree(false), "lines");
  auto plain = Query(db, {"export", "latest", "--to", "folded"});
  REQUIRE(plain.exit_code == 0);
  // F's own 5 ms and its lines' 7 + 2 ms are one stack.
  CHECK(FoldedLines(plain.out) == std::map<std::string, double>{{"t;F", 14 * kMsNs}, {"t;F;G", 11 * kMsNs}});
  CHECK(testutil::LineCount(plain.out) == 2);  // one line per stack, not one per folded node
  auto lines = Query(db, {"export", "latest", "--to", "folded", "--lines"});
  REQUIRE(lines.exit_code == 0);
  CHECK(FoldedLines(lines.out) == std::map<std::string, double>{{"t;F", 5 * kMsNs},
                                                                {"t;F;f.cc:3", 7 * kMsNs},
                                                                {"t;F;f.cc:9", 2 * kMsNs},
                                                                {"t;F;G", 11 * kMsNs}});
  // --lines and --unit-comment are the folded format's; elsewhere one line, exit 2.
  auto bad = Query(db, {"export", "latest", "--to", "csv", "--lines"});
  CHECK(bad.exit_code == 2);
  CHECK(testutil::LineCount(bad.err) == 1);
}

TEST_CASE("folded export --unit-comment: cct-import reads the metric and unit back") {
  testutil::TempDir dir;
  const std::string db = dir / "u.db";
  interop::StoreRun(db, LinesTree(false), "unit");
  const std::string file = dir / "u.folded";
  REQUIRE(Query(db, {"export", "latest", "--to", "folded", "--unit-comment", "-o", file}).exit_code == 0);
  std::ifstream in(file);
  std::string first;
  std::getline(in, first);
  CHECK(first == "# metric=cputime unit=ns");
  REQUIRE(interop::Import(db, {"--from", "folded", file, "--name", "back"}).exit_code == 0);
  const cct::Tree back = interop::ReadRun(db, 2);
  const cct::MetricId m = back.metrics().Find("cputime");
  REQUIRE(m != cct::kNoMetric);
  CHECK(back.metrics().Get(m).unit == cct::Unit::kNanoseconds);
  // 5 + 7 + 2 + 11 ms: nothing lost on the way.
  CHECK(cct::NodeValues(back).Inclusive(m)[cct::kRootNode] == doctest::Approx(25 * kMsNs));
  // --metric on the command line wins over the comment; other comments are skipped.
  {
    std::ofstream more(dir / "c.folded");
    more << "# metric=cputime unit=ns\n# produced by a test\na;b 3\n# a comment between stacks\na 4\n";
  }
  REQUIRE(interop::Import(db, {"--from", "folded", dir / "c.folded", "--metric", "hits", "--unit", "count"}).exit_code ==
          0);
  const cct::Tree hits = interop::ReadRun(db, 3);
  REQUIRE(hits.metrics().Find("hits") != cct::kNoMetric);
  CHECK(hits.metrics().Find("cputime") == cct::kNoMetric);
  CHECK(cct::NodeValues(hits).Inclusive(hits.metrics().Find("hits"))[cct::kRootNode] == 7);
}

TEST_CASE("csv and json-rows: several runs in one tidy table with a run column") {
  testutil::TempDir dir;
  const std::string db = dir / "t.db";
  const store::RunId a = interop::StoreRun(db, LinesTree(false), "a", {{"exp", "x"}});
  const store::RunId b = interop::StoreRun(db, LinesTree(true, 2), "b", {{"exp", "x"}});
  auto csv = Query(db, {"export", "a", "b", "--to", "csv"});
  REQUIRE(csv.exit_code == 0);
  // The union of the runs' metrics; run a has no gker.
  CHECK(csv.out.substr(0, csv.out.find('\n')) ==
        "run,run_name,node,parent,depth,kind,name,function,module,file,line,path,cputime (inc),cputime (exc),"
        "gker (inc),gker (exc)");
  const auto rows = testutil::ReadCsvRows(csv.out);
  std::map<std::string, double> cpu_by_run, gker_by_run;
  std::map<std::string, size_t> rows_by_run;
  for (const auto& r : rows) {
    ++rows_by_run[r.at("run")];
    cpu_by_run[r.at("run")] += r.at("cputime (exc)").empty() ? 0 : std::stod(r.at("cputime (exc)"));
    if (r.at("run") == std::to_string(a)) CHECK(r.at("gker (exc)").empty());
    else gker_by_run[r.at("run")] += r.at("gker (exc)").empty() ? 0 : std::stod(r.at("gker (exc)"));
  }
  // a: thread, F, 2 lines, G; b also launch.
  CHECK(rows_by_run == std::map<std::string, size_t>{{std::to_string(a), 5}, {std::to_string(b), 6}});
  CHECK(cpu_by_run[std::to_string(a)] == doctest::Approx(0.025));
  CHECK(cpu_by_run[std::to_string(b)] == doctest::Approx(0.050));
  CHECK(gker_by_run[std::to_string(b)] == doctest::Approx(0.003));

  // The same table as JSON rows: a value per cell, null where csv is empty.
  auto js = Query(db, {"export", "a", "b", "--to", "json-rows"});
  REQUIRE(js.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(js.out);
  REQUIRE(doc.is_array());
  REQUIRE(doc.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const auto& [key, cell] : rows[i]) {
      const nlohmann::json& v = doc[i].at(key);
      if (cell.empty() && (key == "parent" || key.find(" (") != std::string::npos)) CHECK(v.is_null());
      else if (v.is_number()) CHECK(v.get<double>() == doctest::Approx(std::stod(cell)));
      else CHECK(v.get<std::string>() == cell);
    }
  }

  // A group: its mean by default (no run id), each run with --per-run.
  auto mean = Query(db, {"export", "tag:exp=x", "--to", "csv"});
  REQUIRE(mean.exit_code == 0);
  const auto mean_rows = testutil::ReadCsvRows(mean.out);
  REQUIRE_FALSE(mean_rows.empty());
  CHECK(mean_rows.front().at("run").empty());
  CHECK(mean_rows.front().at("run_name").find("mean") != std::string::npos);
  auto per_run = Query(db, {"export", "tag:exp=x", "--to", "csv", "--per-run"});
  REQUIRE(per_run.exit_code == 0);
  std::map<std::string, size_t> per_run_rows;
  for (const auto& r : testutil::ReadCsvRows(per_run.out)) ++per_run_rows[r.at("run")];
  CHECK(per_run_rows == rows_by_run);

  // Formats of one run refuse several, naming those that take them.
  auto pprof = Query(db, {"export", "a", "b", "--to", "pprof"});
  CHECK(pprof.exit_code == 2);
  CHECK(testutil::LineCount(pprof.err) == 1);
  CHECK(pprof.err.find("csv and json-rows") != std::string::npos);

  // pandas reads both as they are, when it is installed.
  // Debian's python3, which has Debian's pandas (not a user's pyenv shim).
  const std::string python = "/usr/bin/python3";
  if (access(python.c_str(), X_OK) != 0 || testutil::Run({python, "-c", "import pandas"}).exit_code != 0) {
    MESSAGE("pandas not installed: the pandas check is skipped");
    return;
  }
  const std::string csv_file = dir / "t.csv", json_file = dir / "t.json";
  REQUIRE(Query(db, {"export", "a", "b", "--to", "csv", "-o", csv_file}).exit_code == 0);
  REQUIRE(Query(db, {"export", "a", "b", "--to", "json-rows", "-o", json_file}).exit_code == 0);
  const std::string script =
      "import pandas as pd, sys\n"
      "for df in (pd.read_csv(sys.argv[1]), pd.read_json(sys.argv[2])):\n"
      "    s = df.groupby('run')['cputime (exc)'].sum()\n"
      "    print(' '.join('%d=%.6f' % (r, v) for r, v in s.items()))\n";
  auto py = testutil::Run({python, "-c", script, csv_file, json_file});
  REQUIRE(py.exit_code == 0);
  const std::string expect = std::to_string(a) + "=0.025000 " + std::to_string(b) + "=0.050000\n";
  CHECK(py.out == expect + expect);
}

}  // namespace
