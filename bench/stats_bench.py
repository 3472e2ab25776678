#!/usr/bin/env python3
"""Ensemble statistics benchmark: cct-query stats over a group of runs.

    python3 bench/stats_bench.py [--build build] [--runs 20] [--nodes 100000] [--repeat 3]

Generates --runs synthetic profiles of --nodes nodes each (bench/gen_profile.cc:
one tree shape, seed 42; run i's values perturbed with --mutate 5+i, so every
node varies across runs), imports them tagged exp=bench, and measures the
whole-process wall time (best of --repeat) and peak RSS of
  stats     cct-query stats tag:exp=bench --format csv   (every node: mean,
            median, sd, cv, min, max, p10/p25/p75/p90 across the runs)
  stats-by  cct-query stats tag:exp=bench --by function -n 20
Target: stats <= 1 s for 20 runs of 10^5 nodes.

Baselines measured in the same invocation, on the same database:
  tree      cct-query tree tag:exp=bench --format csv: the group's mean tree,
            what reports read before stats existed (every node, one value)
  python    a pure-Python computation of the same statistics (statistics.median,
            statistics.stdev, linear-interpolation percentiles) from the runs'
            CSV exports (cct-query export --to csv), the exports made beforehand
            and not timed: the floor of doing it by hand outside cctdb
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import best, best_cpu, built_programs  # noqa: E402


TARGET_S = 1.0

PYTHON_BASELINE = r'''
import csv, math, statistics, sys
paths = {}
files = sys.argv[1:]
for i, name in enumerate(files):
    with open(name, newline="") as f:
        for row in csv.DictReader(f):
            v = row.get("cputime (inc)") or "0"
            paths.setdefault(row["path"], [0.0] * len(files))[i] = float(v)
def pct(s, p):
    h = p / 100 * (len(s) - 1)
    lo = math.floor(h)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (h - lo) * (s[hi] - s[lo])
out = 0
for path, values in paths.items():
    s = sorted(values)
    mean = statistics.fmean(s)
    sd = statistics.stdev(s)
    row = (mean, statistics.median(s), sd, sd / mean if mean else None, s[0], s[-1],
           pct(s, 10), pct(s, 25), pct(s, 75), pct(s, 90))
    out += 1
print(out)
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    gen, query, imp = built_programs(args.build, "bench/gen-profile", "tools/cct-query", "tools/cct-import")
    with tempfile.TemporaryDirectory(prefix="cctdb-stats-bench-") as tmp:
        db = os.path.join(tmp, "s.db")
        csvs = []
        for i in range(args.runs):
            folded = os.path.join(tmp, f"r{i}.folded")
            with open(folded, "wb") as f:
                subprocess.run([gen, "--nodes", str(args.nodes), "--seed", "42", "--mutate", str(5 + i)], stdout=f,
                               check=True)
            subprocess.run([imp, "-d", db, "--from", "folded", folded, "--metric", "cputime", "--unit", "ns",
                            "--tag", "exp=bench"], check=True, stdout=subprocess.DEVNULL)
            os.remove(folded)
            out = os.path.join(tmp, f"r{i}.csv")
            with open(out, "wb") as f:
                subprocess.run([query, "-d", db, "export", str(i + 1), "--to", "csv", "-m", "cputime"], stdout=f,
                               check=True)
            csvs.append(out)
        group = "tag:exp=bench"
        startup, _ = best([query, "--version"], args.repeat)
        stats, stats_cpu, stats_rss = best_cpu([query, "-d", db, "stats", group, "--format", "csv"], args.repeat)
        stats_by, stats_by_cpu, stats_by_rss = best_cpu([query, "-d", db, "stats", group, "--by", "function", "-n",
                                                         "20"], args.repeat)
        tree, tree_cpu, tree_rss = best_cpu([query, "-d", db, "tree", group, "--format", "csv"], args.repeat)
        py, py_rss = best([sys.executable, "-c", PYTHON_BASELINE] + csvs, 1)

    print(f"cctdb ensemble statistics benchmark  ({args.runs} runs x {args.nodes} nodes; best of {args.repeat};"
          f" whole-process wall time; peak RSS)")
    print(f"baseline: cct-query --version {startup * 1000:.1f} ms\n")
    print(f"{'':28}{'wall':>8}{'cpu':>8}{'RSS':>9}")
    print(f"  stats --format csv        {stats:7.3f}s {stats_cpu:6.3f}s {stats_rss:5.0f} MiB   target {TARGET_S} s"
          f" -> {stats / TARGET_S:.2f}x of target (cpu {stats_cpu / TARGET_S:.2f}x)")
    print(f"  stats --by function -n 20 {stats_by:7.3f}s {stats_by_cpu:6.3f}s {stats_by_rss:5.0f} MiB")
    print(f"  tree GROUP --format csv   {tree:7.3f}s {tree_cpu:6.3f}s {tree_rss:5.0f} MiB   (baseline: the group's"
          f" mean tree) -> stats is {stats / tree:.2f}x of it (cpu {stats_cpu / tree_cpu:.2f}x)")
    print(f"  python over CSV exports   {py:7.3f}s {'':7} {py_rss:5.0f} MiB   (baseline) -> stats is"
          f" {py / stats:.1f}x faster")
    print("target: " + ("met" if stats <= TARGET_S else "NOT met"))


if __name__ == "__main__":
    main()
