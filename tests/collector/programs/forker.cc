// fork: the child burns in child_work and exits 0; then the parent burns in
// parent_work and execs itself as "image", which burns in image_work.
// vfork: the parent burns in parent_work, then vforks twice: one child
// execs the program as "image", the other _exits at once.
//   forker [vfork | image]
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "burn.h"

volatile double burn_sink;

extern "C" __attribute__((noinline)) void child_work() { BURN_NS(200000000); }
extern "C" __attribute__((noinline)) void parent_work() { BURN_NS(200000000); }
extern "C" __attribute__((noinline)) void image_work() { BURN_NS(200000000); }

int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "image")) {
    image_work();
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "vfork")) {
    parent_work();
    pid_t pid = vfork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], "image", (char*)nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    pid = vfork();
    if (pid == 0) _exit(3);
    int status2 = 0;
    waitpid(pid, &status2, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && WIFEXITED(status2) && WEXITSTATUS(status2) == 3 ? 0 : 1;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    child_work();
    return 0;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  parent_work();
  execl("/proc/self/exe", argv[0], "image", (char*)nullptr);
  perror("execl");
  return 1;
}
