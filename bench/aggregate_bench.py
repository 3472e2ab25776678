#!/usr/bin/python3
"""Job aggregation (docs/performance.md, "Job aggregation"): a synthetic job
of RUNS rank runs of NODES nodes (bench/gen_ranks.cc; generation timed on its
own), then `cct-aggregate` over all of it, whole process: --threads 1 (the
baseline, same invocation) against --threads 2, and, where mpirun is found,
under mpirun with 1, 2, 4 and 8 ranks (--oversubscribe, one thread each) on
the same job. Prints each time, the speedups against the baseline, and
whether the threads' time meets the 30 s target.

  bench/aggregate_bench.py [--build build] [--runs 4096] [--nodes 10000]
                           [--mpi 1,2,4,8] [--repeat 1] [--keep DIR]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import run_usage  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=4096)
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--mpi", default="1,2,4,8", help="MPI rank counts ('' for none)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--keep", help="generate into (or reuse) this directory")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    tool = os.path.join(build, "tools", "cct-aggregate")
    gen = os.path.join(build, "bench", "gen-ranks")
    work = a.keep or tempfile.mkdtemp(prefix="aggbench")
    os.makedirs(work, exist_ok=True)
    db = os.path.join(work, f"job-{a.runs}x{a.nodes}.db")
    try:
        if not os.path.exists(db):
            out = subprocess.run([gen, db, str(a.runs), str(a.nodes)], check=True, capture_output=True, text=True)
            print(out.stdout.strip())
        print(f"database: {os.path.getsize(db) / 2**20:.0f} MiB, {a.runs} runs x {a.nodes} nodes")

        def best(argv):
            walls = []
            rss = 0.0
            for i in range(a.repeat):
                out = os.path.join(work, "out.db")
                if os.path.exists(out):
                    os.remove(out)
                wall, _, r = run_usage(argv + ["-o", out])
                walls.append(wall)
                rss = max(rss, r)
            return min(walls), rss

        base, base_rss = best([tool, "-d", db, "tag:job=bench", "--threads", "1"])
        print(f"cct-aggregate --threads 1: {base:.2f} s, peak RSS {base_rss:.0f} MiB (baseline)")
        two, two_rss = best([tool, "-d", db, "tag:job=bench", "--threads", "2"])
        print(f"cct-aggregate --threads 2: {two:.2f} s, peak RSS {two_rss:.0f} MiB, "
              f"speedup {base / two:.2f}x; target <= 30 s: {'met' if two <= 30 else 'MISSED'}")
        mpirun = shutil.which("mpirun")
        if a.mpi and mpirun:
            for k in [int(x) for x in a.mpi.split(",")]:
                argv = [mpirun, "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader",
                        "--mca", "btl_vader_single_copy_mechanism", "none", "-np", str(k),
                        tool, "-d", db, "tag:job=bench", "--threads", "1"]
                t, _ = best(argv)
                print(f"mpirun -np {k} cct-aggregate --threads 1: {t:.2f} s, speedup {base / t:.2f}x vs the baseline")
        elif a.mpi:
            print("mpirun not found: no MPI figures")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
