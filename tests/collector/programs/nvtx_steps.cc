// NVTX test program: ten "step" ranges on the main thread, each with nested
// "forward" and "backward" ranges and an "optimizer" range in the "trainer"
// domain (nvtx3 C++ API, registered strings); a "loader" thread (named with
// nvtxNameOsThread) with ten "load" ranges; an "epoch" start/end range that
// the loader thread ends; three "checkpoint" marks. Each range's CPU time is
// known by construction and measured by the program itself (thread CPU
// clock), printed as "MEASURED name ns"; the wall time of the ranges on the
// main thread (monotonic clock, as the collector times ranges) as "WALL
// name ns": each step's nested ranges, and an "async" start/end range whose
// two instances overlap (their union is timed).
//   nvtx-steps [misuse]   misuse: pops without pushes, unclosed ranges, an
//                         unknown end id, null and 1 MB messages
#include <nvtx3/nvtx3.hpp>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "burn.h"

volatile double burn_sink;

struct trainer_domain {
  static constexpr char const* name{"trainer"};
};

extern "C" __attribute__((noinline)) void forward_work() { BURN_NS(20000000); }
extern "C" __attribute__((noinline)) void backward_work() { BURN_NS(30000000); }
extern "C" __attribute__((noinline)) void optimizer_work() { BURN_NS(10000000); }
extern "C" __attribute__((noinline)) void load_work() { BURN_NS(15000000); }

static long long measured_forward, measured_backward, measured_optimizer, measured_load, measured_step;
static long long wall_step, wall_nested;  // nested: forward + backward + optimizer

static long long WallNs() { return ClockNs(CLOCK_MONOTONIC); }

static nvtxRangeId_t epoch;

static void* loader(void*) {
  nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "loader");
  for (int i = 0; i < 10; ++i) {
    nvtxRangePushA("load");
    const long long t0 = ThreadCpuNs();
    load_work();
    measured_load += ThreadCpuNs() - t0;
    nvtxRangePop();
  }
  nvtxRangeEnd(epoch);  // started on the main thread
  return nullptr;
}

extern "C" __attribute__((noinline)) void train_step() {
  // Wall clocks read outside the pushes and pops they bracket: the
  // collector's own times lie within them.
  const long long w0 = WallNs();
  nvtxRangePushA("step");
  const long long s0 = ThreadCpuNs();
  long long n0 = WallNs();
  nvtxRangePushA("forward");
  long long t0 = ThreadCpuNs();
  forward_work();
  measured_forward += ThreadCpuNs() - t0;
  nvtxRangePop();
  nvtxRangePushA("backward");
  t0 = ThreadCpuNs();
  backward_work();
  measured_backward += ThreadCpuNs() - t0;
  nvtxRangePop();
  {
    static const nvtx3::registered_string_in<trainer_domain> optimizer{"optimizer"};
    nvtx3::scoped_range_in<trainer_domain> r{optimizer};
    t0 = ThreadCpuNs();
    optimizer_work();
    measured_optimizer += ThreadCpuNs() - t0;
  }
  wall_nested += WallNs() - n0;
  measured_step += ThreadCpuNs() - s0;
  nvtxRangePop();
  wall_step += WallNs() - w0;
}

// Two instances of one start/end range, overlapping: 0-30 ms and 10-40 ms.
static long long AsyncRanges() {
  const long long w0 = WallNs();
  const nvtxRangeId_t a = nvtxRangeStartA("async");
  SleepNs(10000000);
  const nvtxRangeId_t b = nvtxRangeStartA("async");
  SleepNs(20000000);
  nvtxRangeEnd(a);
  SleepNs(10000000);
  nvtxRangeEnd(b);
  return WallNs() - w0;
}

static void Misuse() {
  nvtxRangePop();                    // pop without push
  nvtxRangeEnd(987654321);           // unknown id
  nvtxRangePushA(nullptr);           // null message
  nvtxRangePop();
  std::string huge(1 << 20, 'x');
  nvtxRangePushA(huge.c_str());      // 1 MiB message
  nvtxRangePop();
  nvtxRangePushA("never popped");    // open at exit
  nvtxRangePushA("never popped either");
}

// A range pushed inside a range of its own name, 10 ms each side of the
// inner one: 20 ms of "recursive" in all, not 30.
static long long RecursiveRanges() {
  const long long w0 = WallNs();
  nvtxRangePushA("recursive");
  SleepNs(10000000);
  nvtxRangePushA("recursive");
  SleepNs(10000000);
  nvtxRangePop();
  nvtxRangePop();
  return WallNs() - w0;
}

int main(int argc, char** argv) {
  epoch = nvtxRangeStartA("epoch");
  pthread_t t;
  pthread_create(&t, nullptr, loader, nullptr);
  for (int i = 0; i < 10; ++i) {
    train_step();
    if (i % 3 == 2) nvtxMarkA("checkpoint");  // i = 2, 5, 8
  }
  pthread_join(t, nullptr);
  const long long wall_async = AsyncRanges();
  const long long wall_recursive = RecursiveRanges();
  if (argc > 1 && !strcmp(argv[1], "misuse")) Misuse();
  printf("WALL step %lld\nWALL nested %lld\nWALL async %lld\nWALL recursive %lld\n", wall_step, wall_nested,
         wall_async, wall_recursive);
  printf("MEASURED forward %lld\nMEASURED backward %lld\nMEASURED trainer::optimizer %lld\nMEASURED load %lld\n"
         "MEASURED step %lld\n",
         measured_forward, measured_backward, measured_optimizer, measured_load, measured_step);
  return 0;
}
