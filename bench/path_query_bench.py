#!/usr/bin/env python3
"""Path query benchmark: a three-predicate call-path query (docs/query.md) on a
10^6-node run, through the whole cct-query process.

    python3 bench/path_query_bench.py [--build build] [--nodes 1000000] [--repeat 5]

It generates the deterministic synthetic profile of bench/gen_profile.cc (seed 42),
imports it, and measures whole-process wall time (best of --repeat) and peak RSS of:
  tree     cct-query tree RUN --query Q      (the matching paths, as a tree)
  match    cct-query match RUN Q -n 20       (the 20 largest ends with their paths)
  top      cct-query top RUN --query Q       (a flat profile of the ends)
with Q = * [name~"^solve_"] * [name~"^compute_" and inc(cputime) > 0.001%] * [name~"matrix"]
(three predicates, two regex, one metric comparison; a leading and two inner `*`s,
so every node of the tree carries a live state set).

Baselines measured in the same invocation, on the same database:
  load     cct-query tree RUN --depth 1: reading the run and printing its top level,
           the cost every query pays before matching
  tree-d4  cct-query tree RUN --depth 4: the tree report of query_bench.py (same
           0.3 s target), for the cost of printing a tree of this size
  python   the same query matched by a pure-Python NFA (state sets per node, each
           predicate evaluated once per node) over the run exported as CSV
           (cct-query export --to csv), reading the file included: what a Python
           analysis script over an export costs
The target of issue 17 is <= 0.3 s for tree --query and match at 10^6 nodes.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import best, built_programs, generated_folded  # noqa: E402

TARGET = 0.3
QUERY = '* [name~"^solve_"] * [name~"^compute_" and inc(cputime) > 0.001%] * [name~"matrix"]'

PYTHON_BASELINE = r'''
import csv, re, sys
solve, compute, matrix = re.compile("^solve_"), re.compile("^compute_"), re.compile("matrix")
rows = []
with open(sys.argv[1], newline="") as f:
    r = csv.reader(f)
    header = next(r)
    inc_col = header.index("cputime (inc)")
    for row in r:
        rows.append((int(row[0]), int(row[1]) if row[1] else 0, row[4], float(row[inc_col])))
total = sum(v for node, parent, _, v in rows if parent == 0)
# States: 0 = before [solve], 1 = before [compute], 2 = before [matrix], 3 = matched;
# the leading and inner `*` keep states 0, 1 and 2 alive.
state = {0: 1}
ends = 0
for node, parent, name, inc in rows:
    s = state.get(parent, 0)
    if not s:
        continue
    nxt = s & 0b111
    if s & 1 and solve.search(name):
        nxt |= 2
    if s & 2 and compute.search(name) and inc > 0.00001 * total:
        nxt |= 4
    if s & 4 and matrix.search(name):
        nxt |= 8
    state[node] = nxt
    ends += (nxt >> 3) & 1
print(ends)
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--nodes", type=int, default=1000000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    gen, query, imp = built_programs(args.build, "bench/gen-profile", "tools/cct-query", "tools/cct-import")
    with tempfile.TemporaryDirectory(prefix="cctdb-bench-") as tmp:
        folded = generated_folded(tmp, gen, args.nodes)
        db = os.path.join(tmp, "p.db")
        subprocess.run([imp, "-d", db, "--from", "folded", folded, "--metric", "cputime", "--unit", "ns"],
                       check=True, stdout=subprocess.DEVNULL)
        ends = subprocess.run([query, "-d", db, "match", "1", QUERY, "--format", "json", "-n", "1"],
                              check=True, capture_output=True, text=True).stdout
        matches = int(ends.split('"matches":')[1].split(",")[0])
        csv_path = os.path.join(tmp, "p.csv")
        subprocess.run([query, "-d", db, "export", "1", "--to", "csv", "-o", csv_path], check=True)
        py_ends = int(subprocess.run([sys.executable, "-c", PYTHON_BASELINE, csv_path], check=True,
                                     capture_output=True, text=True).stdout)
        if py_ends != matches:
            sys.exit(f"bench: the Python baseline finds {py_ends} ends, cct-query {matches}")
        load, load_rss = best([query, "-d", db, "tree", "1", "--depth", "1"], args.repeat)
        d4, d4_rss = best([query, "-d", db, "tree", "1", "--depth", "4"], args.repeat)
        tree, tree_rss = best([query, "-d", db, "tree", "1", "--query", QUERY], args.repeat)
        match, match_rss = best([query, "-d", db, "match", "1", QUERY, "-n", "20"], args.repeat)
        top, top_rss = best([query, "-d", db, "top", "1", "--query", QUERY], args.repeat)
        py, py_rss = best([sys.executable, "-c", PYTHON_BASELINE, csv_path], 1)

    print(f"cctdb path query benchmark  (best of {args.repeat}; whole-process wall time; peak RSS)")
    print(f"{args.nodes} nodes; query: {QUERY}")
    print(f"{matches} ends (the Python baseline agrees)\n")
    print(f"  load    tree --depth 1     {load:.3f} s  {load_rss:5.0f} MiB   (baseline)")
    print(f"  tree-d4 tree --depth 4     {d4:.3f} s  {d4_rss:5.0f} MiB   (baseline: query_bench.py's tree)")
    for name, wall, rss in (("tree", tree, tree_rss), ("match", match, match_rss), ("top", top, top_rss)):
        print(f"  {name:<7} --query            {wall:.3f} s  {rss:5.0f} MiB   {wall / TARGET:.2f}x of the {TARGET} s target;"
              f" {wall - load:+.3f} s over load")
    print(f"  python  NFA over the CSV   {py:.3f} s  {py_rss:5.0f} MiB   ({py / match:.1f}x match)")
    ok = tree <= TARGET and match <= TARGET
    print("target: " + ("met" if ok else "NOT met"))


if __name__ == "__main__":
    main()
