// Reports through the real tools: golden files for text, JSON and CSV, and
// values checked against the sample's construction.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/test_util.h"

namespace {

std::string SamplePath() { return testutil::SourceDir() + "/examples/sample-profile.json"; }

// A database holding the sample profile as run 1 ('sample').
struct SampleDb {
  testutil::TempDir dir;
  std::string db = dir / "sample.db";
  SampleDb() {
    auto r = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "hatchet", SamplePath(), "--name",
                            "sample", "--tag", "commit=abc123"});
    REQUIRE(r.exit_code == 0);
  }
  testutil::RunResult Query(std::vector<std::string> args) const {
    std::vector<std::string> argv{testutil::Tool("cct-query"), "-d", db};
    argv.insert(argv.end(), args.begin(), args.end());
    return testutil::Run(argv, {{"TZ", "UTC"}});
  }
  // Runs the query, expects success, compares with a golden file.
  void Golden(const std::string& golden, std::vector<std::string> args) const {
    auto r = Query(args);
    CAPTURE(golden);
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.err.empty());
    const std::string diff = testutil::CheckGolden(golden, Normalize(r.out));
    CHECK_MESSAGE(diff.empty(), diff);
  }
  // Times, hosts and temporary paths change from run to run; goldens hold none.
  std::string Normalize(std::string s) const {
    auto lit = [](const std::string& x) { return std::regex_replace(x, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)"); };
    s = std::regex_replace(s, std::regex(lit(dir.path())), "<tmp>");
    s = std::regex_replace(s, std::regex(lit(testutil::SourceDir())), "<src>");
    s = std::regex_replace(s, std::regex(R"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\dZ?)"), "<time>");
    s = std::regex_replace(s, std::regex(R"("start_time_ns":\d+)"), R"("start_time_ns":0)");
    s = std::regex_replace(s, std::regex(R"((^|\n)host( +)\S+)"), "$1host$2<host>");
    s = std::regex_replace(s, std::regex(R"("host":"[^"]*")"), R"("host":"<host>")");
    s = std::regex_replace(s, std::regex(R"((^|\n)collector( +)\S+)"), "$1collector$2<version>");
    s = std::regex_replace(s, std::regex(R"("collector_version":"[^"]*")"), R"("collector_version":"<version>")");
    return s;
  }
};

// Sum of a metric over the sample's input, computed from the file itself.
double SampleTotal(const std::string& metric) {
  const nlohmann::json doc = nlohmann::json::parse(testutil::ReadFileOrDie(SamplePath()));
  double total = 0;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& n) {
    if (n["metrics"].contains(metric)) total += n["metrics"][metric].get<double>();
    for (const auto& c : n["children"]) walk(c);
  };
  for (const auto& root : doc) walk(root);
  return total;
}

}  // namespace

TEST_CASE("golden text reports") {
  SampleDb s;
  s.Golden("tree.txt", {"tree", "1"});
  s.Golden("tree_ascii_depth3.txt", {"tree", "sample", "--ascii", "--depth", "3"});
  s.Golden("tree_two_metrics.txt", {"tree", "latest", "-m", "cputime", "-m", "gker"});
  s.Golden("tree_min5.txt", {"tree", "1", "--min", "5"});
  s.Golden("tree_focus.txt", {"tree", "1", "--focus", "^load_data"});
  s.Golden("tree_lines.txt", {"tree", "1", "--lines", "--focus", "sgemm$"});
  s.Golden("tree_merge_threads.txt", {"tree", "1", "--merge-threads", "--depth", "2"});
  s.Golden("tree_narrow.txt", {"tree", "1", "--width", "60", "-m", "cputime", "-m", "samples"});
  s.Golden("top_function.txt", {"top", "1"});
  s.Golden("top_function_exclusive.txt", {"top", "1", "--exclusive", "-n", "5"});
  s.Golden("top_kernel.txt", {"top", "1", "--by", "kernel", "-m", "gker", "-m", "gker:count"});
  s.Golden("top_nvtx.txt", {"top", "1", "--by", "nvtx"});
  s.Golden("top_line.txt", {"top", "1", "--by", "line"});
  s.Golden("top_module.txt", {"top", "1", "--by", "module"});
  s.Golden("callers.txt", {"callers", "1", "^read$"});
  s.Golden("metrics.txt", {"metrics", "1"});
  s.Golden("runs.txt", {"runs"});
  s.Golden("show.txt", {"show", "1"});
  {
    auto derived = s.Query({"derive", "sample", "--keep-min", "5", "--merge-threads", "mean", "--normalize", "2",
                            "--name", "sample-derived", "--tag", "kind=derived"});
    CHECK_MESSAGE(derived.exit_code == 0, derived.err);
    s.Golden("show_derived.txt", {"show", "sample-derived"});
    s.Golden("tree_derived.txt", {"tree", "sample-derived"});
  }
}

TEST_CASE("golden JSON and CSV reports") {
  SampleDb s;
  s.Golden("tree.json", {"tree", "1", "--format", "json", "-m", "cputime", "-m", "gxcopy:h2d"});
  s.Golden("tree_focus.json", {"tree", "1", "--format", "json", "--focus", "backward"});
  s.Golden("tree.csv", {"tree", "1", "--format", "csv", "--depth", "3"});
  s.Golden("top.json", {"top", "1", "--format", "json", "-n", "3"});
  s.Golden("top_line.csv", {"top", "1", "--format", "csv", "--by", "line"});
  s.Golden("callers.json", {"callers", "1", "load_data", "--format", "json"});
  s.Golden("callers.csv", {"callers", "1", "load_data", "--format", "csv"});
  s.Golden("metrics.json", {"metrics", "1", "--format", "json"});
  s.Golden("runs.json", {"runs", "--format", "json"});
  s.Golden("runs.csv", {"runs", "--format", "csv"});
}

TEST_CASE("JSON tree has the design's shape and the sample's values") {
  SampleDb s;
  auto r = s.Query({"tree", "1", "--format", "json", "-m", "cputime", "-m", "gxcopy:h2d", "-m", "gker"});
  REQUIRE(r.exit_code == 0);
  const nlohmann::json root = nlohmann::json::parse(r.out);
  for (const char* key : {"name", "kind", "module", "file", "line", "inclusive", "exclusive", "children"})
    CHECK_MESSAGE(root.contains(key), key);
  CHECK(root["kind"] == "root");
  // Times in seconds, bytes as bytes: totals equal the sums of the input.
  CHECK(root["inclusive"]["cputime"].get<double>() == doctest::Approx(SampleTotal("cputime")));
  CHECK(root["inclusive"]["gker"].get<double>() == doctest::Approx(SampleTotal("gker")));
  CHECK(root["inclusive"]["gxcopy:h2d"].get<double>() == SampleTotal("gxcopy:h2d"));
  // Inclusive = exclusive + children's inclusive, at every node.
  size_t nodes = 0;
  std::function<void(const nlohmann::json&)> check = [&](const nlohmann::json& n) {
    ++nodes;
    for (const char* m : {"cputime", "gker"}) {
      double sum = n["exclusive"][m].get<double>();
      for (const auto& c : n["children"]) sum += c["inclusive"][m].get<double>();
      CHECK(n["inclusive"][m].get<double>() == doctest::Approx(sum));
    }
    for (const auto& c : n["children"]) check(c);
  };
  check(root);
  CHECK(nodes == 25);  // the sample's 26 frames + the root, less 2 source lines folded into sgemm
  // Children are sorted by the first metric, largest first.
  const auto& threads = root["children"];
  REQUIRE(threads.size() == 2);
  CHECK(threads[0]["name"] == "main thread");
  CHECK(threads[0]["kind"] == "thread");
}

TEST_CASE("top adds recursion once and groups by the requested key") {
  testutil::TempDir dir;
  const std::string folded = dir / "rec.folded";
  // f recursive: main;f;f;f with exclusive 1, 2, 4 at each level, plus g.
  testutil::WriteFileOrDie(folded, "main;f 1\nmain;f;f 2\nmain;f;f;f 4\nmain;g;f 8\nmain 16\n");
  const std::string db = dir / "r.db";
  REQUIRE(testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "folded", folded}).exit_code == 0);
  auto r = testutil::Run({testutil::Tool("cct-query"), "-d", db, "top", "1", "--format", "json", "-n", "0"});
  REQUIRE(r.exit_code == 0);
  const nlohmann::json top = nlohmann::json::parse(r.out);
  std::map<std::string, std::pair<double, double>> got;
  for (const auto& row : top["rows"]) got[row["name"]] = {row["inclusive"]["samples"], row["exclusive"]["samples"]};
  CHECK(got["main"] == std::pair<double, double>{31, 16});
  // f: outermost instances are main;f (7) and main;g;f (8) -> 15, not 1+2+4+6+4+8.
  CHECK(got["f"] == std::pair<double, double>{15, 15});
  CHECK(got["g"] == std::pair<double, double>{8, 0});
}

