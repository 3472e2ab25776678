// Recursion to a depth given on the command line, burning CPU time at the
// bottom, for the unwinder's depth tests.  deep_recursion DEPTH
#include <stdio.h>
#include <stdlib.h>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void dive(int depth) {
  if (depth > 1) dive(depth - 1);
  else BURN_NS(400000000);
  burn_sink = burn_sink + depth;  // not a tail call: every level stays on the stack
}

int main(int argc, char** argv) {
  const int depth = argc > 1 ? atoi(argv[1]) : 2000;
  if (depth < 1) return 2;
  dive(depth);
  printf("DEPTH %d\n", depth);
  return 0;
}
