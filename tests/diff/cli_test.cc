// cct-diff through the real tools: runs imported with cct-import (folded
// stacks), groups of 5 + 5 runs tagged differently, golden reports, exit
// statuses. Expected values come from the stacks the tests write.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "output/format.h"
#include "tests/diff/diff_cli.h"
#include "tests/test_util.h"

using difftest::DiffDb;
using difftest::Stack;

namespace {

// The program both versions run; the candidate's slow() takes twice as long.
const std::vector<Stack> kProgram = {
    {"main;init", 50},          {"main;compute;slow", 100}, {"main;compute;fast", 300}, {"main;compute", 20},
    {"main;io;read", 200},      {"main;io;write", 150},     {"main;teardown", 30},
};

std::vector<Stack> SlowerSlow() {
  std::vector<Stack> s = kProgram;
  for (Stack& x : s)
    if (x.path == "main;compute;slow") x.value = 200;
  return s;
}

// Five base runs tagged commit=abc and five candidate runs tagged commit=def,
// each with +-1% noise. Keeps what was written, for expected values.
struct Groups {
  DiffDb d;
  std::vector<std::vector<Stack>> base, cand;
  explicit Groups(bool slower = true, double noise = 0.01, const std::string& db = "") {
    for (int i = 0; i < 5; ++i) {
      base.push_back(difftest::WithNoise(kProgram, noise, 1 + i));
      d.AddFolded(base.back(), "base" + std::to_string(i + 1), {"commit=abc"}, "cputime", "ms", db);
    }
    for (int i = 0; i < 5; ++i) {
      cand.push_back(difftest::WithNoise(slower ? SlowerSlow() : kProgram, noise, 101 + i));
      d.AddFolded(cand.back(), "cand" + std::to_string(i + 1), {"commit=def"}, "cputime", "ms", db);
    }
  }
  // Mean over runs of a path's inclusive value, in seconds.
  static double Mean(const std::vector<std::vector<Stack>>& runs, const std::string& path) {
    double sum = 0;
    for (const auto& r : runs) sum += difftest::Inclusive(r, path);
    return sum / static_cast<double>(runs.size()) / 1000;
  }
};

void CheckGolden(const DiffDb& d, const std::string& golden, const testutil::RunResult& r, int code = 0) {
  CAPTURE(golden);
  CHECK_MESSAGE(r.exit_code == code, r.err);
  CHECK(r.err.empty());
  const std::string diff = testutil::CheckGolden(golden, d.Normalize(r.out));
  CHECK_MESSAGE(diff.empty(), diff);
}

}  // namespace

