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
`cct-query top --by nvtx`. SKIP (exit 0) without a GPU or without torch with
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
from gpu_util import base_name, gpu_or_skip, result, run, run_recorded, scratch_dir, tools  # noqa: E402

PROGRAM = os.path.join(HERE, "torch_nvtx.py")


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
        r = run_recorded([t["cct-record"], "--gpu", "on", "-o", db, "--name", "torch_nvtx", "--", a.python, PROGRAM,
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
        show = json.loads(run([t["cct-query"], "-d", db, "show", "torch_nvtx", "--format", "json"], quiet=True).stdout)
        print("diagnostics: " + json.dumps((show.get("runs") or [{}])[0].get("diagnostics") or {}, sort_keys=True))

        print(f"\ncheck_torch: {len(pairs)} matched kernels, {len(fails)} failed, {len(warns)} warnings")
        return result(fails, len(warns), a.strict)


if __name__ == "__main__":
    sys.exit(main())
