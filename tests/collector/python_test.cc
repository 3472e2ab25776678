// Python frames in recorded trees (python/python_frames.h): the workload
// (programs/py_workload.py) measures its own functions with
// time.thread_time(); its C extension (programs/py_ext.cc) is built for the
// system's python3 when its headers are installed. Other CPythons found on
// the machine (pyenv's 3.10, 3.12, 3.13) run the extension-free workload.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "cct/tree.h"
#include "store/database.h"
#include "tests/test_util.h"

using testutil::Run;
using testutil::TempDir;
using testutil::Tool;

namespace {

const char* kPython = "/usr/bin/python3";

std::string Workload() { return testutil::SourceDir() + "/tests/collector/programs/py_workload.py"; }
std::string ExtensionDir() { return testutil::BuildDir() + "/tests/collector"; }

bool HaveExtension() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(ExtensionDir(), ec))
    if (e.path().filename().string().starts_with("cct_test_ext")) return true;
  return false;
}

testutil::RunResult RecordPython(const std::string& db, const std::string& python, const std::string& mode,
                           std::vector<std::string> opts = {}, std::vector<std::string> args = {},
                           std::map<std::string, std::string> env = {}) {
  std::vector<std::string> argv{Tool("cct-record"), "-o", db};
  argv.insert(argv.end(), opts.begin(), opts.end());
  argv.insert(argv.end(), {"--", python, Workload(), mode});
  argv.insert(argv.end(), args.begin(), args.end());
  env["PYTHONPATH"] = ExtensionDir();
  return Run(argv, env, 120);
}

cct::Tree OnlyTree(const std::string& db, store::RunMeta* meta = nullptr) {
  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto runs = (*d)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  if (meta) *meta = runs->front();
  auto t = (*d)->ReadTree(runs->front().id);
  REQUIRE(t.ok());
  return std::move(*t);
}

bool IsFunction(const cct::Tree& t, cct::NodeId n, std::string_view name) {
  return t.kind(n) == cct::FrameKind::kFunction && t.name(n) == name;
}

// cputime of every node under a `name` function node, counted once.
double InclusiveOf(const cct::Tree& t, std::string_view name) {
  const cct::MetricId m = t.metrics().Find("cputime");
  REQUIRE(m != cct::kNoMetric);
  std::vector<char> inside(t.size(), 0);
  double sum = 0;
  for (cct::NodeId n = 0; n < t.size(); ++n) {
    inside[n] = (n != 0 && inside[t.parent(n)]) || IsFunction(t, n, name);
    if (inside[n]) sum += t.Value(n, m);
  }
  return sum;
}

bool HasAncestor(const cct::Tree& t, cct::NodeId n, std::string_view name) {
  for (cct::NodeId a = t.parent(n); a != 0; a = t.parent(a))
    if (IsFunction(t, a, name)) return true;
  return false;
}

double SubtreeValue(const cct::Tree& t, cct::NodeId top, cct::MetricId metric) {
  double sum = 0;
  for (cct::NodeId n = 1; n < t.size(); ++n)
    for (cct::NodeId a = n; a != 0; a = t.parent(a))
      if (a == top) {
        sum += t.Value(n, metric);
        break;
      }
  return sum;
}

int DeepestNesting(const cct::Tree& t, std::string_view name) {
  int deepest = 0;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    int chain = 0;
    for (cct::NodeId a = n; a != 0 && IsFunction(t, a, name); a = t.parent(a)) ++chain;
    deepest = std::max(deepest, chain);
  }
  return deepest;
}

// The system's python3 and, where a developer has them, pyenv's 3.10 to
// 3.13 (CI has Debian's only).
std::vector<std::string> Pythons() {
  std::vector<std::string> pythons = {kPython};
  const char* home = std::getenv("HOME");
  for (const char* v : {"3.10", "3.11", "3.12", "3.13"}) {
    std::error_code ec;
    if (home == nullptr) break;
    for (const auto& e : std::filesystem::directory_iterator(std::string(home) + "/.pyenv/versions", ec)) {
      const std::string name = e.path().filename().string();
      if (name.starts_with(std::string(v) + ".")) pythons.push_back(e.path().string() + "/bin/python" + v);
    }
  }
  return pythons;
}

