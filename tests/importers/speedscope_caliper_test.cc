// speedscope both ways and Caliper's JSON outputs.
//
// Inputs: fixtures written here to the published formats (speedscope's
// file-format-spec.ts / file-format-schema.json; Caliper's json-split as
// cali-query 2.10 writes it for Hatchet and its plain json records), stated
// as such in each test: neither py-spy, rbspy nor Caliper runs here. A real
// Caliper file under ../shared/data/hatchet is read when present.
// The export is checked in its consumer, speedscope itself in headless
// Chromium, when the speedscope npm package is at hand (CCT_SPEEDSCOPE_DIR,
// or `npm pack speedscope` into the build directory); otherwise against the
// structure speedscope's JSON schema states.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "importers/importer.h"
#include "tests/interop_util.h"

namespace speedscope_caliper {

using cct::FrameKind;
using nlohmann::json;

// Exclusive value of `metric` at the node reached by the names in `path`
// from the root; NaN when the path is not in the tree.
double ExclusiveAt(const cct::Tree& t, const std::string& metric, const std::vector<std::string>& path) {
  const cct::Children ch = cct::BuildChildren(t);
  cct::NodeId n = cct::kRootNode;
  for (const std::string& name : path) {
    cct::NodeId next = cct::kNoNode;
    for (const cct::NodeId* c = ch.begin(n); c != ch.end(n); ++c)
      if (t.name(*c) == name) next = *c;
    if (next == cct::kNoNode) return std::nan("");
    n = next;
  }
  const cct::MetricId m = t.metrics().Find(metric);
  return m == cct::kNoMetric ? std::nan("") : t.Value(n, m);
}

double Total(const cct::Tree& t, const std::string& metric) {
  const cct::MetricId m = t.metrics().Find(metric);
  if (m == cct::kNoMetric) return std::nan("");
  cct::NodeValues v(t);
  return v.Total(m);
}

std::string DataFile(const std::string& rel) { return testutil::SourceDir() + "/tests/data/" + rel; }

// --- speedscope import ---------------------------------------------------

TEST_CASE("speedscope import: sampled profiles in py-spy's member order (fixture written to the spec)") {
  // Profiles come before shared.frames, as py-spy and rbspy write them.
  auto r = importers::ImportSpeedscope(DataFile("speedscope/pyspy-order.speedscope.json"), {});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const cct::Tree& t = r->tree;
  // milliseconds -> "time" in ns; samples [0,1] twice at 10 ms, [0] 5 ms,
  // [0,2] 2.5 ms on the main thread; [1] 1 ms on the worker.
  const std::string main_thread = "Thread 1 MainThread";
  CHECK(ExclusiveAt(t, "time", {main_thread, "main"}) == doctest::Approx(5e6));
  CHECK(ExclusiveAt(t, "time", {main_thread, "main", "work"}) == doctest::Approx(20e6));
  CHECK(ExclusiveAt(t, "time", {main_thread, "main", "idle"}) == doctest::Approx(2.5e6));
  CHECK(ExclusiveAt(t, "time", {"Thread 2 worker", "work"}) == doctest::Approx(1e6));
  CHECK(Total(t, "time") == doctest::Approx(28.5e6));
  CHECK(t.metrics().Get(t.metrics().Find("time")).unit == cct::Unit::kNanoseconds);
  CHECK(r->records == 5);
  // Threads are thread nodes; file and line stay on the frames.
  const cct::Children ch = cct::BuildChildren(t);
  size_t threads = 0;
  for (const cct::NodeId* c = ch.begin(cct::kRootNode); c != ch.end(cct::kRootNode); ++c)
    threads += t.kind(*c) == FrameKind::kThread;
  CHECK(threads == 2);
  bool saw_work = false;
  for (cct::NodeId n = 1; n < t.size(); ++n)
    if (t.name(n) == "work") {
      saw_work = true;
      CHECK(t.str(t.frame(n).file) == "app.py");
      CHECK(t.frame(n).line == 10);
    }
  CHECK(saw_work);
}

TEST_CASE("speedscope import: evented profile, self time per stack, --metric renames") {
  // O a@0, O b@2, C b@5, O c@6, C c@10, C a@12 (microseconds): a is on top
  // for 0-2, 5-6 and 10-12 (5 us), b for 3 us, c for 4 us.
  const json doc = {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
                    {"shared", {{"frames", {{{"name", "a"}}, {{"name", "b"}}, {{"name", "c"}}}}}},
                    {"profiles",
                     {{{"type", "evented"},
                       {"name", "T"},
                       {"unit", "microseconds"},
                       {"startValue", 0},
                       {"endValue", 12},
                       {"events",
                        {{{"type", "O"}, {"frame", 0}, {"at", 0}},
                         {{"type", "O"}, {"frame", 1}, {"at", 2}},
                         {{"at", 5}, {"type", "C"}, {"frame", 1}},  // members in any order
                         {{"type", "O"}, {"frame", 2}, {"at", 6}},
                         {{"type", "C"}, {"frame", 2}, {"at", 10}},
                         {{"type", "C"}, {"frame", 0}, {"at", 12}}}}}}}};
  testutil::TempDir dir;
  const std::string file = dir / "ev.json";
  testutil::WriteFileOrDie(file, doc.dump(1));
  importers::ImportOptions o;
  o.metric = "realtime";  // a catalog time metric: its unit agrees
  auto r = importers::ImportSpeedscope(file, o);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(ExclusiveAt(r->tree, "realtime", {"T", "a"}) == doctest::Approx(5e3));
  CHECK(ExclusiveAt(r->tree, "realtime", {"T", "a", "b"}) == doctest::Approx(3e3));
  CHECK(ExclusiveAt(r->tree, "realtime", {"T", "a", "c"}) == doctest::Approx(4e3));
  CHECK(Total(r->tree, "realtime") == doctest::Approx(12e3));
  // A count metric cannot hold a time.
  o.metric = "samples";
  CHECK(importers::ImportSpeedscope(file, o).status().code() == cct::ErrorCode::kInvalidArgument);
}

TEST_CASE("speedscope import: malformed files are one line naming where, exit 2; --skip-bad-lines skips samples") {
  testutil::TempDir dir;
  const std::string db = dir / "s.db";
  const std::string frames = R"("shared":{"frames":[{"name":"a"},{"name":"b"}]})";
  auto sampled = [&](const std::string& samples, const std::string& weights, const std::string& unit = "none") {
    return "{" + frames + R"(,"profiles":[{"type":"sampled","name":"p","unit":")" + unit +
           R"(","startValue":0,"endValue":1,"samples":)" + samples + R"(,"weights":)" + weights + "}]}";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"shared\": {\"frames\": [", "not valid JSON at byte"},
      {sampled("[[0],[1]]", "[1]"), "2 samples but 1 weights"},
      {sampled("[[0],[7]]", "[1,1]"), "names frame 7 but shared.frames has 2"},
      {sampled("[[0],[\"x\"]]", "[1,1]"), "profiles[0].samples[1]: a frame index is not a number"},
      {sampled("[[0]]", "[1]", "furlongs"), "profiles[0].unit is \"furlongs\""},
      {"{" + frames + R"(,"profiles":[{"type":"evented","name":"p","unit":"none","events":[)"
                      R"({"type":"O","frame":0,"at":0},{"type":"C","frame":1,"at":1}]}]})",
       "profiles[0].events[1]: closes frame 1 but frame 0 is the innermost open one"},
      {"{" + frames + R"(,"profiles":[{"type":"evented","name":"p","unit":"none","events":[)"
                      R"({"type":"O","frame":0,"at":3},{"type":"C","frame":0,"at":1}]}]})",
       "is before the previous event's"},
      {"{" + frames + R"(,"profiles":[{"type":"flamegraph","name":"p"}]})", "expected \"sampled\" or \"evented\""},
      {R"({"profiles":[]})", "no \"shared\" member"},
      {"[1,2]", "not a speedscope file"},
  };
  for (const auto& c : cases) {
    const std::string file = dir / "bad.json";
    testutil::WriteFileOrDie(file, c.first);
    auto r = interop::Import(db, {"--from", "speedscope", file});
    CAPTURE(c.first);
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
    CHECK_MESSAGE(r.err.find(c.second) != std::string::npos, r.err);
  }
  // A sample with a bad frame index is skipped with --skip-bad-lines; the
  // others are imported.
  const std::string file = dir / "skip.json";
  testutil::WriteFileOrDie(file, sampled("[[0],[0,true],[1]]", "[1,2,4]"));
  auto r = interop::Import(db, {"--from", "speedscope", "--skip-bad-lines", file});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("skipped 1 malformed record(s); first: profiles[0].samples[1]") != std::string::npos);
  const cct::Tree t = interop::ReadRun(db, 1);
  CHECK(Total(t, "samples") == doctest::Approx(5));
  // --unit is the file's to say.
  CHECK(interop::Import(db, {"--from", "speedscope", "--unit", "ms", file}).exit_code == 2);
}

