// GPU activity decoding + attribution throughput (docs/performance.md, "GPU
// activity decoding").
//
// Builds activity buffers the way CUPTI lays them out — CUPTI's own record
// structs back to back, 4 MiB per buffer — with a mix like a training step's
// (kernels 70 %, copies 12 %, memsets 6 %, synchronizations 6 %, memory
// allocations/frees 6 %), every record with its own correlation id, over many
// launch sites and kernel names. Then times, on one thread:
//   decode     ActivityDecoder::DecodeBuffer into a fresh vector per buffer
//   attribute  GpuAttributor::Add of the decoded activities
//   both       decode + attribute per buffer (one reused vector)
//   adapter    cuptiActivityGetNextRecord + Decode per record + attribute: the
//              adapter's delivery path (CUPTI's iterator works without a GPU)
//   runtime    decode + attribute against the runtime's lock-free
//              CorrelationTable (what the collector does at each delivery)
//   iterations the runtime path with every launch inside one of 100
//              iterations (`--iteration`), over all 20,000 sites and over
//              500: the per-iteration accumulation, then what a checkpoint
//              adds (sealing, iteration columns); the ratio to `runtime` and
//              the bytes the iteration values hold
//   replay     the same buffers written as a raw GPU dump (RawDumpWriter, as
//              `cct-record --gpu-raw` writes them), then ReplayRawDump of the
//              file: reading, checksums, decoding, attribution, metrics into
//              the tree — what `cct-import --from cupti-raw` does
// and prints records per second for each.
//
//   gpu-decode-bench [RECORDS_PER_PASS [PASSES]]   (defaults 1000000, 10)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <cupti.h>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "collector/gpu/cupti/cupti_decode.h"
#include "collector/gpu/gpu_metrics.h"
#include "collector/gpu/gpu_nodes.h"
#include "collector/gpu/gpu_raw_dump.h"
#include "store/run_meta.h"

using collector::GpuActivity;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kBufferBytes = size_t{4} << 20;

struct Buffer {
  std::vector<uint64_t> words = std::vector<uint64_t>(kBufferBytes / 8);
  size_t bytes = 0;
  template <class T>
  bool Add(const T& r) {
    if (bytes + sizeof(T) > kBufferBytes) return false;
    std::memcpy(reinterpret_cast<uint8_t*>(words.data()) + bytes, &r, sizeof(T));
    bytes += sizeof(T);
    return true;
  }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(words.data()); }
};

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

