// End-to-end tests of cct-record: real programs recorded into a database,
// checked against what the programs measured themselves, against the same
// programs run without cct-record, and against the run metadata.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cct/node_values.h"
#include "collector/cpu/shared_rows.h"
#include "collector/cpu/task_clock.h"
#include "query/profile.h"
#include "store/database.h"
#include "store/run_file.h"
#include "tests/interop_util.h"
#include "tests/test_util.h"

using testutil::Run;
using testutil::TempDir;
using testutil::Tool;

namespace {

std::string Prog(const std::string& name) { return testutil::BuildDir() + "/tests/collector/" + name; }

std::vector<std::string> Record(const std::string& db, std::vector<std::string> opts,
                                const std::vector<std::string>& program) {
  std::vector<std::string> argv{Tool("cct-record"), "-o", db};
  argv.insert(argv.end(), opts.begin(), opts.end());
  argv.push_back("--");
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

mode_t CurrentUmask() {
  const mode_t m = umask(0);
  umask(m);
  return m;
}

std::vector<store::RunMeta> Runs(const std::string& db) {
  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto runs = (*d)->ListRuns();
  REQUIRE(runs.ok());
  return *runs;
}

cct::Tree TreeOf(const std::string& db, store::RunId id) {
  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto t = (*d)->ReadTree(id);
  REQUIRE(t.ok());
  return std::move(*t);
}

// Sum of the metric's exclusive values over every node whose path (root to
// node) contains a frame named by `match`: the function's inclusive value,
// counted once even under recursion.
double InclusiveOf(const cct::Tree& t, const std::string& metric, const std::function<bool(std::string_view)>& match) {
  const cct::MetricId m = t.metrics().Find(metric);
  REQUIRE(m != cct::kNoMetric);
  std::vector<char> inside(t.size(), 0);
  double sum = 0;
  for (cct::NodeId n = 0; n < t.size(); ++n) {
    inside[n] = (n != 0 && inside[t.parent(n)]) || match(t.name(n));
    if (inside[n]) sum += t.Value(n, m);
  }
  return sum;
}
double InclusiveOf(const cct::Tree& t, const std::string& metric, const std::string& name) {
  return InclusiveOf(t, metric, [&](std::string_view s) { return s == name; });
}

// Which run did which work (by the workload's construction, not by the order
// runs were written): each name in `works` to the run whose CPU time in that
// function exceeds `min_ns`.
std::map<std::string, store::RunMeta> RunsByWork(const std::string& db, const std::vector<std::string>& works,
                                                 double min_ns) {
  std::map<std::string, store::RunMeta> by_work;
  for (const auto& m : Runs(db)) {
    const cct::Tree t = TreeOf(db, m.id);
    for (const std::string& w : works)
      if (InclusiveOf(t, "cputime", w) > min_ns) by_work[w] = m;
  }
  return by_work;
}

bool HasFrame(const cct::Tree& t, const std::function<bool(std::string_view)>& match) {
  for (cct::NodeId n = 1; n < t.size(); ++n)
    if (match(t.name(n))) return true;
  return false;
}

int StatusOf(const testutil::RunResult& r) { return r.signal ? 128 + r.signal : r.exit_code; }

}  // namespace

// Every test here runs programs with the collector preloaded: the
// sanitizer build skips them (--test-suite-exclude=preload; an ASan
// collector cannot be preloaded into an uninstrumented program).
TEST_SUITE_BEGIN("preload");

TEST_CASE("cct-record: per-function CPU time within 10% of the program's own measurement; 40-deep recursion; inlining") {
  TempDir dir;
  const std::string db = dir / "r.db";
  auto r = Run(Record(db, {}, {Prog("cct-test-cpu-split")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto measured = testutil::Measured(r.out);
  REQUIRE(measured.size() == 5);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  const store::RunMeta& m = runs[0];
  CHECK(m.state == store::RunState::kComplete);
  CHECK(m.exit_code == 0);
  CHECK(m.source == "cct-record");
  CHECK(m.sampling["clock"] == "cpu");
  CHECK(m.sampling["freq_hz"] == 1000);
  CHECK_FALSE(m.command.empty());
  CHECK_FALSE(m.host.empty());
  CHECK_FALSE(m.cpu_model.empty());
  CHECK(m.collector_version.size() > 0);
  CHECK(m.diagnostics.at("threads") == 2);
  const cct::Tree t = TreeOf(db, m.id);
  for (const auto& entry : measured) {
    const auto& name = entry.first;
    const auto& ns = entry.second;
    const double got = InclusiveOf(t, "cputime", name);
    INFO(name << ": recorded " << got << " ns, measured " << ns << " ns");
    CHECK(std::abs(got - ns) <= 0.10 * ns);
  }
  // Two thread nodes; gamma_work only on the second.
  int threads = 0;
  for (cct::NodeId n = 1; n < t.size(); ++n)
    if (t.kind(n) == cct::FrameKind::kThread) ++threads;
  CHECK(threads == 2);
  // Every level of the recursion: a chain of 40 nested recurse frames.
  int deepest = 0;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    int chain = 0;
    for (cct::NodeId a = n; a != 0 && t.name(a) == "recurse"; a = t.parent(a)) ++chain;
    deepest = std::max(deepest, chain);
  }
  CHECK(deepest == 40);
  // The always_inline helper is its own frame, flagged inlined, under delta_work.
  bool inlined = false;
  for (cct::NodeId n = 1; n < t.size(); ++n)
    if (t.name(n) == "inlined_helper" && (t.frame(n).flags & cct::kFrameInlined) && t.name(t.parent(n)) == "delta_work")
      inlined = true;
  CHECK(inlined);
  // Source lines of the sampled instructions.
  bool lines = false;
  for (cct::NodeId n = 1; n < t.size(); ++n)
    if (t.kind(n) == cct::FrameKind::kLine && t.name(n).starts_with("cpu_split.cc:")) lines = true;
  CHECK(lines);
  auto top = Run({Tool("cct-query"), "-d", db, "top", "latest", "--by", "line", "-n", "3"});
  CHECK(top.exit_code == 0);
  CHECK(top.out.find("cpu_split.cc:") != std::string::npos);
}

namespace {
// Records `prog` under a watchdog of `timeout_s` (a hang fails the test
// instead of stalling the suite) and requires one complete run.
std::vector<store::RunMeta> OneCompleteRun(const std::string& db, const std::vector<std::string>& options,
                                           const std::vector<std::string>& prog, int timeout_s) {
  auto r = Run(Record(db, options, prog), {}, timeout_s);
  INFO(r.err);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.exit_code == 0);
  auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].state == store::RunState::kComplete);
  return runs;
}
}  // namespace

// Issue 15: a thread's first sample ran libunwind's lazy per-thread set-up
// inside the handler — glibc's dynamic TLS allocation (malloc) for the
// dlopen'ed libunwind — and hung forever when the thread was interrupted in
// malloc holding its arena's lock (or crashed, re-entering malloc). The
// storm starts 720 short-lived malloc-heavy threads (some loading a library,
// some starting threads) sampled at 20 kHz; each run is bounded by a
// watchdog. Before the fix 9 of 10 runs failed on the 2-core CI VM (6 hung,
// 3 died of SIGSEGV); three runs take about 10 s (about 90 s under meson's
// MALLOC_PERTURB_, which makes every allocation touch its pages).
TEST_CASE("cct-record: a thread storm in malloc, dlopen and pthread_create sampled at 20 kHz never hangs") {
  constexpr int kWaves = 60;
  for (int attempt = 0; attempt < 3; ++attempt) {
    CAPTURE(attempt);
    TempDir dir;
    const std::string db = dir / "storm.db";
    // ~5 s here, ~30 s under meson's MALLOC_PERTURB_ on a loaded VM; a deadlock never ends
    const auto runs = OneCompleteRun(db, {"--freq", "20000", "--checkpoint", "0"},
                                     {Prog("cct-test-thread-storm"), Prog("libcct-test-plugin.so"),
                                      std::to_string(kWaves)},
                                     90);
    // Per wave: 8 workers, half of which start a thread of their own; and main.
    CHECK(runs[0].diagnostics.at("threads") == 1 + kWaves * (8 + 4));
    CHECK(runs[0].diagnostics.at("samples") > 0);
    // Most of these threads unwind the slow way (every dlopen puts them off
    // the fast path): at 20 kHz the sampler holds itself back.
    CHECK(runs[0].diagnostics.at("throttled_samples") > 0);
  }
}

// A sample that costs c holds the thread's next samples off for 4c. On a
// loaded machine the thread can lose its core inside the handler; under the
// CPU clock that wait is not the handler's cost (c is then read from the
// thread's CPU clock). Before that, CI saw a thread's whole 200 ms phase
// unsampled at 4 kHz. The program's burning thread shares its core with a
// real-time thread that takes it for 0.25 ms in every 0.5, so it is preempted
// inside the handler about as often as the handler's share of its time.
TEST_CASE("cct-record --clock cpu: a thread preempted inside the sampling handler goes on being sampled") {
  TempDir dir;
  const std::string db = dir / "p.db";
  auto r = Run(Record(db, {"--clock", "cpu", "--freq", "10000"}, {Prog("cct-test-preempted")}), {}, 60);
  INFO(r.err);
  REQUIRE_FALSE(r.timed_out);
  if (r.exit_code == 3) {
    MESSAGE("SKIPPED: this system gives no real-time thread to preempt the program with");
    return;
  }
  REQUIRE(r.exit_code == 0);
  long preemptions = 0;
  REQUIRE(std::sscanf(r.out.c_str(), "preemptions %ld", &preemptions) == 1);
  CHECK(preemptions >= 600);  // 300 ms of CPU at half a core: ~1,200 wake-ups
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  const cct::Tree t = TreeOf(db, runs[0].id);
  // 300 ms of CPU at 10 kHz: 3,000 samples. A throttled tick's time goes
  // to the next sample, so the time is right either way; the count is not.
  CHECK(InclusiveOf(t, "cputime", "burn_preempted") == doctest::Approx(300e6).epsilon(0.1));
  CHECK(InclusiveOf(t, "samples", "burn_preempted") >= 0.9 * 3000);
  // With the handler's waits taken for its cost, 3.6-5.6 % of the samples
  // were throttled here (210-319 of ~5,800, both threads); without, 0.2 %.
  const auto& d = runs[0].diagnostics;
  CHECK(d.at("throttled_samples") <= 0.01 * d.at("samples"));
}

// The handler's own walker reads the modules' call-frame information, so a
// dlclose must not unmap a module while a walk on another thread reads it
// (dlclose waits for walks in flight), and no sample may unwind with
// libunwind while its thread holds the loader's list lock (a program's or
// the collector's own dl_iterate_phdr: libunwind takes that lock again).
// Before the second fix this program hung within a few runs, every thread
// waiting on the loader's lock: one was interrupted inside
// dl_iterate_phdr's lock acquisition, its handler's libunwind waited for
// the same lock. Four threads loading, calling and unloading one library
// 300 times each, sampled at 20 kHz, five times, each under a watchdog.
TEST_CASE("cct-record: threads loading and unloading a library while sampled at 20 kHz never hang or crash") {
  for (int attempt = 0; attempt < 5; ++attempt) {
    CAPTURE(attempt);
    TempDir dir;
    const std::string db = dir / "dl.db";
    const auto runs = OneCompleteRun(
        db, {"--freq", "20000"}, {Prog("cct-test-dl-loop"), Prog("libcct-test-plugin.so"), "300", "300", "0", "4"},
        60);  // ~1 s here
    CHECK(runs[0].diagnostics.at("threads") == 5);
    CHECK(runs[0].diagnostics.at("walker_samples") > 0);
    // 4 x 300 x 300 us in plugin_step; samples taken while another thread
    // is inside dlclose keep only their leaf, so some of it has no caller.
    const cct::Tree t = TreeOf(db, runs[0].id);
    CHECK(InclusiveOf(t, "cputime", "plugin_step") > 0.3 * 360e6);
  }
}

namespace {
// The longest chain of nested `name` nodes, and the parent of its outermost
// node.
std::pair<int, std::string> LongestChain(const cct::Tree& t, const std::string& name) {
  int deepest = 0;
  std::string above;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    int chain = 0;
    cct::NodeId a = n;
    for (; a != 0 && t.name(a) == name; a = t.parent(a)) ++chain;
    if (chain > deepest) deepest = chain, above = std::string(t.name(a));
  }
  return {deepest, above};
}

bool UnderPartial(const cct::Tree& t, const std::string& name) {
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    if (t.name(n) != name) continue;
    for (cct::NodeId a = t.parent(n); a != 0; a = t.parent(a))
      if (t.name(a) == cct::kPartialCallPathName) return true;
  }
  return false;
}
}  // namespace

