// Two variants of one program for the diff end-to-end test: steady_work and
// other_work take 100 ms of CPU each; scaled_work takes 100 ms, or 200 ms
// with the argument "slow".
#include <string.h>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void steady_work() { BURN_NS(100000000); }
extern "C" __attribute__((noinline)) void scaled_work(bool slow) { BURN_NS(slow ? 200000000 : 100000000); }
extern "C" __attribute__((noinline)) void other_work() { BURN_NS(100000000); }

int main(int argc, char** argv) {
  const bool slow = argc > 1 && !strcmp(argv[1], "slow");
  steady_work();
  scaled_work(slow);
  other_work();
  return 0;
}
