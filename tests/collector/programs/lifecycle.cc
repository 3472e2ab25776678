// Ends in the way its argument names, after burning CPU in burn_before_end:
//   segv | abort | exit7 (_exit(7)) | return3 | spin (until killed)
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void burn_before_end() { BURN_NS(400000000); }
extern "C" __attribute__((noinline)) void spin_forever() {
  for (;;) BURN_NS(100000000);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "return3";
  burn_before_end();
  fflush(stdout);
  if (!strcmp(mode, "segv")) {
    volatile int* p = nullptr;
    *p = 1;
  }
  if (!strcmp(mode, "abort")) abort();
  if (!strcmp(mode, "exit7")) _exit(7);
  if (!strcmp(mode, "spin")) spin_forever();
  return 3;
}
