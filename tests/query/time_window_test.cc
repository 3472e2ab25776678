// Time windows (RUN@t=A..B, RUN@range=NAME#K; query/time_window.h) and the
// timeline report on a synthetic run stored with its trace: every expected
// value follows from how the trace below is built (times in ms from its
// start), not from the code under test.
//
// Main thread: a sample every 10 ms, each 10 ms of cputime and 1 sample:
//   t = 0..290 in phase_a (30), 300..490 in phase_b (20), none 500..590,
//   600..890 in phase_a (30); NVTX "step" instances [0, 500) and [600, 900).
// Worker: t = 5..445 in phase_c (45), 455..895 in work itself (45);
//   NVTX "outer" [100, 400) with "inner" [200, 300) nested in it, and a
//   "step" [600, 700) (same start as main's second: main's comes first).
// GPU: kern_x on device 0 stream 7, 10 launches of 20 ms at t = 0, 50, ..,
//   450; copies in on stream 8 of 1000, 2000, 3000, 4000 bytes, 5 ms each, at
//   t = 100, 200, 600, 700. nvtx:marks (not in the trace) cannot be windowed.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cct/tree.h"
#include "query/profile.h"
#include "query/time_window.h"
#include "store/database.h"
#include "store/selector.h"
#include "tests/test_util.h"

