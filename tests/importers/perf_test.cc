// cct-import --from perf: fixtures of `perf script` text written by hand from
// perf-script(1) and the layout perf 6.1 prints (expected values from the
// fixtures' construction), then a real recording of a test program whose
// per-function self samples and total period are checked against
// `perf report`, where perf runs here.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "cct/tree_ops.h"
#include "importers/importer.h"
#include "tests/interop_util.h"
#include "tests/test_util.h"

namespace {

// Exclusive values of `metric` by path ("thread;f;g"), non-zero only.
std::map<std::string, double> PerfPaths(const cct::Tree& tree, const std::string& metric) {
  std::map<std::string, double> out;
  const cct::MetricId m = tree.metrics().Find(metric);
  if (m == cct::kNoMetric) return out;
  for (cct::NodeId n = 1; n < tree.size(); ++n) {
    const double v = tree.Value(n, m);
    if (v == 0) continue;
    std::string path;
    for (const std::string& s : cct::PathNames(tree, n)) path += (path.empty() ? "" : ";") + s;
    out[path] += v;
  }
  return out;
}

// The first node whose path is `path`, or kNoNode.
cct::NodeId PerfNode(const cct::Tree& tree, const std::string& path) {
  for (cct::NodeId n = 1; n < tree.size(); ++n) {
    std::string p;
    for (const std::string& s : cct::PathNames(tree, n)) p += (p.empty() ? "" : ";") + s;
    if (p == path) return n;
  }
  return cct::kNoNode;
}

cct::Result<importers::ImportResult> ParsePerf(const std::string& text, bool skip = false) {
  importers::ImportOptions o;
  o.skip_bad_lines = skip;
  return importers::ParsePerfScript(text, "in.txt", o);
}

// perf script's default layout (perf record -e cpu-clock -g): two threads
// of one process, a kernel callchain under a vdso call, an [unknown] frame,
// symbol offsets, C++ names with parentheses and spaces.
const char* const kDefaultLayout =
    "prog  100 41968.231382:    1000000 cpu-clock: \n"
    "\t            11cd work+0x64 (/tmp/prog)\n"
    "\t            1508 main+0x38 (/tmp/prog)\n"
    "\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\n"
    "prog  100 41968.232382:    1000000 cpu-clock: \n"
    "\t            11c5 work+0x5c (/tmp/prog)\n"
    "\t            1508 main+0x38 (/tmp/prog)\n"
    "\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\n"
    "prog  101 41968.233381:    2000000 cpu-clock: \n"
    "\tffffffff8226e639 _raw_spin_unlock_irqrestore+0x19 ([kernel.kallsyms])\n"
    "\tffffffff8225a6c1 do_syscall_64+0x71 ([kernel.kallsyms])\n"
    "\t             be1 __vdso_clock_gettime+0xf1 ([vdso])\n"
    "\t            77aa [unknown] (/tmp/prog)\n"
    "\t            1349 ns::Worker::run(int, char const*) const+0x2d (/tmp/prog)\n"
    "\t           891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\n"
    "prog  101 41968.234380:    3000000 cpu-clock: \n"
    "\t            1349 ns::Worker::run(int, char const*) const+0x2d (/tmp/prog)\n"
    "\t           891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
    "\n";

}  // namespace

