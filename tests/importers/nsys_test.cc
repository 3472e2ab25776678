// --from nsys: Nsight Systems SQLite exports. nsys itself runs only on a GPU
// machine, so the inputs here are FIXTURES written to NVIDIA's documented
// export schema (tests/data/nsys/basic.sql, loaded into a fresh .sqlite
// file), not files written by nsys. Expected values come from the fixture's
// construction (its comments) and, for totals, from SQL sums over the
// fixture's own tables (SQLite computing them, not the importer).
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "cct/node_values.h"
#include "importers/importer.h"
#include "importers/sqlite_db.h"
#include "tests/interop_util.h"

namespace {

const char* const kNsysMain = "python3";  // the main thread's name (ThreadNames)

std::string NsysFixtureSql() { return testutil::ReadFileOrDie(testutil::SourceDir() + "/tests/data/nsys/basic.sql"); }

// Writes the fixture (plus `extra` SQL run after it) to dir/name.
std::string NsysFixture(const testutil::TempDir& dir, const std::string& name, const std::string& extra = "") {
  const std::string path = dir / name;
  const cct::Status s = importers::SqliteDb::CreateFromScript(path, NsysFixtureSql() + extra);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return path;
}

// The node at the end of a path of names from the root; kNoNode if absent.
cct::NodeId NsysPath(const cct::Tree& t, const std::vector<std::string>& names) {
  cct::NodeId at = cct::kRootNode;
  for (const std::string& name : names) {
    cct::NodeId next = cct::kNoNode;
    for (cct::NodeId n = at + 1; n < t.size() && next == cct::kNoNode; ++n)
      if (t.parent(n) == at && t.name(n) == name) next = n;
    if (next == cct::kNoNode) return cct::kNoNode;
    at = next;
  }
  return at;
}

double NsysExclusive(const cct::Tree& t, cct::NodeId n, const char* metric) {
  const cct::MetricId m = t.metrics().Find(metric);
  REQUIRE_MESSAGE(m != cct::kNoMetric, metric);
  return t.Value(n, m);
}

// One number from an SQL query over the fixture: the second opinion.
double NsysSql(const std::string& db_path, const std::string& sql) {
  auto db = importers::SqliteDb::OpenReadOnly(db_path);
  REQUIRE(db.ok());
  auto q = (*db)->Prepare(sql);
  REQUIRE_MESSAGE(q.ok(), q.status().message());
  auto row = q->Step();
  REQUIRE((row.ok() && *row));
  return q->Real(0);
}

}  // namespace

