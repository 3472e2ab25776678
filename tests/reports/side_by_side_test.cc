// `cct-query tree A B C` (runs side by side) and `-m NAME=EXPR` (metrics
// defined on the command line), through the real tools. Expected values
// come from the folded inputs written here, summed by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "tests/test_util.h"

namespace {

// Three runs imported from folded stacks (one metric, `samples`):
//   A: main;a;x 5, main;b 3, main 2             total 10
//   B: main;a;x 7, main;c 4, main 1             total 12
//   C: main;a+0x1f;x 6, main 2                  total 8 (a symbol offset:
//      cct-diff's normalization aligns it with A's and B's `a`)
struct ThreeRuns {
  testutil::TempDir dir;
  std::string db = dir / "t.db";
  ThreeRuns() {
    Import("A", "main;a;x 5\nmain;b 3\nmain 2\n");
    Import("B", "main;a;x 7\nmain;c 4\nmain 1\n");
    Import("C", "main;a+0x1f;x 6\nmain 2\n");
  }
  void Import(const std::string& name, const std::string& folded) {
    const std::string path = dir / (name + ".folded");
    testutil::WriteFileOrDie(path, folded);
    auto r = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "folded", path, "--name", name});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  }
  testutil::RunResult Query(std::vector<std::string> args) const {
    std::vector<std::string> argv{testutil::Tool("cct-query"), "-d", db};
    argv.insert(argv.end(), args.begin(), args.end());
    return testutil::Run(argv);
  }
};

// CSV rows keyed by their path column, each a map column -> cell.
std::map<std::string, std::map<std::string, std::string>> CsvByPath(const std::string& csv) {
  std::map<std::string, std::map<std::string, std::string>> rows;
  for (auto& row : testutil::ReadCsvRows(csv)) rows[row["path"]] = row;
  return rows;
}

double Cell(const std::map<std::string, std::map<std::string, std::string>>& rows, const std::string& path,
            const std::string& column) {
  auto row = rows.find(path);
  REQUIRE_MESSAGE(row != rows.end(), path);
  auto cell = row->second.find(column);
  REQUIRE_MESSAGE(cell != row->second.end(), column);
  return cell->second.empty() ? std::nan("") : std::stod(cell->second);
}

}  // namespace

TEST_CASE("tree A B C: one column per run, aligned by path identity, values as each run holds them") {
  ThreeRuns t;
  auto r = t.Query({"tree", "A", "B", "C", "--format", "csv"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto rows = CsvByPath(r.out);
  // Union of paths: main, main;a, main;a;x, main;b, main;c (C's a+0x1f is a).
  CHECK(rows.size() == 6);  // and the root, path ""
  struct Expect {
    const char* path;
    double inc[3], exc[3];
  };
  for (const Expect& e : std::vector<Expect>{
           {"main", {10, 12, 8}, {2, 1, 2}},
           {"main;a", {5, 7, 6}, {0, 0, 0}},
           {"main;a;x", {5, 7, 6}, {5, 7, 6}},
           {"main;b", {3, 0, 0}, {3, 0, 0}},
           {"main;c", {0, 4, 0}, {0, 4, 0}},
       }) {
    CAPTURE(e.path);
    const char* runs[] = {"A", "B", "C"};
    for (int i = 0; i < 3; ++i) {
      CAPTURE(runs[i]);
      CHECK(Cell(rows, e.path, std::string("samples (inc) [") + runs[i] + "]") == e.inc[i]);
      CHECK(Cell(rows, e.path, std::string("samples (exc) [") + runs[i] + "]") == e.exc[i]);
    }
  }
}

TEST_CASE("tree A B: text and JSON goldens, --min by the largest share in any run, --focus on the union") {
  ThreeRuns t;
  auto golden = [&](const std::string& name, std::vector<std::string> args) {
    auto r = t.Query(args);
    CAPTURE(name);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.err.empty());
    const std::string diff = testutil::CheckGolden(name, r.out);
    CHECK_MESSAGE(diff.empty(), diff);
  };
  golden("tree_side_by_side.txt", {"tree", "A", "B", "C"});
  golden("tree_side_by_side_two_metrics.txt", {"tree", "A", "B", "-m", "samples", "-m", "half=samples / 2"});
  golden("tree_side_by_side.json", {"tree", "A", "B", "--format", "json", "--depth", "2"});

  // b is 30 % of A and absent from B; c is 33 % of B and absent from A: with
  // --min 31 only c (and the contexts above it, and a) stays.
  auto r = t.Query({"tree", "A", "B", "--min", "31", "--format", "csv"});
  REQUIRE(r.exit_code == 0);
  const auto rows = CsvByPath(r.out);
  CHECK(rows.count("main;c") == 1);
  CHECK(rows.count("main;b") == 0);
  CHECK(rows.count("main;a;x") == 1);
  // Children ordered by their largest share: c (4/12) before b (3/10).
  auto text = t.Query({"tree", "A", "B"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("─ c") < text.out.find("─ b"));

  auto focus = t.Query({"tree", "A", "B", "--focus", "^a$", "--format", "csv"});
  REQUIRE(focus.exit_code == 0);
  const auto frows = CsvByPath(focus.out);
  CHECK(frows.size() == 2);  // a and x
  CHECK(Cell(frows, "main;a", "samples (inc) [B]") == 7);
}

TEST_CASE("tree side by side: errors are one line, exit 2") {
  ThreeRuns t;
  std::vector<std::string> seventeen{"tree"};
  for (int i = 0; i < 17; ++i) seventeen.push_back("A");
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {seventeen, "up to 16 side by side"},
           {{"tree", "A", "Z"}, "no run matches 'Z'"},
           {{"tree", "A", "B", "-m", "nosuch"}, "no metric 'nosuch'"},
           {{"tree", "A", "B", "--focus", "zzz"}, "no frame matches"},
       }) {
    CAPTURE(c.expect);
    auto r = t.Query(c.args);
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
    CHECK_MESSAGE(r.err.find(c.expect) != std::string::npos, r.err);
  }
}

