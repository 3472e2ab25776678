// cct-import --from pprof. Three sources of input, each named where used:
// - our own export (cct-query export --to pprof): a collector-like tree
//   exported and imported back must be the same tree with the same values;
// - Go's runtime/pprof, the real producer: tests/importers/pprof_gen (built
//   here at test time, cached in the build directory) writes a heap and a
//   CPU profile; their per-function totals must be those `go tool pprof
//   -top` reports; `go tool pprof -proto` re-encodes our export with Go's
//   own encoder, which must import the same as ours;
// - hand-encoded profile.proto bytes (the published schema's field
//   numbers) for malformed input.
// The Go parts skip when `go` is not installed.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cct/tree_ops.h"
#include "exporters/exporter.h"
#include "importers/importer.h"
#include "query/profile.h"
#include "tests/interop_util.h"

namespace {

using cct::FrameKind;

constexpr double kPprofMs = 1e6;  // ns

// A tree as cct-record builds it: two threads, functions with modules,
// declaration files and lines, an inlined function, source-line leaves,
// recursion, NVTX, a kernel launch and a copy, a partial call path.
cct::Tree PprofImportFixture() {
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  const cct::MetricId gker = *t.metrics().RegisterStandard("gker");
  const cct::MetricId count = *t.metrics().RegisterStandard("gker:count");
  const cct::MetricId h2d = *t.metrics().RegisterStandard("gxcopy:h2d");
  auto fn = [&](cct::NodeId parent, const std::string& name, const std::string& module, const std::string& file,
                uint32_t line, uint8_t flags = 0) {
    return t.InternChild(parent, t.InternFrame(FrameKind::kFunction, name, module, file, line, flags));
  };
  auto src = [&](cct::NodeId parent, const std::string& module, const std::string& file, uint32_t line) {
    return t.InternChild(parent, t.InternFrame(FrameKind::kLine, cct::LineName(file, line), module, file, line));
  };
  auto other = [&](cct::NodeId parent, FrameKind k, const std::string& name) {
    return t.InternChild(parent, t.InternFrame(k, name));
  };
  const std::string app = "/opt/app/bin/app", lib = "/opt/app/lib/libwork.so.1";
  const cct::NodeId main_thread = other(cct::kRootNode, FrameKind::kThread, "main");
  const cct::NodeId main = fn(main_thread, "main", app, "/src/app.cc", 10);
  t.AddValue(main, cpu, 10 * kPprofMs);
  const cct::NodeId compute = fn(main, "compute(int)", app, "/src/app.cc", 20);
  t.AddValue(compute, cpu, 5 * kPprofMs);
  t.AddValue(src(compute, app, "/src/app.cc", 25), cpu, 20 * kPprofMs);
  const cct::NodeId helper = fn(compute, "inl_helper", app, "/src/helper.h", 5, cct::kFrameInlined);
  t.AddValue(src(helper, app, "/src/helper.h", 7), cpu, 30 * kPprofMs);
  t.AddValue(fn(helper, "deeper", lib, "/src/deep.c", 1), cpu, 7 * kPprofMs);
  cct::NodeId r = main;
  for (int i = 0; i < 3; ++i) {
    r = fn(r, "recurse", app, "/src/app.cc", 50);
    t.AddValue(r, cpu, 1 * kPprofMs);
  }
  const cct::NodeId step = other(main, FrameKind::kNvtx, "step");
  const cct::NodeId launch = fn(step, "launch", app, "/src/app.cc", 60);
  t.AddValue(launch, cpu, 3 * kPprofMs);
  const cct::NodeId k1 = other(other(launch, FrameKind::kGpuOp, "<gpu kernel>"), FrameKind::kKernel, "k1");
  t.AddValue(k1, gker, 100 * kPprofMs);
  t.AddValue(k1, count, 4);
  t.AddValue(other(launch, FrameKind::kGpuOp, "<gpu copyin>"), h2d, 4096);
  const cct::NodeId worker = other(cct::kRootNode, FrameKind::kThread, "worker 2");
  t.AddValue(fn(worker, "worker_fn", lib, "/src/work.c", 3), cpu, 40 * kPprofMs);
  t.AddValue(other(worker, FrameKind::kUnknown, "<partial call path>"), cpu, 2 * kPprofMs);
  return t;
}

// Every frame field along the path, so a lost module, file, declaration
// line, kind or inlining flag shows.
std::string PprofFullPath(const cct::Tree& t, cct::NodeId n) {
  std::string path;
  for (; n != cct::kRootNode; n = t.parent(n)) {
    const cct::Frame f = t.frame(n);
    path = std::string(cct::FrameKindName(f.kind)) + "|" + std::to_string(f.flags) + "|" + std::string(t.str(f.name)) +
           "|" + std::string(t.str(f.module)) + "|" + std::string(t.str(f.file)) + "|" + std::to_string(f.line) +
           "\n" + path;
  }
  return path;
}

// (path, metric) -> exclusive value, for every nonzero value.
std::map<std::pair<std::string, std::string>, double> PprofValues(const cct::Tree& t) {
  std::map<std::pair<std::string, std::string>, double> out;
  for (cct::MetricId m = 0; m < t.metrics().size(); ++m) {
    if (t.metrics().Get(m).kind != cct::MetricKind::kAdditive) continue;
    t.column(m).ForEach([&](cct::NodeId n, double v) {
      if (v != 0) out[{PprofFullPath(t, n), t.metrics().Get(m).name}] += v;
    });
  }
  return out;
}

// A profile.proto encoder for hand-made (and malformed) inputs, written
// from the schema's field numbers, independent of libprotobuf.
struct PprofPbWriter {
  std::string b;
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      b.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    b.push_back(static_cast<char>(v));
  }
  PprofPbWriter& Int(int field, uint64_t v) {
    Varint(static_cast<uint64_t>(field) << 3);
    Varint(v);
    return *this;
  }
  PprofPbWriter& Bytes(int field, std::string_view s) {
    Varint((static_cast<uint64_t>(field) << 3) | 2);
    Varint(s.size());
    b.append(s);
    return *this;
  }
  PprofPbWriter& Msg(int field, const PprofPbWriter& m) { return Bytes(field, m.b); }
};

