#!/usr/bin/env python3
"""Per-kernel GPU time of a PyTorch program: cctdb against torch.profiler.

    python3 tests/gpu/check_torch.py [--build build] [--python python3] [--steps 30]

Runs tests/gpu/torch_nvtx.py twice (the two profilers both use CUPTI, so not
at once):
  1. under torch.profiler (`torch_nvtx.py --torch-profile OUT.json`): per
     kernel name, the summed self CUDA time and the launch count;
  2. under `cct-record --gpu on -o DB --name torch_nvtx`, then
     `cct-query -d DB top torch_nvtx --by kernel -m gker -m gker:count -n 0
     --format json` (rows: name, exclusive {gker (s), gker:count}).
Kernel names are matched exactly, else with white space removed, else by
their qualified name without template arguments and parameters (both sides
summed per such name). Prints every kernel's two times, ratio and counts.

Fails (exit 1) when a matched kernel holding at least --min-share (1%) of
torch's kernel time differs by more than --tolerance (10%), when such a
kernel is missing from cctdb, or when the two totals differ by more than
--tolerance. Launch-count differences are warnings (--strict: failures).
Also prints gker per NVTX range (step, forward, backward) from
`cct-query top --by nvtx`, and checks the tree's shape: the forward pass's
kernels must sit under step -> forward -> a named launching CPU function
(fail otherwise), 90% of the kernel time must have a named launching
function (fail), stacks should be complete (warn), and the kernels of the
autograd thread (PyTorch runs backward there while the main thread waits
inside "backward") must sit under step -> backward: the run is recorded
with `--nvtx-inherit main` (fail otherwise). The forward pass's kernels
must also sit under the Python function that launched them, `workload` of
torch_nvtx.py, and its statement's line node (issue 16; fail otherwise).
A third run, under `cct-record --iteration '^step$'`, must have one
iteration per step, the same launches in each after the first, and 95% of the
kernel time inside them: iterations are process-wide, so the autograd
thread's kernels count toward the step that was open (fail otherwise). SKIP (exit 0) without a GPU or without torch with
CUDA; exit 2 on a setup error.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu_util import (base_name, gpu_or_skip, launcher, query_json, result, run, run_recorded, run_tree,  # noqa: E402
                      scratch_dir, tools, val, walk)

PROGRAM = os.path.join(HERE, "torch_nvtx.py")



def kernel_paths(tree):
    """Per kernel node: (gker, thread name, [NVTX ranges root first], the
    nearest named launching function or None, whether the path is partial)."""
    out = []
    for n, anc in walk(tree):
        if n.get("kind") != "kernel":
            continue
        thread = next((x.get("name", "") for x in anc if x.get("kind") == "thread"), "")
        ranges = [x.get("name", "") for x in anc if x.get("kind") == "nvtx"]
        f, _ = launcher(anc, skip_unnamed=True)
        partial = any(x.get("name") == "<partial call path>" for x in anc)
        out.append((val(n, "gker"), thread, ranges, f.get("name", "") if f else None, partial))
    return out


def check_structure(tree, fails, warns):
    """The tree's shape around the kernels: step -> forward -> the launching
    CPU frames -> kernels on the main thread; where the backward pass's
    kernels went; how many launches have a named launching function."""
    paths = kernel_paths(tree)
    total = sum(p[0] for p in paths)
    if not total:
        print("  FAIL: no kernel time in the tree")
        fails.append("tree")
        return

    def share(sel):
        return sum(p[0] for p in paths if sel(p)) / total

    named = share(lambda p: p[3] is not None)
    complete = share(lambda p: not p[4])
    fwd = [p for p in paths if p[2][-2:] == ["step", "forward"]]
    fwd_named = all(p[3] is not None for p in fwd)
    print("tree structure (share of gker):")
    print(f"  {named:.1%} launched by a named CPU function; {complete:.1%} on complete stacks (not partial)")
    by_place = {}
    for g, thread, ranges, who, _ in paths:
        key = (thread, " -> ".join(ranges) or "(no range)")
        by_place.setdefault(key, [0.0, {}])
        by_place[key][0] += g
        by_place[key][1][who] = by_place[key][1].get(who, 0.0) + g
    for (thread, where), (g, launchers) in sorted(by_place.items(), key=lambda kv: -kv[1][0]):
        top = max(launchers.items(), key=lambda kv: kv[1])[0]
        print(f"  {g / total:6.1%}  thread {thread!r}, {where}; top launcher {str(top)[:100]!r}")
    ok = bool(fwd) and fwd_named
    print(f"  {'PASS' if ok else 'FAIL'} step -> forward -> named launching frames -> kernels: {len(fwd)} kernel node(s)")
    if not ok:
        fails.append("step/forward structure")
    if named < 0.9:
        print(f"  FAIL: only {named:.1%} of the kernel time has a named launching function (90% wanted)")
        fails.append("named launchers")
    if complete < 0.9:
        print(f"  WARN: only {complete:.1%} of the kernel time is on complete stacks")
        warns.append("partial stacks")
    # PyTorch runs backward on its autograd engine's device thread while the
    # main thread waits inside "backward"; recorded with --nvtx-inherit main,
    # that thread's launches go under the main thread's open ranges.
    worker = share(lambda p: p[1] != "main thread")
    worker_bwd = share(lambda p: p[1] != "main thread" and p[2][-2:] == ["step", "backward"])
    ok = worker > 0 and worker_bwd >= 0.99 * worker
    print(f"  {'PASS' if ok else 'FAIL'} the autograd thread's kernels under step -> backward "
          f"(--nvtx-inherit main): {worker_bwd:.1%} of {worker:.1%}")
    if not ok:
        fails.append("backward structure")


def is_program_line(node):
    """A line node of torch_nvtx.py (`torch_nvtx.py:34`)."""
    return re.search(r"torch_nvtx\.py:\d+$", node.get("name", "")) is not None


def check_python_frames(tree, fails):
    """Issue 16: the forward pass's kernels, launched from Python on the main
    thread, sit under the Python function that launched them (`workload`,
    file torch_nvtx.py) and its statement's line node (torch_nvtx.py:N);
    prints one such path from the thread down."""
    fwd, with_py, example = 0, 0, None
    for n, anc in walk(tree):
        if n.get("kind") != "kernel":
            continue
        ranges = [x.get("name", "") for x in anc if x.get("kind") == "nvtx"]
        if ranges[-2:] != ["step", "forward"]:
            continue
        fwd += 1
        py = any(x.get("kind") == "function" and x.get("name") == "workload" and
                 (x.get("file", "") or x.get("module", "")).endswith("torch_nvtx.py") for x in anc)
        if py and any(is_program_line(x) for x in anc):
            with_py += 1
            if example is None:
                start = next((i for i, x in enumerate(anc) if x.get("kind") == "thread"), 0)
                example = " -> ".join(x.get("name", "")[:60] for x in anc[start:]) + " -> " + n.get("name", "")[:60]
    print(f"  python frames: {with_py} of {fwd} forward kernel node(s) under workload (torch_nvtx.py) and a "
          f"torch_nvtx.py line")
    if example:
        print(f"  python path: {example[:900]}")
    ok = fwd > 0 and with_py == fwd
    print(f"  {'PASS' if ok else 'FAIL'} Python frames above the forward kernels (issue 16)")
    if not ok:
        fails.append("python frames")


def check_iterations(t, tmp, python, args, steps, fails, warns):
    """A second recording with --iteration '^step$': the iterations are
    process-wide, so the kernels the autograd thread launches while the main
    thread is inside "step" count toward that step. Fails unless there are
    `steps` iterations with the same launches each (after the first) and 95% of the
    run's kernel time inside them (only set-up launches are outside)."""
    db = os.path.join(tmp, "iter.db")
    run_recorded([t["cct-record"], "--gpu", "on", "--iteration", "^step$", "-o", db, "--name", "torch_iter", "--",
                  python, PROGRAM, *args])
    got = {}
    for m in ("gker", "gker:count"):
        q = run([t["cct-query"], "-d", db, "iterations", "torch_iter", "-m", m, "--format", "json"], quiet=True)
        got[m] = json.loads(q.stdout)
    iters = got["gker"]["iterations"]
    counts = [int(i["value"]) for i in got["gker:count"]["iterations"]]
    inside = sum(i["value"] for i in iters)
    total = got["gker"]["run_total"]
    print(f"iterations (--iteration '^step$'): {len(iters)} (steps: {steps}); launches per iteration "
          f"{sorted(set(counts))}; gker {inside:.6f} s of {total:.6f} s inside ({inside / total:.1%})"
          if total else f"iterations: {len(iters)}, no kernel time")
    # The first step may also launch lazy set-up work (library handles).
    ok = len(iters) == steps and len(set(counts[1:])) <= 1 and total and inside >= 0.95 * total
    print(f"  {'PASS' if ok else 'FAIL'} per-iteration GPU values: {steps} iterations, equal launches after the "
          f"first ({counts[:1]}), "
          f">= 95% of gker inside (the autograd thread's too)")
    if not ok:
        fails.append("iterations")


