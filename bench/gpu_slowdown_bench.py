#!/usr/bin/env python3
"""Slowdown of a kernel-bound program under cct-record (not a test).

    python3 bench/gpu_slowdown_bench.py [--build build] [--repeat 3] [--periods 12,15,18]

Workload: tests/gpu/gpu_e2e.cu built here with nvcc, its kernels made 4x
longer (-DSCALE_ITERS=262144 -DADD_ITERS=524288: about 6.5 and 4.4 ms per
launch on an H200, 27 launches), so its compute phase is kernel-bound. The
program times that phase itself (compute_wall_s, CLOCK_MONOTONIC around the
launches and their event waits) and the whole process (wall_s, from the
start of main).

Variants, interleaved round-robin so drift hits every variant alike:
  bare               the program alone
  gpu on             cct-record --gpu on (CUPTI callbacks + activity tracing)
  pcs default        cct-record --gpu on --gpu-pc-sampling (cctdb's period, 2^15)
  pcs 2^N            ... --gpu-pc-period N, for each N of --periods (CUPTI's
                     own default is 2^11 on an H200)
Reports per variant the median compute phase and whole-process wall time,
their ratios to bare, and the PC samples taken (gins). Targets (GPU issue):
gpu on <= 1.05x bare on the compute phase, PC sampling <= 3x. SKIP (exit 0)
without a GPU or nvcc.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "gpu"))
from gpu_util import (bench_args, build_cuda, gpu_and_nvcc, program_json, run, run_show, scratch_dir,  # noqa: E402
                      tools)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(os.path.dirname(HERE), "tests", "gpu", "gpu_e2e.cu")
TRACE_TARGET = 1.05
PCS_TARGET = 3.0


def main():
    ap = bench_args(__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--periods", default="11,13,17",
                    help="comma-separated --gpu-pc-period values to measure besides the default")
    a = ap.parse_args()
    found = gpu_and_nvcc(a.nvcc)
    if not found:
        return 0
    why, nvcc = found
    t = tools(a.build)
    periods = [int(p) for p in a.periods.split(",") if p.strip()]
    with scratch_dir("cct-gpu-slowdown-") as tmp:
        exe = os.path.join(tmp, "gpu_e2e")
        build_cuda(nvcc, SOURCE, exe, None, ["-DSCALE_ITERS=262144", "-DADD_ITERS=524288"])
        rec = t["cct-record"]
        variants = {"bare": (None, [exe]),
                    "gpu on": (f"{tmp}/on.db", [rec, "--gpu", "on", "-o", f"{tmp}/on.db", "--name", "v", "--", exe]),
                    "pcs default": (f"{tmp}/pcs.db", [rec, "--gpu", "on", "--gpu-pc-sampling", "-o", f"{tmp}/pcs.db",
                                                      "--name", "v", "--", exe])}
        for p in periods:
            db = f"{tmp}/pcs{p}.db"
            variants[f"pcs 2^{p}"] = (db, [rec, "--gpu", "on", "--gpu-pc-sampling", "--gpu-pc-period", str(p),
                                           "-o", db, "--name", "v", "--", exe])
        compute = {k: [] for k in variants}
        wall = {k: [] for k in variants}
        samples = {k: [] for k in variants}
        run([exe], quiet=True)  # warm up: driver, caches
        failed = {}
        for _ in range(a.repeat):
            for k, (db, argv) in variants.items():
                if k in failed:
                    continue
                if db and os.path.exists(db):
                    os.unlink(db)
                r = run(argv, quiet=True, check=False)
                if r.returncode != 0:
                    # One variant failing (a period CUPTI refuses) leaves the others to measure.
                    failed[k] = f"exit {r.returncode}: " + " | ".join(r.stderr.strip().splitlines()[-3:])
                    print(f"{k}: {' '.join(argv)}: {failed[k]}")
                    continue
                prog = program_json(r.stdout)
                compute[k].append(prog["compute_wall_s"])
                wall[k].append(prog["wall_s"])
                if db and k.startswith("pcs"):
                    rec_meta = (run_show(t["cct-query"], db, "v").get("runs") or [{}])[0]
                    samples[k].append((rec_meta.get("diagnostics") or {}).get("gpu_pc_samples", 0))
        if "bare" in failed:
            print("bench: the program failed on its own: nothing to compare with")
            return 1
        print(f"workload: gpu_e2e with 4x longer kernels (27 launches); {why}")
        print(f"median of {a.repeat}, interleaved")
        print(f"{'variant':<12} {'compute s':>10} {'ratio':>7} {'wall s':>8} {'ratio':>7} {'PC samples':>12}")
        rows = {}
        for k in variants:
            if k in failed:
                continue
            rows[k] = {"compute_s": statistics.median(compute[k]), "compute_s_all": compute[k],
                       "wall_s": statistics.median(wall[k]), "wall_s_all": wall[k]}
            if samples[k]:
                rows[k]["pc_samples"] = statistics.median(samples[k])
            rows[k]["compute_ratio"] = rows[k]["compute_s"] / rows["bare"]["compute_s"]
            rows[k]["wall_ratio"] = rows[k]["wall_s"] / rows["bare"]["wall_s"]
            print(f"{k:<12} {rows[k]['compute_s']:10.4f} {rows[k]['compute_ratio']:7.3f} {rows[k]['wall_s']:8.3f} "
                  f"{rows[k]['wall_ratio']:7.3f} {rows[k].get('pc_samples', ''):>12}")
        on = rows["gpu on"]["compute_ratio"] if "gpu on" in rows else float("nan")
        print(f"target: gpu on <= {TRACE_TARGET}x bare (compute phase) -> {on:.3f}x, "
              f"{'met' if on <= TRACE_TARGET else 'NOT met'}")
        for k in rows:
            if k.startswith("pcs"):
                r = rows[k]["wall_ratio"]
                print(f"target: {k} <= {PCS_TARGET:g}x bare (whole process) -> {r:.2f}x "
                      f"(compute phase {rows[k]['compute_ratio']:.2f}x), {'met' if r <= PCS_TARGET else 'NOT met'}")
        print(json.dumps(rows))
        return 0


if __name__ == "__main__":
    sys.exit(main())
