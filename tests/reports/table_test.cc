// Paper tables: mean ± Student-t confidence interval per group of runs, as
// text, Markdown, CSV and LaTeX (compiled with pdflatex when it is there).
// Expected numbers are worked out by hand in the comments.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "reports/reports.h"
#include "tests/interop_util.h"

namespace {

using cct::FrameKind;

// A run: cputime `ms` in main/solve plus 1 ms in main/other; samples 100.
void AddRun(const std::string& db, double ms, const std::string& variant) {
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  const cct::MetricId samples = *t.metrics().RegisterStandard("samples");
  const cct::NodeId solve = interop::AddPath(t, {{FrameKind::kFunction, "main"}, {FrameKind::kFunction, "solve"}});
  t.AddValue(solve, cpu, (ms - 1) * 1e6);
  t.AddValue(interop::AddPath(t, {{FrameKind::kFunction, "main"}, {FrameKind::kFunction, "other"}}), cpu, 1e6);
  t.AddValue(solve, samples, 100);
  interop::StoreRun(db, t, "run", {{"exp", "fig3"}, {"variant", variant}});
}

// Runs: A = 10, 12, 11, 13, 9 ms; B = 20, 22, 21, 23 ms; C = 5 ms (one run).
//  A: mean 11, s^2 = (1+1+0+4+4)/4 = 2.5, s/sqrt(5) = 0.70711, t(.975,4) = 2.7764
//     -> half-width 1.9632 ms: "11.0 ± 2.0"
//  B: mean 21.5, s^2 = (2.25+.25+.25+2.25)/3 = 1.6667, s/sqrt(4) = 0.64550,
//     t(.975,3) = 3.1824 -> 2.0542 ms: "21.5 ± 2.1"
//  C: n = 1, no interval; the column's one decimal place (A's and B's): "5.0"
std::string Fixture(const testutil::TempDir& dir) {
  const std::string db = dir / "t.db";
  for (double ms : {10, 12, 11, 13, 9}) AddRun(db, ms, "A");
  for (double ms : {20, 22, 21, 23}) AddRun(db, ms, "B");
  AddRun(db, 5, "C");
  // A run of the same experiment without the tag is left out.
  cct::Tree t;
  t.AddValue(interop::AddPath(t, {{FrameKind::kFunction, "main"}}), *t.metrics().RegisterStandard("cputime"), 1e9);
  interop::StoreRun(db, t, "untagged", {{"exp", "fig3"}});
  return db;
}

}  // namespace

TEST_CASE("Student t quantiles match the printed tables") {
  // Two-sided 95% (and one 99%) critical values from a statistics table, to four decimals.
  CHECK(reports::StudentTQuantile(0.975, 1) == doctest::Approx(12.7062).epsilon(5e-5));
  CHECK(reports::StudentTQuantile(0.975, 2) == doctest::Approx(4.3027).epsilon(5e-5));
  CHECK(reports::StudentTQuantile(0.975, 3) == doctest::Approx(3.1824).epsilon(5e-5));
  CHECK(reports::StudentTQuantile(0.975, 4) == doctest::Approx(2.7764).epsilon(5e-5));
  CHECK(reports::StudentTQuantile(0.975, 9) == doctest::Approx(2.2622).epsilon(5e-5));
  CHECK(reports::StudentTQuantile(0.975, 29) == doctest::Approx(2.0452).epsilon(5e-5));
  CHECK(reports::StudentTQuantile(0.975, 100) == doctest::Approx(1.9840).epsilon(5e-5));
  CHECK(reports::StudentTQuantile(0.995, 10) == doctest::Approx(3.1693).epsilon(5e-5));
  CHECK(reports::StudentTQuantile(0.5, 7) == 0);
  CHECK(reports::StudentTQuantile(0.025, 4) == doctest::Approx(-2.7764).epsilon(5e-5));
}

