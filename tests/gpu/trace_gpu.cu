// trace_gpu: GPU work at known moments, for the real-GPU check of
// `cct-record --trace` (tests/gpu/check_trace.py): are kernels and copies
// placed in time where they happened, on the trace's clock (CLOCK_REALTIME)?
//
// The program reads CLOCK_REALTIME itself around each piece of GPU work and
// waits for the GPU before the second reading, so the work's true interval
// lies inside [start, end] as the program printed it, whatever clock CUPTI
// counts in. What it does, in order:
//
//   warm-up    NVTX "warmup"   spin_kernel for 1 ms (module loading, first-launch costs)
//   phases     NVTX "phase"    kPhases times: spin_kernel<<<1, 32>>> for
//                              (k + 1) * 2 ms, then cudaDeviceSynchronize;
//                              20 ms of host sleep between phases (GPU idle)
//   copy       NVTX "copy"     cudaMemcpy H2D of kCopyBytes from pageable memory
//
// spin_kernel spins on the GPU's %globaltimer (nanoseconds) for its
// argument, so its duration is known from its construction, not from a
// measurement. One JSON line on stdout:
//   {"phases": [{"start": NS, "end": NS, "spin_ns": NS}, ...],
//    "copy": {"start": NS, "end": NS, "bytes": N}, "warmup_ns": NS}
// Exit status 0, or 1 on a CUDA error (message on stderr).
//
// Build (the check does): nvcc -O2 -g -lineinfo -o trace_gpu trace_gpu.cu -ldl
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace {

constexpr int kPhases = 5;
constexpr unsigned long long kPhaseStepNs = 2000000;  // phase k spins (k + 1) * 2 ms
constexpr unsigned long long kWarmupNs = 1000000;
constexpr size_t kCopyBytes = size_t{64} << 20;

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "trace_gpu: %s: %s\n", #call, cudaGetErrorString(e_));        \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

long long RealNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__device__ unsigned long long GlobalTimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(unsigned long long ns, unsigned long long* out) {
  const unsigned long long start = GlobalTimer();
  while (GlobalTimer() - start < ns) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = GlobalTimer() - start;
}

struct Interval {
  long long start, end;
  unsigned long long spin_ns;
};

__attribute__((noinline)) Interval Spin(const char* range, unsigned long long ns, unsigned long long* out) {
  nvtxRangePushA(range);
  Interval iv{RealNs(), 0, ns};
  spin_kernel<<<1, 32>>>(ns, out);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  iv.end = RealNs();
  nvtxRangePop();
  return iv;
}

__attribute__((noinline)) Interval Copy(void* dst, const void* src) {
  nvtxRangePushA("copy");
  Interval iv{RealNs(), 0, 0};
  CHECK(cudaMemcpy(dst, src, kCopyBytes, cudaMemcpyHostToDevice));
  iv.end = RealNs();
  nvtxRangePop();
  return iv;
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  unsigned long long* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(unsigned long long)));
  void* dev = nullptr;
  CHECK(cudaMalloc(&dev, kCopyBytes));
  std::vector<char> host(kCopyBytes, 1);

  Spin("warmup", kWarmupNs, out);
  std::vector<Interval> phases;
  for (int k = 0; k < kPhases; ++k) {
    phases.push_back(Spin("phase", (k + 1) * kPhaseStepNs, out));
    const timespec gap{0, 20000000};
    nanosleep(&gap, nullptr);
  }
  const Interval copy = Copy(dev, host.data());

  CHECK(cudaFree(dev));
  CHECK(cudaFree(out));
  std::printf("{\"phases\": [");
  for (int k = 0; k < kPhases; ++k)
    std::printf("%s{\"start\": %lld, \"end\": %lld, \"spin_ns\": %llu}", k ? ", " : "", phases[k].start,
                phases[k].end, phases[k].spin_ns);
  std::printf("], \"copy\": {\"start\": %lld, \"end\": %lld, \"bytes\": %zu}, \"warmup_ns\": %llu}\n", copy.start,
              copy.end, kCopyBytes, kWarmupNs);
  return 0;
}