namespace {

constexpr int64_t kWinT0 = 1'700'000'000'000'000'000;
constexpr int64_t kWinMs = 1'000'000;
constexpr double kWinSample = 10.0 * kWinMs;  // cputime of one sample

struct WindowRun {
  testutil::TempDir dir;
  std::string db = dir / "w.db";
};

// The run above as run 1 ('traced'); run 2 ('plain') is its tree without a trace.
void StoreWindowRun(const std::string& db) {
  cct::Tree t;
  cct::MetricRegistry& reg = t.metrics();
  const cct::MetricId cpu = reg.RegisterStandard("cputime").value(), samples = reg.RegisterStandard("samples").value(),
                      ntime = reg.RegisterStandard("nvtx:time").value(),
                      ncount = reg.RegisterStandard("nvtx:count").value(),
                      marks = reg.RegisterStandard("nvtx:marks").value(), gker = reg.RegisterStandard("gker").value(),
                      gkc = reg.RegisterStandard("gker:count").value(), gx = reg.RegisterStandard("gxcopy").value(),
                      gxh = reg.RegisterStandard("gxcopy:h2d").value(),
                      gxc = reg.RegisterStandard("gxcopy:count").value();
  using cct::FrameKind;
  auto child = [&](cct::NodeId p, FrameKind k, const char* name) { return t.InternChild(p, t.InternFrame(k, name)); };
  const cct::NodeId main_thread = child(cct::kRootNode, FrameKind::kThread, "main thread");
  const cct::NodeId main_fn = child(main_thread, FrameKind::kFunction, "main");
  const cct::NodeId step = child(main_fn, FrameKind::kNvtx, "step");
  const cct::NodeId phase_a = child(step, FrameKind::kFunction, "phase_a");
  const cct::NodeId phase_b = child(step, FrameKind::kFunction, "phase_b");
  const cct::NodeId gk = child(main_fn, FrameKind::kGpuOp, "<gpu kernel>");
  const cct::NodeId kern = child(gk, FrameKind::kKernel, "kern_x");
  const cct::NodeId copyin = child(main_fn, FrameKind::kGpuOp, "<gpu copyin>");
  const cct::NodeId worker = child(cct::kRootNode, FrameKind::kThread, "worker");
  const cct::NodeId work = child(worker, FrameKind::kFunction, "work");
  const cct::NodeId phase_c = child(work, FrameKind::kFunction, "phase_c");
  const cct::NodeId outer = child(work, FrameKind::kNvtx, "outer");
  const cct::NodeId inner = child(outer, FrameKind::kNvtx, "inner");
  const cct::NodeId wstep = child(worker, FrameKind::kNvtx, "step");

  store::RunTrace tr;
  store::TraceSamples m{main_thread, {}, {}}, w{worker, {}, {}};
  auto sample = [&](store::TraceSamples& s, int64_t ms, cct::NodeId n) {
    s.time_ns.push_back(kWinT0 + ms * kWinMs);
    s.node.push_back(n);
    t.AddValue(n, cpu, kWinSample);
    t.AddValue(n, samples, 1);
  };
  for (int64_t ms = 0; ms < 900; ms += 10)
    if (ms < 300 || ms >= 600) sample(m, ms, phase_a);
    else if (ms < 500) sample(m, ms, phase_b);
  for (int64_t ms = 5; ms < 900; ms += 10) sample(w, ms, ms < 450 ? phase_c : work);
  tr.samples = {m, w};
  auto range = [&](cct::NodeId thread, cct::NodeId node, int64_t a, int64_t b, double excl_ms) {
    tr.ranges.push_back({thread, node, kWinT0 + a * kWinMs, kWinT0 + b * kWinMs});
    t.AddValue(node, ntime, excl_ms * kWinMs);
    t.AddValue(node, ncount, 1);
  };
  range(main_thread, step, 0, 500, 500);
  range(worker, outer, 100, 400, 200);
  range(worker, inner, 200, 300, 100);
  range(main_thread, step, 600, 900, 300);
  range(worker, wstep, 600, 700, 100);
  t.AddValue(main_fn, marks, 3);
  for (int k = 0; k < 10; ++k) {
    tr.gpu.push_back({0, 7, cct::GpuOpKind::kKernel, kWinT0 + k * 50 * kWinMs, kWinT0 + (k * 50 + 20) * kWinMs, 0, kern});
    t.AddValue(kern, gker, 20.0 * kWinMs);
    t.AddValue(kern, gkc, 1);
  }
  for (int k = 1; k <= 4; ++k) {
    const int64_t at = (k <= 2 ? 100 * k : 300 + 100 * k) * kWinMs;  // 100, 200, 600, 700
    tr.gpu.push_back({0, 8, cct::GpuOpKind::kCopyIn, kWinT0 + at, kWinT0 + at + 5 * kWinMs,
                      static_cast<uint64_t>(1000 * k), copyin});
    t.AddValue(copyin, gx, 5.0 * kWinMs);
    t.AddValue(copyin, gxh, 1000.0 * k);
    t.AddValue(copyin, gxc, 1);
  }
  std::stable_sort(tr.ranges.begin(), tr.ranges.end(),
                   [](const store::TraceRange& a, const store::TraceRange& b) { return a.start_ns < b.start_ns; });
  std::stable_sort(tr.gpu.begin(), tr.gpu.end(), [](const store::TraceGpuActivity& a, const store::TraceGpuActivity& b) {
    return a.start_ns < b.start_ns;
  });
  auto opened = store::Database::Open(db, store::Database::Mode::kWrite);
  REQUIRE(opened.ok());
  store::RunMeta traced, plain;
  traced.name = "traced";
  plain.name = "plain";
  traced.source = plain.source = "cct-record";
  traced.state = plain.state = store::RunState::kComplete;
  REQUIRE((*opened)->CreateRun(traced, &t, nullptr, &tr).ok());
  REQUIRE((*opened)->CreateRun(plain, &t).ok());
}

// The node at a path of names from the root ("main thread/main/step/phase_a").
cct::NodeId WindowNode(const cct::Tree& t, const std::string& path) {
  cct::NodeId at = cct::kRootNode;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t slash = std::min(path.find('/', pos), path.size());
    const std::string part = path.substr(pos, slash - pos);
    cct::NodeId found = cct::kNoNode;
    for (cct::NodeId n = 1; n < t.size(); ++n)
      if (t.parent(n) == at && t.name(n) == part) found = n;
    REQUIRE_MESSAGE(found != cct::kNoNode, path);
    at = found;
    pos = slash + 1;
  }
  return at;
}

double WindowValue(const query::Profile& p, const std::string& path, const std::string& metric) {
  const cct::MetricId m = p.tree.metrics().Find(metric);
  REQUIRE_MESSAGE(m != cct::kNoMetric, metric);
  return p.tree.Value(WindowNode(p.tree, path), m);
}

query::Profile WindowProfile(const std::string& db, const std::string& selector) {
  query::LoadOptions load;
  load.keep_lines = true;
  auto p = query::LoadProfile(selector, db, load);
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  return std::move(*p);
}

const char* const kWinA = "main thread/main/step/phase_a";
const char* const kWinB = "main thread/main/step/phase_b";
const char* const kWinC = "worker/work/phase_c";
const char* const kWinWork = "worker/work";
const char* const kWinKern = "main thread/main/<gpu kernel>/kern_x";
const char* const kWinCopy = "main thread/main/<gpu copyin>";

}  // namespace

