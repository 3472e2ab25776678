#!/usr/bin/env python3
"""GPU launch-overhead benchmark (not a test).

    python3 bench/gpu_launch_bench.py [--build build] [--repeat 5] [--launches 100000] [--depth 32]

Workload: bench/gpu_launch_bench.cu, built here with nvcc (-O2, sm_80/sm_90
and compute_90 PTX) into a temporary directory: 10^5 launches of an empty
kernel from CPU stack depth 32, then one cudaDeviceSynchronize; the program
times the launch loop itself (CLOCK_MONOTONIC) and writes ns per launch.
Variants, interleaved round-robin so drift hits every variant alike:
  bare          the program alone
  cct gpu off   cct-record --gpu off (CPU sampling and NVTX only)
  cct gpu on    cct-record --gpu on (CUPTI callbacks + activity tracing)
Reports the median ns per launch of each, the per-launch overhead of
cct-record --gpu on, (recorded - bare) / launches in µs, and the ratio, and
the whole-process wall time and peak RSS (bench_util.run_rss). Target (GPU
issue): <= 3 µs per launch. SKIP (exit 0) without a GPU or nvcc.
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "gpu"))
from bench_util import run_rss  # noqa: E402
from gpu_util import bench_args, gpu_and_nvcc, nvcc_argv, scratch_dir, tool_path  # noqa: E402

TARGET_US = 3.0


def main():
    ap = bench_args(__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--launches", type=int, default=100000)
    ap.add_argument("--depth", type=int, default=32, help="CPU stack depth of the launch loop")
    ap.add_argument("--sync-every", type=int, default=0,
                    help="cudaDeviceSynchronize every N launches (0: only at the end)")
    a = ap.parse_args()
    found = gpu_and_nvcc(a.nvcc)
    if not found:
        return 0
    why, nvcc = found
    rec = tool_path(a.build, "cct-record")
    if not os.access(rec, os.X_OK):
        sys.exit(f"bench: {rec} not found (build first, or pass --build DIR)")
    here = os.path.dirname(os.path.abspath(__file__))
    with scratch_dir("cct-gpu-launch-") as tmp:
        exe = f"{tmp}/gpu-launch-bench"
        subprocess.run(nvcc_argv(nvcc, f"{here}/gpu_launch_bench.cu", exe, libs=()), check=True)
        out = f"{tmp}/out.json"
        prog = [exe, str(a.launches), str(a.depth), str(a.sync_every), out]
        variants = {
            "bare": prog,
            "cct gpu off": [rec, "--gpu", "off", "-o", f"{tmp}/off.db", "--"] + prog,
            "cct gpu on": [rec, "--gpu", "on", "-o", f"{tmp}/on.db", "--"] + prog,
        }
        per = {k: [] for k in variants}
        per_sync = {k: [] for k in variants}
        walls = {k: [] for k in variants}
        rss = {k: [] for k in variants}
        run_rss(prog)  # warm up: driver, caches
        for _ in range(a.repeat):
            for k, argv in variants.items():
                if os.path.exists(out):
                    os.unlink(out)
                w, m = run_rss(argv)
                with open(out) as f:
                    j = json.loads(f.read())
                per[k].append(j["ns_per_launch"])
                per_sync[k].append(j["ns_per_launch_with_sync"])
                walls[k].append(w)
                rss[k].append(m)
        print(f"workload: {a.launches} empty-kernel launches at stack depth {a.depth}"
              f"{f', synchronize every {a.sync_every}' if a.sync_every else ''}; {why}")
        print(f"median of {a.repeat}, interleaved")
        print(f"{'variant':<12} {'ns/launch':>10} {'+sync':>10} {'min':>9} {'max':>9} {'wall s':>8} {'RSS MiB':>8}")
        rows = {}
        for k in variants:
            rows[k] = {"ns_per_launch": statistics.median(per[k]), "ns_per_launch_all": per[k],
                       "ns_per_launch_with_sync": statistics.median(per_sync[k]),
                       "wall_s": statistics.median(walls[k]), "max_rss_mib": max(rss[k])}
            print(f"{k:<12} {rows[k]['ns_per_launch']:10.1f} {rows[k]['ns_per_launch_with_sync']:10.1f} "
                  f"{min(per[k]):9.1f} {max(per[k]):9.1f} {rows[k]['wall_s']:8.3f} {rows[k]['max_rss_mib']:8.1f}")
        bare = rows["bare"]["ns_per_launch"]
        for k in ("cct gpu off", "cct gpu on"):
            over_us = (rows[k]["ns_per_launch"] - bare) / 1000.0
            over_sync_us = (rows[k]["ns_per_launch_with_sync"] - rows["bare"]["ns_per_launch_with_sync"]) / 1000.0
            rows[k]["overhead_us_per_launch"] = over_us
            rows[k]["overhead_us_per_launch_with_sync"] = over_sync_us
            rows[k]["ratio"] = rows[k]["ns_per_launch"] / bare if bare else None
            print(f"{k}: overhead {over_us:.3f} us per launch ({over_sync_us:.3f} us counting the final synchronize), "
                  f"ratio {rows[k]['ratio']:.2f}x bare")
        on = rows["cct gpu on"]["overhead_us_per_launch"]
        print(f"target: cct gpu on overhead <= {TARGET_US:g} us per launch -> "
              f"{on:.3f} us, {'met' if on <= TARGET_US else 'NOT met'}")
        print(json.dumps(rows))
        return 0


if __name__ == "__main__":
    sys.exit(main())
