// Time and peak memory of `cct-query export --to perfetto` on a stored run
// with a synthetic trace of EVENTS events (90% samples on THREADS threads,
// 5% NVTX ranges, 5% GPU activities on 4 devices x 8 streams, a quarter of
// them copies) on a tree of NODES nodes, against two baselines measured in the
// same invocation: `cct-query export --to csv` of the same run (the tool
// reading the run's tree and writing a table) and Database::ReadTrace in this
// process (decoding the trace section, which the export must do first).
//
// Prints JSON: seconds and peak RSS (MiB) of each, best of RUNS, and the
// export's file size.
//   perfetto-export-bench CCT_QUERY [EVENTS=10000000] [THREADS=16] [NODES=100000] [RUNS=3]
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "store/database.h"
#include "store/trace.h"

namespace {

double NowS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Timed {
  double seconds = 0;
  double peak_mib = 0;
  int status = -1;
};

// Runs argv to completion: its wall time and its own peak RSS (wait4).
Timed RunTimed(const std::vector<std::string>& argv) {
  Timed r;
  const double t0 = NowS();
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  r.seconds = NowS() - t0;
  r.peak_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  r.status = status;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: perfetto-export-bench CCT_QUERY [EVENTS] [THREADS] [NODES] [RUNS]\n");
    return 2;
  }
  const std::string query = argv[1];
  const size_t events = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10'000'000;
  const size_t threads = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 16;
  const size_t nodes = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 100'000;
  const int runs = argc > 5 ? std::atoi(argv[5]) : 3;
  if (events < 100 || threads == 0 || nodes < threads + 2 || runs < 1) {
    std::fprintf(stderr, "perfetto-export-bench: bad arguments\n");
    return 2;
  }
  std::mt19937_64 rng(42);

