// A library whose constructor starts a thread: it runs before the
// preloaded collector's constructor, so that thread exists before the
// collector does. The thread burns 300 ms of CPU in early_thread_work.
#include <pthread.h>

#include "burn.h"

volatile double burn_sink;
static pthread_t early;

extern "C" __attribute__((noinline)) void early_thread_work() { BURN_NS(300000000); }

static void* EarlyMain(void*) {
  early_thread_work();
  return nullptr;
}

__attribute__((constructor)) static void StartEarly() { pthread_create(&early, nullptr, EarlyMain, nullptr); }

extern "C" void join_early_thread() { pthread_join(early, nullptr); }
