#!/usr/bin/env python3
"""PC sampling: cctdb's gins against Nsight Compute's executed instructions.

    python3 tests/gpu/check_pc_sampling.py [--build build] [--ncu ncu]

Builds tests/gpu/gpu_e2e.cu (as check_gpu_e2e.py does) and runs it
  1. under `cct-record --gpu on --gpu-pc-sampling -o DB --name pcs`: gins and
     gins:stl_* of the scale_kernel and add_kernel nodes (inclusive, so samples
     on source-line or inlined children count), from
     `cct-query tree pcs -m gins -m gins:stl_... --format json`;
  2. under `ncu --csv --page raw --metrics METRIC --kernel-name regex:KERNEL
     --log-file F` (METRIC: --ncu-metric, default smsp__inst_executed.sum,
     the warp-level instructions executed that nvprof called inst_executed),
     summed over the kernel's launches.
In the same ncu run it reads launch__registers_per_thread,
launch__block_size and launch__grid_size.
Prints, per kernel, gins, the ratio gins / executed instructions, and the
stall-reason shares. PC sampling is statistical (one sample per warp
scheduler every 2^N cycles), so the ratio is reported, not asserted; the
check fails (exit 1) when scale_kernel has no sample (gins == 0), the run
did not complete, or cctdb's gker:thr_reg, gker:blk_thr or gker:blks of a
kernel differs from ncu's launch metric (exact: both read the launch). Without ncu (or when ncu cannot read the counters,
e.g. ERR_NVGPUCTRPERM) the ratio is skipped with a message. SKIP (exit 0)
without a GPU; exit 2 on a setup error.
"""
import argparse
import csv
import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "gpu_e2e.cu")
sys.path.insert(0, HERE)
from gpu_util import (base_name, build_cuda, find_ncu, gpu_or_skip, nvcc_or_skip, program_json, result,  # noqa: E402
                      run, run_metrics, run_recorded, run_show, run_tree, scratch_dir, tools, val, walk)

KERNELS = ("scale_kernel", "add_kernel")


# ncu's launch metrics and the cctdb metric (per-launch average on the
# kernel node) each must equal.
LAUNCH_METRICS = {"launch__registers_per_thread": "gker:thr_reg", "launch__block_size": "gker:blk_thr",
                  "launch__grid_size": "gker:blks"}


