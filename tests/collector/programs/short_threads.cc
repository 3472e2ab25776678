// Starts N threads (default 1000), 8 at a time, each burning 0.5 ms of CPU in
// its start routine short_work; most end before the sampler's first tick.
// Prints "MEASURED threads n" and "MEASURED thread_cpu_ns total": the CPU
// time the threads used, each read from its own clock as it returns.
// short_threads [N]
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <atomic>

#include "burn.h"

volatile double burn_sink;
static std::atomic<long long> total_cpu_ns{0};

extern "C" __attribute__((noinline)) void* short_work(void*) {
  BURN_NS(500000);
  total_cpu_ns.fetch_add(ThreadCpuNs());
  return nullptr;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 1000;
  int started = 0;
  while (started < n) {
    pthread_t t[8];
    int k = 0;
    for (; k < 8 && started < n; ++k, ++started)
      if (pthread_create(&t[k], nullptr, short_work, nullptr) != 0) return 1;
    for (int i = 0; i < k; ++i) pthread_join(t[i], nullptr);
  }
  printf("MEASURED threads %d\nMEASURED thread_cpu_ns %lld\n", n, total_cpu_ns.load());
  return 0;
}
