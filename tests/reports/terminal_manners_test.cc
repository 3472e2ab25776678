// Terminal manners through the real tools (issue 20): COLUMNS and --width
// on a pipe, no column dropped for room its rows do not need, kernels' ncu
// columns at 80 columns, ASCII trees outside UTF-8 locales, --color on every
// tool, and `tree` printing its first row before it has formatted the rest.
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <streambuf>

#include "output/format.h"
#include "reports/reports.h"
#include "tests/interop_util.h"

namespace {

std::string MannersSample() { return testutil::SourceDir() + "/examples/sample-profile.json"; }
std::string MannersNcuData(const std::string& name) { return testutil::SourceDir() + "/tests/data/ncu/" + name; }

// The sample profile as run 1, tagged.
std::string MannersSampleDb(const testutil::TempDir& dir) {
  const std::string db = dir / "s.db";
  auto r = interop::Import(db, {"--from", "hatchet", MannersSample(), "--name", "sample", "--tag", "commit=abc123"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return db;
}

std::vector<std::string> MannersLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t MannersWidest(const std::string& text) {
  size_t widest = 0;
  for (const std::string& line : MannersLines(text)) widest = std::max(widest, output::DisplayWidth(line));
  return widest;
}

testutil::RunResult MannersQuery(const std::string& db, std::vector<std::string> args,
                                 const std::map<std::string, std::string>& env = {}) {
  return interop::Tool("cct-query", db, std::move(args), env);
}

}  // namespace

TEST_CASE("runs: no column dropped that its rows have room for; COLUMNS counts on a pipe too") {
  testutil::TempDir dir;
  const std::string db = MannersSampleDb(dir);
  auto whole = MannersQuery(db, {"runs", "--width", "0"});
  REQUIRE(whole.exit_code == 0);
  const size_t need = MannersWidest(whole.out);
  CHECK(whole.out.find("started") != std::string::npos);
  // Exactly as wide as the widest row: everything fits, nothing goes.
  CHECK(MannersQuery(db, {"runs", "--width", std::to_string(need)}).out == whole.out);
  CHECK(MannersQuery(db, {"runs"}, {{"COLUMNS", std::to_string(need)}}).out == whole.out);
  // One column less: something gives, and every line fits.
  for (const auto& narrower : {MannersQuery(db, {"runs", "--width", std::to_string(need - 1)}),
                               MannersQuery(db, {"runs"}, {{"COLUMNS", std::to_string(need - 1)}})}) {
    CHECK(narrower.out != whole.out);
    CHECK(MannersWidest(narrower.out) <= need - 1);
  }
  // --width beats COLUMNS.
  CHECK(MannersQuery(db, {"runs", "--width", "0"}, {{"COLUMNS", "40"}}).out == whole.out);
}

TEST_CASE("--width 0 elides nothing; a width elides the longest name to fit") {
  testutil::TempDir dir;
  const std::string db = MannersSampleDb(dir);
  // The sample's longest frame name, from the file itself.
  std::string longest;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& n) {
    const std::string name = n["frame"]["name"].get<std::string>();
    if (name.size() > longest.size()) longest = name;
    for (const auto& c : n["children"]) walk(c);
  };
  for (const auto& root : nlohmann::json::parse(testutil::ReadFileOrDie(MannersSample()))) walk(root);
  REQUIRE(longest.size() > 40);
  auto whole = MannersQuery(db, {"tree", "1", "--width", "0"});
  REQUIRE(whole.exit_code == 0);
  CHECK(whole.out.find(longest) != std::string::npos);
  for (const auto& fitted : {MannersQuery(db, {"tree", "1", "--width", "70"}), MannersQuery(db, {"tree", "1"}, {{"COLUMNS", "70"}})}) {
    CHECK(fitted.out.find(longest) == std::string::npos);
    for (const std::string& line : MannersLines(fitted.out)) {
      CAPTURE(line);
      CHECK(output::DisplayWidth(line) <= 70);
    }
  }
}

TEST_CASE("kernels keeps SM % and occupancy at 80 columns: headers shorten, other columns go") {
  testutil::TempDir dir;
  const std::string db = dir / "g.db";
  REQUIRE(interop::Import(db, {"--from", "hatchet", MannersNcuData("gpu-run.json")}).exit_code == 0);
  REQUIRE(interop::Import(db, {"--from", "ncu-csv", MannersNcuData("raw.csv"), "--run", "latest"}).exit_code == 0);
  for (const auto& r : {MannersQuery(db, {"kernels", "latest", "--width", "80"}),
                        MannersQuery(db, {"kernels", "latest"}, {{"COLUMNS", "80"}}), MannersQuery(db, {"kernels", "latest"})}) {
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::vector<std::string> lines = MannersLines(r.out);
    REQUIRE(lines.size() == 7);  // summary, header, 5 kernels
    CAPTURE(r.out);
    CHECK(lines[1].find("SM %") != std::string::npos);
    CHECK(lines[1].find("Occ %") != std::string::npos);
    // sgemm: SM (82+78+70+74)/4 = 76; its occupancy is in raw.csv too.
    CHECK(lines[2].find("76.0%") != std::string::npos);
    for (const std::string& line : lines) CHECK(output::DisplayWidth(line) <= 80);
  }
}

TEST_CASE("trees are drawn in ASCII when the locale is not UTF-8; --ascii forces it") {
  testutil::TempDir dir;
  const std::string db = MannersSampleDb(dir);
  auto utf8 = MannersQuery(db, {"tree", "1", "--depth", "2"}, {{"LC_ALL", "C.UTF-8"}});
  auto c = MannersQuery(db, {"tree", "1", "--depth", "2"}, {{"LC_ALL", "C"}});
  auto unset = MannersQuery(db, {"tree", "1", "--depth", "2"}, {{"LC_ALL", ""}, {"LANG", ""}});
  auto forced = MannersQuery(db, {"tree", "1", "--depth", "2", "--ascii"}, {{"LC_ALL", "C.UTF-8"}});
  REQUIRE(utf8.exit_code == 0);
  CHECK(utf8.out.find("└─ ") != std::string::npos);
  for (const auto* r : {&c, &unset, &forced}) {
    REQUIRE(r->exit_code == 0);
    CHECK(r->out.find("`- ") != std::string::npos);
    for (unsigned char ch : r->out) CHECK_MESSAGE(ch < 0x80, r->out);
  }
  // The same tree otherwise: the glyphs are the only difference.
  CHECK(c.out == forced.out);
  CHECK(MannersLines(c.out).size() == MannersLines(utf8.out).size());
}

TEST_CASE("--color on every tool: always, never and auto accepted; another value is one error line") {
  testutil::TempDir dir;
  const std::string db = MannersSampleDb(dir);
  testutil::WriteFileOrDie(dir / "a.folded", "main;work 3\n");
  struct ToolCase {
    std::vector<std::string> argv;  // --color VALUE goes after these
    std::vector<std::string> tail;
    int bad_status;
  };
  const std::vector<ToolCase> tools = {
      {{testutil::Tool("cct-query"), "-d", db, "tree", "1"}, {}, 2},
      {{testutil::Tool("cct-diff"), "-d", db, "1", "1"}, {}, 2},
      {{testutil::Tool("cct-import"), "-d", dir / "i.db", "--from", "folded", dir / "a.folded"}, {}, 2},
      // cct-record's own errors are 125 (its other statuses are the program's).
      {{testutil::Tool("cct-record"), "-o", dir / "r.db", "--gpu", "off", "--python", "off"}, {"--", "/bin/true"}, 125},
  };
  for (const ToolCase& t : tools) {
    CAPTURE(t.argv[0]);
    if (access(t.argv[0].c_str(), X_OK) != 0) {
      // The sanitizer build makes no cct-record (what it launches is the
      // preloaded collector, tested in the main build only).
      MESSAGE("SKIPPED: " << t.argv[0] << " is not built here");
      continue;
    }
    auto help = testutil::Run({t.argv[0], "--help"});
    CHECK(help.out.find("--color arg") != std::string::npos);
    CHECK(help.out.find("auto|always|never") != std::string::npos);
    for (const char* mode : {"always", "never", "auto"}) {
      std::vector<std::string> argv = t.argv;
      argv.insert(argv.end(), {"--color", mode});
      argv.insert(argv.end(), t.tail.begin(), t.tail.end());
      auto r = testutil::Run(argv);
      CAPTURE(mode);
      CHECK_MESSAGE(r.exit_code == 0, r.err);
    }
    std::vector<std::string> argv = t.argv;
    argv.insert(argv.end(), {"--color", "sometimes"});
    argv.insert(argv.end(), t.tail.begin(), t.tail.end());
    auto bad = testutil::Run(argv);
    CHECK(bad.exit_code == t.bad_status);
    CHECK(testutil::LineCount(bad.err) == 1);
    CHECK_MESSAGE(bad.err.find("--color must be auto, always or never, not 'sometimes'") != std::string::npos, bad.err);
    CHECK(bad.out.empty());
  }
}

namespace {

// Notes when the first tree row (the third line: totals, header, row)
// arrives, with no buffering in between.
class FirstRowClock : public std::streambuf {
 public:
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> first_row;

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) Count(static_cast<char>(c));
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) Count(s[i]);
    return n;
  }

 private:
  void Count(char c) {
    if (c == '\n' && ++newlines_ == 3) first_row = Clock::now();
  }
  int newlines_ = 0;
};

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
#define CCT_MANNERS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CCT_MANNERS_ASAN 1
#endif
#endif