// The processes of one recording share the CFI rows their walkers compute
// (collector/cpu/shared_rows.h): a program run a second time starts with
// the rows the first run found, and its stacks are as complete.
TEST_CASE("cct-record: a program run twice in one recording unwinds the second time from the rows the first computed") {
  TempDir dir;
  const std::string db = dir / "rows.db";
  const std::string prog = Prog("cct-test-deep-recursion");
  // A cache of its own: no rows an earlier recording saved.
  auto r = Run(Record(db, {"--symbol-cache", dir / "cache"}, {"/bin/sh", "-c", prog + " 10 && " + prog + " 10"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<store::RunMeta> runs;
  for (const store::RunMeta& m : Runs(db))
    if (m.name == "cct-test-deep-recursion") runs.push_back(m);
  REQUIRE(runs.size() == 2);
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.start_time_ns < b.start_time_ns; });
  const auto& first = runs[0].diagnostics;
  const auto& second = runs[1].diagnostics;
  // The first run computed its rows: main, dive and the code below them.
  CHECK(first.at("walker_rows_computed") >= 3);
  // The second found its program's rows in the table: dive's and main's
  // at least (one row each, every level of dive returns to one address).
  CHECK(second.at("walker_rows_shared") >= 2);
  CHECK(second.at("walker_rows_computed") < first.at("walker_rows_computed"));
  for (const store::RunMeta& m : runs) {
    const cct::Tree t = TreeOf(db, m.id);
    CHECK(LongestChain(t, "dive") == std::pair<int, std::string>{10, "main"});
    CHECK_FALSE(UnderPartial(t, "dive"));
  }
}

// The table is saved beside the symbol tables when the program ends, and
// the next recording starts from it: its first process finds the rows the
// previous recording computed. A damaged saved table only costs the rows.
TEST_CASE("cct-record: the next recording starts from the rows the previous one saved in the symbol cache") {
  TempDir dir;
  const std::string cache = dir / "cache";
  const std::string prog = Prog("cct-test-deep-recursion");
  auto record = [&](const std::string& db) {
    auto r = Run(Record(db, {"--symbol-cache", cache}, {prog, "10"}));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto runs = Runs(db);
    REQUIRE(runs.size() == 1);
    const cct::Tree t = TreeOf(db, runs[0].id);
    CHECK(LongestChain(t, "dive") == std::pair<int, std::string>{10, "main"});
    return runs[0].diagnostics;
  };
  // (A process may take steps from the table it filled itself: its own
  // cache is smaller, and a new module set starts it empty.)
  const std::string saved = cache + "/cfi-rows.v1";
  const auto first = record(dir / "a.db");
  CHECK(first.at("walker_rows_computed") >= 3);
  REQUIRE(std::filesystem::exists(saved));
  CHECK(std::filesystem::file_size(saved) == collector::SharedRowsBytes(collector::kSharedRowsEntries));
  const auto second = record(dir / "b.db");
  CHECK(second.at("walker_rows_shared") >= 2);  // dive's and main's rows at least
  CHECK(second.at("walker_rows_computed") < first.at("walker_rows_computed"));
  // Garbage where the table was: the recording computes its rows again, as
  // the first did, and saves a good table over it.
  {
    std::ofstream bad(saved, std::ios::trunc);
    bad << "not a table";
  }
  const auto third = record(dir / "c.db");
  CHECK(third.at("walker_rows_computed") >= 3);
  CHECK(third.at("walker_rows_computed") > second.at("walker_rows_computed"));
  CHECK(std::filesystem::file_size(saved) == collector::SharedRowsBytes(collector::kSharedRowsEntries));
  const auto fourth = record(dir / "d.db");
  CHECK(fourth.at("walker_rows_shared") >= 2);
  CHECK(fourth.at("walker_rows_computed") < third.at("walker_rows_computed"));
}

// Linux switches its per-task perf hooks on at the first such event and
// waits for an RCU grace period doing so (15 ms on the CI VM, after a
// second with none): cct-record holds one for the whole recording, so the
// program's first perf_event_open does not wait inside the program's time.
TEST_CASE("cct-record holds a task-clock perf event of its own while the program runs; start_ns is the collector's start") {
  const int probe = collector::OpenTaskClock(0, 0);
  if (probe < 0) {
    MESSAGE("skipped: perf events are not allowed here (perf_event_paranoid)");
    return;
  }
  close(probe);
  TempDir dir;
  const std::string db = dir / "hooks.db";
  // The program is cct-record's child: its parent's descriptors, as /proc lists them.
  const std::string look = "ls -l /proc/$PPID/fd | grep -c 'anon_inode:\\[perf_event\\]'";
  const auto began = std::chrono::steady_clock::now();
  auto r = Run(Record(db, {}, {"/bin/sh", "-c", look}));
  const auto wall_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began).count();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(std::stoi(r.out) >= 1);
  auto wall = Run(Record(db, {"--clock", "wall"}, {"/bin/sh", "-c", look + " || true"}));
  CHECK(wall.out == "0\n");  // the wall clock samples with timers: no event held
  // The collector's start, timed in the process: more than nothing, less
  // than the whole recording around it.
  const auto runs = Runs(db);
  REQUIRE_FALSE(runs.empty());
  const int64_t start_ns = runs.front().diagnostics.at("start_ns");
  CHECK(start_ns > 1000);
  CHECK(start_ns < wall_ns);
}

// Issue 15: stacks were cut at 512 frames, innermost kept, so a deep
// recursion's samples were all "<partial call path>". Now the depth is
// --max-depth (default 4096) and a deeper stack keeps its outermost frames.
TEST_CASE("cct-record --max-depth: 2000-deep recursion is complete; a smaller limit keeps the outermost frames") {
  constexpr int kDepth = 2000;
  TempDir dir;
  const std::string db = dir / "deep.db";
  auto r = Run(Record(db, {}, {Prog("cct-test-deep-recursion"), std::to_string(kDepth)}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].sampling["max_depth"] == 4096);
  const cct::Tree full = TreeOf(db, runs[0].id);
  // Every level of the recursion, under main, nothing partial or truncated.
  CHECK(LongestChain(full, "dive") == std::pair<int, std::string>{kDepth, "main"});
  CHECK_FALSE(UnderPartial(full, "dive"));
  CHECK(runs[0].diagnostics.at("truncated_samples") == 0);
  CHECK(InclusiveOf(full, "cputime", "dive") == doctest::Approx(400e6).epsilon(0.15));

  // Limits below the depth: the outermost frames (main, then the first
  // levels) are kept, under a "<truncated stack>" leaf. The frames above the
  // first dive (main and the C library's start code) are the same in both
  // runs, so the two chains differ by exactly the difference of the limits.
  int chain[2] = {};
  const int limits[2] = {64, 96};
  for (int i = 0; i < 2; ++i) {
    CAPTURE(limits[i]);
    auto s = Run(Record(db, {"--max-depth", std::to_string(limits[i])},
                        {Prog("cct-test-deep-recursion"), std::to_string(kDepth)}));
    INFO(s.err);
    REQUIRE(s.exit_code == 0);
    runs = Runs(db);
    const store::RunMeta& m = runs.back();
    CHECK(m.sampling["max_depth"] == limits[i]);
    const cct::Tree t = TreeOf(db, m.id);
    const auto [length, above] = LongestChain(t, "dive");
    chain[i] = length;
    CHECK(above == "main");
    CHECK(length < limits[i]);
    CHECK_FALSE(UnderPartial(t, "dive"));
    // The samples at the bottom of the recursion (nearly all of them) end in
    // the marker, right under the deepest kept level.
    CHECK(m.diagnostics.at("truncated_samples") >= 0.9 * m.diagnostics.at("samples"));
    CHECK(m.diagnostics.at("partial_samples") <= 0.05 * m.diagnostics.at("samples"));
    bool marker_under_chain = false;
    for (cct::NodeId n = 1; n < t.size(); ++n)
      if (t.name(n) == "<truncated stack>" && t.name(t.parent(n)) == "dive") marker_under_chain = true;
    CHECK(marker_under_chain);
    CHECK(InclusiveOf(t, "cputime", "dive") == doctest::Approx(400e6).epsilon(0.15));
  }
  CHECK(chain[1] - chain[0] == limits[1] - limits[0]);
}