TEST_CASE("speedscope import: a JSON string over the token limit is refused before it is read whole") {
  testutil::TempDir dir;
  const std::string file = dir / "long.json";
  std::string doc = R"({"shared":{"frames":[{"name":")";
  doc.append(importers::kMaxLineBytes + 16, 'x');
  doc += R"("}]},"profiles":[]})";
  testutil::WriteFileOrDie(file, doc);
  auto r = importers::ImportSpeedscope(file, {});
  REQUIRE(!r.ok());
  CHECK(r.status().message().find("a JSON string at line 1 is longer than 16 MiB") != std::string::npos);
}

// --- speedscope export ---------------------------------------------------

// Two threads with source-located frames and a value on a thread node, plus
// a top-level node outside any thread; cputime in ns.
cct::Tree ExportFixture() {
  cct::Tree t;
  const cct::MetricId m = *t.metrics().RegisterStandard("cputime");
  const cct::NodeId t1 = t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kThread, "main thread"));
  const cct::NodeId mn = t.InternChild(t1, t.InternFrame(FrameKind::kFunction, "main", "/bin/app", "/src/main.cc", 3));
  const cct::NodeId solve = t.InternChild(mn, t.InternFrame(FrameKind::kFunction, "solve", "/bin/app", "/src/solve.cc", 9));
  const cct::NodeId line = t.InternChild(solve, t.InternFrame(FrameKind::kLine, "solve.cc:12", "", "/src/solve.cc", 12));
  t.AddValue(mn, m, 1000);
  t.AddValue(solve, m, 2000);
  t.AddValue(line, m, 4000);
  t.AddValue(t1, m, 8);  // time in the thread outside any frame
  const cct::NodeId t2 = t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kThread, "worker"));
  const cct::NodeId w = t.InternChild(t2, t.InternFrame(FrameKind::kFunction, "work", "/bin/app", "/src/work.cc", 5));
  t.AddValue(t.InternChild(w, t.InternFrame(FrameKind::kFunction, "solve", "/bin/app", "/src/solve.cc", 9)), m, 16000);
  t.AddValue(t.InternChild(cct::kRootNode, t.InternFrame(FrameKind::kFunction, "startup")), m, 32);
  return t;
}
constexpr double kExportTotal = 1000 + 2000 + 4000 + 8 + 16000 + 32;