TEST_CASE("nsys: the fixture's threads, NVTX ranges, launches and GPU work land where its construction says") {
  testutil::TempDir dir;
  const std::string file = NsysFixture(dir, "basic.sqlite");
  auto r = importers::ImportNsys(file, {});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const cct::Tree& t = r->tree;

  // Thread names from ThreadNames; ranges nest by time.
  const cct::NodeId step = NsysPath(t, {kNsysMain, "step"});
  const cct::NodeId forward = NsysPath(t, {kNsysMain, "step", "forward"});
  REQUIRE(step != cct::kNoNode);
  REQUIRE(forward != cct::kNoNode);
  CHECK(t.kind(step) == cct::FrameKind::kNvtx);
  CHECK(t.kind(NsysPath(t, {kNsysMain})) == cct::FrameKind::kThread);
  // step 1000..9000 holds its own time: 8000 minus forward's 3000.
  CHECK(NsysExclusive(t, step, "nvtx:time") == 5000);
  CHECK(NsysExclusive(t, forward, "nvtx:time") == 3000);
  CHECK(NsysExclusive(t, forward, "nvtx:marks") == 1);
  // Start/end ranges: one level under the thread, overlapping instances once.
  const cct::NodeId epoch = NsysPath(t, {kNsysMain, "epoch"});
  REQUIRE(epoch != cct::kNoNode);
  CHECK(NsysExclusive(t, epoch, "nvtx:time") == 9300);
  CHECK(NsysExclusive(t, epoch, "nvtx:count") == 2);

  // Two launches of gemm inside forward: one API node, one kernel node.
  const cct::NodeId gemm = NsysPath(t, {kNsysMain, "step", "forward", "cudaLaunchKernel", "<gpu kernel>",
                                        "void gemm<float>(float*, int)"});
  REQUIRE(gemm != cct::kNoNode);
  CHECK(t.kind(gemm) == cct::FrameKind::kKernel);
  CHECK(t.kind(t.parent(gemm)) == cct::FrameKind::kGpuOp);
  CHECK(NsysExclusive(t, gemm, "gker") == 400 + 200);
  CHECK(NsysExclusive(t, gemm, "gker:count") == 2);
  CHECK(NsysExclusive(t, gemm, "gker:blks_acc") == 4 * 2 + 8);
  CHECK(NsysExclusive(t, gemm, "gker:blk_thr_acc") == 128 + 256);
  CHECK(NsysExclusive(t, gemm, "gker:thr_reg_acc") == 64);
  CHECK(NsysExclusive(t, gemm, "gker:stmem_acc") == 2048);
  // The averages the collector registers with them.
  CHECK(t.metrics().Find("gker:blk_thr") != cct::kNoMetric);
  CHECK(t.metrics().Find("gpuop") != cct::kNoMetric);

  // The copy launched after forward ended is in step; its placeholder holds it.
  const cct::NodeId copy = NsysPath(t, {kNsysMain, "step", "cudaMemcpyAsync", "<gpu copyin>"});
  REQUIRE(copy != cct::kNoNode);
  CHECK(NsysExclusive(t, copy, "gxcopy") == 100);
  CHECK(NsysExclusive(t, copy, "gxcopy:h2d") == 4096);
  CHECK(NsysExclusive(t, copy, "gxcopy:count") == 1);
  // The memset launched before any push/pop range: under the thread.
  const cct::NodeId memset = NsysPath(t, {kNsysMain, "cudaMemsetAsync", "<gpu memset>"});
  REQUIRE(memset != cct::kNoNode);
  CHECK(NsysExclusive(t, memset, "gmset") == 50);
  CHECK(NsysExclusive(t, memset, "gmset:bytes") == 512);
  const cct::NodeId sync = NsysPath(t, {kNsysMain, "step", "cudaStreamSynchronize", "<gpu sync>"});
  REQUIRE(sync != cct::kNoNode);
  CHECK(NsysExclusive(t, sync, "gsync") == 300);
  CHECK(NsysExclusive(t, sync, "gsync:str") == 300);
  // A call that launched nothing makes no node.
  CHECK(NsysPath(t, {kNsysMain, "cudaGetDevice"}) == cct::kNoNode);

  // The launch with a backtrace: its frames between the range and the kernel,
  // the backtrace's leaf (the API function itself) not repeated; the domain
  // names the range.
  const cct::NodeId relu = NsysPath(t, {"loader", "mylib::io", "main", "launch_relu", "cudaLaunchKernel",
                                        "<gpu kernel>", "relu_kernel(float*)"});
  REQUIRE(relu != cct::kNoNode);
  CHECK(NsysExclusive(t, relu, "gker") == 50);
  CHECK(t.str(t.frame(t.parent(t.parent(t.parent(relu)))).module) == "libfoo.so");

  // GPU work whose call is not in the report.
  const cct::NodeId unknown_kernel = NsysPath(t, {"<gpu unknown>", "relu_kernel(float*)"});
  REQUIRE(unknown_kernel != cct::kNoNode);
  CHECK(NsysExclusive(t, unknown_kernel, "gker") == 10);
  const cct::NodeId unknown = NsysPath(t, {"<gpu unknown>"});
  CHECK(NsysExclusive(t, unknown, "gxcopy:d2h") == 2048);
  REQUIRE(r->notes.size() == 1);
  CHECK(r->notes[0].find("2 GPU operation(s) without their CUDA runtime call") != std::string::npos);

  // CPU samples under the range open at their time, stacks root first.
  CHECK(NsysExclusive(t, NsysPath(t, {kNsysMain, "step", "forward", "main", "sample_leaf"}), "samples") == 1);
  CHECK(NsysExclusive(t, NsysPath(t, {kNsysMain, "main"}), "samples") == 1);
  CHECK(NsysExclusive(t, NsysPath(t, {"loader", "mylib::io"}), "samples") == 1);
}