TEST_CASE("hostile patterns on a 30,000-character name: answers, no crash, one-line headings") {
  // Deep templates and generated code make names this long; std::regex
  // recursed per character on them and died with SIGSEGV on '(a|a)*b'.
  testutil::TempDir dir;
  const std::string huge(30000, 'a');
  testutil::WriteFileOrDie(dir / "huge.folded", "main;" + huge + ";leaf 7\nmain;other 3\n");
  const std::string db = dir / "h.db";
  REQUIRE(testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "folded", dir / "huge.folded"}).exit_code ==
          0);
  auto query = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{testutil::Tool("cct-query"), "-d", db};
    argv.insert(argv.end(), args.begin(), args.end());
    return testutil::Run(argv, {{"COLUMNS", ""}}, 60);
  };
  // No name holds a 'b': no match, one line, exit 2.
  auto none = query({"callers", "latest", "(a|a)*b"});
  CHECK(none.signal == 0);
  CHECK(none.exit_code == 2);
  CHECK(testutil::LineCount(none.err) == 1);
  CHECK(none.err.find("no frame matches") != std::string::npos);
  // The long name matches: its callers are main (10 samples under it: 7).
  auto callers = query({"callers", "latest", "(a+)+$", "--format", "json"});
  REQUIRE_MESSAGE(callers.exit_code == 0, callers.err);
  const nlohmann::json inv = nlohmann::json::parse(callers.out);
  CHECK(inv["total"]["samples"] == 7);
  auto focus = query({"tree", "latest", "--focus", "(x*)*a+$"});
  REQUIRE_MESSAGE(focus.exit_code == 0, focus.err);
  std::istringstream lines(focus.out);
  size_t longest = 0;
  bool heading = false;
  for (std::string line; std::getline(lines, line);) {
    longest = std::max(longest, line.size());
    heading |= line.rfind("focus: main › aaa", 0) == 0;
  }
  CHECK(heading);
  // 80 columns of text: at most 3 bytes a column ("›", "…", box drawing).
  CHECK(longest <= 240);
  CHECK(focus.out.find("leaf") != std::string::npos);
}