// The structure speedscope's file-format-schema.json requires (written from
// the schema: required members and their types, units, event types), for
// the sampled profiles we write.
void CheckAgainstSchema(const json& f) {
  REQUIRE(f.is_object());
  CHECK(f.value("$schema", "") == "https://www.speedscope.app/file-format-schema.json");
  REQUIRE(f.contains("shared"));
  REQUIRE(f["shared"]["frames"].is_array());
  const size_t frames = f["shared"]["frames"].size();
  for (const json& fr : f["shared"]["frames"]) {
    REQUIRE(fr["name"].is_string());
    if (fr.contains("file")) CHECK(fr["file"].is_string());
    if (fr.contains("line")) CHECK(fr["line"].is_number());
  }
  REQUIRE(f["profiles"].is_array());
  const std::set<std::string> units = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"};
  for (const json& p : f["profiles"]) {
    CHECK(p["type"] == "sampled");
    CHECK(p["name"].is_string());
    CHECK(units.count(p["unit"].get<std::string>()) == 1);
    CHECK(p["startValue"].is_number());
    CHECK(p["endValue"].is_number());
    REQUIRE(p["samples"].is_array());
    REQUIRE(p["weights"].is_array());
    CHECK(p["samples"].size() == p["weights"].size());
    for (const json& s : p["samples"])
      for (const json& i : s) CHECK((i.is_number_integer() && i.get<size_t>() < frames));
  }
  CHECK(f["exporter"].is_string());
  CHECK(f["name"].is_string());
  CHECK(f["activeProfileIndex"].is_number_integer());
}

