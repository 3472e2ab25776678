// The sampler under stress: threads created by the hundred, each doing
// malloc/free in a tight loop from its first instruction (so its first
// samples land inside malloc), while another thread loads and unloads a
// library. Sampled at a high rate, a handler that allocates — libunwind's
// per-thread state made lazily inside it — deadlocks on malloc's lock.
// Prints "MEASURED ops N".  sampling_stress [LIBRARY]
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>

static std::atomic<long> ops{0};
static const char* library = nullptr;

extern "C" __attribute__((noinline)) void* churn(void* arg) {
  const long n = reinterpret_cast<long>(arg);
  for (long i = 0; i < n; ++i) {
    void* p[16];
    for (int k = 0; k < 16; ++k) {
      p[k] = malloc(16 + (i * 7 + k * 131) % 4000);
      memset(p[k], 1, 16);
    }
    for (int k = 0; k < 16; ++k) free(p[k]);
  }
  ops.fetch_add(n);
  return nullptr;
}

static void* spawner(void*) {
  for (int round = 0; round < 40; ++round) {
    pthread_t t[4];
    for (int k = 0; k < 4; ++k)
      if (pthread_create(&t[k], nullptr, churn, reinterpret_cast<void*>(2000L)) != 0) abort();
    for (int k = 0; k < 4; ++k) pthread_join(t[k], nullptr);
  }
  return nullptr;
}

static void* loader(void*) {
  for (int round = 0; round < 10 && library; ++round) {
    void* h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!h) abort();
    dlclose(h);
    churn(reinterpret_cast<void*>(500L));
  }
  return nullptr;
}

int main(int argc, char** argv) {
  library = argc > 1 ? argv[1] : nullptr;
  pthread_t a, b, c;
  pthread_create(&a, nullptr, spawner, nullptr);
  pthread_create(&b, nullptr, spawner, nullptr);
  pthread_create(&c, nullptr, loader, nullptr);
  pthread_join(a, nullptr);
  pthread_join(b, nullptr);
  pthread_join(c, nullptr);
  printf("MEASURED ops %ld\n", ops.load());
  return 0;
}
