// End-to-end tests of GPU tracing in the collector without a GPU: the
// cct-test-gpu-fake-app program calls the fake CUDA of
// tests/collector/programs/fake_gpu.cc, which cct-record loads as its GPU
// adapter (CCT_GPU_ADAPTER). Launches are reported on the program's threads
// and records are built from CUPTI's structs, so everything after CUPTI —
// injection, launch-site capture, frame trimming, NVTX placement,
// correlation, aliases, attribution, graph kernels, PC samples, diagnostics,
// raw dumps and their replay — runs as it would on a GPU. Expected values
// come from the program's construction (see gpu_fake_app.cc).
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cct/node_values.h"
#include "collector/gpu/gpu_adapter_abi.h"
#include "store/database.h"
#include "tests/test_util.h"

using testutil::Run;
using testutil::TempDir;
using testutil::Tool;

namespace {

std::string App() { return testutil::BuildDir() + "/tests/collector/cct-test-gpu-fake-app"; }
std::string FakeAdapter() { return testutil::BuildDir() + "/tests/collector/libcct-test-fakegpu.so"; }

struct GpuRecorded {
  testutil::RunResult result;
  store::RunMeta meta;
  cct::Tree tree;
};

GpuRecorded Load(const std::string& db, size_t index = 0) {
  GpuRecorded out;
  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto runs = (*d)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() > index);
  out.meta = (*runs)[index];
  auto t = (*d)->ReadTree(out.meta.id);
  REQUIRE(t.ok());
  out.tree = std::move(*t);
  return out;
}

GpuRecorded RecordGpu(const std::string& db, const std::vector<std::string>& opts,
                std::map<std::string, std::string> env = {}) {
  std::vector<std::string> argv{Tool("cct-record"), "-o", db};
  argv.insert(argv.end(), opts.begin(), opts.end());
  argv.push_back("--");
  argv.push_back(App());
  env.emplace("CCT_GPU_ADAPTER", FakeAdapter());
  auto r = Run(argv, env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  GpuRecorded out = Load(db);
  out.result = r;
  return out;
}

// "kind:name" from the root's child down to `n`.
std::vector<std::string> PathOf(const cct::Tree& t, cct::NodeId n) {
  std::vector<std::string> path;
  for (; n != cct::kRootNode; n = t.parent(n))
    path.push_back(std::string(cct::FrameKindName(t.kind(n))) + ":" + std::string(t.name(n)));
  return {path.rbegin(), path.rend()};
}

// "/kind:name/kind:name..." of `n`: a key that matches nodes across trees.
std::string PathKey(const cct::Tree& t, cct::NodeId n) {
  std::string key;
  for (const auto& s : PathOf(t, n)) key += "/" + s;
  return key;
}

// Nodes whose path ends with `suffix`.
std::vector<cct::NodeId> Find(const cct::Tree& t, const std::vector<std::string>& suffix) {
  std::vector<cct::NodeId> out;
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    const auto p = PathOf(t, n);
    if (p.size() >= suffix.size() && std::equal(suffix.begin(), suffix.end(), p.end() - suffix.size())) out.push_back(n);
  }
  return out;
}

double Value(const cct::Tree& t, cct::NodeId n, const std::string& metric) {
  const cct::MetricId m = t.metrics().Find(metric);
  return m == cct::kNoMetric ? 0 : t.Value(n, m);
}

double Total(const cct::Tree& t, const std::string& metric) {
  const cct::MetricId m = t.metrics().Find(metric);
  if (m == cct::kNoMetric) return 0;
  double sum = 0;
  for (cct::NodeId n = 0; n < t.size(); ++n) sum += t.Value(n, m);
  return sum;
}

// The one node at a path suffix.
cct::NodeId One(const cct::Tree& t, const std::vector<std::string>& suffix) {
  const auto nodes = Find(t, suffix);
  std::string want;
  for (const auto& s : suffix) want += " / " + s;
  INFO("looking for" << want);
  REQUIRE(nodes.size() == 1);
  return nodes.front();
}

