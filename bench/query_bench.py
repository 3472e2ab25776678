#!/usr/bin/env python3
"""Store and query benchmark: import, database size, cct-query top/tree.

    python3 bench/query_bench.py [--build build] [--sizes 10000,100000,1000000] [--repeat 5]

For each size N it generates a deterministic synthetic profile (bench/gen_profile.cc,
seed 42), imports it, and measures whole-process wall time (best of --repeat) and peak
memory (max RSS) of:
  import   cct-import --from folded (metric cputime, ns)
  top      cct-query top RUN -n 20
  tree     cct-query tree RUN --depth 4
and the database bytes per node without the string table (from `cct-query show`).

Baselines measured in the same invocation, on the same files:
  startup  cct-query --version: the floor any whole-process figure includes
  read     reading the folded file once (cat > /dev/null): the I/O floor of import
  python   a minimal pure-Python tree build from the same folded file (dict per node,
           inclusive sums): a lower bound for Python analysis tools such as Hatchet,
           which cannot be installed on this machine (no PyPI)
Ratios are against the targets of the Foundation issue and against these baselines.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import best, built_programs, run_rss  # noqa: E402

TARGETS = {"import": 2.0, "top": 0.3, "tree": 0.3, "bytes_per_node": 48}

PYTHON_BASELINE = r'''
import sys

root = {}
with open(sys.argv[1]) as f:
    for line in f:
        stack, _, value = line.rstrip("\n").rpartition(" ")
        node = root
        for frame in stack.split(";"):
            node = node.setdefault(frame, {})
        node["__value__"] = node.get("__value__", 0) + int(value)
def inclusive(node):
    total = node.get("__value__", 0)
    for k, child in node.items():
        if k != "__value__":
            total += inclusive(child)
    return total
sys.setrecursionlimit(100000)
print(inclusive(root))
'''


def run(argv, stdout=subprocess.DEVNULL):
    """Runs argv; returns (wall seconds, max RSS in MiB, stdout bytes)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    # wait4-equivalent: the rusage of the child just reaped is the max over
    # children, so measure each command in its own `time`-like wrapper below.
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} failed ({proc.returncode}): {err.decode(errors='replace').strip()}")
    return wall, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    gen, query, imp = built_programs(args.build, "bench/gen-profile", "tools/cct-query", "tools/cct-import")

    rows = []
    with tempfile.TemporaryDirectory(prefix="cctdb-bench-") as tmp:
        startup, _ = best([query, "--version"], args.repeat)
        for n in [int(x) for x in args.sizes.split(",")]:
            folded = os.path.join(tmp, f"p{n}.folded")
            with open(folded, "wb") as f:
                subprocess.run([gen, "--nodes", str(n), "--seed", "42"], stdout=f, check=True)
            db = os.path.join(tmp, f"p{n}.db")
            imports = []
            rss_import = 0.0
            for i in range(max(1, min(args.repeat, 3))):
                if os.path.exists(db):
                    os.remove(db)
                w, r = run_rss([imp, "-d", db, "--from", "folded", folded, "--metric", "cputime", "--unit", "ns"])
                imports.append(w)
                rss_import = max(rss_import, r)
            read, _ = best(["/bin/cat", folded], args.repeat)
            py, py_rss = best([sys.executable, "-c", PYTHON_BASELINE, folded], 1)
            _, out = run([query, "-d", db, "show", "1", "--format", "json"], stdout=None)
            show = json.loads(out)
            storage = show["runs"][0]["storage_bytes"]
            nodes = show["runs"][0]["node_count"]
            bpn = sum(v for k, v in storage.items() if k != "strings") / nodes
            top, top_rss = best([query, "-d", db, "top", "1", "-n", "20"], args.repeat)
            tree, tree_rss = best([query, "-d", db, "tree", "1", "--depth", "4"], args.repeat)
            rows.append(dict(n=n, nodes=nodes, folded_mb=os.path.getsize(folded) / 1e6, imp=min(imports),
                             rss_import=rss_import, read=read, py=py, py_rss=py_rss, bpn=bpn,
                             db_mb=os.path.getsize(db) / 1e6, top=top, top_rss=top_rss, tree=tree,
                             tree_rss=tree_rss, startup=startup))

    print(f"cctdb store/query benchmark  (best of {args.repeat}; whole-process wall time; peak RSS)")
    print(f"baseline: cct-query --version {startup * 1000:.1f} ms\n")
    hdr = f"{'nodes':>9} {'import':>8} {'bytes/node':>10} {'top -n 20':>10} {'tree -d 4':>10} {'RSS import/top/tree MiB':>24}"
    print(hdr)
    for r in rows:
        print(f"{r['nodes']:>9} {r['imp']:>7.3f}s {r['bpn']:>10.1f} {r['top']:>9.3f}s {r['tree']:>9.3f}s "
              f"{r['rss_import']:>10.0f} /{r['top_rss']:>5.0f} /{r['tree_rss']:>5.0f}")
    big = rows[-1]
    print(f"\nat {big['nodes']} nodes ({big['folded_mb']:.0f} MB folded input, {big['db_mb']:.1f} MB database):")
    print(f"  import  {big['imp']:.3f} s   target {TARGETS['import']} s  -> {big['imp'] / TARGETS['import']:.2f}x of target;"
          f" {big['imp'] / big['read']:.1f}x reading the file ({big['read']:.3f} s);"
          f" python tree build {big['py']:.2f} s ({big['py'] / big['imp']:.1f}x slower, {big['py_rss']:.0f} MiB)")
    print(f"  bytes   {big['bpn']:.1f} B/node without strings   target {TARGETS['bytes_per_node']}"
          f" -> {big['bpn'] / TARGETS['bytes_per_node']:.2f}x of target")
    print(f"  top     {big['top']:.3f} s   target {TARGETS['top']} s  -> {big['top'] / TARGETS['top']:.2f}x of target;"
          f" {big['top'] / big['startup']:.1f}x process start-up")
    print(f"  tree    {big['tree']:.3f} s   target {TARGETS['tree']} s  -> {big['tree'] / TARGETS['tree']:.2f}x of target;"
          f" {big['tree'] / big['startup']:.1f}x process start-up")
    ok = (big["imp"] <= TARGETS["import"] and big["top"] <= TARGETS["top"] and big["tree"] <= TARGETS["tree"]
          and big["bpn"] <= TARGETS["bytes_per_node"])
    print("targets: " + ("all met" if ok else "NOT all met"))


if __name__ == "__main__":
    main()