TEST_CASE("speedscope export: one sampled profile per thread, exact tree, round trip through the importer") {
  testutil::TempDir dir;
  const std::string db = dir / "e.db";
  interop::StoreRun(db, ExportFixture(), "exp");
  const std::string out = dir / "e.speedscope.json";
  auto r = interop::Query(db, {"export", "latest", "--to", "speedscope", "-o", out});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const json f = json::parse(testutil::ReadFileOrDie(out));
  CheckAgainstSchema(f);
  // The run's top-level node outside the threads, then the two threads.
  REQUIRE(f["profiles"].size() == 3);
  CHECK(f["profiles"][0]["name"] == "exp");
  CHECK(f["profiles"][1]["name"] == "main thread");
  CHECK(f["profiles"][2]["name"] == "worker");
  CHECK(f["profiles"][1]["unit"] == "nanoseconds");
  CHECK(f["exporter"] == "cctdb");
  double weights = 0;
  for (const json& p : f["profiles"])
    for (const json& w : p["weights"]) weights += w.get<double>();
  CHECK(weights == doctest::Approx(kExportTotal));
  // The worker's "solve" is the main thread's "solve": one shared frame with
  // its file and line.
  size_t solves = 0;
  for (const json& fr : f["shared"]["frames"])
    if (fr["name"] == "solve") {
      ++solves;
      CHECK(fr["file"] == "/src/solve.cc");
      CHECK(fr["line"] == 9);
    }
  CHECK(solves == 1);
  // The thread's own value: an empty stack.
  bool empty_stack = false;
  for (size_t i = 0; i < f["profiles"][1]["samples"].size(); ++i)
    if (f["profiles"][1]["samples"][i].empty()) empty_stack = f["profiles"][1]["weights"][i] == 8;
  CHECK(empty_stack);

  // Back in: the same values at the same paths (the top-level node now sits
  // under a thread named after the run).
  auto back = interop::Import(db, {"--from", "speedscope", "--metric", "cputime", out});
  REQUIRE_MESSAGE(back.exit_code == 0, back.err);
  const cct::Tree t = interop::ReadRun(db, 2);
  CHECK(Total(t, "cputime") == doctest::Approx(kExportTotal));
  CHECK(ExclusiveAt(t, "cputime", {"main thread"}) == doctest::Approx(8));
  CHECK(ExclusiveAt(t, "cputime", {"main thread", "main", "solve", "solve.cc:12"}) == doctest::Approx(4000));
  CHECK(ExclusiveAt(t, "cputime", {"worker", "work", "solve"}) == doctest::Approx(16000));
  CHECK(ExclusiveAt(t, "cputime", {"exp", "startup"}) == doctest::Approx(32));
  // An unknown metric is an error.
  CHECK(interop::Query(db, {"export", "1", "--to", "speedscope", "-m", "no-such-metric"}).exit_code == 2);
}

