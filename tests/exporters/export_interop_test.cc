// Exports for other tools: pprof (read back by Go's own `go tool pprof`),
// CSV, Hatchet's graph+dataframe JSON, and the progress line.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "importers/importer.h"
#include "output/progress.h"
#include "tests/interop_util.h"

namespace {

using cct::FrameKind;
using interop::Query;

constexpr double kMs = 1e6;  // ns

// A two-thread run with inlining, a source line, recursion, NVTX and a GPU
// kernel. Every value below is what the assertions derive totals from.
cct::Tree PprofFixture() {
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  const cct::MetricId gker = *t.metrics().RegisterStandard("gker");
  const cct::MetricId count = *t.metrics().RegisterStandard("gker:count");
  auto node = [&](cct::NodeId parent, FrameKind k, const std::string& name, uint8_t flags = 0,
                  const std::string& file = "", uint32_t line = 0) {
    return t.InternChild(parent, t.InternFrame(k, name, k == FrameKind::kFunction ? "/opt/app/bin/app" : "", file,
                                               line, flags));
  };
  const cct::NodeId main_thread = node(cct::kRootNode, FrameKind::kThread, "main");
  const cct::NodeId main = node(main_thread, FrameKind::kFunction, "main");
  t.AddValue(main, cpu, 10 * kMs);
  const cct::NodeId compute = node(main, FrameKind::kFunction, "compute");
  t.AddValue(compute, cpu, 5 * kMs);
  const cct::NodeId helper = node(compute, FrameKind::kFunction, "inl_helper", cct::kFrameInlined);
  t.AddValue(helper, cpu, 30 * kMs);
  t.AddValue(node(helper, FrameKind::kFunction, "deeper"), cpu, 7 * kMs);
  t.AddValue(node(compute, FrameKind::kLine, "kernels.cc:42", 0, "src/kernels.cc", 42), cpu, 20 * kMs);
  cct::NodeId r = main;
  for (int i = 0; i < 3; ++i) {
    r = node(r, FrameKind::kFunction, "recurse");
    t.AddValue(r, cpu, 1 * kMs);
  }
  const cct::NodeId step = node(main, FrameKind::kNvtx, "step");
  const cct::NodeId launch = node(step, FrameKind::kFunction, "launch");
  t.AddValue(launch, cpu, 3 * kMs);
  const cct::NodeId op = node(launch, FrameKind::kGpuOp, "<gpu kernel>");
  const cct::NodeId k1 = node(op, FrameKind::kKernel, "void k1<float>(float*, int)");
  t.AddValue(k1, gker, 100 * kMs);
  t.AddValue(k1, count, 4);
  const cct::NodeId worker = node(cct::kRootNode, FrameKind::kThread, "worker");
  const cct::NodeId wfn = node(worker, FrameKind::kFunction, "worker_fn");
  t.AddValue(wfn, cpu, 40 * kMs);
  t.AddValue(node(wfn, FrameKind::kFunction, "compute"), cpu, 8 * kMs);
  t.AddValue(node(worker, FrameKind::kUnknown, "<partial call path>"), cpu, 2 * kMs);
  return t;
}

struct PprofRow {
  double flat = 0, cum = 0;
};

// `go tool pprof -top` rows by name. Values are "123ns", plain numbers, or 0.
std::map<std::string, PprofRow> ParsePprofTop(const std::string& text, double* total) {
  std::map<std::string, PprofRow> rows;
  std::istringstream in(text);
  static const std::regex kRow(R"(^\s*([0-9.e+]+)(ns)?\s+\S+%\s+\S+%\s+([0-9.e+]+)(ns)?\s+\S+%\s+(.+)$)");
  static const std::regex kTotal(R"(of ([0-9.e+]+)(ns)? total)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kTotal)) *total = std::stod(m[1].str());
    if (!std::regex_match(line, m, kRow)) continue;
    std::string name = m[5].str();
    // pprof marks functions that only appear inlined.
    if (name.size() > 9 && name.compare(name.size() - 9, 9, " (inline)") == 0) name.resize(name.size() - 9);
    rows[name] = {std::stod(m[1].str()), std::stod(m[3].str())};
  }
  return rows;
}

// Top-level fields of a gzipped protobuf message: (field number, payload
// bytes for length-delimited fields). A hand-rolled reader, so the check
// does not depend on the library that wrote the file.
std::vector<std::pair<int, std::string>> ReadGzipProtoFields(const std::string& gz) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK);
  std::string raw;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  char buf[65536];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    REQUIRE((rc == Z_OK || rc == Z_STREAM_END));
    raw.append(buf, sizeof buf - zs.avail_out);
  } while (rc != Z_STREAM_END);
  inflateEnd(&zs);
  std::vector<std::pair<int, std::string>> fields;
  size_t pos = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      REQUIRE(pos < raw.size());
      const uint8_t b = static_cast<uint8_t>(raw[pos++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (pos < raw.size()) {
    const uint64_t key = varint();
    const int field = static_cast<int>(key >> 3), type = static_cast<int>(key & 7);
    if (type == 0) {
      fields.emplace_back(field, std::to_string(varint()));
    } else if (type == 2) {
      const uint64_t len = varint();
      REQUIRE(pos + len <= raw.size());
      fields.emplace_back(field, raw.substr(pos, len));
      pos += len;
    } else {
      FAIL("unexpected wire type " << type);
    }
  }
  return fields;
}

std::map<std::string, std::string> GoEnv(const testutil::TempDir& dir) {
  return {{"HOME", dir.path()}, {"GOCACHE", dir / "gocache"}, {"GOFLAGS", "-mod=mod"}, {"GOTOOLCHAIN", "local"}};
}

}  // namespace

