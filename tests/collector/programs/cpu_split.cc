// A known CPU-time split across named functions on two threads, plus a
// 40-deep recursion and an inlined helper. Prints what it measured itself
// (thread CPU clock, inclusive per function) as "MEASURED name nanoseconds".
#include <pthread.h>
#include <stdio.h>

#include "burn.h"

volatile double burn_sink;

extern "C" {
__attribute__((noinline)) void alpha_work() { BURN_NS(300000000); }
__attribute__((noinline)) void beta_work() { BURN_NS(150000000); }
__attribute__((noinline)) void gamma_work() { BURN_NS(250000000); }
__attribute__((always_inline)) inline void inlined_helper() { BURN_NS(100000000); }
__attribute__((noinline)) void delta_work() { inlined_helper(); }
__attribute__((noinline)) void recurse(int depth) {
  if (depth > 1) recurse(depth - 1);
  else BURN_NS(200000000);
  burn_sink = burn_sink + depth;  // not a tail call: every level stays on the stack
}
}

static long long measured[5];

static void* second_thread(void*) {
  long long t0 = ThreadCpuNs();
  gamma_work();
  measured[2] = ThreadCpuNs() - t0;
  return nullptr;
}

int main() {
  pthread_t t;
  pthread_create(&t, nullptr, second_thread, nullptr);
  long long t0 = ThreadCpuNs();
  alpha_work();
  long long t1 = ThreadCpuNs();
  beta_work();
  long long t2 = ThreadCpuNs();
  delta_work();
  long long t3 = ThreadCpuNs();
  recurse(40);
  long long t4 = ThreadCpuNs();
  pthread_join(t, nullptr);
  measured[0] = t1 - t0;
  measured[1] = t2 - t1;
  measured[3] = t3 - t2;
  measured[4] = t4 - t3;
  const char* names[] = {"alpha_work", "beta_work", "gamma_work", "delta_work", "recurse"};
  for (int i = 0; i < 5; ++i) printf("MEASURED %s %lld\n", names[i], measured[i]);
  return 0;
}