// The speedscope npm package (its dist/release/index.html), or "".
// CCT_SPEEDSCOPE_DIR names it; set but empty, it turns the npm fetch off.
std::string SpeedscopePackage() {
  namespace fs = std::filesystem;
  std::vector<std::string> candidates;
  if (const char* d = std::getenv("CCT_SPEEDSCOPE_DIR")) candidates = {d, std::string(d) + "/package"};
  const std::string cache = testutil::BuildDir() + "/speedscope-npm";
  candidates.push_back(cache + "/package");
  for (const std::string& c : candidates)
    if (fs::exists(c + "/dist/release/index.html")) return c;
  if (std::getenv("CCT_SPEEDSCOPE_DIR")) return "";
  // npm and the network, when both work: fetched once into the build dir.
  const std::string npm = interop::FindProgram("npm");
  if (npm.empty()) return "";
  fs::create_directories(cache);
  auto packed = testutil::Run({npm, "pack", "speedscope", "--pack-destination", cache, "--fetch-retries=0",
                               "--fetch-timeout=20000", "--silent"},
                              {{"npm_config_cache", cache + "/npm-cache"}}, 60);
  if (packed.exit_code != 0) return "";
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".tgz") {
      auto untar = testutil::Run({interop::FindProgram("tar"), "-xzf", e.path().string(), "-C", cache});
      if (untar.exit_code == 0 && fs::exists(cache + "/package/dist/release/index.html")) return cache + "/package";
    }
  return "";
}