TEST_CASE("tree prints its first row before formatting the rest (a 400,000-node tree)") {
  // 400 functions under main, 1000 callees each, a value on every leaf
  // (under ASan, 100 functions: the same rows streamed, a quarter of the
  // 22 s it took there).
#ifdef CCT_MANNERS_ASAN
  constexpr int kFunctions = 100;
#else
  constexpr int kFunctions = 400;
#endif
  query::Profile profile;
  profile.label = "big";
  cct::Tree& t = profile.tree;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  const cct::NodeId main = t.InternChild(cct::kRootNode, t.InternFrame(cct::FrameKind::kFunction, "main"));
  for (int f = 0; f < kFunctions; ++f) {
    const cct::NodeId fn = t.InternChild(main, t.InternFrame(cct::FrameKind::kFunction, "f" + std::to_string(f)));
    for (int g = 0; g < 1000; ++g) {
      const cct::NodeId leaf = t.InternChild(fn, t.InternFrame(cct::FrameKind::kFunction, "g" + std::to_string(g)));
      t.AddValue(leaf, cpu, 1e3 * (1 + (f * 7919 + g * 104729) % 997));
    }
  }
  reports::ReportOptions opt;
  opt.width = 100;
  FirstRowClock sink;
  std::ostream out(&sink);
  const auto start = FirstRowClock::Clock::now();
  REQUIRE(reports::WriteTreeReport(profile, opt, out).ok());
  const auto end = FirstRowClock::Clock::now();
  REQUIRE(sink.first_row.has_value());
  const double first = std::chrono::duration<double>(*sink.first_row - start).count();
  const double total = std::chrono::duration<double>(end - start).count();
  MESSAGE(kFunctions * 1000 << "-node tree: first row after " << first << " s of " << total << " s");
  // Laid out as a whole, the first row came after every row was formatted
  // (most of the time); streamed, after the first few thousand.
  CHECK(first < total * 0.2);
}