// Records the workload's `mode` with each CPython of Pythons() and checks
// the result with `check` (the database and the run's output).
void ForEachPython(const std::string& mode,
                   const std::function<void(const std::string& db, const testutil::RunResult& r)>& check,
                   const std::map<std::string, std::string>& env = {}) {
  for (const std::string& python : Pythons()) {
    if (!std::filesystem::exists(python)) continue;
    CAPTURE(python);
    TempDir dir;
    const std::string db = dir / "py.db";
    const auto r = RecordPython(db, python, mode, {}, {}, env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    check(db, r);
  }
}

// The name of the thread node above `n`.
std::string_view ThreadOf(const cct::Tree& t, cct::NodeId n) {
  while (n != 0 && t.kind(n) != cct::FrameKind::kThread) n = t.parent(n);
  return n == 0 ? std::string_view() : t.name(n);
}

// cputime of a function's outermost nodes by the name of their thread.
std::map<std::string, double> CpuByThread(const cct::Tree& t, std::string_view function) {
  const cct::MetricId cpu = t.metrics().Find("cputime");
  std::map<std::string, double> by_thread;
  for (cct::NodeId n = 1; n < t.size(); ++n)
    if (IsFunction(t, n, function) && !HasAncestor(t, n, function))
      by_thread[std::string(ThreadOf(t, n))] += SubtreeValue(t, n, cpu);
  return by_thread;
}

// A function's recorded cputime is within 10% of the thread CPU time the
// workload measured for it (its "MEASURED name ns" line).
void CheckMeasured(const cct::Tree& t, const std::map<std::string, double>& measured, const std::string& name) {
  CAPTURE(name);
  REQUIRE(measured.count(name) == 1);
  const double got = InclusiveOf(t, name), want = measured.at(name);
  INFO(name << ": recorded " << got << " ns, measured " << want << " ns");
  CHECK(std::abs(got - want) <= 0.10 * want);
}

// The checks every CPython's recording of alpha, beta and gamma must pass.
void CheckPureSplit(const cct::Tree& t, const std::map<std::string, double>& measured) {
  for (const char* name : {"alpha", "beta", "gamma"}) CheckMeasured(t, measured, name);
  // gamma(30) .. gamma(0): 31 nested frames, no more, no fewer.
  CHECK(DeepestNesting(t, "gamma") == 31);
  // Python frames name their file, and the statements are line nodes.
  bool file = false, line = false;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    if (IsFunction(t, n, "alpha") && t.str(t.frame(n).file).ends_with("py_workload.py")) file = true;
    if (t.kind(n) == cct::FrameKind::kLine && t.name(n).starts_with("py_workload.py:") && HasAncestor(t, n, "alpha"))
      line = true;
  }
  CHECK(file);
  CHECK(line);
  // beta ran on threading.Thread(name="beta-thread"): its thread node says
  // so (99%: see the thread-name test).
  const auto beta = CpuByThread(t, "beta");
  CHECK(beta.count("beta-thread") == 1);
  if (beta.count("beta-thread")) CHECK(beta.at("beta-thread") >= 0.99 * InclusiveOf(t, "beta"));
  // The interpreter's eval loop is replaced, not left beside them.
  for (cct::NodeId n = 1; n < t.size(); ++n)
    if (IsFunction(t, n, "alpha")) CHECK(t.name(t.parent(n)) == "pure");
}

}  // namespace

TEST_SUITE_BEGIN("preload");

