#!/usr/bin/env python3
"""Time to the first line of `cct-query tree` against its total time, on big trees.

    python3 bench/tree_stream_bench.py [--build build] [--sizes 1000000,5600000] [--repeat 3]

For each size N it generates a deterministic synthetic profile (bench/gen_profile.cc,
seed 42), imports it, and runs `cct-query tree 1` (the whole tree, no --depth) with
stdout a pipe, reading as it comes: the wall time until the first tree row (the line
after the header) arrives, and until the process ends with everything read. Best of
--repeat for each. Issue 20 asks for the first line within 1 s at 5.6*10^6 nodes;
before streaming the first row came only after every row was formatted.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import built_programs  # noqa: E402


def first_and_total(argv):
    """(seconds to the first tree row, seconds to the end, output lines)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    first = None
    lines = 0
    while True:
        chunk = proc.stdout.read(1 << 16)
        if not chunk:
            break
        newlines = chunk.count(b"\n")
        # Line 1 is the totals, line 2 the header: line 3 is the first row.
        if first is None and lines + newlines >= 3:
            first = time.perf_counter() - start
        lines += newlines
    err = proc.stderr.read()
    proc.wait()
    total = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} failed ({proc.returncode}): {err.decode(errors='replace').strip()}")
    return first if first is not None else total, total, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="1000000,5600000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    gen, query, imp = built_programs(args.build, "bench/gen-profile", "tools/cct-query", "tools/cct-import")
    print(f"cct-query tree RUN (whole tree, stdout a pipe; best of {args.repeat})")
    print(f"{'nodes':>9} {'lines':>9} {'first row':>10} {'total':>9} {'first/total':>12}")
    with tempfile.TemporaryDirectory(prefix="cctdb-bench-") as tmp:
        for n in [int(x) for x in args.sizes.split(",")]:
            folded = os.path.join(tmp, f"p{n}.folded")
            with open(folded, "wb") as f:
                subprocess.run([gen, "--nodes", str(n), "--seed", "42"], stdout=f, check=True)
            db = os.path.join(tmp, f"p{n}.db")
            subprocess.run([imp, "-d", db, "--from", "folded", folded, "--metric", "cputime", "--unit", "ns"],
                           stdout=subprocess.DEVNULL, check=True)
            os.remove(folded)
            runs = [first_and_total([query, "-d", db, "tree", "1", "--width", "120"]) for _ in range(args.repeat)]
            first = min(r[0] for r in runs)
            total = min(r[1] for r in runs)
            print(f"{n:>9} {runs[0][2]:>9} {first:>9.3f}s {total:>8.3f}s {first / total:>11.1%}", flush=True)
            os.remove(db)


if __name__ == "__main__":
    main()