TEST_CASE("tree: rows formatted by several threads come out once each, in order, with their prefixes (100,000 rows)") {
  // 100 functions under main, 1000 callees each: rounds of rows are formatted
  // in parts on threads and written in order. The order expected is derived
  // from the construction: functions by their total, callees by their value,
  // ties by name.
  query::Profile profile;
  profile.label = "rounds";
  cct::Tree& t = profile.tree;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  const cct::NodeId main = t.InternChild(cct::kRootNode, t.InternFrame(cct::FrameKind::kFunction, "main"));
  constexpr int kFunctions = 100, kCallees = 1000;
  struct Callee {
    double value;
    std::string name;
  };
  std::vector<std::pair<double, std::string>> functions;  // (total, name)
  std::map<std::string, std::vector<Callee>> callees;
  for (int f = 0; f < kFunctions; ++f) {
    const std::string fname = "f" + std::to_string(f);
    const cct::NodeId fn = t.InternChild(main, t.InternFrame(cct::FrameKind::kFunction, fname));
    double total = 0;
    for (int g = 0; g < kCallees; ++g) {
      const std::string gname = "g" + std::to_string(g);
      const double v = 1e3 * (1 + (f * 7919 + g * 104729) % 97);  // many ties
      t.AddValue(t.InternChild(fn, t.InternFrame(cct::FrameKind::kFunction, gname)), cpu, v);
      callees[fname].push_back({v, gname});
      total += v;
    }
    functions.emplace_back(total, fname);
  }
  auto by_value_then_name = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  std::sort(functions.begin(), functions.end(), by_value_then_name);
  std::vector<std::string> want{"<root>", "`- main"};
  for (size_t f = 0; f < functions.size(); ++f) {
    const bool last_f = f + 1 == functions.size();
    want.push_back(std::string("   ") + (last_f ? "`- " : "|- ") + functions[f].second);
    std::vector<std::pair<double, std::string>> gs;
    for (const Callee& c : callees[functions[f].second]) gs.emplace_back(c.value, c.name);
    std::sort(gs.begin(), gs.end(), by_value_then_name);
    for (size_t g = 0; g < gs.size(); ++g)
      want.push_back(std::string("   ") + (last_f ? "   " : "|  ") + (g + 1 == gs.size() ? "`- " : "|- ") + gs[g].second);
  }
  reports::ReportOptions opt;
  opt.width = 0;
  opt.ascii = true;
  std::ostringstream out;
  REQUIRE(reports::WriteTreeReport(profile, opt, out).ok());
  const std::vector<std::string> lines = MannersLines(out.str());
  REQUIRE(lines.size() == want.size() + 2);  // the totals line and the header first
  size_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string& line = lines[i + 2];
    if (line.size() < want[i].size() || line.compare(line.size() - want[i].size(), want[i].size(), want[i]) != 0) {
      if (++wrong <= 5) MESSAGE("row " << i << ": '" << line << "', expected it to end with '" << want[i] << "'");
    }
  }
  CHECK(wrong == 0);
}
