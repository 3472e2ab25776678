#!/usr/bin/env python3
"""Diff benchmark: cct-diff on large trees and on groups of runs.

    python3 bench/diff_bench.py [--build build] [--repeat 5] [--pair-nodes 1000000]
                                [--group-nodes 100000] [--runs 5]

Inputs are deterministic synthetic profiles from bench/gen_profile.cc (seed 42):

  pair    two trees of --pair-nodes nodes, the candidate with 1% of its node
          values changed (gen-profile --mutate 1), one run each;
          timed: cct-diff BASE CAND (text summary), and with --min-abs 0
          --format json -n 0 (every changed node flagged and written).
  groups  --runs base runs and --runs candidate runs of --group-nodes nodes:
          each run is the base (or --mutate 1) profile with +-2% noise on every
          value (Python's random, seeded), tagged side=base / side=cand;
          timed: cct-diff tag:side=base tag:side=cand (Mann-Whitney per node),
          and with --min-abs 0 --format json -n 0 (intervals for every entry).
  small   the pair at 5*10^4 nodes, for comparison with Hatchet, which takes
          2.0 s to subtract two trees of that size (figure from the issue).

Each figure is whole-process wall time (best of --repeat) and peak RSS, as a
CI job would see it. Baselines measured in the same invocation:
  startup  cct-diff --version
  python   a minimal pure-Python diff of the two folded files of `small`
           (dict per node, inclusive sums, subtraction): a lower bound for
           Python tools such as Hatchet, which cannot be installed here.
Targets (issue #6): pair <= 1 s, groups <= 2 s.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import best, built_programs  # noqa: E402

TARGETS = {"pair": 1.0, "groups": 2.0}

PYTHON_DIFF = r'''
import sys

def load(path):
    root = {}
    with open(path) as f:
        for line in f:
            stack, _, value = line.rstrip("\n").rpartition(" ")
            node = root
            for frame in stack.split(";"):
                node = node.setdefault(frame, {})
            node["__value__"] = node.get("__value__", 0) + int(value)
    return root
def inclusive(node):
    total = node.get("__value__", 0)
    for k, child in node.items():
        if k != "__value__":
            total += inclusive(child)
    node["__inc__"] = total
    return total
def diff(a, b, out):
    for k in set(a) | set(b):
        if k.startswith("__"):
            continue
        ca, cb = a.get(k, {}), b.get(k, {})
        out.append(cb.get("__inc__", 0) - ca.get("__inc__", 0))
        diff(ca, cb, out)
sys.setrecursionlimit(100000)
a, b = load(sys.argv[1]), load(sys.argv[2])
inclusive(a); inclusive(b)
out = []
diff(a, b, out)
print(len(out), sum(1 for d in out if d != 0))
'''


def generate(gen, path, nodes, mutate=0.0):
    argv = [gen, "--nodes", str(nodes), "--seed", "42"]
    if mutate:
        argv += ["--mutate", str(mutate)]
    with open(path, "wb") as f:
        subprocess.run(argv, stdout=f, check=True)


def noisy_copy(src, dst, seed, amplitude=0.02):
    rng = random.Random(seed)
    with open(src) as fin, open(dst, "w") as fout:
        for line in fin:
            stack, _, value = line.rstrip("\n").rpartition(" ")
            v = max(1, round(int(value) * (1 + amplitude * (2 * rng.random() - 1))))
            fout.write(f"{stack} {v}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pair-nodes", type=int, default=1000000)
    ap.add_argument("--group-nodes", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    gen, diff, imp = built_programs(args.build, "bench/gen-profile", "tools/cct-diff", "tools/cct-import")

    def do_import(db, folded, *extra):
        subprocess.run([imp, "-d", db, "--from", "folded", folded, "--metric", "cputime", "--unit", "ns", *extra],
                       check=True, stdout=subprocess.DEVNULL)

    with tempfile.TemporaryDirectory(prefix="cctdb-diff-bench-") as tmp:
        startup, _ = best([diff, "--version"], args.repeat)

        # pair
        a, b = os.path.join(tmp, "a.folded"), os.path.join(tmp, "b.folded")
        generate(gen, a, args.pair_nodes)
        generate(gen, b, args.pair_nodes, mutate=1)
        db = os.path.join(tmp, "pair.db")
        do_import(db, a)
        do_import(db, b)
        pair, pair_rss = best([diff, "-d", db, "1", "2"], args.repeat)
        # Every changed node flagged and written: the report's worst case.
        pair_json, pair_json_rss = best([diff, "-d", db, "1", "2", "--min-abs", "0", "--format", "json", "-n", "0"],
                                        args.repeat)

        # groups
        ga, gb = os.path.join(tmp, "ga.folded"), os.path.join(tmp, "gb.folded")
        generate(gen, ga, args.group_nodes)
        generate(gen, gb, args.group_nodes, mutate=1)
        gdb = os.path.join(tmp, "groups.db")
        for i in range(args.runs):
            for side, src in (("base", ga), ("cand", gb)):
                run = os.path.join(tmp, f"{side}{i}.folded")
                noisy_copy(src, run, seed=1000 * (side == "cand") + i)
                do_import(gdb, run, "--tag", f"side={side}")
        groups, groups_rss = best([diff, "-d", gdb, "tag:side=base", "tag:side=cand"], args.repeat)
        groups_json, groups_json_rss = best([diff, "-d", gdb, "tag:side=base", "tag:side=cand", "--min-abs", "0",
                                             "--format", "json", "-n", "0"], args.repeat)

        # small, against a pure-Python diff
        sa, sb = os.path.join(tmp, "sa.folded"), os.path.join(tmp, "sb.folded")
        generate(gen, sa, 50000)
        generate(gen, sb, 50000, mutate=1)
        sdb = os.path.join(tmp, "small.db")
        do_import(sdb, sa)
        do_import(sdb, sb)
        small, _ = best([diff, "-d", sdb, "1", "2"], args.repeat)
        py, py_rss = best([sys.executable, "-c", PYTHON_DIFF, sa, sb], 1)

    print(f"cctdb diff benchmark  (best of {args.repeat}; whole-process wall time; peak RSS)")
    print(f"baseline: cct-diff --version {startup * 1000:.1f} ms\n")
    print(f"{'case':<44} {'wall':>8} {'RSS MiB':>8} {'target':>7}")
    print(f"{f'pair: 2 x {args.pair_nodes} nodes, 1% changed (text)':<44} {pair:>7.3f}s {pair_rss:>8.0f} "
          f"{TARGETS['pair']:>6.1f}s")
    print(f"{f'pair: same, --min-abs 0 --format json -n 0':<44} {pair_json:>7.3f}s {pair_json_rss:>8.0f}")
    print(f"{f'groups: {args.runs} vs {args.runs} x {args.group_nodes} nodes':<44} {groups:>7.3f}s "
          f"{groups_rss:>8.0f} {TARGETS['groups']:>6.1f}s")
    print(f"{f'groups: same, --min-abs 0 --format json -n 0':<44} {groups_json:>7.3f}s {groups_json_rss:>8.0f}")
    print(f"{'small: 2 x 50000 nodes':<44} {small:>7.3f}s")
    print(f"{'  python dict-tree diff, same files':<44} {py:>7.3f}s {py_rss:>8.0f}")
    print(f"\npair    {pair / TARGETS['pair']:.2f}x of target; {pair / startup:.0f}x process start-up")
    print(f"groups  {groups / TARGETS['groups']:.2f}x of target")
    print(f"small   {2.0 / small:.0f}x faster than Hatchet's 2.0 s; python lower bound {py / small:.1f}x slower")
    ok = pair <= TARGETS["pair"] and groups <= TARGETS["groups"]
    print("targets: " + ("all met" if ok else "NOT all met"))


if __name__ == "__main__":
    main()
