// fork: the child burns in child_work and exits 0; then the parent burns in
// parent_work and execs itself as "image", which burns in image_work.
// vfork: the parent burns in parent_work, then vforks twice: one child
// execs the program as "image", the other _exits at once.
// vfork-edges: what only a real vfork shows and what a vfork child may do to
// its parent's profile. The parent burns in parent_work; one child writes a
// variable the parent then reads (shared memory: vfork, not fork) and execs
// "image" with an environment of its own (no LD_PRELOAD value, none of the
// recording's variables, entries without "="); another is killed by SIGTERM; then the parent burns
// in child_work. Exits 0 only if the parent saw the child's write and the
// second child died of SIGTERM.
// vfork-loop N: N vfork children that exec the program as "noop", which
// exits at once; the parent's samples land where vfork returns (glibc's
// __vfork keeps its return address in a register there).
//   forker [vfork | vfork-edges | vfork-loop N | image | noop]
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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
  if (argc > 1 && !strcmp(argv[1], "noop")) return 0;
  if (argc > 2 && !strcmp(argv[1], "vfork-loop")) {
    for (int i = 0, n = atoi(argv[2]); i < n; ++i) {
      const pid_t pid = vfork();
      if (pid == 0) {
        execl("/proc/self/exe", argv[0], "noop", (char*)nullptr);
        _exit(127);
      }
      int status = 0;
      if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    }
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "vfork-edges")) {
    parent_work();
    static volatile int written_by_child = 0;
    // Entries without '=' too: environments are whatever programs make them.
    static char* const custom_env[] = {const_cast<char*>("CCT_TEST_CUSTOM_ENV=1"), const_cast<char*>("LD_PRELOAD"),
                                       const_cast<char*>("NVTX_INJECTION64_PATH"), nullptr};
    pid_t pid = vfork();
    if (pid == 0) {
      written_by_child = 42;
      execle("/proc/self/exe", argv[0], "image", (char*)nullptr, custom_env);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    pid = vfork();
    if (pid == 0) {
      raise(SIGTERM);
      _exit(5);
    }
    int status2 = 0;
    waitpid(pid, &status2, 0);
    child_work();
    const bool ok = written_by_child == 42 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                    WIFSIGNALED(status2) && WTERMSIG(status2) == SIGTERM;
    if (!ok) fprintf(stderr, "forker: written %d, status %#x, status2 %#x\n", written_by_child, status, status2);
    return ok ? 0 : 1;
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
