#!/usr/bin/env python3
"""--trace overhead benchmark (not a test).

    python3 bench/trace_overhead_bench.py [--build build] [--repeat 7] [--work 3e8]

Workload: bench/deep_workload.cc, two CPU-bound threads at stack depth 48 (as
bench/collector_bench.py). Measured in one invocation, interleaved round-robin
so drift hits every variant alike: median whole-process wall time and CPU time
(user + system: on a shared machine it moves less than wall time) of
  bare        the program alone
  cct 1k      cct-record --freq 1000
  cct 1k tr   cct-record --freq 1000 --trace
and the trace's stored bytes per sample (cct-query show: the trace section's
size over the run's samples). Then the handler's extra work per sample
(bench/trace_log_bench.cc). Targets (Timelines issue): --trace within 1 % of
no trace at 1 kHz; <= 100 ns extra per sample; <= 8 bytes per sample on disk.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import built_programs, run_usage  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--work", default="3e8", help="work units per thread")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    workload, rec, query, log_bench = built_programs(b, "bench/deep-workload", "tools/cct-record", "tools/cct-query",
                                                     "bench/trace-log-bench")
    prog = [workload, "48", a.work]
    tmp = tempfile.mkdtemp(prefix="cct-trace-bench-")
    variants = {
        "bare": lambda i: prog,
        "cct 1k": lambda i: [rec, "-o", f"{tmp}/n{i}.db", "--freq", "1000", "--"] + prog,
        "cct 1k tr": lambda i: [rec, "-o", f"{tmp}/t{i}.db", "--freq", "1000", "--trace", "--"] + prog,
    }
    walls = {k: [] for k in variants}
    cpus = {k: [] for k in variants}
    run_usage(prog)  # warm caches
    for i in range(a.repeat):
        for k, mk in variants.items():
            w, c, _ = run_usage(mk(i))
            walls[k].append(w)
            cpus[k].append(c)
    print(f"workload: deep-workload 48 {a.work} (2 threads); median of {a.repeat}, interleaved")
    print(f"{'variant':<10} {'wall s':>8} {'cpu s':>8} {'wall vs bare':>13}")
    med = {k: (statistics.median(walls[k]), statistics.median(cpus[k])) for k in variants}
    for k, (w, c) in med.items():
        print(f"{k:<10} {w:8.3f} {c:8.3f} {100 * (w / med['bare'][0] - 1):12.2f}%")
    wall_pct = 100 * (med["cct 1k tr"][0] / med["cct 1k"][0] - 1)
    cpu_pct = 100 * (med["cct 1k tr"][1] / med["cct 1k"][1] - 1)
    print(f"--trace vs no trace at 1 kHz: wall {wall_pct:+.2f}%, cpu {cpu_pct:+.2f}% (target within 1%)")
    # Bytes per sample as stored: the trace section's size from `show`.
    show = subprocess.run([query, "-d", f"{tmp}/t0.db", "show", "latest"], capture_output=True, text=True,
                          check=True).stdout
    size = re.search(r"trace ([0-9.]+) (B|KiB|MiB)", show)
    samples = re.search(r"\bsamples (\d+)", show)
    if size and samples:
        scale = {"B": 1, "KiB": 1024, "MiB": 1024 * 1024}[size.group(2)]
        per = float(size.group(1)) * scale / int(samples.group(1))
        print(f"trace on disk: {size.group(1)} {size.group(2)} for {samples.group(1)} samples -> "
              f"{per:.2f} bytes per sample (target <= 8)")
    h = json.loads(subprocess.run([log_bench], capture_output=True, text=True, check=True).stdout)
    print(f"handler's extra per sample (TraceLog::Append): {h['append_ns']:.1f} ns, "
          f"{h['extra_over_floor_ns']:.1f} ns over storing 16 bytes into a plain array; "
          f"the trie update it follows {h['trie_update_depth16_ns']:.1f} ns (target <= 100 ns extra)")


if __name__ == "__main__":
    main()