// Profile: strings "", "cpu", "nanoseconds", "f", "f.go", "thread", "t1";
// sample type cpu/nanoseconds; function 1 f in f.go; location 1 -> f:12;
// one sample of `value` at `location` with a thread label.
std::string HandMadeProfile(uint64_t location, uint64_t function_name = 3, uint64_t line_function = 1,
                            int values = 1) {
  PprofPbWriter p;
  p.Msg(1, PprofPbWriter().Int(1, 1).Int(2, 2));
  PprofPbWriter sample;
  sample.Int(1, location);
  for (int i = 0; i < values; ++i) sample.Int(2, 5);
  sample.Msg(3, PprofPbWriter().Int(1, 5).Int(2, 6));
  p.Msg(2, sample);
  p.Msg(4, PprofPbWriter().Int(1, 1).Msg(4, PprofPbWriter().Int(1, line_function).Int(2, 12)));
  p.Msg(5, PprofPbWriter().Int(1, 1).Int(2, function_name).Int(4, 4).Int(5, 10));
  for (const char* s : {"", "cpu", "nanoseconds", "f", "f.go", "thread", "t1"}) p.Bytes(6, s);
  return p.b;
}

std::string PprofGzip(const std::string& raw) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, raw.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

store::RunMeta PprofFixtureMeta() {
  store::RunMeta meta;
  meta.name = "pprof-roundtrip";
  meta.state = store::RunState::kComplete;
  meta.source = "test";
  meta.executable = "/opt/app/bin/app";
  meta.executable_build_id = "0123456789abcdef";
  meta.modules = {{"/opt/app/bin/app", "0123456789abcdef"}, {"/opt/app/lib/libwork.so.1", "fedcba9876543210"}};
  return meta;
}

// The imported run's id, from cct-import's summary line.
store::RunId PprofImportedRunId(const std::string& summary) {
  const size_t at = summary.find(" as run ");
  REQUIRE(at != std::string::npos);
  return static_cast<store::RunId>(std::stoul(summary.substr(at + 8)));
}

}  // namespace

