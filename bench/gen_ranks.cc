// gen-ranks OUT.db RUNS NODES: a synthetic MPI job for bench/aggregate_bench.py
// (docs/performance.md, "Job aggregation"): RUNS rank runs (launcher rank
// 0..RUNS-1, tag job=bench) of NODES nodes each, the same tree shape in
// every rank (ten children per node, breadth first; ten function names, so
// path identity is the position) with per-rank variation: each node's
// cputime is a whole number of ns that varies with rank and node, and a
// leaf in 17 is missing in each rank (a different one per rank). Written
// 256 runs per transaction. Prints the generation time.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "store/database.h"
#include "store/run_file.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: gen-ranks OUT.db RUNS NODES\n");
    return 2;
  }
  const std::string path = argv[1];
  const long runs = std::atol(argv[2]), nodes = std::atol(argv[3]);
  if (runs <= 0 || nodes <= 1) {
    std::fprintf(stderr, "gen-ranks: RUNS > 0 and NODES > 1\n");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  auto db = store::Database::Open(path, store::Database::Mode::kWrite);
  if (!db.ok()) {
    std::fprintf(stderr, "gen-ranks: %s\n", db.status().message().c_str());
    return 2;
  }
  std::vector<store::RunFile> batch;
  for (long r = 0; r < runs; ++r) {
    cct::Tree t;
    const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
    std::vector<cct::FrameId> frames;
    for (int k = 0; k < 10; ++k) frames.push_back(t.InternFrame(cct::FrameKind::kFunction, "f" + std::to_string(k), "app"));
    t.Reserve(static_cast<size_t>(nodes));
    std::vector<cct::NodeId> id(static_cast<size_t>(nodes), cct::kRootNode);
    for (long i = 1; i < nodes; ++i) {
      const long parent = (i - 1) / 10;
      const bool leaf = 10 * i + 1 >= nodes;
      if (leaf && (i + r) % 17 == 0) continue;  // this rank lacks this leaf
      id[i] = t.InternChild(id[parent], frames[(i - 1) % 10]);
      const double base = 1000.0 + static_cast<double>((i * 7919) % 100000);
      t.AddValue(id[i], cpu, std::floor(base * (1.0 + 0.3 * std::sin(static_cast<double>(r) * 0.7 + i))));
    }
    store::RunFile f;
    f.meta.name = "bench";
    f.meta.source = "gen-ranks";
    f.meta.state = store::RunState::kComplete;
    f.meta.tags = {{"job", "bench"}};
    f.meta.launcher = store::LauncherRank{r, runs, r % 2, "OMPI_COMM_WORLD_RANK"};
    auto sections = store::EncodeRun(f.meta, &t, nullptr);
    if (!sections.ok()) return 2;
    f.sections = std::move(*sections);
    batch.push_back(std::move(f));
    if (batch.size() == 256 || r + 1 == runs) {
      const cct::Status s = (*db)->PutRuns(batch);
      if (!s.ok()) {
        std::fprintf(stderr, "gen-ranks: %s\n", s.message().c_str());
        return 2;
      }
      batch.clear();
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("generated %ld rank runs of %ld nodes in %.2f s\n", runs, nodes, secs);
  return 0;
}