int main(int argc, char** argv) {
  const size_t records = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const int passes = argc > 2 ? std::atoi(argv[2]) : 10;
  constexpr uint32_t kSites = 20000, kNames = 200;

  std::vector<std::string> names;
  for (uint32_t i = 0; i < kNames; ++i)
    names.push_back("_ZN5torch6kernel" + std::to_string(i) + "IfLi128EEEvPKT_PS1_ii");

  std::mt19937_64 rng(42);
  std::vector<Buffer> buffers(1);
  collector::LaunchSites sites;
  sites.reserve(records);
  auto add = [&](const auto& r) {
    if (!buffers.back().Add(r)) {
      buffers.emplace_back();
      buffers.back().Add(r);
    }
  };
  {
    CUpti_ActivityDevice5 d;
    std::memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.computeCapabilityMajor = 9;
    add(d);
  }
  for (uint32_t corr = 1; corr <= records; ++corr) {
    const uint32_t pick = static_cast<uint32_t>(rng() % 100);
    const uint32_t site = static_cast<uint32_t>(rng() % kSites);
    const uint64_t start = uint64_t{corr} * 1000;
    cct::GpuOpKind kind = cct::GpuOpKind::kKernel;
    if (pick < 70) {
      CUpti_ActivityKernel10 k;
      std::memset(&k, 0, sizeof k);
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.correlationId = corr;
      k.start = start;
      k.end = start + 500 + rng() % 1000;
      k.name = names[site % kNames].c_str();
      k.gridX = 1 + static_cast<int>(rng() % 4096);
      k.gridY = k.gridZ = 1;
      k.blockX = 32 << (rng() % 6);
      k.blockY = k.blockZ = 1;
      k.registersPerThread = static_cast<uint16_t>(16 + 8 * (site % 12));
      k.staticSharedMemory = static_cast<int32_t>((site % 4) * 4096);
      k.dynamicSharedMemory = static_cast<int32_t>((site % 3) * 8192);
      add(k);
    } else if (pick < 82) {
      CUpti_ActivityMemcpy6 m;
      std::memset(&m, 0, sizeof m);
      m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      m.copyKind = static_cast<uint8_t>(1 + rng() % 10);
      m.bytes = 1 + rng() % (1 << 24);
      m.correlationId = corr;
      m.start = start;
      m.end = start + 2000;
      add(m);
      kind = cct::GpuOpKind::kCopy;
    } else if (pick < 88) {
      CUpti_ActivityMemset4 m;
      std::memset(&m, 0, sizeof m);
      m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
      m.bytes = 4096;
      m.correlationId = corr;
      m.start = start;
      m.end = start + 300;
      add(m);
      kind = cct::GpuOpKind::kMemset;
    } else if (pick < 94) {
      CUpti_ActivitySynchronization2 s;
      std::memset(&s, 0, sizeof s);
      s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
      s.type = static_cast<CUpti_ActivitySynchronizationType>(1 + rng() % 4);
      s.correlationId = corr;
      s.start = start;
      s.end = start + 10000;
      add(s);
      kind = cct::GpuOpKind::kSync;
    } else {
      CUpti_ActivityMemory4 m;
      std::memset(&m, 0, sizeof m);
      m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
      m.memoryOperationType = (rng() & 1) ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                                          : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
      m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      m.bytes = 1 << 20;
      m.correlationId = corr;
      m.timestamp = start;
      add(m);
      kind = cct::GpuOpKind::kAlloc;
    }
    sites.emplace(corr, collector::LaunchSite{site, kind});
  }
  size_t total_bytes = 0;
  for (const Buffer& b : buffers) total_bytes += b.bytes;
  const double per_pass = static_cast<double>(records + 1);
  std::printf("%zu records in %zu buffers of 4 MiB (%.1f MiB, %.0f bytes/record), %u sites, %u kernel names, %d passes\n",
              records + 1, buffers.size(), total_bytes / 1048576.0, total_bytes / per_pass, kSites, kNames, passes);

  // decode only
  double decode_s = 1e30, attribute_s = 1e30, both_s = 1e30;
  uint64_t check = 0;
  for (int pass = 0; pass < passes; ++pass) {
    collector::cupti::ActivityDecoder decoder;
    std::vector<std::vector<GpuActivity>> decoded;
    decoded.reserve(buffers.size());
    auto t0 = Clock::now();
    for (const Buffer& b : buffers) {
      std::vector<GpuActivity> out;
      decoder.DecodeBuffer(b.data(), b.bytes, out);
      decoded.push_back(std::move(out));
    }
    auto t1 = Clock::now();
    collector::GpuAttributor attr(UINT32_MAX);
    for (const auto& out : decoded) attr.Add(sites, out);
    auto t2 = Clock::now();
    decode_s = std::min(decode_s, Seconds(t0, t1));
    attribute_s = std::min(attribute_s, Seconds(t1, t2));
    check += attr.stats().activities;

    collector::cupti::ActivityDecoder decoder2;
    collector::GpuAttributor attr2(UINT32_MAX);
    std::vector<GpuActivity> out;  // reused, as the adapter does
    auto t3 = Clock::now();
    for (const Buffer& b : buffers) {
      out.clear();
      decoder2.DecodeBuffer(b.data(), b.bytes, out);
      attr2.Add(sites, out);
    }
    auto t4 = Clock::now();
    both_s = std::min(both_s, Seconds(t3, t4));
    check += attr2.stats().unknown;  // 0
  }
  // The adapter's path: CUPTI's own iterator (it needs no GPU) + Decode
  // per record + attribution.
  double cupti_s = 1e30;
  bool cupti_ok = true;
  for (int pass = 0; pass < passes && cupti_ok; ++pass) {
    collector::cupti::ActivityDecoder decoder;
    collector::GpuAttributor attr(UINT32_MAX);
    std::vector<GpuActivity> out;
    auto t0 = Clock::now();
    for (Buffer& b : buffers) {
      out.clear();
      CUpti_Activity* record = nullptr;
      CUptiResult r;
      uint8_t* data = reinterpret_cast<uint8_t*>(b.words.data());
      while ((r = cuptiActivityGetNextRecord(data, b.bytes, &record)) == CUPTI_SUCCESS) decoder.Decode(record, out);
      if (r != CUPTI_ERROR_MAX_LIMIT_REACHED) cupti_ok = false;
      attr.Add(sites, out);
    }
    auto t1 = Clock::now();
    cupti_s = std::min(cupti_s, Seconds(t0, t1));
    check += attr.stats().unknown;
  }
  // The runtime's path: the lock-free correlation table (handles = site + 1).
  collector::CorrelationTable table;
  double runtime_s = 1e30;
  for (int pass = 0; pass < passes; ++pass) {
    collector::cupti::ActivityDecoder decoder;
    collector::GpuAttributor attr(0);
    std::vector<GpuActivity> out;
    auto t0 = Clock::now();
    for (const auto& [corr, site] : sites) table.Insert(static_cast<uint32_t>(corr), {site.node + 1, site.kind});
    for (const Buffer& b : buffers) {
      out.clear();
      decoder.DecodeBuffer(b.data(), b.bytes, out);
      attr.Add(table, out);
    }
    auto t1 = Clock::now();
    runtime_s = std::min(runtime_s, Seconds(t0, t1));
    check += attr.stats().unknown;
  }
  // The runtime's path in a run cut into 100 iterations, each launch in
  // one: over all 20,000 sites (each launch of an iteration a new
  // (iteration, site) pair: the worst case), and over 500 sites (a
  // training step repeating its launch sites).
  struct IterationRun {
    double seconds = 1e30;
    size_t values = 0;
  };
  const auto iteration_run = [&](uint32_t site_modulus, bool with_iterations) {
    IterationRun best;
    collector::CorrelationTable itable(with_iterations);
    const uint32_t per_iteration = static_cast<uint32_t>(records / 100 + 1);
    for (int pass = 0; pass < passes; ++pass) {
      collector::cupti::ActivityDecoder decoder;
      collector::GpuAttributor attr(0);
      std::vector<GpuActivity> out;
      auto t0 = Clock::now();
      for (const auto& [corr, site] : sites)
        itable.Insert(static_cast<uint32_t>(corr),
                      {site.node % site_modulus + 1, site.kind,
                       with_iterations ? static_cast<uint32_t>(corr / per_iteration) : collector::kNoIteration});
      for (const Buffer& b : buffers) {
        out.clear();
        decoder.DecodeBuffer(b.data(), b.bytes, out);
        attr.Add(itable, out);
      }
      // The checkpoint's share: seal, then iteration columns on a tree.
      attr.SealIterations();
      cct::Tree tree;
      collector::GpuMetricWriter writer(tree);
      store::RunIterations its;
      its.iterations.resize(100);
      attr.iteration_values().AppendTo(its, writer, [](uint32_t h) { return cct::NodeId{h}; });
      auto t1 = Clock::now();
      best.seconds = std::min(best.seconds, Seconds(t0, t1));
      best.values = attr.iteration_values().values();
      check += its.iterations[0].columns.size();
    }
    return best;
  };
  // Each with its baseline: the same sites without iterations.
  const IterationRun iter_all = iteration_run(kSites, true), base_all = iteration_run(kSites, false);
  const IterationRun iter_500 = iteration_run(500, true), base_500 = iteration_run(500, false);
  // Replay of a raw dump holding the same buffers.
  double replay_s = 1e30;
  bool replay_ok = true;
  char path[] = "/tmp/cctdb-replay-bench-XXXXXX";
  const int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  {
    auto writer = collector::RawDumpWriter::Create(path, 1, "{}");
    replay_ok = fd >= 0 && writer.ok();
    if (replay_ok) {
      std::vector<collector::RawCorrelation> corrs;
      for (const auto& [corr, site] : sites)
        corrs.push_back({static_cast<uint32_t>(corr), site.node + 1, static_cast<uint8_t>(site.kind)});
      (*writer)->Correlations(corrs);
      cct::Tree tree;
      std::vector<collector::RawSiteNode> nodes;
      const cct::NodeId thread = tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kThread, "main thread"));
      for (uint32_t site = 0; site < kSites; ++site) {
        const cct::NodeId f =
            tree.InternChild(thread, tree.InternFrame(cct::FrameKind::kFunction, "launcher_" + std::to_string(site)));
        nodes.push_back({site + 1, collector::GpuPlaceholderNode(tree, f, cct::GpuOpKind::kKernel)});
      }
      collector::cupti::ActivityDecoder decoder;
      std::vector<GpuActivity> out;
      for (const Buffer& b : buffers) {
        out.clear();
        decoder.DecodeBuffer(b.data(), b.bytes, out);
        (*writer)->Batch(b.data(), b.bytes, out, 0);
      }
      store::RunMeta meta;
      meta.name = "replay-bench";
      (*writer)->Snapshot(tree, meta.ToJson().dump(), nodes);
      replay_ok = (*writer)->status().ok();
    }
  }
  for (int pass = 0; pass < passes && replay_ok; ++pass) {
    auto t0 = Clock::now();
    auto replay = collector::ReplayRawDump(path);
    auto t1 = Clock::now();
    if (!replay.ok()) {
      std::printf("replay failed: %s\n", replay.status().message().c_str());
      replay_ok = false;
      break;
    }
    replay_s = std::min(replay_s, Seconds(t0, t1));
    check += replay->activities;
  }
  unlink(path);

  std::printf("decode            %8.2f M records/s  (%.1f ns/record)\n", per_pass / decode_s / 1e6,
              decode_s / per_pass * 1e9);
  std::printf("attribute         %8.2f M records/s  (%.1f ns/record)\n", per_pass / attribute_s / 1e6,
              attribute_s / per_pass * 1e9);
  std::printf("decode+attribute  %8.2f M records/s  (%.1f ns/record)   [best of %d passes; check %llu]\n",
              per_pass / both_s / 1e6, both_s / per_pass * 1e9, passes, static_cast<unsigned long long>(check));
  if (cupti_ok)
    std::printf("cuptiActivityGetNextRecord+decode+attribute %8.2f M records/s  (%.1f ns/record)\n",
                per_pass / cupti_s / 1e6, cupti_s / per_pass * 1e9);
  else
    std::printf("cuptiActivityGetNextRecord unavailable here: adapter path not timed\n");
  std::printf("runtime: decode+attribute via CorrelationTable %8.2f M records/s  (%.1f ns/record)\n",
              per_pass / runtime_s / 1e6, runtime_s / per_pass * 1e9);
  for (const auto& [label, run, base] :
       {std::tuple{"20000 sites", iter_all, base_all}, std::tuple{"  500 sites", iter_500, base_500}})
    std::printf("runtime, 100 iterations, %s %8.2f M records/s  (%.1f ns/record; without iterations %.2f M/s: "
                "%.2fx its time; %zu iteration values, %.1f MiB)\n",
                label, per_pass / run.seconds / 1e6, run.seconds / per_pass * 1e9, per_pass / base.seconds / 1e6,
                run.seconds / base.seconds, run.values, run.values * 16.0 / 1048576.0);
  if (replay_ok)
    std::printf("replay of a raw dump (read+check+decode+attribute+write metrics) %8.2f M records/s  (%.1f ns/record)\n",
                per_pass / replay_s / 1e6, replay_s / per_pass * 1e9);
  return 0;
}
