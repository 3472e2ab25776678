// Real CUPTI records, replayed: tests/data/gpu/ holds what
// tests/gpu/check_gpu_e2e.py --save-fixtures wrote on a GPU machine (an
// H100; tests/gpu/README.md): the raw dump of one recorded run of
// tests/gpu/gpu_e2e.cu, the database cct-record wrote there, and the
// manifest with the JSON line the program printed about what it did.
//
// The expected values come from the program (bytes it copied, kernels it
// launched and their names, the CUDA events it timed in a run without the
// profiler), never from cctdb's own output: the replay must attribute each
// operation to the NVTX range and the CPU function that launched it, with
// the exact bytes and counts, as on the GPU. And the replay must give back
// the run that cct-record stored there, metric for metric.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using nlohmann::json;

std::string FixtureDir() { return testutil::SourceDir() + "/tests/data/gpu"; }

json Query(const std::vector<std::string>& args) {
  std::vector<std::string> argv{testutil::Tool("cct-query")};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--format");
  argv.push_back("json");
  auto r = testutil::Run(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

double Value(const json& node, const std::string& metric, const char* which = "exclusive") {
  const json& values = node.value(which, json::object());
  auto it = values.find(metric);
  return it == values.end() || it->is_null() ? 0.0 : it->get<double>();
}

// Every node with its ancestors (root first).
void Walk(const json& node, std::vector<const json*>& path,
          const std::function<void(const json&, const std::vector<const json*>&)>& visit) {
  visit(node, path);
  path.push_back(&node);
  for (const json& child : node.value("children", json::array())) Walk(child, path, visit);
  path.pop_back();
}

// The CPU function that made a CUDA call: the nearest function ancestor
// (the CUDA machinery is trimmed at recording), past the host wrapper nvcc
// generates for a kernel, which has the kernel's own name.
std::string Launcher(const std::vector<const json*>& ancestors, const std::string& kernel_name) {
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it)
    if ((*it)->value("kind", "") == "function" && (*it)->value("name", "") != kernel_name)
      return (*it)->value("name", "");
  return "";
}

bool Under(const std::vector<const json*>& ancestors, const std::string& range) {
  for (const json* a : ancestors)
    if (a->value("kind", "") == "nvtx" && a->value("name", "") == range) return true;
  return false;
}

struct Placed {
  double value = 0;
  int nodes = 0;
  std::vector<std::string> launchers;
};

// Sums `metric` over the nodes named `op` (a GPU placeholder, or a kernel
// node when `kernel` is set) that sit under the NVTX range `range`.
Placed Sum(const json& tree, const std::string& range, const std::string& op, const std::string& metric,
           bool kernel = false) {
  Placed p;
  std::vector<const json*> path;
  Walk(tree, path, [&](const json& n, const std::vector<const json*>& anc) {
    if (n.value("name", "") != op || !Under(anc, range)) return;
    if (kernel != (n.value("kind", "") == "kernel")) return;
    p.value += Value(n, metric);
    ++p.nodes;
    std::vector<const json*> above = anc;
    if (kernel && !above.empty()) above.pop_back();  // the <gpu kernel> placeholder
    p.launchers.push_back(Launcher(above, kernel ? op : ""));
  });
  return p;
}

void CheckLaunchers(const Placed& p, const std::string& function) {
  REQUIRE(p.nodes > 0);
  for (const std::string& l : p.launchers) {
    CAPTURE(l);
    CHECK(l.rfind(function + "(", 0) == 0);
  }
}

}  // namespace