TEST_CASE("pprof import: our export reads back as the same tree, values and units") {
  query::Profile profile;
  profile.tree = PprofImportFixture();
  profile.runs = {PprofFixtureMeta()};
  std::ostringstream out;
  REQUIRE(exporters::WritePprof(profile, {}, out, nullptr).ok());
  auto imported = importers::ImportPprofBytes(out.str(), "export.pb.gz", {});
  REQUIRE_MESSAGE(imported.ok(), imported.status().message());
  const cct::Tree& back = imported->tree;

  const auto want = PprofValues(profile.tree), got = PprofValues(back);
  CHECK(got.size() == want.size());
  for (const auto& entry : want) {
    const std::string path = entry.first.first, metric = entry.first.second;
    CAPTURE(path);
    CAPTURE(metric);
    REQUIRE(got.count(entry.first));
    CHECK(got.at(entry.first) == doctest::Approx(entry.second));
  }
  // Same metrics in the same units (gxcopy:h2d in bytes, gker:count a count).
  for (cct::MetricId m = 0; m < profile.tree.metrics().size(); ++m) {
    const cct::MetricDesc& d = profile.tree.metrics().Get(m);
    const cct::MetricId id = back.metrics().Find(d.name);
    REQUIRE_MESSAGE(id != cct::kNoMetric, d.name);
    CHECK(back.metrics().Get(id).unit == d.unit);
  }
  // One record per node with a value: 13 in the fixture.
  CHECK(imported->records == 13);
}

TEST_CASE("pprof import: malformed profiles are one clear error each") {
  auto err = [](const std::string& bytes, size_t limit = importers::kMaxPprofBytes) {
    auto r = importers::ImportPprofBytes(bytes, "in.pb", {}, limit);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == cct::ErrorCode::kBadInput);
    CHECK(r.status().message().find('\n') == std::string::npos);
    return r.status().message();
  };
  // The hand-made profile itself is fine: f at f.go:12 under thread t1.
  auto good = importers::ImportPprofBytes(HandMadeProfile(1), "in.pb", {});
  REQUIRE_MESSAGE(good.ok(), good.status().message());
  {
    const cct::Tree& t = good->tree;
    REQUIRE(t.size() == 4);  // root, thread t1, f, f.go:12
    CHECK(t.kind(1) == FrameKind::kThread);
    CHECK(t.name(1) == "t1");
    CHECK(t.name(2) == "f");
    CHECK(t.frame(2).line == 10);
    CHECK(t.kind(3) == FrameKind::kLine);
    CHECK(t.frame(3).line == 12);
    CHECK(t.Value(3, t.metrics().Find("cputime")) == 5);
  }
  CHECK(err("") .find("string table is empty") != std::string::npos);
  CHECK(err("hello, not a profile").find("in.pb: not a pprof profile") == 0);
  CHECK(err(HandMadeProfile(7)) == "in.pb: sample 0: location id 7 does not exist");
  CHECK(err(HandMadeProfile(1, 3, 9)) == "in.pb: location 1: function id 9 does not exist");
  CHECK(err(HandMadeProfile(1, 99)) ==
        "in.pb: function 1's name is string 99, outside the string table (7 strings)");
  CHECK(err(HandMadeProfile(1, 3, 1, 2)) == "in.pb: sample 0 has 2 values for 1 sample types");
  // gzip: damaged, cut short, and one that decompresses past the limit.
  const std::string gz = PprofGzip(HandMadeProfile(1));
  CHECK(importers::ImportPprofBytes(gz, "in.pb", {}).ok());
  CHECK(err(gz.substr(0, gz.size() / 2)).find("cut short") != std::string::npos);
  std::string damaged = gz;
  damaged[12] = static_cast<char>(0xff);
  damaged[13] = static_cast<char>(0xff);
  CHECK(err(damaged).find("in.pb:") == 0);
  // A valid message too big: one string_table entry (field 6, length-
  // delimited: key 0x32) of 3 MiB. Zeros would not do: the parser stops at
  // the first byte that is not protobuf, before any limit.
  std::string big = "\x32";
  for (uint64_t n = 3 << 20; ; n >>= 7) {
    big += static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
    if (n < 0x80) break;
  }
  big += std::string(3 << 20, 'x');
  CHECK(err(PprofGzip(big), size_t{1} << 20) ==
        "in.pb: decompresses to more than 1 MiB, the most a pprof profile may hold here");
  CHECK(err(big, size_t{1} << 20) == "in.pb: holds more than 1 MiB, the most a pprof profile may hold here");
  // A gzip bomb of zeros is refused at its first decompressed bytes.
  CHECK(err(PprofGzip(std::string(3 << 20, '\0')), size_t{1} << 20).find("in.pb: not a pprof profile") == 0);

  // --skip-bad-lines skips bad samples, keeping the good ones.
  importers::ImportOptions skip;
  skip.skip_bad_lines = true;
  auto skipped = importers::ImportPprofBytes(HandMadeProfile(7), "in.pb", skip);
  REQUIRE(skipped.ok());
  CHECK(skipped->skipped == 1);
  CHECK(skipped->first_skip == "in.pb: sample 0: location id 7 does not exist");

  // The tool: one line on stderr, exit 2.
  testutil::TempDir dir;
  testutil::WriteFileOrDie(dir / "bad.pb.gz", gz.substr(0, gz.size() / 2));
  auto r = interop::Import(dir / "x.db", {"--from", "pprof", dir / "bad.pb.gz"});
  CHECK(r.exit_code == 2);
  CHECK(testutil::LineCount(r.err) == 1);
  CHECK(r.err.find("bad.pb.gz: the gzip stream is cut short") != std::string::npos);
  auto opt = interop::Import(dir / "x.db", {"--from", "pprof", "--metric", "cputime", dir / "bad.pb.gz"});
  CHECK(opt.exit_code == 2);
  CHECK(opt.err.find("--metric does not apply to --from pprof") != std::string::npos);
}