TEST_CASE("cct-record: a thread started before the collector (by a library constructor) is sampled") {
  TempDir dir;
  const std::string db = dir / "early.db";
  auto r = Run(Record(db, {}, {Prog("cct-test-early-main")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const cct::Tree t = TreeOf(db, Runs(db)[0].id);
  CHECK(InclusiveOf(t, "cputime", "early_thread_work") == doctest::Approx(300e6).epsilon(0.10));
  CHECK(InclusiveOf(t, "cputime", "main_work") == doctest::Approx(100e6).epsilon(0.10));
}

TEST_CASE("cct-record: metadata (environment allow-list, git commit, tags), --repeat, summary lines") {
  TempDir dir;
  const std::string db = dir / "m.db";
  const std::map<std::string, std::string> env = {{"CUDA_VISIBLE_DEVICES", "0"},
                                                  {"NCCL_API_TOKEN", "abc"},
                                                  {"OMP_NUM_THREADS", "3"},
                                                  {"CCT_TEST_UNLISTED", ""},
                                                  {"SOME_PRIVATE_THING", "x"}};
  auto r = Run(Record(db, {"--repeat", "3", "--tag", "variant=base", "--name", "life"},
                      {Prog("cct-test-lifecycle"), "exit7"}),
               env, 120, testutil::SourceDir());
  INFO(r.err);
  // --repeat stops at the first failing run: exit7 fails, so one run.
  CHECK(r.exit_code == 7);
  auto ok = Run(Record(db, {"--repeat", "3", "--tag", "variant=base", "--name", "ok"}, {"/bin/true"}), env, 120,
                testutil::SourceDir());
  REQUIRE(ok.exit_code == 0);
  // One summary line per run; besides them at most cct-record's one line
  // saying GPU tracing is off (on a machine without a GPU).
  {
    std::istringstream lines(ok.err);
    std::string line;
    int summaries = 0, others = 0;
    while (std::getline(lines, line)) {
      if (line.starts_with("cct-record: run ")) ++summaries;
      else if (!line.starts_with("cct-record: GPU tracing off: ")) ++others;
    }
    CHECK(summaries == 3);
    CHECK(others == 0);
  }
  CHECK(ok.err.find("cct-record: run 2 'ok' ") != std::string::npos);
  CHECK(ok.err.find("complete -> " + db) != std::string::npos);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 4);
  for (const auto& m : runs) {
    CHECK(m.tags.at("variant") == "base");
    CHECK(m.env.count("CUDA_VISIBLE_DEVICES") == 1);
    CHECK(m.env.count("OMP_NUM_THREADS") == 1);
    CHECK(m.env.count("NCCL_API_TOKEN") == 0);
    CHECK(m.env.count("SOME_PRIVATE_THING") == 0);
    CHECK(m.env.count("HOME") == 0);
    CHECK(m.cwd == testutil::SourceDir());
  }
  CHECK(runs[0].name == "life");
  CHECK(runs[0].exit_code == 7);
  CHECK(runs[3].name == "ok");
  // The commit checked out in the working directory, as git itself reports it.
  auto head = Run({"git", "-C", testutil::SourceDir(), "rev-parse", "HEAD"});
  if (head.exit_code == 0) CHECK(runs[0].git_commit + "\n" == head.out);
}

TEST_CASE("cct-record: databases and spools are private; credentials in the command line are masked") {
  TempDir dir;
  const std::string db = dir / "p.db";
  const std::vector<std::string> program = {"/bin/sh", "-c", "exit 0", "sh", "--password=hunter2",
                                            "https://u:pw@example.com/x", "--n=3"};
  auto r = Run(Record(db, {}, program));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  struct stat st {};
  REQUIRE(stat(db.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(stat((db + "-lock").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  const std::vector<std::string> masked = {"/bin/sh", "-c", "exit 0", "sh", "--password=***",
                                           "https://u:***@example.com/x", "--n=3"};
  CHECK(runs[0].command == masked);
  auto shown = Run({Tool("cct-query"), "-d", db, "show", "latest"});
  CHECK(shown.out.find("hunter2") == std::string::npos);
  CHECK(shown.out.find(":pw@") == std::string::npos);

  // --keep-args stores it as given; --db-mode makes a shared database.
  const std::string shared = dir / "shared.db";
  auto k = Run(Record(shared, {"--keep-args", "--db-mode", "640"}, program));
  REQUIRE_MESSAGE(k.exit_code == 0, k.err);
  CHECK(Runs(shared).at(0).command == program);
  REQUIRE(stat(shared.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0640 & ~CurrentUmask()));
  // A mode the owner could not use: refused before the program runs.
  auto bad = Run(Record(dir / "bad.db", {"--db-mode", "400"}, {"/bin/true"}));
  CHECK(bad.exit_code == 125);
  CHECK(testutil::LineCount(bad.err) == 1);
  CHECK(bad.err.find("--db-mode 400") != std::string::npos);
  // cct-import: the same default and option.
  testutil::WriteFileOrDie(dir / "x.folded", "main;f 3\n");
  REQUIRE(Run({Tool("cct-import"), "-d", dir / "i.db", "--from", "folded", dir / "x.folded"}).exit_code == 0);
  REQUIRE(stat((dir / "i.db").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(Run({Tool("cct-import"), "-d", dir / "j.db", "--db-mode", "0660", "--from", "folded", dir / "x.folded"})
              .exit_code == 0);
  REQUIRE(stat((dir / "j.db").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0660 & ~CurrentUmask()));
}

TEST_CASE("cct-record: a stripped binary gets module+offset names; libc keeps its symbols") {
  TempDir dir;
  const std::string db = dir / "s.db";
  auto r = Run(Record(db, {}, {Prog("cct-test-stripped")}));
  REQUIRE(r.exit_code == 0);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  const cct::Tree t = TreeOf(db, runs[0].id);
  const std::regex offset(R"(cct-test-stripped\+0x[0-9a-f]+)");
  CHECK(HasFrame(t, [&](std::string_view s) { return std::regex_match(std::string(s), offset); }));
  CHECK_FALSE(HasFrame(t, [](std::string_view s) { return s == "alpha_work"; }));
  CHECK(HasFrame(t, [](std::string_view s) { return s.find("clock_gettime") != std::string_view::npos; }));

  // One node per function, named from where the function starts (its FDE),
  // not one per sampled instruction. The truth is the unstripped build's
  // symbol table as binutils' nm reads it (same code: objcopy only strips).
  const std::string nm_path = interop::FindProgram("nm");  // binutils, as objcopy above
  REQUIRE_FALSE(nm_path.empty());
  auto nm = Run({nm_path, "--defined-only", Prog("cct-test-cpu-split")});
  REQUIRE(nm.exit_code == 0);
  std::map<std::string, uint64_t> start_of;  // function -> link-time address (module offset: a PIE's base is 0)
  std::set<uint64_t> starts;
  {
    std::istringstream in(nm.out);
    std::string addr, type, name;
    while (in >> addr >> type >> name) {
      // Text symbols, weak ones included: an inline function emitted out of
      // line (ClockNs) is "W", and a sample can land in it.
      if (type != "T" && type != "t" && type != "W" && type != "w") continue;
      start_of[name] = std::stoull(addr, nullptr, 16);
      starts.insert(std::stoull(addr, nullptr, 16));
    }
  }
  REQUIRE(start_of.count("alpha_work"));
  std::set<std::string> offset_frames;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    const std::string name(t.name(n));
    if (std::regex_match(name, offset)) offset_frames.insert(name);
  }
  for (const std::string& f : offset_frames) {
    INFO(f);
    CHECK(starts.count(std::stoull(f.substr(f.find("+0x") + 3), nullptr, 16)) == 1);
  }
  auto frame_of = [&](const std::string& fn) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "cct-test-stripped+0x%llx", static_cast<unsigned long long>(start_of.at(fn)));
    return std::string(buf);
  };
  // cpu_split.cc burns 300 ms in alpha_work, 150 in beta_work, 250 in gamma_work.
  CHECK(InclusiveOf(t, "cputime", frame_of("alpha_work")) == doctest::Approx(300e6).epsilon(0.15));
  CHECK(InclusiveOf(t, "cputime", frame_of("beta_work")) == doctest::Approx(150e6).epsilon(0.15));
  CHECK(InclusiveOf(t, "cputime", frame_of("gamma_work")) == doctest::Approx(250e6).epsilon(0.15));
}

TEST_CASE("cct-record: a library loaded with dlopen and unloaded is symbolized") {
  TempDir dir;
  const std::string db = dir / "d.db";
  auto r = Run(Record(db, {}, {Prog("cct-test-dl-host"), Prog("libcct-test-plugin.so")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const cct::Tree t = TreeOf(db, Runs(db)[0].id);
  const double plugin = InclusiveOf(t, "cputime", "plugin_work");
  const double host = InclusiveOf(t, "cputime", "host_work");
  CHECK(plugin == doctest::Approx(300e6).epsilon(0.15));
  CHECK(host == doctest::Approx(200e6).epsilon(0.15));
  bool module_ok = false;
  for (cct::NodeId n = 1; n < t.size(); ++n)
    if (t.name(n) == "plugin_work" && t.str(t.frame(n).module).find("libcct-test-plugin.so") != std::string::npos)
      module_ok = true;
  CHECK(module_ok);
}

// A library's constructor runs inside dlopen, before the collector
// publishes the library to its walker: the walker finds it with glibc's
// _dl_find_object. Before, these samples kept only their leaf, under
// <partial call path> (PyTorch's import spends seconds in constructors).
TEST_CASE("cct-record: a library's constructor, run inside dlopen, is sampled with its whole stack") {
  TempDir dir;
  const std::string db = dir / "c.db";
  auto r = Run(Record(db, {}, {Prog("cct-test-dl-host"), Prog("libcct-test-plugin.so")}),
               {{"CCT_TEST_PLUGIN_INIT_MS", "200"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const cct::Tree t = TreeOf(db, Runs(db)[0].id);
  const double init = InclusiveOf(t, "cputime", "plugin_init");
  // plugin_init's time inside main's calling context (main -> dlopen -> the
  // loader -> the constructor), none of it partial.
  double under_main = 0;
  const cct::MetricId m = t.metrics().Find("cputime");
  std::vector<char> in_main(t.size(), 0), in_init(t.size(), 0);  // parents come before their children
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    in_main[n] = in_main[t.parent(n)] || t.name(n) == "main";
    in_init[n] = in_init[t.parent(n)] || t.name(n) == "plugin_init";
    if (in_main[n] && in_init[n]) under_main += t.Value(n, m);
  }
  INFO("plugin_init " << init << " ns, under main " << under_main);
  CHECK(init == doctest::Approx(200e6).epsilon(0.2));
  CHECK(under_main >= 0.95 * init);
}

TEST_CASE("cct-record: a bare name the program dlopens is found through the program's own RUNPATH ($ORIGIN)") {
  // The loader searches the calling object's DT_RUNPATH for a bare name;
  // through the collector's dlopen wrapper the caller was the collector, and
  // a plugin next to the program (PyTorch's and cuDNN's layout) was not found.
  TempDir dir;
  std::filesystem::create_directories(dir / "bin/plugins");
  std::filesystem::copy_file(Prog("cct-test-dl-host-runpath"), dir / "bin/host");
  // A name found nowhere else (the tests run with the build directory,
  // which holds libcct-test-plugin.so, in LD_LIBRARY_PATH).
  std::filesystem::copy_file(Prog("libcct-test-plugin.so"), dir / "bin/plugins/libcct-test-origin.so");
  auto dyn = Run({"/usr/bin/readelf", "-d", dir / "bin/host"});
  REQUIRE(dyn.out.find("(RUNPATH)") != std::string::npos);
  REQUIRE(dyn.out.find("$ORIGIN/plugins") != std::string::npos);
  // Bare, the program finds its plugin (the layout works).
  auto bare = Run({dir / "bin/host", "libcct-test-origin.so"});
  INFO(bare.err);
  REQUIRE(bare.exit_code == 0);
  const std::string db = dir / "o.db";
  auto r = Run(Record(db, {}, {dir / "bin/host", "libcct-test-origin.so"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const cct::Tree t = TreeOf(db, Runs(db)[0].id);
  CHECK(InclusiveOf(t, "cputime", "plugin_work") == doctest::Approx(300e6).epsilon(0.15));
  // A name the program cannot find bare is not found recorded either.
  auto missing = Run(Record(dir / "m.db", {}, {dir / "bin/host", "libcct-test-absent.so"}));
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("libcct-test-absent.so") != std::string::npos);
}

double WallOf(const std::string& out) {
  std::istringstream in(out);
  std::string tag;
  double v = -1;
  while (in >> tag)
    if (tag == "WALL") in >> v;
  return v;
}

TEST_CASE("cct-record: 300 dlopen/call/dlclose cycles: every name resolved, plugin time from the file, dlclose cheap") {
  // Issue 15: each dlclose used to symbolize every sampled address (and
  // re-read the libraries' DWARF) on the program's thread: ~50 ms a call,
  // and samples taken meanwhile became "<unloaded code 0x…>", main's too.
  TempDir dir;
  const std::string db = dir / "l.db";
  const std::vector<std::string> prog{Prog("cct-test-dl-loop"), Prog("libcct-test-plugin.so"), "300", "1000", "200"};
  auto bare = Run(prog);
  REQUIRE(bare.exit_code == 0);
  auto r = Run(Record(db, {}, prog));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const double bare_s = WallOf(bare.out), recorded_s = WallOf(r.out);
  INFO("bare " << bare_s << " s, recorded " << recorded_s << " s");
  REQUIRE(bare_s > 0);
  // Generous: catches the 30x regression without being at the mercy of load.
  CHECK(recorded_s < 3 * bare_s + 0.3);
  const cct::Tree t = TreeOf(db, Runs(db)[0].id);
  CHECK_FALSE(HasFrame(t, [](std::string_view s) { return s.find("unloaded code") != std::string_view::npos; }));
  CHECK_FALSE(HasFrame(t, [](std::string_view s) { return s.find("unloaded modules") != std::string_view::npos; }));
  const cct::MetricId m = t.metrics().Find("cputime");
  double total = 0;
  for (cct::NodeId n = 1; n < t.size(); ++n) total += t.Value(n, m);
  const double main_ns = InclusiveOf(t, "cputime", "main");
  const double step = InclusiveOf(t, "cputime", "plugin_step");
  const double host = InclusiveOf(t, "cputime", "host_work");
  INFO("total " << total << " main " << main_ns << " plugin_step " << step << " host_work " << host);
  CHECK(step == doctest::Approx(300e6).epsilon(0.2));
  CHECK(host == doctest::Approx(200e6).epsilon(0.15));
  // The rest: samples inside dlclose (leaf only: no walk while modules are
  // unmapped). Samples inside dlopen are whole since the handler walks with
  // its own CFI walker there (before, they too were leaf only: ~92 %).
  CHECK(main_ns >= 0.95 * total);
  const auto diag = Runs(db)[0].diagnostics;
  CHECK(diag.at("walker_samples") > 0.9 * diag.at("samples"));
  bool module_ok = false;
  for (cct::NodeId n = 1; n < t.size(); ++n)
    if (t.name(n) == "plugin_step" && t.str(t.frame(n).module).find("libcct-test-plugin.so") != std::string::npos)
      module_ok = true;
  CHECK(module_ok);
}

TEST_CASE("cct-record: exit statuses and data kept for segv, abort, _exit(7), return") {
  struct Case {
    std::string mode;
    store::RunState state;
    std::optional<int> exit_code, signal;
  };
  const std::vector<Case> cases = {{"segv", store::RunState::kCrashed, std::nullopt, SIGSEGV},
                                   {"abort", store::RunState::kCrashed, std::nullopt, SIGABRT},
                                   {"exit7", store::RunState::kComplete, 7, std::nullopt},
                                   {"return3", store::RunState::kComplete, 3, std::nullopt}};
  for (const Case& c : cases) {
    CAPTURE(c.mode);
    TempDir dir;
    const std::string db = dir / "l.db";
    // No core files from the crashing cases.
    auto bare = Run({"/bin/sh", "-c", "ulimit -c 0; exec \"$0\" \"$1\"", Prog("cct-test-lifecycle"), c.mode});
    auto rec = Run({"/bin/sh", "-c", "ulimit -c 0; exec \"$@\"", "sh", Tool("cct-record"), "-o", db, "--",
                    Prog("cct-test-lifecycle"), c.mode});
    INFO(rec.err);
    CHECK(StatusOf(rec) == StatusOf(bare));
    const auto runs = Runs(db);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].state == c.state);
    CHECK(runs[0].exit_code == c.exit_code);
    CHECK(runs[0].term_signal == c.signal);
    const cct::Tree t = TreeOf(db, runs[0].id);
    CHECK(InclusiveOf(t, "cputime", "burn_before_end") == doctest::Approx(400e6).epsilon(0.10));
    // A fault the kernel raised is located: the main thread wrote through
    // a null pointer in main, at the source line that does it (found in the
    // program's source here). abort() raises its signal itself: no site.
    const store::RunMeta& m = runs[0];
    if (c.mode == "segv") {
      int line = 0;
      {
        std::ifstream src(testutil::SourceDir() + "/tests/collector/programs/lifecycle.cc");
        std::string text;
        for (int n = 1; std::getline(src, text); ++n)
          if (text.find("*p = 1;") != std::string::npos) line = n;
      }
      REQUIRE(line > 0);
      REQUIRE(m.sampling->contains("crash_site"));
      CHECK(m.sampling["crash_site"].get<std::string>() ==
            "main in cct-test-lifecycle at lifecycle.cc:" + std::to_string(line));
      CHECK(m.diagnostics.at("fatal_address") == 0);
      CHECK(m.diagnostics.at("fatal_pc") != 0);
      CHECK(m.diagnostics.at("fatal_tid") == m.pid);
      CHECK(rec.err.find("killed by signal 11 in main in cct-test-lifecycle at lifecycle.cc:") != std::string::npos);
    } else {
      CHECK_FALSE(m.sampling->contains("crash_site"));
      CHECK(m.diagnostics.count("fatal_pc") == 0);
    }
  }
}

// The fatal-signal handler waits for the checkpoint thread's final write.
// With the wall clock the sampling timer keeps ticking while it waits, and a
// tick used to cut the wait short: the process died before the write and,
// with no checkpoint taken, the run kept nothing (6 of 15 runs lost on this
// VM before the fix). Several runs each, since one tick is a matter of timing.
TEST_CASE("cct-record: a crash's final write is waited for while sampling ticks arrive") {
  for (const std::string mode : {"abort", "segv"}) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      CAPTURE(mode);
      CAPTURE(attempt);
      TempDir dir;
      const std::string db = dir / "w.db";
      auto rec = Run({"/bin/sh", "-c", "ulimit -c 0; exec \"$@\"", "sh", Tool("cct-record"), "--clock", "wall",
                      "--checkpoint", "0", "-o", db, "--", Prog("cct-test-lifecycle"), mode});
      INFO(rec.err);
      const auto runs = Runs(db);
      REQUIRE(runs.size() == 1);
      CHECK(runs[0].state == store::RunState::kCrashed);
      CHECK(runs[0].diagnostics.count("final_flush") == 1);
      // burn_before_end burns 400 ms of CPU; its wall time is at least that.
      const cct::Tree t = TreeOf(db, runs[0].id);
      CHECK(InclusiveOf(t, "realtime", "burn_before_end") >= 0.9 * 400e6);
    }
  }
}

// A thread faults; the collector's handler holds it while the run is
// written, and meanwhile the main thread calls exit() or execs. That exit
// used to end the process in the middle of the write: the run kept nothing
// (a start write with no thread) and the program exited 0, where without
// the collector it dies of the fault before exit() is reached (6 of 6 runs
// with the exit 0.5 to 2 ms after the fault on this VM); the exec replaced
// it the same way, /bin/true's run in its place. Now the exiting or
// exec'ing thread waits for the fault to end the process.
TEST_CASE("cct-record: a fault on one thread while another exits or execs: the run is kept, the process dies of it") {
  for (const auto& [mode, delay_us] : std::vector<std::pair<std::string, int>>{
           {"segv-in-exit", 500}, {"segv-in-exit", 2000}, {"segv-in-exec", 500}, {"segv-in-exec", 2000}}) {
    CAPTURE(mode);
    CAPTURE(delay_us);
    TempDir dir;
    const std::string db = dir / "f.db";
    auto rec = Run({"/bin/sh", "-c", "ulimit -c 0; exec \"$@\"", "sh", Tool("cct-record"), "-o", db, "--",
                    Prog("cct-test-lifecycle"), mode, std::to_string(delay_us)});
    INFO(rec.err);
    CHECK(StatusOf(rec) == 128 + SIGSEGV);
    const auto runs = Runs(db);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].state == store::RunState::kCrashed);
    CHECK(runs[0].term_signal == SIGSEGV);
    CHECK(runs[0].exit_code == std::nullopt);
    // The faulting thread burned 400 ms of CPU before it faulted.
    const cct::Tree t = TreeOf(db, runs[0].id);
    CHECK(InclusiveOf(t, "cputime", "burn_before_end") == doctest::Approx(400e6).epsilon(0.10));
    REQUIRE(runs[0].sampling->contains("crash_site"));
    CHECK(runs[0].sampling["crash_site"].get<std::string>().starts_with("(anonymous namespace)::BurnThenFault"));
  }
}

// A termination signal that lands while the program's thread stops the
// sampler in _exit (holding the thread registry's lock, before the write's
// own mutex) was handed to the checkpoint thread, which waited for that lock
// until the handler's 5 s deadline; the process then died without its run
// (a multiprocessing pool's workers, terminated as they exit, lost theirs a
// run in four on a loaded machine). Delays swept across the stop, with 300
// threads to make it last.
TEST_CASE("cct-record: SIGTERM landing in _exit's final stop neither stalls the exit nor loses the run") {
  for (int delay_us = 0; delay_us <= 2000; delay_us += 250) {
    CAPTURE(delay_us);
    TempDir dir;
    const std::string db = dir / "t.db";
    const auto t0 = std::chrono::steady_clock::now();
    auto rec = Run({Tool("cct-record"), "--checkpoint", "0", "-o", db, "--", Prog("cct-test-lifecycle"), "term-in-exit",
                    std::to_string(delay_us), "300"});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(rec.err);
    CHECK(seconds < 3.0);  // the stall was the handler's 5 s deadline
    const auto runs = Runs(db);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].state != store::RunState::kRecording);
    CHECK(runs[0].diagnostics.count("final_flush") == 1);
  }
}

// The collector links its own unwinder; an unwind the process's libgcc_s
// runs through one of its frames with a cleanup (an interposed waiting
// call, dl_iterate_phdr's guard) had libstdc++'s personality use that copy,
// which aborted the program: every pthread_cancel of a thread waiting in
// poll or sleep, a C++ exception out of a dl_iterate_phdr callback.
TEST_CASE("cct-record: thread cancellation in interposed waits and exceptions through interposed calls work as without it") {
  for (const std::string clock : {"cpu", "wall"}) {
    CAPTURE(clock);
    TempDir dir;
    const std::string db = dir / "u.db";
    auto rec = Run({Tool("cct-record"), "--clock", clock, "-o", db, "--", Prog("cct-test-unwind-through"), "cancel"});
    INFO(rec.err);
    CHECK(rec.exit_code == 0);
    for (const char* call :
         {"usleep", "nanosleep", "poll", "select", "read", "sleep", "epoll_wait", "sigsuspend", "pthread_exit"})
      CHECK(rec.out.find(std::string(call) + " ok\n") != std::string::npos);
    const auto runs = Runs(db);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].state == store::RunState::kComplete);
  }
  TempDir dir;
  const std::string db = dir / "t.db";
  auto rec = Run({Tool("cct-record"), "-o", db, "--", Prog("cct-test-unwind-through"), "throw"});
  INFO(rec.err);
  CHECK(rec.exit_code == 0);
  CHECK(rec.out == "caught\n");
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].state == store::RunState::kComplete);
}