TEST_CASE("perf import: the default perf script layout") {
  auto r = ParsePerf(kDefaultLayout);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->records == 4);
  CHECK(r->skipped == 0);
  const cct::Tree& t = r->tree;
  // cpu-clock periods are nanoseconds of CPU time: the collector's cputime.
  const cct::MetricId cputime = t.metrics().Find("cputime");
  REQUIRE(cputime != cct::kNoMetric);
  CHECK(t.metrics().Get(cputime).unit == cct::Unit::kNanoseconds);
  const std::string libc = "__libc_start_call_main;main;work";
  // Two threads with one comm: the second is told apart by its order.
  const std::string worker = "prog (thread 2);start_thread;ns::Worker::run(int, char const*) const";
  const std::map<std::string, double> time = {
      {"prog;" + libc, 2000000},
      {worker + ";prog+0x77aa;__vdso_clock_gettime;do_syscall_64;_raw_spin_unlock_irqrestore", 2000000},
      {worker, 3000000}};
  CHECK(PerfPaths(t, "cputime") == time);
  const std::map<std::string, double> samples = {
      {"prog;" + libc, 2},
      {worker + ";prog+0x77aa;__vdso_clock_gettime;do_syscall_64;_raw_spin_unlock_irqrestore", 1},
      {worker, 1}};
  CHECK(PerfPaths(t, "samples") == samples);
  // Modules: the dso as perf names it, kernel frames under [kernel.kallsyms].
  const cct::NodeId k = PerfNode(t, worker + ";prog+0x77aa;__vdso_clock_gettime;do_syscall_64");
  REQUIRE(k != cct::kNoNode);
  CHECK(t.str(t.frame(k).module) == "[kernel.kallsyms]");
  CHECK(t.kind(k) == cct::FrameKind::kFunction);
  const cct::NodeId w = PerfNode(t, "prog;__libc_start_call_main;main;work");
  REQUIRE(w != cct::kNoNode);
  CHECK(t.str(t.frame(w).module) == "/tmp/prog");
  CHECK(t.kind(t.parent(t.parent(t.parent(w)))) == cct::FrameKind::kThread);
}

TEST_CASE("perf import: -F with pid/tid and srcline, no period") {
  // perf script -F comm,tid,pid,time,event,ip,sym,dso,srcline: no period,
  // so each sample counts 1; the leaf's srcline becomes a line node, "??:0"
  // none; the callers' srclines are not kept.
  const std::string text =
      "           prog  7/7  10.000001: cycles:u: \n"
      "\t            11cd work (/tmp/prog)\n"
      "  prog.cc:12\n"
      "\t            1508 main (/tmp/prog)\n"
      "  prog.cc:38\n"
      "\n"
      "           prog  7/7  10.000002: cycles:u: \n"
      "\t            11cd work (/tmp/prog)\n"
      "  prog.cc:12\n"
      "\t            1508 main (/tmp/prog)\n"
      "  prog.cc:38\n"
      "\n"
      "           prog  7/7  10.000003: cycles:u: \n"
      "\t            11d0 work (/tmp/prog)\n"
      "  ??:0\n"
      "\t            1508 main (/tmp/prog)\n"
      "  prog.cc:38\n"
      "\n";
  auto r = ParsePerf(text);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->records == 3);
  const std::map<std::string, double> samples = {{"prog;main;work;prog.cc:12", 2}, {"prog;main;work", 1}};
  CHECK(PerfPaths(r->tree, "samples") == samples);
  CHECK(r->tree.metrics().Find("cycles") == cct::kNoMetric);  // no period, no event metric
  const cct::NodeId line = PerfNode(r->tree, "prog;main;work;prog.cc:12");
  REQUIRE(line != cct::kNoNode);
  CHECK(r->tree.kind(line) == cct::FrameKind::kLine);
  CHECK(r->tree.frame(line).line == 12);
  CHECK(r->tree.str(r->tree.frame(line).file) == "prog.cc");
}

TEST_CASE("perf import: samples without callchains, several events") {
  // perf record -e cycles:u,instructions:u (no -g), perf script -F
  // comm,pid,tid,time,period,event,ip,sym,dso,srcline: the one frame on the
  // header line; event names padded; modifiers dropped from metric names.
  const std::string text =
      "           prog 9/9 1.0:     1000     cycles:u:      55b46a5621cd alpha (/tmp/prog)\n"
      "  prog.cc:5\n"
      "           prog 9/9 1.1:     3000 instructions:u:      55b46a5621cd alpha (/tmp/prog)\n"
      "  prog.cc:5\n"
      "           prog 9/9 1.2:      500     cycles:u:      55b46a5622e7 beta (/tmp/prog)\n"
      "  prog.cc:9\n"
      "           prog 9/9 1.3:      700     cycles:u:  ffffffff8143b1df pid_for_clock ([kernel.kallsyms])\n"
      "           prog 9/10 1.4:      250     cycles:u:      7f0000001000 [unknown] ([unknown])\n";
  auto r = ParsePerf(text);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->records == 5);
  const std::map<std::string, double> cycles = {{"prog;alpha;prog.cc:5", 1000},
                                                {"prog;beta;prog.cc:9", 500},
                                                {"prog;pid_for_clock", 700},
                                                {"prog (thread 2);[unknown]+0x7f0000001000", 250}};
  CHECK(PerfPaths(r->tree, "cycles") == cycles);
  CHECK(PerfPaths(r->tree, "instructions") == std::map<std::string, double>{{"prog;alpha;prog.cc:5", 3000}});
  const cct::MetricId c = r->tree.metrics().Find("cycles");
  REQUIRE(c != cct::kNoMetric);
  CHECK(r->tree.metrics().Get(c).unit == cct::Unit::kCount);
  double total_samples = 0;
  for (const auto& e : PerfPaths(r->tree, "samples")) total_samples += e.second;
  CHECK(total_samples == 5);
}

