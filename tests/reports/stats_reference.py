#!/usr/bin/env python3
"""Reference values for `cct-query stats`, independent of cctdb's code.

Reads JSON on stdin: {"percentiles": [10, 25, ...], "exclusive": false,
"runs": [{"main": 1.5, "main/a": 2.0, ...}, ...]} where each run maps a
path (frame names joined by '/') to its exclusive value in seconds. Writes
JSON: {path: {"mean": .., "median": .., "sd": .., "cv": .., "min": .., "max":
.., "p10": ..}} for every path of any run and its prefixes, inclusive values
(the sum over the path's subtree) unless "exclusive". A path a run lacks is
0 in it. sd is the sample standard deviation (statistics.stdev, n-1),
percentiles interpolate linearly between closest ranks (numpy's default),
written out here without numpy.
"""
import json
import math
import statistics
import sys


def percentile(values, p):
    s = sorted(values)
    pos = p / 100.0 * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (pos - lo) * (s[hi] - s[lo])


def pname(p):
    return "p%g" % p


def main():
    spec = json.load(sys.stdin)
    runs = spec["runs"]
    paths = set()
    for run in runs:
        for path in run:
            parts = path.split("/")
            for i in range(1, len(parts) + 1):
                paths.add("/".join(parts[:i]))
    out = {}
    for path in sorted(paths):
        values = []
        for run in runs:
            if spec.get("exclusive"):
                values.append(run.get(path, 0.0))
            else:
                values.append(sum(v for p, v in run.items() if p == path or p.startswith(path + "/")))
        mean = statistics.fmean(values)
        sd = statistics.stdev(values)
        row = {"mean": mean, "median": statistics.median(values), "sd": sd,
               "cv": sd / mean if mean != 0 else None, "min": min(values), "max": max(values)}
        for p in spec["percentiles"]:
            row[pname(p)] = percentile(values, p)
        out[path] = row
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