bool Available() {
  if (access(App().c_str(), X_OK) == 0 && access(FakeAdapter().c_str(), R_OK) == 0) return true;
  MESSAGE("skipped: the fake GPU program was not built (needs the CUDA toolkit's CUPTI and NVTX headers)");
  return false;
}

const std::string kScale = "kernel:scale_kernel(float*, int, float)";
const std::string kAdd = "kernel:add_kernel(float const*, float const*, float*, int)";

}  // namespace

// Every test here runs programs with the collector preloaded: the
// sanitizer build skips them (--test-suite-exclude=preload; an ASan
// collector cannot be preloaded into an uninstrumented program).
TEST_SUITE_BEGIN("preload");

TEST_CASE("gpu record: every operation lands under the CPU and NVTX context that launched it, with its metrics") {
  if (!Available()) return;
  TempDir dir;
  const GpuRecorded r = RecordGpu(dir / "gpu.db", {}, {{"FAKEGPU_DROPPED", "5"}});
  const cct::Tree& t = r.tree;

  // Copies, memset and allocation in upload() inside [upload].
  const cct::NodeId in = One(t, {"function:upload()", "nvtx:upload", "gpu-op:<gpu copyin>"});
  CHECK(Value(t, in, "gxcopy:h2d") == (3 << 20) + 4096);
  CHECK(Value(t, in, "gxcopy:count") == 1);
  CHECK(Value(t, in, "gxcopy") == 2000000);  // ns
  const cct::NodeId set = One(t, {"function:upload()", "nvtx:upload", "gpu-op:<gpu memset>"});
  CHECK(Value(t, set, "gmset:bytes") == 65536);
  CHECK(Value(t, set, "gmset") == 250000);
  const cct::NodeId alloc = One(t, {"function:upload()", "nvtx:upload", "gpu-op:<gpu alloc>"});
  CHECK(Value(t, alloc, "gmem:dev") == 1 << 20);
  CHECK(Value(t, alloc, "gmem:count") == 1);
  CHECK(Value(t, alloc, "gmem") == 30000);
  const cct::NodeId out = One(t, {"function:download()", "nvtx:download", "gpu-op:<gpu copyout>"});
  CHECK(Value(t, out, "gxcopy:d2h") == 1 << 20);
  CHECK(Value(t, out, "gxcopy") == 1500000);

  // Kernels in compute() inside [compute]: one placeholder, a node per kernel.
  const cct::NodeId scale = One(t, {"function:compute()", "nvtx:compute", "gpu-op:<gpu kernel>", kScale});
  CHECK(Value(t, scale, "gker:count") == 20);
  CHECK(Value(t, scale, "gker") == 20 * 1000000);
  CHECK(Value(t, scale, "gker:blks_acc") == 20 * 256);     // grid size in blocks, not threads per block
  CHECK(Value(t, scale, "gker:blk_thr_acc") == 20 * 128);
  CHECK(Value(t, scale, "gker:thr_reg_acc") == 20 * 32);
  CHECK(Value(t, scale, "gker:occ_acc") > 0);              // the device record gave the limits
  const cct::NodeId add = One(t, {"function:compute()", "nvtx:compute", "gpu-op:<gpu kernel>", kAdd});
  CHECK(Value(t, add, "gker:count") == 7);
  CHECK(Value(t, add, "gker") == 7 * 500000);

  // A CUDA graph's kernels: under the graph launch's site.
  for (const char* k : {"kernel:kernel_a()", "kernel:kernel_b()"}) {
    const cct::NodeId n = One(t, {"function:graph()", "gpu-op:<gpu kernel>", k});
    CHECK(Value(t, n, "gker:count") == 1);
    CHECK(Value(t, n, "gker") == 300000);
  }
  // The synchronization.
  const cct::NodeId sync = One(t, {"function:finish()", "gpu-op:<gpu sync>"});
  CHECK(Value(t, sync, "gsync") == 4000000);
  CHECK(Value(t, sync, "gsync:ctx") == 4000000);
  CHECK(Value(t, sync, "gsync:count") == 1);

  // Totals over the whole tree: nothing lost, nothing counted twice, nothing unknown.
  CHECK(Total(t, "gker") == 20 * 1000000 + 7 * 500000 + 2 * 300000 + 2000000);
  CHECK(Total(t, "gker:count") == 20 + 7 + 2 + 1);
  CHECK(Total(t, "gxcopy:count") == 2);
  CHECK(Find(t, {"gpu-op:<gpu unknown>"}).empty());
  // Placeholders sit directly under the program's functions (or their NVTX
  // ranges): the fake CUDA's frames, the adapter's and ours are trimmed, and
  // every launch path starts at main.
  for (cct::NodeId n = 1; n < t.size(); ++n) {
    if (t.kind(n) != cct::FrameKind::kGpuOp) continue;
    const auto p = PathOf(t, n);
    std::string path;
    for (const auto& s : p) path += " / " + s;
    INFO(path);
    CHECK(p[p.size() - 2].starts_with("function:") + p[p.size() - 2].starts_with("nvtx:") == 1);
    CHECK(path.find("fakecuda") == std::string::npos);
    CHECK(path.find("cctdb collector") == std::string::npos);
    CHECK(path.find("Launch") == std::string::npos);
    CHECK(std::find(p.begin(), p.end(), "function:main") != p.end());
    CHECK(std::find(p.begin(), p.end(), "unknown:<partial call path>") == p.end());
  }
  // No PC samples unless asked for.
  CHECK(t.metrics().Find("gins") == cct::kNoMetric);

  // Run facts and diagnostics; dropped records are shown, never silent.
  CHECK(r.meta.gpu_model == "cctdb fake GPU");
  CHECK(r.meta.extra["gpu"]["tracing"] == "on");
  CHECK(r.meta.diagnostics.at("gpu_dropped_records") == 5);
  // kernels, graph, two copies, memset, malloc, sampled kernel, sync
  CHECK(r.meta.diagnostics.at("gpu_launches") == 20 + 7 + 1 + 2 + 1 + 1 + 1 + 1);
  CHECK(r.meta.diagnostics.at("gpu_unknown_activities") == 0);
  CHECK(r.meta.diagnostics.at("gpu_lost_launch_sites") == 0);
  auto show = Run({Tool("cct-query"), "-d", dir / "gpu.db", "show", "latest"});
  REQUIRE(show.exit_code == 0);
  CHECK(show.out.find("gpu_dropped_records") != std::string::npos);
  CHECK(show.out.find("cctdb fake GPU") != std::string::npos);
  // The CPU side is still recorded.
  CHECK(Total(t, "cputime") > 0.02e9);
}