TEST_CASE("Python: functions within 10% of time.thread_time(); C extension frames under their Python caller; "
          "31-deep recursion exact") {
  if (!HaveExtension()) {
    MESSAGE("skipped: the test extension needs python3-dev (install-deps.sh --tests)");
    return;
  }
  TempDir dir;
  const std::string db = dir / "py.db";
  const auto r = RecordPython(db, kPython, "split");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto measured = testutil::Measured(r.out);
  store::RunMeta meta;
  const cct::Tree t = OnlyTree(db, &meta);
  CheckPureSplit(t, measured);
  CHECK(meta.diagnostics.at("python_samples") > 0);
  CHECK(meta.diagnostics.at("python_bad_reads") == 0);
  // The walk's own time is part of the handler's, and it is there.
  CHECK(meta.diagnostics.at("python_handler_ns") > 0);
  CHECK(meta.diagnostics.at("python_handler_ns") < meta.diagnostics.at("handler_ns"));
  // The fast path reads the state and frames directly: system calls only
  // for the first look at each thread's state and each new code object,
  // far fewer than one per sample (a regression to process_vm_readv per
  // frame would make it tens per sample).
  CHECK(meta.diagnostics.at("python_safe_reads") < meta.diagnostics.at("python_samples"));
  for (const char* name : {"native_work", "called_from_c"}) CheckMeasured(t, measured, name);
  // The extension's native function sits under the Python function that
  // called it, and the Python function C called back under that C call.
  const cct::MetricId cpu = t.metrics().Find("cputime");
  double spin_under = 0, spin_elsewhere = 0;
  bool callback_under_c = false;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    if (IsFunction(t, n, "cct_ext_spin_native")) {
      const double v = SubtreeValue(t, n, cpu);
      (HasAncestor(t, n, "native_work") ? spin_under : spin_elsewhere) += v;
    }
    if (IsFunction(t, n, "called_from_c") && HasAncestor(t, n, "cct_ext_call") && HasAncestor(t, n, "split")) callback_under_c = true;
  }
  CHECK(spin_under >= 0.9 * measured.at("native_work"));
  CHECK(spin_elsewhere == 0);
  CHECK(callback_under_c);
  // top --by line shows the workload's statements.
  const auto top = Run({Tool("cct-query"), "-d", db, "top", "latest", "--by", "line", "-n", "5"});
  CHECK(top.exit_code == 0);
  CHECK(top.out.find("py_workload.py:") != std::string::npos);
}

TEST_CASE("Python: every CPython found here (3.10 to 3.13) gives the same tree for the same script") {
  ForEachPython("pure", [](const std::string& db, const testutil::RunResult& r) {
    store::RunMeta meta;
    const cct::Tree t = OnlyTree(db, &meta);
    CheckPureSplit(t, testutil::Measured(r.out));
    CHECK(meta.diagnostics.count("python_minor") == 1);
  });
}

TEST_CASE("Python: threads started by threading are named as Python names them, on every CPython found here") {
  // The names the workload prints come from Python itself
  // (threading.current_thread().name as each function ends): given, default,
  // changed while running, started by a thread while the main one waits in
  // join(), a pool's, one living 10 ms; a daemon thread still runs as the
  // interpreter exits.
  ForEachPython("names", [](const std::string& db, const testutil::RunResult& r) {
    std::map<std::string, std::set<std::string>> names;  // function → thread names it ran on
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      if (line.starts_with("THREAD ") && line.find('\t') != std::string::npos)
        names[line.substr(line.find('\t') + 1)].insert(line.substr(7, line.find('\t') - 7));
    REQUIRE(names.size() == 7);
    CHECK(names.at("named_worker") == std::set<std::string>{"wörker ✓"});
    CHECK(names.at("renamed_worker") == std::set<std::string>{"renamed while running"});
    store::RunMeta meta;
    const cct::Tree t = OnlyTree(db, &meta);
    CHECK(meta.state == store::RunState::kComplete);
    // Each function's samples lie under threads of the names Python gave
    // it, all of them, and each such thread has some. (A code object freed
    // at start-up could once lend its samples the name of the function
    // compiled at its address next, under another thread; code_ids.h.)
    for (const auto& [function, threads] : names) {
      CAPTURE(function);
      // A thread that ends within milliseconds is named from its start only
      // where CPython reports thread starts to audit hooks (3.12+).
      if (function == "brief_worker" && meta.diagnostics.at("python_minor") < 12) continue;
      std::map<std::string, double> by_thread = CpuByThread(t, function);
      const double total = InclusiveOf(t, function);
      double named = 0;
      for (const std::string& thread : threads) {
        CAPTURE(thread);
        CHECK(by_thread[thread] > 0);
        named += by_thread[thread];
      }
      CHECK(named == doctest::Approx(total));
    }
    CHECK(meta.diagnostics.at("python_named_threads") >= 7);
  });
}