TEST_CASE("pprof: Go's pprof reads the export and agrees with cct-query top --by function") {
  testutil::TempDir dir;
  const std::string db = dir / "p.db";
  interop::StoreRun(db, PprofFixture(), "pprof-fixture");
  const std::string out = dir / "profile.pb.gz";
  auto ex = Query(db, {"export", "latest", "--to", "pprof", "-o", out});
  REQUIRE_MESSAGE(ex.exit_code == 0, ex.err);

  // The file itself: gzip, string table starting with "", one sample type
  // per additive metric (cputime, gker, gker:count).
  const auto fields = ReadGzipProtoFields(testutil::ReadFileOrDie(out));
  int sample_types = 0, samples = 0;
  std::vector<std::string> strings;
  for (const auto& [f, v] : fields) {
    sample_types += f == 1;
    samples += f == 2;
    if (f == 6) strings.push_back(v);
  }
  CHECK(sample_types == 3);
  REQUIRE(!strings.empty());
  CHECK(strings[0].empty());
  // One sample per node with a value: 12 cputime nodes + the kernel.
  CHECK(samples == 13);

  const std::string go = interop::FindProgram("go");
  if (go.empty()) {
    MESSAGE("SKIPPED the go tool pprof cross-check: `go` is not installed (Debian golang-go; scripts/install-deps.sh)");
    return;
  }
  auto top = testutil::Run({go, "tool", "pprof", "-top", "-unit=ns", "-nodefraction=0", "-nodecount=100000",
                            "-sample_index=cputime", out},
                           GoEnv(dir));
  REQUIRE_MESSAGE(top.exit_code == 0, top.err);
  double total = 0;
  const auto rows = ParsePprofTop(top.out, &total);

  // Our own numbers: cct-query top --by function (JSON, seconds).
  auto ours = Query(db, {"top", "latest", "--by", "function", "-n", "0", "--format", "json"});
  REQUIRE(ours.exit_code == 0);
  const auto doc = nlohmann::json::parse(ours.out);
  REQUIRE(doc["rows"].size() == 8);  // main compute inl_helper deeper recurse launch worker_fn <partial call path>
  for (const auto& row : doc["rows"]) {
    const std::string name = row["name"];
    CAPTURE(name);
    REQUIRE(rows.count(name));
    CHECK(rows.at(name).flat == doctest::Approx(row["exclusive"]["cputime"].get<double>() * 1e9));
    CHECK(rows.at(name).cum == doctest::Approx(row["inclusive"]["cputime"].get<double>() * 1e9));
  }
  // The fixture's sums, independently: cputime total 10+5+30+7+20+3+3+40+8+2 ms.
  CHECK(total == doctest::Approx(128 * kMs));
  CHECK(rows.at("compute").flat == doctest::Approx((5 + 20 + 8) * kMs));   // its line's 20 ms folds in
  CHECK(rows.at("compute").cum == doctest::Approx((5 + 30 + 7 + 20 + 8) * kMs));
  CHECK(rows.at("recurse").cum == doctest::Approx(3 * kMs));  // recursion counted once
  // Non-function frames stay visible with a prefix.
  CHECK(rows.at("[thread] main").cum == doctest::Approx(78 * kMs));
  CHECK(rows.at("[nvtx] step").cum == doctest::Approx(3 * kMs));

  auto gpu = testutil::Run({go, "tool", "pprof", "-top", "-unit=ns", "-nodefraction=0", "-sample_index=gker", out},
                           GoEnv(dir));
  REQUIRE(gpu.exit_code == 0);
  double gtotal = 0;
  const auto grows = ParsePprofTop(gpu.out, &gtotal);
  CHECK(gtotal == doctest::Approx(100 * kMs));
  REQUIRE(grows.count("[kernel] void k1<float>(float*, int)"));
  CHECK(grows.at("[kernel] void k1<float>(float*, int)").flat == doctest::Approx(100 * kMs));
  CHECK(grows.at("[gpu-op] <gpu kernel>").cum == doctest::Approx(100 * kMs));

  // The inlined frame is a line of its caller's location: pprof marks it.
  auto traces = testutil::Run({go, "tool", "pprof", "-traces", "-sample_index=cputime", out}, GoEnv(dir));
  REQUIRE(traces.exit_code == 0);
  CHECK(traces.out.find("inl_helper (inline)") != std::string::npos);
  CHECK(traces.out.find("compute (inline)") == std::string::npos);

  // Bad requests are one clear line and exit 2.
  auto derived = Query(db, {"export", "latest", "--to", "pprof", "-m", "nonexistent", "-o", dir / "x.pb.gz"});
  CHECK(derived.exit_code == 2);
  CHECK(testutil::LineCount(derived.err) == 1);
}

