// Ends in the way its argument names, after burning CPU in burn_before_end:
//   segv | abort | exit7 (_exit(7)) | return3 | spin (until killed)
// or
//   segv-in-exit DELAY_US: a second thread burns, then faults; DELAY_US
//   after that thread is held in a signal handler (a collector's), the main
//   thread calls exit(0)
//   segv-in-exec DELAY_US: the same, the main thread exec'ing /bin/true
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

volatile int faulting = 0;
volatile pid_t faulting_tid = 0;

void* BurnThenFault(void*) {
  burn_before_end();
  faulting_tid = static_cast<pid_t>(syscall(SYS_gettid));
  faulting = 1;
  volatile int* p = nullptr;
  *p = 1;
  return nullptr;
}

// The thread's scheduler state, from /proc/self/task/TID/stat ('R', 'S', …;
// 0 when it cannot be read).
char ThreadState(pid_t tid) {
  char path[64], text[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  const size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  const char* paren = strrchr(text, ')');  // the name may hold spaces and parentheses
  return paren && paren[1] == ' ' ? paren[2] : 0;
}

// Without a collector the fault ends the process before exit() or exec is
// called; with one, its handler holds the faulting thread while the run is
// written, and the main thread goes on to exit or exec during that write.
// The delay counts from when the faulting thread sleeps in that handler: a
// thread preempted between its flag and its fault (a loaded machine) would
// otherwise let the exit or exec come before the fault, as it would without
// a collector.
[[noreturn]] void FaultInExit(long delay, bool exec) {
  pthread_t t;
  pthread_create(&t, nullptr, BurnThenFault, nullptr);
  while (!faulting) {
  }
  for (int i = 0; i < 100000 && ThreadState(faulting_tid) != 'S'; ++i) usleep(100);  // at most ~10 s
  if (delay > 0) usleep(static_cast<useconds_t>(delay));
  if (exec) execl("/bin/true", "true", static_cast<char*>(nullptr));
  exit(0);
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
  if (!strcmp(mode, "segv-in-exit") && argc > 2) FaultInExit(atol(argv[2]), false);
  if (!strcmp(mode, "segv-in-exec") && argc > 2) FaultInExit(atol(argv[2]), true);
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