TEST_CASE("selector @t= and @range=: parsing, units, open ends, one-line errors") {
  auto w = [](const std::string& s) {
    auto r = store::ParseSelector(s, "x.db");
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    REQUIRE(r->window.has_value());
    return *r->window;
  };
  CHECK(w("3@t=0.3..0.5").from_ns == 300 * kWinMs);
  CHECK(w("3@t=0.3..0.5").to_ns == 500 * kWinMs);
  CHECK(w("3@t=1500ms..2s").from_ns == 1500 * kWinMs);
  CHECK(w("3@t=1500ms..2s").to_ns == 2000 * kWinMs);
  CHECK(w("3@t=250us..").from_ns == 250000);
  CHECK_FALSE(w("3@t=250us..").to_ns.has_value());
  CHECK_FALSE(w("latest@t=..7ns").from_ns.has_value());
  CHECK(w("latest@t=..7ns").to_ns == 7);
  CHECK(w("3@range=train step#12").range == "train step");
  CHECK(w("3@range=a#b#2").range == "a#b");
  CHECK(w("3@range=a#b#2").instance == 2);
  CHECK(store::ParseSelector("old.db:4@t=1..2", "x.db")->db_path == "old.db");
  for (const char* bad : {"3@t=", "3@t=1", "3@t=a..b", "3@t=-1..2", "3@t=2..1", "3@t=1x..2", "3@range=step",
                          "3@range=step#0", "3@range=#2", "@t=1..2", "3@t=1..2@iter=1", "3@iter=1@t=1..2",
                          "3@range=a#1@t=1..2"}) {
    CAPTURE(bad);
    auto r = store::ParseSelector(bad, "x.db");
    CHECK(r.status().code() == cct::ErrorCode::kInvalidArgument);
    CHECK(r.status().message().find('\n') == std::string::npos);
  }
}

