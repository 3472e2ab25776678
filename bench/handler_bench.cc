// Per-sample cost of the collector's signal handler path at a given stack
// depth: signal delivery, libunwind's unwind of the interrupted stack into
// preallocated storage, and the sample trie update — the same functions the
// collector's handler calls. Each sample is timed on its own (CLOCK_MONOTONIC
// around raise()), and the median and p99 are printed.
// "walker" is the collector's own CFI walker (cfi_unwinder.h), the path
// nearly every sample takes; "fast" is libunwind with its per-thread trace
// cache, "slow" libunwind without it (the fallbacks, unwinder.h).
//   handler-bench [DEPTH=64] [SAMPLES=20000] [walker|fast|slow]
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "collector/cpu/sample_trie.h"
#include "collector/cpu/unwinder.h"

namespace {
constexpr int kMax = 512;
uintptr_t unwind_buf[kMax + collector::kUnwindSlack];
uint64_t keys[kMax + 1];
collector::SampleTrie* trie;
int last_depth;
bool fast = true;
collector::StackBounds stack;  // {0, 0}: the walker stands aside

void Handler(int, siginfo_t*, void* uc) {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);  // the handler reads the thread clock too
  const collector::UnwindResult r =
      collector::Unwind(uc, unwind_buf, kMax + collector::kUnwindSlack, fast, false, stack);
  const int depth = r.depth;
  int k = 0;
  if (r.cut) keys[k++] = collector::kPartialKey;
  for (int i = depth - 1; i >= 0; --i) keys[k++] = collector::MakeKey(unwind_buf[i], 0);
  trie->AddSample(keys, k, 1000);
  last_depth = depth;
}

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::vector<int64_t> costs;
int samples = 20000;

extern "C" __attribute__((noinline)) void sample_at_bottom(int sig) {
  for (int i = 0; i < samples; ++i) {
    const int64_t t0 = Now();
    raise(sig);
    costs.push_back(Now() - t0);
  }
}

extern "C" __attribute__((noinline)) void descend(int depth, int sig) {
  if (depth <= 1) {
    sample_at_bottom(sig);
    return;
  }
  descend(depth - 1, sig);
  asm volatile("" ::: "memory");  // not a tail call
}
}  // namespace

int main(int argc, char** argv) {
  const int depth = argc > 1 ? std::atoi(argv[1]) : 64;
  if (argc > 2) samples = std::atoi(argv[2]);
  const std::string mode = argc > 3 ? argv[3] : "walker";
  if (mode != "walker" && mode != "fast" && mode != "slow") {
    std::fprintf(stderr, "handler-bench: the mode is walker, fast or slow\n");
    return 2;
  }
  fast = mode != "slow";
  std::string error;
  collector::StartUnwinder();
  if (!collector::EnsureLibunwind(&error)) {
    std::fprintf(stderr, "handler-bench: %s\n", error.c_str());
    return 2;
  }
  collector::PrepareUnwindThread();
  if (mode == "walker") stack = collector::ThisThreadStack(true);
  trie = new collector::SampleTrie;
  const int sig = SIGRTMIN + 6;
  struct sigaction sa {};
  sa.sa_sigaction = Handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(sig, &sa, nullptr);
  // Baseline in the same run: the same raise() with an empty handler.
  costs.reserve(samples);
  descend(depth, sig);
  std::vector<int64_t> with = costs;
  costs.clear();
  sa.sa_sigaction = [](int, siginfo_t*, void*) {};
  sigaction(sig, &sa, nullptr);
  descend(depth, sig);
  std::vector<int64_t> empty = costs;
  auto pct = [](std::vector<int64_t> v, double p) {
    std::sort(v.begin(), v.end());
    return static_cast<double>(v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))]);
  };
  const collector::UnwindCounts counts = collector::UnwindCountsSoFar();
  std::printf("{\"mode\": \"%s\", \"walker_samples\": %llu, \"depth\": %d, \"unwound_frames\": %d, \"samples\": %d, \"median_ns\": %.0f, \"p99_ns\": %.0f, "
              "\"empty_handler_median_ns\": %.0f, \"empty_handler_p99_ns\": %.0f}\n",
              mode.c_str(), static_cast<unsigned long long>(counts.walker), depth, last_depth, samples, pct(with, 0.5), pct(with, 0.99), pct(empty, 0.5), pct(empty, 0.99));
  return 0;
}