TEST_CASE("speedscope export: speedscope itself shows our frames (headless Chromium), else schema only") {
  const std::string chromium = interop::FindProgram("chromium");
  const std::string package = chromium.empty() ? std::string() : SpeedscopePackage();
  if (package.empty()) {
    const std::string why = chromium.empty() ? "Chromium is not installed"
                                             : "no speedscope package (CCT_SPEEDSCOPE_DIR, or npm with network access)";
    MESSAGE("SKIPPED the consumer check: " << why << "; the export was checked against speedscope's schema only");
    return;
  }
  // Threads only, so that the first profile (the one speedscope opens) is
  // "main thread": main 1000 ns, solve 2000, its line 4000; the worker's
  // frames are in the second profile.
  cct::Tree tree;
  const cct::MetricId m = *tree.metrics().RegisterStandard("cputime");
  const cct::NodeId t1 = tree.InternChild(cct::kRootNode, tree.InternFrame(FrameKind::kThread, "main thread"));
  const cct::NodeId mn = tree.InternChild(t1, tree.InternFrame(FrameKind::kFunction, "main", "", "/src/main.cc", 3));
  const cct::NodeId solve = tree.InternChild(mn, tree.InternFrame(FrameKind::kFunction, "solve", "", "/src/solve.cc", 9));
  tree.AddValue(mn, m, 1000);
  tree.AddValue(solve, m, 2000);
  tree.AddValue(tree.InternChild(solve, tree.InternFrame(FrameKind::kLine, "solve.cc:12", "", "/src/solve.cc", 12)), m,
                4000);
  const cct::NodeId t2 = tree.InternChild(cct::kRootNode, tree.InternFrame(FrameKind::kThread, "worker"));
  tree.AddValue(tree.InternChild(t2, tree.InternFrame(FrameKind::kFunction, "work")), m, 16000);
  testutil::TempDir dir;
  const std::string db = dir / "c.db";
  interop::StoreRun(db, tree, "consumer");
  const std::string out = dir / "c.speedscope.json";
  REQUIRE(interop::Query(db, {"export", "latest", "--to", "speedscope", "-o", out}).exit_code == 0);
  // speedscope's own CLI way of opening a local file: a script calling
  // speedscope.loadFileFromBase64, named by #localProfilePath.
  const std::string data = testutil::ReadFileOrDie(out);
  static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i < data.size(); i += 3) {
    uint32_t v = static_cast<uint32_t>(static_cast<uint8_t>(data[i])) << 16;
    if (i + 1 < data.size()) v |= static_cast<uint32_t>(static_cast<uint8_t>(data[i + 1])) << 8;
    if (i + 2 < data.size()) v |= static_cast<uint8_t>(data[i + 2]);
    b64 += kB64[(v >> 18) & 63];
    b64 += kB64[(v >> 12) & 63];
    b64 += i + 1 < data.size() ? kB64[(v >> 6) & 63] : '=';
    b64 += i + 2 < data.size() ? kB64[v & 63] : '=';
  }
  const std::string js = dir / "load.js";
  testutil::WriteFileOrDie(js, "speedscope.loadFileFromBase64(\"c.speedscope.json\", \"" + b64 + "\")\n");
  // The sandwich view lists every frame of the profile as a DOM table row:
  // total, self (each "value (percent)") and the name, with the file as the
  // cell's title. --dump-dom once speedscope has loaded and rendered.
  std::vector<std::string> argv{chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--user-data-dir=" + (dir / "profile"), "--window-size=1200,1600",
                                "--virtual-time-budget=10000", "--dump-dom",
                                "file://" + package + "/dist/release/index.html#localProfilePath=" + js +
                                    "&view=sandwich"};
  auto dom = testutil::Run(argv, {{"HOME", dir.path()}}, 90);
  REQUIRE_MESSAGE(dom.exit_code == 0, dom.err);
  // The title is the file's name member (the run's label).
  CHECK_MESSAGE(dom.out.find("<title>run 1 'consumer' - speedscope</title>") != std::string::npos,
                dom.out.substr(0, 2000));
  // The profile switcher: the first of two profiles, named after its thread.
  CHECK(dom.out.find("main thread <span class=") != std::string::npos);
  CHECK(dom.out.find(">(1/2)</span>") != std::string::npos);
  // A frame's table row.
  auto row = [&](const std::string& name) {
    const size_t at = dom.out.find("</span>" + name + "</td>");
    if (at == std::string::npos) return std::string();
    const size_t start = dom.out.rfind("<tr", at);
    return dom.out.substr(start, at - start);
  };
  // Of the profile's 7000 ns: main total 100 %, self 1000 (14 %); solve
  // total 6000 (86 %), self 2000 (29 %); the line 4000 (57 %) both.
  const std::string main_row = row("main"), solve_row = row("solve"), line_row = row("solve.cc:12");
  CHECK_MESSAGE(main_row.find("(100%)") != std::string::npos, main_row);
  CHECK(main_row.find("(14%)") != std::string::npos);
  CHECK(main_row.find("title=\"/src/main.cc") != std::string::npos);
  CHECK_MESSAGE(solve_row.find("(86%)") != std::string::npos, solve_row);
  CHECK(solve_row.find("(29%)") != std::string::npos);
  CHECK_MESSAGE(line_row.find("(57%)") != line_row.rfind("(57%)"), line_row);
  // The worker's frame is in its own profile, not this one.
  CHECK(row("work").empty());
  MESSAGE("consumer check: speedscope " << package << " showed main, solve, solve.cc:12 with their values");
}

// --- Caliper -------------------------------------------------------------