TEST_CASE("reports work on a group of runs: the mean per run") {
  testutil::TempDir dir;
  const std::string db = dir / "g.db";
  testutil::WriteFileOrDie(dir / "a.folded", "main;work 10\nmain;io 2\n");
  testutil::WriteFileOrDie(dir / "b.folded", "main;work 30\nmain;other 4\n");
  for (const char* f : {"a.folded", "b.folded"})
    REQUIRE(testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "folded", dir / f, "--tag", "v=1"})
                .exit_code == 0);
  auto r = testutil::Run({testutil::Tool("cct-query"), "-d", db, "tree", "tag:v=1", "--format", "json"});
  REQUIRE(r.exit_code == 0);
  const auto root = nlohmann::json::parse(r.out);
  CHECK(root["inclusive"]["samples"] == 23);  // (12 + 34) / 2
  const auto& main = root["children"][0];
  CHECK(main["children"][0]["name"] == "work");
  CHECK(main["children"][0]["inclusive"]["samples"] == 20);
  auto text = testutil::Run({testutil::Tool("cct-query"), "-d", db, "tree", "tag:v=1"});
  CHECK(text.out.find("group tag:v=1 (mean of 2 runs)") != std::string::npos);
}

TEST_CASE("command-line errors: exit 2 with one line") {
  SampleDb s;
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{}, "no command"},
      {{"frobnicate", "1"}, "unknown command 'frobnicate'"},
      {{"tree"}, "tree expects one RUN"},
      {{"tree", "1", "2"}, "no run matches '2'"},
      {{"runs", "--depth", "3"}, "--depth does not apply to 'runs'"},
      {{"tree", "1", "-m", "nosuch"}, "no metric 'nosuch'"},
      {{"tree", "1", "--focus", "("}, "invalid --focus pattern '(' at position 0: missing )"},
      {{"tree", "1", "--focus", "zzz"}, "no frame matches"},
      {{"tree", "1", "--format", "xml"}, "unknown format 'xml'"},
      {{"tree", "1", "--depth", "-1"}, "--depth must be 0 or more"},
      {{"tree", "1", "--min", "200"}, "--min must be a percentage"},
      {{"top", "1", "--by", "file"}, "unknown --by 'file'"},
      {{"top", "1", "--inclusive", "--exclusive"}, "exclude each other"},
      {{"callers", "1"}, "callers expects RUN and REGEX"},
      {{"callers", "1", "nomatch"}, "no frame matches 'nomatch'"},
      {{"export", "1"}, "export needs --to"},
      {{"export", "1", "--to", "pdf"}, "unknown export format 'pdf'"},
      {{"tree", "1@iter=2"}, "has no iterations"},
      {{"tree", "tag:nope=1"}, "no run matches 'tag:nope=1'"},
      {{"tree", "latest~3"}, "no run matches 'latest~3'"},
      {{"tree", "1", "--width", "abc"}, "width"},
  };
  for (const Case& c : cases) {
    auto r = s.Query(c.args);
    CAPTURE(c.expect);
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
    CHECK_MESSAGE(r.err.find(c.expect) != std::string::npos, r.err);
    CHECK(r.out.empty());
  }
  auto help = s.Query({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("callers RUN REGEX") != std::string::npos);
}

