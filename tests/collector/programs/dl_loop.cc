// A dlopen/call/dlclose loop, like a program that loads and unloads plugins
// (Open MPI's components): N cycles, each calling the library's plugin_step
// for STEP_US microseconds of CPU time, then host_work burns HOST_MS in the
// program itself. Prints its own wall time. With THREADS, that many threads
// run the cycles at once (the library is unmapped whenever the last of them
// closes it, while the others run and are sampled).
//   dl_loop LIBRARY N STEP_US HOST_MS [THREADS]
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <thread>
#include <vector>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void host_work(long ns) { BURN_NS(ns); }

namespace {
const char* library;
int cycles;
long step_ns;

// 0 on success.
int Cycles() {
  for (int i = 0; i < cycles; ++i) {
    void* h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      return 1;
    }
    auto fn = reinterpret_cast<void (*)(long)>(dlsym(h, "plugin_step"));
    if (!fn) return 1;
    fn(step_ns);
    if (dlclose(h) != 0) return 1;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  library = argv[1];
  cycles = atoi(argv[2]);
  step_ns = atol(argv[3]) * 1000;
  const long host_ns = atol(argv[4]) * 1000000;
  const int threads = argc > 5 ? atoi(argv[5]) : 1;
  timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int failed = 0;
  if (threads <= 1) {
    failed = Cycles();
  } else {
    std::vector<std::thread> pool;
    std::vector<int> status(threads);
    for (int t = 0; t < threads; ++t) pool.emplace_back([&status, t] { status[t] = Cycles(); });
    for (auto& th : pool) th.join();
    for (int st : status) failed |= st;
  }
  if (failed) return 1;
  host_work(host_ns);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("WALL %.6f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
  return 0;
}
