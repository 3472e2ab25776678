// Blocking calls and the program's own timers under the sampler: counts any
// EINTR it sees from nanosleep/usleep/poll/select/epoll_wait, and checks its
// own SIGALRM (setitimer) and SIGPROF handlers keep firing. Prints
// "EINTR n", "SIGALRM n", "SIGPROF n" and "SLEPT_MS n".
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"

volatile double burn_sink;
static volatile sig_atomic_t alarms, profs;

static void on_alarm(int) { alarms = alarms + 1; }
static void on_prof(int) { profs = profs + 1; }

static long long MonoMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

extern "C" __attribute__((noinline)) void sleepy_work(int* eintr) {
  for (int i = 0; i < 5; ++i) {
    timespec req{0, 20000000};
    if (nanosleep(&req, nullptr) != 0) ++*eintr;
    if (usleep(20000) != 0) ++*eintr;
    if (poll(nullptr, 0, 20) < 0) ++*eintr;
    timeval tv{0, 20000};
    if (select(0, nullptr, nullptr, nullptr, &tv) < 0) ++*eintr;
    const int ep = epoll_create1(0);
    epoll_event ev;
    if (epoll_wait(ep, &ev, 1, 20) < 0) ++*eintr;
    close(ep);
  }
}

int main() {
  struct sigaction sa {};
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, nullptr);
  sa.sa_handler = on_prof;
  sigaction(SIGPROF, &sa, nullptr);
  itimerval it{{0, 10000}, {0, 10000}};  // 100 Hz of real time
  setitimer(ITIMER_REAL, &it, nullptr);
  int eintr_outside = 0;
  const long long t0 = MonoMs();
  // The program's own timers interrupt its sleeps too (that is its business):
  // measure EINTR with them off first.
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  int eintr = 0;
  sleepy_work(&eintr);
  const long long slept = MonoMs() - t0;
  setitimer(ITIMER_REAL, &it, nullptr);
  itimerval prof{{0, 10000}, {0, 10000}};
  setitimer(ITIMER_PROF, &prof, nullptr);
  BURN_NS(300000000);
  setitimer(ITIMER_REAL, &off, nullptr);
  setitimer(ITIMER_PROF, &off, nullptr);
  (void)eintr_outside;
  printf("EINTR %d\nSIGALRM %d\nSIGPROF %d\nSLEPT_MS %lld\n", eintr, (int)alarms, (int)profs, slept);
  return 0;
}