TEST_CASE("table: mean ± CI per group as text, Markdown and CSV") {
  testutil::TempDir dir;
  const std::string db = Fixture(dir);
  auto text = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "-m", "cputime", "-m", "samples"});
  REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  CHECK(text.out.find("cputime (ms)") != std::string::npos);
  CHECK(text.out.find("11.0 ± 2.0") != std::string::npos);
  CHECK(text.out.find("21.5 ± 2.1") != std::string::npos);
  CHECK(text.out.find(" 5.0 ") != std::string::npos);
  CHECK(text.out.find("5.00") == std::string::npos);
  CHECK(text.out.find("100 ± 0") != std::string::npos);  // samples: identical in every run
  CHECK(text.out.find("(1 run without tag variant left out)") != std::string::npos);
  CHECK_MESSAGE(testutil::CheckGolden("table.txt", text.out) == "", testutil::CheckGolden("table.txt", text.out));

  auto md = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "--format", "markdown"});
  REQUIRE(md.exit_code == 0);
  CHECK(md.out.find("| variant | n | cputime (ms) |\n|:---|---:|---:|\n| A | 5 | 11.0 ± 2.0 |\n| B | 4 | 21.5 ± 2.1 |\n"
                    "| C | 1 | 5.0 |\n") == 0);

  auto csv = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "--format", "csv"});
  REQUIRE(csv.exit_code == 0);
  std::istringstream in(csv.out);
  std::string header, a;
  std::getline(in, header);
  std::getline(in, a);
  CHECK(header == "group,metric,unit,n,mean,sd,half_width,ci_low,ci_high");
  std::vector<std::string> cells;
  for (size_t s = 0, e; s <= a.size(); s = e + 1) {
    e = a.find(',', s);
    if (e == std::string::npos) e = a.size();
    cells.push_back(a.substr(s, e - s));
  }
  REQUIRE(cells.size() == 9);
  CHECK(cells[0] == "A");
  CHECK(cells[2] == "s");
  CHECK(cells[3] == "5");
  CHECK(std::stod(cells[4]) == doctest::Approx(0.011));
  CHECK(std::stod(cells[5]) == doctest::Approx(0.0015811).epsilon(1e-4));
  CHECK(std::stod(cells[6]) == doctest::Approx(0.0019632).epsilon(1e-3));

  // --nodes: the frames named solve only (each run's cputime minus 1 ms in
  // "other"): A 10.0 ± 2.0.
  auto nodes = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "--nodes", "^solve$", "--format", "json"});
  REQUIRE_MESSAGE(nodes.exit_code == 0, nodes.err);
  const auto doc = nlohmann::json::parse(nodes.out);
  CHECK(doc["groups"][0]["group"] == "A");
  CHECK(doc["groups"][0]["metrics"]["cputime"]["mean"].get<double>() == doctest::Approx(0.010));
  CHECK(doc["groups"][0]["metrics"]["cputime"]["half_width"].get<double>() == doctest::Approx(0.0019632).epsilon(1e-3));
  CHECK(doc["groups"][2]["metrics"]["cputime"]["half_width"].is_null());  // C: one run

  // Bad usage: one line, exit 2.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"table", "tag:exp=fig3"}, {"table", "tag:exp=fig3", "--by", "variant"},
        {"table", "tag:exp=fig3", "--by", "tag:nosuch"}, {"table", "tag:exp=fig3", "--by", "tag:variant", "-m", "nope"},
        {"table", "tag:exp=fig3", "--by", "tag:variant", "--format", "docx"},
        {"table", "tag:exp=fig3", "--by", "tag:variant", "--nodes", "("},
        {"table", "tag:exp=fig3", "--by", "tag:variant", "--confidence", "95"}}) {
    auto r = interop::Query(db, bad);
    CAPTURE(bad.back());
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
  }
}

TEST_CASE("table: LaTeX with booktabs, well-formed and compiled when a TeX engine is installed") {
  testutil::TempDir dir;
  const std::string db = Fixture(dir);
  auto tex = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "-m", "cputime", "-m", "samples",
                                 "--format", "latex"});
  REQUIRE_MESSAGE(tex.exit_code == 0, tex.err);
  const std::string& s = tex.out;
  // Structure: balanced braces, booktabs rules in order, 4 columns per row.
  int depth = 0;
  for (char c : s) {
    depth += c == '{';
    depth -= c == '}';
    REQUIRE(depth >= 0);
  }
  CHECK(depth == 0);
  const size_t top = s.find("\\toprule"), mid = s.find("\\midrule"), bottom = s.find("\\bottomrule");
  REQUIRE(top != std::string::npos);
  REQUIRE(mid != std::string::npos);
  REQUIRE(bottom != std::string::npos);
  CHECK(top < mid);
  CHECK(mid < bottom);
  CHECK(s.find("\\begin{tabular}{lrrr}") != std::string::npos);
  std::istringstream in(s.substr(top));
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\\\\") == std::string::npos) continue;
    ++rows;
    size_t amps = 0;
    for (char c : line) amps += c == '&';
    CHECK(amps == 3);
  }
  CHECK(rows == 4);  // header + A, B, C
  CHECK(s.find("$11.0 \\pm 2.0$") != std::string::npos);

  const std::string pdflatex = interop::FindProgram("pdflatex");
  if (pdflatex.empty()) {
    MESSAGE("SKIPPED compiling the LaTeX table: pdflatex is not installed (Debian texlive-latex-recommended)");
    return;
  }
  testutil::WriteFileOrDie(dir / "paper.tex", "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n" + s +
                                                  "\\end{document}\n");
  auto pdf = testutil::Run({pdflatex, "-interaction=nonstopmode", "-halt-on-error", "paper.tex"},
                           {{"HOME", dir.path()}}, 120, dir.path());
  CHECK_MESSAGE(pdf.exit_code == 0, pdf.out.substr(pdf.out.size() > 2000 ? pdf.out.size() - 2000 : 0));
  CHECK(testutil::ReadFileOrDie(dir / "paper.pdf").substr(0, 5) == "%PDF-");
}

