"""Process measurement shared by the benchmark scripts in bench/."""
import os
import subprocess
import sys
import time


def run_usage(argv, ok=(0,)):
    """Wall time (s), CPU time (user + system, s) and peak RSS (MiB) of one
    process, via os.wait4; its output is discarded. Exits the script when
    the status is not in `ok`."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        sys.exit(f"bench: {' '.join(argv)} failed ({code})")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def run_rss(argv, ok=(0,)):
    """Wall time (s) and peak RSS (MiB) of one process (run_usage)."""
    wall, _, rss = run_usage(argv, ok)
    return wall, rss


def usage_runs(argv, repeat):
    """Wall times and CPU times of `repeat` runs, and their largest peak RSS."""
    walls, cpus, rss = [], [], 0.0
    for _ in range(repeat):
        w, c, r = run_usage(argv)
        walls.append(w)
        cpus.append(c)
        rss = max(rss, r)
    return walls, cpus, rss


def best_cpu(argv, repeat):
    """Best wall time, best CPU time and largest peak RSS over `repeat` runs:
    on a shared machine the CPU time moves less than the wall time."""
    walls, cpus, rss = usage_runs(argv, repeat)
    return min(walls), min(cpus), rss


def generated_folded(tmp, gen, nodes, seed=42):
    """A folded profile of `nodes` nodes from bench/gen-profile, written in
    `tmp`; its path."""
    folded = os.path.join(tmp, "p.folded")
    with open(folded, "wb") as f:
        subprocess.run([gen, "--nodes", str(nodes), "--seed", str(seed)], stdout=f, check=True)
    return folded


def best(argv, repeat):
    """Best wall time and largest peak RSS over `repeat` runs."""
    walls, rss = [], 0.0
    for _ in range(repeat):
        w, r = run_rss(argv)
        walls.append(w)
        rss = max(rss, r)
    return min(walls), rss


def built_programs(build, *paths):
    """The build's programs at `paths` (relative to the build directory, as
    "tools/cct-query"); exits the script naming the first one missing."""
    out = [os.path.join(build, p) for p in paths]
    for p in out:
        if not os.access(p, os.X_OK):
            sys.exit(f"bench: {p} not found; build first (meson setup build && ninja -C build && ninja -C build benches)")
    return out


SPAWN_C = r"""
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
extern char** environ;
/* posix_spawn (no fork in the parent) of argv[2..] argv[1] times. */
int main(int argc, char** argv) {
  for (int i = 0, n = atoi(argv[1]); i < n; ++i) {
    pid_t pid;
    int status;
    if (posix_spawn(&pid, argv[2], 0, 0, argv + 2, environ) != 0 || waitpid(pid, &status, 0) != pid) return 1;
  }
  return 0;
}
"""


def compile_c(tmp, name, source):
    """Compiles C `source` (stdlib.h included) to TMP/NAME with cc -O2 -g;
    returns the executable's path."""
    src = os.path.join(tmp, name + ".c")
    with open(src, "w") as f:
        f.write("#include <stdlib.h>\n" + source)
    exe = os.path.join(tmp, name)
    subprocess.run(["cc", "-O2", "-g", "-o", exe, src], check=True)
    return exe
