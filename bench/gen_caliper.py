#!/usr/bin/env python3
"""Writes a large Caliper json-split file for the import benchmark
(docs/performance.md, "Importing Caliper JSON"): the layout of Caliper's
hatchet-region-profile channel ("data" first; columns Node order, mpi.rank,
time in seconds, path), ROWS rows over a 200-region tree and 64 ranks,
times with nine significant digits. Prints the rows and the time total.

usage: gen_caliper.py ROWS OUT.json
"""
import random
import sys


def main():
    rows, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(42)
    regions = 200
    parents = [None] + [rng.randrange(0, i) for i in range(1, regions)]
    total = 0.0
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