TEST_CASE("caliper import: json-split as cali-query 2.10 writes it (fixture written to the format)") {
  // tests/data/caliper/region-profile.json: Caliper's hatchet-region-profile
  // layout ("Node order", mpi.rank, time in sec, path), two ranks, a row
  // without a path, Adiak's values among the globals.
  const std::string file = DataFile("caliper/region-profile.json");
  auto r = importers::ImportCaliper(file, {});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const cct::Tree& t = r->tree;
  CHECK(ExclusiveAt(t, "time", {"rank 0", "main"}) == doctest::Approx(0.5e9));
  CHECK(ExclusiveAt(t, "time", {"rank 0", "main", "solve", "kernel"}) == doctest::Approx(2e9));
  CHECK(ExclusiveAt(t, "time", {"rank 0", "main", "io"}) == doctest::Approx(0.25e9));
  CHECK(ExclusiveAt(t, "time", {"rank 1", "main", "solve"}) == doctest::Approx(1.5e9));
  CHECK(std::isnan(ExclusiveAt(t, "time", {"rank 1", "main", "io"})));
  // The sum of the file's time column but the pathless row (0.125 s).
  CHECK(Total(t, "time") == doctest::Approx(8.25e9));
  CHECK(t.metrics().Find("Node order") == cct::kNoMetric);
  CHECK(t.metrics().Find("mpi.rank") == cct::kNoMetric);
  CHECK(r->records == 7);

  // Through cct-import: globals as metadata and tags.
  testutil::TempDir dir;
  const std::string db = dir / "c.db";
  auto imp = interop::Import(db, {"--from", "caliper", file, "--tag", "cluster=override"});
  REQUIRE_MESSAGE(imp.exit_code == 0, imp.err);
  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto meta = (*d)->GetRun(1);
  REQUIRE(meta.ok());
  CHECK(meta->user == "alice");
  CHECK(meta->start_time_ns == int64_t{1685046480} * 1000000000);
  CHECK(meta->tags.at("cluster") == "override");  // --tag wins
  CHECK(meta->tags.at("jobsize") == "2");
  CHECK(meta->tags.count("cali.caliper.version") == 0);
  CHECK(meta->tags.count("libraries") == 0);  // a list: kept in the globals only
  CHECK((*meta->extra)["import_globals"]["libraries"] == "[libcaliper.so.2,libmpi.so.12]");
  CHECK((*meta->extra)["import_globals"]["cali.caliper.version"] == "2.10.0");
  CHECK((*meta->extra)["import_globals"]["import_records_without_path"] == "1");
}

TEST_CASE("caliper import: plain json records, microseconds, statistics left out (fixture written to the format)") {
  auto r = importers::ImportCaliper(DataFile("caliper/runtime-records.json"), {});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const cct::Tree& t = r->tree;
  // sum#time.duration in usec; inclusive#... is not needed with it; avg# is
  // not additive and not imported; count is.
  CHECK(ExclusiveAt(t, "time", {"rank 0", "main"}) == doctest::Approx(100e3));
  CHECK(ExclusiveAt(t, "time", {"rank 0", "main", "foo"}) == doctest::Approx(600e3));
  CHECK(ExclusiveAt(t, "count", {"rank 0", "main", "foo"}) == doctest::Approx(4));
  CHECK(Total(t, "time") == doctest::Approx(1000e3));  // the file's inclusive value at main
  CHECK(t.metrics().Find("avg#time.duration") == cct::kNoMetric);
  CHECK(r->records == 3);

  // json(object) with inclusive time only: exclusive = inclusive minus the
  // children's.
  testutil::TempDir dir;
  const std::string file = dir / "obj.json";
  testutil::WriteFileOrDie(file, R"({"records":[{"path":"a","time.inclusive.duration":10},)"
                                 R"({"path":"a/b","time.inclusive.duration":4},{"path":"a/c","time.inclusive.duration":5}],)"
                                 R"("globals":{"user":"bob","cali.caliper.version":"2.9"}})");
  auto o = importers::ImportCaliper(file, {});
  REQUIRE_MESSAGE(o.ok(), o.status().message());
  CHECK(ExclusiveAt(o->tree, "time", {"a"}) == doctest::Approx(1e3));
  CHECK(ExclusiveAt(o->tree, "time", {"a", "b"}) == doctest::Approx(4e3));
  CHECK(Total(o->tree, "time") == doctest::Approx(10e3));
  CHECK(o->user == "bob");
  CHECK(o->tags.count("cali.caliper.version") == 0);
  // --unit for the --metric column: these were seconds.
  importers::ImportOptions sec;
  sec.metric = "time.inclusive.duration";
  sec.unit = "s";
  auto s = importers::ImportCaliper(file, sec);
  REQUIRE(s.ok());
  CHECK(Total(s->tree, "time") == doctest::Approx(10e9));

  // Adiak's launchdate becomes the start time; one past 2262 (seconds whose
  // nanoseconds leave int64; caliper_fuzz found 16850416480) is none.
  for (const auto& [date, want] : std::vector<std::pair<std::string, int64_t>>{
           {"1685041648", int64_t{1685041648} * 1000000000}, {"16850416480", 0}, {"\"1685041648\"", int64_t{1685041648} * 1000000000}}) {
    CAPTURE(date);
    testutil::WriteFileOrDie(file, R"({"records":[{"path":"a","time.inclusive.duration":4}],"globals":{"launchdate":)" +
                                       date + "}}");
    auto d = importers::ImportCaliper(file, {});
    REQUIRE_MESSAGE(d.ok(), d.status().message());
    CHECK(d->start_time_ns == want);
  }
}