TEST_CASE("gpu record: --gpu on attaches before main, PC samples give gins per kernel source line") {
  if (!Available()) return;
  TempDir dir;
  const GpuRecorded r = RecordGpu(dir / "pc.db", {"--gpu", "on", "--gpu-pc-sampling"});
  const cct::Tree& t = r.tree;
  const cct::NodeId k = One(t, {"function:sampled()", "gpu-op:<gpu kernel>", kScale});
  CHECK(Value(t, k, "gker:count") == 1);
  const auto lines = Find(t, {"function:sampled()", "gpu-op:<gpu kernel>", kScale, "line:scale.cu:12"});
  REQUIRE(lines.size() == 1);
  CHECK(Value(t, lines[0], "gins") == 40);
  CHECK(Value(t, lines[0], "gins:stl_gmem") == 30);
  CHECK(Value(t, lines[0], "gins:stl_none") == 10);
  CHECK(Value(t, lines[0], "gins:stl_any") == 30);
  const auto line13 = Find(t, {kScale, "line:scale.cu:13"});
  REQUIRE(line13.size() == 1);
  CHECK(Value(t, line13[0], "gins") == 8);
  CHECK(Value(t, line13[0], "gins:stl_idep") == 6);
  CHECK(Value(t, line13[0], "gins:stl_any") == 6);
  CHECK(Total(t, "gins") == 48);
  CHECK(r.meta.extra["gpu"]["pc_sampling"] == true);
}

