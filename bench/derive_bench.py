#!/usr/bin/env python3
"""cct-query derive benchmark: squashing a big run into a new one.

    python3 bench/derive_bench.py [--build build] [--nodes 1000000] [--repeat 5]

Generates a deterministic synthetic profile (bench/gen_profile.cc, seed 42),
imports it, and measures whole-process wall time (best of --repeat) and peak
memory (max RSS) of:
  keep-min   cct-query derive RUN --keep-min 1 --name ...
  drop       cct-query derive RUN --drop '* [name ~ "^pack_"]' --name ...
  both       cct-query derive RUN --drop ... --keep-min 1 --name ...   (target <= 1 s)
  mean       cct-query derive RUN --merge-threads mean --normalize total --name ...
Each derive writes a new run (a fresh name per repetition, so the database
grows by one run each time, as it does in use).

Baselines measured in the same invocation, on the same database:
  load       cct-query tree RUN --depth 1: reading the run, the floor of any derive
  import     cct-import of the same folded file: building and writing the same tree
Ratios are against the target and these baselines.
"""
import argparse
import itertools
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import best, built_programs, generated_folded, run_rss  # noqa: E402

TARGET_S = 1.0
DROP = '* [name ~ "^pack_"]'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--nodes", type=int, default=1000000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    gen, query, imp = built_programs(args.build, "bench/gen-profile", "tools/cct-query", "tools/cct-import")

    with tempfile.TemporaryDirectory(prefix="cctdb-derive-bench-") as tmp:
        folded = generated_folded(tmp, gen, args.nodes)
        db = os.path.join(tmp, "p.db")
        imports, rss_import = [], 0.0
        for _ in range(max(1, min(args.repeat, 3))):
            if os.path.exists(db):
                os.remove(db)
            w, r = run_rss([imp, "-d", db, "--from", "folded", folded, "--metric", "cputime", "--unit", "ns",
                            "--name", "big"])
            imports.append(w)
            rss_import = max(rss_import, r)
        load, load_rss = best([query, "-d", db, "tree", "big", "--depth", "1"], args.repeat)

        names = (f"d{i}" for i in itertools.count())
        cases = {
            "keep-min": ["--keep-min", "1"],
            "drop": ["--drop", DROP],
            "both": ["--drop", DROP, "--keep-min", "1"],
            "mean": ["--merge-threads", "mean", "--normalize", "total"],
        }
        results = {}
        for case, ops in cases.items():
            walls, rss = [], 0.0
            for _ in range(args.repeat):
                w, r = run_rss([query, "-d", db, "derive", "big", *ops, "--name", next(names)])
                walls.append(w)
                rss = max(rss, r)
            results[case] = (min(walls), rss)
        # What the squash left: the last "both" run's size.
        out = subprocess.run([query, "-d", db, "runs", "--format", "csv"], capture_output=True, text=True,
                             check=True).stdout.splitlines()
        header = out[0].split(",")
        sizes = {row.split(",")[header.index("name")]: int(row.split(",")[header.index("nodes")]) for row in out[1:]}
        nodes = sizes["big"]
        both_nodes = sizes[f"d{2 * args.repeat}"]

    imp_best = min(imports)
    print(f"cct-query derive benchmark  (best of {args.repeat}; whole-process wall time; peak RSS)")
    print(f"run: {nodes} nodes (gen-profile --nodes {args.nodes} --seed 42); --drop '{DROP}' --keep-min 1 "
          f"leaves {both_nodes} nodes\n")
    print(f"baseline  load (tree --depth 1)  {load:.3f} s  {load_rss:5.0f} MiB")
    print(f"baseline  cct-import             {imp_best:.3f} s  {rss_import:5.0f} MiB\n")
    for case, (wall, rss) in results.items():
        print(f"derive {case:<9} {wall:.3f} s  {rss:5.0f} MiB   {wall / load:.2f}x load, {wall / imp_best:.2f}x import")
    both = results["both"][0]
    print(f"\ntarget: --drop + --keep-min <= {TARGET_S} s: {both:.3f} s -> {both / TARGET_S:.2f}x of target: "
          + ("met" if both <= TARGET_S else "NOT met"))


if __name__ == "__main__":
    main()