namespace {
// Starts cct-record on `program` in the background; returns its pid.
pid_t Spawn(const std::vector<std::string>& argv) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

pid_t ChildOf(pid_t parent) {
  for (int tries = 0; tries < 100; ++tries) {
    std::ifstream in("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
    pid_t child = 0;
    if (in >> child && child > 0) return child;
    usleep(20000);
  }
  return 0;
}

// CPU time the process's main thread has used so far (user + system), from
// /proc (the collector's checkpoint thread is not counted; its start-up work
// in the main thread is, hence the tolerances below).
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Waits until the process's main thread has used `seconds` of CPU time (a
// loaded machine gives it less than wall time), at most 60 s.
double WaitForCpu(pid_t pid, double seconds) {
  double cpu = 0;
  for (int i = 0; i < 3000 && (cpu = CpuSeconds(pid)) < seconds; ++i) usleep(20000);
  return cpu;
}

int WaitStatus(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
}  // namespace

TEST_CASE("cct-record: a grandchild SIGKILLed 0.3 s into its run, before any checkpoint, still leaves its run") {
  // The run's first write is the checkpoint thread's, kStartWriteDelayNs
  // (50 ms) after the start; a process killed later than that but before
  // its first checkpoint (30 s here) leaves that run. cct-record stores a
  // run itself only for its own child (the shell), so the grandchild's run
  // exists only if its collector wrote it.
  TempDir dir;
  const std::string db = dir / "g.db";
  const pid_t rec = Spawn(Record(db, {"--checkpoint", "30"},
                                 {"/bin/sh", "-c", Prog("cct-test-lifecycle") + " spin & wait; exit 0"}));
  const pid_t shell = ChildOf(rec);
  REQUIRE(shell > 0);
  const pid_t prog = ChildOf(shell);
  REQUIRE(prog > 0);
  WaitForCpu(prog, 0.3);
  kill(prog, SIGKILL);
  CHECK(WaitStatus(rec) == 0);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 2);
  const store::RunMeta& spun = runs[0].pid == prog ? runs[0] : runs[1];
  REQUIRE(spun.pid == prog);
  CHECK(store::EffectiveState(spun) == store::RunState::kCrashed);
  REQUIRE(spun.command.size() == 2);
  CHECK(spun.command[1] == "spin");
  CHECK(spun.executable.ends_with("cct-test-lifecycle"));
  CHECK(spun.diagnostics.count("no_profile") == 0);
}

TEST_CASE("cct-record: SIGKILL after 1.5 s of CPU keeps the data up to the last 0.5 s checkpoint; run shows crashed") {
  TempDir dir;
  const std::string db = dir / "k.db";
  const pid_t rec = Spawn(Record(db, {"--checkpoint", "0.5"}, {Prog("cct-test-lifecycle"), "spin"}));
  const pid_t prog = ChildOf(rec);
  REQUIRE(prog > 0);
  WaitForCpu(prog, 1.5);
  const double cpu_at_kill = CpuSeconds(prog);
  kill(prog, SIGKILL);
  CHECK(WaitStatus(rec) == 128 + SIGKILL);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].state == store::RunState::kCrashed);
  CHECK(runs[0].term_signal == SIGKILL);
  const cct::Tree t = TreeOf(db, runs[0].id);
  // 0.4 s in burn_before_end, then spinning until the kill; everything up
  // to the last checkpoint (at most 0.5 s of wall time, so at most 0.5 s of
  // CPU time, before the kill) was written. /proc's clock ticks add 0.02 s.
  CHECK(InclusiveOf(t, "cputime", "burn_before_end") == doctest::Approx(400e6).epsilon(0.10));
  const double spun = InclusiveOf(t, "cputime", "spin_forever") / 1e9;
  INFO("CPU at kill " << cpu_at_kill << " s, spin recorded " << spun << " s");
  CHECK(cpu_at_kill >= 1.5);
  CHECK(spun >= cpu_at_kill - 0.4 - 0.5 - 0.08);
  CHECK(spun <= cpu_at_kill - 0.4 + 0.05);
}

TEST_CASE("cct-record: a recorder killed outright loses nothing; the next recording into the file stores the run") {
  TempDir dir;
  const std::string db = dir / "r.db";
  // --checkpoint 0: no gathering pass while the program runs (on a loaded
  // machine 0.8 s of CPU can take more than the 1 s between passes, and a
  // checkpoint would be stored before the kill).
  const pid_t rec = Spawn(Record(db, {"--checkpoint", "0"}, {Prog("cct-test-lifecycle"), "spin"}));
  const pid_t prog = ChildOf(rec);
  REQUIRE(prog > 0);
  WaitForCpu(prog, 0.8);
  kill(rec, SIGKILL);  // no forwarding, no gathering: the program gets SIGTERM (PDEATHSIG)
  CHECK(WaitStatus(rec) == 128 + SIGKILL);
  for (int i = 0; i < 500 && kill(prog, 0) == 0; ++i) usleep(10000);
  REQUIRE(kill(prog, 0) != 0);
  CHECK(Runs(db).empty());  // written to the spool, not yet stored
  CHECK(std::filesystem::exists(db + ".spool"));
  auto r = Run(Record(db, {"--name", "next"}, {"/bin/true"}));
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("gathered 1 run") != std::string::npos);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].name == "cct-test-lifecycle");
  CHECK(runs[0].state == store::RunState::kCrashed);
  CHECK(runs[0].term_signal == SIGTERM);
  CHECK(InclusiveOf(TreeOf(db, runs[0].id), "cputime", "spin_forever") > 0.3e9);
  CHECK(runs[1].name == "next");
  CHECK_FALSE(std::filesystem::exists(db + ".spool"));
}

TEST_CASE("cct-record: short processes send their runs to the inbox; a recorder killed after taking them leaves them for the next") {
  TempDir dir;
  const std::string db = dir / "inbox.db";
  // --checkpoint 30: no pass stores anything before the kill; what the
  // five processes sent is only in the recorder's memory and its journal.
  const pid_t rec = Spawn(Record(db, {"--checkpoint", "30"},
                                 {"/bin/sh", "-c", "for i in 1 2 3 4 5; do /bin/true; done; exec sleep 30"}));
  const pid_t prog = ChildOf(rec);
  REQUIRE(prog > 0);
  // The journal's frames, decoded: which runs the inbox has taken.
  auto journaled = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(db + ".spool")) {
      std::ifstream in(e.path() / "inbox.journal", std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (std::string_view p : store::SplitInboxFrames(bytes).payloads)
        if (auto run = store::DecodeRunFile(p); run.ok()) names.push_back(run->meta.name);
    }
    return names;
  };
  auto trues = [&] {
    const std::vector<std::string> names = journaled();
    return std::count(names.begin(), names.end(), "true");
  };
  for (int i = 0; i < 1000 && trues() < 5; ++i) usleep(10000);
  REQUIRE(trues() == 5);
  kill(rec, SIGKILL);
  CHECK(WaitStatus(rec) == 128 + SIGKILL);
  for (int i = 0; i < 500 && kill(prog, 0) == 0; ++i) usleep(10000);
  REQUIRE(kill(prog, 0) != 0);
  // No run file was made for them: the spool's files are other runs'.
  for (const auto& e : std::filesystem::recursive_directory_iterator(db + ".spool")) {
    if (e.path().extension() != ".run") continue;
    auto run = store::ReadRunFile(e.path().string());
    REQUIRE(run.ok());
    CHECK(run->meta.name != "true");
  }
  CHECK(Runs(db).empty());

  auto r = Run(Record(db, {"--name", "next"}, {"/bin/true"}));
  CHECK(r.exit_code == 0);
  const auto runs = Runs(db);
  std::map<std::string, std::vector<store::RunMeta>> by_name;
  for (const auto& m : runs) by_name[m.name].push_back(m);
  REQUIRE(by_name["true"].size() == 5);
  REQUIRE(by_name["sh"].size() == 1);
  for (const auto& m : by_name["true"]) {
    CHECK(m.state == store::RunState::kComplete);
    CHECK(m.exit_code == 0);
    CHECK(m.parent_run == by_name["sh"][0].id);
  }
  REQUIRE(by_name["sleep"].size() == 1);
  CHECK(by_name["sleep"][0].term_signal == SIGTERM);  // PDEATHSIG, its own final write
  CHECK(by_name["next"].size() == 1);
  CHECK_FALSE(std::filesystem::exists(db + ".spool"));
}

TEST_CASE("cct-record: SIGTERM sent to the recorder stops the program; both keep the status; data complete") {
  TempDir dir;
  const std::string db = dir / "t.db";
  const pid_t rec = Spawn(Record(db, {}, {Prog("cct-test-lifecycle"), "spin"}));
  const pid_t prog = ChildOf(rec);
  REQUIRE(prog > 0);
  WaitForCpu(prog, 1.0);
  const double cpu_at_term = CpuSeconds(prog);
  kill(rec, SIGTERM);
  CHECK(WaitStatus(rec) == 128 + SIGTERM);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].state == store::RunState::kCrashed);
  CHECK(runs[0].term_signal == SIGTERM);
  CHECK(runs[0].diagnostics.at("final_flush") == 1);
  const cct::Tree t = TreeOf(db, runs[0].id);
  // The final write happened at the signal: everything is there.
  const double spun = InclusiveOf(t, "cputime", "spin_forever") / 1e9;
  INFO("CPU at SIGTERM " << cpu_at_term << " s, spin recorded " << spun << " s");
  CHECK(spun >= (cpu_at_term - 0.4) * 0.9 - 0.05);
}

