#!/usr/bin/env python3
"""What reading Python frames costs (issue 16): a CPU-bound Python script
whose work runs DEPTH Python frames deep (32 by default), run bare, under
cct-record with Python frames (--python auto) and without them
(--python off), in alternation so load drifts hit every variant alike.

Prints per variant the median wall time and its ratio to the bare median of
the same invocation, and from the runs' own diagnostics the sampling
handler's time per sample (handler_ns / samples): the difference between
auto and off is the Python walk and splice per sample, on top of the native
unwind; the auto runs also time it themselves (python_handler_ns, per
sample with Python frames) and count its process_vm_readv calls. py-spy, the usual comparison, is not in Debian's registry (said so
in docs/performance.md).

With --threads T the work runs on T threading.Threads (joined by the main
thread), so that the collector also names them (it takes the GIL from a
thread of its own now and then: python/python_threads.cc); compare with a
run without.

  bench/python_bench.py BUILD_DIR [--repeat N] [--depth D] [--seconds S]
                        [--python PATH] [--freq HZ] [--threads T]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

SCRIPT = """
import sys, threading
def work(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s
def nest(depth, n):
    if depth <= 1:
        return work(n)
    return nest(depth - 1, n)
def part(depth, n, parts):
    for _ in range(parts):
        nest(depth - 2, n // 20)  # <module> and nest's caller count too
depth, n, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
if threads == 0:
    part(depth, n, 20)
else:  # the same work on Python threads: the thread names are asked for too
    ts = [threading.Thread(target=part, args=(depth, n, 20 // threads)) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
"""


def diagnostics(query, db):
    out = subprocess.run([query, "-d", db, "show", "latest"], capture_output=True, text=True, check=True).stdout
    line = next((l for l in out.splitlines() if l.startswith("diagnostics")), "")
    return {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", line)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--depth", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=2.0, help="bare run time to aim for")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--freq", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=0, help="run the work on T Python threads (T divides 20)")
    a = ap.parse_args()
    if a.threads < 0 or (a.threads and 20 % a.threads):
        ap.error("--threads must divide 20")
    record = os.path.join(a.build, "tools", "cct-record")
    query = os.path.join(a.build, "tools", "cct-query")
    tmp = tempfile.mkdtemp(prefix="cct-python-bench-")
    script = os.path.join(tmp, "work.py")
    with open(script, "w") as f:
        f.write(SCRIPT)

    def run(argv):
        t0 = time.monotonic()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.monotonic() - t0

    # Calibrate the work to about --seconds bare.
    n = 200000
    while True:
        t = run([a.python, script, str(a.depth), str(n), str(a.threads)])
        if t >= a.seconds / 4 or n > 1 << 30:
            break
        n *= 2
    n = int(n * a.seconds / max(t, 1e-3))

    work = [a.python, script, str(a.depth), str(n), str(a.threads)]
    variants = {
        "bare": lambda db: work,
        "python auto": lambda db: [record, "-o", db, "--freq", str(a.freq), "--python", "auto", "--"] + work,
        "python off": lambda db: [record, "-o", db, "--freq", str(a.freq), "--python", "off", "--"] + work,
    }
    times = {v: [] for v in variants}
    per_sample = {v: [] for v in variants if v != "bare"}
    python_samples = []
    named = []
    in_run, safe_reads = [], []
    for i in range(a.repeat):
        for v, argv in variants.items():
            db = os.path.join(tmp, f"{v.replace(' ', '-')}-{i}.db")
            times[v].append(run(argv(db)))
            if v != "bare":
                d = diagnostics(query, db)
                per_sample[v].append(d["handler_ns"] / max(d["samples"], 1))
                if v == "python auto":
                    python_samples.append(d.get("python_samples", 0) / max(d["samples"], 1))
                    named.append(d.get("python_named_threads", 0))
                    # The walk timed inside the same samples: no second run
                    # whose speed may differ.
                    walked = max(d.get("python_samples", 0), 1)
                    in_run.append(d.get("python_handler_ns", 0) / walked)
                    safe_reads.append(d.get("python_safe_reads", 0) / walked)
    bare = statistics.median(times["bare"])
    on = f", on {a.threads} Python threads" if a.threads else ""
    print(f"CPU-bound Python ({a.python}), work {a.depth} Python frames deep{on}, {a.freq} Hz, "
          f"median of {a.repeat} alternating runs")
    print(f"{'variant':<14}{'wall':>10}{'ratio':>8}{'handler/sample':>16}")
    for v in variants:
        m = statistics.median(times[v])
        h = f"{statistics.median(per_sample[v]) / 1000:.2f} µs" if v in per_sample else ""
        print(f"{v:<14}{m:>9.3f}s{m / bare:>8.3f}{h:>16}")
    walk = statistics.median(per_sample["python auto"]) - statistics.median(per_sample["python off"])
    print(f"Python walk and splice per sample (auto - off): {walk / 1000:.2f} µs; "
          f"samples with Python frames: {100 * statistics.median(python_samples):.1f} %")
    print(f"Python walk and splice per sample, timed in the auto runs: {statistics.median(in_run) / 1000:.2f} µs; "
          f"process_vm_readv calls per sample: {statistics.median(safe_reads):.2f}")
    if a.threads:
        print(f"threads named by Python (median): {statistics.median(named):.0f} of {a.threads}")
    print("py-spy record --native: not compared (not in Debian's package registry)")


if __name__ == "__main__":
    sys.exit(main())