TEST_CASE("nsys: totals equal SQL sums over the export's own tables") {
  testutil::TempDir dir;
  const std::string file = NsysFixture(dir, "basic.sqlite");
  // Through cct-import and the store, as a user gets them.
  const std::string db = dir / "n.db";
  auto run = interop::Import(db, {"--from", "nsys", file});
  REQUIRE_MESSAGE(run.exit_code == 0, run.err);
  CHECK(run.out.find("as run 1") != std::string::npos);
  const cct::Tree t = interop::ReadRun(db, 1);
  cct::NodeValues v(t);
  auto total = [&](const char* metric) {
    const cct::MetricId m = t.metrics().Find(metric);
    REQUIRE_MESSAGE(m != cct::kNoMetric, metric);
    return v.Total(m);
  };
  CHECK(total("gker") == NsysSql(file, "SELECT SUM(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  CHECK(total("gker:count") == NsysSql(file, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  CHECK(total("gxcopy") == NsysSql(file, "SELECT SUM(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY"));
  CHECK(total("gxcopy:h2d") == NsysSql(file, "SELECT SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1"));
  CHECK(total("gxcopy:d2h") == NsysSql(file, "SELECT SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 2"));
  CHECK(total("gmset:bytes") == NsysSql(file, "SELECT SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET"));
  CHECK(total("gsync") == NsysSql(file, "SELECT SUM(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"));
  CHECK(total("samples") == NsysSql(file, "SELECT COUNT(*) FROM COMPOSITE_EVENTS"));
  CHECK(total("nvtx:count") == NsysSql(file, "SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)"));
  // gpuop (derived: the sum of the GPU times) agrees.
  CHECK(total("gpuop") == total("gker") + total("gxcopy") + total("gmset") + total("gsync"));
}

TEST_CASE("nsys: malformed exports are one line and exit 2") {
  testutil::TempDir dir;
  const std::string db = dir / "n.db";
  auto expect_error = [&](const std::string& file, const std::string& text) {
    auto r = interop::Import(db, {"--from", "nsys", file});
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
    CHECK_MESSAGE(r.err.find(text) != std::string::npos, r.err);
  };
  testutil::WriteFileOrDie(dir / "text.sqlite", "this is not a database, just some bytes long enough to be read\n");
  expect_error(dir / "text.sqlite", "not an SQLite database");
  expect_error(dir / "missing.sqlite", "no such file");
  const std::string other = dir / "other.sqlite";
  REQUIRE(importers::SqliteDb::CreateFromScript(other, "CREATE TABLE t (x INTEGER);").ok());
  expect_error(other, "without a StringIds table");
  const std::string empty = dir / "empty.sqlite";
  const char* only_strings = "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);";
  REQUIRE(importers::SqliteDb::CreateFromScript(empty, only_strings).ok());
  expect_error(empty, "without events");
  // A fifth kernel (rowid 5) naming a string that is not there; one ending
  // before it starts.
  const std::string dangling = NsysFixture(dir, "dangling.sqlite",
                                           "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 0, 1, 7, 1, "
                                           "1677721600, 999, 8, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 5);");
  expect_error(dangling, "CUPTI_ACTIVITY_KIND_KERNEL row 5: demangledName 999 is not in StringIds");
  const std::string backwards = NsysFixture(dir, "backwards.sqlite",
                                            "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid) "
                                            "VALUES (700, 600, 59, 'x', 1677721700);");
  expect_error(backwards, "NVTX_EVENTS row 8: end 600 is before start 700");

  // --skip-bad-lines drops the row, says so, and keeps the rest.
  auto r = interop::Import(db, {"--from", "nsys", "--skip-bad-lines", dangling});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("skipped 1 malformed record(s); first: " + dangling +
                   ": CUPTI_ACTIVITY_KIND_KERNEL row 5") != std::string::npos);
  CHECK(interop::Import(db, {"--from", "nsys", "--metric", "x", dangling}).exit_code == 2);
}

TEST_CASE("nsys: a table of another schema version is left out with a note, the rest imported") {
  testutil::TempDir dir;
  // The runtime table without nameId: launches cannot be named, so the GPU
  // work goes to <gpu unknown>; the NVTX ranges still import.
  const std::string file = NsysFixture(dir, "old.sqlite",
                                       "ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME DROP COLUMN nameId;"
                                       "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN gridX;");
  auto r = importers::ImportNsys(file, {});
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  const cct::Tree& t = r->tree;
  REQUIRE(r->notes.size() == 3);
  CHECK(r->notes[0].find("CUPTI_ACTIVITY_KIND_RUNTIME has no column nameid") != std::string::npos);
  CHECK(r->notes[1].find("no CUDA runtime calls") != std::string::npos);
  CHECK(r->notes[2].find("8 GPU operation(s)") != std::string::npos);
  CHECK(NsysPath(t, {kNsysMain, "step", "forward"}) != cct::kNoNode);
  const cct::NodeId gemm = NsysPath(t, {"<gpu unknown>", "void gemm<float>(float*, int)"});
  REQUIRE(gemm != cct::kNoNode);
  CHECK(NsysExclusive(t, gemm, "gker") == 600);
  // Without gridX the grid size is not summed (a made-up 1 would skew it);
  // the block size still is.
  const cct::MetricId blks = t.metrics().Find("gker:blks_acc");
  CHECK((blks == cct::kNoMetric || t.Value(gemm, blks) == 0));
  CHECK(NsysExclusive(t, gemm, "gker:blk_thr_acc") == 128 + 256);
}
