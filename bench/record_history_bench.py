#!/usr/bin/env python3
"""What a database's history costs a recording: `cct-record -- true` into a
fresh database against the same into one that already holds N runs (a CI
database after months of runs), alternating, medians of --repeat each.
Target: the history adds at most a quarter (x1.25): a recording reads the
runs it makes, never every run stored before (the run_key index,
`ListRuns(from)`; architecture.md, "Run files").

  bench/record_history_bench.py BUILD_DIR [--runs N] [--repeat K] [--record PATH] [--query PATH]

--record: another cct-record (a copy from before a change, kept beside
the build's so that it finds the same collector).

Then the same for a reader: `cct-query top latest -n 3` and `cct-query top
spawn -n 3` (NAME: the recordings' name) on the history against the same
on a database of one such recording (301 runs), both ending with a
300-process recording, alternating; --query: another cct-query timed
alongside. Target: at most x1.25 as well (`latest` and NAME read the
newest runs, not the history: store/selector.cc, LatestInWindow and
NamedInWindow).

The history is made by recording a program that starts 300 `true`s, as
often as N needs (301 runs each time).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import SPAWN_C, compile_c  # noqa: E402



def run(argv):
    t = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} failed ({r.returncode})")
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--record")
    ap.add_argument("--query")
    args = ap.parse_args()
    record = os.path.abspath(args.record) if args.record else os.path.join(os.path.abspath(args.build), "tools/cct-record")
    query = os.path.join(os.path.abspath(args.build), "tools/cct-query")
    true = shutil.which("true")
    tmp = tempfile.mkdtemp(prefix="cct-histbench-")
    try:
        spawn = compile_c(tmp, "spawn", SPAWN_C)
        symbols = os.path.join(tmp, "symbols")
        hist = os.path.join(tmp, "history.db")
        fresh = os.path.join(tmp, "fresh.db")
        t = time.perf_counter()
        while True:
            rows = subprocess.run([query, "-d", hist, "runs", "--format", "csv"],
                                  capture_output=True, text=True).stdout.count("\n") - 1
            if rows >= args.runs:
                break
            run([record, "-o", hist, "--symbol-cache", symbols, "--", spawn, "300", true])
        print(f"# history: {rows} runs, made in {time.perf_counter() - t:.1f} s; "
              f"{args.repeat} alternating recordings of `true` each; load at start: {os.getloadavg()[0]:.2f}")
        # The reader, while both databases end with a 300-process recording.
        single = os.path.join(tmp, "single.db")
        run([record, "-o", single, "--symbol-cache", symbols, "--", spawn, "300", true])
        readers = {"cct-query": query}
        if args.query:
            readers["other cct-query"] = os.path.abspath(args.query)
        for who, q in readers.items():
            for selector in ("latest", "spawn"):  # spawn: the recordings' name (NAME)
                reads = {"301 runs": [], f"{rows} runs": []}
                for _ in range(args.repeat):
                    reads["301 runs"].append(run([q, "-d", single, "top", selector, "-n", "3"]))
                    reads[f"{rows} runs"].append(run([q, "-d", hist, "top", selector, "-n", "3"]))
                base = statistics.median(reads["301 runs"])
                for name, ts in reads.items():
                    med = statistics.median(ts)
                    print(f"{who} top {selector:6s}, {name:10s} median {med * 1e3:7.1f} ms  x{med / base:5.2f}  "
                          f"runs: {' '.join(f'{x * 1e3:.1f}' for x in ts)}")
        times = {"fresh database": [], f"{rows} runs before": []}
        for _ in range(args.repeat):
            if os.path.exists(fresh):
                os.remove(fresh)
            times["fresh database"].append(run([record, "-o", fresh, "--symbol-cache", symbols, "--", true]))
            times[f"{rows} runs before"].append(run([record, "-o", hist, "--symbol-cache", symbols, "--", true]))
        base = statistics.median(times["fresh database"])
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"{name:18s} median {med * 1e3:7.1f} ms  x{med / base:5.2f}  "
                  f"runs: {' '.join(f'{x * 1e3:.1f}' for x in ts)}")
        ratio = statistics.median(times[f"{rows} runs before"]) / base
        print(f"history costs x{ratio:.2f} (target <= x1.25): {'met' if ratio <= 1.25 else 'NOT met'}")
        print(f"# load at end: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