TEST_CASE("Python: threads still running as the interpreter frees their states: no fault, the finalizing thread's "
          "frames kept, on every CPython found here") {
  // Py_FinalizeEx frees the states of the threads still running (two daemon
  // threads hashing without the GIL) but leaves their PyGILState keys set.
  // Freed memory is overwritten here (MALLOC_PERTURB_, no tcache), so a walk
  // through such a key reads garbage pointers: 3.13 faulted in every run
  // (in CI first, once in 40 runs of the thread-names workload). Meanwhile
  // the main thread runs Python code as the interpreter finalizes (a
  // __del__ burning 0.3 s), whose frames must still be read.
  ForEachPython(
      "finalize",
      [](const std::string& db, const testutil::RunResult& r) {
        store::RunMeta meta;
        const cct::Tree t = OnlyTree(db, &meta);
        CHECK(meta.state == store::RunState::kComplete);
        // The hashers were sampled after their states were freed.
        CHECK(meta.diagnostics.at("python_finalizing_skips") > 0);
        CHECK(InclusiveOf(t, "hash_forever") > 0);
        CheckMeasured(t, testutil::Measured(r.out), "finalizing_burn");
      },
      {{"MALLOC_PERTURB_", "110"}, {"GLIBC_TUNABLES", "glibc.malloc.tcache_count=0"}});
}

TEST_CASE("Python: a fault while reading the interpreter's frames ends that sample's walk, not the program") {
  // The extension aims the thread's frame chunks at unmapped memory for
  // 0.3 s (a state freed under the walk); every sample then faults in the
  // walk's direct read, and the collector's guard jumps back: the sample
  // keeps its native frames. Hundreds of faults in a row also show the
  // signal masks are put back each time (a SIGSEGV left blocked kills the
  // process at the next one; a sampling signal left blocked stops the
  // samples of after_broken).
  if (!HaveExtension()) {
    MESSAGE("skipped: the test extension needs python3-dev (install-deps.sh --tests)");
    return;
  }
  TempDir dir;
  const std::string db = dir / "py.db";
  const auto r = RecordPython(db, kPython, "broken");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  store::RunMeta meta;
  const cct::Tree t = OnlyTree(db, &meta);
  CHECK(meta.state == store::RunState::kComplete);
  if (meta.diagnostics.at("python_minor") < 11) {
    MESSAGE("skipped: 3.10 has no frame chunks to break");
    return;
  }
  CHECK(meta.diagnostics.at("python_walk_faults") >= 100);  // 300 samples at the default 1 kHz
  const auto measured = testutil::Measured(r.out);
  for (const char* name : {"cct_ext_spin_broken_state", "after_broken"}) CheckMeasured(t, measured, name);
}

TEST_CASE("Python: daemon threads running as the interpreter exits: every run complete, the process's exit kept") {
  // CPython ends a thread that waits for the GIL while it finalizes
  // (pthread_exit), the thread naming Python threads among them; before
  // that was made safe, about 1 run in 10 of this script aborted on a
  // loaded machine. Exits at staggered moments, 10 times.
  TempDir dir;
  for (int i = 0; i < 10; ++i) {
    CAPTURE(i);
    const std::string db = dir / ("d" + std::to_string(i) + ".db");
    const auto r = RecordPython(db, kPython, "daemons", {}, {std::to_string(0.02 * i)});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    store::RunMeta meta;
    OnlyTree(db, &meta);
    CHECK(meta.state == store::RunState::kComplete);
  }
}