TEST_CASE("cct-diff flags the slowed function as the cause, its ancestors as context, and nothing else") {
  Groups g;
  const auto r = g.d.Diff({"tag:commit=abc", "tag:commit=def", "--format", "json", "-n", "0"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.empty());
  const nlohmann::json j = nlohmann::json::parse(r.out);
  // One slowdown is one regression (issue 20: it was counted 3 times, once
  // per ancestor): main and compute only inherit slow's 100 ms.
  CHECK(difftest::Paths(j["regressions"]) == std::set<std::vector<std::string>>{{"main", "compute", "slow"}});
  CHECK(difftest::Paths(j["context"]) == std::set<std::vector<std::string>>{{"main"}, {"main", "compute"}});
  CHECK(j["counts"]["regressions"] == 1);
  CHECK(j["regressions"][0]["cause"] == true);
  for (const auto& e : j["context"]) CHECK(e["cause"] == false);
  CHECK(j["improvements"].empty());
  CHECK(j["new"].empty());
  CHECK(j["gone"].empty());
  CHECK(j["regression"] == true);
  CHECK(j["test"]["name"] == "mann-whitney-u");
  CHECK(j["base"]["runs"].size() == 5);
  CHECK(j["candidate"]["runs"].size() == 5);

  // Totals: means of the written values; +100 ms of 850 is a regression.
  const nlohmann::json& total = j["totals"][0];
  CHECK(total["metric"] == "cputime");
  CHECK(total["base"].get<double>() == doctest::Approx(Groups::Mean(g.base, "main")));
  CHECK(total["candidate"].get<double>() == doctest::Approx(Groups::Mean(g.cand, "main")));
  CHECK(total["verdict"] == "regression");

  nlohmann::json flagged = j["regressions"];
  for (const auto& e : j["context"]) flagged.push_back(e);
  for (const auto& e : flagged) {
    std::string path;
    for (const auto& p : e["path"]) path += (path.empty() ? "" : ";") + p.get<std::string>();
    CAPTURE(path);
    const double b = Groups::Mean(g.base, path), c = Groups::Mean(g.cand, path);
    CHECK(e["metric"] == "cputime");
    CHECK(e["status"] == "both");
    CHECK(e["base"].get<double>() == doctest::Approx(b));
    CHECK(e["candidate"].get<double>() == doctest::Approx(c));
    CHECK(e["delta"].get<double>() == doctest::Approx(c - b));
    CHECK(e["ratio"].get<double>() == doctest::Approx(c / b));
    // +-1% noise cannot hide a >10% change: complete separation, p = 2/252.
    CHECK(e["p_value"].get<double>() == doctest::Approx(2.0 / 252));
    CHECK(e["ci_low"].get<double>() > 1.05);
    CHECK(e["ci_low"].get<double>() < e["ratio"].get<double>());
    CHECK(e["ci_high"].get<double>() > e["ratio"].get<double>());
    CHECK(e["verdict"] == "regression");
    CHECK(e["base_sd"].get<double>() > 0);
  }
  // slow itself doubled (ratio ~2); compute grew by 100 of 420.
  for (const auto& e : j["regressions"])
    if (e["path"].size() == 3) CHECK(e["ratio"].get<double>() == doctest::Approx(2).epsilon(0.03));

  // Gating: exit 1 with --fail-on-regression, same report.
  const auto gate = g.d.Diff({"tag:commit=abc", "tag:commit=def", "--format", "json", "-n", "0",
                              "--fail-on-regression"});
  CHECK(gate.exit_code == 1);
  CHECK(gate.out == r.out);
  CHECK(gate.err.empty());
  // The other way round it is an improvement, and no regression.
  const auto back = g.d.Diff({"tag:commit=def", "tag:commit=abc", "--format", "json", "--fail-on-regression"});
  CHECK(back.exit_code == 0);
  const nlohmann::json jb = nlohmann::json::parse(back.out);
  CHECK(jb["regressions"].empty());
  CHECK(difftest::Paths(jb["improvements"]) == std::set<std::vector<std::string>>{{"main", "compute", "slow"}});
  CHECK(difftest::Paths(jb["context"]) == std::set<std::vector<std::string>>{{"main"}, {"main", "compute"}});
}

TEST_CASE("cct-diff: 5 vs 5 unchanged runs with small noise pass") {
  Groups g(/*slower=*/false, /*noise=*/0.02);
  const auto r = g.d.Diff({"tag:commit=abc", "tag:commit=def", "--fail-on-regression", "--format", "json"});
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["regressions"].empty());
  CHECK(j["improvements"].empty());
  CHECK(j["regression"] == false);
  const auto text = g.d.Diff({"tag:commit=abc", "tag:commit=def", "--fail-on-regression"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("cct-diff: no regressions, no improvements") == 0);
}

TEST_CASE("cct-diff: golden reports") {
  Groups g;
  g.d.AddFolded({{"main;init", 50}, {"main;compute;slow", 100}, {"main;legacy;old_path", 60}, {"main;compute", 20}},
                "before");
  g.d.AddFolded({{"main;init", 50}, {"main;compute;slow", 150}, {"main;compute;new_path;helper", 40},
                 {"main;compute", 20}},
                "after");
  CheckGolden(g.d, "diff_groups.txt", g.d.Diff({"tag:commit=abc", "tag:commit=def"}));
  CheckGolden(g.d, "diff_groups.md", g.d.Diff({"tag:commit=abc", "tag:commit=def", "--format", "markdown"}));
  CheckGolden(g.d, "diff_groups.json", g.d.Diff({"tag:commit=abc", "tag:commit=def", "--format", "json", "-n", "2"}));
  CheckGolden(g.d, "diff_groups.csv", g.d.Diff({"tag:commit=abc", "tag:commit=def", "--format", "csv"}));
  CheckGolden(g.d, "diff_runs.txt", g.d.Diff({"before", "after"}));
  CheckGolden(g.d, "diff_runs.md", g.d.Diff({"before", "after", "--format", "markdown"}));
  CheckGolden(g.d, "diff_runs.json", g.d.Diff({"before", "after", "--format", "json"}));
  CheckGolden(g.d, "diff_tree.txt", g.d.Diff({"before", "after", "--tree"}));
  CheckGolden(g.d, "diff_tree_groups.txt",
              g.d.Diff({"tag:commit=abc", "tag:commit=def", "--tree", "--ascii", "--depth", "2"}));
  CheckGolden(g.d, "diff_tree.json", g.d.Diff({"before", "after", "--tree", "--format", "json"}));
  CheckGolden(g.d, "diff_gate.txt", g.d.Diff({"before", "after", "--fail-on-regression", "-n", "1"}), 1);
}

TEST_CASE("cct-diff: --flame writes a differential flame graph beside the report") {
  Groups g;
  const std::string svg = g.d.Path("diff.svg");
  const auto r = g.d.Diff({"tag:commit=abc", "tag:commit=def", "--flame", svg, "--fail-on-regression"});
  CHECK_MESSAGE(r.exit_code == 1, r.err);  // the report and gate work as without --flame
  CHECK(r.out.find("regressions in cputime: 1") != std::string::npos);
  const std::string text = testutil::ReadFileOrDie(svg);
  CHECK(text.rfind("<?xml", 0) == 0);
  CHECK(text.find("data-mode=\"diff\"") != std::string::npos);
  CHECK(text.find("slow") != std::string::npos);
  const auto bad = g.d.Diff({"tag:commit=abc", "tag:commit=def", "--flame", g.d.Path("no/such/dir/x.svg")});
  CHECK(bad.exit_code == 2);
  CHECK(testutil::LineCount(bad.err) == 1);
}

TEST_CASE("cct-diff: new and gone subtrees keep their values") {
  DiffDb d;
  d.AddFolded({{"main;a", 10}, {"main;old;x", 30}}, "before");
  d.AddFolded({{"main;a", 10}, {"main;fresh;y", 40}}, "after");
  const auto r = d.Diff({"before", "after", "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["new"].size() == 1);
  CHECK(j["new"][0]["path"] == std::vector<std::string>{"main", "fresh"});
  CHECK(j["new"][0]["status"] == "new");
  CHECK(j["new"][0]["base"].get<double>() == 0);
  CHECK(j["new"][0]["candidate"].get<double>() == doctest::Approx(0.040));
  CHECK(j["new"][0]["ratio"].is_null());
  REQUIRE(j["gone"].size() == 1);
  CHECK(j["gone"][0]["path"] == std::vector<std::string>{"main", "old"});
  CHECK(j["gone"][0]["base"].get<double>() == doctest::Approx(0.030));
  CHECK(j["gone"][0]["candidate"].get<double>() == 0);
  CHECK(j["gone"][0]["ratio"].get<double>() == 0);
  CHECK(r.out.find("NaN") == std::string::npos);
  CHECK(r.out.find("nan") == std::string::npos);
  const auto text = d.Diff({"before", "after"});
  CHECK(text.out.find("nan") == std::string::npos);
}

TEST_CASE("cct-diff: groups from two database files") {
  DiffDb d;
  const std::string a = d.Path("a.db"), b = d.Path("b.db");
  for (int i = 0; i < 5; ++i) {
    d.AddFolded(difftest::WithNoise(kProgram, 0.01, 1 + i), "base", {"commit=abc"}, "cputime", "ms", a);
    d.AddFolded(difftest::WithNoise(SlowerSlow(), 0.01, 11 + i), "cand", {"commit=def"}, "cputime", "ms", b);
  }
  const auto r = d.Diff({a + ":tag:commit=abc", b + ":tag:commit=def", "--format", "json", "--fail-on-regression"});
  CHECK_MESSAGE(r.exit_code == 1, r.err);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(difftest::Paths(j["regressions"]) == std::set<std::vector<std::string>>{{"main", "compute", "slow"}});
  CHECK(j["base"]["label"] == "group " + a + ":tag:commit=abc (5 runs)");
}

TEST_CASE("cct-diff: fewer than 3 runs a side is reported as untested") {
  DiffDb d;
  for (int i = 0; i < 2; ++i) {
    d.AddFolded(difftest::WithNoise(kProgram, 0.01, 1 + i), "b", {"v=1"});
    d.AddFolded(difftest::WithNoise(SlowerSlow(), 0.01, 11 + i), "c", {"v=2"});
  }
  const auto r = d.Diff({"tag:v=1", "tag:v=2"});
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("2 runs vs 2 runs: fewer than 3 on a side, so no significance test") != std::string::npos);
  const auto j = nlohmann::json::parse(d.Diff({"tag:v=1", "tag:v=2", "--format", "json"}).out);
  CHECK(j["test"].is_null());
  CHECK(!j["notes"].empty());
  CHECK(!j["regressions"][0].contains("p_value"));
  CHECK(j["regressions"][0].contains("base_sd"));
}

TEST_CASE("cct-diff: text fits 80 columns, colour only when asked") {
  DiffDb d;
  const std::string longname =
      "void very_long_namespace::detail::kernel_launcher<float, 128, 64, "
      "very_long_namespace::policy::tile<8, 8> >::launch(float const*, float*, int)";
  d.AddFolded({{"main;" + longname + ";inner_function_with_a_long_name;leaf", 10}, {"main;x", 90}}, "before");
  d.AddFolded({{"main;" + longname + ";inner_function_with_a_long_name;leaf", 30}, {"main;x", 90}}, "after");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"before", "after"}, {"before", "after", "--tree"}}) {
    const auto r = d.Diff(args);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      CAPTURE(line);
      CHECK(output::DisplayWidth(line) <= 80);
    }
    CHECK(r.out.find("\x1b[") == std::string::npos);
    CHECK(r.out.find("leaf") != std::string::npos);  // leaves survive elision
  }
  CHECK(d.Diff({"before", "after", "--tree", "--color", "always"}).out.find("\x1b[31m") != std::string::npos);
  CHECK(d.Diff({"before", "after", "--color", "always"}).out.find("\x1b[31m") != std::string::npos);
  // NO_COLOR wins over auto even where auto would colour; never never does.
  CHECK(d.Diff({"before", "after", "--tree"}, {{"NO_COLOR", "1"}}).out.find("\x1b[") == std::string::npos);
  CHECK(d.Diff({"before", "after", "--color", "never"}).out.find("\x1b[") == std::string::npos);
  // On a terminal (a pty from script(1), where installed) auto colours
  // unless NO_COLOR is set.
  if (access("/usr/bin/script", X_OK) == 0) {
    const std::string cmd = testutil::Tool("cct-diff") + " -d " + d.db() + " before after --tree";
    auto on_tty = [&](const std::string& no_color) {
      return testutil::Run({"/usr/bin/script", "-qec", cmd, "/dev/null"},
                           {{"TERM", "xterm"}, {"NO_COLOR", no_color}, {"COLUMNS", "80"}});
    };
    const auto coloured = on_tty("");
    if (coloured.exit_code != 0 || coloured.out.find("cct-diff:") == std::string::npos) {
      const std::string why = "script(1) could not run a terminal here: colour on a terminal not tested: " + coloured.err;
      MESSAGE(why);
    } else {
      CHECK(coloured.out.find("\x1b[31m") != std::string::npos);
      const auto plain = on_tty("1");
      CHECK(plain.exit_code == 0);
      CHECK(plain.out.find("\x1b[") == std::string::npos);
      CHECK(plain.out.find("leaf") != std::string::npos);
    }
  } else {
    MESSAGE("script(1) not installed: colour on a terminal not tested");
  }
  // Without a width limit nothing is elided.
  const auto wide = d.Diff({"before", "after", "--width", "0"});
  CHECK(wide.out.find(longname) != std::string::npos);
}