TEST_CASE("caliper import: malformed input is one line with the position, exit 2") {
  testutil::TempDir dir;
  const std::string db = dir / "c.db";
  const std::string head = R"({"columns":["path","sum#time.duration"],"column_metadata":[{"is_value":false},{"is_value":true}],)"
                           R"("nodes":[{"label":"main","column":"path"}],"data":)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + "[[0,1],[0]]}", "data[1]: a row of 1 values for 2 columns"},
      {head + "[[5,1]]}", "data[0]: the path value is not a node index"},
      {head + "[[0,\"x\"]]}", "data[0]: column \"sum#time.duration\" is not a number"},
      {R"({"columns":["x"],"column_metadata":[{"is_value":true}],"nodes":[],"data":[]})", "no \"path\""},
      {R"({"columns":["path","t"],"column_metadata":[{"is_value":false},{"is_value":true}],)"
       R"("nodes":[{"label":"a","column":"path","parent":3}],"data":[]})",
       "nodes[0].parent is not the index of an earlier node"},
      {"{\"columns\": [", "not valid JSON"},
      {"42", "not Caliper JSON"},
  };
  for (const auto& c : cases) {
    const std::string file = dir / "bad.json";
    testutil::WriteFileOrDie(file, c.first);
    auto r = interop::Import(db, {"--from", "caliper", file});
    CAPTURE(c.first);
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
    CHECK_MESSAGE(r.err.find(c.second) != std::string::npos, r.err);
  }
  const std::string file = dir / "skip.json";
  testutil::WriteFileOrDie(file, head + "[[0,1],[0],[0,2]]}");
  auto r = interop::Import(db, {"--from", "caliper", "--skip-bad-lines", file});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("first: data[1]") != std::string::npos);
  CHECK(Total(interop::ReadRun(db, 1), "time") == doctest::Approx(3e3));
}

TEST_CASE("caliper import: Caliper files from Hatchet's test data (../shared/data/hatchet), when present") {
  namespace fs = std::filesystem;
  const std::string dir = testutil::SharedData("hatchet");
  std::vector<std::string> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.path().extension() == ".json" && e.path().filename().string().find("caliper") != std::string::npos)
        files.push_back(e.path().string());
  if (files.empty()) {
    MESSAGE("SKIPPED: no caliper*.json under " << dir);
    return;
  }
  for (const std::string& f : files) {
    CAPTURE(f);
    const json doc = json::parse(testutil::ReadFileOrDie(f));
    if (!doc.is_object() || !doc.contains("columns")) continue;
    auto r = importers::ImportCaliper(f, {});
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    // The file's own sum of its time column (in seconds per its metadata),
    // over the rows with a path.
    const auto& cols = doc["columns"];
    size_t time_col = cols.size(), path_col = cols.size();
    for (size_t i = 0; i < cols.size(); ++i) {
      if (cols[i] == "time") time_col = i;
      if (cols[i] == "path") path_col = i;
    }
    if (time_col == cols.size() || path_col == cols.size()) continue;
    double sum = 0;
    for (const json& row : doc["data"])
      if (!row[path_col].is_null() && row[time_col].is_number()) sum += row[time_col].get<double>();
    CHECK(Total(r->tree, "time") == doctest::Approx(sum * 1e9));
  }
}

}  // namespace speedscope_caliper
