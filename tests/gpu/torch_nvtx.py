#!/usr/bin/env python3
"""A small PyTorch training loop with NVTX ranges, for tests/gpu/check_torch.py.

    python3 tests/gpu/torch_nvtx.py [--steps 30] [--size 2048] [--torch-profile OUT.json]

Each step: NVTX "step" around NVTX "forward" (matmul, relu, matmul, softmax,
a loss) and NVTX "backward" (loss.backward()), then an SGD update inside
"step". The same work runs with or without --torch-profile; with it, the whole
workload (tensor creation included) runs under torch.profiler (CPU + CUDA
activities) and OUT.json gets the per-kernel totals:
  {"kernels": {NAME: {"self_device_us": total, "count": launches}}, "total_us": sum, ...}
Always prints one JSON line on stdout: steps, sizes, the wall time of the loop.
"""
import argparse
import json
import sys
import time

import torch


def workload(steps, size, batch):
    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(1234)
    x = torch.randn(batch, size, device=dev, generator=g)
    w1 = (torch.randn(size, size, device=dev, generator=g) / size ** 0.5).requires_grad_()
    w2 = (torch.randn(size, size, device=dev, generator=g) / size ** 0.5).requires_grad_()
    lr = 1e-3
    for _ in range(steps):
        torch.cuda.nvtx.range_push("step")
        torch.cuda.nvtx.range_push("forward")
        h = torch.relu(x @ w1)
        y = torch.softmax(h @ w2, dim=1)
        loss = (y * y).sum()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("backward")
        loss.backward()
        torch.cuda.nvtx.range_pop()
        with torch.no_grad():
            w1 -= lr * w1.grad
            w2 -= lr * w2.grad
            w1.grad = None
            w2.grad = None
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    return float(loss.detach().cpu())


def self_device_us(evt):
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        v = getattr(evt, attr, None)
        if v is not None:
            return float(v)
    return 0.0


def is_kernel(evt):
    dt = getattr(evt, "device_type", None)
    if dt is None or "CUDA" not in str(dt):
        return False
    name = evt.key if hasattr(evt, "key") else evt.name
    return not (name.startswith("Memcpy") or name.startswith("Memset"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--torch-profile", metavar="OUT.json")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_nvtx: CUDA is not available", file=sys.stderr)
        return 3
    # The same kernels in both modes: no TF32 heuristics that depend on state.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    start = time.monotonic()
    if a.torch_profile:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            loss = workload(a.steps, a.size, a.batch)
        kernels = {}
        for evt in prof.key_averages():
            if not is_kernel(evt):
                continue
            k = kernels.setdefault(evt.key, {"self_device_us": 0.0, "count": 0})
            k["self_device_us"] += self_device_us(evt)
            k["count"] += int(evt.count)
        out = {"kernels": kernels, "total_us": sum(k["self_device_us"] for k in kernels.values()),
               "launches": sum(k["count"] for k in kernels.values()), "torch": torch.__version__,
               "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0)}
        with open(a.torch_profile, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
    else:
        loss = workload(a.steps, a.size, a.batch)
    wall = time.monotonic() - start
    print(json.dumps({"program": "torch_nvtx", "steps": a.steps, "size": a.size, "batch": a.batch,
                      "loss": loss, "wall_s": wall, "profiled": bool(a.torch_profile)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
