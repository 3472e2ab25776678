// HPCToolkit sparse databases (meta.db + profile.db, hpcprof 2022.10 on).
// HPCToolkit does not run here: the databases are fixtures written to the
// published format (hpctoolkit_sparse_writer.h, from HPCToolkit's
// FORMATS.md), not files written by hpcprof. The expected trees and totals
// come from the fixture's construction. A real database, when one is given
// by $CCT_HPCTOOLKIT_SPARSE_DB or lies in ../shared/data/hpctoolkit-sparse,
// is checked against the totals hpcprof itself stored (skipped otherwise).
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "importers/importer.h"
#include "tests/importers/hpctoolkit_sparse_writer.h"
#include "tests/interop_util.h"

namespace {

namespace hsf = hpcsparse_fixture;

// main (app.c) -> a statement, a loop with a call to compute (which inlines
// helper) on one of its lines, another statement; an unknown entry with an
// anonymous function. Metrics: CPUTIME (sec) with every scope, cycles with
// execution only (exclusive derived), and one with only the function scope
// (left out), samples with point only (taken as is).
hsf::Database SparseFixture() {
  hsf::Database db;
  db.functions = {{"main", "/bin/app", "app.c", 10, 0x100},
                  {"compute", "/bin/app", "compute.c", 3, 0x200},
                  {"helper", "/bin/app", "helper.h", 1, 0x300},
                  {"", "/lib/libx.so", "", 0, 0x1234}};
  auto ctx = [&](uint32_t id, uint32_t parent, uint8_t relation, uint8_t lexical, int fn, std::string file,
                 uint32_t line) {
    hsf::Context c;
    c.id = id, c.parent = parent, c.relation = relation, c.lexical = lexical, c.function = fn;
    c.file = std::move(file), c.line = line;
    db.contexts.push_back(c);
    return &db.contexts.back();
  };
  db.contexts.reserve(20);
  ctx(1, 0, 0, 0, -1, "", 0)->entry_kind = 1;      // main thread
  ctx(2, 1, 1, 0, 0, "", 0);                        // main
  ctx(3, 2, 0, 2, -1, "app.c", 12);                 //   app.c:12
  hsf::Context* ins = ctx(4, 3, 0, 3, -1, "", 0);    //     an instruction
  ins->module = "/bin/app", ins->offset = 0x140;
  ins->listed = false;                              //     (not in meta.db, as hpcprof writes)
  ctx(5, 2, 0, 1, -1, "app.c", 14);                 //   loop at app.c:14
  ctx(6, 5, 0, 2, -1, "app.c", 15);                 //     app.c:15 (the call)
  hsf::Context* call = ctx(7, 6, 0, 3, -1, "", 0);   //       the call instruction
  call->module = "/bin/app", call->offset = 0x15c;
  ctx(8, 7, 1, 0, 1, "", 0);                        //         compute
  ctx(9, 8, 0, 2, -1, "compute.c", 5);              //           compute.c:5
  ctx(10, 9, 2, 0, 2, "", 0);                       //           [inlined] helper
  ctx(11, 10, 0, 2, -1, "helper.h", 2);             //             helper.h:2
  ctx(12, 5, 0, 2, -1, "app.c", 16);                //     app.c:16
  ctx(13, 0, 0, 0, -1, "", 0)->entry_kind = 0;      // unknown entry
  ctx(14, 13, 1, 0, 3, "", 0);                      //   <unknown procedure 0x1234>
  db.metrics = {{"CPUTIME (sec)", true, true, true},
                {"cycles", false, true, true},
                {"function only", false, true, false},
                {"samples", true, false, false}};
  // rank 0: two threads; rank 1: one thread on a node; a GPU stream of rank 0.
  db.profiles.resize(4);
  db.profiles[0].ids = {{"RANK", 0}, {"THREAD", 0}};
  db.profiles[1].ids = {{"RANK", 0}, {"THREAD", 1}};
  db.profiles[2].ids = {{"NODE", 7}, {"RANK", 1}, {"THREAD", 0}};
  db.profiles[3].ids = {{"RANK", 0}, {"GPUCONTEXT", 0}, {"GPUSTREAM", 7}};
  for (size_t p = 0; p < db.profiles.size(); ++p) {
    const double k = static_cast<double>(p + 1);
    auto& pt = db.profiles[p].point;
    pt[4] = {{0, 1.0 * k}, {1, 100.0 * k}, {2, 5.0}};  // the instruction of app.c:12
    pt[3] = {{0, 0.5 * k}};                            // app.c:12 itself
    pt[6] = {{0, 0.25 * k}, {1, 25.0 * k}};
    pt[9] = {{0, 2.0 * k}, {1, 200.0 * k}};
    pt[11] = {{0, 4.0 * k}, {1, 400.0 * k}, {3, 3.0}};
    pt[12] = {{0, 8.0 * k}};
    pt[14] = {{0, 16.0 * k}, {1, 1600.0 * k}};
  }
  return db;
}

// What hpcprof itself stored as each metric's total: the execution-scope
// values of the global context (context 0) in cct.db, summed over the
// profiles (cct.db has no summary profile), by metric name. Read here with
// a few unchecked lines, apart from the importer (which reads profile.db).
std::map<std::string, double> CctDbTotals(const std::string& dir) {
  const std::string meta = testutil::ReadFileOrDie(dir + "/meta.db");
  const std::string cct = testutil::ReadFileOrDie(dir + "/cct.db");
  auto u = [](const std::string& d, uint64_t at, size_t n) {
    uint64_t v = 0;
    REQUIRE(at + n <= d.size());
    std::memcpy(&v, d.data() + at, n);
    return v;
  };
  std::map<uint64_t, std::string> exec_ids;  // execution propMetricId -> name
  const uint64_t ms = u(meta, 0x38, 8);
  const uint64_t p_metrics = u(meta, ms, 8), n_metrics = u(meta, ms + 8, 4);
  const uint64_t sz_metric = u(meta, ms + 12, 1), sz_inst = u(meta, ms + 13, 1);
  for (uint64_t m = 0; m < n_metrics; ++m) {
    const uint64_t md = p_metrics + m * sz_metric;
    const std::string name(meta.data() + u(meta, md, 8));
    for (uint64_t k = 0; k < u(meta, md + 0x18, 2); ++k) {
      const uint64_t inst = u(meta, md + 8, 8) + k * sz_inst;
      if (u(meta, u(meta, inst, 8) + 8, 1) == 2) exec_ids[u(meta, inst + 8, 2)] = name;
    }
  }
  std::map<std::string, double> totals;
  const uint64_t ci = u(cct, 0x18, 8);
  const uint64_t global = u(cct, ci, 8);  // (*pCtxs)[0]
  const uint64_t n_values = u(cct, global, 8), p_values = u(cct, global + 8, 8);
  const uint64_t n_idx = u(cct, global + 16, 2), p_idx = u(cct, global + 24, 8);
  for (uint64_t k = 0; k < n_idx; ++k) {
    const uint64_t id = u(cct, p_idx + 10 * k, 2), start = u(cct, p_idx + 10 * k + 2, 8);
    const uint64_t end = k + 1 < n_idx ? u(cct, p_idx + 10 * (k + 1) + 2, 8) : n_values;
    if (!exec_ids.count(id)) continue;
    for (uint64_t i = start; i < end; ++i) {
      double v = 0;
      std::memcpy(&v, cct.data() + p_values + 12 * i + 4, 8);
      totals[exec_ids.at(id)] += v;
    }
  }
  return totals;
}

// The node at `path` (names from the root), or kNoNode.
cct::NodeId SparseNodeAt(const cct::Tree& t, const std::vector<std::string>& path) {
  cct::NodeId n = cct::kRootNode;
  for (const std::string& name : path) {
    cct::NodeId found = cct::kNoNode;
    for (cct::NodeId c = 1; c < t.size() && found == cct::kNoNode; ++c)
      if (t.parent(c) == n && t.name(c) == name) found = c;
    if (found == cct::kNoNode) return cct::kNoNode;
    n = found;
  }
  return n;
}

}  // namespace