TEST_CASE("cct-record: fork and exec children are their own runs, linked to the parent; --no-follow") {
  TempDir dir;
  const std::string db = dir / "f.db";
  auto r = Run(Record(db, {"--tag", "case=fork"}, {Prog("cct-test-forker")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 3);
  for (const auto& m : runs) CHECK(m.tags.at("case") == "fork");
  auto by_work = RunsByWork(db, {"parent_work", "child_work", "image_work"}, 0.15e9);
  REQUIRE(by_work.size() == 3);
  const store::RunMeta& parent = by_work["parent_work"];
  CHECK(parent.parent_run == 0);
  CHECK(by_work["child_work"].parent_run == parent.id);
  CHECK(by_work["child_work"].pid != parent.pid);
  CHECK(by_work["image_work"].parent_run == parent.id);
  CHECK(by_work["image_work"].pid == parent.pid);  // exec keeps the pid
  CHECK(by_work["image_work"].state == store::RunState::kComplete);
  // The child's metadata is filled at its first write, but its clock
  // started at the fork: it ran child_work (0.2 s of CPU) and exited, and
  // began after its parent and before the parent's image.
  const store::RunMeta& child = by_work["child_work"];
  CHECK(child.duration_ns >= 190'000'000);
  CHECK(child.duration_ns < 2'000'000'000);
  CHECK(child.start_time_ns >= parent.start_time_ns);
  CHECK(child.start_time_ns + child.duration_ns <= by_work["image_work"].start_time_ns + 50'000'000);
  CHECK(child.cwd == parent.cwd);
  CHECK(child.command == parent.command);

  const std::string db2 = dir / "nf.db";
  auto r2 = Run(Record(db2, {"--no-follow"}, {Prog("cct-test-forker")}));
  REQUIRE(r2.exit_code == 0);
  const auto only = Runs(db2);
  REQUIRE(only.size() == 1);
  CHECK(InclusiveOf(TreeOf(db2, only[0].id), "cputime", "parent_work") > 0.15e9);
}

TEST_CASE("cct-record: the machine facts are measured once and handed down: the exec'd image has the same user, CPU and OS") {
  // Expected values from the system itself, read here independently.
  const passwd* pw = getpwuid(getuid());
  REQUIRE(pw);
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof host - 1) == 0);
  std::string first_model;
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line) && first_model.empty())
      if (line.rfind("model name", 0) == 0) first_model = line.substr(line.find(':') + 2);
  }
  std::string pretty;
  {
    std::ifstream in("/etc/os-release");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("PRETTY_NAME=", 0) == 0) pretty = line.substr(12);
    if (pretty.size() >= 2 && pretty.front() == '"') pretty = pretty.substr(1, pretty.size() - 2);
  }
  TempDir dir;
  const std::string db = dir / "m.db";
  auto r = Run(Record(db, {}, {"/bin/sh", "-c", "printf '%s\\n' \"$CCT_RECORD_MACHINE\"; exec /bin/true"}));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> fields;
  std::string line = r.out.substr(0, r.out.find('\n'));
  for (size_t i = 0;;) {
    const size_t tab = line.find('\t', i);
    fields.push_back(line.substr(i, tab == std::string::npos ? std::string::npos : tab - i));
    if (tab == std::string::npos) break;
    i = tab + 1;
  }
  REQUIRE(fields.size() == 5);
  CHECK(fields[0] == std::to_string(getuid()));
  CHECK(fields[1] == host);
  CHECK(fields[2] == pw->pw_name);
  CHECK(fields[3].rfind(first_model, 0) == 0);
  CHECK(fields[4] == pretty);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 2);  // sh, then the image it exec'd
  for (const auto& m : runs) {
    CHECK(m.user == fields[2]);
    CHECK(m.cpu_model == fields[3]);
    CHECK(m.os == fields[4]);
  }
}