TEST_CASE("perf import: inlined frames of DWARF callchains") {
  // perf record --call-graph dwarf: an inlined function is listed at the
  // address of the function it was inlined into, with "(inlined)" for a dso.
  const std::string text =
      "app 5 1.0:    5000000 cpu-clock: \n"
      "\t            11a9 helper+0x40 (inlined)\n"
      "\t            11a9 outer+0x40 (/bin/app)\n"
      "\t            1507 main+0x37 (/bin/app)\n"
      "\n";
  auto r = ParsePerf(text);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const cct::NodeId n = PerfNode(r->tree, "app;main;outer;helper");
  REQUIRE(n != cct::kNoNode);
  CHECK((r->tree.frame(n).flags & cct::kFrameInlined) != 0);
  CHECK(r->tree.str(r->tree.frame(n).module) == "/bin/app");
  CHECK((r->tree.frame(r->tree.parent(n)).flags & cct::kFrameInlined) == 0);
  CHECK(PerfPaths(r->tree, "cputime") == std::map<std::string, double>{{"app;main;outer;helper", 5000000}});
}

TEST_CASE("perf import: perf's other records are skipped") {
  // perf script --show-task-events --show-mmap-events (perf 6.1's layout).
  const std::string text =
      "         swapper     0     0.000000: PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1276f48) @ 0xffffffff81000000]: x [kernel.kallsyms]_text\n"
      "       perf-exec     0     0.000000: PERF_RECORD_COMM: perf-exec:14498/14498\n"
      "           split 14498 42260.551915: PERF_RECORD_MMAP2 14498/14498: [0x55580d539000(0x1000) @ 0x1000 fe:00 10960978 2217011796]: r-xp /tmp/split\n"
      "           split 14498 42260.552464: PERF_RECORD_FORK(14498:14500):(14498:14498)\n"
      "           split 14498 42260.558291:    1001001 cpu-clock:  ffffffff81bb87f3 _copy_to_user+0x3 ([kernel.kallsyms])\n"
      "           split 14500 42260.560290:    1001001 cpu-clock:      55580d5392e7 gamma_work+0x5c (/tmp/split)\n"
      "           split 14500 42260.561000: PERF_RECORD_EXIT(14500:14500):(14498:14498)\n";
  auto r = ParsePerf(text);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->records == 2);
  CHECK(PerfPaths(r->tree, "cputime") ==
        std::map<std::string, double>{{"split;_copy_to_user", 1001001}, {"split (thread 2);gamma_work", 1001001}});
}

TEST_CASE("perf import: cpu-clock and task-clock in one file are not added twice") {
  const std::string text =
      "p 1/1 1.0: 2000000  cpu-clock:      1000 f (/p)\n"
      "p 1/1 1.0: 2000000 task-clock:      1000 f (/p)\n"
      "p 1/1 1.1: 1000000 task-clock:      1000 f (/p)\n";
  auto r = ParsePerf(text);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(PerfPaths(r->tree, "cputime") == std::map<std::string, double>{{"p;f", 2000000}});
  CHECK(PerfPaths(r->tree, "task-clock") == std::map<std::string, double>{{"p;f", 3000000}});
  // An event named like a catalog metric is kept apart from it.
  auto named = ParsePerf("p 1/1 1.0: 5 samples:      1000 f (/p)\np 1/1 1.0: 6 cputime:      1000 f (/p)\n");
  REQUIRE_MESSAGE(named.ok(), named.status().message());
  CHECK(PerfPaths(named->tree, "samples") == std::map<std::string, double>{{"p;f", 2}});
  CHECK(PerfPaths(named->tree, "perf:samples") == std::map<std::string, double>{{"p;f", 5}});
  CHECK(PerfPaths(named->tree, "perf:cputime") == std::map<std::string, double>{{"p;f", 6}});
  CHECK(named->tree.metrics().Find("cputime") == cct::kNoMetric);
  const cct::MetricId tc = r->tree.metrics().Find("task-clock");
  REQUIRE(tc != cct::kNoMetric);
  CHECK(r->tree.metrics().Get(tc).unit == cct::Unit::kNanoseconds);
}