TEST_CASE("cct-diff: options change the comparison") {
  DiffDb d;
  d.AddFolded({{"main;void gemm<float>(float*)", 100}, {"main;pad", 900}}, "before");
  d.AddFolded({{"main;void gemm<double>(double*)", 100}, {"main;pad", 900}}, "after");
  d.AddFolded({{"main;a", 50}, {"main;b", 50}}, "small");
  d.AddFolded({{"main;a", 100}, {"main;b", 100}}, "big");
  // Template arguments split the kernel unless normalized.
  auto plain = nlohmann::json::parse(d.Diff({"before", "after", "--format", "json"}).out);
  CHECK(plain["new"].size() == 1);
  CHECK(plain["gone"].size() == 1);
  auto norm = nlohmann::json::parse(d.Diff({"before", "after", "--format", "json", "--normalize", "kernels"}).out);
  CHECK(norm["new"].empty());
  CHECK(norm["gone"].empty());
  CHECK(norm["options"]["normalize"] == "kernels");
  // Twice the work everywhere: a regression in absolute terms, none in shares.
  CHECK(d.Diff({"small", "big", "--fail-on-regression"}).exit_code == 1);
  const auto shares = d.Diff({"small", "big", "--fail-on-regression", "--normalize-total", "--format", "json"});
  CHECK(shares.exit_code == 0);
  CHECK(nlohmann::json::parse(shares.out)["totals"][0]["base"].get<double>() == 100);
  CHECK(nlohmann::json::parse(shares.out)["metrics"][0]["unit"] == "percent");
  // A share that moves is reported in percentage points: a from 50% to 75%.
  d.AddFolded({{"main;a", 150}, {"main;b", 50}}, "skewed");
  const auto moved = d.Diff({"small", "skewed", "--normalize-total"});
  CHECK(moved.out.find("  50.0%  75.0%  +25.0 pp  +50.0%  main › a\n") != std::string::npos);
  // Thresholds: +100% is below a 150% threshold; min-abs in time units
  // (main grows by 100 ms, a and b by 50 ms each).
  CHECK(d.Diff({"small", "big", "--fail-on-regression", "--threshold", "150"}).exit_code == 0);
  CHECK(d.Diff({"small", "big", "--fail-on-regression", "--min-abs", "110ms"}).exit_code == 0);
  CHECK(d.Diff({"small", "big", "--fail-on-regression", "--min-abs", "0.09"}).exit_code == 1);
  const auto only_main = d.Diff({"small", "big", "--format", "json", "--min-abs", "60ms"});
  CHECK(difftest::Paths(nlohmann::json::parse(only_main.out)["regressions"]) == std::set<std::vector<std::string>>{{"main"}});
  CHECK(d.Diff({"small", "big", "--fail-on-regression", "--min-abs", "80%"}).exit_code == 1);
  CHECK(d.Diff({"small", "big", "--fail-on-regression", "--min-abs", "101%"}).exit_code == 0);
}