  // The tree: threads, then functions mostly below recent nodes (deep
  // paths), some GPU placeholders with a kernel below.
  cct::Tree tree;
  tree.metrics().RegisterStandard("cputime").value();
  std::vector<cct::NodeId> all, thread_nodes, placeholders;
  for (size_t t = 0; t < threads; ++t) {
    thread_nodes.push_back(
        tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kThread, "thread " + std::to_string(t))));
    all.push_back(thread_nodes.back());
  }
  while (tree.size() < nodes) {
    const size_t back = rng() % 4 == 0 ? rng() % all.size() : all.size() - 1 - rng() % std::min<size_t>(all.size(), 8);
    const std::string name = "f" + std::to_string(tree.size());
    all.push_back(tree.InternChild(all[back], tree.InternFrame(cct::FrameKind::kFunction, name, {}, "src.cc",
                                                               static_cast<uint32_t>(tree.size() % 1000))));
    tree.AddValue(all.back(), 0, 1);
    if (tree.size() % 1000 == 0) {
      const cct::NodeId ph =
          tree.InternChild(all.back(), tree.InternFrame(cct::FrameKind::kGpuOp, std::string(cct::GpuOpPlaceholder(
                                                                                     cct::GpuOpKind::kKernel))));
      placeholders.push_back(tree.InternChild(ph, tree.InternFrame(cct::FrameKind::kKernel, "kernel" + name)));
    }
  }

  // The trace: samples at ~1 kHz per thread wandering near the last node,
  // ranges up to 10 ms, GPU activities back to back.
  store::RunTrace trace;
  const size_t samples = events * 9 / 10, ranges = events / 20, gpu = events - samples - ranges;
  const int64_t t0 = 1'700'000'000'000'000'000;
  for (size_t th = 0; th < threads; ++th) {
    store::TraceSamples s;
    s.thread = thread_nodes[th];
    int64_t t = t0 + static_cast<int64_t>(rng() % 1'000'000);
    size_t at = th;
    for (size_t i = 0; i < samples / threads; ++i) {
      t += 980'000 + static_cast<int64_t>(rng() % 40'000);
      if (rng() % 10 >= 3) at = std::clamp<int64_t>(static_cast<int64_t>(at) + static_cast<int64_t>(rng() % 201) - 100,
                                                    static_cast<int64_t>(threads), static_cast<int64_t>(all.size()) - 1);
      s.time_ns.push_back(t);
      s.node.push_back(all[at]);
    }
    trace.samples.push_back(std::move(s));
  }
  int64_t t = t0;
  for (size_t i = 0; i < ranges; ++i) {
    t += static_cast<int64_t>(rng() % 2'000'000);
    trace.ranges.push_back({thread_nodes[rng() % threads], all[threads + rng() % (all.size() - threads)], t,
                            t + static_cast<int64_t>(rng() % 10'000'000)});
  }
  t = t0;
  for (size_t i = 0; i < gpu; ++i) {
    store::TraceGpuActivity g;
    g.device = static_cast<uint32_t>(rng() % 4);
    g.stream = 7 + static_cast<uint32_t>(rng() % 8);
    const bool copy = rng() % 4 == 0;
    g.kind = copy ? cct::GpuOpKind::kCopyIn : cct::GpuOpKind::kKernel;
    t += static_cast<int64_t>(rng() % 20'000);
    g.start_ns = t;
    g.end_ns = t + 2'000 + static_cast<int64_t>(rng() % 50'000);
    g.bytes = copy ? 4096 + rng() % (64u << 20) : 0;
    g.node = placeholders.empty() ? all.back() : placeholders[rng() % placeholders.size()];
    trace.gpu.push_back(g);
  }

  char dir_template[] = "/tmp/perfetto-bench-XXXXXX";
  if (!mkdtemp(dir_template)) return 1;
  const std::string dir = dir_template, db_path = dir + "/bench.db";
  store::RunId run_id = 0;
  {
    auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
    if (!db.ok()) return std::fprintf(stderr, "%s\n", db.status().message().c_str()), 1;
    store::RunMeta meta;
    meta.name = "bench";
    meta.source = "perfetto-export-bench";
    meta.state = store::RunState::kComplete;
    const cct::Status st = (*db)->CreateRun(meta, &tree, nullptr, &trace);
    if (!st.ok()) return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
    run_id = meta.id;
  }
  const uint64_t stored_events = store::TraceEventCount(trace);
  trace = store::RunTrace();

  Timed perfetto{1e300}, csv{1e300};
  double read_trace = 1e300;
  for (int r = 0; r < runs; ++r) {
    const Timed p = RunTimed({query, "-d", db_path, "export", "bench", "--to", "perfetto", "-o", dir + "/t.pftrace"});
    const Timed c = RunTimed({query, "-d", db_path, "export", "bench", "--to", "csv", "-o", dir + "/t.csv"});
    if (p.status != 0 || c.status != 0) return std::fprintf(stderr, "perfetto-export-bench: an export failed\n"), 1;
    if (p.seconds < perfetto.seconds) perfetto = p;
    if (c.seconds < csv.seconds) csv = c;
    auto db = store::Database::Open(db_path, store::Database::Mode::kRead);
    const double r0 = NowS();
    auto tr = (*db)->ReadTrace(run_id);
    read_trace = std::min(read_trace, NowS() - r0);
    if (!tr.ok() || !tr->has_value()) return 1;
  }
  const double file_mib = static_cast<double>(std::filesystem::file_size(dir + "/t.pftrace")) / (1 << 20);
  std::printf("{\"events\": %llu, \"threads\": %zu, \"nodes\": %zu, \"runs\": %d,\n"
              " \"perfetto_export_s\": %.3f, \"perfetto_export_peak_mib\": %.1f, \"perfetto_file_mib\": %.1f,\n"
              " \"csv_export_s\": %.3f, \"csv_export_peak_mib\": %.1f,\n"
              " \"read_trace_in_process_s\": %.3f}\n",
              static_cast<unsigned long long>(stored_events), threads, tree.size(), runs, perfetto.seconds,
              perfetto.peak_mib, file_mib, csv.seconds, csv.peak_mib, read_trace);
  std::filesystem::remove_all(dir);
  return 0;
}