TEST_CASE("gpu record: --gpu off touches nothing; failures are one line, 125 with --gpu on") {
  if (!Available()) return;
  TempDir dir;
  {
    const GpuRecorded r = RecordGpu(dir / "off.db", {"--gpu", "off"});
    for (cct::NodeId n = 1; n < r.tree.size(); ++n) CHECK(r.tree.kind(n) != cct::FrameKind::kGpuOp);
    CHECK(r.meta.extra["gpu"]["tracing"] == "off (--gpu off)");
  }
  {
    // auto: the adapter cannot start; one line, and the CPU/NVTX run goes on.
    auto res = Run({Tool("cct-record"), "-o", dir / "auto.db", "--", App()},
                   {{"CCT_GPU_ADAPTER", FakeAdapter()}, {"FAKEGPU_FAIL", "no device in this test"}});
    INFO(res.err);
    CHECK(res.exit_code == 0);
    CHECK(res.err.find("cctdb: GPU tracing off: no device in this test\n") != std::string::npos);
    const GpuRecorded r = Load(dir / "auto.db");
    CHECK(r.meta.state == store::RunState::kComplete);
    CHECK(Total(r.tree, "cputime") > 0.02e9);
    CHECK(r.meta.extra["gpu"]["tracing"] == "off: no device in this test");
  }
  {
    // on: required; the program never runs.
    auto res = Run({Tool("cct-record"), "-o", dir / "on.db", "--gpu", "on", "--", App()},
                   {{"CCT_GPU_ADAPTER", FakeAdapter()}, {"FAKEGPU_FAIL", "no device in this test"}});
    CHECK(res.exit_code == 125);
    CHECK(res.err.find("GPU tracing cannot start: no device in this test") != std::string::npos);
  }
  // The real adapter on this machine: without a driver, auto says so once
  // and records; on fails with 125 before running the program.
  if (void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_LOCAL); cuda == nullptr &&
                                                                                  dlopen("libcuda.so.1", RTLD_LAZY) == nullptr) {
    // The fake program without the fake adapter: its calls are no-ops.
    auto a = Run({Tool("cct-record"), "-o", dir / "real.db", "--", App()});
    CHECK(a.exit_code == 0);
    CHECK(a.err.find("cct-record: GPU tracing off: no CUDA driver (libcuda.so.1 cannot be loaded)\n") != std::string::npos);
    auto o = Run({Tool("cct-record"), "-o", dir / "real.db", "--gpu", "on", "--", App()});
    CHECK(o.exit_code == 125);
    CHECK(testutil::LineCount(o.err) == 1);
    CHECK(o.err.find("GPU tracing cannot start: no CUDA driver") != std::string::npos);
  } else {
    MESSAGE("a CUDA driver is loadable here: the no-driver checks are skipped");
  }
  auto bad = Run({Tool("cct-record"), "-o", dir / "x.db", "--gpu", "maybe", "--", App()});
  CHECK(bad.exit_code == 125);
  CHECK(testutil::LineCount(bad.err) == 1);
}

