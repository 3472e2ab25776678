#!/usr/bin/env python3
"""Soak and faults: many recorders into one database under readers and kills.

    python3 tests/soak/soak.py --build build [--recorders 16] [--rounds 3]
                               [--queries 4] [--kill-share 0.3] [--seed N] [--keep]

The test command runs it with small numbers (tests/meson.build: 6 recorders,
2 rounds, 2 query loops); run it by hand with the numbers above, or larger,
to soak for longer.

Each round starts --recorders `cct-record -o DB --name soak-R-I --checkpoint
0.2 -- cct-example SECONDS` at once (examples/workload.cc, 0.2-0.6 s of CPU
work in two threads). A share of them (--kill-share) is killed with SIGKILL
after 0.05-0.3 s: half the program (its run must end `crashed` with signal
9: stored by the collector's last checkpoint, or by cct-record itself when
the kill came before the collector's first write), half the recorder, once
the program has written its first run file (the program then gets SIGTERM
from its parent's death and its run file waits in the spool: `crashed`
with signal 15, or without one when the signal came before the collector's
handlers, or `complete` when it finished first). Meanwhile --queries loops run
`cct-query runs`, `top latest`, `show latest` and `check` on the same file:
each must exit 0 (or, before the file exists, 2 with one line); a signal,
a check that finds damage (1) or several error lines fail the soak.

Afterwards one more `cct-record` gathers what killed recorders left in the
spool, and every program started must be in the database exactly once, its
state what its fate allows, none still `recording`; `cct-query check`
must pass.

Faults (root, in a private mount namespace; skipped with a line where
`unshare -m` is not allowed):
  disk full   a 600 KiB tmpfs holding a one-run database, then filled: a
              recording prints one line and stores nothing, cct-import
              fails with one line and exit 2; the first run stays intact
              (`check`), and recording works again once there is room;
  read-only   the database's folder bind-mounted read-only: runs, top and
              check work; cct-record and cct-import fail with one line
              (125 and 2).

Prints what it did and `soak: PASS` or `soak: FAIL: ...`; exit 0, 1, or 2
on a setup error.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time


def tool(build, name):
    return os.path.join(os.path.abspath(build), "tools", name)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def exe_of(pid):
    try:
        return os.path.realpath(f"/proc/{pid}/exe")
    except OSError:
        return None


def children(pid):
    """The pids of pid's children (/proc), [] when it has none or is gone."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class Soak:
    def __init__(self, a, tmp):
        self.a = a
        self.db = os.path.join(tmp, "soak.db")
        self.record = tool(a.build, "cct-record")
        self.query = tool(a.build, "cct-query")
        self.program = os.path.join(os.path.abspath(a.build), "examples", "cct-example")
        self.program_real = os.path.realpath(self.program)
        self.rng = random.Random(a.seed)
        self.failures = []
        self.lock = threading.Lock()
        self.fates = {}  # run name -> (fate, whether the kill landed)
        self.query_counts = {}

    def fail(self, what):
        with self.lock:
            self.failures.append(what)
        print(f"  FAIL: {what}", flush=True)

    # --- query loops --------------------------------------------------------
    def query_loop(self, k, stop):
        cmds = [["runs"], ["top", "latest", "-n", "5"], ["show", "latest"], ["check"]]
        i = 0
        while not stop.is_set():
            cmd = cmds[(i + k) % len(cmds)]
            i += 1
            argv = [self.query] + (["check", self.db] if cmd == ["check"] else ["-d", self.db] + cmd)
            r = run(argv)
            errs = [ln for ln in r.stderr.splitlines() if ln.strip()]
            key = cmd[0]
            with self.lock:
                self.query_counts[key] = self.query_counts.get(key, 0) + 1
            if r.returncode == 0:
                continue
            if r.returncode == 2 and len(errs) == 1 and any(
                    why in errs[0].lower() for why in ("holds no runs", "empty lmdb environment", "no such file",
                                                       "no such database file", "has no metrics",
                                                       "no profile data yet")):
                # No database yet, one being created, no run stored yet, or
                # the latest run just started (nothing sampled): one line.
                continue
            said = [ln for ln in r.stdout.splitlines() if "damaged" in ln][:3] if cmd == ["check"] else []
            self.fail(f"cct-query {' '.join(cmd)} exited {r.returncode}: {' | '.join(errs[:3] + said)}")

    def run_file_of(self, recorder_pid, timeout=10.0):
        """Waits until the program under this recorder has written its first
        run file (DB.spool/SESSION/KEY.run, SESSION's owner file naming the
        recorder): only then is there a run to lose."""
        root = self.db + ".spool"
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                for session in os.listdir(root):
                    d = os.path.join(root, session)
                    try:
                        with open(os.path.join(d, "owner")) as f:
                            if f.read().split()[0] != str(recorder_pid):
                                continue
                        if any(n.endswith(".run") for n in os.listdir(d)):
                            return True
                    except (OSError, IndexError):
                        continue
            except OSError:
                pass
            time.sleep(0.005)
        return False

    # --- one recorder -------------------------------------------------------
    def recorder(self, name, fate, seconds, delay):
        argv = [self.record, "-o", self.db, "--name", name, "--checkpoint", "0.2", "--", self.program,
                f"{seconds:.2f}"]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        landed = False
        if fate != "normal":
            # The program must exist, exec'd (the collector starts with it):
            # a recorder killed between its fork and the exec leaves no
            # program and no run to find.
            prog = None
            for _ in range(1000):
                kids = [k for k in children(p.pid) if exe_of(k) == self.program_real]
                if kids:
                    prog = kids[0]
                    break
                if p.poll() is not None:
                    break
                time.sleep(0.005)
            if prog is not None and fate == "kill-recorder" and not self.run_file_of(p.pid):
                prog = None  # its collector never wrote: a kill now could only lose a run nobody began
            time.sleep(delay)
            target = prog if fate == "kill-program" else p.pid if prog is not None else None
            if target is not None:
                try:
                    os.kill(target, signal.SIGKILL)
                    landed = True
                except ProcessLookupError:
                    pass
        _, err = p.communicate(timeout=120)
        with self.lock:
            self.fates[name] = (fate, landed)
        lines = [ln for ln in err.splitlines() if ln.strip() and "GPU tracing off" not in ln]
        if fate == "normal" and p.returncode != 0:
            self.fail(f"{name}: cct-record exited {p.returncode}: {' | '.join(lines[-3:])}")

    def soak(self):
        a = self.a
        stop = threading.Event()
        loops = [threading.Thread(target=self.query_loop, args=(k, stop)) for k in range(a.queries)]
        for t in loops:
            t.start()
        started = 0
        t0 = time.monotonic()
        for rnd in range(a.rounds):
            threads = []
            for i in range(a.recorders):
                u = self.rng.random()
                fate = ("normal" if u >= a.kill_share else
                        "kill-program" if u < a.kill_share / 2 else "kill-recorder")
                name = f"soak-{rnd}-{i}"
                t = threading.Thread(target=self.recorder,
                                     args=(name, fate, self.rng.uniform(0.2, 0.6), self.rng.uniform(0.05, 0.3)))
                t.start()
                threads.append(t)
                started += 1
            for t in threads:
                t.join()
        stop.set()
        for t in loops:
            t.join()
        fates = {}
        for f, landed in self.fates.values():
            fates[f"{f}{'' if landed or f == 'normal' else ' (missed)'}"] = \
                fates.get(f"{f}{'' if landed or f == 'normal' else ' (missed)'}", 0) + 1
        print(f"soak: {started} recordings in {a.rounds} rounds of {a.recorders} in "
              f"{time.monotonic() - t0:.1f} s; fates {json.dumps(fates, sort_keys=True)}; "
              f"queries meanwhile {json.dumps(self.query_counts, sort_keys=True)}", flush=True)

        # What killed recorders left in the spool is stored by the next one.
        r = run([self.record, "-o", self.db, "--name", "gather", "--", "/bin/true"])
        if r.returncode != 0:
            self.fail(f"the gathering recording exited {r.returncode}: {r.stderr.strip()[-300:]}")
        runs = json.loads(run([self.query, "-d", self.db, "runs", "--format", "json"]).stdout or "[]")
        by_name = {}
        for rec in runs:
            by_name.setdefault(rec.get("name"), []).append(rec)
        states = {}
        for name, (fate, landed) in sorted(self.fates.items()):
            got = by_name.get(name, [])
            if len(got) != 1:
                self.fail(f"{name} ({fate}): {len(got)} runs in the database, not 1")
                continue
            rec = got[0]
            state, sig, code = rec.get("state"), rec.get("term_signal"), rec.get("exit_code")
            states[state] = states.get(state, 0) + 1
            complete = state == "complete" and code == 0
            if fate == "normal" or not landed:
                ok = complete
            elif fate == "kill-program":
                ok = state == "crashed" and sig == signal.SIGKILL
            else:
                # SIGTERM from the recorder's death; no signal when it came
                # before the collector's handlers were in place (the run
                # file from its start says crashed, the gatherer found it gone).
                ok = complete or (state == "crashed" and sig in (signal.SIGTERM, None))
            if not ok:
                self.fail(f"{name} ({fate}{'' if landed else ', missed'}): state {state}, signal {sig}, exit {code}")
        print(f"soak: runs stored {len(runs)} (the programs' {len(self.fates)} and the gathering one); "
              f"states {json.dumps(states, sort_keys=True)}", flush=True)
        r = run([self.query, "check", self.db])
        print("soak: " + r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "soak: check printed nothing")
        if r.returncode != 0:
            self.fail(f"cct-query check exited {r.returncode}: {(r.stdout + r.stderr).strip()[-400:]}")


