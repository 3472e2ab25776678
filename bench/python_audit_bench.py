#!/usr/bin/env python3
"""What the thread-naming audit hook costs (CPython 3.12+, issue 16): with
any audit hook installed, CPython builds every audit event's arguments and
calls the hook. Times an audited call (sys._getframe) in a loop, bare, under
cct-record --python auto (the hook is added) and --python off (no hook),
alternating; prints the median ns per call of each and auto's excess.

  bench/python_audit_bench.py BUILD_DIR --python PATH [--repeat N] [--calls N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

SCRIPT = """
import sys, time
f, n = sys._getframe, int(sys.argv[1])
t0 = time.perf_counter()
for _ in range(n):
    f()
print((time.perf_counter() - t0) / n * 1e9)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--python", required=True, help="a CPython 3.12 or later")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000000)
    a = ap.parse_args()
    record = os.path.join(a.build, "tools", "cct-record")
    tmp = tempfile.mkdtemp(prefix="cct-audit-bench-")
    script = os.path.join(tmp, "audit.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    work = [a.python, script, str(a.calls)]
    variants = {
        "bare": lambda db: work,
        "python off": lambda db: [record, "-o", db, "--freq", "10", "--python", "off", "--"] + work,
        "python auto": lambda db: [record, "-o", db, "--freq", "10", "--python", "auto", "--"] + work,
    }
    ns = {v: [] for v in variants}
    for i in range(a.repeat):
        for v, argv in variants.items():
            db = os.path.join(tmp, f"{v.replace(' ', '-')}-{i}.db")
            out = subprocess.run(argv(db), check=True, capture_output=True, text=True).stdout
            ns[v].append(float(out.split()[-1]))
    print(f"sys._getframe() in a loop ({a.python}), median of {a.repeat} alternating runs")
    for v in variants:
        print(f"{v:<12}{statistics.median(ns[v]):>8.1f} ns per call")
    print(f"audit hook: {statistics.median(ns['python auto']) - statistics.median(ns['python off']):.1f} ns "
          f"more per audited event")


if __name__ == "__main__":
    sys.exit(main())
