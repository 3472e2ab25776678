#!/usr/bin/env python3
"""The Python package: run.tree() into a DataFrame, against the CSV route.

    PYTHONPATH=build/python:python python3 bench/py_package_bench.py [--build build] [--nodes 1000000] [--repeat 3]

Generates a deterministic synthetic profile (bench/gen_profile.cc, seed 42)
of --nodes nodes, imports it, and measures in this process (best of
--repeat, wall time):
  tree          cctdb.open(db).run("latest").tree(): every column, path strings included
  tree_nopath   the same without the path column (path=False)
  top           run.top(by="function") (all rows)
Baseline measured in the same invocation, on the same run:
  csv           `cct-query export --to csv` (a process) + pandas.read_csv of its output:
                what a notebook did before the package
The target (issue 18): tree <= 1 s at 10^6 nodes.
"""
import argparse
import io
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import built_programs, generated_folded  # noqa: E402

TARGET_TREE_S = 1.0


def best_of(repeat, f):
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--nodes", type=int, default=1000000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    gen, imp, query = built_programs(a.build, "bench/gen-profile", "tools/cct-import", "tools/cct-query")
    import pandas as pd

    import cctdb

    with tempfile.TemporaryDirectory() as tmp:
        folded = generated_folded(tmp, gen, a.nodes)
        db = os.path.join(tmp, "bench.db")
        subprocess.run([imp, "-d", db, "--from", "folded", folded], check=True, capture_output=True)
        run = cctdb.open(db).run("latest")
        t_tree, df = best_of(a.repeat, run.tree)
        t_nopath, _ = best_of(a.repeat, lambda: run.tree(path=False))
        t_top, top = best_of(a.repeat, lambda: run.top(n=0))

        def csv():
            out = subprocess.run([query, "-d", db, "export", "latest", "--to", "csv"], check=True,
                                 capture_output=True).stdout
            return pd.read_csv(io.BytesIO(out))

        t_csv, ref = best_of(a.repeat, csv)
    rows = len(df)
    assert rows == len(ref), (rows, len(ref))
    print("py_package_bench: %d nodes (rows %d), best of %d, wall seconds" % (a.nodes, rows, a.repeat))
    print("  tree         %.3f s  (%.0f ns/row; target <= %.1f s: %s)" % (
        t_tree, t_tree / rows * 1e9, TARGET_TREE_S, "met" if t_tree <= TARGET_TREE_S else "MISSED"))
    print("  tree_nopath  %.3f s" % t_nopath)
    print("  top          %.3f s  (%d rows)" % (t_top, len(top)))
    print("  csv baseline %.3f s  (cct-query export --to csv + pandas.read_csv)" % t_csv)
    print("  ratio        tree is %.1fx faster than the CSV route" % (t_csv / t_tree))
    print("  memory       %.0f MB for the DataFrame (deep)" % (df.memory_usage(deep=True).sum() / 1e6))


if __name__ == "__main__":
    main()
