#!/usr/bin/env python3
"""Reference values for tests/diff/stats_test.cc, computed independently of
cctdb's code with Python's standard library only:

  - exact Mann-Whitney (rank-sum) p-values by brute-force enumeration of
    every way to label the pooled values (ties get mid-ranks; two-sided:
    P(|S - E| >= |s - E|)), not by the recurrence src/diff/stats.cc uses;
  - normal-approximation p-values from the textbook formula with tie and
    continuity correction, evaluated with statistics.NormalDist;
  - a 95% ratio-of-means interval from statistics.mean/stdev and Student's
    t quantile taken from a printed table (t_0.975 with 8 df = 2.306004).

Run: python3 tests/diff/reference_values.py
"""
import itertools
import math
import statistics


def midranks(values):
    order = sorted(values)
    ranks = {}
    i = 0
    while i < len(order):
        j = i
        while j < len(order) and order[j] == order[i]:
            j += 1
        ranks[order[i]] = (i + 1 + j) / 2  # mean of ranks i+1..j
        i = j
    return [ranks[v] for v in values]


def exact_p(x, y):
    pooled = list(x) + list(y)
    r = midranks(pooled)
    n, m = len(x), len(y)
    expect = m * (n + m + 1) / 2
    observed = abs(sum(r[n:]) - expect)
    hits = total = 0
    for chosen in itertools.combinations(range(n + m), m):
        total += 1
        if abs(sum(r[k] for k in chosen) - expect) >= observed - 1e-9:
            hits += 1
    return hits / total


def normal_p(x, y):
    n, m = len(x), len(y)
    pooled = list(x) + list(y)
    r = midranks(pooled)
    u = sum(r[n:]) - m * (m + 1) / 2
    big_n = n + m
    ties = sum(c ** 3 - c for c in (pooled.count(v) for v in set(pooled)))
    var = n * m / 12 * ((big_n + 1) - ties / (big_n * (big_n - 1)))
    z = max(0.0, abs(u - n * m / 2) - 0.5) / math.sqrt(var)
    return 2 * (1 - statistics.NormalDist().cdf(z))


EXACT = {
    "5v5 separated": ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]),
    "3v3 separated": ([1, 2, 3], [4, 5, 6]),
    "4v4 separated": ([1, 2, 3, 4], [5, 6, 7, 8]),
    "5v5 U=1": ([1, 2, 3, 4, 6], [5, 7, 8, 9, 10]),
    "5v5 zeros": ([0, 0, 0, 0, 0], [1, 2, 3, 4, 5]),
    "4v5 ties": ([1, 2, 2, 3], [2, 3, 3, 4, 5]),
    "6v7": ([3.1, 2.7, 4.0, 3.3, 2.9, 3.6], [3.5, 4.2, 3.9, 4.4, 3.8, 4.1, 4.6]),
    "5v5 counts": ([10, 12, 12, 15, 11], [12, 14, 15, 15, 16]),
    "5v5 identical": ([7, 7, 7, 7, 7], [7, 7, 7, 7, 7.0]),
}

NORMAL = {
    "12v12": (list(range(1, 13)), [v + 4.5 for v in range(1, 13)]),
    "14v14 ties": ([0] * 6 + list(range(1, 9)), [0] * 2 + list(range(3, 15))),
}

if __name__ == "__main__":
    for name, (x, y) in EXACT.items():
        print(f"exact  {name:14} p = {exact_p(x, y)!r}")
    for name, (x, y) in NORMAL.items():
        print(f"normal {name:14} p = {normal_p(x, y)!r}")
    base = [10, 11, 12, 13, 14]
    cand = [2 * v for v in base]
    mx, my = statistics.mean(base), statistics.mean(cand)
    se = math.sqrt(statistics.stdev(base) ** 2 / (5 * mx * mx) + statistics.stdev(cand) ** 2 / (5 * my * my))
    t = 2.306004  # t_0.975, 8 df (table)
    print(f"ratio  {my / mx!r} ci = ({my / mx * math.exp(-t * se)!r}, {my / mx * math.exp(t * se)!r})")
    print(f"summary mean {statistics.mean([2.5, 3.5, 9.0, 1.25])!r} sd {statistics.stdev([2.5, 3.5, 9.0, 1.25])!r}")