TEST_CASE("hpctoolkit sparse: a fixture database imports with the tree and values it was written with") {
  const hsf::Database fixture = SparseFixture();
  testutil::TempDir dir;
  const std::string dbdir = dir / "hpctoolkit-database";
  std::filesystem::create_directories(dbdir);
  hsf::WriteDatabase(dbdir, fixture);

  auto r = importers::ImportHpctoolkit(dbdir, importers::ImportOptions{});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const cct::Tree& t = r->tree;
  CHECK(r->records == 4);  // the summary profile is not a thread
  const cct::MetricId cpu = t.metrics().Find("CPUTIME (sec)");
  const cct::MetricId cycles = t.metrics().Find("cycles");
  REQUIRE(cpu != cct::kNoMetric);
  REQUIRE(cycles != cct::kNoMetric);
  CHECK(t.metrics().Find("function only") == cct::kNoMetric);
  cct::NodeValues v(t);

  // Thread nodes: rank 0 has several profiles, so labels carry the thread;
  // the GPU stream has no thread id.
  std::set<std::string> threads;
  for (cct::NodeId n = 1; n < t.size(); ++n)
    if (t.parent(n) == cct::kRootNode) {
      CHECK(t.kind(n) == cct::FrameKind::kThread);
      threads.insert(std::string(t.name(n)));
    }
  CHECK(threads == std::set<std::string>{"rank 0 thread 0", "rank 0 thread 1", "rank 1 thread 0",
                                         "rank 0 gpucontext 0 gpustream 7"});

  // Per profile: the sum of its chosen point values is its thread's inclusive value.
  const std::vector<std::string> labels{"rank 0 thread 0", "rank 0 thread 1", "rank 1 thread 0",
                                        "rank 0 gpucontext 0 gpustream 7"};
  double all_cpu = 0, all_cycles = 0;
  for (size_t p = 0; p < labels.size(); ++p) {
    CAPTURE(labels[p]);
    double cpu_sum = 0, cycles_sum = 0;
    for (const auto& cv : fixture.profiles[p].point) {
      if (cv.second.count(0)) cpu_sum += cv.second.at(0);
      if (cv.second.count(1)) cycles_sum += cv.second.at(1);
    }
    all_cpu += cpu_sum, all_cycles += cycles_sum;
    const cct::NodeId th = SparseNodeAt(t, {labels[p]});
    REQUIRE(th != cct::kNoNode);
    CHECK(v.Inclusive(cpu)[th] == doctest::Approx(cpu_sum));
    CHECK(v.Inclusive(cycles)[th] == doctest::Approx(cycles_sum));
    const double k = static_cast<double>(p + 1);
    // The shape: the call's line adds no node (compute sits in the loop),
    // instructions add none (their values go to their line).
    const std::string L = labels[p];
    const cct::NodeId line12 = SparseNodeAt(t, {L, "main", "app.c:12"});
    const cct::NodeId loop = SparseNodeAt(t, {L, "main", "loop at app.c:14"});
    const cct::NodeId compute = SparseNodeAt(t, {L, "main", "loop at app.c:14", "compute"});
    const cct::NodeId helper = SparseNodeAt(t, {L, "main", "loop at app.c:14", "compute", "helper"});
    const cct::NodeId hline = SparseNodeAt(t, {L, "main", "loop at app.c:14", "compute", "helper", "helper.h:2"});
    const cct::NodeId unknown = SparseNodeAt(t, {L, std::string(cct::kPartialCallPathName), "<unknown procedure 0x1234>"});
    REQUIRE(line12 != cct::kNoNode);
    REQUIRE(loop != cct::kNoNode);
    REQUIRE(compute != cct::kNoNode);
    REQUIRE(helper != cct::kNoNode);
    REQUIRE(hline != cct::kNoNode);
    REQUIRE(unknown != cct::kNoNode);
    CHECK(v.Exclusive(cpu)[line12] == doctest::Approx(1.5 * k));
    CHECK(v.Exclusive(cycles)[line12] == doctest::Approx(100.0 * k));
    CHECK(v.Exclusive(cpu)[SparseNodeAt(t, {L, "main", "loop at app.c:14", "app.c:15"})] == doctest::Approx(0.25 * k));
    CHECK(v.Inclusive(cpu)[loop] == doctest::Approx((0.25 + 2 + 4 + 8) * k));
    CHECK(v.Inclusive(cycles)[compute] == doctest::Approx(600.0 * k));
    CHECK(v.Exclusive(cycles)[compute] == doctest::Approx(0.0));
    CHECK(v.Exclusive(cpu)[hline] == doctest::Approx(4.0 * k));
    CHECK(v.Exclusive(t.metrics().Find("samples"))[hline] == doctest::Approx(3.0));
    CHECK(v.Inclusive(t.metrics().Find("samples"))[th] == doctest::Approx(3.0));
    CHECK(v.Inclusive(cpu)[SparseNodeAt(t, {L, "main"})] == doctest::Approx((1.5 + 0.25 + 2 + 4 + 8) * k));
    CHECK(v.Exclusive(cycles)[unknown] == doctest::Approx(1600.0 * k));
    // Frames: the function's module, file and definition line; inlined flag.
    const cct::Frame cf = t.frame(compute);
    CHECK(t.str(cf.module) == "/bin/app");
    CHECK(t.str(cf.file) == "compute.c");
    CHECK(cf.line == 3);
    CHECK((t.frame(helper).flags & cct::kFrameInlined) != 0);
    CHECK((cf.flags & cct::kFrameInlined) == 0);
    CHECK(t.kind(loop) == cct::FrameKind::kLoop);
    CHECK(t.kind(line12) == cct::FrameKind::kLine);
    CHECK(t.str(t.frame(unknown).module) == "/lib/libx.so");
  }
  CHECK(v.Total(cpu) == doctest::Approx(all_cpu));
  CHECK(v.Total(cycles) == doctest::Approx(all_cycles));
  // The writer's cct.db says the same (checks the reader of it below).
  const std::map<std::string, double> stored_totals = CctDbTotals(dbdir);
  CHECK(stored_totals.at("CPUTIME (sec)") == doctest::Approx(all_cpu));
  CHECK(stored_totals.at("cycles") == doctest::Approx(all_cycles));

  // Through cct-import, with --metric/--unit converting seconds.
  const std::string db = dir / "h.db";
  auto imp = interop::Import(db, {"--from", "hpctoolkit", dbdir, "--metric", "CPUTIME (sec)", "--unit", "s"});
  REQUIRE_MESSAGE(imp.exit_code == 0, imp.err);
  CHECK(imp.out.find("4 records") != std::string::npos);
  const cct::Tree stored = interop::ReadRun(db, 1);
  const cct::MetricId scpu = stored.metrics().Find("CPUTIME (sec)");
  CHECK(stored.metrics().Get(scpu).unit == cct::Unit::kNanoseconds);
  CHECK(cct::NodeValues(stored).Total(scpu) == doctest::Approx(all_cpu * 1e9));
}

