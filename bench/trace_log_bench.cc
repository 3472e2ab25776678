// The sampling handler's extra work under --trace: one TraceLog::Append per
// sample (a budget check, a record stored into mmap'd chunks, the count
// published). Timed over N appends into a fresh log (its chunks are mapped
// and faulted in as it grows, as in a recording), against a baseline
// measured in the same run: the same records stored into a preallocated
// array (the floor for writing 16 bytes), and the sample trie's update at
// depth 16 on a repeating path (the handler's cheapest step besides).
// Prints JSON: ns per event for each, and the append's extra over the floor.
//   trace-log-bench [N=10000000]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "collector/core/trace_log.h"
#include "collector/cpu/sample_trie.h"

namespace {

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

template <class F>
double NsPer(size_t n, F&& f) {
  const int64_t t0 = Now();
  for (size_t i = 0; i < n; ++i) f(i);
  return static_cast<double>(Now() - t0) / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000000;
  if (n == 0 || n > (size_t{1} << 27)) {
    std::fprintf(stderr, "trace-log-bench: N is 1 to 2^27\n");
    return 2;
  }
  // Best of 3 for each: the machine's noise is one-sided.
  double append = 1e9, floor = 1e9, trie_ns = 1e9;
  uint64_t kept = 0;
  for (int round = 0; round < 3; ++round) {
    auto* log = new collector::SampleTraceLog;
    collector::TraceBudget budget;
    budget.Reset(uint64_t{1} << 40);
    append = std::min(append, NsPer(n, [&](size_t i) {
      log->Append({static_cast<int64_t>(i) * 1000000, static_cast<uint32_t>(i & 1023)}, budget);
    }));
    kept = log->size();
    log->Reset();
    delete log;
    std::vector<collector::TraceSampleRecord> flat(n);
    volatile collector::TraceSampleRecord* sink = flat.data();
    floor = std::min(floor, NsPer(n, [&](size_t i) {
      const_cast<collector::TraceSampleRecord*>(sink)[i] = {static_cast<int64_t>(i) * 1000000, static_cast<uint32_t>(i & 1023)};
    }));
    collector::SampleTrie trie;
    uint64_t keys[16];
    for (int k = 0; k < 16; ++k) keys[k] = 0x400000 + 64 * k;
    trie_ns = std::min(trie_ns, NsPer(n / 10, [&](size_t i) {
      keys[15] = 0x500000 + (i & 63);
      trie.AddSample(keys, 16, 1000);
    }));
  }
  std::printf("{\"events\": %zu, \"kept\": %llu, \"append_ns\": %.2f, \"floor_ns\": %.2f, \"extra_over_floor_ns\": %.2f, "
              "\"trie_update_depth16_ns\": %.2f, \"target_extra_ns\": 100}\n",
              n, static_cast<unsigned long long>(kept), append, floor, append - floor, trie_ns);
  return 0;
}