TEST_CASE("time window: samples, clipped ranges and GPU activity in @t= windows") {
  WindowRun run;
  StoreWindowRun(run.db);
  {
    // [300, 500): all of phase_b; no phase_a; worker samples 305..445 (15) of
    // phase_c and 455..495 (5) of work; step's first instance clipped to
    // 200 ms; outer [300, 400) = 100 ms, inner ends where the window starts
    // (not in it); kernels starting at 300, 350, 400, 450; no copy.
    const query::Profile p = WindowProfile(run.db, "1@t=0.3..0.5");
    CHECK(WindowValue(p, kWinB, "cputime") == doctest::Approx(20 * kWinSample));
    CHECK(WindowValue(p, kWinB, "samples") == doctest::Approx(20));
    CHECK(WindowValue(p, kWinA, "cputime") == 0);
    CHECK(WindowValue(p, kWinC, "samples") == doctest::Approx(15));
    CHECK(WindowValue(p, kWinWork, "samples") == doctest::Approx(5));
    CHECK(WindowValue(p, "main thread/main/step", "nvtx:time") == doctest::Approx(200.0 * kWinMs));
    CHECK(WindowValue(p, "main thread/main/step", "nvtx:count") == 1);
    CHECK(WindowValue(p, "worker/work/outer", "nvtx:time") == doctest::Approx(100.0 * kWinMs));
    CHECK(WindowValue(p, "worker/work/outer/inner", "nvtx:count") == 0);
    CHECK(WindowValue(p, "worker/step", "nvtx:count") == 0);
    CHECK(WindowValue(p, kWinKern, "gker") == doctest::Approx(80.0 * kWinMs));
    CHECK(WindowValue(p, kWinKern, "gker:count") == doctest::Approx(4));
    CHECK(WindowValue(p, kWinCopy, "gxcopy:h2d") == 0);
    CHECK(WindowValue(p, "main thread/main", "nvtx:marks") == 0);
    CHECK(p.label.find("t=0.300s..0.500s") != std::string::npos);
    CHECK(p.label.find("not windowed, left out: nvtx:marks") != std::string::npos);
  }
  {
    // [150, 250): outer [150, 250) inclusive 100 ms less inner's [200, 250):
    // 50 ms exclusive; inner 50 ms; copy at 200 (2000 bytes).
    const query::Profile p = WindowProfile(run.db, "1@t=150ms..250ms");
    CHECK(WindowValue(p, "worker/work/outer", "nvtx:time") == doctest::Approx(50.0 * kWinMs));
    CHECK(WindowValue(p, "worker/work/outer/inner", "nvtx:time") == doctest::Approx(50.0 * kWinMs));
    CHECK(WindowValue(p, "worker/work/outer/inner", "nvtx:count") == 1);
    CHECK(WindowValue(p, kWinCopy, "gxcopy:h2d") == doctest::Approx(2000));
    CHECK(WindowValue(p, kWinCopy, "gxcopy") == doctest::Approx(5.0 * kWinMs));
    CHECK(WindowValue(p, kWinCopy, "gxcopy:count") == doctest::Approx(1));
    CHECK(WindowValue(p, kWinKern, "gker:count") == doctest::Approx(2));  // 150, 200
  }
  {
    // [310, 460): the kernel at 300 started before (out); 350, 400 whole and
    // 450 clipped to 10 ms: 50 ms; step clipped to 150 ms.
    const query::Profile p = WindowProfile(run.db, "1@t=310ms..460ms");
    CHECK(WindowValue(p, kWinKern, "gker") == doctest::Approx(50.0 * kWinMs));
    CHECK(WindowValue(p, kWinKern, "gker:count") == doctest::Approx(3));
    CHECK(WindowValue(p, "main thread/main/step", "nvtx:time") == doctest::Approx(150.0 * kWinMs));
  }
  {
    // Open ends: the second half of phase_a and the copies at 600 and 700;
    // the first half and the copies at 100 and 200.
    const query::Profile late = WindowProfile(run.db, "1@t=0.6..");
    CHECK(WindowValue(late, kWinA, "samples") == doctest::Approx(30));
    CHECK(WindowValue(late, kWinCopy, "gxcopy:h2d") == doctest::Approx(7000));
    CHECK(WindowValue(late, kWinKern, "gker") == 0);
    const query::Profile early = WindowProfile(run.db, "1@t=..300ms");
    CHECK(WindowValue(early, kWinA, "cputime") == doctest::Approx(30 * kWinSample));
    CHECK(WindowValue(early, kWinCopy, "gxcopy:h2d") == doctest::Approx(3000));
  }
  {
    // The whole trace gives the run's values back (but nvtx:marks).
    const query::Profile all = WindowProfile(run.db, "1@t=..");
    const query::Profile whole = WindowProfile(run.db, "1");
    for (const char* metric : {"cputime", "samples", "nvtx:time", "nvtx:count", "gker", "gker:count", "gxcopy",
                               "gxcopy:h2d", "gxcopy:count"}) {
      CAPTURE(metric);
      const cct::MetricId m = whole.tree.metrics().Find(metric);
      for (cct::NodeId n = 0; n < whole.tree.size(); ++n)
        CHECK(all.tree.Value(n, m) == doctest::Approx(whole.tree.Value(n, m)));
    }
  }
  {
    // A window past the trace: an empty profile, not an error.
    const query::Profile empty = WindowProfile(run.db, "1@t=5..6");
    for (const char* metric : {"cputime", "nvtx:time", "gker"}) {
      const cct::MetricId m = empty.tree.metrics().Find(metric);
      CHECK(empty.tree.column(m).empty());
    }
  }
}

TEST_CASE("time window: @range=NAME#K picks instances in start order, main thread first on ties") {
  WindowRun run;
  StoreWindowRun(run.db);
  const query::Profile second = WindowProfile(run.db, "traced@range=step#2");  // main [600, 900)
  CHECK(WindowValue(second, kWinA, "samples") == doctest::Approx(30));
  CHECK(WindowValue(second, kWinB, "samples") == 0);
  CHECK(WindowValue(second, "main thread/main/step", "nvtx:time") == doctest::Approx(300.0 * kWinMs));
  CHECK(second.label.find("range step#2 (t=0.600s..0.900s)") != std::string::npos);
  const query::Profile third = WindowProfile(run.db, "1@range=step#3");  // worker [600, 700)
  CHECK(WindowValue(third, kWinA, "samples") == doctest::Approx(10));
  CHECK(WindowValue(third, kWinWork, "samples") == doctest::Approx(10));
  const query::Profile first = WindowProfile(run.db, "1@range=step#1");  // [0, 500)
  CHECK(WindowValue(first, kWinA, "samples") == doctest::Approx(30));
  CHECK(WindowValue(first, kWinB, "samples") == doctest::Approx(20));
}