// The real adapter module, loaded as the collector loads it: dlopen, then
// the entry point by name. The module hides the symbols of the archives it
// is linked from; the entry point once went with them, and no GPU run could
// have started ("... is not a GPU adapter of this cctdb version").
TEST_CASE("gpu record: the real CUPTI adapter module exports its entry point") {
  const std::string module = testutil::BuildDir() + "/src/collector/gpu/cupti/libcct-cupti.so";
  if (access(module.c_str(), R_OK) != 0) {
    MESSAGE("skipped: the CUPTI adapter module was not built");
    return;
  }
  void* handle = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* error = handle ? nullptr : dlerror();
  INFO((error ? error : ""));
  REQUIRE(handle != nullptr);
  auto entry = reinterpret_cast<CctdbGpuAdapterEntry>(dlsym(handle, collector::kGpuAdapterEntry));
  REQUIRE((entry != nullptr));
  const collector::GpuAdapter* adapter = entry();
  REQUIRE(adapter != nullptr);
  CHECK(adapter->abi == collector::kGpuAdapterAbi);
  CHECK(std::string(adapter->name) == "cupti");
  CHECK((adapter->start && adapter->flush && adapter->stop && adapter->stats && adapter->describe));

  // Through cct-record, the real module named as the adapter (which skips
  // cct-record's own driver probe): the collector loads it and calls start.
  // Without a GPU, start fails with the adapter's reason, not the loader's.
  if (!Available()) return;
  TempDir dir;
  auto on = Run({Tool("cct-record"), "-o", dir / "real.db", "--gpu", "on", "--", App()}, {{"CCT_GPU_ADAPTER", module}});
  INFO(on.err);
  if (on.exit_code == 125) {
    CHECK(testutil::LineCount(on.err) == 1);
    CHECK(on.err.find("GPU tracing cannot start: ") != std::string::npos);
    CHECK(on.err.find("not a GPU adapter") == std::string::npos);
    CHECK(on.err.find("cannot load") == std::string::npos);
  } else {
    CHECK(on.exit_code == 0);  // a machine with a GPU: traced
  }
}

TEST_CASE("gpu record: a raw dump replays into the same run") {
  if (!Available()) return;
  TempDir dir;
  const GpuRecorded r = RecordGpu(dir / "raw.db", {"--gpu-pc-sampling", "--gpu-raw", dir / "raw"},
                            {{"FAKEGPU_DROPPED", "3"}});
  const std::string dump = dir / ("raw/gpu-" + std::to_string(r.meta.pid) + ".cctraw");
  REQUIRE(std::filesystem::exists(dump));
  CHECK(r.meta.extra["gpu"]["raw_dump"] == dump);
  auto imp = Run({Tool("cct-import"), "-d", dir / "raw.db", "--from", "cupti-raw", "--name", "replayed", dump});
  INFO(imp.err);
  REQUIRE(imp.exit_code == 0);
  const GpuRecorded back = Load(dir / "raw.db", 1);
  CHECK(back.meta.name == "replayed");
  // Every node of either tree, by path, has the same value of every metric
  // in the other; GPU metrics included.
  auto values = [](const cct::Tree& t) {
    std::map<std::string, double> out;
    for (cct::NodeId n = 1; n < t.size(); ++n) {
      const std::string path = PathKey(t, n);
      for (cct::MetricId m = 0; m < t.metrics().size(); ++m) {
        const double v = t.Value(n, m);
        if (v != 0) out[path + " " + t.metrics().Get(m).name] += v;
      }
    }
    return out;
  };
  const auto live = values(r.tree), replayed = values(back.tree);
  CHECK(live.size() == replayed.size());
  size_t gpu_values = 0;
  for (const auto& entry : live) {
    const auto& key = entry.first;
    const auto& v = entry.second;
    INFO(key);
    auto it = replayed.find(key);
    REQUIRE(it != replayed.end());
    CHECK(it->second == v);
    if (key.find(" gker") != std::string::npos || key.find(" gxcopy") != std::string::npos ||
        key.find(" gins") != std::string::npos)
      ++gpu_values;
  }
  CHECK(gpu_values > 20);
  CHECK(Total(back.tree, "gins") == 48);
  CHECK(Total(back.tree, "gker:count") == 30);
  CHECK(back.meta.diagnostics.at("gpu_dropped_records") == 3);
}