def ncu_values(ncu, exe, metrics, kernel, tmp):
    """({metric: [value per launch]}, message) for one ncu run over the
    kernel's launches; None instead of the dict when ncu failed."""
    log = os.path.join(tmp, f"ncu-{kernel}.csv")
    argv = [ncu, "--csv", "--page", "raw", "--metrics", ",".join(metrics), "--kernel-name", f"regex:^{kernel}$",
            "--log-file", log, exe]
    r = run(argv, check=False, timeout=600)
    text = open(log).read() if os.path.exists(log) else ""
    if r.returncode != 0 or "ERR_NVGPUCTRPERM" in text + r.stdout + r.stderr:
        tail = (text + r.stdout + r.stderr).strip().splitlines()[-3:]
        return None, f"ncu failed ({r.returncode}): {' | '.join(tail)}"
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows:
        return None, "ncu printed no CSV rows: " + " | ".join(text.strip().splitlines()[-3:])
    header = rows[0]
    missing = [m for m in metrics if m not in header]
    if missing:
        return None, f"ncu's CSV has no column {missing}: {header[:20]}"
    name_col = header.index("Kernel Name") if "Kernel Name" in header else None
    out = {m: [] for m in metrics}
    for row in rows[1:]:
        if row[0] == "" and (name_col is None or row[name_col] == ""):
            continue  # the units row
        for m in metrics:
            col = header.index(m)
            try:
                out[m].append(float(row[col].replace(",", "").strip()))
            except (ValueError, IndexError):
                pass
    return out, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build",
                    help="meson build directory, or device bundle (scripts/device-bundle.sh), with "
                         "tools/cct-record (default build)")
    ap.add_argument("--nvcc")
    ap.add_argument("--ncu", help="ncu to use (default: $NCU, ncu on PATH, /usr/local/cuda/bin/ncu)")
    ap.add_argument("--ncu-metric", default="smsp__inst_executed.sum")
    ap.add_argument("--nvcc-flag", action="append", default=[])
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    if gpu_or_skip() is None:
        return 0
    nvcc = nvcc_or_skip(a.nvcc)
    if not nvcc:
        return 0
    t = tools(a.build)
    with scratch_dir("cct-pcs-", a.keep) as tmp:
        exe = build_cuda(nvcc, SOURCE, os.path.join(tmp, "gpu_e2e"), None, a.nvcc_flag)
        db = os.path.join(tmp, "pcs.db")
        r = run_recorded([t["cct-record"], "--gpu", "on", "--gpu-pc-sampling", "-o", db, "--name", "pcs", "--", exe],
                         "cct-record --gpu-pc-sampling")
        prog = program_json(r.stdout)
        print("recorded run: " + json.dumps(prog))
        show = run_show(t["cct-query"], db, "pcs")
        rec = (show.get("runs") or [{}])[0]
        print("state " + str(rec.get("state")) + ", diagnostics " + json.dumps(rec.get("diagnostics") or {}))
        names = [m["name"] for m in run_metrics(t["cct-query"], db, "pcs")]
        gins_metrics = [m for m in names if m == "gins" or m.startswith("gins:")]
        print("metrics: " + " ".join(gins_metrics))
        failed = rec.get("state") != "complete"
        if "gins" not in names:
            print("FAIL: the run has no gins metric")
            return 1
        tree = run_tree(t["cct-query"], db, "pcs", gins_metrics + list(LAUNCH_METRICS.values()))
        total = val(tree, "gins", "inclusive")
        print(f"run total gins {total}")
        ncu = find_ncu(a.ncu)
        if not ncu:
            print("ncu not found: the ratio to executed instructions is skipped")
        for key in KERNELS:
            nodes = [n for n, _ in walk(tree) if n.get("kind") == "kernel" and base_name(n.get("name", "")) == key]
            gins = sum(val(n, "gins", "inclusive") for n in nodes)
            stalls = {}
            for n in nodes:
                for m in gins_metrics:
                    if m.startswith("gins:stl_"):
                        stalls[m] = stalls.get(m, 0) + val(n, m, "inclusive")
            share = ", ".join(f"{m[9:]} {v / gins:.1%}" for m, v in sorted(stalls.items(), key=lambda kv: -kv[1])
                              if v and gins)
            print(f"\n{key}: {len(nodes)} node(s), gins {gins} ({gins / total:.1%} of the run's samples)"
                  if total else f"\n{key}: {len(nodes)} node(s), gins {gins}")
            if share:
                print(f"  stall shares: {share}")
            if key == "scale_kernel" and gins <= 0:
                print("  FAIL: no PC samples on scale_kernel")
                failed = True
            if ncu:
                vals, msg = ncu_values(ncu, exe, [a.ncu_metric] + list(LAUNCH_METRICS), key, tmp)
                if vals is None:
                    print(f"  ncu: {msg}")
                    continue
                inst, launches = sum(vals[a.ncu_metric]), len(vals[a.ncu_metric])
                print(f"  ncu {a.ncu_metric}: {inst:.0f} over {launches} launches "
                      f"(program: {prog['kernels'][key]['launches']})")
                if inst > 0:
                    print(f"  ratio gins / {a.ncu_metric} = {gins / inst:.3e} "
                          f"(one sample per {inst / gins:.0f} warp instructions)" if gins else
                          f"  ratio gins / {a.ncu_metric} = 0")
                # The launch configuration as CUPTI gave it to cctdb, against
                # ncu's reading of the same launches: exact.
                for ncu_metric, ours in LAUNCH_METRICS.items():
                    theirs = sorted(set(vals[ncu_metric]))
                    mine = sorted({(n.get("exclusive") or {}).get(ours) for n in nodes} - {None})
                    ok = len(theirs) == 1 and mine == theirs
                    print(f"  {'PASS' if ok else 'FAIL'} {ours}: cctdb {mine}, ncu {ncu_metric} {theirs}")
                    failed = failed or not ok
        print()
        return result(failed)


if __name__ == "__main__":
    sys.exit(main())