TEST_CASE("time window: errors through cct-query are one line, exit 2; reports and cct-diff take windows") {
  WindowRun run;
  StoreWindowRun(run.db);
  auto fails = [&](std::vector<std::string> args, const std::string& says) {
    int rc = 0;
    std::string err;
    testutil::Query(run.db, args, &rc, &err);
    CAPTURE(args.back());
    CHECK(rc == 2);
    CHECK(testutil::LineCount(err) == 1);
    CHECK_MESSAGE(err.find(says) != std::string::npos, err);
  };
  fails({"tree", "2@t=0..1"}, "run 2 has no trace (record with cct-record --trace)");
  fails({"tree", "1@range=step#4"}, "has 3 instances of NVTX range 'step', not #4");
  fails({"tree", "1@range=nope#1"}, "has 0 instances of NVTX range 'nope'");
  fails({"top", "1@t=0.5..0.3"}, "ends before it starts");
  fails({"tree", "1@t=zero..1"}, "bad time window");
  int rc = 0;
  const std::string top = testutil::Query(run.db, {"top", "1@t=0.3..0.5", "-m", "samples", "--format", "csv"}, &rc);
  CHECK(rc == 0);
  CHECK(top.find("phase_b") != std::string::npos);
  CHECK(top.find("phase_a") == std::string::npos);  // no samples in the window: hidden or zero
  auto diff = testutil::Run({testutil::Tool("cct-diff"), "-d", run.db, "1@t=..0.3", "1@t=0.3..0.5", "-m", "samples"});
  CHECK(diff.exit_code != 2);
  const std::string diff_out = diff.out + diff.err;
  CHECK_MESSAGE(diff.out.find("phase_b") != std::string::npos, diff_out);
}

TEST_CASE("timeline: the hottest item per bucket and track, text golden, csv, json, filters") {
  WindowRun run;
  StoreWindowRun(run.db);
  int rc = 0;
  const std::string csv = testutil::Query(run.db, {"timeline", "1", "--bucket", "100", "--format", "csv"}, &rc);
  REQUIRE(rc == 0);
  const auto rows = testutil::ReadCsvRows(csv);
  // 10 buckets of 100 ms (the trace's last event, main's step ending at
  // 900 ms, is in the last), 4 tracks.
  REQUIRE(rows.size() == 10 * 4);
  auto cell = [&](size_t bucket, const std::string& track) -> std::map<std::string, std::string> {
    for (size_t i = bucket * 4; i < bucket * 4 + 4; ++i)
      if (rows[i].at("track") == track) return rows[i];
    FAIL("no track " << track);
    return {};
  };
  const char* main_items[] = {"phase_a", "phase_a", "phase_a", "phase_b", "phase_b", "", "phase_a", "phase_a", "phase_a", ""};
  for (size_t b = 0; b < 10; ++b) {
    CAPTURE(b);
    CHECK(std::stod(cell(b, "main thread").at("bucket_start_s")) == doctest::Approx(b * 0.1));
    CHECK(cell(b, "main thread").at("item") == main_items[b]);
    CHECK(cell(b, "main thread").at("samples") == (b == 5 || b == 9 ? "0" : "10"));
    // The worker: phase_c (called by work) to 445, work itself from 455.
    // Every sample has work on its stack: phase_c, deeper, is the hottest
    // while all samples have it too; bucket 4 holds 5 of each, so work (on
    // all 10 stacks) is.
    CHECK(cell(b, "worker").at("item") == (b <= 3 ? "phase_c" : b < 9 ? "work" : ""));
    // Stream 7: two 20 ms kernels in each of the first 5 buckets.
    CHECK(cell(b, "gpu 0 stream 7").at("item") == (b < 5 ? "kern_x" : ""));
    if (b < 5) CHECK(std::stod(cell(b, "gpu 0 stream 7").at("share")) == doctest::Approx(0.4));
    CHECK(cell(b, "gpu 0 stream 8").at("item") == (b == 1 || b == 2 || b == 6 || b == 7 ? "<gpu copyin>" : ""));
  }
  CHECK(std::stod(cell(4, "worker").at("share")) == doctest::Approx(1.0));
  CHECK(cell(4, "worker").at("samples") == "10");
  CHECK(std::stod(cell(1, "gpu 0 stream 8").at("share")) == doctest::Approx(0.05));

  // --thread, --from/--to and --by range.
  const std::string ranges = testutil::Query(run.db, {"timeline", "1", "--bucket", "100", "--from", "0.3", "--to",
                                                       "500ms", "--thread", "^(main|worker)", "--by", "range",
                                                       "--format", "csv"}, &rc);
  REQUIRE(rc == 0);
  const auto r2 = testutil::ReadCsvRows(ranges);
  REQUIRE(r2.size() == 2 * 2);
  CHECK(r2[0].at("track") == "main thread");
  CHECK(r2[0].at("item") == "step");
  CHECK(r2[1].at("item") == "(no range)");
  CHECK(std::stod(r2[2].at("bucket_start_s")) == doctest::Approx(0.4));

  // --by node: the sample's node, named by its path below the thread.
  const auto nodes = testutil::ReadCsvRows(testutil::Query(
      run.db, {"timeline", "1", "--bucket", "450", "--thread", "worker", "--by", "node", "--format", "csv"}, &rc));
  REQUIRE(rc == 0);
  REQUIRE(nodes.size() == 3);  // [0, 450), [450, 900), [900, 901 ns)
  CHECK(nodes[0].at("item") == "work > phase_c");
  CHECK(nodes[0].at("samples") == "45");
  CHECK(nodes[1].at("item") == "work");

  const std::string json = testutil::Query(run.db, {"timeline", "1", "--bucket", "100", "--format", "json"}, &rc);
  REQUIRE(rc == 0);
  const nlohmann::json doc = nlohmann::json::parse(json);
  CHECK(doc["bucket_s"].get<double>() == doctest::Approx(0.1));
  CHECK(doc["tracks"] == nlohmann::json({"main thread", "worker", "gpu 0 stream 7", "gpu 0 stream 8"}));
  REQUIRE(doc["rows"].size() == 40);
  CHECK(doc["rows"][5 * 4]["item"].is_null());  // main thread idle in [0.5, 0.6)
  CHECK(doc["rows"][3 * 4]["item"] == "phase_b");

  const std::string text = testutil::Query(run.db, {"timeline", "1", "--bucket", "100", "--width", "100"}, &rc);
  REQUIRE(rc == 0);
  const std::string diff = testutil::CheckGolden("timeline.txt", text);
  CHECK_MESSAGE(diff.empty(), diff);

  // Errors: one line, exit 2.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"timeline", "2"}, {"timeline", "1", "--bucket", "0.0001"},
        {"timeline", "1", "--from", "x"}, {"timeline", "1", "--thread", "("}, {"timeline", "1", "--by", "kernel"},
        {"timeline", "1@t=0..1"}, {"timeline", "1", "--bucket", "0.001", "--to", "1000s"}}) {
    std::string err;
    testutil::Query(run.db, bad, &rc, &err);
    CAPTURE(bad.back());
    CHECK(rc == 2);
    CHECK(testutil::LineCount(err) == 1);
  }
}

