// Nsight Compute: attaching `ncu --csv --page raw` metrics to a run's kernel
// nodes, and the kernels report. The fixture (tests/data/ncu/) was written by
// hand to ncu's raw-page layout; every expected number below is computed from
// its rows (see the comments), not read from our output.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "importers/importer.h"
#include "query/gpu_kernels.h"
#include "store/tree_codec.h"
#include "tests/interop_util.h"

namespace {

std::string Data(const std::string& name) { return testutil::SourceDir() + "/tests/data/ncu/" + name; }

// The kernel node under the NVTX range `range` (empty: any) whose name starts with `prefix`.
cct::NodeId KernelNode(const cct::Tree& t, const std::string& prefix, const std::string& range = "") {
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    if (t.kind(n) != cct::FrameKind::kKernel || t.name(n).substr(0, prefix.size()) != prefix) continue;
    if (range.empty()) return n;
    for (cct::NodeId p = t.parent(n); p != cct::kRootNode; p = t.parent(p))
      if (t.kind(p) == cct::FrameKind::kNvtx && t.name(p) == range) return n;
  }
  return cct::kNoNode;
}

double Avg(cct::NodeValues& v, const cct::Tree& t, cct::NodeId n, const std::string& metric) {
  const cct::MetricId m = t.metrics().Find(metric);
  REQUIRE_MESSAGE(m != cct::kNoMetric, metric);
  return v.Inclusive(m)[n];
}

}  // namespace