TEST_CASE("cct-diff: bad input is one error line and exit status 2") {
  DiffDb d;
  d.AddFolded(kProgram, "one");
  d.AddFolded(SlowerSlow(), "two");
  d.AddFolded({{"main", 1}}, "counts", {}, "work", "count");
  d.AddFolded({{"main", 1}}, "bytes", {}, "work", "bytes");
  d.AddFolded({{"main", 1}}, "other", {}, "samples", "count");
  testutil::WriteFileOrDie(d.Path("damaged.db"), std::string(8192, 'x'));
  const std::vector<std::vector<std::string>> cases = {
      {"1", "nosuch"},
      {"tag:commit=zzz", "1"},
      {"tag:=x", "1"},
      {"1", "2", "-m", "nosuch"},
      {"counts", "bytes"},                   // incompatible metrics
      {"one", "other"},                      // no metric in common
      {"1@iter=2", "1"},                     // the run has no iterations
      {"1", "2@iter=median"},
      {"1@iter=0", "1"},
      {"1@iter=1..3", "2"},
      {"1", "2", "--threshold", "abc"},
      {"1", "2", "--threshold", "-1"},
      {"1", "2", "--min-abs", "ten"},
      {"1", "2", "--alpha", "2"},
      {"1", "2", "--format", "xml"},
      {"1", "2", "--normalize", "everything"},
      {"1", "2", "--color", "sometimes"},
      {"1", "2", "--depth", "2"},            // --depth without --tree
      {"1", "2", "--no-such-option"},
      {"1"},
      {"1", "2", "3"},
      {"-d", d.Path("damaged.db"), "1", "2"},
      {"-d", d.Path("missing.db"), "1", "2"},
  };
  for (const auto& args : cases) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    CAPTURE(joined);
    const auto r = d.Diff(args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("cct-diff: ", 0) == 0);
    CHECK(testutil::LineCount(r.err) == 1);
  }
  CHECK(d.Diff({"counts", "bytes"}).err.find("incompatible") != std::string::npos);
  CHECK(d.Diff({"1@iter=2", "1"}).err.find("iteration") != std::string::npos);
  // --fail-on-regression does not turn errors into 1.
  CHECK(d.Diff({"1", "nosuch", "--fail-on-regression"}).exit_code == 2);
}

