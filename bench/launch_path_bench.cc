// The collector's cost per GPU launch on the CPU side, without a GPU: N
// kernel launches through the tests' fake CUDA (tests/collector/programs/
// fake_gpu.cc), each made DEPTH frames below main, timed with
// CLOCK_MONOTONIC around the launch loop. Bare, the fake launch does its own
// small work (builds a CUPTI kernel record); under cct-record with the fake
// adapter, each launch also goes through the collector's launch path —
// unwinding, trimming, NVTX merge, launch trie, correlation table — exactly
// the code a real launch runs after CUPTI's callback. Prints
// "ns_per_launch X".
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

extern "C" {
void fakecuda_init();
void fakecuda_launch(const char* mangled, uint32_t grid, uint32_t block, uint16_t regs, uint64_t duration_ns);
}

volatile int sink;

__attribute__((noinline)) void launch_at(int depth, long n) {
  if (depth > 1) {
    launch_at(depth - 1, n);
    ++sink;  // no tail call: every level stays on the stack
    return;
  }
  for (long i = 0; i < n; ++i) fakecuda_launch("_Z12empty_kernelv", 1, 32, 8, 1000);
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 100000;
  const int depth = argc > 2 ? std::atoi(argv[2]) : 16;
  fakecuda_init();
  launch_at(depth, 1000);  // warm up: sites seen, caches filled
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  launch_at(depth, n);
  clock_gettime(CLOCK_MONOTONIC, &b);
  const double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
  std::printf("ns_per_launch %.1f\n", ns / n);
  return 0;
}
