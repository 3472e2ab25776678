// A program's own signal and a sampling tick arriving together must end a
// wait exactly as the program's signal alone would (make -j waits for
// SIGCHLD in pselect this way). For each wait that takes a signal mask, 20
// times: every signal blocked (the tick too: it becomes pending during a
// 3 ms spin, under --clock wall), SIGUSR1 raised (pending), then the wait
// with an empty mask and a 2 s timeout. Without a profiler SIGUSR1 ends it at
// once with EINTR; a wait that times out lost the program's signal. Prints
// "<call> <iterations ended by SIGUSR1 within 1 s> <handler runs>" per call.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1;
static void on_usr1(int) { usr1 = usr1 + 1; }

static long long MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void Spin(long long ns) {
  const long long end = MonoNs() + ns;
  while (MonoNs() < end) {
  }
}

template <class Wait>
static void Check(const char* name, Wait wait) {
  int ended = 0;
  const sig_atomic_t before = usr1;
  for (int i = 0; i < 20; ++i) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    raise(SIGUSR1);
    Spin(3000000);
    const long long t0 = MonoNs();
    const int rc = wait();
    const int err = errno;
    const long long took = MonoNs() - t0;
    if (rc == -1 && err == EINTR && took < 1000000000LL) ++ended;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (took >= 1000000000LL) break;  // the signal was lost: no point waiting out the rest
  }
  printf("%s %d %d\n", name, ended, static_cast<int>(usr1 - before));
}

int main() {
  struct sigaction sa {};
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, nullptr);
  sigset_t empty;
  sigemptyset(&empty);
  Check("pselect", [&] {
    timespec ts{2, 0};
    return pselect(0, nullptr, nullptr, nullptr, &ts, &empty);
  });
  Check("ppoll", [&] {
    timespec ts{2, 0};
    return ppoll(nullptr, 0, &ts, &empty);
  });
  const int ep = epoll_create1(0);
  Check("epoll_pwait", [&] {
    epoll_event ev;
    return epoll_pwait(ep, &ev, 1, 2000, &empty);
  });
  close(ep);
  Check("sigsuspend", [&] { return sigsuspend(&empty); });
  return 0;
}
