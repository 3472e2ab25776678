// NVTX cost benchmark: the time of one nvtxRangePushA/nvtxRangePop pair at a
// given stack depth, as the program sees it (whatever tool is injected, or
// none). Pairs are timed in batches of 100; prints the median and p99 per
// pair, and the wall time of a fixed work loop issuing `rate` ranges per
// second of work.
//   nvtx-bench [DEPTH=32] [BATCHES=2000]
#include <nvtx3/nvToolsExt.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}
volatile double sink;
std::vector<double> per_pair;
int batches = 2000;
double loop_wall = 0;

extern "C" __attribute__((noinline)) void measure() {
  for (int b = 0; b < batches; ++b) {
    const int64_t t0 = Now();
    for (int i = 0; i < 100; ++i) {
      nvtxRangePushA("bench");
      nvtxRangePop();
    }
    per_pair.push_back(static_cast<double>(Now() - t0) / 100);
  }
  // 10^6 ranges around 10^6 work items of ~1 µs each.
  const int64_t t0 = Now();
  for (int i = 0; i < 1000000; ++i) {
    nvtxRangePushA("item");
    double acc = sink;
    for (int j = 0; j < 250; ++j) acc = acc * 1.0000001 + j;
    sink = acc;
    nvtxRangePop();
  }
  loop_wall = static_cast<double>(Now() - t0) * 1e-9;
}

extern "C" __attribute__((noinline)) void descend(int depth) {
  if (depth <= 1) return measure();
  descend(depth - 1);
  sink = sink + 1;
}
}  // namespace

int main(int argc, char** argv) {
  const int depth = argc > 1 ? std::atoi(argv[1]) : 32;
  if (argc > 2) batches = std::atoi(argv[2]);
  nvtxRangePushA("warm up");  // first call initializes NVTX (loads the injection)
  nvtxRangePop();
  descend(depth);
  std::sort(per_pair.begin(), per_pair.end());
  std::printf("{\"depth\": %d, \"pair_median_ns\": %.0f, \"pair_p99_ns\": %.0f, \"loop_1e6_ranges_s\": %.3f}\n", depth,
              per_pair[per_pair.size() / 2], per_pair[per_pair.size() * 99 / 100], loop_wall);
  return 0;
}
