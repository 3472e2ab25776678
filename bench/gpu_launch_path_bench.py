#!/usr/bin/env python3
"""The collector's CPU-side cost per GPU launch, without a GPU (not a test).

    python3 bench/gpu_launch_path_bench.py [--build build] [--repeat 5] [--launches 100000]

bench/launch_path_bench.cc makes 10^5 kernel launches through the tests' fake
CUDA (tests/collector/programs/fake_gpu.cc) at stack depth 16 and 64 below
main and times its launch loop. Bare, a launch is the fake's own work (it
builds a CUPTI kernel record); under `cct-record --gpu on` with the fake
adapter (CCT_GPU_ADAPTER), each launch also runs the collector's launch path:
the on_launch callback, unwinding, trimming the CUDA frames, merging NVTX
ranges, the thread's launch trie and the correlation table — the code a real
launch runs after CUPTI's API callback. CUPTI's own cost per launch is not in
this figure (bench/gpu_launch_bench.py measures the whole on a GPU).
Interleaved round-robin; median ns per launch of each variant, and the
difference, against the 3 us per launch target of the GPU issue.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile


def launch_ns(argv, env):
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("ns_per_launch "):
            return float(line.split()[1])
    sys.exit(f"bench: no ns_per_launch from {' '.join(argv)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--launches", type=int, default=100000)
    args = ap.parse_args()
    b = os.path.abspath(args.build)
    prog = os.path.join(b, "bench", "launch-path-bench")
    fake = os.path.join(b, "tests", "collector", "libcct-test-fakegpu.so")
    record = os.path.join(b, "tools", "cct-record")
    for p in (prog, fake, record):
        if not os.path.exists(p):
            sys.exit(f"bench: {p} is missing (build with the CUDA toolkit's headers present)")
    env = dict(os.environ, CCT_GPU_ADAPTER=fake)
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "bench.db")
        print(f"{args.launches} launches per run, {args.repeat} runs per variant, interleaved")
        print(f"{'depth':>5}  {'bare ns':>8}  {'recorded ns':>11}  {'collector ns':>12}  target")
        for depth in (16, 64):
            bare, rec = [], []
            for _ in range(args.repeat):
                bare.append(launch_ns([prog, str(args.launches), str(depth)], env))
                rec.append(launch_ns([record, "-o", db, "--gpu", "on", "--", prog, str(args.launches), str(depth)], env))
            mb, mr = statistics.median(bare), statistics.median(rec)
            print(f"{depth:>5}  {mb:>8.0f}  {mr:>11.0f}  {mr - mb:>12.0f}  <= 3000 ns per launch (whole path, with CUPTI)")


if __name__ == "__main__":
    main()