TEST_CASE("perf import: malformed lines name the line; --skip-bad-lines drops their samples") {
  const std::string good = "p 1 1.0: 10 cpu-clock:\n\t1 f (/p)\n\n";
  SUBCASE("a callchain line before any header") {
    auto r = ParsePerf("\t11cd work (/tmp/prog)\n\n" + good);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == cct::ErrorCode::kBadInput);
    CHECK(r.status().message().find("in.txt:1: a callchain line outside a sample") == 0);
  }
  SUBCASE("a callchain address that is not hex") {
    auto r = ParsePerf(good + "p 1 1.0: 10 cpu-clock:\n\tzz11 f (/p)\n\n");
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("in.txt:5: 'zz11' is not a callchain address") == 0);
  }
  SUBCASE("a header without a thread id") {
    auto r = ParsePerf(good + "hello world cpu-clock:\n");
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("in.txt:4: no thread id before the event") == 0);
  }
  SUBCASE("a line that is no part of perf script") {
    auto r = ParsePerf(good + "garbage\n");
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("in.txt:4: expected a sample's header") == 0);
  }
  SUBCASE("no samples") {
    auto r = ParsePerf("\n\n");
    REQUIRE(!r.ok());
    CHECK(r.status().message() == "in.txt: no perf samples in the input");
  }
  SUBCASE("skipped: the bad sample goes whole, the others stay") {
    const std::string text = good + "p 1 1.0: 20 cpu-clock:\n\t2 g (/p)\n\tnot-an-address\n\n" + "junk line\n\t3 h (/p)\n\n" + good;
    auto r = ParsePerf(text, /*skip=*/true);
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    CHECK(r->records == 2);
    CHECK(r->skipped == 2);
    CHECK(r->first_skip.find("in.txt:6:") == 0);
    CHECK(PerfPaths(r->tree, "cputime") == std::map<std::string, double>{{"p;f", 20}});
  }
}