TEST_CASE("-m NAME=EXPR: a metric defined on the command line, in reports, exports and cct-diff") {
  ThreeRuns t;
  // tree: inclusive and exclusive of the definition follow from samples'.
  auto r = t.Query({"tree", "A", "--format", "csv", "-m", "samples", "-m", "tri = 3 * samples + 1"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto rows = CsvByPath(r.out);
  for (const auto& row : rows) {
    const std::string path = row.first;  // a copy: clang 14 cannot capture a structured binding
    if (path.empty()) continue;
    CAPTURE(path);
    const double inc = Cell(rows, path, "samples (inc)");
    const double exc = Cell(rows, path, "samples (exc)");
    CHECK(Cell(rows, path, "tri (inc)") == 3 * inc + 1);
    // Where no operand has a value, the definition has none either (blank).
    if (exc == 0)
      CHECK(std::isnan(Cell(rows, path, "tri (exc)")));
    else
      CHECK(Cell(rows, path, "tri (exc)") == 3 * exc + 1);
  }
  // A ratio of sums, never a sum of ratios: main;a's inclusive ratio of
  // samples to samples is 1 (5/5), not 2 (a's plus x's).
  auto ratio = t.Query({"tree", "A", "--format", "csv", "-m", "one=samples/samples"});
  REQUIRE(ratio.exit_code == 0);
  const auto rr = CsvByPath(ratio.out);
  CHECK(Cell(rr, "main;a", "one (inc)") == 1);
  CHECK(std::isnan(Cell(rr, "main;a", "one (exc)")));  // 0/0 has no value

  // Export and top take it too.
  auto exp = t.Query({"export", "B", "--to", "csv", "-m", "double=samples*2"});
  REQUIRE_MESSAGE(exp.exit_code == 0, exp.err);
  CHECK(exp.out.find("double (inc)") != std::string::npos);
  CHECK(exp.out.find(",24,") != std::string::npos);  // main: 2 * 12
  auto top = t.Query({"top", "B", "-m", "double=samples*2", "-n", "1", "--format", "csv"});
  REQUIRE_MESSAGE(top.exit_code == 0, top.err);
  CHECK(top.out.find("24") != std::string::npos);

  // cct-diff compares the definition's totals: 3*10 against 3*12.
  auto diff = testutil::Run({testutil::Tool("cct-diff"), "-d", t.db, "A", "B", "-m", "s3=samples*3", "--format", "csv"});
  REQUIRE_MESSAGE(diff.exit_code <= 1, diff.err);
  CHECK(diff.out.find("total,s3") != std::string::npos);
  CHECK(diff.out.find(",30,36,") != std::string::npos);

  struct Case {
    std::string spec, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"samples=samples*2", "already has a metric 'samples'"},
           {"x=nosuch+1", "reads 'nosuch', which this run does not have; it has: samples"},
           {"x=samples+", "metric definition 'x=samples+': formula 'samples+'"},
           {"2x=samples", "must be a word"},
       }) {
    CAPTURE(c.spec);
    auto e = t.Query({"tree", "A", "-m", c.spec});
    CHECK(e.exit_code == 2);
    CHECK(testutil::LineCount(e.err) == 1);
    CHECK_MESSAGE(e.err.find(c.expect) != std::string::npos, e.err);
  }
}