TEST_CASE("hpctoolkit sparse: damaged files are one error naming the file and the byte, exit 2") {
  const hsf::Database fixture = SparseFixture();
  const std::string meta = hsf::MetaDb(fixture), prof = hsf::ProfileDb(fixture);
  testutil::TempDir dir;
  int n = 0;
  // Each cut of either file, at a spread of offsets, and each byte of the
  // headers and the first context set to 0xff: an error or a tree, never a
  // crash (the sanitizer build runs this too).
  auto try_db = [&](const std::string& m, const std::string& p) {
    const std::string d = dir / std::to_string(n++);
    std::filesystem::create_directories(d);
    hsf::WriteFile(d + "/meta.db", m);
    hsf::WriteFile(d + "/profile.db", p);
    auto r = importers::ImportHpctoolkit(d, importers::ImportOptions{});
    if (!r.ok()) {
      CHECK(r.status().code() == cct::ErrorCode::kBadInput);
      CHECK(r.status().message().find(d + "/") == 0);
      CHECK(r.status().message().find('\n') == std::string::npos);
    }
    return r.ok();
  };
  for (size_t cut = 0; cut < meta.size(); cut += 1 + meta.size() / 40) CHECK(!try_db(meta.substr(0, cut), prof));
  for (size_t cut = 0; cut < prof.size(); cut += 1 + prof.size() / 40) CHECK(!try_db(meta, prof.substr(0, cut)));
  for (size_t i = 0; i < 0x90 + 0x100 && i < meta.size(); i += 3) {
    std::string m = meta;
    m[i] = '\xff';
    try_db(m, prof);
  }
  // A count that would need a huge allocation: nValues of the first
  // thread profile (profile 1 of the profile infos) set to 2^60.
  std::string huge = prof;
  uint64_t infos = 0;
  std::memcpy(&infos, prof.data() + 0x18, 8);
  uint64_t profiles = 0;
  std::memcpy(&profiles, prof.data() + infos, 8);
  const uint64_t big = uint64_t{1} << 60;
  std::memcpy(&huge[profiles + 48], &big, 8);
  const std::string d = dir / "huge";
  std::filesystem::create_directories(d);
  hsf::WriteFile(d + "/meta.db", meta);
  hsf::WriteFile(d + "/profile.db", huge);
  const std::string db = dir / "h.db";
  auto r = interop::Import(db, {"--from", "hpctoolkit", d});
  CHECK(r.exit_code == 2);
  CHECK(testutil::LineCount(r.err) == 1);
  CHECK(r.err.find(d + "/profile.db: at byte " + std::to_string(profiles + 48)) != std::string::npos);
  CHECK(r.err.find("runs past the end of the file") != std::string::npos);

  // --skip-bad-lines skips that profile whole and imports the other three
  // thread profiles of the fixture.
  importers::ImportOptions skip;
  skip.skip_bad_lines = true;
  auto skipped = importers::ImportHpctoolkit(d, skip);
  REQUIRE(skipped.ok());
  CHECK(skipped->skipped == 1);
  CHECK(skipped->records == fixture.profiles.size() - 1);
  CHECK(skipped->first_skip.find(d + "/profile.db: at byte " + std::to_string(profiles + 48)) == 0);
  size_t threads = 0;
  for (cct::NodeId id = 1; id < skipped->tree.size(); ++id)
    threads += skipped->tree.parent(id) == cct::kRootNode && skipped->tree.kind(id) == cct::FrameKind::kThread;
  CHECK(threads == fixture.profiles.size() - 1);
  auto tool = interop::Import(dir / "s.db", {"--from", "hpctoolkit", "--skip-bad-lines", d});
  CHECK(tool.exit_code == 0);
  CHECK(tool.err.find("skipped 1 malformed record(s)") != std::string::npos);
  // On a terminal the import shows its progress line (over profiles).
  if (const std::string script = interop::FindProgram("script"); !script.empty()) {
    const std::string cmd = testutil::Tool("cct-import") + " -d " + (dir / "t.db") +
                            " --from hpctoolkit --skip-bad-lines " + d;
    auto tty = testutil::Run({script, "-qec", cmd, "/dev/null"}, {{"CCT_PROGRESS_DELAY_MS", "0"}});
    CHECK(tty.out.find("importing " + d) != std::string::npos);
  }
}

TEST_CASE("hpctoolkit sparse: a real database's thread totals are the ones hpcprof stored in cct.db") {
  const char* env = std::getenv("CCT_HPCTOOLKIT_SPARSE_DB");
  const std::string dbdir = env ? env : testutil::SharedData("hpctoolkit-sparse");
  if (!std::filesystem::exists(dbdir + "/meta.db")) {
    MESSAGE("SKIPPED: no real HPCToolkit sparse database at " << dbdir);
    return;
  }
  auto r = importers::ImportHpctoolkit(dbdir, importers::ImportOptions{});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->records >= 1);
  const cct::Tree& t = r->tree;
  cct::NodeValues v(t);
  const std::map<std::string, double> totals = CctDbTotals(dbdir);
  REQUIRE(!totals.empty());
  for (const auto& nt : totals) {
    CAPTURE(nt.first);
    const cct::MetricId m = t.metrics().Find(nt.first);
    REQUIRE(m != cct::kNoMetric);
    CHECK(v.Total(m) == doctest::Approx(nt.second).epsilon(1e-9));
  }
}
