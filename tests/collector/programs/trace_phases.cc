// --trace test program: known phases on two threads, each inside an NVTX
// range named after it. Main thread: 0.3 s of phase_a, 0.2 s of phase_b,
// 0.1 s asleep, 0.3 s of phase_a again. Worker thread (named "worker"):
// 0.2 s of phase_c, 0.1 s asleep, 0.2 s of phase_d. Phases burn their
// thread's CPU time; each is printed with its wall span on CLOCK_REALTIME
// (ns since the epoch, the trace's clock), the wall time at which its last
// 2 ms of CPU began, and the wall times at which it had run each half
// millisecond of its first 40 ms of CPU (later than start + 0.5 ms, 1 ms,
// ... where the thread waited for a core) as
// "PHASE thread name start end tail progress...".
//   trace-phases [hold]   hold: after the phases, burn until killed inside
//                         two nested ranges, "hold" and "spin" in it, and
//                         a start/end range "waiting" never ended
#include <nvtx3/nvtx3.hpp>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void phase_a(long long ns) { BURN_NS(ns); }
extern "C" __attribute__((noinline)) void phase_b(long long ns) { BURN_NS(ns); }
extern "C" __attribute__((noinline)) void phase_c(long long ns) { BURN_NS(ns); }
extern "C" __attribute__((noinline)) void phase_d(long long ns) { BURN_NS(ns); }
extern "C" __attribute__((noinline)) void hold_on() {
  for (;;) BURN_NS(10000000);
}

static long long RealNs() { return ClockNs(CLOCK_REALTIME); }

// Runs `fn` for `ns` of CPU time inside an NVTX range named `name`; the
// line is printed after the range ends (printing is not in the phase).
static void Phase(const char* thread, const char* name, void (*fn)(long long), long long ns) {
  constexpr int kSteps = 80;
  constexpr long long kStep = 500000;
  long long progress[kSteps];
  nvtxRangePushA(name);
  const long long start = RealNs();
  for (int i = 0; i < kSteps; ++i) {
    fn(kStep);
    progress[i] = RealNs();
  }
  constexpr long long kTail = 2000000;
  fn(ns - kSteps * kStep - kTail);
  const long long tail = RealNs();
  fn(kTail);
  const long long end = RealNs();
  nvtxRangePop();
  printf("PHASE %s %s %lld %lld %lld", thread, name, start, end, tail);
  for (long long at : progress) printf(" %lld", at);
  printf("\n");
  fflush(stdout);
}

static void* worker(void*) {
  nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "worker");
  pthread_setname_np(pthread_self(), "worker");
  Phase("worker", "C", phase_c, 200000000);
  SleepNs(100000000);
  Phase("worker", "D", phase_d, 200000000);
  return nullptr;
}

int main(int argc, char** argv) {
  pthread_t w;
  pthread_create(&w, nullptr, worker, nullptr);
  Phase("main", "A", phase_a, 300000000);
  Phase("main", "B", phase_b, 200000000);
  SleepNs(100000000);
  Phase("main", "A", phase_a, 300000000);
  pthread_join(w, nullptr);
  if (argc > 1 && strcmp(argv[1], "hold") == 0) {
    printf("HOLDING\n");
    fflush(stdout);
    nvtxRangeStartA("waiting");
    nvtxRangePushA("hold");
    nvtxRangePushA("spin");
    hold_on();
  }
  return 0;
}
