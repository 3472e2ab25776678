// Ends in the way its argument names, after burning CPU in burn_before_end:
//   segv | abort | exit7 (_exit(7)) | return3 | spin (until killed)
// or, without the burn:
//   term-in-exit DELAY_US THREADS: starts THREADS idle threads, then calls
//   _exit(0) while another thread sends the main thread SIGTERM DELAY_US
//   later (as Pool.terminate() does to a worker already exiting)
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
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

namespace {
volatile int exiting = 0;
pid_t main_tid;
long delay_us;

void* Idle(void*) {
  for (;;) pause();
}

void* Killer(void*) {
  while (!exiting) {
  }
  if (delay_us > 0) usleep(static_cast<useconds_t>(delay_us));
  syscall(SYS_tgkill, getpid(), main_tid, SIGTERM);
  return nullptr;
}

[[noreturn]] void TermInExit(long delay, int threads) {
  main_tid = static_cast<pid_t>(syscall(SYS_gettid));
  delay_us = delay;
  pthread_t t;
  for (int i = 0; i < threads; ++i) pthread_create(&t, nullptr, Idle, nullptr);
  pthread_create(&t, nullptr, Killer, nullptr);
  usleep(50000);  // every thread registered and idle
  exiting = 1;
  _exit(0);
}
}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "return3";
  if (!strcmp(mode, "term-in-exit") && argc > 3) TermInExit(atol(argv[2]), atoi(argv[3]));
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
