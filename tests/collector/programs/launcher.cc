// A launcher with a helper: the process cct-record starts (the program)
// forks a helper "daemon", which forks a grandchild; each burns CPU in its
// own function. The helpers' runs are created after the program's (a forked
// child writes its run at its first checkpoint or exit), so the newest run
// is a helper's. The program waits for the helper so every run is complete
// when cct-record summarizes.
//   launcher
#include <sys/wait.h>
#include <unistd.h>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void main_work() { BURN_NS(300000000); }
extern "C" __attribute__((noinline)) void daemon_work() { BURN_NS(150000000); }
extern "C" __attribute__((noinline)) void grandchild_work() { BURN_NS(100000000); }

int main() {
  const pid_t daemon = fork();
  if (daemon == 0) {
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      grandchild_work();
      return 0;
    }
    daemon_work();
    int status = 0;
    waitpid(grandchild, &status, 0);
    return 0;
  }
  main_work();
  int status = 0;
  waitpid(daemon, &status, 0);
  return 0;
}
