// GPU launch-overhead benchmark: N launches of an empty kernel from a given
// CPU stack depth, timed by the program itself with CLOCK_MONOTONIC, so the
// same binary measures itself bare and under cct-record (whose CUPTI callback
// unwinds the CPU stack at every launch). bench/gpu_launch_bench.py builds it
// with nvcc and runs it.
//   gpu-launch-bench [LAUNCHES=100000] [DEPTH=32] [SYNC_EVERY=0] [OUT.json]
// SYNC_EVERY > 0 adds a cudaDeviceSynchronize after every SYNC_EVERY launches
// (latency-bound instead of queue-bound). Before timing: 100 warm-up launches
// and a synchronize (context creation, module loading, the tool's first-call
// set-up). Prints one JSON line (also written to OUT.json when given):
//   launches, depth, loop_s (the launch loop alone), sync_s (the final
//   cudaDeviceSynchronize), ns_per_launch (loop_s / launches),
//   ns_per_launch_with_sync ((loop_s + sync_s) / launches).
#include <cuda_runtime.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

__global__ void empty_kernel() {}

namespace {

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpu-launch-bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

long launches = 100000;
long sync_every = 0;
int64_t loop_ns = 0, sync_ns = 0;
volatile int sink;

}  // namespace

extern "C" __attribute__((noinline)) void launch_loop() {
  const int64_t t0 = Now();
  for (long i = 0; i < launches; ++i) {
    empty_kernel<<<1, 1>>>();
    if (sync_every > 0 && (i + 1) % sync_every == 0) Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  const int64_t t1 = Now();
  Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const int64_t t2 = Now();
  Check(cudaGetLastError(), "launch");
  loop_ns = t1 - t0;
  sync_ns = t2 - t1;
}

extern "C" __attribute__((noinline)) void descend(int depth) {
  if (depth <= 1) return launch_loop();
  descend(depth - 1);
  sink = sink + 1;  // not a tail call: each level stays on the stack
}

int main(int argc, char** argv) {
  if (argc > 1) launches = std::atol(argv[1]);
  const int depth = argc > 2 ? std::atoi(argv[2]) : 32;
  if (argc > 3) sync_every = std::atol(argv[3]);
  const char* out_path = argc > 4 ? argv[4] : nullptr;
  if (launches <= 0 || depth <= 0 || sync_every < 0) {
    std::fprintf(stderr, "usage: gpu-launch-bench [LAUNCHES=100000] [DEPTH=32] [SYNC_EVERY=0] [OUT.json]\n");
    return 2;
  }
  Check(cudaSetDevice(0), "cudaSetDevice");
  for (int i = 0; i < 100; ++i) empty_kernel<<<1, 1>>>();
  Check(cudaDeviceSynchronize(), "warm-up");
  descend(depth);
  char line[512];
  std::snprintf(line, sizeof line,
                "{\"launches\": %ld, \"warmup_launches\": 100, \"depth\": %d, \"sync_every\": %ld, "
                "\"loop_s\": %.9f, \"sync_s\": %.9f, \"ns_per_launch\": %.3f, \"ns_per_launch_with_sync\": %.3f}\n",
                launches, depth, sync_every, loop_ns * 1e-9, sync_ns * 1e-9, static_cast<double>(loop_ns) / launches,
                static_cast<double>(loop_ns + sync_ns) / launches);
  std::fputs(line, stdout);
  if (out_path) {
    FILE* f = std::fopen(out_path, "w");
    if (!f || std::fputs(line, f) < 0 || std::fclose(f) != 0) {
      std::fprintf(stderr, "gpu-launch-bench: cannot write %s\n", out_path);
      return 1;
    }
  }
  return 0;
}
