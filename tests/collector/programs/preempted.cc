// Burns 300 ms of CPU time in burn_preempted on one core that a real-time
// thread of the same process takes from it for 0.25 ms out of every 0.5: the
// burning thread is preempted at points spread over its work, the sampling
// handler included, and waits there 0.25 ms each time (as a thread
// does on a loaded machine, which CI is). Under the CPU clock that wait is
// not the handler's cost.
//
// Prints "preemptions N" (the real-time thread's wake-ups) on stdout.
// Exits 3 when the system refuses SCHED_FIFO or the affinity (a container
// without CAP_SYS_NICE): the test then has nothing to measure.
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include <atomic>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void burn_preempted() { BURN_NS(300000000); }

namespace {
std::atomic<bool> done{false};
std::atomic<bool> started{false};
long wakeups = 0;

void* Preempter(void*) {
  started.store(true);
  while (!done.load(std::memory_order_relaxed)) {
    const long long until = ClockNs(CLOCK_MONOTONIC) + 250000;
    while (ClockNs(CLOCK_MONOTONIC) < until) {
    }
    SleepNs(250000);
    ++wakeups;
  }
  return nullptr;
}
}  // namespace

int main() {
  const int cpu = sched_getcpu();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu < 0 ? 0 : cpu, &one);
  if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) {
    fprintf(stderr, "preempted: cannot set the affinity\n");
    return 3;
  }
  // Created with its policy, priority and CPU set, so it never runs
  // elsewhere or as a normal thread.
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
  pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
  sched_param param{};
  param.sched_priority = 1;
  pthread_attr_setschedparam(&attr, &param);
  pthread_attr_setaffinity_np(&attr, sizeof one, &one);
  pthread_t t;
  if (const int e = pthread_create(&t, &attr, Preempter, nullptr); e != 0) {
    fprintf(stderr, "preempted: no SCHED_FIFO thread: %s\n", strerror(e));
    return 3;
  }
  while (!started.load()) sched_yield();
  burn_preempted();
  done.store(true);
  pthread_join(t, nullptr);
  printf("preemptions %ld\n", wakeups);
  return 0;
}
