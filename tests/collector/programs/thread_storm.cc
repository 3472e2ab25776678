// A malloc-heavy thread storm, for the sampler's deadlock regression test:
// waves of short-lived threads that allocate and free blocks too large for
// malloc's per-thread cache (so each call takes its arena's lock), some of
// them loading a library and starting threads of their own.
// A sampling handler that allocates (or takes the loader's lock) while the
// interrupted thread holds one of those locks hangs the program.
//   thread_storm PLUGIN|- [WAVES]   ("-": no dlopen)
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "burn.h"

volatile double burn_sink;

namespace {

const char* plugin_path;
constexpr int kThreadsPerWave = 8;

// Frees and allocates blocks of 2 KiB to 128 KiB for `ns` of CPU time.
void Churn(long long ns, unsigned seed) {
  void* blocks[16] = {};
  const long long end = ThreadCpuNs() + ns;
  while (ThreadCpuNs() < end) {
    for (int i = 0; i < 16; ++i) {
      seed = seed * 1103515245u + 12345u;
      free(blocks[i]);
      blocks[i] = malloc(2048 + (seed >> 8) % (126 * 1024));
      if (blocks[i]) static_cast<volatile char*>(blocks[i])[0] = 1;
    }
  }
  for (void* b : blocks) free(b);
}

void* Leaf(void* arg) {
  Churn(500000, static_cast<unsigned>(reinterpret_cast<uintptr_t>(arg)));
  return nullptr;
}

void* Worker(void* arg) {
  const unsigned id = static_cast<unsigned>(reinterpret_cast<uintptr_t>(arg));
  if (id % 4 == 0 && plugin_path[0] != '-') {
    // Kept open: each dlclose symbolizes every sample so far (BeforeUnload),
    // seconds at this rate; opening an open library still runs the loader.
    dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
  }
  pthread_t child{};
  const bool spawned = id % 2 == 0 && pthread_create(&child, nullptr, Leaf, arg) == 0;
  Churn(1000000, id * 7919u);
  if (spawned) pthread_join(child, nullptr);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  plugin_path = argv[1];
  const int waves = argc > 2 ? atoi(argv[2]) : 20;
  unsigned id = 0;
  for (int w = 0; w < waves; ++w) {
    pthread_t t[kThreadsPerWave];
    for (pthread_t& x : t) pthread_create(&x, nullptr, Worker, reinterpret_cast<void*>(uintptr_t{++id}));
    Churn(200000, static_cast<unsigned>(w));
    for (pthread_t& x : t) pthread_join(x, nullptr);
  }
  printf("STORM %u threads\n", id + id / 2);
  return 0;
}
