// A dlopen/call/dlclose loop, like a program that loads and unloads plugins
// (Open MPI's components): N cycles, each calling the library's plugin_step
// for STEP_US microseconds of CPU time, then host_work burns HOST_MS in the
// program itself. Prints its own wall time.
//   dl_loop LIBRARY N STEP_US HOST_MS
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void host_work(long ns) { BURN_NS(ns); }

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  const int n = atoi(argv[2]);
  const long step_ns = atol(argv[3]) * 1000;
  const long host_ns = atol(argv[4]) * 1000000;
  timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < n; ++i) {
    void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      return 1;
    }
    auto fn = reinterpret_cast<void (*)(long)>(dlsym(h, "plugin_step"));
    if (!fn) return 1;
    fn(step_ns);
    if (dlclose(h) != 0) return 1;
  }
  host_work(host_ns);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("WALL %.6f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
  return 0;
}