namespace {
// The visible part of a markdown report: the lines before <details>.
std::vector<std::string> VisibleLines(const std::string& md) {
  std::vector<std::string> out;
  std::istringstream in(md);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("<details>")) break;
    out.push_back(line);
  }
  return out;
}
}  // namespace

TEST_CASE("cct-diff --format markdown fits a pull-request comment") {
  // 30 functions each twice as slow (30 causes), one of them with a
  // 600-character name: more than 40 lines of rows, a line far over 200.
  const std::string huge = "ns::Kernel<" + std::string(580, 'T') + ">::run";
  std::vector<Stack> before, after;
  for (int i = 0; i < 30; ++i) {
    const std::string f = i == 7 ? huge : "work_" + std::to_string(i);
    before.push_back({"main;" + f, 10});
    after.push_back({"main;" + f, 20});
  }
  DiffDb d;
  d.AddFolded(before, "before");
  d.AddFolded(after, "after");
  const auto r = d.Diff({"before", "after", "--format", "markdown"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::vector<std::string> visible = VisibleLines(r.out);
  INFO(r.out);
  // About 40 lines unfolded; the verdict first.
  CHECK(visible.size() <= 40);
  REQUIRE_FALSE(visible.empty());
  CHECK(visible[0].starts_with("**cct-diff: 30 regressions, no improvements; the total regressed**"));
  // No line over 200 characters anywhere, the details included.
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    CAPTURE(line);
    CHECK(output::DisplayWidth(line) <= 200);
  }
  // The legend says what p and the verdict are (single runs: no p-values).
  bool legend = false;
  for (const std::string& line : visible) legend |= line.find("no p-values: fewer than 3 runs on a side") != std::string::npos;
  CHECK(legend);
  // Rows past the budget are in the details, the long name whole there
  // (wrapped), elided in the middle in its row.
  const size_t details = r.out.find("<details>");
  REQUIRE(details != std::string::npos);
  std::string unwrapped;
  for (char c : r.out.substr(details))
    if (c != '\n') unwrapped += c;
  CHECK(unwrapped.find(huge) != std::string::npos);
  CHECK(r.out.find("more in the details below") < details);
  size_t rows = 0;
  for (const std::string& line : visible) rows += line.starts_with("| `main › work_") ? 1 : 0;
  CHECK(rows >= 5);
  // Every cause is somewhere: 30 rows that name a work function or the
  // elided huge one.
  size_t all_rows = 0;
  std::istringstream all(r.out);
  for (std::string line; std::getline(all, line);)
    all_rows += line.starts_with("| `main › work_") || (line.starts_with("| `") && line.find("ns::Kernel<TTT") != std::string::npos) ? 1 : 0;
  CHECK(all_rows == 30);
  // --max-lines 0: everything unfolded.
  const auto whole = d.Diff({"before", "after", "--format", "markdown", "--max-lines", "0", "-n", "0"});
  CHECK(VisibleLines(whole.out).size() > 40);
}

TEST_CASE("cct-diff: a run against itself plus sub-threshold churn lists no new or gone rows, one summary line") {
  // Same program, but each run has small frames the other lacks (as two
  // samplings of one program do): 20 gone and 15 new, each 0.1 ms, far
  // below --min-abs (1% of 1 s). 5 runs a side so p-values exist.
  DiffDb d;
  for (int i = 0; i < 5; ++i) {
    std::vector<Stack> b = difftest::WithNoise(kProgram, 0.01, 1 + i), c = difftest::WithNoise(kProgram, 0.01, 11 + i);
    for (int k = 0; k < 4; ++k) b.push_back({"main;io;tiny_b" + std::to_string(i * 4 + k), 0.1});
    for (int k = 0; k < 3; ++k) c.push_back({"main;io;tiny_c" + std::to_string(i * 3 + k), 0.1});
    d.AddFolded(b, "b" + std::to_string(i), {"v=1"});
    d.AddFolded(c, "c" + std::to_string(i), {"v=2"});
  }
  const auto r = d.Diff({"tag:v=1", "tag:v=2", "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["new"].empty());
  CHECK(j["gone"].empty());
  CHECK(j["counts"]["new_minor"] == 15);
  CHECK(j["counts"]["gone_minor"] == 20);
  CHECK(j["regressions"].empty());
  const auto text = d.Diff({"tag:v=1", "tag:v=2"});
  INFO(text.out);
  CHECK(text.out.find("new in cputime: none") != std::string::npos);
  // Each tiny frame is in one run of five: 0.02 ms a side's mean.
  const std::string min_abs = "each below " + output::FormatValue(j["totals"][0]["base"].get<double>() * 1e9 / 100, cct::Unit::kNanoseconds, false) + " (--min-abs)";
  CHECK(text.out.find("15 new, " + min_abs + " and not significant: 300 µs in all") != std::string::npos);
  CHECK(text.out.find("20 gone, " + min_abs + " and not significant: 400 µs in all") != std::string::npos);
  CHECK(text.out.find("tiny_") == std::string::npos);
}
