#!/usr/bin/env python3
"""Scale benchmark: cct-query top / tree and cct-diff on 10^7-node runs.

    python3 bench/scale_bench.py [--build build] [--nodes 10000000] [--baseline-nodes 1000000]
                                 [--repeat 5] [--work DIR]

For each size (--baseline-nodes, then --nodes) it generates two deterministic
synthetic profiles with bench/gen_profile.cc (seed 42; the second with
--mutate 1: 1% of the node values x1.5-3, the same shape), imports both into
one database (runs 1 and 2) with cct-import --from folded, and measures the
whole process, as a user at a terminal sees it:

  top    cct-query -d DB top 1 -n 20
  tree   cct-query -d DB tree 1 --depth 4
  diff   cct-diff -d DB 1 2

Each figure is the median wall time of --repeat runs and the largest peak RSS
(os.wait4) among them, with the user+system CPU time (median) beside it: on
a shared machine the CPU time moves less than the wall time. The databases
are made once per invocation (in a temporary directory, or in --work DIR,
where they are kept and reused by later invocations with the same sizes).

Baselines measured in the same invocation: process start-up (cct-query
--version) and the same commands at --baseline-nodes; the ratio big/baseline
shows how each command scales (10.0 = linear in the nodes).
Targets (issue 22): top and tree <= 1 s and <= 1 GiB peak RSS at 10^7 nodes,
cct-diff of two 10^7-node runs <= 5 s.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import built_programs, usage_runs  # noqa: E402

TARGETS = {"top": (1.0, 1024.0), "tree": (1.0, 1024.0), "diff": (5.0, None)}


def make_db(gen, imp, query, work, nodes):
    """The database with runs 1 (base) and 2 (--mutate 1) of `nodes` nodes,
    made unless `work` already holds it; its path and node count."""
    db = os.path.join(work, f"scale{nodes}.db")
    done = db + ".done"
    if not os.path.exists(done):
        for p in (db, db + "-lock"):
            if os.path.exists(p):
                os.remove(p)
        for mutate in (None, "1"):
            folded = os.path.join(work, f"scale{nodes}.folded")
            argv = [gen, "--nodes", str(nodes), "--seed", "42"] + (["--mutate", mutate] if mutate else [])
            with open(folded, "wb") as f:
                subprocess.run(argv, stdout=f, check=True)
            subprocess.run([imp, "-d", db, "--from", "folded", folded, "--metric", "cputime", "--unit", "ns"],
                           stdout=subprocess.DEVNULL, check=True)
            os.remove(folded)
        open(done, "w").close()
    out = subprocess.run([query, "-d", db, "show", "1", "--format", "json"], stdout=subprocess.PIPE,
                         check=True).stdout
    return db, json.loads(out)["runs"][0]["node_count"]


FRESH_MEMORY_PROBE = (
    "import time\n"
    "t = time.perf_counter()\n"
    "b = b'\\x01' * (256 << 20)\n"  # 256 MiB written into fresh pages
    "print((time.perf_counter() - t) * 4)\n")


def fresh_memory_s_per_gib():
    """Seconds to write 1 GiB of memory fresh to a process, measured in a new
    process (median of 3). On this project's VM the guest's DAMON pageout
    hands idle memory back to the host, and this figure triples in those
    phases (docs/performance.md, "Why it drifts"): the 10^7-node commands
    follow it."""
    runs = [float(subprocess.run([sys.executable, "-c", FRESH_MEMORY_PROBE], stdout=subprocess.PIPE, check=True,
                                 text=True).stdout) for _ in range(3)]
    return statistics.median(runs)


def measure(argv, repeat):
    """Median wall time, median CPU time and largest peak RSS (MiB)."""
    walls, cpus, rss = usage_runs(argv, repeat)
    return statistics.median(walls), statistics.median(cpus), rss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--nodes", type=int, default=10_000_000)
    ap.add_argument("--baseline-nodes", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", help="keep the databases in this directory and reuse them")
    args = ap.parse_args()
    gen, query, imp, diff = built_programs(args.build, "bench/gen-profile", "tools/cct-query", "tools/cct-import",
                                           "tools/cct-diff")

    tmp = None
    if args.work:
        os.makedirs(args.work, exist_ok=True)
        work = args.work
    else:
        tmp = tempfile.TemporaryDirectory(prefix="cctdb-scale-")
        work = tmp.name
    try:
        fresh_before = fresh_memory_s_per_gib()
        startup = measure([query, "--version"], args.repeat)
        rows = {}
        for nodes in (args.baseline_nodes, args.nodes):
            db, count = make_db(gen, imp, query, work, nodes)
            rows[nodes] = dict(
                count=count,
                db_mb=os.path.getsize(db) / 1e6,
                top=measure([query, "-d", db, "top", "1", "-n", "20"], args.repeat),
                tree=measure([query, "-d", db, "tree", "1", "--depth", "4"], args.repeat),
                diff=measure([diff, "-d", db, "1", "2"], args.repeat))
        fresh_after = fresh_memory_s_per_gib()
    finally:
        if tmp:
            tmp.cleanup()

    print(f"cctdb scale benchmark  (median of {args.repeat}; whole process; peak RSS)")
    print(f"baseline: cct-query --version {startup[0] * 1000:.1f} ms")
    print(f"fresh memory: {fresh_before:.2f} s/GiB before, {fresh_after:.2f} s/GiB after"
          " (the machine's phase: see docs/performance.md)\n")
    print(f"{'nodes':>9} {'db MB':>7}  {'command':<6} {'wall':>8} {'cpu':>8} {'RSS MiB':>8}")
    for nodes, r in rows.items():
        for cmd in ("top", "tree", "diff"):
            wall, cpu, rss = r[cmd]
            print(f"{r['count']:>9} {r['db_mb']:>7.1f}  {cmd:<6} {wall:>7.3f}s {cpu:>7.3f}s {rss:>8.0f}")
    big, base = rows[args.nodes], rows[args.baseline_nodes]
    print(f"\nat {big['count']} nodes, against the targets and the {base['count']}-node baseline:")
    ok = True
    for cmd in ("top", "tree", "diff"):
        wall, _, rss = big[cmd]
        t_wall, t_rss = TARGETS[cmd]
        met = wall <= t_wall and (t_rss is None or rss <= t_rss)
        ok &= met
        rss_part = f", {rss:.0f} MiB (target {t_rss:.0f})" if t_rss else f", {rss:.0f} MiB"
        print(f"  {cmd:<5} {wall:.3f} s (target {t_wall} s, {wall / t_wall:.2f}x){rss_part};"
              f" {wall / base[cmd][0]:.1f}x the baseline's wall, {big[cmd][1] / base[cmd][1]:.1f}x its CPU"
              f" -> {'met' if met else 'NOT met'}")
    print("targets: " + ("all met" if ok else "NOT all met"))


if __name__ == "__main__":
    main()
