#!/usr/bin/env python3
"""How much a CPU-bound Python script's own speed moves from run to run, bare
and under cct-record (--python off, auto, off at 100 Hz, off on the wall
clock), three rounds in alternation: wall, user and system time and minor
faults from getrusage, and per recorded run its samples, sampled time,
handler time and unwinder counts. On the H200 host of device call 11
(docs/performance.md, "Python frames") bare runs themselves took 1.09 to
1.86 s, which is why medians of five compare loosely there.

  python3 bench/python_variance_probe.py [BUNDLE_OR_BUILD]   (default .bundle)
"""
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_bench as pb  # noqa: E402 - its SCRIPT

py = sys.executable
tmp = tempfile.mkdtemp(prefix="cct-pyvar-")
work = os.path.join(tmp, "work.py")
with open(work, "w") as f:
    f.write(pb.SCRIPT)


def run(argv):
    t0 = time.monotonic()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.monotonic() - t0, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt,
            r1.ru_nivcsw - r0.ru_nivcsw, r1.ru_nvcsw - r0.ru_nvcsw)


n = 200000
while True:
    t = run([py, work, "32", str(n), "0"])[0]
    if t >= 0.4: break
    n *= 2
n = int(n * 1.5 / t)
build = sys.argv[1] if len(sys.argv) > 1 else ".bundle"
rec, q = os.path.join(build, "tools", "cct-record"), os.path.join(build, "tools", "cct-query")
variants = {"bare": [], "off": ["--python", "off"], "auto": ["--python", "auto"], "off-100Hz": ["--python", "off", "--freq", "100"],
            "off-wall": ["--python", "off", "--clock", "wall"]}
for i in range(3):
    for v, opts in variants.items():
        db = os.path.join(tmp, f"{v}-{i}.db")
        argv = [py, work, "32", str(n), "0"] if v == "bare" else [rec, "-o", db] + opts + ["--", py, work, "32", str(n), "0"]
        w, u, s, f, ic, vc = run(argv)
        d = ""
        if v != "bare":
            out = subprocess.run([q, "-d", db, "show", "latest"], capture_output=True, text=True).stdout
            dd = dict(re.findall(r"(\w+) (\d+)", next((l for l in out.splitlines() if l.startswith("diagnostics")), "")))
            d = f"samples {dd.get('samples')} sampled {int(dd.get('sampled_ns', 0))/1e9:.3f}s handler {int(dd.get('handler_ns', 0))/1e6:.1f}ms walker {dd.get('walker_samples')} libunwind {dd.get('libunwind_samples')}"
        print(f"{v:10s} wall {w:.3f} user {u:.3f} sys {s:.3f} minflt {f} invcs {ic} volcs {vc} {d}", flush=True)