def squash(name):
    return re.sub(r"\s+", "", name)


def match(torch_k, cct_k):
    """Pairs (label, torch {us, count}, cct {s, count}, how) by exact name,
    then white-space-free name, then base name (summing each side)."""
    pairs, t_left, c_left = [], dict(torch_k), dict(cct_k)
    for how, key in (("exact", lambda s: s), ("spaces", squash), ("base name", base_name)):
        tg, cg = {}, {}
        for n, v in t_left.items():
            tg.setdefault(key(n), []).append(n)
        for n, v in c_left.items():
            cg.setdefault(key(n), []).append(n)
        for k in sorted(set(tg) & set(cg)):
            t = {"us": sum(t_left[n]["self_device_us"] for n in tg[k]), "count": sum(t_left[n]["count"] for n in tg[k])}
            c = {"s": sum(c_left[n]["gker"] for n in cg[k]), "count": sum(c_left[n]["count"] for n in cg[k])}
            label = tg[k][0] if len(tg[k]) == 1 else k
            pairs.append((label, t, c, how if len(tg[k]) == 1 and len(cg[k]) == 1 else f"{how}, {len(tg[k])}:{len(cg[k])}"))
            for n in tg[k]:
                del t_left[n]
            for n in cg[k]:
                del c_left[n]
    return pairs, t_left, c_left


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build",
                    help="meson build directory, or device bundle (scripts/device-bundle.sh), with "
                         "tools/cct-record (default build)")
    ap.add_argument("--python", default=sys.executable, help="the Python with torch (default: this one)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--min-share", type=float, default=0.01,
                    help="kernels below this share of torch's kernel time are reported, not asserted")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    if gpu_or_skip() is None:
        return 0
    probe = subprocess.run([a.python, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: no torch with CUDA in {a.python} ({(probe.stderr.strip().splitlines() or ['CUDA unavailable'])[-1]})")
        return 0
    t = tools(a.build)
    with scratch_dir("cct-torch-", a.keep) as tmp:
        args = ["--steps", str(a.steps), "--size", str(a.size)]
        prof_json = os.path.join(tmp, "torch_profile.json")
        r = run([a.python, PROGRAM, *args, "--torch-profile", prof_json])
        print("torch.profiler run: " + r.stdout.strip().splitlines()[-1])
        with open(prof_json) as f:
            tp = json.load(f)
        print(f"torch {tp.get('torch')}, CUDA {tp.get('cuda')}, {tp.get('device')}: {len(tp['kernels'])} kernels, "
              f"{tp['launches']} launches, {tp['total_us'] / 1e6:.6f} s")

        db = os.path.join(tmp, "torch.db")
        r = run_recorded([t["cct-record"], "--gpu", "on", "--nvtx-inherit", "main", "-o", db, "--name", "torch_nvtx",
                          "--", a.python, PROGRAM,
                          *args])
        print("cct-record run: " + r.stdout.strip().splitlines()[-1])
        q = run([t["cct-query"], "-d", db, "top", "torch_nvtx", "--by", "kernel", "-m", "gker", "-m", "gker:count",
                 "-n", "0", "--format", "json"])
        rows = json.loads(q.stdout)["rows"]
        cct_k = {}
        for row in rows:
            e = row.get("exclusive") or {}
            k = cct_k.setdefault(row["name"], {"gker": 0.0, "count": 0})
            k["gker"] += e.get("gker") or 0.0
            k["count"] += int(e.get("gker:count") or 0)
        cct_total = sum(k["gker"] for k in cct_k.values())
        print(f"cctdb: {len(cct_k)} kernels, {sum(k['count'] for k in cct_k.values())} launches, {cct_total:.6f} s")

        pairs, t_only, c_only = match(tp["kernels"], cct_k)
        torch_total_s = tp["total_us"] / 1e6
        fails, warns = [], []
        print(f"\n{'torch s':>10} {'cctdb s':>10} {'ratio':>7} {'share':>6} {'n torch':>8} {'n cct':>7}  match      kernel")
        for name, tk, ck, how in sorted(pairs, key=lambda p: -p[1]["us"]):
            ts = tk["us"] / 1e6
            share = ts / torch_total_s if torch_total_s else 0
            ratio = ck["s"] / ts if ts else float("inf")
            status = ""
            if share >= a.min_share and abs(ratio - 1) > a.tolerance:
                status = "FAIL"
                fails.append(name)
            elif tk["count"] != ck["count"]:
                status = "WARN(count)"
                warns.append(name)
            print(f"{ts:10.6f} {ck['s']:10.6f} {ratio:7.4f} {share:6.1%} {tk['count']:8d} {ck['count']:7d}  "
                  f"{how:<10} {name[:120]}  {status}")
        for name, v in sorted(t_only.items(), key=lambda kv: -kv[1]["self_device_us"]):
            share = v["self_device_us"] / 1e6 / torch_total_s if torch_total_s else 0
            status = "FAIL(missing)" if share >= a.min_share else "WARN(missing)"
            (fails if share >= a.min_share else warns).append(name)
            print(f"{v['self_device_us'] / 1e6:10.6f} {'-':>10} {'-':>7} {share:6.1%} {v['count']:8d} {'-':>7}  "
                  f"{'torch only':<10} {name[:120]}  {status}")
        for name, v in sorted(c_only.items(), key=lambda kv: -kv[1]["gker"]):
            warns.append(name)
            print(f"{'-':>10} {v['gker']:10.6f} {'-':>7} {'-':>6} {'-':>8} {v['count']:7d}  {'cctdb only':<10} "
                  f"{name[:120]}  WARN")
        ratio = cct_total / torch_total_s if torch_total_s else float("inf")
        total_ok = abs(ratio - 1) <= a.tolerance
        print(f"\ntotal kernel time: torch {torch_total_s:.6f} s, cctdb {cct_total:.6f} s, ratio {ratio:.4f} "
              f"(tolerance {a.tolerance:.0%}) {'PASS' if total_ok else 'FAIL'}")
        if not total_ok:
            fails.append("total")

        q = run([t["cct-query"], "-d", db, "top", "torch_nvtx", "--by", "nvtx", "-m", "gker", "-m", "gker:count",
                 "-n", "0", "--format", "json"], check=False)
        if q.returncode == 0:
            print("gker by NVTX range (inclusive):")
            for row in json.loads(q.stdout)["rows"]:
                inc = row.get("inclusive") or {}
                print(f"  {row['name']:<24} gker {inc.get('gker') or 0:.6f} s, {int(inc.get('gker:count') or 0)} launches")
            names = {row["name"] for row in json.loads(q.stdout)["rows"]}
            for rng in ("step", "forward", "backward"):
                if not any(n == rng or n.endswith("::" + rng) for n in names):
                    print(f"  WARN: no GPU time under NVTX range '{rng}'")
                    warns.append(f"nvtx {rng}")
        check_structure(run_tree(t["cct-query"], db, "torch_nvtx", ["gker", "gker:count"]), fails, warns)
        # Line nodes are folded into their functions unless --lines.
        check_python_frames(query_json(t["cct-query"], db, "tree", "torch_nvtx", "-m", "gker", "--lines"), fails)
        check_iterations(t, tmp, a.python, args, a.steps, fails, warns)
        show = json.loads(run([t["cct-query"], "-d", db, "show", "torch_nvtx", "--format", "json"], quiet=True).stdout)
        print("diagnostics: " + json.dumps((show.get("runs") or [{}])[0].get("diagnostics") or {}, sort_keys=True))

        print(f"\ncheck_torch: {len(pairs)} matched kernels, {len(fails)} failed, {len(warns)} warnings")
        return result(fails, len(warns), a.strict)


if __name__ == "__main__":
    sys.exit(main())