TEST_CASE("perf import: cct-import refuses malformed input in one line with exit 2") {
  testutil::TempDir dir;
  const std::string db = dir / "p.db";
  testutil::WriteFileOrDie(dir / "bad.txt", "p 1 1.0: 10 cpu-clock:\n\t1 f (/p)\n\t(oops\n");
  auto r = interop::Import(db, {"--from", "perf", dir / "bad.txt"});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(testutil::LineCount(r.err) == 1);
  CHECK(r.err.find(dir / "bad.txt" + ":3: ") != std::string::npos);
  // --skip-bad-lines: the bad sample skipped, like folded's bad lines, even
  // when it was the only one.
  r = interop::Import(db, {"--from", "perf", "--skip-bad-lines", dir / "bad.txt"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("0 records") != std::string::npos);
  testutil::WriteFileOrDie(dir / "two.txt", "p 1 1.0: 10 cpu-clock:\n\t1 f (/p)\n\t(oops\n\np 1 2.0: 10 cpu-clock:\n\t1 f (/p)\n");
  r = interop::Import(db, {"--from", "perf", "--skip-bad-lines", dir / "two.txt"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("skipped 1 malformed record(s); first: " + dir / "two.txt" + ":3:") != std::string::npos);
  // --metric and --unit do not apply.
  r = interop::Import(db, {"--from", "perf", "--unit", "ns", dir / "two.txt"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--unit does not apply to --from perf") != std::string::npos);
  // A perf.data file (by its magic) with no perf on PATH: one line saying so.
  testutil::WriteFileOrDie(dir / "perf.data", std::string("PERFILE2") + std::string(200, '\0'));
  const std::string empty_bin = dir / "bin";
  REQUIRE(::mkdir(empty_bin.c_str(), 0700) == 0);
  r = interop::Tool("cct-import", db, {"--from", "perf", dir / "perf.data"}, {{"PATH", empty_bin}});
  CHECK(r.exit_code == 2);
  CHECK(testutil::LineCount(r.err) == 1);
  CHECK(r.err.find("needs perf") != std::string::npos);
  // With perf: its own complaint about the damaged file, in one line.
  if (!interop::FindProgram("perf").empty()) {
    r = interop::Import(db, {"--from", "perf", dir / "perf.data"});
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
    CHECK(r.err.find("perf script failed") != std::string::npos);
  }
}

// perf report --stdio --no-children --sort sym -n -g none: "PCT% SAMPLES [x] SYMBOL"
// rows, summed by symbol name (one name may be in several dsos).
struct PerfReportRow {
  double percent = 0;
  double samples = 0;
};

TEST_CASE("perf import: a real recording against perf report") {
  const std::string perf = interop::FindProgram("perf");
  if (perf.empty()) {
    MESSAGE("skipped: perf is not installed (Debian: linux-perf)");
    return;
  }
  testutil::TempDir dir;
  const std::string data = dir / "p.data";
  const std::string prog = testutil::BuildDir() + "/tests/collector/cct-test-variant";
  // -N: nothing written to the build-id cache in $HOME.
  auto rec = testutil::Run({perf, "record", "-q", "-N", "-e", "cpu-clock", "-g", "-F", "2000", "-o", data, "--", prog});
  if (rec.exit_code != 0) {
    MESSAGE((std::string("skipped: perf record cannot sample here (perf_event_paranoid?): ") + rec.err.substr(0, 200)));
    return;
  }
  auto script = testutil::Run({perf, "script", "-i", data});
  REQUIRE(script.exit_code == 0);
  testutil::WriteFileOrDie(dir / "p.txt", script.out);
  auto report = testutil::Run({perf, "report", "-i", data, "--stdio", "--no-children", "--sort", "sym", "-n", "-g", "none"});
  REQUIRE(report.exit_code == 0);
  std::map<std::string, PerfReportRow> rows;
  double report_samples = 0, event_count = 0;
  {
    std::istringstream in(report.out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.starts_with("# Event count (approx.): ")) event_count = std::stod(line.substr(25));
      if (line.empty() || line[0] == '#') continue;
      std::istringstream f(line);
      std::string pct, level, sym;
      double n = 0;
      if (!(f >> pct >> n >> level) || pct.empty() || pct.back() != '%') continue;
      std::getline(f, sym);
      sym = sym.substr(sym.find_first_not_of(' '));
      while (!sym.empty() && sym.back() == ' ') sym.pop_back();
      rows[sym].percent += std::stod(pct);
      rows[sym].samples += n;
      report_samples += n;
    }
  }
  REQUIRE(report_samples > 50);
  for (const std::string& file : {data, dir / "p.txt"}) {
    CAPTURE(file);
    auto r = importers::ImportPerf(file, {});
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    const cct::Tree& t = r->tree;
    CHECK(static_cast<double>(r->records) == report_samples);
    // Self samples and time by function name.
    const cct::MetricId samples = t.metrics().Find("samples"), cputime = t.metrics().Find("cputime");
    REQUIRE(cputime != cct::kNoMetric);
    std::map<std::string, double> self;
    double total_time = 0;
    for (cct::NodeId n = 1; n < t.size(); ++n) {
      total_time += t.Value(n, cputime);
      if (t.Value(n, samples) != 0) self[std::string(t.name(n))] += t.Value(n, samples);
    }
    CHECK(total_time == event_count);
    for (const auto& row : rows) {
      // perf report names symbol-less code by address; our names are dso+0xaddr.
      if (row.first.starts_with("0x")) continue;
      CAPTURE(row.first);
      CHECK(self[row.first] == row.second.samples);
      CHECK(std::abs(100.0 * self[row.first] / report_samples - row.second.percent) <= 0.011);
    }
    CHECK(self["steady_work"] > 0);
  }
}