TEST_CASE("path queries: golden tree --query, top --query and match") {
  SampleDb s;
  s.Golden("tree_query.txt", {"tree", "1", "-m", "gker", "--query", "* [kind=nvtx and name=step] * [kind=kernel]"});
  s.Golden("tree_query_ascii.txt", {"tree", "1", "--ascii", "--query", "* [name~\"^load_data\"] ."});
  s.Golden("tree_query.json", {"tree", "1", "--format", "json", "--query", "* [name=read]"});
  s.Golden("tree_query.csv", {"tree", "1", "--format", "csv", "--query", "* [name=read]"});
  s.Golden("top_query.txt", {"top", "1", "--query", "[kind=thread and name=\"main thread\"] +"});
  s.Golden("match.txt", {"match", "1", "* [kind=function and exc(cputime) > 5%]"});
  s.Golden("match_limit.txt", {"match", "1", "*", "-n", "3", "--exclusive", "--ascii"});
  s.Golden("match.json", {"match", "1", "* [kind=kernel]", "-m", "gker", "-m", "gker:count", "--format", "json"});
  s.Golden("match.csv", {"match", "1", "* [kind=kernel]", "-m", "gker", "--format", "csv"});
}

TEST_CASE("path queries: the ends and values the tools print follow the sample's construction") {
  SampleDb s;
  // The sample has three kernels: two sgemm kernels (forward 420 ms, backward
  // 800 ms) and relu_kernel (30 ms), 40 launches in all (examples/sample-profile.json).
  auto r = s.Query({"match", "1", "* [kind=kernel]", "-m", "gker", "-m", "gker:count", "--format", "json"});
  REQUIRE(r.exit_code == 0);
  const nlohmann::json matched = nlohmann::json::parse(r.out);
  CHECK(matched["matches"] == 3);
  REQUIRE(matched["rows"].size() == 3);
  double gker = 0;
  for (const auto& row : matched["rows"]) {
    CHECK(row["kind"] == "kernel");
    CHECK(row["path"].back() == row["name"]);
    gker += row["inclusive"]["gker"].get<double>();
  }
  CHECK(gker == doctest::Approx(SampleTotal("gker")));
  // Largest first.
  CHECK(matched["rows"][0]["inclusive"]["gker"].get<double>() >= matched["rows"][1]["inclusive"]["gker"].get<double>());
  // tree --query keeps exactly the ends and their ancestors: every leaf of
  // the JSON tree is a match, every match a node of it.
  auto t = s.Query({"tree", "1", "--format", "json", "--query", "* [name=read]"});
  REQUIRE(t.exit_code == 0);
  size_t ends = 0;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& n) {
    if (n["children"].empty()) CHECK(n["match"] == true);
    if (n["match"] == true) {
      ++ends;
      CHECK(n["name"] == "read");
    }
    for (const auto& c : n["children"]) walk(c);
  };
  walk(nlohmann::json::parse(t.out));
  CHECK(ends == 2);  // read under main's load_data and under worker_loop's
}