TEST_CASE("cct-record: a vfork child that execs is the exec'd image's run, linked to the parent; one that _exits leaves none") {
  TempDir dir;
  const std::string db = dir / "v.db";
  auto r = Run(Record(db, {}, {Prog("cct-test-forker"), "vfork"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(Runs(db).size() == 2);
  auto by_work = RunsByWork(db, {"parent_work", "image_work"}, 0.15e9);
  REQUIRE(by_work.size() == 2);
  CHECK(by_work["parent_work"].parent_run == 0);
  CHECK(by_work["image_work"].parent_run == by_work["parent_work"].id);
  CHECK(by_work["image_work"].pid != by_work["parent_work"].pid);
  CHECK(by_work["image_work"].state == store::RunState::kComplete);
}

TEST_CASE("cct-record: libunwind is loaded only when the walker gives up on a sample") {
  TempDir dir;
  auto has_libunwind = [](const store::RunMeta& m) {
    for (const auto& mod : m.modules)
      if (mod.path.find("libunwind.so") != std::string::npos) return true;
    return false;
  };
  // Plain compiled code: every sample is the walker's, libunwind never loads.
  const std::string plain = dir / "plain.db";
  auto r = Run(Record(plain, {}, {Prog("cct-test-forker"), "image"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto runs = Runs(plain);
  REQUIRE(runs.size() == 1);
  CHECK_FALSE(has_libunwind(runs[0]));
  CHECK(runs[0].diagnostics.at("walker_samples") > 100);
  CHECK(runs[0].diagnostics.at("libunwind_samples") == 0);
  // 0.4 s in a function without CFI: the walker's first failure asks for
  // libunwind, the checkpoint thread loads it, and it takes those samples.
  const std::string nocfi = dir / "nocfi.db";
  r = Run(Record(nocfi, {}, {Prog("cct-test-no-cfi")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  runs = Runs(nocfi);
  REQUIRE(runs.size() == 1);
  CHECK(has_libunwind(runs[0]));
  CHECK(runs[0].diagnostics.at("libunwind_samples") > 100);
}

TEST_CASE("cct-record: vfork stays vfork; its child's own environment, and its death by a signal, leave the parent's run whole") {
  TempDir dir;
  const std::string db = dir / "ve.db";
  auto r = Run(Record(db, {}, {Prog("cct-test-forker"), "vfork-edges"}));
  INFO(r.err);
  // The program checks that its child's write reached it (shared memory) and
  // that the second child died of SIGTERM, not of our handler's doing.
  REQUIRE(r.exit_code == 0);
  REQUIRE(Runs(db).size() == 2);
  // parent_work before the vforks, child_work after them: both in the
  // parent's run, which stays complete.
  auto by_work = RunsByWork(db, {"parent_work", "child_work", "image_work"}, 0.15e9);
  REQUIRE(by_work.size() == 3);
  CHECK(by_work["parent_work"].id == by_work["child_work"].id);
  CHECK(by_work["parent_work"].state == store::RunState::kComplete);
  // The image was exec'd with an environment without LD_PRELOAD or the
  // recording's variables, and is recorded all the same, linked to the parent.
  CHECK(by_work["image_work"].parent_run == by_work["parent_work"].id);
  CHECK(by_work["image_work"].state == store::RunState::kComplete);

  // Where the parent resumes from vfork, glibc's __vfork holds its return
  // address in a register and occupies no stack: the walker steps out of it
  // (it took 57 % of such a loop's samples as partial before), and never
  // needs libunwind.
  const std::string loop = dir / "vl.db";
  r = Run(Record(loop, {"--no-follow", "--freq", "10000"}, {Prog("cct-test-forker"), "vfork-loop", "1000"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto loop_runs = Runs(loop);
  REQUIRE(loop_runs.size() == 1);
  const cct::Tree t = TreeOf(loop, loop_runs[0].id);
  const cct::MetricId cpu = t.metrics().Find("cputime");
  double whole = 0, partial = 0;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    if (t.name(n) != "__vfork") continue;
    bool under_partial = false;
    for (cct::NodeId a = t.parent(n); a != 0; a = t.parent(a)) under_partial |= t.name(a) == cct::kPartialCallPathName;
    (under_partial ? partial : whole) += t.Value(n, cpu);
  }
  CHECK(whole > 0);
  CHECK(partial == 0);

  // Preloaded but not recording: vfork is still the real one.
  auto bare = Run({"/usr/bin/env", "LD_PRELOAD=" + testutil::BuildDir() + "/src/collector/libcct-collector.so",
                   Prog("cct-test-forker"), "vfork-edges"});
  INFO(bare.err);
  CHECK(bare.exit_code == 0);
}

TEST_CASE("cct-record: a launcher's helpers are a process tree; latest and NAME mean the program, NAME/all totals them") {
  TempDir dir;
  const std::string db = dir / "l.db";
  auto r = Run(Record(db, {"--name", "job"}, {Prog("cct-test-launcher")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 3);
  // Which run is which, by the work each process did (the workload's
  // construction), not by the order they were written.
  std::map<std::string, store::RunMeta> by_work;
  double sum = 0;
  for (const auto& m : runs) {
    const cct::Tree t = TreeOf(db, m.id);
    for (std::string w : {"main_work", "daemon_work", "grandchild_work"})
      if (InclusiveOf(t, "cputime", w) > 0.05e9) by_work[w] = m;
    sum += cct::NodeValues(t).Total(t.metrics().Find("cputime"));
    CHECK(m.name == "job");
  }
  REQUIRE(by_work.size() == 3);
  const store::RunMeta& program = by_work["main_work"];
  CHECK(program.parent_run == 0);
  CHECK(by_work["daemon_work"].parent_run == program.id);
  // The process tree: every helper names the invocation's root run.
  for (const auto& m : runs) {
    const nlohmann::json j = m.ToJson();
    if (m.id == program.id) CHECK(j.value("root_run", 0u) == 0);  // a root: 0
    else CHECK(j.value("root_run", 0u) == program.id);
  }
  // A helper's run is the newest, yet latest and NAME select the program.
  CHECK(runs.back().id != program.id);
  auto ids = [&](const std::string& sel) {
    auto q = Run({Tool("cct-query"), "-d", db, "runs", sel, "--format", "json"});
    INFO(sel << ": " << q.err);
    std::vector<uint32_t> out;
    if (q.exit_code != 0) return out;
    for (const auto& row : nlohmann::json::parse(q.out)) out.push_back(row.at("id").get<uint32_t>());
    return out;
  };
  CHECK(ids("latest") == std::vector<uint32_t>{program.id});
  CHECK(ids("job") == std::vector<uint32_t>{program.id});
  std::vector<uint32_t> all;
  for (const auto& m : runs) all.push_back(m.id);
  CHECK(ids("job/all") == all);
  CHECK(ids("latest/all") == all);
  CHECK(ids(std::to_string(by_work["grandchild_work"].id) + "/all") == all);
  auto top = Run({Tool("cct-query"), "-d", db, "top", "job", "-n", "3"});
  CHECK(top.exit_code == 0);
  CHECK(top.out.find("main_work") != std::string::npos);
  CHECK(top.out.find("daemon_work") == std::string::npos);
  // A report over NAME/all totals the processes: show's cputime total is the
  // sum of the three runs' totals (read from the store here).
  auto show = Run({Tool("cct-query"), "-d", db, "show", "job/all", "--format", "json"});
  INFO(show.err);
  REQUIRE(show.exit_code == 0);
  const auto doc = nlohmann::json::parse(show.out);
  CHECK(doc.at("runs").size() == 3);
  CHECK(doc.at("totals").at("cputime").get<double>() * 1e9 == doctest::Approx(sum).epsilon(1e-6));
  CHECK(doc.at("label").get<std::string>().find("total of 3 processes") != std::string::npos);
  // runs shows the tree: the helpers indented under the program.
  auto tree = Run({Tool("cct-query"), "-d", db, "runs", "--ascii"});
  CHECK(tree.out.find("`- job") != std::string::npos);
  // A bad selector: one line, exit 2.
  auto bad = Run({Tool("cct-query"), "-d", db, "runs", "tag:a=b/all"});
  CHECK(bad.exit_code == 2);
  CHECK(testutil::LineCount(bad.err) == 1);
}

namespace {

// `readelf` (binutils) as the second opinion on what the collector read.
std::string ReadelfBuildId(const std::string& path) {
  auto r = Run({"/usr/bin/env", "readelf", "-n", path});
  const size_t at = r.out.find("Build ID: ");
  if (at == std::string::npos) return "";
  return r.out.substr(at + 10, r.out.find('\n', at) - at - 10);
}

std::set<std::string> ReadelfComment(const std::string& path) {
  auto r = Run({"/usr/bin/env", "readelf", "-p", ".comment", path});
  std::set<std::string> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    const size_t close = line.find("]  ");
    if (line.starts_with("  [") && close != std::string::npos) out.insert(line.substr(close + 3));
  }
  return out;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

TEST_CASE("cct-record: metadata a paper needs (user, executable, build ids, compiler, modules, system, CPU time, rank)") {
  TempDir dir;
  const std::string db = dir / "paper.db";
  // A Spack-like and a Nix-like path are kept; a token-shaped value is not.
  const std::string spack = "/opt/spack/linux-debian12-x86_64/gcc-12.2.0/openmpi-4.1.6-"
                            "ayrvxmtbdfnvkqhmjyzfbgh2tkd4ln7q/bin";
  const std::string nix = "/nix/store/0c7c4a6iyn6ha7vvzp12s1jyqnsf1a8y-python3-3.11.4/lib/python3.11";
  const std::map<std::string, std::string> env = {{"PATH", spack + ":/usr/bin:/bin"},
                                                  {"PYTHONPATH", nix},
                                                  {"CUDA_CACHE_TOKENISH", "AKIAIOSFODNN7EXAMPLE"},
                                                  {"SLURM_PROCID", "3"},
                                                  {"SLURM_NTASKS", "8"},
                                                  {"SLURM_LOCALID", "1"}};
  const std::string prog = Prog("cct-test-cpu-split");
  auto r = Run(Record(db, {}, {prog}), env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  const store::RunMeta& m = runs[0];
  const nlohmann::json j = m.ToJson();
  CHECK(m.env.count("PATH") == 1);
  CHECK(m.env.count("PYTHONPATH") == 1);
  CHECK(m.env.count("CUDA_CACHE_TOKENISH") == 0);

  CHECK(j.value("user", "") == Trimmed(Run({"/usr/bin/env", "id", "-un"}).out));
  REQUIRE(j.contains("executable"));
  CHECK(j["executable"].value("path", "") == std::filesystem::canonical(prog).string());
  const std::string build_id = ReadelfBuildId(prog);
  REQUIRE(build_id.size() >= 16);
  CHECK(j["executable"].value("build_id", "") == build_id);
  // Every distinct string of the .comment section, in the file's order.
  std::set<std::string> compilers;
  for (const auto& c : j["executable"].value("compiler", nlohmann::json::array())) compilers.insert(c.get<std::string>());
  CHECK(compilers == ReadelfComment(prog));
  CHECK_FALSE(compilers.empty());
  // Loaded modules with their build ids: libc among them, as readelf says.
  bool libc = false;
  for (const auto& mod : j.value("modules", nlohmann::json::array())) {
    const std::string path = mod.value("path", "");
    if (path.find("libc.so.6") == std::string::npos) continue;
    libc = true;
    CHECK(mod.value("build_id", "") == ReadelfBuildId(path));
  }
  CHECK(libc);
  REQUIRE(j.contains("system"));
  CHECK(j["system"].value("kernel", "").find(Trimmed(Run({"/usr/bin/env", "uname", "-r"}).out)) != std::string::npos);
  CHECK("glibc " + j["system"].value("glibc", "") == Trimmed(Run({"/usr/bin/env", "getconf", "GNU_LIBC_VERSION"}).out));
  CHECK_FALSE(j["system"].value("os", "").empty());
  // Process CPU time: at least the sampled CPU time (the checkpoint thread
  // adds its own), and not wildly more for this single-process program.
  const cct::Tree t = TreeOf(db, m.id);
  const double sampled = cct::NodeValues(t).Total(t.metrics().Find("cputime"));
  const double cpu = j.value("process_cpu_ns", 0.0);
  CHECK(cpu >= 0.9 * sampled);
  CHECK(cpu <= 1.5 * sampled + 0.2e9);
  // The launcher's rank variables, structured.
  REQUIRE(j.contains("launcher"));
  CHECK(j["launcher"].value("rank", -1) == 3);
  CHECK(j["launcher"].value("size", -1) == 8);
  CHECK(j["launcher"].value("local_rank", -1) == 1);
  CHECK(j["launcher"].value("source", "") == "SLURM_PROCID");
  // show prints them.
  auto show = Run({Tool("cct-query"), "-d", db, "show", "latest"});
  CHECK(show.out.find(build_id) != std::string::npos);
  CHECK(show.out.find("rank 3 of 8") != std::string::npos);
}

TEST_CASE("cct-record: 8 recorders writing into one database at once give 8 complete runs") {
  TempDir dir;
  const std::string db = dir / "c.db";
  std::vector<pid_t> pids;
  for (int i = 0; i < 8; ++i)
    pids.push_back(Spawn(Record(db, {"--name", "p" + std::to_string(i), "--checkpoint", "0.1"},
                                {Prog("cct-test-lifecycle"), "return3"})));
  for (pid_t p : pids) CHECK(WaitStatus(p) == 3);
  const auto runs = Runs(db);
  CHECK(runs.size() == 8);
  std::set<std::string> names;
  for (const auto& m : runs) {
    CHECK(m.state == store::RunState::kComplete);
    names.insert(m.name);
    CHECK(InclusiveOf(TreeOf(db, m.id), "cputime", "burn_before_end") == doctest::Approx(400e6).epsilon(0.15));
  }
  CHECK(names.size() == 8);
}

TEST_CASE("cct-record --clock wall: no stray EINTR; the program's own SIGALRM and SIGPROF timers keep working") {
  TempDir dir;
  const std::string db = dir / "w.db";
  auto r = Run(Record(db, {"--clock", "wall", "--freq", "1000"}, {Prog("cct-test-sleeper")}));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::istringstream in(r.out);
  std::map<std::string, long> v;
  std::string k;
  long x;
  while (in >> k >> x) v[k] = x;
  CHECK(v["EINTR"] == 0);
  CHECK(v["SIGALRM"] > 0);
  CHECK(v["SIGPROF"] > 0);
  CHECK(v["SLEPT_MS"] >= 500);
  const cct::Tree t = TreeOf(db, Runs(db)[0].id);
  // 25 blocking calls of 20 ms: the wall clock sees them.
  CHECK(InclusiveOf(t, "realtime", "sleepy_work") == doctest::Approx(double(v["SLEPT_MS"]) * 1e6).epsilon(0.15));
}

TEST_CASE("cct-record --clock wall: a program signal that arrives with a tick still ends pselect, ppoll, epoll_pwait and sigsuspend") {
  // The program holds every signal while a tick becomes pending, raises
  // SIGUSR1, then waits with an empty mask: both are delivered as the wait
  // starts. Bare, SIGUSR1 ends each of the 20 waits at once with EINTR; the
  // collector must not take that EINTR for its own tick and wait on (make -j
  // waiting for SIGCHLD hung so).
  TempDir dir;
  auto bare = Run({Prog("cct-test-signal-waits")});
  REQUIRE(bare.exit_code == 0);
  auto r = Run(Record(dir / "s.db", {"--clock", "wall", "--freq", "1000"}, {Prog("cct-test-signal-waits")}));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == bare.out);
  std::istringstream in(r.out);
  std::string call;
  int ended = 0, handled = 0, calls = 0;
  while (in >> call >> ended >> handled) {
    INFO(call);
    ++calls;
    CHECK(ended == 20);
    CHECK(handled == 20);
  }
  CHECK(calls == 4);
  // The ticks held over the waits were taken, not lost: the spins (60 ms
  // per call) are in the profile.
  const cct::Tree t = TreeOf(dir / "s.db", Runs(dir / "s.db")[0].id);
  CHECK(InclusiveOf(t, "realtime", "main") >= 0.2e9);
}

TEST_CASE("cct-record: the collector's libdw gets no debuginfod client in the profiled process") {
  // The kernel's list of a shell's mappings, printed after it burned CPU
  // through a few checkpoints (each symbolizes /bin/sh's samples, which have
  // no local debug file: libdw then went for its debuginfod client, libcurl
  // and all): the collector is there, libdw's network client is not. No
  // symbol cache, so the collector opens libdw (it is opened on first use).
  TempDir dir;
  auto r = Run(Record(dir / "m.db", {"--checkpoint", "0.2", "--symbol-cache", "off"},
                      {"/bin/sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; cat /proc/$$/maps"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("libcct-collector") != std::string::npos);
  CHECK(r.out.find("libdw") != std::string::npos);
  CHECK(r.out.find("libdebuginfod") == std::string::npos);
  CHECK(r.out.find("libcurl") == std::string::npos);
}

TEST_CASE("cct-record: a process whose modules are all in the symbol cache never maps libdw") {
  // The same shell twice with one symbol cache: the first run fills it (and
  // opens libdw to read the tables); in the second, every module is named
  // from the cache through its checkpoints, and the shell's own list of
  // mappings, printed at the end, has no libdw (nor the libraries it
  // brings).
  TempDir dir;
  const std::vector<std::string> shell{
      "/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; cat /proc/$$/maps"};
  auto first = Run(Record(dir / "a.db", {"--checkpoint", "0.2", "--symbol-cache", dir / "cache"}, shell));
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.find("libcct-collector") != std::string::npos);
  auto second = Run(Record(dir / "b.db", {"--checkpoint", "0.2", "--symbol-cache", dir / "cache"}, shell));
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  CHECK(second.out.find("libcct-collector") != std::string::npos);
  CHECK(second.out.find("libdw") == std::string::npos);
  CHECK(second.out.find("libelf") == std::string::npos);
  // It was sampled and named all the same.
  const auto runs = Runs(dir / "b.db");
  REQUIRE(runs.size() == 2);  // sh, and the cat it exec'd
  // libc's frames were named (from the cache: libc's symbols, not
  // "libc.so.6+0x…"): the shell's loop compares strings in libc.
  bool named = false;
  for (const auto& m : runs) {
    const cct::Tree t = TreeOf(dir / "b.db", m.id);
    for (cct::NodeId n = 1; n < t.size(); ++n)
      if (t.str(t.frame(n).module).find("libc.so") != std::string::npos &&
          t.name(n).find("+0x") == std::string_view::npos)
        named = true;
  }
  CHECK(named);
}

TEST_CASE("cct-record --clock wall: 0.3 s asleep in each interposed call shows under that call, not the collector") {
  TempDir dir;
  const std::string db = dir / "s.db";
  auto r = Run(Record(db, {"--clock", "wall"}, {Prog("cct-test-sleep-calls")}));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const cct::Tree t = TreeOf(db, Runs(db)[0].id);
  const cct::MetricId wall = t.metrics().Find("realtime");
  REQUIRE(wall != cct::kNoMetric);
  // The program sleeps 0.3 s in each call, from a function of its own
  // (in_CALL); the call itself is the node below that function.
  cct::NodeValues values(t);
  const std::vector<double>& inclusive = values.Inclusive(wall);
  for (const std::string call : {"usleep", "nanosleep", "clock_nanosleep", "poll", "select", "epoll_wait"}) {
    INFO(call);
    double under_call = 0;
    for (cct::NodeId n = 1; n < t.size(); ++n)
      if (t.name(n) == call && t.name(t.parent(n)) == "in_" + call) under_call += inclusive[n];
    CHECK(InclusiveOf(t, "realtime", "in_" + call) >= 0.28e9);
    CHECK(InclusiveOf(t, "realtime", "in_" + call) <= 0.5e9);
    CHECK(under_call >= 0.28e9);
  }
  CHECK(InclusiveOf(t, "realtime", "<cctdb collector>") < 0.02e9);
}

// Where the stacks of threads pthread_create started end (the return
// address in clone3 that marks them complete where libc has no symbols) is
// learned by the checkpoint thread unwinding itself — before its own first
// write, or when a process with other threads writes first, not at every
// process's start: a short process with only its main thread (the shell's,
// the compiler driver's in a build) never needs it (11 page faults each,
// docs/performance.md). Run diagnostic `thread_root`.
TEST_CASE("cct-record: the thread root is learned when threads need it, not by every short process") {
  TempDir dir;
  const std::string db = dir / "r.db";
  // 20 runs of /bin/true, each ending within ~1 ms of its start, long
  // before the checkpoint thread's start write (50 ms).
  auto r = Run(Record(db, {}, {"/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do /bin/true; done"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  int trues = 0, learned = 0;
  for (const auto& m : Runs(db))
    if (m.executable == "/usr/bin/true" || m.executable == "/bin/true") {
      ++trues;
      REQUIRE(m.diagnostics.count("thread_root"));
      learned += m.diagnostics.at("thread_root") != 0;
    }
  CHECK(trues == 20);
  CHECK(learned <= 5);  // a loaded machine may stretch a few past 50 ms
  // Eight short threads sampled at 10 kHz in a process that ends in a few
  // milliseconds: its final write asks for the root and gets it.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::string tdb = dir / ("t" + std::to_string(attempt) + ".db");
    auto t = Run(Record(tdb, {"--freq", "10000"}, {Prog("cct-test-short-threads"), "8"}));
    INFO(t.err);
    REQUIRE(t.exit_code == 0);
    const auto runs = Runs(tdb);
    REQUIRE(runs.size() == 1);
    const auto& d = runs[0].diagnostics;
    CAPTURE(d.at("sampled_threads"));
    CHECK(d.at("thread_root") == 1);
  }
}

TEST_CASE("cct-record: 1,000 threads of 0.5 ms: the unsampled share is reported; --account-short-threads puts it on the start routine") {
  TempDir dir;
  const std::string db = dir / "t.db";
  auto r = Run(Record(db, {}, {Prog("cct-test-short-threads")}));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  const auto& d = runs[0].diagnostics;
  REQUIRE(d.count("unsampled_ns"));
  REQUIRE(d.count("sampled_ns"));
  // Every worker burns 0.5 ms in short_work after it registers (by the
  // program's construction), so each worker that was never sampled left at
  // least that much unsampled.
  const int64_t never_sampled = 1001 - d.at("sampled_threads");
  CHECK(never_sampled > 500);
  CHECK(d.at("unsampled_ns") >= never_sampled * 500000);
  const double share =
      static_cast<double>(d.at("unsampled_ns")) / static_cast<double>(d.at("sampled_ns") + d.at("unsampled_ns"));
  CHECK(share > 0.3);
  // The summary says so, with the remedy.
  std::regex line("run 1 '[^']*' .*, ([0-9.]+)% unsampled\\)");
  std::smatch m;
  REQUIRE(std::regex_search(r.err, m, line));
  CHECK(std::stod(m[1]) == doctest::Approx(100 * share).epsilon(0.01));
  CHECK(r.err.find("--account-short-threads") != std::string::npos);
  const cct::Tree plain = TreeOf(db, runs[0].id);
  const double plain_work = InclusiveOf(plain, "cputime", "short_work");
  CHECK(plain_work < 0.5 * 1000 * 500000);

  const std::string db2 = dir / "t2.db";
  auto r2 = Run(Record(db2, {"--account-short-threads"}, {Prog("cct-test-short-threads")}));
  INFO(r2.out << r2.err);
  REQUIRE(r2.exit_code == 0);
  const auto runs2 = Runs(db2);
  const cct::Tree t = TreeOf(db2, runs2[0].id);
  const double work = InclusiveOf(t, "cputime", "short_work");
  // At least the 0.5 ms each of the 1,000 threads burned in it; at most what
  // the threads measured on their own clocks (which includes their start-up
  // before the collector saw them).
  const double measured = testutil::Measured(r2.out).at("thread_cpu_ns");
  CHECK(work >= 0.9 * 1000 * 500000);
  CHECK(work <= 1.05 * measured);
  CHECK(runs2[0].diagnostics.at("accounted_unsampled_ns") > 0);
  // The start routine's time sits on complete paths (under the thread-start
  // frames, like its samples), never under "<partial call path>".
  CHECK_FALSE(InclusiveOf(t, "cputime", [](std::string_view n) { return n == "<partial call path>"; }) > 0.01 * work);
  CHECK(r2.err.find("--account-short-threads adds") == std::string::npos);
}

TEST_CASE("cct-record: exit codes of its own errors and of programs that cannot run") {
  TempDir dir;
  const std::string db = dir / "e.db";
  CHECK(Run({Tool("cct-record"), "-o", db, "--", dir / "no-such-program"}).exit_code == 127);
  testutil::WriteFileOrDie(dir / "not-exec", "data");
  CHECK(Run({Tool("cct-record"), "-o", db, "--", dir / "not-exec"}).exit_code == 126);
  auto bad = Run({Tool("cct-record"), "--freq", "0", "--", "/bin/true"});
  CHECK(bad.exit_code == 125);
  CHECK(testutil::LineCount(bad.err) == 1);
  for (const std::string depth : {"0", "7", "65537", "abc", "12x", "99999999999999999999"}) {
    CAPTURE(depth);
    auto d = Run({Tool("cct-record"), "-o", db, "--max-depth", depth, "--", "/bin/true"});
    CHECK(d.exit_code == 125);
    CHECK(testutil::LineCount(d.err) == 1);
    CHECK(d.err.find("--max-depth") != std::string::npos);
  }
  for (const std::vector<std::string>& pc : std::vector<std::vector<std::string>>{
           {"--gpu-pc-sampling", "--gpu-pc-period", "4"},
           {"--gpu-pc-sampling", "--gpu-pc-period", "32"},
           {"--gpu-pc-sampling", "--gpu-pc-period", "-1"},
           {"--gpu-pc-sampling", "--gpu-pc-period", "x"},
           {"--gpu-pc-period", "15"}}) {  // without --gpu-pc-sampling
    std::vector<std::string> argv{Tool("cct-record"), "-o", db};
    argv.insert(argv.end(), pc.begin(), pc.end());
    argv.insert(argv.end(), {"--", "/bin/true"});
    auto p = Run(argv);
    CAPTURE(p.err);
    CHECK(p.exit_code == 125);
    CHECK(testutil::LineCount(p.err) == 1);
    CHECK(p.err.find("--gpu-pc-period") != std::string::npos);
  }
  auto unwritable = Run({Tool("cct-record"), "-o", "/proc/cct.db", "--", "/bin/true"});
  CHECK(unwritable.exit_code == 125);
  CHECK(testutil::LineCount(unwritable.err) == 1);
  CHECK(Run({Tool("cct-record"), "-o", db}).exit_code == 125);
  // A program's own failure status passes through.
  CHECK(Run({Tool("cct-record"), "-o", db, "--", "/bin/sh", "-c", "exit 42"}).exit_code == 42);
}

TEST_CASE("cct-record + cct-diff: 5+5 recorded runs, one function twice as slow, is flagged and nothing else") {
  TempDir dir;
  const std::string db = dir / "v.db";
  const std::string prog = Prog("cct-test-variant");
  // Interleaved, so that a change in the machine's load during the test
  // touches every group alike.
  for (int round = 0; round < 5; ++round) {
    for (auto [tag, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"v=base", {prog}}, {"v=slow", {prog, "slow"}}, {"v=base2", {prog}}}) {
      auto r = Run(Record(db, {"--tag", tag, "--name", "variant"}, args));
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
    }
  }
  auto diff = Run({Tool("cct-diff"), "-d", db, "tag:v=base", "tag:v=slow", "--fail-on-regression", "--format", "json"});
  INFO(diff.err);
  CHECK(diff.exit_code == 1);
  const auto j = nlohmann::json::parse(diff.out, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  std::set<std::string> flagged;
  for (const auto& e : j["regressions"])
    if (e["metric"] == "cputime") flagged.insert(e["path"].back().get<std::string>());
  INFO(diff.out);
  std::set<std::string> context;
  for (const auto& e : j["context"])
    if (e["metric"] == "cputime") context.insert(e["path"].back().get<std::string>());
  // The slowed function is the cause; its callers (main, the thread) are
  // context; no other function is flagged.
  CHECK(flagged.count("scaled_work") == 1);
  CHECK(flagged.count("main") == 0);
  CHECK(context.count("main") == 1);
  CHECK(flagged.count("steady_work") == 0);
  CHECK(flagged.count("other_work") == 0);
  // The same program against itself: no regression.
  auto same = Run({Tool("cct-diff"), "-d", db, "tag:v=base", "tag:v=base2", "--fail-on-regression"});
  INFO(same.out << same.err);
  CHECK(same.exit_code == 0);
}

TEST_CASE("cct-record on a real program (xz): output and status unchanged, liblzma is where the time goes") {
  if (access("/usr/bin/xz", X_OK) != 0) {
    MESSAGE("xz not installed; skipped");
    return;
  }
  TempDir dir;
  {
    // 1.8 MB of compressible but not trivial data: about 2 s of xz -6 here,
    // some 2,000 samples (6 MB took 11 s, twice, and told nothing more).
    std::ofstream out(dir / "input.txt");
    uint64_t s = 12345;
    for (int i = 0; i < 100000; ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      out << "line " << (s >> 40) % 1000 << " value " << (s >> 20) % 97 << '\n';
    }
  }
  std::filesystem::copy_file(dir / "input.txt", dir / "input2.txt");
  auto bare = Run({"/usr/bin/xz", "-k", "-T1", "-6", dir / "input.txt"});
  const std::string db = dir / "x.db";
  auto rec = Run(Record(db, {}, {"/usr/bin/xz", "-k", "-T1", "-6", dir / "input2.txt"}));
  REQUIRE(bare.exit_code == 0);
  REQUIRE(rec.exit_code == 0);
  CHECK(testutil::ReadFileOrDie(dir / "input.txt.xz") == testutil::ReadFileOrDie(dir / "input2.txt.xz"));
  auto verify = Run(Record(db, {}, {"/usr/bin/xz", "-t", dir / "input2.txt.xz"}));
  CHECK(verify.exit_code == 0);
  auto top = Run({Tool("cct-query"), "-d", db, "top", "1", "--by", "module", "--exclusive", "-n", "1",
                  "--format", "csv"});
  REQUIRE(top.exit_code == 0);
  INFO(top.out);
  CHECK(top.out.find("liblzma") != std::string::npos);
}

// Every recorded process loads the collector and what it needs: each shared
// library more is ld.so opening, mapping and relocating it in every process
// a build starts (libisal.so.2, for the store's checksum, cost 16 page
// faults each; libm.so.6 ~10; docs/performance.md). The collector links
// those in from static archives; readelf, a second tool, lists what is left.
TEST_CASE("libcct-collector.so needs only libc and the loader") {
  auto d = testutil::Run({"/usr/bin/readelf", "-d", testutil::BuildDir() + "/src/collector/libcct-collector.so"});
  REQUIRE(d.exit_code == 0);
  std::set<std::string> needed;
  const std::regex entry(R"(\(NEEDED\)\s+Shared library: \[([^\]]+)\])");
  for (auto it = std::sregex_iterator(d.out.begin(), d.out.end(), entry); it != std::sregex_iterator(); ++it)
    needed.insert((*it)[1].str());
  INFO(d.out);
  CHECK(needed.contains("libc.so.6"));
  for (const std::string& lib : needed) {
    INFO(lib);
    CHECK((lib == "libc.so.6" || lib.starts_with("ld-linux")));
  }
}

TEST_SUITE_END();

// Issue 20: names set with pthread_setname_np or prctl(PR_SET_NAME) were
// ignored (every thread was "thread N"). thread_names.cc: which thread gets
// which name, and how much CPU time it burns, by construction.
TEST_CASE("cct-record: threads carry the names the program gave them") {
  TempDir dir;
  const std::string db = dir / "t.db";
  // Each thread's time after its last sample goes to its start routine,
  // under its thread node: the CPU times below check which thread got
  // which name, and a tail the sampler missed on a loaded machine (CI once
  // saw a pool thread at 74.5 of its 100 ms) is not what this test is about.
  auto r = Run(Record(db, {"--account-short-threads"}, {Prog("cct-test-thread-names")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const cct::Tree t = TreeOf(db, Runs(db)[0].id);
  std::map<std::string, double> cpu;  // thread node name -> its inclusive cputime
  const cct::MetricId m = t.metrics().Find("cputime");
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    cct::NodeId a = n;
    while (a != cct::kNoNode && t.kind(a) != cct::FrameKind::kThread) a = t.parent(a);
    if (a != cct::kNoNode) cpu[std::string(t.name(a))] += t.Value(n, m);
  }
  std::string names;
  for (const auto& [name, v] : cpu) names += name + "; ";
  INFO(names);
  for (const char* name : {"self-named", "prctl-named", "named-by-main"}) {
    CAPTURE(name);
    REQUIRE(cpu.count(name));
    CHECK(cpu[name] == doctest::Approx(150e6).epsilon(0.15));
  }
  // Named, then gone long before the end: read at its exit.
  REQUIRE(cpu.count("early-exit"));
  CHECK(cpu["early-exit"] == doctest::Approx(100e6).epsilon(0.15));
  // Two workers of one name stay two threads, told apart by their index.
  int pool = 0;
  for (const auto& [name, v] : cpu) {
    if (!name.starts_with("pool (thread ")) continue;
    ++pool;
    CHECK(v == doctest::Approx(100e6).epsilon(0.15));
  }
  CHECK(pool == 2);
  CHECK_FALSE(cpu.count("pool"));
  // The unnamed one keeps its number; the process's own name (comm, which
  // every thread inherits) names no thread.
  int numbered = 0;
  for (const auto& [name, v] : cpu) numbered += name.starts_with("thread ") ? 1 : 0;
  CHECK(numbered == 1);
  CHECK_FALSE(cpu.count("cct-test-thread"));
}

// A stripped binary whose debug information is in a separate file named by
// its .gnu_debuglink (objcopy --only-keep-debug, as -dbg packages ship
// them): its functions are named from that file.
TEST_CASE("cct-record: a stripped binary's separate debug file (.gnu_debuglink) names its functions") {
  TempDir dir;
  const std::string db = dir / "g.db";
  auto r = Run(Record(db, {}, {Prog("cct-test-debuglink")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const cct::Tree t = TreeOf(db, Runs(db)[0].id);
  // cpu_split.cc's construction.
  CHECK(InclusiveOf(t, "cputime", "alpha_work") == doctest::Approx(300e6).epsilon(0.15));
  CHECK(InclusiveOf(t, "cputime", "gamma_work") == doctest::Approx(250e6).epsilon(0.15));
  CHECK_FALSE(HasFrame(t, [](std::string_view s) { return s.starts_with("cct-test-debuglink+0x"); }));
}

// --- --trace: the trace-phases program (programs/trace_phases.cc) -----------

namespace {

struct TracePhase {
  std::string thread, name;
  int64_t start_ns = 0, end_ns = 0;
  int64_t tail_ns = 0;  // when its last 2 ms of CPU began
  // When each half millisecond of its first 40 ms of CPU was done.
  std::vector<int64_t> progress_ns;
  static constexpr int64_t kProgressStepNs = 500000;
};

// Whether the trace-phases program was built (it needs the NVTX3 headers).
bool TracePhasesBuilt() {
  if (std::filesystem::exists(Prog("cct-test-trace-phases"))) return true;
  MESSAGE("SKIPPED: no NVTX3 headers, no trace-phases program");
  return false;
}

// "PHASE thread name start end running" lines as the program printed them.
std::vector<TracePhase> TracePhases(const std::string& out) {
  std::vector<TracePhase> phases;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string tag;
    TracePhase p;
    if (in >> tag && tag == "PHASE" && in >> p.thread >> p.name >> p.start_ns >> p.end_ns >> p.tail_ns) {
      for (int64_t at; in >> at;) p.progress_ns.push_back(at);
      phases.push_back(p);
    }
  }
  return phases;
}

store::RunTrace TraceOf(const std::string& db, store::RunId id) {
  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto t = (*d)->ReadTrace(id);
  REQUIRE(t.ok());
  REQUIRE(t->has_value());
  return std::move(**t);
}

// Whether `node` or an ancestor is a function named `function`.
bool UnderFunction(const cct::Tree& t, cct::NodeId node, std::string_view function) {
  for (; node != cct::kRootNode; node = t.parent(node))
    if (t.kind(node) == cct::FrameKind::kFunction && t.name(node) == function) return true;
  return false;
}

// The tree's name of a thread the program calls "main" or "worker".
std::string TreeThreadName(const std::string& thread) { return thread == "main" ? "main thread" : thread; }

const store::TraceSamples* SamplesOfThread(const store::RunTrace& trace, const cct::Tree& t, const std::string& thread) {
  for (const store::TraceSamples& s : trace.samples)
    if (t.name(s.thread) == TreeThreadName(thread)) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE("cct-record --trace: samples and NVTX ranges land at the phases' times and nodes") {
  if (!TracePhasesBuilt()) return;
  TempDir dir;
  const std::string db = dir / "t.db";
  auto r = Run(Record(db, {"--trace"}, {Prog("cct-test-trace-phases")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<TracePhase> phases = TracePhases(r.out);
  REQUIRE(phases.size() == 5);  // main: A, B, A; worker: C, D
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  const cct::Tree t = TreeOf(db, runs[0].id);
  const store::RunTrace trace = TraceOf(db, runs[0].id);
  CHECK(trace.dropped == 0);
  CHECK(trace.limit_bytes == uint64_t{256} << 20);
  CHECK(runs[0].diagnostics.count("checkpoint_ns") == 1);  // the checkpoint thread's own cost, always said

  // Every sample the tree counts is in the trace, once.
  uint64_t traced = 0;
  for (const store::TraceSamples& s : trace.samples) {
    traced += s.time_ns.size();
    CHECK(std::is_sorted(s.time_ns.begin(), s.time_ns.end()));
    CHECK(t.kind(s.thread) == cct::FrameKind::kThread);
    for (cct::NodeId n : s.node) CHECK(n < t.size());  // ids are the tree's
  }
  CHECK(traced == static_cast<uint64_t>(runs[0].diagnostics.at("samples")));

  const char* kFunction[] = {"phase_a", "phase_b", "phase_c", "phase_d"};
  for (const TracePhase& p : phases) {
    CAPTURE(p.thread);
    CAPTURE(p.name);
    const std::string function = kFunction[p.name[0] - 'A'];
    // The range instance: the collector times push and pop just outside
    // the program's own clock readings — before and after them in real
    // time, so outside them on the epoch clock give or take the error of
    // moving monotonic times to the epoch (kEpochSlack; the run's start
    // time minus its start's monotonic time was 150 µs off on an H200 host,
    // more here: metadata is gathered between the two), and within 10 ms
    // of them (the thread may be preempted in between on a loaded machine,
    // as in CI).
    constexpr int64_t kEpochSlack = 20000;
    const store::TraceRange* range = nullptr;
    for (const store::TraceRange& x : trace.ranges)
      if (t.name(x.node) == p.name && t.name(x.thread) == TreeThreadName(p.thread) &&
          x.start_ns <= p.start_ns + 10000000 && x.start_ns >= p.start_ns - 10000000)
        range = &x;
    REQUIRE(range != nullptr);
    CHECK(range->start_ns <= p.start_ns + kEpochSlack);
    CHECK(range->end_ns >= p.end_ns - kEpochSlack);
    CHECK(range->end_ns <= p.end_ns + 10000000);
    // The samples of the phase's function all fall in the phase (give or
    // take a sampling period of 10 ms), and the phase's first and last
    // such samples are within 10 ms of its ends — or, where the thread
    // waited for a core there (CI: its last sample 30 ms before the end),
    // no further out than the program's own log allows: its first 2 ms and
    // its last 2 ms of CPU each hold a sample (1 kHz).
    const store::TraceSamples* s = SamplesOfThread(trace, t, p.thread);
    REQUIRE(s != nullptr);
    int64_t first = INT64_MAX, last = INT64_MIN;
    size_t inside = 0, in_span = 0;
    for (size_t i = 0; i < s->time_ns.size(); ++i) {
      const int64_t at = s->time_ns[i];
      const bool in_phase = at >= p.start_ns - 10000000 && at <= p.end_ns + 10000000;
      if (at >= p.start_ns + 10000000 && at <= p.end_ns - 10000000) {
        ++in_span;
        inside += UnderFunction(t, s->node[i], function);
      }
      if (!in_phase || !UnderFunction(t, s->node[i], function)) continue;
      first = std::min(first, at);
      last = std::max(last, at);
    }
    REQUIRE(p.progress_ns.size() == 80);
    CHECK(first <= std::max(p.start_ns + 10000000, p.progress_ns[3]));
    CHECK(last >= std::min(p.end_ns - 10000000, p.tail_ns));
    // Inside the phase the thread is in its function.
    REQUIRE(in_span > 50);
    CHECK(static_cast<double>(inside) >= 0.95 * static_cast<double>(in_span));
  }
  // phase_a's samples on the main thread fall in its two instances only:
  // none in B or in the sleep between.
  std::vector<TracePhase> a;
  for (const TracePhase& p : phases)
    if (p.name == "A") a.push_back(p);
  REQUIRE(a.size() == 2);
  const store::TraceSamples* main_samples = SamplesOfThread(trace, t, "main");
  REQUIRE(main_samples != nullptr);
  for (size_t i = 0; i < main_samples->time_ns.size(); ++i) {
    if (!UnderFunction(t, main_samples->node[i], "phase_a")) continue;
    const int64_t at = main_samples->time_ns[i];
    const bool in_a = (at >= a[0].start_ns - 10000000 && at <= a[0].end_ns + 10000000) ||
                      (at >= a[1].start_ns - 10000000 && at <= a[1].end_ns + 10000000);
    CHECK(in_a);
  }
}

TEST_CASE("cct-record --trace-limit: past the limit events are counted, not kept, and the run says so") {
  if (!TracePhasesBuilt()) return;
  TempDir dir;
  const std::string db = dir / "l.db";
  auto r = Run(Record(db, {"--trace", "--trace-limit", "4K"}, {Prog("cct-test-trace-phases")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  const store::RunTrace trace = TraceOf(db, runs[0].id);
  CHECK(trace.limit_bytes == 4096);
  CHECK(trace.dropped > 0);
  // 4 KiB holds at most 256 samples (16 bytes each in memory).
  uint64_t kept = 0;
  for (const store::TraceSamples& s : trace.samples) kept += s.time_ns.size();
  CHECK(kept <= 256);
  CHECK(kept + trace.dropped + trace.ranges.size() >=
        static_cast<uint64_t>(runs[0].diagnostics.at("samples")));
  CHECK(runs[0].diagnostics.at("trace_dropped_events") == static_cast<int64_t>(trace.dropped));
  CHECK(runs[0].sampling->at("trace_limit_reached").get<std::string>().find("--trace-limit 4096 bytes") !=
        std::string::npos);
  // Bad sizes are refused before the program runs.
  for (const char* bad : {"0", "4X", "-1", "99999999999999999999"}) {
    auto b = Run(Record(db, {"--trace", "--trace-limit", bad}, {"/bin/true"}));
    CHECK(b.exit_code == 125);
    CHECK(b.err.find("--trace-limit must be a size") != std::string::npos);
  }
  auto without = Run(Record(db, {"--trace-limit", "4K"}, {"/bin/true"}));
  CHECK(without.exit_code == 125);
  CHECK(without.err.find("--trace-limit needs --trace") != std::string::npos);
}

TEST_CASE("cct-record --trace: SIGKILL keeps the trace up to the last checkpoint") {
  if (!TracePhasesBuilt()) return;
  TempDir dir;
  const std::string db = dir / "k.db";
  const pid_t rec = Spawn(Record(db, {"--trace", "--checkpoint", "0.2"}, {Prog("cct-test-trace-phases"), "hold"}));
  const pid_t prog = ChildOf(rec);
  REQUIRE(prog > 0);
  // The phases take 0.8 s of the main thread's CPU; then it holds.
  WaitForCpu(prog, 1.4);
  kill(prog, SIGKILL);
  CHECK(WaitStatus(rec) == 128 + SIGKILL);
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].state == store::RunState::kCrashed);
  const cct::Tree t = TreeOf(db, runs[0].id);
  const store::RunTrace trace = TraceOf(db, runs[0].id);
  // Everything the phases did was written at a checkpoint before the kill:
  // their five ranges and samples of each function; the hold's samples up
  // to the last checkpoint too.
  std::multiset<std::string> ranges;
  for (const store::TraceRange& x : trace.ranges) ranges.insert(std::string(t.name(x.node)));
  CHECK(ranges.count("A") == 2);
  CHECK(ranges.count("B") == 1);
  CHECK(ranges.count("C") == 1);
  CHECK(ranges.count("D") == 1);
  // The ranges the kill found open ("hold", "spin" in it, the start/end
  // range "waiting") are there, open, after every phase, the inner one's
  // node below the outer one's.
  int64_t phases_end = 0;
  const store::TraceRange* hold = nullptr;
  const store::TraceRange* spin = nullptr;
  const store::TraceRange* waiting = nullptr;
  for (const store::TraceRange& x : trace.ranges) {
    const std::string name(t.name(x.node));
    if (name == "hold") hold = &x;
    else if (name == "spin") spin = &x;
    else if (name == "waiting") waiting = &x;
    else {
      CHECK_FALSE(x.open());
      phases_end = std::max(phases_end, x.end_ns);
    }
  }
  CHECK(ranges.count("hold") == 1);
  CHECK(ranges.count("spin") == 1);
  REQUIRE(hold != nullptr);
  REQUIRE(spin != nullptr);
  CHECK(hold->open());
  CHECK(spin->open());
  CHECK(hold->start_ns >= phases_end);
  CHECK(spin->start_ns >= hold->start_ns);
  CHECK(t.parent(spin->node) == hold->node);
  CHECK(t.kind(hold->node) == cct::FrameKind::kNvtx);
  REQUIRE(waiting != nullptr);
  CHECK(ranges.count("waiting") == 1);
  CHECK(waiting->open());
  CHECK(waiting->start_ns >= phases_end);
  CHECK(waiting->start_ns <= hold->start_ns);
  CHECK(t.kind(waiting->node) == cct::FrameKind::kNvtx);
  CHECK(t.kind(waiting->thread) == cct::FrameKind::kThread);
  std::map<std::string, size_t> per_function;
  for (const store::TraceSamples& s : trace.samples)
    for (cct::NodeId n : s.node)
      for (const char* f : {"phase_a", "phase_b", "phase_c", "phase_d", "hold_on"}) per_function[f] += UnderFunction(t, n, f);
  for (const char* f : {"phase_a", "phase_b", "phase_c", "phase_d", "hold_on"}) {
    CAPTURE(f);
    CHECK(per_function[f] > 0);
  }
}

TEST_CASE("cct-record --trace then timeline and @t= windows: phase boundaries within 10 ms and one phase per window") {
  if (!TracePhasesBuilt()) return;
  TempDir dir;
  const std::string db = dir / "tl.db";
  // 4 samples a ms of CPU time: a 10 ms bucket holds enough samples that the
  // phase function, not the clock_gettime its burn loop calls, is on most.
  auto r = Run(Record(db, {"--trace", "--freq", "4000"}, {Prog("cct-test-trace-phases")}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<TracePhase> phases = TracePhases(r.out);
  REQUIRE(phases.size() == 5);  // main: A, B, A; worker: C, D
  const auto runs = Runs(db);
  REQUIRE(runs.size() == 1);
  const int64_t base = SpanOf(TraceOf(db, runs[0].id)).first_ns;
  const std::string id = std::to_string(runs[0].id);

  int rc = 0;
  const std::string csv = testutil::Query(db, {"timeline", id, "--bucket", "10", "--format", "csv"}, &rc);
  REQUIRE(rc == 0);
  const auto rows = testutil::ReadCsvRows(csv);
  const char* kFunction[] = {"phase_a", "phase_b", "phase_c", "phase_d"};
  std::map<std::string, int64_t> previous_end;  // per thread, of its previous phase (each thread's print in order)
  for (const TracePhase& p : phases) {
    CAPTURE(p.thread);
    CAPTURE(p.name);
    const int64_t after = previous_end.count(p.thread) ? previous_end[p.thread] : INT64_MIN;
    // The first bucket after the thread's previous phase whose hottest
    // function is this phase's starts no earlier than 10 ms before the
    // printed start, and no later than the first bucket after the start's
    // own in which the phase ran 4 ms of CPU (16 samples, all the phase's:
    // the previous one ended in the start's bucket). The program's progress
    // log says which bucket that is: the next one when the thread had a
    // core, later on a loaded machine (CI: a thread descheduled 15 to 25 ms
    // right after a phase's start).
    const int64_t kBucket = 10000000;
    auto bucket_of = [&](int64_t at) { return at >= base ? (at - base) / kBucket : -1 - (base - at - 1) / kBucket; };
    REQUIRE(p.progress_ns.size() == 80);
    std::map<int64_t, int64_t> cpu_in;  // bucket → the phase's CPU time done in it
    int64_t settled = INT64_MAX;        // start of the first bucket after the start's with 4 ms of the phase
    for (const int64_t at : p.progress_ns) {
      const int64_t b = bucket_of(at);
      if (b > bucket_of(p.start_ns) && (cpu_in[b] += TracePhase::kProgressStepNs) >= 4000000) {
        settled = std::min(settled, base + b * kBucket);
        break;
      }
    }
    // A core so scarce that no bucket got 4 ms of it: the bucket after the
    // log's end.
    if (settled == INT64_MAX) settled = base + (bucket_of(p.progress_ns.back()) + 1) * kBucket;
    CAPTURE(settled - p.start_ns);
    int64_t first = INT64_MAX;
    for (const auto& row : rows) {
      const int64_t at = base + std::llround(std::stod(row.at("bucket_start_s")) * 1e9);
      if (row.at("track") != TreeThreadName(p.thread) || row.at("item") != kFunction[p.name[0] - 'A']) continue;
      if (after != INT64_MIN && at + 10000000 <= after) continue;
      first = std::min(first, at);
    }
    CHECK(first >= p.start_ns - kBucket);
    CHECK(first <= settled);
    // The phase's window holds the phase: its function has >= 90 % of the
    // thread's cputime in it.
    query::LoadOptions load;
    auto profile = query::LoadProfile(id + "@t=" + std::to_string(p.start_ns - base) + "ns.." +
                                          std::to_string(p.end_ns - base) + "ns",
                                      db, load);
    REQUIRE_MESSAGE(profile.ok(), profile.status().message());
    const double thread = InclusiveOf(profile->tree, "cputime", TreeThreadName(p.thread));
    REQUIRE(thread > 0);
    CHECK(InclusiveOf(profile->tree, "cputime", kFunction[p.name[0] - 'A']) >= 0.9 * thread);
    previous_end[p.thread] = p.end_ns;
  }
}