TEST_CASE("gpu record: forked children trace their own GPU work only where CUDA can survive the fork") {
  if (!Available()) return;
  TempDir dir;
  auto gpu_ops = [](const cct::Tree& t) {
    int n = 0;
    for (cct::NodeId i = 1; i < t.size(); ++i) n += t.kind(i) == cct::FrameKind::kGpuOp;
    return n;
  };
  for (const std::string mode : {"fork-fresh", "fork-after"}) {
    INFO(mode);
    const std::string db = dir / (mode + ".db");
    auto r = Run({Tool("cct-record"), "-o", db, "--", App(), mode}, {{"CCT_GPU_ADAPTER", FakeAdapter()}});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const GpuRecorded parent = Load(db, 0), child = Load(db, 1);
    CHECK(child.meta.parent_run == parent.meta.id);
    if (mode == "fork-fresh") {
      // The parent never used CUDA; the child attached at its own cuInit.
      CHECK(gpu_ops(parent.tree) == 0);
      CHECK(Total(child.tree, "gker:count") == 27);
      CHECK(child.meta.extra["gpu"]["tracing"] == "on");
    } else {
      CHECK(Total(parent.tree, "gker:count") == 27);
      CHECK(gpu_ops(child.tree) == 0);
      CHECK(child.meta.extra["gpu"]["tracing"].get<std::string>().starts_with("off: a forked child"));
    }
  }
}

TEST_CASE("gpu record: --nvtx-inherit main puts a range-less thread's launches under the main thread's open ranges") {
  if (!Available()) return;
  // gpu_fake_app.cc, Iterations: in step 1 a second thread launches
  // add_kernel once while the main thread waits for it inside "step"; the
  // main thread launches add_kernel twice more outside every range.
  for (const bool inherit : {false, true}) {
    CAPTURE(inherit);
    TempDir dir;
    const std::string db = dir / "inherit.db";
    std::vector<std::string> argv{Tool("cct-record"), "-o", db};
    if (inherit) argv.insert(argv.end(), {"--nvtx-inherit", "main"});
    argv.insert(argv.end(), {"--", App(), "iterations"});
    auto r = Run(argv, {{"CCT_GPU_ADAPTER", FakeAdapter()}});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const GpuRecorded run = Load(db);
    const cct::Tree& t = run.tree;
    double in_step = 0, worker = 0, worker_in_step = 0;
    for (cct::NodeId n : Find(t, {"gpu-op:<gpu kernel>", kAdd})) {
      const auto path = PathOf(t, n);
      const bool under_step = std::find(path.begin(), path.end(), "nvtx:step") != path.end();
      const bool on_main = path.front() == "thread:main thread";
      const double count = Value(t, n, "gker:count");
      if (under_step) in_step += count;
      if (!on_main) worker += count;
      if (!on_main && under_step) worker_in_step += count;
      // The main thread's own launches outside "step" stay outside.
      if (on_main) CHECK_FALSE(under_step);
    }
    CHECK(worker == 1);
    CHECK(worker_in_step == (inherit ? 1 : 0));
    CHECK(in_step == (inherit ? 1 : 0));
    CHECK(Total(t, "gker:count") == 9);  // nothing lost or doubled
  }
  auto bad = Run({Tool("cct-record"), "--nvtx-inherit", "all", "--", "/bin/true"});
  CHECK(bad.exit_code == 125);
  CHECK(testutil::LineCount(bad.err) == 1);
}