TEST_CASE("path queries: bad queries are one line, the query and a caret, exit 2") {
  SampleDb s;
  const std::string field_error =
      "cct-query: invalid query at position 1: unknown field 'nme' (name, module, file, kind, line, inc(METRIC) or "
      "exc(METRIC))\n  [nme=main]\n   ^\n";
  for (const auto& args : std::vector<std::vector<std::string>>{{"match", "1", "[nme=main]"},
                                                                {"tree", "1", "--query", "[nme=main]"},
                                                                {"top", "1", "--query", "[nme=main]"}}) {
    auto r = s.Query(args);
    CAPTURE(args[0]);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == field_error);
  }
  // Checked before the database is opened.
  auto nodb = testutil::Run({testutil::Tool("cct-query"), "-d", s.dir / "none.db", "match", "1", "a//b"});
  CHECK(nodb.exit_code == 2);
  CHECK(nodb.err == "cct-query: invalid query at position 2: '//' is not a step: write '*' for any number of nodes\n"
                    "  a//b\n    ^\n");
  // Hostile: 100 KB, deep nesting, a huge count, a bad regex: clean and fast.
  for (const std::string& q : {std::string(100 * 1024, '('), "[" + std::string(5000, '(') + "name=a]",
                               std::string("[name=a]{1000000000000}"), std::string("* [name~\"a(b\"]")}) {
    auto r = s.Query({"match", "1", q});
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("cct-query: invalid query at position ", 0) == 0);
    CHECK(testutil::LineCount(r.err) == 3);
    CHECK(r.err.size() < 400);
  }
  // Errors found against the run: one line.
  auto metric = s.Query({"match", "1", "* [exc(realtime) > 1%]"});
  CHECK(metric.exit_code == 2);
  CHECK(metric.err ==
        "cct-query: the query reads metric 'realtime', which the run does not have (it has: cputime, gker, "
        "gker:count, gxcopy:d2h, gxcopy:h2d, samples)\n");
  auto none = s.Query({"tree", "1", "--query", "* [name=nothing]"});
  CHECK(none.exit_code == 2);
  CHECK(none.err == "cct-query: no path matches the query '* [name=nothing]'\n");
  auto empty_match = s.Query({"match", "1", "* [name=nothing]"});
  CHECK(empty_match.exit_code == 0);
  CHECK(empty_match.out == "run 1 'sample': cputime 1.32 s total; 0 paths match\n");
  auto args = s.Query({"match", "1"});
  CHECK(args.exit_code == 2);
  CHECK(args.err == "cct-query: match expects RUN and QUERY (see cct-query --help)\n");
  auto option = s.Query({"callers", "1", "read", "--query", "*"});
  CHECK(option.exit_code == 2);
  CHECK(option.err == "cct-query: option --query does not apply to 'callers'\n");
}
