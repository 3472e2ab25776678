// Two variants of one program for the diff end-to-end test: steady_work and
// other_work take 100 ms of CPU each; scaled_work takes 100 ms, or 200 ms
// with the argument "slow". The clock is read every 200,000 multiply-adds (0.3 % of the time):
// with BURN_NS's 500, clock_gettime took 12 % of the time, and its share
// moved by 20 % between two groups of five runs of the same program (the
// kernel's cost of the call varies), which cct-diff rightly flagged.
#include <string.h>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void steady_work() { BURN_NS_STEP(100000000, 200000); }
extern "C" __attribute__((noinline)) void scaled_work(bool slow) { BURN_NS_STEP(slow ? 200000000 : 100000000, 200000); }
extern "C" __attribute__((noinline)) void other_work() { BURN_NS_STEP(100000000, 200000); }

int main(int argc, char** argv) {
  const bool slow = argc > 1 && !strcmp(argv[1], "slow");
  steady_work();
  scaled_work(slow);
  other_work();
  return 0;
}
