// Size and speed of the trace section (store/trace_codec.h, kind 8) on a
// synthetic recording: THREADS threads sampled at 1 kHz (1 ms periods with
// +-2% jitter) on a tree of NODES nodes, each sample's node a random walk in
// preorder (30% the same node, 60% within 100 nodes, 10% anywhere: code runs
// in a neighbourhood and sometimes leaves it), plus NVTX ranges and GPU
// activities (4 devices x 8 streams, kernels and copies back to back).
//
// Prints JSON: bytes per sample (median over threads and runs, and the mean)
// against the raw in-memory size (int64 time + u32 node), bytes per GPU
// activity against sizeof(TraceGpuActivity), bytes per NVTX range (random
// range nodes, starts up to 2 ms apart, up to 10 ms long), and encode/decode ns per event
// for the whole trace (best of 3) against copying the raw arrays once.
//   trace-codec-bench [EVENTS=10000000] [THREADS=16] [NODES=100000] [RUNS=3]
// EVENTS: 90% samples, 5% ranges, 5% GPU activities.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "store/trace_codec.h"
#include "store/tree_codec.h"

namespace {

double NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct Setup {
  cct::Tree tree;
  std::vector<cct::NodeId> stored;    // tree id -> stored id
  std::vector<cct::NodeId> by_order;  // stored id -> tree id
  std::vector<cct::NodeId> threads;   // tree ids
};

Setup MakeTree(size_t nodes, size_t threads, std::mt19937_64& rng) {
  Setup s;
  s.tree.metrics().RegisterStandard("cputime").value();
  std::vector<cct::NodeId> all;
  for (size_t t = 0; t < threads; ++t) {
    s.threads.push_back(s.tree.InternChild(cct::kRootNode,
                                           s.tree.InternFrame(cct::FrameKind::kThread, "thread " + std::to_string(t))));
    all.push_back(s.threads.back());
  }
  while (s.tree.size() < nodes) {
    // Mostly deep (a recent node as the parent), sometimes anywhere.
    const size_t back = rng() % 4 == 0 ? rng() % all.size() : all.size() - 1 - rng() % std::min<size_t>(all.size(), 8);
    all.push_back(s.tree.InternChild(all[back], s.tree.InternFrame(cct::FrameKind::kFunction,
                                                                    "f" + std::to_string(s.tree.size()))));
  }
  store::EncodeTree(s.tree, &s.stored);
  s.by_order.resize(s.stored.size());
  for (cct::NodeId n = 0; n < s.stored.size(); ++n) s.by_order[s.stored[n]] = n;
  return s;
}

store::RunTrace MakeTrace(const Setup& s, size_t samples, size_t ranges, size_t gpu, std::mt19937_64& rng) {
  store::RunTrace tr;
  const auto n = static_cast<int64_t>(s.tree.size());
  const int64_t t0 = 1'700'000'000'000'000'000;
  const size_t per_thread = samples / s.threads.size();
  for (cct::NodeId thread : s.threads) {
    store::TraceSamples x;
    x.thread = thread;
    x.time_ns.reserve(per_thread);
    x.node.reserve(per_thread);
    int64_t t = t0 + static_cast<int64_t>(rng() % 1'000'000);
    int64_t at = s.stored[thread];
    for (size_t i = 0; i < per_thread; ++i) {
      t += 980'000 + static_cast<int64_t>(rng() % 40'000);
      const unsigned r = rng() % 10;
      if (r >= 3 && r < 9) at += static_cast<int64_t>(rng() % 201) - 100;
      else if (r == 9) at = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
      at = std::clamp<int64_t>(at, 1, n - 1);
      x.time_ns.push_back(t);
      x.node.push_back(s.by_order[static_cast<size_t>(at)]);
    }
    tr.samples.push_back(std::move(x));
  }
  int64_t t = t0;
  for (size_t i = 0; i < ranges; ++i) {
    t += static_cast<int64_t>(rng() % 2'000'000);
    tr.ranges.push_back({s.threads[rng() % s.threads.size()], static_cast<cct::NodeId>(1 + rng() % (n - 1)), t,
                         t + static_cast<int64_t>(rng() % 10'000'000)});
  }
  t = t0;
  cct::NodeId placeholder = static_cast<cct::NodeId>(n / 2);
  for (size_t i = 0; i < gpu; ++i) {
    store::TraceGpuActivity g;
    g.device = static_cast<uint32_t>(rng() % 4);
    g.stream = static_cast<uint32_t>(rng() % 8) + 7;
    const bool copy = rng() % 4 == 0;
    g.kind = copy ? cct::GpuOpKind::kCopyIn : cct::GpuOpKind::kKernel;
    t += static_cast<int64_t>(rng() % 20'000);
    g.start_ns = t;
    g.end_ns = t + 2'000 + static_cast<int64_t>(rng() % 50'000);
    g.bytes = copy ? 4096 + rng() % (64u << 20) : 0;
    if (rng() % 4 == 0) placeholder = static_cast<cct::NodeId>(1 + rng() % (n - 1));
    g.node = placeholder;
    tr.gpu.push_back(g);
  }
  return tr;
}

