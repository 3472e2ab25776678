// Links libcct-test-early.so (whose constructor started a thread) and waits
// for that thread while burning 100 ms itself.
#include "burn.h"

volatile double burn_sink;
extern "C" void join_early_thread();
extern "C" __attribute__((noinline)) void main_work() { BURN_NS(100000000); }

int main() {
  main_work();
  join_early_thread();
  return 0;
}
