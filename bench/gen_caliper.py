#!/usr/bin/env python3
"""Writes a large Caliper json-split file for the import benchmark
(docs/performance.md, "Importing Caliper JSON"): the layout of Caliper's
hatchet-region-profile channel ("data" first; columns Node order, mpi.rank,
time in seconds, path), ROWS rows over a 200-region tree and 64 ranks,
times with nine significant digits. With --records, the same rows as
`format json` records ({"path": "region0/region3", "mpi.rank": 5,
"sum#time.duration": 0.5, "count": 1}). Prints the rows and the time total.

usage: gen_caliper.py [--records] ROWS OUT.json
"""
import random
import sys


def main():
    args = sys.argv[1:]
    records = args[0] == "--records"
    if records:
        args = args[1:]
    rows, out = int(args[0]), args[1]
    rng = random.Random(42)
    regions = 200
    parents = [None] + [rng.randrange(0, i) for i in range(1, regions)]
    total = 0.0
    if records:
        paths = []
        for n in range(regions):
            chain = []
            k = n
            while k is not None:
                chain.insert(0, f"region{k}")
                k = parents[k]
            paths.append("/".join(chain))
        with open(out, "w") as f:
            f.write("[\n")
            for i in range(rows):
                t = round(rng.uniform(0, 1), 9)
                total += t
                f.write(f'{{"path": "{paths[i % regions]}", "mpi.rank": {(i // regions) % 64}, '
                        f'"sum#time.duration": {t}, "count": 1}}' + (",\n" if i + 1 < rows else "\n"))
            f.write("]\n")
        print(f"{rows} records, time total {total:.6f} s")
        return
    with open(out, "w") as f:
        f.write('{\n  "data": [\n')
        for i in range(rows):
            node = i % regions
            t = round(rng.uniform(0, 1), 9)
            total += t
            f.write(f'    [ {i}, {(i // regions) % 64}, {t}, {node} ]' + (",\n" if i + 1 < rows else "\n"))
        f.write('  ],\n  "columns": [ "Node order", "mpi.rank", "time", "path" ],\n')
        f.write('  "column_metadata": [ { "is_value": true }, { "is_value": true }, '
                '{ "is_value": true, "attribute.unit": "sec" }, { "is_value": false } ],\n  "nodes": [ ')
        f.write(", ".join(
            f'{{ "label": "region{n}", "column": "path"' + ("" if parents[n] is None else f', "parent": {parents[n]}') + " }"
            for n in range(regions)))
        f.write(' ],\n  "cali.caliper.version": "2.10.0",\n  "cluster": "bench"\n}\n')
    print(f"{rows} rows, time total {total:.6f} s")


if __name__ == "__main__":
    main()