TEST_CASE("kernel names: normalized for matching and popularity") {
  CHECK(query::NormalizeKernelName("void sgemm_kernel<float, 128>(float const*, float*, int)") == "sgemm_kernel");
  CHECK(query::KernelSignatureName("void sgemm_kernel<float, 128>(float const*, float*, int)") ==
        "sgemm_kernel<float, 128>");
  CHECK(query::NormalizeKernelName("void at::native::vectorized_elementwise_kernel<4, at::native::Fn<float>>(int, "
                                   "at::native::Fn<float>)") == "at::native::vectorized_elementwise_kernel");
  CHECK(query::KernelBaseName("void flash::attention_kernel<64, true>(half const*, half*)") == "attention_kernel");
  CHECK(query::NormalizeKernelName("relu_kernel(float*, int)") == "relu_kernel");
  CHECK(query::NormalizeKernelName("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn");
  CHECK(query::NormalizeKernelName("(anonymous namespace)::k(int)") == "(anonymous namespace)::k");
}

TEST_CASE("bottleneck rule") {
  using query::Bottleneck;
  CHECK(query::ClassifyBottleneck(80, 30) == Bottleneck::kCompute);
  CHECK(query::ClassifyBottleneck(20, 85) == Bottleneck::kMemory);
  CHECK(query::ClassifyBottleneck(20, 25) == Bottleneck::kLatency);
  CHECK(query::ClassifyBottleneck(65, 70) == Bottleneck::kMixed);
  CHECK(query::ClassifyBottleneck(50, 45) == Bottleneck::kMixed);
  CHECK(query::ClassifyBottleneck(NAN, 45) == Bottleneck::kUnknown);
}

TEST_CASE("ncu-csv: raw-page metrics attach to the matching kernel nodes by name and NVTX context") {
  testutil::TempDir dir;
  const std::string db = dir / "g.db";
  REQUIRE(interop::Import(db, {"--from", "hatchet", Data("gpu-run.json")}).exit_code == 0);
  auto r = interop::Import(db, {"--from", "ncu-csv", Data("raw.csv"), "--run", "latest"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  // 9 launches; unknown_kernel_xyz (ID 6) matches nothing; 5 nodes get rows.
  CHECK(r.out.find("8 of 9 launches matched 5 kernel node(s)") != std::string::npos);
  CHECK(r.out.find("unmatched kernels (1):\n  unknown_kernel_xyz\n") != std::string::npos);

  const cct::Tree t = interop::ReadRun(db, 1);
  cct::NodeValues v(t);
  const std::string sm = std::string(query::kNcuSmThroughput), mem = std::string(query::kNcuMemoryThroughput);
  const cct::NodeId fwd = KernelNode(t, "void sgemm_kernel", "forward"),
                    bwd = KernelNode(t, "void sgemm_kernel", "backward"), relu = KernelNode(t, "relu_kernel"),
                    reduce = KernelNode(t, "void reduce_kernel"), attn = KernelNode(t, "void flash::attention"),
                    copy = KernelNode(t, "copy_kernel");
  REQUIRE(fwd != cct::kNoNode);
  REQUIRE(bwd != cct::kNoNode);
  // forward sgemm: IDs 0 and 5 (NVTX "forward"): SM 82, 78 -> 80; memory 40, 44 -> 42.
  CHECK(Avg(v, t, fwd, "ncu:count") == 2);
  CHECK(Avg(v, t, fwd, sm) == doctest::Approx(80));
  CHECK(Avg(v, t, fwd, mem) == doctest::Approx(42));
  // gpu__time_duration.sum in usecond: 1,200.50 + 1,199.50 us = 2.4 ms stored as ns.
  CHECK(Avg(v, t, fwd, "gpu__time_duration.sum:acc") == doctest::Approx(2.4e6));
  CHECK(Avg(v, t, fwd, "gpu__time_duration.sum") == doctest::Approx(1.2e6));
  // dram__bytes_read.sum in Mbyte (10^6 bytes): 12.5 + 12.5.
  CHECK(Avg(v, t, fwd, "dram__bytes_read.sum:acc") == doctest::Approx(25e6));
  // backward sgemm: IDs 2, 3 ("Default:backward"): SM 70, 74 -> 72.
  CHECK(Avg(v, t, bwd, "ncu:count") == 2);
  CHECK(Avg(v, t, bwd, sm) == doctest::Approx(72));
  CHECK(Avg(v, t, relu, "ncu:count") == 2);
  CHECK(Avg(v, t, relu, mem) == doctest::Approx(87));  // 85, 89
  CHECK(Avg(v, t, reduce, "ncu:count") == 1);           // full demangled name in the CSV
  CHECK(Avg(v, t, attn, "ncu:count") == 1);             // "attention_kernel": last name component
  CHECK(Avg(v, t, copy, "ncu:count") == 0);             // not profiled
  CHECK(t.metrics().Find("device__attribute_max_threads_per_block") == cct::kNoMetric);

  // The kernels report: one row per kernel name; sgemm's two nodes pooled:
  // SM (82+78+70+74)/4 = 76, memory (40+44+30+34)/4 = 37 -> compute-bound.
  auto k = interop::Query(db, {"kernels", "latest", "--format", "json"});
  REQUIRE(k.exit_code == 0);
  const auto doc = nlohmann::json::parse(k.out);
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : doc["kernels"]) rows[row["normalized"]] = row;
  REQUIRE(rows.size() == 5);
  CHECK(rows["sgemm_kernel"]["time"].get<double>() == doctest::Approx(1.8));  // 0.6 + 1.2 s
  CHECK(rows["sgemm_kernel"]["launches"].get<double>() == 60);                // 20 + 40
  CHECK(rows["sgemm_kernel"]["profiled_launches"].get<double>() == 4);
  CHECK(rows["sgemm_kernel"]["ncu"][sm].get<double>() == doctest::Approx(76));
  CHECK(rows["sgemm_kernel"]["bottleneck"] == "compute-bound");
  CHECK(rows["relu_kernel"]["bottleneck"] == "memory-bound");               // SM 12, memory 87
  CHECK(rows["reduce_kernel"]["bottleneck"] == "latency/occupancy-bound");  // SM 20, memory 25
  CHECK(rows["flash::attention_kernel"]["bottleneck"] == "mixed");          // SM 65, memory 70
  CHECK(rows["copy_kernel"]["bottleneck"] == "-");
  CHECK(rows["copy_kernel"]["ncu"][sm].is_null());
  // The text report's layout.
  auto text = interop::Query(db, {"kernels", "latest", "--width", "0"});
  REQUIRE(text.exit_code == 0);
  CHECK_MESSAGE(testutil::CheckGolden("kernels.txt", text.out) == "", testutil::CheckGolden("kernels.txt", text.out));

  // Attaching again replaces the values instead of adding to them.
  REQUIRE(interop::Import(db, {"--from", "ncu-csv", Data("raw.csv"), "--run", "1"}).exit_code == 0);
  const cct::Tree again = interop::ReadRun(db, 1);
  cct::NodeValues v2(again);
  CHECK(Avg(v2, again, fwd, "ncu:count") == 2);
  CHECK(Avg(v2, again, fwd, sm) == doctest::Approx(80));
  // The run records what was attached.
  auto show = interop::Query(db, {"show", "1", "--format", "json"});
  CHECK(show.exit_code == 0);
}

TEST_CASE("ncu-csv: without NVTX, launches are dealt out in launch order by each node's share") {
  testutil::TempDir dir;
  const std::string db = dir / "g.db";
  REQUIRE(interop::Import(db, {"--from", "hatchet", Data("gpu-run.json")}).exit_code == 0);
  // The long --page details layout, 4 sgemm launches, no NVTX column. Nodes:
  // forward (20 launches, first in the run) and backward (40). Dealing: ID 0
  // -> forward (tie, earlier node); 1 -> backward (0/40 < 1/20); 2 -> backward
  // (1/40 < 1/20); 3 -> forward (2/40 = 1/20, tie). SM: forward (10+50)/2 = 30,
  // backward (20+30)/2 = 25.
  auto r = interop::Import(db, {"--from", "ncu-csv", Data("details-no-nvtx.csv"), "--run", "1"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const cct::Tree t = interop::ReadRun(db, 1);
  cct::NodeValues v(t);
  const std::string sm = std::string(query::kNcuSmThroughput);
  const cct::NodeId fwd = KernelNode(t, "void sgemm_kernel", "forward"),
                    bwd = KernelNode(t, "void sgemm_kernel", "backward");
  CHECK(Avg(v, t, fwd, sm) == doctest::Approx(30));
  CHECK(Avg(v, t, bwd, sm) == doctest::Approx(25));
  // Durations in msecond, usecond and nsecond rows all land in ns:
  // forward 1.5 ms + 4,500,000 ns = 6 ms; backward 2.5 ms + 3.5 ms = 6 ms.
  CHECK(Avg(v, t, fwd, "gpu__time_duration.sum:acc") == doctest::Approx(6e6));
  CHECK(Avg(v, t, bwd, "gpu__time_duration.sum:acc") == doctest::Approx(6e6));
}

TEST_CASE("ncu-csv: bad input and bad usage are one line and exit 2") {
  testutil::TempDir dir;
  const std::string db = dir / "g.db";
  REQUIRE(interop::Import(db, {"--from", "hatchet", Data("gpu-run.json")}).exit_code == 0);
  testutil::WriteFileOrDie(dir / "cpu.folded", "main;work 10\n");
  REQUIRE(interop::Import(db, {"--from", "folded", dir / "cpu.folded", "--name", "cpu-only"}).exit_code == 0);
  testutil::WriteFileOrDie(dir / "nothing.csv", "just,some,csv\n1,2,3\n");
  testutil::WriteFileOrDie(dir / "ragged.csv", "\"ID\",\"Kernel Name\",\"x\"\n\"0\",\"k\"\n");
  testutil::WriteFileOrDie(dir / "nomatch.csv", "\"ID\",\"Kernel Name\",\"x\"\n\"\",\"\",\"%\"\n\"0\",\"zzz\",\"1\"\n");
  const std::vector<std::vector<std::string>> bad = {
      {"--from", "ncu-csv", Data("raw.csv")},                                 // no --run
      {"--from", "ncu-csv", Data("raw.csv"), "--run", "99"},                  // no such run
      {"--from", "ncu-csv", Data("raw.csv"), "--run", "cpu-only"},            // no kernels
      {"--from", "ncu-csv", dir / "absent.csv", "--run", "1"},                // no file
      {"--from", "ncu-csv", dir / "nothing.csv", "--run", "1"},               // not ncu's
      {"--from", "ncu-csv", dir / "ragged.csv", "--run", "1"},                // short row
      {"--from", "ncu-csv", dir / "nomatch.csv", "--run", "1"},               // nothing matches
      {"--from", "ncu-csv", Data("raw.csv"), "--run", "1", "--metric", "("},  // bad regex
      {"--from", "hatchet", Data("gpu-run.json"), "--run", "1"},              // --run elsewhere
  };
  for (const auto& args : bad) {
    auto r = interop::Import(db, args);
    CAPTURE(args[2]);
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
  }
  // --metric selects which ncu metrics attach.
  auto some = interop::Import(db, {"--from", "ncu-csv", Data("raw.csv"), "--run", "1", "--metric", "^sm__"});
  REQUIRE(some.exit_code == 0);
  CHECK(some.out.find("attached 2 ncu metrics") != std::string::npos);
}

TEST_CASE("kernels: across a group of runs, popularity by normalized kernel name") {
  testutil::TempDir dir;
  const std::string db = dir / "k.db";
  // Two "models": one has sgemm twice (two template variants) and relu, the other sgemm only.
  auto run = [&](std::vector<std::pair<std::string, double>> kernels, const std::string& model) {
    cct::Tree t;
    const cct::MetricId gker = *t.metrics().RegisterStandard("gker");
    const cct::MetricId count = *t.metrics().RegisterStandard("gker:count");
    for (const auto& [name, seconds] : kernels) {
      const cct::NodeId n = interop::AddPath(t, {{cct::FrameKind::kFunction, "main"},
                                                 {cct::FrameKind::kGpuOp, "<gpu kernel>"},
                                                 {cct::FrameKind::kKernel, name}});
      t.AddValue(n, gker, seconds * 1e9);
      t.AddValue(n, count, 10);
    }
    interop::StoreRun(db, t, model, {{"suite", "zoo"}, {"model", model}});
  };
  run({{"void sgemm<float, 64>(float*)", 1.0}, {"void sgemm<float, 128>(float*)", 2.0}, {"relu(float*)", 0.5}}, "a");
  run({{"void sgemm<half, 64>(half*)", 4.0}}, "b");
  auto r = interop::Query(db, {"kernels", "tag:suite=zoo", "--format", "json"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["kernels"].size() == 2);
  CHECK(doc["kernels"][0]["name"] == "sgemm");  // in both runs
  CHECK(doc["kernels"][0]["runs"] == 2);
  CHECK(doc["kernels"][0]["time"].get<double>() == doctest::Approx(7.0));  // 1 + 2 + 4 s
  CHECK(doc["kernels"][0]["launches"].get<double>() == 30);
  CHECK(doc["kernels"][1]["name"] == "relu");
  CHECK(doc["kernels"][1]["runs"] == 1);
  auto text = interop::Query(db, {"kernels", "tag:suite=zoo", "--width", "0"});
  CHECK(text.out.find("2/2") != std::string::npos);
}

TEST_CASE("ncu-csv: attaching keeps the run's iterations and trace (same nodes, same ids)") {
  testutil::TempDir dir;
  const std::string db_path = dir / "it.db";
  // The GPU fixture as a tree, with two iterations holding gker values of the
  // forward sgemm node (0.2 s and 0.4 s).
  auto imported = importers::ImportHatchet(Data("gpu-run.json"), importers::ImportOptions{});
  REQUIRE(imported.ok());
  const cct::Tree& tree = imported->tree;
  const cct::NodeId fwd = KernelNode(tree, "void sgemm_kernel", "forward");
  REQUIRE(fwd != cct::kNoNode);
  store::RunIterations its;
  its.range = "step";
  for (uint32_t i = 0; i < 2; ++i) {
    store::Iteration it;
    it.index = i;
    it.start_ns = 1000 + i;
    it.duration_ns = 10;
    it.columns.push_back({tree.metrics().Find("gker"), {fwd}, {(i + 1) * 0.2e9}});
    its.iterations.push_back(it);
  }
  {
    auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    store::RunMeta meta;
    meta.name = "iterated";
    meta.state = store::RunState::kComplete;
    // And a trace: a sample and a kernel on the forward sgemm node.
    store::RunTrace trace;
    trace.samples.push_back({tree.parent(fwd), {500}, {fwd}});
    trace.gpu.push_back({0, 7, cct::GpuOpKind::kKernel, 600, 900, 0, fwd});
    REQUIRE((*db)->CreateRun(meta, &tree, &its, &trace).ok());
  }
  auto r = interop::Import(db_path, {"--from", "ncu-csv", Data("raw.csv"), "--run", "1"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto db = store::Database::Open(db_path, store::Database::Mode::kRead);
  REQUIRE(db.ok());
  auto back = (*db)->ReadIterations(1);
  REQUIRE(back.ok());
  REQUIRE(back->has_value());
  REQUIRE((*back)->iterations.size() == 2);
  const cct::Tree stored = interop::ReadRun(db_path, 1);
  const cct::NodeId stored_fwd = KernelNode(stored, "void sgemm_kernel", "forward");
  const auto& col = (*back)->iterations[1].columns.at(0);
  CHECK(col.nodes == std::vector<cct::NodeId>{stored_fwd});
  CHECK(col.values == std::vector<double>{0.4e9});
  auto trace = (*db)->ReadTrace(1);
  REQUIRE((trace.ok() && trace->has_value()));
  REQUIRE((*trace)->samples.size() == 1);
  CHECK((*trace)->samples[0].node == std::vector<cct::NodeId>{stored_fwd});
  CHECK((*trace)->samples[0].thread == stored.parent(stored_fwd));
  REQUIRE((*trace)->gpu.size() == 1);
  CHECK((*trace)->gpu[0].node == stored_fwd);
  cct::NodeValues v(stored);
  CHECK(v.Inclusive(stored.metrics().Find("ncu:count"))[stored_fwd] == 2);
}

TEST_CASE("ncu-csv: metric names that are not valid UTF-8 are refused, never stored as a run that cannot be read") {
  // Found by tests/fuzz/ncu_csv_fuzz.cc: two columns differing only in
  // invalid bytes were attached as two metrics, which the store's JSON
  // metric table turned into one name: the run's tree no longer decoded.
  testutil::TempDir dir;
  const std::string csv = dir / "bad.csv";
  testutil::WriteFileOrDie(csv, "\"ID\",\"Kernel Name\",\"NVTX\",\"dram\xff\",\"dram\xfe\"\n"
                                "\"0\",\"sgemm_kernel\",\"forward\",\"1\",\"2\"\n");
  auto imported = importers::ImportHatchet(Data("gpu-run.json"), importers::ImportOptions{});
  REQUIRE(imported.ok());
  cct::Tree tree = imported->tree;
  auto r = importers::AttachNcuMetrics(csv, tree, importers::NcuAttachOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("not valid UTF-8") != std::string::npos);
  // What a run's metric table keeps decodes.
  CHECK(store::DecodeTree(store::EncodeTree(tree)).ok());
}

TEST_CASE("ncu-csv: a launch ID that is not a whole launch number is one error line") {
  // Found by tests/fuzz/ncu_csv_fuzz.cc under UBSan: ID 1e25 was converted to
  // a 64-bit integer (undefined behaviour).
  testutil::TempDir dir;
  auto imported = importers::ImportHatchet(Data("gpu-run.json"), importers::ImportOptions{});
  REQUIRE(imported.ok());
  for (const char* id : {"1e25", "-1", "2.5", "nan", "inf"}) {
    CAPTURE(id);
    const std::string csv = dir / "id.csv";
    testutil::WriteFileOrDie(csv, std::string("\"ID\",\"Kernel Name\",\"dram\"\n\"") + id + "\",\"sgemm_kernel\",\"1\"\n");
    cct::Tree tree = imported->tree;
    auto r = importers::AttachNcuMetrics(csv, tree, importers::NcuAttachOptions{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("is not a") != std::string::npos);
  }
}