# --- faults: run inside `unshare -m` (a private mount namespace) ----------------
def one_line(r):
    return len([ln for ln in r.stderr.splitlines() if ln.strip() and "GPU tracing off" not in ln]) == 1


def faults_inside(a, tmp):
    """Disk full and read-only, in this process's own mount namespace."""
    record, query, imp = tool(a.build, "cct-record"), tool(a.build, "cct-query"), tool(a.build, "cct-import")
    program = os.path.join(os.path.abspath(a.build), "examples", "cct-example")
    bad = []
    folded = os.path.join(tmp, "x.folded")
    with open(folded, "w") as f:
        f.write("main;compute;kernel 10\nmain;io 5\n")

    def expect(what, cond, r=None):
        print(f"  {'ok  ' if cond else 'FAIL'} {what}" + ("" if cond or r is None else
                                                        f": exit {r.returncode}, {r.stderr.strip()[-300:]!r}"))
        if not cond:
            bad.append(what)

    # Disk full.
    full = os.path.join(tmp, "full")
    os.makedirs(full)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", full], check=True)
    db = os.path.join(full, "f.db")
    r = run([imp, "-d", db, "--from", "folded", "--name", "first", folded])
    expect("disk full: a first run imported", r.returncode == 0, r)
    subprocess.run(["dd", "if=/dev/zero", f"of={full}/filler", "bs=4k"], capture_output=True)
    r = run([record, "-o", db, "--name", "full", "--", program, "0.2"])
    expect("disk full: cct-record says so in one line, the program still runs (exit 0)",
           r.returncode == 0 and one_line(r) and "No space left" in r.stderr, r)
    r = run([imp, "-d", db, "--from", "folded", "--name", "second", folded])
    expect("disk full: cct-import fails with one line, exit 2",
           r.returncode == 2 and one_line(r) and "No space left" in r.stderr, r)
    names = [x["name"] for x in json.loads(run([query, "-d", db, "runs", "--format", "json"]).stdout)]
    expect("disk full: the database holds the first run only", names == ["first"])
    r = run([query, "check", db])
    expect("disk full: cct-query check passes", r.returncode == 0, r)
    os.unlink(os.path.join(full, "filler"))
    r = run([record, "-o", db, "--name", "after", "--", "/bin/true"])
    names = [x["name"] for x in json.loads(run([query, "-d", db, "runs", "--format", "json"]).stdout)]
    expect("disk full: with room again, recording works", r.returncode == 0 and names == ["first", "after"], r)

    # Read-only.
    ro = os.path.join(tmp, "ro")
    os.makedirs(ro)
    db = os.path.join(ro, "r.db")
    r = run([imp, "-d", db, "--from", "folded", "--name", "first", folded])
    expect("read-only: a first run imported", r.returncode == 0, r)
    subprocess.run(["mount", "--bind", ro, ro], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", ro], check=True)
    for cmd in (["-d", db, "runs"], ["-d", db, "top", "first"], ["check", db]):
        r = run([query] + cmd)
        expect(f"read-only: cct-query {cmd[2] if cmd[0] == '-d' else cmd[0]} works", r.returncode == 0, r)
    r = run([record, "-o", db, "--name", "w", "--", "/bin/true"])
    expect("read-only: cct-record fails with one line, exit 125",
           r.returncode == 125 and one_line(r) and "Read-only" in r.stderr, r)
    r = run([imp, "-d", db, "--from", "folded", "--name", "w", folded])
    expect("read-only: cct-import fails with one line, exit 2",
           r.returncode == 2 and one_line(r) and "Read-only" in r.stderr, r)
    return 1 if bad else 0


def faults(a, tmp):
    if os.geteuid() != 0 or run(["unshare", "-m", "true"]).returncode != 0:
        print("soak: faults SKIPPED (needs root and unshare -m for tmpfs and read-only mounts)")
        return []
    ftmp = os.path.join(tmp, "faults")
    os.makedirs(ftmp)
    r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, os.path.abspath(__file__),
                        "--build", a.build, "--faults-inside", ftmp])
    return [] if r.returncode == 0 else ["faults"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="meson build directory (tools/, examples/cct-example)")
    ap.add_argument("--recorders", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=4)
    ap.add_argument("--kill-share", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock, printed)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--faults-inside", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.faults_inside:
        return faults_inside(a, a.faults_inside)
    for t in ("cct-record", "cct-query", "cct-import"):
        if not os.access(tool(a.build, t), os.X_OK):
            print(f"soak: {tool(a.build, t)} not found (build first, or pass --build DIR)")
            return 2
    if a.seed is None:
        a.seed = int(time.time())
    print(f"soak: seed {a.seed} (--seed to repeat)", flush=True)
    tmp = tempfile.mkdtemp(prefix="cct-soak-")
    try:
        s = Soak(a, tmp)
        s.soak()
        failed = s.failures + faults(a, tmp)
    finally:
        if a.keep:
            print(f"soak: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("soak: PASS" if not failed else f"soak: FAIL: {len(failed)} problem(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