TEST_CASE("iterations --range: the trace's instances of a range, with their windowed totals") {
  WindowRun run;
  StoreWindowRun(run.db);
  int rc = 0;
  const std::string csv = testutil::Query(run.db, {"iterations", "1", "--range", "step", "--format", "csv"}, &rc);
  REQUIRE(rc == 0);
  const auto rows = testutil::ReadCsvRows(csv);
  REQUIRE(rows.size() == 3);
  // main [0, 500): 50 main + 50 worker samples; main [600, 900): 30 + 30;
  // worker [600, 700): 10 + 10. 10 ms each; the run has 80 + 90.
  const double starts[] = {0, 0.6, 0.6}, durations[] = {0.5, 0.3, 0.1}, samples[] = {100, 60, 20};
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(std::stod(rows[i].at("start")) == doctest::Approx(starts[i]));
    CHECK(std::stod(rows[i].at("duration")) == doctest::Approx(durations[i]));
    CHECK(std::stod(rows[i].at("cputime")) == doctest::Approx(samples[i] * 0.01));
    CHECK(std::stod(rows[i].at("share")) == doctest::Approx(samples[i] / 170));
  }
  const std::string text = testutil::Query(run.db, {"iterations", "1", "--range", "step"}, &rc);
  CHECK(rc == 0);
  CHECK(text.find("3 iterations of NVTX range 'step' in the trace") != std::string::npos);
  CHECK(text.find("(@range=step#2)") != std::string::npos);  // median of 1.0, 0.6, 0.2 s
  std::string err;
  testutil::Query(run.db, {"iterations", "2", "--range", "step"}, &rc, &err);
  CHECK(rc == 2);
  CHECK(err.find("run 2 has no trace") != std::string::npos);
}
