#!/usr/bin/env python3
"""Reference for cct-query derive's --merge-threads and --keep-min, written
from docs/query.md without the C++ code, for tests/query/derive_test.cc.

Input (argv[1]): one line per node of a tree, in creation order (a parent
before its children): "ID<TAB>PARENT<TAB>KIND<TAB>NAME<TAB>VALUE" (the root
is "0<TAB>-1<TAB>root<TAB><root><TAB>VALUE"; KIND is "thread" or "function").

Output: for each of sum, mean, min, max, the merged tree's exclusive values
by path ("STAT<TAB>a/b/c<TAB>VALUE", the root's path empty, values printed
with repr), then for --keep-min 10 on the source: "keep10<TAB>PATH<TAB>VALUE"
for every node that stays (paths of the source, thread names included).
"""
import sys


def main():
    nodes = []  # (parent, kind, name, value)
    with open(sys.argv[1]) as f:
        for line in f:
            i, parent, kind, name, value = line.rstrip("\n").split("\t")
            assert int(i) == len(nodes)
            nodes.append((int(parent), kind, name, float(value)))

    # Each node's outermost thread (a thread node with no thread above it),
    # and its path without thread nodes.
    thread_of, path = [None] * len(nodes), [()] * len(nodes)
    threads = []
    for i, (parent, kind, name, _) in enumerate(nodes):
        if i == 0:
            continue
        up = thread_of[parent]
        if up is None and kind == "thread":
            up = len(threads)
            threads.append(i)
        thread_of[i] = up
        path[i] = path[parent] if kind == "thread" else path[parent] + (name,)

    per_thread = {}  # path -> {thread: summed value}
    outside = {}     # path -> value of nodes in no thread
    for i, (_, _, _, value) in enumerate(nodes):
        if thread_of[i] is None:
            outside[path[i]] = outside.get(path[i], 0.0) + value
        else:
            d = per_thread.setdefault(path[i], {})
            d[thread_of[i]] = d.get(thread_of[i], 0.0) + value
    n = len(threads)
    stats = {
        "sum": lambda xs: sum(xs),
        "mean": lambda xs: sum(xs) / n,
        "min": min,
        "max": max,
    }
    paths = sorted(set(per_thread) | set(outside))
    for stat, fn in stats.items():
        for p in paths:
            d = per_thread.get(p, {})
            xs = [d.get(t, 0.0) for t in range(n)]  # a thread without the node: 0
            v = outside.get(p, 0.0) + (fn(xs) if d else 0.0)
            print(f"{stat}\t{'/'.join(p)}\t{v!r}")

    # --keep-min 10: inclusive >= 10 % of the total stays; the others give
    # their exclusive value to the nearest ancestor that stays.
    inclusive = [v for (_, _, _, v) in nodes]
    for i in range(len(nodes) - 1, 0, -1):
        inclusive[nodes[i][0]] += inclusive[i]
    threshold = abs(inclusive[0]) * 10 / 100
    full = [()] * len(nodes)
    for i in range(1, len(nodes)):
        full[i] = full[nodes[i][0]] + (nodes[i][2],)
    kept = {}
    for i, (parent, _, _, value) in enumerate(nodes):
        j = i
        while j != 0 and abs(inclusive[j]) < threshold:
            j = nodes[j][0]
        kept[full[j]] = kept.get(full[j], 0.0) + value
    for p in sorted(kept):
        print(f"keep10\t{'/'.join(p)}\t{kept[p]!r}")


if __name__ == "__main__":
    main()