TEST_CASE("gpu record: GPU work launched inside an --iteration range counts toward that iteration") {
  if (!Available()) return;
  TempDir dir;
  const std::string db = dir / "steps.db";
  auto r = Run({Tool("cct-record"), "-o", db, "--iteration", "^step$", "--gpu-raw", dir / "raw", "--", App(),
                "iterations"},
               {{"CCT_GPU_ADAPTER", FakeAdapter()}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const GpuRecorded run = Load(db);
  const cct::Tree& t = run.tree;
  // The whole run: scale_kernel 1+2+3 times, add_kernel before, inside step
  // 1 (another thread) and after (gpu_fake_app.cc, Iterations).
  CHECK(Total(t, "gker:count") == 9);
  CHECK(Total(t, "gxcopy:h2d") == double((1 + 2 + 3) << 20));

  auto d = store::Database::Open(db, store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto its = (*d)->ReadIterations(run.meta.id);
  REQUIRE(its.ok());
  REQUIRE(its->has_value());
  const store::RunIterations& iterations = **its;
  REQUIRE(iterations.iterations.size() == 3);
  // Sum of one metric in one iteration, optionally only on `nodes`.
  auto sum = [&](size_t k, const std::string& metric, const std::vector<cct::NodeId>& nodes = {}) {
    const cct::MetricId m = t.metrics().Find(metric);
    double s = 0;
    for (const store::IterationColumn& c : iterations.iterations[k].columns) {
      if (c.metric != m) continue;
      for (size_t i = 0; i < c.nodes.size(); ++i)
        if (nodes.empty() || std::find(nodes.begin(), nodes.end(), c.nodes[i]) != nodes.end()) s += c.values[i];
    }
    return s;
  };
  const auto scale_nodes = Find(t, {"function:step(int)", "nvtx:step", "gpu-op:<gpu kernel>", kScale});
  const auto add_nodes = Find(t, {"gpu-op:<gpu kernel>", kAdd});
  REQUIRE(scale_nodes.size() == 1);
  REQUIRE(add_nodes.size() >= 2);  // the main thread's sites and the second thread's
  for (size_t k = 0; k < 3; ++k) {
    INFO("iteration " << k);
    const double launches = double(k + 1);
    CHECK(sum(k, "gker:count", scale_nodes) == launches);
    CHECK(sum(k, "gker", scale_nodes) == launches * 1e6);
    CHECK(sum(k, "gker:count", add_nodes) == (k == 1 ? 1 : 0));
    CHECK(sum(k, "gker:count") == launches + (k == 1 ? 1 : 0));
    CHECK(sum(k, "gker:blks_acc", scale_nodes) == launches * 256);  // grid size in blocks, per launch
    CHECK(sum(k, "gxcopy:h2d") == double((k + 1) << 20));
    CHECK(sum(k, "gxcopy:count") == 1);
    CHECK(sum(k, "gxcopy") == 500000);
  }

  // Through the query layer: one iteration's tree, derived averages included.
  auto q = Run({Tool("cct-query"), "-d", db, "top", std::to_string(run.meta.id) + "@iter=3", "--by", "kernel", "-m",
                "gker:count", "-m", "gker:blks", "--format", "json"});
  INFO(q.err);
  REQUIRE(q.exit_code == 0);
  const auto top = nlohmann::json::parse(q.out);
  std::map<std::string, std::pair<double, double>> by_kernel;
  for (const auto& row : top["rows"])
    by_kernel[row["name"].get<std::string>()] = {row["inclusive"]["gker:count"].get<double>(),
                                                 row["inclusive"]["gker:blks"].get<double>()};
  REQUIRE(by_kernel.count("scale_kernel(float*, int, float)") == 1);
  CHECK(by_kernel["scale_kernel(float*, int, float)"].first == 3);
  CHECK(by_kernel["scale_kernel(float*, int, float)"].second == 256);
  CHECK(by_kernel.count("add_kernel(float const*, float const*, float*, int)") == 0);

  // The raw dump replays into the same iterations, CPU and GPU values alike.
  const std::string dump = dir / ("raw/gpu-" + std::to_string(run.meta.pid) + ".cctraw");
  auto imp = Run({Tool("cct-import"), "-d", db, "--from", "cupti-raw", dump});
  INFO(imp.err);
  REQUIRE(imp.exit_code == 0);
  const GpuRecorded back = Load(db, 1);
  auto back_its = (*d)->ReadIterations(back.meta.id);
  REQUIRE(back_its.ok());
  REQUIRE(back_its->has_value());
  REQUIRE((*back_its)->iterations.size() == 3);
  auto keyed = [](const cct::Tree& tree, const store::RunIterations& its) {
    std::map<std::string, double> out;
    for (const store::Iteration& it : its.iterations)
      for (const store::IterationColumn& c : it.columns)
        for (size_t i = 0; i < c.nodes.size(); ++i)
          out[std::to_string(it.index) + PathKey(tree, c.nodes[i]) + " " + tree.metrics().Get(c.metric).name] +=
              c.values[i];
    return out;
  };
  const auto live = keyed(t, iterations), replayed = keyed(back.tree, **back_its);
  CHECK(live == replayed);
  CHECK(live.size() > 20);
}

TEST_CASE("gpu record --trace: one trace event per GPU operation, on its node, with its bytes and duration") {
  if (!Available()) return;
  TempDir dir;
  const GpuRecorded r = RecordGpu(dir / "gpu.db", {"--trace"});
  const cct::Tree& t = r.tree;
  auto d = store::Database::Open(dir / "gpu.db", store::Database::Mode::kRead);
  REQUIRE(d.ok());
  auto read = (*d)->ReadTrace(r.meta.id);
  REQUIRE(read.ok());
  REQUIRE(read->has_value());
  const store::RunTrace& trace = **read;
  // gpu_fake_app.cc's construction: 20 + 7 kernels in compute(), two in
  // the graph, one in sampled(); one copy each way, a memset, an
  // allocation and a synchronization.
  std::map<cct::GpuOpKind, int> count;
  for (const store::TraceGpuActivity& a : trace.gpu) {
    ++count[a.kind];
    CHECK(a.node < t.size());
    CHECK(a.end_ns >= a.start_ns);
  }
  CHECK(count[cct::GpuOpKind::kKernel] == 30);
  CHECK(count[cct::GpuOpKind::kCopyIn] == 1);
  CHECK(count[cct::GpuOpKind::kCopyOut] == 1);
  CHECK(count[cct::GpuOpKind::kMemset] == 1);
  CHECK(count[cct::GpuOpKind::kAlloc] == 1);
  CHECK(count[cct::GpuOpKind::kSync] == 1);
  CHECK(std::is_sorted(trace.gpu.begin(), trace.gpu.end(),
                       [](const store::TraceGpuActivity& a, const store::TraceGpuActivity& b) { return a.start_ns < b.start_ns; }));
  const cct::NodeId in = One(t, {"function:upload()", "nvtx:upload", "gpu-op:<gpu copyin>"});
  const cct::NodeId set = One(t, {"function:upload()", "nvtx:upload", "gpu-op:<gpu memset>"});
  const cct::NodeId scale = One(t, {"function:compute()", "nvtx:compute", "gpu-op:<gpu kernel>", kScale});
  const cct::NodeId add = One(t, {"function:compute()", "nvtx:compute", "gpu-op:<gpu kernel>", kAdd});
  int scales = 0, adds = 0;
  for (const store::TraceGpuActivity& a : trace.gpu) {
    if (a.kind == cct::GpuOpKind::kCopyIn) {
      CHECK(a.node == in);
      CHECK(a.bytes == (uint64_t{3} << 20) + 4096);
      CHECK(a.end_ns - a.start_ns == 2000000);
    } else if (a.kind == cct::GpuOpKind::kCopyOut) {
      CHECK(a.bytes == uint64_t{1} << 20);
      CHECK(a.end_ns - a.start_ns == 1500000);
    } else if (a.kind == cct::GpuOpKind::kMemset) {
      CHECK(a.node == set);
      CHECK(a.bytes == 65536);
    } else if (a.kind == cct::GpuOpKind::kSync) {
      CHECK(a.end_ns - a.start_ns == 4000000);
    } else if (a.node == scale) {
      ++scales;
      CHECK(a.end_ns - a.start_ns == 1000000);
    } else if (a.node == add) {
      ++adds;
      CHECK(a.end_ns - a.start_ns == 500000);
    }
  }
  CHECK(scales == 20);
  CHECK(adds == 7);
  CHECK(trace.dropped == 0);
}

TEST_SUITE_END();