TEST_CASE("Python: generators, coroutines, a 50-frame exception and the script's own SIGALRM timer") {
  if (!HaveExtension()) return;
  TempDir dir;
  const std::string db = dir / "py.db";
  const auto r = RecordPython(db, kPython, "shapes");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("GENERATED 4") != std::string::npos);
  // setitimer(0.01) through ~0.5 s of work: the handler ran, many times.
  std::istringstream in(r.out.substr(r.out.find("ALARMS")));
  std::string tag;
  int alarms = 0;
  in >> tag >> alarms;
  CHECK(alarms >= 10);
  const cct::Tree t = OnlyTree(db);
  // The generator's frames under the function that iterated it; the
  // coroutine's under the event loop; every raiser level.
  bool generator = false, coroutine = false;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    if (IsFunction(t, n, "burn") && HasAncestor(t, n, "generator") && HasAncestor(t, n, "shapes")) generator = true;
    if (IsFunction(t, n, "burn") && HasAncestor(t, n, "coroutine") && HasAncestor(t, n, "shapes")) coroutine = true;
  }
  CHECK(generator);
  CHECK(coroutine);
  CHECK(DeepestNesting(t, "raiser") == 50);
}

TEST_CASE("Python: 1,000 threads started and ended by Python, sampled at 4 kHz") {
  if (!HaveExtension()) return;
  TempDir dir;
  const std::string db = dir / "py.db";
  const auto r = RecordPython(db, kPython, "threads", {"--freq", "4000"});
  INFO(r.err);
  CHECK_FALSE(r.timed_out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("THREADS 1000") != std::string::npos);
  store::RunMeta meta;
  const cct::Tree t = OnlyTree(db, &meta);
  CHECK(meta.diagnostics.at("threads") >= 1001);
  CHECK(InclusiveOf(t, "short") > 0);
}

// One range node for `range` under the Python function `pusher`, above
// `inside_range`, holding the samples and the range's own duration; `want`
// (the pusher's CPU time) is read from the workload's output.
void CheckPythonRange(const std::string& mode, const std::string& range, const std::string& pusher,
                      std::string_view native_inside = {}) {
  TempDir dir;
  const std::string db = dir / "py.db";
  const auto r = RecordPython(db, kPython, mode);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  if (r.out.find("NVTX available 1") == std::string::npos) {
    MESSAGE("skipped: the test extension was built without NVTX3's headers");
    return;
  }
  const double want = testutil::Measured(r.out).at(pusher);
  const cct::Tree t = OnlyTree(db);
  const cct::MetricId cpu = t.metrics().Find("cputime"), wall = t.metrics().Find("nvtx:time");
  REQUIRE(wall != cct::kNoMetric);
  int ranges = 0;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    if (t.kind(n) != cct::FrameKind::kNvtx || t.name(n) != range) continue;
    ++ranges;
    INFO("range node ", n, " under ", t.name(t.parent(n)));
    CHECK(IsFunction(t, t.parent(n), pusher));
    bool inside = false;
    for (cct::NodeId c = 1; c < t.size(); ++c)
      if (t.parent(c) == n && IsFunction(t, c, "inside_range")) inside = true;
    CHECK(inside);
    CHECK(std::abs(SubtreeValue(t, n, cpu) - want) <= 0.10 * want);
    CHECK(t.Value(n, wall) >= 0.9 * want);
    if (!native_inside.empty()) {
      // The pushing C function's own work after the push is inside the range.
      double native = 0;
      for (cct::NodeId c = n + 1; c < t.size(); ++c) {
        cct::NodeId a = c;
        while (a != 0 && a != n) a = t.parent(a);
        if (a == n && t.kind(c) == cct::FrameKind::kFunction && t.name(c) == native_inside)
          native += SubtreeValue(t, c, cpu);
      }
      CHECK(native >= 0.15e9);
    }
  }
  CHECK(ranges == 1);
}

TEST_CASE("Python: an NVTX range pushed from Python sits between the Python function that pushed it and its callees") {
  if (!HaveExtension()) return;
  CheckPythonRange("nvtx", "py-range", "with_range");
}