constexpr double kHeaderBytes = 44;  // the section's fixed header (docs/format.md)

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  const size_t threads = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 16;
  const size_t nodes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 100'000;
  const int runs = argc > 4 ? std::atoi(argv[4]) : 3;
  if (events < 100 || threads == 0 || nodes < threads + 2 || runs < 1) {
    std::fprintf(stderr, "usage: trace-codec-bench [EVENTS>=100] [THREADS>=1] [NODES] [RUNS>=1]\n");
    return 2;
  }
  std::mt19937_64 rng(42);
  const Setup s = MakeTree(nodes, threads, rng);
  const size_t samples = events * 9 / 10, ranges = events / 20, gpu = events - samples - ranges;

  // Bytes per sample: each thread's stream alone, in every run.
  std::vector<double> per_sample;
  double sample_bytes = 0, sample_count = 0;
  double best_encode = 1e300, best_decode = 1e300, best_copy = 1e300;
  double gpu_bytes = 0, range_bytes = 0, total_bytes = 0;
  size_t total_events = 0;
  for (int run = 0; run < runs; ++run) {
    const store::RunTrace tr = MakeTrace(s, samples, ranges, gpu, rng);
    for (const store::TraceSamples& x : tr.samples) {
      store::RunTrace one;
      one.samples.push_back(x);
      const auto enc = store::EncodeTrace(one, s.tree, s.stored);
      if (!enc.ok()) return std::fprintf(stderr, "%s\n", enc.status().message().c_str()), 1;
      const double b = static_cast<double>(enc->payload.size()) - kHeaderBytes;
      per_sample.push_back(b / static_cast<double>(x.time_ns.size()));
      sample_bytes += b;
      sample_count += static_cast<double>(x.time_ns.size());
    }
    store::RunTrace only_gpu;
    only_gpu.gpu = tr.gpu;
    const auto genc = store::EncodeTrace(only_gpu, s.tree, s.stored);
    gpu_bytes = static_cast<double>(genc->payload.size()) - kHeaderBytes;
    store::RunTrace only_ranges;
    only_ranges.ranges = tr.ranges;
    range_bytes = static_cast<double>(store::EncodeTrace(only_ranges, s.tree, s.stored)->payload.size()) - kHeaderBytes;

    // The whole trace: encode, decode, and the baseline copy of its raw arrays.
    double t = NowNs();
    const auto enc = store::EncodeTrace(tr, s.tree, s.stored);
    best_encode = std::min(best_encode, NowNs() - t);
    if (!enc.ok()) return std::fprintf(stderr, "%s\n", enc.status().message().c_str()), 1;
    t = NowNs();
    const auto dec = store::DecodeTrace(enc->payload, s.tree.size());
    best_decode = std::min(best_decode, NowNs() - t);
    if (!dec.ok()) return std::fprintf(stderr, "%s\n", dec.status().message().c_str()), 1;
    t = NowNs();
    store::RunTrace copy = tr;
    best_copy = std::min(best_copy, NowNs() - t);
    if (copy.gpu.size() != tr.gpu.size()) return 1;
    total_bytes = static_cast<double>(enc->payload.size());
    total_events = store::TraceEventCount(tr);
  }
  const double raw_sample = sizeof(int64_t) + sizeof(cct::NodeId);
  const double raw_gpu = sizeof(store::TraceGpuActivity);
  const double ev = static_cast<double>(total_events);
  std::printf(
      "{\"events\": %zu, \"threads\": %zu, \"tree_nodes\": %zu, \"runs\": %d,\n"
      " \"bytes_per_sample_median\": %.2f, \"bytes_per_sample_mean\": %.2f, \"raw_bytes_per_sample\": %.0f, "
      "\"sample_ratio\": %.3f,\n"
      " \"bytes_per_gpu_activity\": %.2f, \"raw_bytes_per_gpu_activity\": %.0f, \"gpu_ratio\": %.3f,\n"
      " \"bytes_per_range\": %.2f, \"section_bytes\": %.0f, \"bytes_per_event\": %.2f,\n"
      " \"encode_ns_per_event\": %.2f, \"decode_ns_per_event\": %.2f, \"decode_s\": %.3f, "
      "\"raw_copy_ns_per_event\": %.2f, \"encode_vs_copy\": %.2f, \"decode_vs_copy\": %.2f}\n",
      total_events, threads, s.tree.size(), runs, Median(per_sample), sample_bytes / sample_count, raw_sample,
      Median(per_sample) / raw_sample, gpu_bytes / static_cast<double>(gpu), raw_gpu,
      gpu_bytes / static_cast<double>(gpu) / raw_gpu, range_bytes / static_cast<double>(ranges), total_bytes, total_bytes / ev, best_encode / ev,
      best_decode / ev, best_decode / 1e9, best_copy / ev, best_encode / best_copy, best_decode / best_copy);
  return 0;
}
