// Threads the program names the ways programs do, each burning a known CPU
// time: "self-named" names itself with pthread_setname_np, "prctl-named"
// with prctl(PR_SET_NAME), "named-by-main" is named by its creator after
// it starts, two "pool" workers share one name, and one thread stays
// unnamed. "early-exit" names itself and exits long before the program
// ends, so its name can only be read at its exit. Prints
// "MEASURED name ns" per thread (thread CPU clock).
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>

#include <atomic>

#include "burn.h"

volatile double burn_sink;

static std::atomic<bool> named{false};

static void* SelfNamed(void*) {
  pthread_setname_np(pthread_self(), "self-named");
  BURN_NS(150000000);
  return nullptr;
}
static void* PrctlNamed(void*) {
  prctl(PR_SET_NAME, "prctl-named", 0, 0, 0);
  BURN_NS(150000000);
  return nullptr;
}
static void* NamedByMain(void*) {
  while (!named.load()) {
  }
  BURN_NS(150000000);
  return nullptr;
}
static void* Pool(void*) {
  pthread_setname_np(pthread_self(), "pool");
  BURN_NS(100000000);
  return nullptr;
}
static void* Unnamed(void*) {
  BURN_NS(100000000);
  return nullptr;
}
static void* EarlyExit(void*) {
  pthread_setname_np(pthread_self(), "early-exit");
  BURN_NS(100000000);
  return nullptr;
}

int main() {
  pthread_t early;
  pthread_create(&early, nullptr, EarlyExit, nullptr);
  pthread_join(early, nullptr);
  pthread_t t[6];
  pthread_create(&t[0], nullptr, SelfNamed, nullptr);
  pthread_create(&t[1], nullptr, PrctlNamed, nullptr);
  pthread_create(&t[2], nullptr, NamedByMain, nullptr);
  pthread_setname_np(t[2], "named-by-main");
  named.store(true);
  pthread_create(&t[3], nullptr, Pool, nullptr);
  pthread_create(&t[4], nullptr, Pool, nullptr);
  pthread_create(&t[5], nullptr, Unnamed, nullptr);
  for (pthread_t& x : t) pthread_join(x, nullptr);
  return 0;
}