TEST_CASE("pprof import: Go's runtime/pprof profiles import with go tool pprof's totals") {
  const std::string go = interop::FindProgram("go");
  if (go.empty()) {
    MESSAGE("SKIPPED: `go` is not installed (Debian golang-go; scripts/install-deps.sh)");
    return;
  }
  testutil::TempDir dir;
  // The producer, built once per build directory (a second run reuses it).
  const std::string gen_src = testutil::SourceDir() + "/tests/importers/pprof_gen/main.go";
  const std::string gen_dir = testutil::BuildDir() + "/tests/pprof_gen";
  const std::string gen = gen_dir + "/pprof_gen";
  std::error_code ec;
  if (!std::filesystem::exists(gen) ||
      std::filesystem::last_write_time(gen, ec) < std::filesystem::last_write_time(gen_src, ec)) {
    std::filesystem::create_directories(gen_dir);
    auto env = interop::GoEnv(gen_dir);
    env.erase("GOFLAGS");
    env["GO111MODULE"] = "off";  // one file, standard library only: no module, no network
    auto built = testutil::Run({go, "build", "-o", gen, gen_src}, env);
    REQUIRE_MESSAGE(built.exit_code == 0, built.err);
  }
  auto ran = testutil::Run({gen, dir / "heap.pb.gz", dir / "cpu.pb.gz"});
  REQUIRE_MESSAGE(ran.exit_code == 0, ran.err);

  const std::string db = dir / "go.db";
  auto top = [&](const std::string& file, const std::string& index, const std::string& unit, double* total,
                 const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {go, "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=100000",
                                     "-unit=" + unit, "-sample_index=" + index};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(file);
    auto r = testutil::Run(argv, interop::GoEnv(dir.path()));
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return interop::ParsePprofTop(r.out, total);
  };
  // Ours: cct-query top --by function; JSON values in stored units but
  // times, which are seconds.
  auto ours = [&](const std::string& run, const std::string& metric, double scale) {
    auto r = interop::Query(db, {"top", run, "--by", "function", "-m", metric, "-n", "0", "--format", "json"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    std::map<std::string, interop::PprofRow> rows;
    for (const auto& row : doc["rows"])
      rows[row["name"].get<std::string>()] = {row["exclusive"][metric].get<double>() * scale,
                                              row["inclusive"][metric].get<double>() * scale};
    return rows;
  };
  auto same_rows = [](const std::map<std::string, interop::PprofRow>& go_rows,
                      const std::map<std::string, interop::PprofRow>& our_rows) {
    REQUIRE(!go_rows.empty());
    for (const auto& entry : go_rows) {
      const std::string name = entry.first;
      CAPTURE(name);
      REQUIRE(our_rows.count(name));
      CHECK(our_rows.at(name).flat == doctest::Approx(entry.second.flat));
      CHECK(our_rows.at(name).cum == doctest::Approx(entry.second.cum));
    }
    size_t nonzero = 0;  // pprof lists every function with a value; so must we
    for (const auto& [name, row] : our_rows) nonzero += row.cum != 0;
    CHECK(nonzero == go_rows.size());
  };

  // Heap: four sample types; bytes and counts; main.allocSmall is inlined
  // into main.outer.
  auto heap = interop::Import(db, {"--from", "pprof", "--name", "heap", dir / "heap.pb.gz"});
  REQUIRE_MESSAGE(heap.exit_code == 0, heap.err);
  double total = 0;
  same_rows(top(dir / "heap.pb.gz", "alloc_space", "B", &total), ours("heap", "alloc_space", 1));
  CHECK(total >= 409600);  // allocLarge's 100 x 4 KiB at least
  same_rows(top(dir / "heap.pb.gz", "inuse_objects", "count", &total), ours("heap", "inuse_objects", 1));
  const cct::Tree heap_tree = interop::ReadRun(db, PprofImportedRunId(heap.out));
  REQUIRE(heap_tree.metrics().Find("alloc_space") != cct::kNoMetric);
  CHECK(heap_tree.metrics().Get(heap_tree.metrics().Find("alloc_space")).unit == cct::Unit::kBytes);
  bool inlined = false;
  for (cct::NodeId n = 1; n < heap_tree.size(); ++n) {
    const cct::Frame f = heap_tree.frame(n);
    if (heap_tree.name(n) != "main.allocSmall") continue;
    inlined = (f.flags & cct::kFrameInlined) != 0;
    CHECK(heap_tree.name(heap_tree.parent(n)) == "main.outer");
    CHECK(heap_tree.str(f.file).ends_with("tests/importers/pprof_gen/main.go"));
    CHECK(heap_tree.str(f.module) == gen);  // the mapping's file
  }
  CHECK(inlined);

  // CPU: cpu/nanoseconds is cputime; the "thread" label is a thread node.
  auto cpu = interop::Import(db, {"--from", "pprof", "--name", "cpu", dir / "cpu.pb.gz"});
  REQUIRE_MESSAGE(cpu.exit_code == 0, cpu.err);
  same_rows(top(dir / "cpu.pb.gz", "cpu", "ns", &total), ours("cpu", "cputime", 1e9));
  // With -tagfocus, the rows (not "of N total", the whole profile's) are the worker's.
  double ignored = 0, worker_total = 0;
  for (const auto& [name, row] : top(dir / "cpu.pb.gz", "cpu", "ns", &ignored, {"-tagfocus=thread=worker"}))
    worker_total += row.flat;
  const cct::Tree cpu_tree = interop::ReadRun(db, PprofImportedRunId(cpu.out));
  const cct::MetricId cputime = cpu_tree.metrics().Find("cputime");
  REQUIRE(cputime != cct::kNoMetric);
  double under_worker = 0;
  std::vector<bool> in_worker(cpu_tree.size(), false);
  for (cct::NodeId n = 1; n < cpu_tree.size(); ++n) {
    in_worker[n] = in_worker[cpu_tree.parent(n)] ||
                   (cpu_tree.kind(n) == FrameKind::kThread && cpu_tree.name(n) == "worker");
    if (in_worker[n]) under_worker += cpu_tree.Value(n, cputime);
  }
  CHECK(worker_total > 0);
  CHECK(under_worker == doctest::Approx(worker_total));

  // Go's own encoder (go tool pprof -proto) re-writing our export: the same
  // tree as importing our file directly.
  const std::string ours_db = dir / "rt.db";
  {
    auto odb = store::Database::Open(ours_db, store::Database::Mode::kWrite);
    REQUIRE(odb.ok());
    store::RunMeta meta = PprofFixtureMeta();
    const cct::Tree fixture = PprofImportFixture();
    REQUIRE((*odb)->CreateRun(meta, &fixture).ok());
  }
  auto ex = interop::Query(ours_db, {"export", "latest", "--to", "pprof", "-o", dir / "ours.pb.gz"});
  REQUIRE_MESSAGE(ex.exit_code == 0, ex.err);
  auto proto = testutil::Run({go, "tool", "pprof", "-proto", "-output", dir / "go.pb.gz", dir / "ours.pb.gz"},
                             interop::GoEnv(dir.path()));
  REQUIRE_MESSAGE(proto.exit_code == 0, proto.err);
  auto direct = importers::ImportPprof(dir / "ours.pb.gz", {});
  auto via_go = importers::ImportPprof(dir / "go.pb.gz", {});
  REQUIRE(direct.ok());
  REQUIRE_MESSAGE(via_go.ok(), via_go.status().message());
  CHECK(PprofValues(via_go->tree) == PprofValues(direct->tree));
  CHECK(PprofValues(direct->tree) == PprofValues(PprofImportFixture()));
}