TEST_CASE("gpu fixtures: real CUPTI records replay to what the program did, under the ranges and calls that did it") {
  const std::string dir = FixtureDir();
  const json manifest = json::parse(testutil::ReadFileOrDie(dir + "/gpu_e2e.manifest.json"));
  const json& prog = manifest.at("runs").at("gpu_e2e_raw");  // the program's own account of the recorded run
  const json& bare = manifest.at("bare");                     // the same program without the profiler
  REQUIRE(manifest.at("raw_files").size() == 1);
  const std::string raw = dir + "/raw/" + manifest.at("raw_files")[0].get<std::string>();

  testutil::TempDir tmp;
  const std::string db = tmp / "replay.db";
  auto imp = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "cupti-raw", "--name", "replay", raw});
  INFO(imp.err);
  REQUIRE(imp.exit_code == 0);
  CHECK(imp.err.empty());  // recorded with this build's CUPTI API version: no warning

  std::vector<std::string> args{"-d", db, "tree", "replay"};
  for (const char* m : {"gxcopy:h2d", "gxcopy:d2h", "gxcopy:count", "gker", "gker:count", "gmset:bytes", "gmem:dev"}) {
    args.push_back("-m");
    args.push_back(m);
  }
  const json tree = Query(args);

  SUBCASE("copies: exact bytes, under upload/download, launched by those functions") {
    const Placed h2d = Sum(tree, "upload", "<gpu copyin>", "gxcopy:h2d");
    CHECK(h2d.value == prog.at("h2d_bytes").get<double>());
    CHECK(Sum(tree, "upload", "<gpu copyin>", "gxcopy:count").value == prog.at("h2d_copies").size());
    CheckLaunchers(h2d, "upload");
    const Placed d2h = Sum(tree, "download", "<gpu copyout>", "gxcopy:d2h");
    CHECK(d2h.value == prog.at("d2h_bytes").get<double>());
    CheckLaunchers(d2h, "download");
    // Nothing of either direction anywhere else.
    CHECK(Value(tree, "gxcopy:h2d", "inclusive") == prog.at("h2d_bytes").get<double>());
    CHECK(Value(tree, "gxcopy:d2h", "inclusive") == prog.at("d2h_bytes").get<double>());
  }
  SUBCASE("kernels: names, launch counts, time against the bare run's CUDA events, launched by compute()") {
    double launches = 0;
    for (const auto& item : prog.at("kernels").items()) {
      // (Named copies: CAPTURE's lambda cannot refer to a structured binding in clang 14.)
      const std::string key = item.key();
      const json& k = item.value();
      CAPTURE(key);
      const std::string name = k.at("name");
      const Placed count = Sum(tree, "compute", name, "gker:count", /*kernel=*/true);
      CHECK(count.value == k.at("launches").get<double>());
      CheckLaunchers(count, "compute");
      const double gker = Sum(tree, "compute", name, "gker", true).value;
      const double events_s = bare.at("kernels").at(key).at("event_ms").get<double>() / 1000.0;
      CHECK(std::abs(gker / events_s - 1) <= 0.10);
      launches += k.at("launches").get<double>();
    }
    CHECK(Value(tree, "gker:count", "inclusive") == launches);
  }
  SUBCASE("memset and allocations: exact bytes in their ranges") {
    const Placed memset = Sum(tree, "clear", "<gpu memset>", "gmset:bytes");
    CHECK(memset.value == prog.at("memset_bytes").get<double>());
    CheckLaunchers(memset, "clear");
    CHECK(Sum(tree, "alloc", "<gpu alloc>", "gmem:dev").value == prog.at("device_alloc_bytes").get<double>());
  }
  SUBCASE("the replay is the run cct-record stored on the GPU machine") {
    const std::string recorded_db = tmp / "recorded.db";
    std::filesystem::copy_file(dir + "/gpu_e2e.db", recorded_db);  // read-only use, but LMDB wants its lock file
    const json stored = Query({"-d", recorded_db, "show", "gpu_e2e_raw"}).at("totals");
    const json replayed = Query({"-d", db, "show", "replay"}).at("totals");
    int compared = 0;
    for (const auto& item : stored.items()) {
      const std::string metric = item.key();
      const json& v = item.value();
      if (metric.rfind("g", 0) != 0) continue;  // GPU metrics; the CPU samples are not in the dump
      CAPTURE(metric);
      REQUIRE(replayed.contains(metric));
      CHECK(replayed.at(metric).get<double>() == doctest::Approx(v.get<double>()).epsilon(1e-9));
      ++compared;
    }
    CHECK(compared >= 20);
    auto check = testutil::Run({testutil::Tool("cct-query"), "check", recorded_db});
    INFO(check.out << check.err);
    CHECK(check.exit_code == 0);
  }
}