TEST_CASE("table --format markdown: a tag value with a newline or a '|' stays in its cell") {
  // Found by tests/fuzz/output_fuzz.cc: a newline in a group name ended the
  // table row in the middle of its cell.
  testutil::TempDir dir;
  const std::string db = dir / "t.db";
  cct::Tree t;
  t.AddValue(interop::AddPath(t, {{FrameKind::kFunction, "main"}}), *t.metrics().RegisterStandard("cputime"), 1e6);
  interop::StoreRun(db, t, "run", {{"exp", "x"}, {"variant", "two\nlines|and\r\x01"}});
  auto md = interop::Query(db, {"table", "tag:exp=x", "--by", "tag:variant", "--format", "markdown"});
  REQUIRE_MESSAGE(md.exit_code == 0, md.err);
  CHECK(md.out.find("| two lines\\|and   | 1 | 1.00 |\n") != std::string::npos);
  std::istringstream in(md.out);
  std::string line;
  for (int i = 0; i < 3 && std::getline(in, line); ++i) CHECK_MESSAGE(line.rfind('|', 0) == 0, line);  // no row cut
}

TEST_CASE("table: one number of decimal places per column, and a speedup column against a baseline group") {
  testutil::TempDir dir;
  const std::string db = dir / "d.db";
  // A = 10, 12, 11, 13, 9 ms: mean 11, half-width 1.9632 (two significant
  // digits: one decimal). D = 20.0, 20.2, 20.4 ms: mean 20.2, s = 0.2,
  // t(.975,2) = 4.3027 -> 4.3027 * 0.2 / sqrt(3) = 0.49683 (two decimals).
  // C = 5 ms, one run. The column takes the most decimals an interval
  // needs, two, for every group.
  for (double ms : {10, 12, 11, 13, 9}) AddRun(db, ms, "A");
  for (double ms : {20.0, 20.2, 20.4}) AddRun(db, ms, "D");
  AddRun(db, 5, "C");
  auto text = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "-m", "cputime"});
  REQUIRE_MESSAGE(text.exit_code == 0, text.err);
  CHECK(text.out.find("A        5  11.00 ± 1.96\n") != std::string::npos);
  CHECK(text.out.find("C        1          5.00\n") != std::string::npos);
  CHECK(text.out.find("D        3  20.20 ± 0.50\n") != std::string::npos);

  // --baseline A: A's mean over each group's: A 1, C 11/5 = 2.2, D 11/20.2 = 0.5446.
  auto speedup = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "-m", "cputime", "--baseline", "A"});
  REQUIRE_MESSAGE(speedup.exit_code == 0, speedup.err);
  CHECK(speedup.out.find("cputime (ms)  speedup\n") != std::string::npos);
  CHECK(speedup.out.find("11.00 ± 1.96    1.00×\n") != std::string::npos);
  CHECK(speedup.out.find("5.00    2.20×\n") != std::string::npos);
  CHECK(speedup.out.find("20.20 ± 0.50    0.54×\n") != std::string::npos);
  auto md = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "--baseline", "A", "--format", "md",
                                "--ascii"});
  REQUIRE(md.exit_code == 0);
  CHECK(md.out.find("| variant | n | cputime (ms) | speedup |\n|:---|---:|---:|---:|\n") == 0);
  CHECK(md.out.find("| D | 3 | 20.20 +- 0.50 | 0.54x |\n") != std::string::npos);
  auto json = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "--baseline", "A", "--format", "json"});
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["baseline"] == "A");
  CHECK(doc["groups"][2]["group"] == "D");
  CHECK(doc["groups"][2]["metrics"]["cputime"]["speedup"].get<double>() == doctest::Approx(11 / 20.2));
  auto csv = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "--baseline", "C", "--format", "csv"});
  REQUIRE(csv.exit_code == 0);
  CHECK(csv.out.find("group,metric,unit,n,mean,sd,half_width,ci_low,ci_high,speedup\n") == 0);
  CHECK(csv.out.find("\nC,cputime,s,1,0.005,,,,,1\n") != std::string::npos);

  auto bad = interop::Query(db, {"table", "tag:exp=fig3", "--by", "tag:variant", "--baseline", "B"});
  CHECK(bad.exit_code == 2);
  CHECK(testutil::LineCount(bad.err) == 1);
  CHECK(bad.err.find("--baseline 'B' is not a group of tag variant (groups: A, C, D)") != std::string::npos);
  auto elsewhere = interop::Query(db, {"top", "latest", "--baseline", "A"});
  CHECK(elsewhere.exit_code == 2);
  CHECK(elsewhere.err.find("--baseline does not apply to 'top'") != std::string::npos);
}
