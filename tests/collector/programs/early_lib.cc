// A library whose constructor starts a thread: it runs before the
// preloaded collector's constructor, so that thread exists before the
// collector does. The thread burns 300 ms of CPU in early_thread_work, but
// only once main releases it: main runs after every constructor, so the
// collector has found the thread and armed its timer by then. Burning at
// once would make the expected figure depend on how long the collector's
// start took on a loaded machine (CI once saw 250 of the 300 ms).
#include <pthread.h>
#include <time.h>

#include <atomic>

#include "burn.h"

volatile double burn_sink;
static pthread_t early;
static std::atomic<bool> released{false};

extern "C" __attribute__((noinline)) void early_thread_work() { BURN_NS(300000000); }

static void* EarlyMain(void*) {
  const timespec pause{0, 1000000};
  while (!released.load()) nanosleep(&pause, nullptr);
  early_thread_work();
  return nullptr;
}

__attribute__((constructor)) static void StartEarly() { pthread_create(&early, nullptr, EarlyMain, nullptr); }

extern "C" void release_early_thread() { released.store(true); }
extern "C" void join_early_thread() { pthread_join(early, nullptr); }
