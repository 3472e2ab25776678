// Links libcct-test-early.so (whose constructor started a thread), releases
// that thread and waits for it while burning 100 ms itself.
#include "burn.h"

volatile double burn_sink;
extern "C" void release_early_thread();
extern "C" void join_early_thread();
extern "C" __attribute__((noinline)) void main_work() { BURN_NS(100000000); }

int main() {
  release_early_thread();
  main_work();
  join_early_thread();
  return 0;
}