TEST_CASE("csv export: one row per node with run, path, kind, location, function and every metric") {
  testutil::TempDir dir;
  const std::string db = dir / "c.db";
  const cct::Tree fixture = PprofFixture();
  const store::RunId id = interop::StoreRun(db, fixture, "csv-fixture");
  auto r = Query(db, {"export", "latest", "--to", "csv"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.substr(0, r.out.find('\n')) ==
        "run,run_name,node,parent,depth,kind,name,function,module,file,line,path,cputime (inc),cputime (exc),"
        "gker (inc),gker (exc),gker:count (inc),gker:count (exc)");
  const auto rows = testutil::ReadCsvRows(r.out);
  CHECK(rows.size() == fixture.size() - 1);  // every node but the root
  bool saw_line = false, saw_helper = false;
  for (const auto& c : rows) {
    REQUIRE(c.size() == 18);
    CHECK(c.at("run") == std::to_string(id));
    CHECK(c.at("run_name") == "csv-fixture");
    if (c.at("name") == "inl_helper") {
      saw_helper = true;
      CHECK(c.at("kind") == "function");
      CHECK(c.at("function") == "inl_helper");
      CHECK(c.at("path") == "main;main;compute;inl_helper");
      CHECK(c.at("depth") == "4");
      CHECK(std::stod(c.at("cputime (inc)")) == doctest::Approx(0.037));  // 30 + 7 ms, in seconds
      CHECK(std::stod(c.at("cputime (exc)")) == doctest::Approx(0.030));
    }
    if (c.at("kind") == "line") {
      // The statement's row names its function apart from the file:line.
      saw_line = true;
      CHECK(c.at("name") == "kernels.cc:42");
      CHECK(c.at("function") == "compute");
      CHECK(c.at("file") == "src/kernels.cc");
      CHECK(c.at("line") == "42");
    }
    if (c.at("kind") == "thread" || c.at("kind") == "nvtx" || c.at("kind") == "kernel") CHECK(c.at("function").empty());
    if (c.at("name") == "void k1<float>(float*, int)") {
      CHECK(c.at("kind") == "kernel");
      CHECK(std::stod(c.at("gker (inc)")) == doctest::Approx(0.1));
      CHECK(c.at("gker:count (exc)") == "4");
    }
  }
  CHECK(saw_line);
  CHECK(saw_helper);
  // A chosen metric only.
  auto one = Query(db, {"export", "latest", "--to", "csv", "-m", "gker"});
  CHECK(one.out.substr(0, one.out.find('\n')) ==
        "run,run_name,node,parent,depth,kind,name,function,module,file,line,path,gker (inc),gker (exc)");
}

TEST_CASE("hatchet-json export --per-thread: graph + dataframe with rank/thread levels, read back by the importer") {
  testutil::TempDir dir;
  const std::string db = dir / "h.db";
  // Threads with free-form names: "thread" index holding the names.
  REQUIRE(interop::Import(db, {"--from", "hatchet", testutil::SourceDir() + "/examples/sample-profile.json"}).exit_code == 0);
  // Ranks: numeric "rank" index; the graph is the union of the ranks' trees.
  cct::Tree ranks;
  const cct::MetricId time = *ranks.metrics().RegisterStandard("cputime");
  auto rn = [&](cct::NodeId p, FrameKind k, const std::string& n) { return ranks.InternChild(p, ranks.InternFrame(k, n)); };
  for (int r = 0; r < 3; ++r) {
    const cct::NodeId rank = rn(cct::kRootNode, FrameKind::kThread, "rank " + std::to_string(r));
    const cct::NodeId main = rn(rank, FrameKind::kFunction, "main");
    ranks.AddValue(rn(main, FrameKind::kFunction, "solve"), time, (r + 1) * kMs);
    if (r == 2) ranks.AddValue(rn(main, FrameKind::kFunction, "only_on_rank_2"), time, 5 * kMs);
  }
  interop::StoreRun(db, ranks, "ranks");

  struct Case {
    std::string run, index;
    size_t graph_nodes;
  };
  for (const Case& c : {Case{"1", "thread", 0}, Case{"2", "rank", 3}}) {
    CAPTURE(c.run);
    const std::string out = dir / ("export" + c.run + ".json");
    auto r = Query(db, {"export", c.run, "--to", "hatchet-json", "--per-thread", "-o", out});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const auto doc = nlohmann::json::parse(testutil::ReadFileOrDie(out));
    REQUIRE(doc["dataframe_indices"] == nlohmann::json({"node", c.index}));
    REQUIRE(doc["graph"].is_array());
    size_t graph_nodes = 0;
    for (const auto& g : doc["graph"]) graph_nodes += g.size();
    if (c.graph_nodes) CHECK(graph_nodes == c.graph_nodes);  // main, solve, only_on_rank_2
    for (const auto& row : doc["dataframe"]) {
      CHECK(row.contains("node"));
      CHECK(row.contains(c.index));
      CHECK(row.contains("name"));
    }
    CHECK(doc["exclusive_metrics"].size() == doc["inclusive_metrics"].size());
    if (c.index == "rank") {
      CHECK(doc["dataframe"].size() == 9);  // 3 ranks x (main, solve, only_on_rank_2), zeros where a rank lacks one
      CHECK(doc["dataframe"][0]["rank"].is_number_integer());
    } else {
      CHECK(doc["dataframe"][0]["thread"].is_string());
    }
    // Round trip: the importer gives back the same paths and values.
    auto back = importers::ImportHatchet(out, importers::ImportOptions{});
    REQUIRE(back.ok());
    const cct::Tree original = interop::ReadRun(db, static_cast<store::RunId>(std::stoi(c.run)));
    auto flatten = [](const cct::Tree& t) {
      std::map<std::string, double> m;
      cct::NodeValues v(t);
      for (cct::NodeId n = 1; n < t.size(); ++n) {
        std::string p;
        for (const std::string& s : cct::PathNames(t, n)) p += s + ";";
        for (cct::MetricId id = 0; id < t.metrics().size(); ++id)
          if (v.Exclusive(id)[n] != 0) m[p + t.metrics().Get(id).name] = v.Exclusive(id)[n];
      }
      return m;
    };
    const auto a = flatten(original), b = flatten(back->tree);
    CHECK(a.size() == b.size());
    for (const auto& entry : a) {
      const auto& k = entry.first;
      const auto& v = entry.second;
      CAPTURE(k);
      REQUIRE(b.count(k));
      CHECK(b.at(k) == doctest::Approx(v).epsilon(1e-12));
    }
  }
  // Without --per-thread the ranks are summed, one row per node; the option
  // means nothing to the other formats.
  auto summed = Query(db, {"export", "2", "--to", "hatchet-json"});
  REQUIRE(summed.exit_code == 0);
  CHECK(nlohmann::json::parse(summed.out)["dataframe"].size() == 3);
  auto wrong = Query(db, {"export", "2", "--to", "json", "--per-thread"});
  CHECK(wrong.exit_code == 2);
  CHECK(wrong.err.find("--per-thread applies to --to hatchet-json only") != std::string::npos);
}

TEST_CASE("progress: drawn on a terminal only after the delay, and erased at the end") {
  std::ostringstream err;
  double now = 0;
  {
    output::Progress p("exporting", true, &err, [&] { return now; });
    p.set_delay(1.0);
    p.SetTotal(100);
    p.Update(10);
    p.Tick();
    CHECK(err.str().empty());  // under a second: nothing
    now = 1.5;
    p.Update(50);
    p.Tick();
    CHECK(err.str().find("exporting [") != std::string::npos);
    CHECK(err.str().find(" 50%") != std::string::npos);
    p.Finish();
    CHECK(err.str().back() == '\r');  // the line is blanked and the cursor back at its start
  }
  std::ostringstream quiet;
  {
    output::Progress p("exporting", false, &quiet, [&] { return 100.0; });
    p.SetTotal(10);
    p.Update(5);
    p.Tick();
  }
  CHECK(quiet.str().empty());

  // Through a pseudo-terminal (util-linux `script`), the tool shows it.
  const std::string script = interop::FindProgram("script");
  if (script.empty()) {
    MESSAGE("SKIPPED the terminal check: `script` (util-linux) is not installed");
    return;
  }
  testutil::TempDir dir;
  const std::string db = dir / "p.db";
  interop::StoreRun(db, PprofFixture(), "p");
  const std::string cmd = testutil::Tool("cct-query") + " -d " + db + " export latest --to csv -o " + (dir / "o.csv");
  auto tty = testutil::Run({script, "-qec", cmd, "/dev/null"}, {{"CCT_PROGRESS_DELAY_MS", "0"}});
  CHECK(tty.exit_code == 0);
  CHECK(tty.out.find("exporting csv") != std::string::npos);
  // Not a terminal: no progress line at all.
  auto plain = interop::Query(db, {"export", "latest", "--to", "csv", "-o", dir / "o2.csv"});
  CHECK(plain.err.empty());
}