TEST_CASE("Python: a range pushed by a C function that then works natively is one node under the Python caller") {
  // Samples after the push inside the pushing C function (in every push,
  // briefly: there a sample once made a second range node under the C
  // function; here for 0.2 s) place the range as the pop and the samples in
  // Python do.
  if (!HaveExtension()) return;
  CheckPythonRange("nvtx_native", "py-native-range", "with_native_range", "cct_ext_spin_native");
}

TEST_CASE("Python: a kernel launched from a Python method sits under it, its line and its caller") {
  // The fake CUDA of the GPU tests (programs/fake_gpu.cc) called by ctypes;
  // only where the toolkit has CUPTI (it is built then).
  const std::string fake = testutil::BuildDir() + "/tests/collector/libcct-test-fakegpu.so";
  if (!std::filesystem::exists(fake)) {
    MESSAGE("skipped: no fake CUDA adapter in this build (CUDA toolkit without CUPTI)");
    return;
  }
  TempDir dir;
  const std::string db = dir / "py.db";
  const auto r = Run({Tool("cct-record"), "-o", db, "--", kPython, Workload(), "gpu", fake},
                     {{"CCT_GPU_ADAPTER", fake}}, 120);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const cct::Tree t = OnlyTree(db);
  const cct::MetricId gpu = t.metrics().Find("gker");
  REQUIRE(gpu != cct::kNoMetric);
  // step → Model.forward → (its line) → … → scale_kernel: all 3 ms there.
  double under = 0, total = 0;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    if (t.kind(n) != cct::FrameKind::kKernel) continue;
    const double v = SubtreeValue(t, n, gpu);  // the kernel node and below
    total += v;
    bool line = false;
    for (cct::NodeId a = t.parent(n); a != 0 && !line; a = t.parent(a))
      line = t.kind(a) == cct::FrameKind::kLine && t.name(a).starts_with("py_workload.py:") &&
             IsFunction(t, t.parent(a), "Model.forward");
    if (line && HasAncestor(t, n, "step")) under += v;
  }
  CHECK(total == doctest::Approx(3e6).epsilon(0.01));
  CHECK(under == doctest::Approx(total));
}

TEST_CASE("Python: a multiprocessing pool's shutdown is not held up by its workers' final writes") {
  // Pool.terminate() sends SIGTERM to workers that are already exiting:
  // one inside _exit's final write held the write's mutex, and its SIGTERM
  // handler waited the full 5 s deadline for the checkpoint thread, which
  // waited for that mutex. The signal now waits for the write to end.
  TempDir dir;
  const std::string db = dir / "py.db";
  const auto r = RecordPython(db, kPython, "pool");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::istringstream in(r.out.substr(r.out.find("POOL")));
  std::string tag;
  int total = 0;
  double seconds = 99;
  in >> tag >> total >> seconds;
  CHECK(total == 140);  // 0² + … + 7²
  CHECK(seconds < 2.5);  // bare: ~0.1 s; the stall was 5 s
  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto runs = (*d)->ListRuns();
  REQUIRE(runs.ok());
  CHECK(runs->size() >= 3);  // the program and its two workers
  for (const store::RunMeta& m : *runs) CHECK(m.state != store::RunState::kRecording);
}

TEST_CASE("Python: --python off keeps the interpreter's native frames") {
  if (!HaveExtension()) return;
  TempDir dir;
  const std::string db = dir / "py.db";
  const auto r = RecordPython(db, kPython, "pure", {"--python", "off"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  store::RunMeta meta;
  const cct::Tree t = OnlyTree(db, &meta);
  CHECK(InclusiveOf(t, "alpha") == 0);
  CHECK(InclusiveOf(t, "_PyEval_EvalFrameDefault") > 0);
  CHECK(meta.diagnostics.count("python_samples") == 0);
  const auto bad = Run({Tool("cct-record"), "-o", dir / "x.db", "--python", "sometimes", "--", "true"});
  CHECK(bad.exit_code == 125);  // cct-record's own errors
  CHECK(testutil::LineCount(bad.err) == 1);
}

TEST_SUITE_END();
