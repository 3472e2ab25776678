#!/usr/bin/env python3
"""Real-GPU check of `cct-record --trace` (issue 21): are GPU kernels and
copies placed in time where they happened, on the trace's clock?

    python3 tests/gpu/check_trace.py [--build build] [--python python3] [--keep]
                                     [--save-fixtures [--fixtures tests/data/gpu_trace]]

Needs an NVIDIA GPU and nvcc; prints "SKIP: no GPU" and exits 0 without
them. Standard library only (the Perfetto file is read with a small
protobuf wire-format reader below, not with Perfetto's tools, which no
package here ships).

1. Builds tests/gpu/trace_gpu.cu and records it:
   `cct-record --trace --gpu on -o DB --name traced -- trace_gpu`. The
   program reads CLOCK_REALTIME (the trace's clock) around each piece of GPU
   work and waits for the GPU before its second reading, so each kernel's
   and the copy's true interval lies inside [start, end] as it printed it;
   the kernels spin on the GPU's timer for a duration set by the program.
   Then exports the run with `cct-query export traced --to perfetto` and
   reads it back. FAIL-able:
     - the GPU stream tracks hold 6 spin_kernel slices (warm-up + 5 phases)
       and the copy's slice with `bytes` == the program's;
     - each phase's kernel slice lies inside the program's [start, end] for
       that phase, give or take --slack (default 100 us: the clock offset
       the CUPTI adapter measured once, `timestamp_offset_ns`, and the
       two clocks' drift over the run);
     - each kernel slice's duration within 2% + 20 us of what it spun;
     - the copy's slice inside the program's copy interval (same slack);
     - the main thread's NVTX "phase" slices: 5, each holding the
       program's interval for it, starting at most 1 ms before it;
     - `cct-query iterations traced --range phase`: 5 instances whose
       start_time_ns and duration agree with the Perfetto slices (1 us);
     - `cct-query tree traced@range=phase#K`: one spin_kernel launch per
       window, its gker within 2% + 20 us of what phase K spun;
     - the bytes-in-flight counter peaks at the copy's bytes;
     - no dropped trace events (`trace_dropped_events`).
2. With PyTorch (CUDA) in --python: records tests/gpu/torch_nvtx.py
   (--steps 8 --size 1024) with --trace and --nvtx-inherit main, exports it,
   and checks: 8 "step" slices on the main thread; as many GPU kernel slices
   as the tree's gker:count;
   and (issue 16) as many kernel slices whose launch path goes through the
   Python function `workload` of torch_nvtx.py as the tree has launches
   under that function (and at least one).
Prints every number it compares; ends with RESULT: PASS or RESULT: FAIL.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_util import (Checks, build_cuda, gpu_and_nvcc, program_json, query_json, result, run,  # noqa: E402
                      run_recorded, run_show, run_tree, scratch_dir, tools, val, walk)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "trace_gpu.cu")
TORCH_PROGRAM = os.path.join(HERE, "torch_nvtx.py")


# ------------------------------------------------------------ Perfetto, read back

def varint(buf, i):
    v, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, i
        shift += 7


def fields(buf):
    """(field number, value) of a protobuf message: ints for varints, bytes
    for length-delimited fields; fixed-width fields as bytes."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            ln, i = varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt} at byte {i}")
        yield f, v


def read_perfetto(path):
    """The trace as {"tracks": {uuid: {"name", "tid", "parent"}}, "slices":
    [{"track", "name", "start", "end", "args"}], "counters": {uuid: [(ts,
    value)]}}. Slices are paired BEGIN/END per track (they nest)."""
    with open(path, "rb") as f:
        data = f.read()
    tracks, slices, counters, open_ = {}, [], {}, {}
    for fno, packet in fields(data):
        if fno != 1:
            continue
        ts, event, desc = None, None, None
        for f, v in fields(packet):
            if f == 8:
                ts = v
            elif f == 11:
                event = v
            elif f == 60:
                desc = v
        if desc is not None:
            d = {"name": "", "tid": None, "parent": None}
            uuid = 0
            for f, v in fields(desc):
                if f == 1:
                    uuid = v
                elif f == 2:
                    d["name"] = v.decode()
                elif f == 5:
                    d["parent"] = v
                elif f == 4:
                    for g, w in fields(v):
                        if g == 2:
                            d["tid"] = w
                        elif g == 5 and not d["name"]:
                            d["name"] = w.decode()
            tracks[uuid] = d
        if event is not None:
            e = {"type": 0, "track": 0, "name": "", "args": {}, "counter": None}
            for f, v in fields(event):
                if f == 9:
                    e["type"] = v
                elif f == 11:
                    e["track"] = v
                elif f == 23:
                    e["name"] = v.decode(errors="replace")
                elif f == 30:
                    e["counter"] = v - (1 << 64) if v >= 1 << 63 else v
                elif f == 4:
                    name, value = "", None
                    for g, w in fields(v):
                        if g == 10:
                            name = w.decode()
                        elif g in (3, 4):
                            value = w
                        elif g == 6:
                            value = w.decode(errors="replace")
                    e["args"][name] = value
            if e["type"] == 1:
                open_.setdefault(e["track"], []).append((ts, e))
            elif e["type"] == 2:
                stack = open_.get(e["track"])
                if stack:
                    start, b = stack.pop()
                    slices.append({"track": e["track"], "name": b["name"], "start": start, "end": ts,
                                   "args": b["args"]})
            elif e["type"] == 4:
                counters.setdefault(e["track"], []).append((ts, e["counter"]))
    return {"tracks": tracks, "slices": slices, "counters": counters}


def track_name(trace, uuid):
    return trace["tracks"].get(uuid, {}).get("name", "")


def gpu_slices(trace):
    return sorted((s for s in trace["slices"] if track_name(trace, s["track"]).startswith("GPU ")),
                  key=lambda s: s["start"])


# ------------------------------------------------------------ the checks

def export(query, db, sel, path):
    run([query, "-d", db, "export", sel, "--to", "perfetto", "-o", path])
    print(f"  {path}: {os.path.getsize(path)} bytes")
    return read_perfetto(path)


def save_fixtures(dest, db, prog, show):
    """tests/data/gpu_trace/ for CI's replay (tests/exporters/perfetto_test.cc):
    the recorded database and what the program printed about itself."""
    os.makedirs(dest, exist_ok=True)
    shutil.copyfile(db, os.path.join(dest, "trace_gpu.db"))
    facts = (show.get("gpu") or {}).get("facts") or {}
    with open(os.path.join(dest, "trace_gpu.program.json"), "w") as f:
        json.dump({"program": prog, "run": "traced",
                   "recorded": f"{show.get('gpu_model')} (driver {show.get('driver_version')}, CUPTI API "
                               f"{facts.get('cupti_api')}), tests/gpu/check_trace.py --save-fixtures",
                   "note": "program: the JSON line trace_gpu printed"}, f, indent=1)
    print(f"fixtures written to {dest}: trace_gpu.db, trace_gpu.program.json (.gitignore ignores *.db: "
          "commit it with git add -f)")


def check_program(t, tmp, nvcc, slack_ns, c, fixtures=None):
    exe = build_cuda(nvcc, SOURCE, os.path.join(tmp, "trace_gpu"))
    db = os.path.join(tmp, "trace.db")
    r = run_recorded([t["cct-record"], "--trace", "--gpu", "on", "-o", db, "--name", "traced", "--", exe])
    prog = program_json(r.stdout)
    phases, copy = prog["phases"], prog["copy"]
    show = run_show(t["cct-query"], db, "traced")["runs"][0]
    diag = show.get("diagnostics") or {}
    facts = ((show.get("gpu") or {}).get("facts") or {})
    print(f"  gpu facts: timestamp_offset_ns {facts.get('timestamp_offset_ns')}, model {show.get('gpu_model')}, "
          f"driver {show.get('driver_version')}")
    print(f"  diagnostics: trace_events {diag.get('trace_events')}, trace_dropped_events "
          f"{diag.get('trace_dropped_events', 0)}")
    c.true("no dropped trace events", diag.get("trace_dropped_events", 0) == 0)
    if fixtures:
        save_fixtures(fixtures, db, prog, show)

    trace = export(t["cct-query"], db, "traced", os.path.join(tmp, "traced.perfetto-trace"))
    gpu = gpu_slices(trace)
    kernels = [s for s in gpu if "spin_kernel" in s["name"]]  # (anonymous namespace)::spin_kernel(...)
    copies = [s for s in gpu if s["name"] == "copyin"]
    print(f"  GPU slices: {len(gpu)} ({len(kernels)} spin_kernel, {len(copies)} copyin) on tracks "
          f"{sorted({track_name(trace, s['track']) for s in gpu})}")
    c.true(f"spin_kernel slices {len(kernels)} == {len(phases) + 1}", len(kernels) == len(phases) + 1)
    for k, (p, s) in enumerate(zip(phases, kernels[1:]), 1):
        lead, trail = s["start"] - p["start"], p["end"] - s["end"]
        dur = s["end"] - s["start"]
        print(f"  phase {k}: program [{p['start']}, {p['end']}] ({(p['end'] - p['start']) / 1e6:.3f} ms); kernel "
              f"starts {lead / 1e3:+.1f} us after it, ends {trail / 1e3:.1f} us before its end; "
              f"duration {dur / 1e6:.4f} ms, spun {p['spin_ns'] / 1e6:.3f} ms ({dur / p['spin_ns']:.4f}x)")
        c.true(f"phase {k}: kernel inside the program's interval (slack {slack_ns / 1e3:.0f} us)",
               lead >= -slack_ns and trail >= -slack_ns)
        c.true(f"phase {k}: kernel duration", abs(dur - p["spin_ns"]) <= 0.02 * p["spin_ns"] + 20000)
    if c.true(f"copyin slices {len(copies)} == 1", len(copies) == 1):
        s = copies[0]
        print(f"  copy: program [{copy['start']}, {copy['end']}]; slice starts {(s['start'] - copy['start']) / 1e3:+.1f}"
              f" us after it, ends {(copy['end'] - s['end']) / 1e3:.1f} us before its end; bytes {s['args'].get('bytes')}")
        c.true(f"copy bytes == {copy['bytes']}", s["args"].get("bytes") == copy["bytes"])
        c.true("copy inside the program's interval",
               s["start"] >= copy["start"] - slack_ns and s["end"] <= copy["end"] + slack_ns)
    in_flight = [v for uuid, pts in trace["counters"].items() if "in flight" in track_name(trace, uuid)
                 for _, v in pts]
    c.true(f"bytes in flight peak {max(in_flight, default=0)}", max(in_flight, default=0) == copy["bytes"])

    ranges = sorted((s for s in trace["slices"] if s["name"] == "phase"), key=lambda s: s["start"])
    c.true(f"NVTX 'phase' slices {len(ranges)} == {len(phases)}", len(ranges) == len(phases))
    for k, (p, s) in enumerate(zip(phases, ranges), 1):
        ok = s["start"] <= p["start"] and s["end"] >= p["end"] and p["start"] - s["start"] <= 1000000
        c.true(f"phase {k}: range [{s['start']}, {s['end']}] holds the program's interval (starts "
               f"{(p['start'] - s['start']) / 1e3:.1f} us before, ends {(s['end'] - p['end']) / 1e3:.1f} us after)", ok)

    it = query_json(t["cct-query"], db, "iterations", "traced", "--range", "phase")
    inst = it.get("iterations", [])
    c.true(f"iterations --range phase: {len(inst)} instances", len(inst) == len(phases))
    for k, (i, s) in enumerate(zip(inst, ranges), 1):
        d_start = abs(i["start_time_ns"] - s["start"])
        d_dur = abs(i["duration"] * 1e9 - (s["end"] - s["start"]))
        c.true(f"iteration {k}: start and duration agree with the slice ({d_start} ns, {d_dur:.0f} ns apart)",
               d_start <= 1000 and d_dur <= 1000)
    for k, p in enumerate(phases, 1):
        tree = run_tree(t["cct-query"], db, f"traced@range=phase#{k}", ["gker", "gker:count"])
        count = sum(val(n, "gker:count") for n, _ in walk(tree))
        gker = sum(val(n, "gker") for n, _ in walk(tree))
        gker_ns = gker * 1e9  # gker is in seconds
        c.true(f"traced@range=phase#{k}: gker:count {count} == 1, gker {gker_ns / 1e6:.4f} ms, spun "
               f"{p['spin_ns'] / 1e6:.3f} ms",
               count == 1 and abs(gker_ns - p["spin_ns"]) <= 0.02 * p["spin_ns"] + 20000)


def check_torch(t, tmp, python, c):
    probe = subprocess.run([python, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"  torch: not checked (no torch with CUDA in {python})")
        return
    db = os.path.join(tmp, "torch.db")
    steps = 8
    run_recorded([t["cct-record"], "--trace", "--gpu", "on", "--nvtx-inherit", "main", "-o", db, "--name", "torch", "--",
                  python, TORCH_PROGRAM, "--steps", str(steps), "--size", "1024"])
    trace = export(t["cct-query"], db, "torch", os.path.join(tmp, "torch.perfetto-trace"))
    show = run_show(t["cct-query"], db, "torch")["runs"][0]
    diag = show.get("diagnostics") or {}
    print("  python diagnostics: " + ", ".join(f"{k} {v}" for k, v in sorted(diag.items()) if k.startswith("python")))
    step_slices = [s for s in trace["slices"] if s["name"] == "step"]
    c.true(f"torch: 'step' slices {len(step_slices)} == {steps}", len(step_slices) == steps)
    tree = run_tree(t["cct-query"], db, "torch", ["gker:count"])
    launches = sum(val(n, "gker:count") for n, _ in walk(tree))
    kernels = [s for s in gpu_slices(trace) if s["name"] not in
               ("copyin", "copyout", "copy", "memset", "alloc", "free", "sync")]
    c.true(f"torch: GPU kernel slices {len(kernels)} == the tree's gker:count {launches}", len(kernels) == launches)
    if kernels and step_slices:
        first, last = min(s["start"] for s in step_slices), max(s["end"] for s in step_slices)
        in_steps = sum(1 for s in kernels if s["start"] >= first)
        print(f"  torch: {in_steps} of {len(kernels)} kernels start after the first step's start; the last ends "
              f"{(max(s['end'] for s in kernels) - last) / 1e6:+.3f} ms after the last step's end")
    # The trace and the tree agree on which launches came from the Python
    # function workload (the backward pass's, from PyTorch's autograd
    # thread, have no Python caller).
    via = [s for s in kernels if "workload" in str(s["args"].get("launch path", ""))]
    under = sum(val(n, "gker:count") for n, anc in walk(tree) if n.get("kind") == "kernel" and
                any(x.get("kind") == "function" and x.get("name") == "workload" for x in anc))
    example = next((s["args"].get("launch path") for s in via), None) or next(
        (s["args"].get("launch path") for s in kernels), None)
    print(f"  torch: a launch path: {str(example)[:600]}")
    c.true(f"torch: kernel slices launched through the Python function workload {len(via)} == the tree's "
           f"launches under it {under}", bool(via) and len(via) == under)
    run([t["cct-query"], "-d", db, "timeline", "torch", "--bucket", "50"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory or device bundle with tools/cct-record")
    ap.add_argument("--python", default=sys.executable, help="the Python with torch (default: this one)")
    ap.add_argument("--nvcc")
    ap.add_argument("--slack-us", type=float, default=100.0)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--save-fixtures", action="store_true",
                    help="write the trace_gpu recording and its program line into --fixtures")
    ap.add_argument("--fixtures", default=os.path.join(HERE, "..", "data", "gpu_trace"))
    a = ap.parse_args()
    found = gpu_and_nvcc(a.nvcc)
    if found is None:
        return 0
    _, nvcc = found
    t = tools(a.build)
    c = Checks("trace")
    with scratch_dir("cct-trace-", a.keep) as tmp:
        print("== trace_gpu.cu under cct-record --trace")
        check_program(t, tmp, nvcc, int(a.slack_us * 1000), c, a.fixtures if a.save_fixtures else None)
        print("== torch_nvtx.py under cct-record --trace")
        check_torch(t, tmp, a.python, c)
    return result(c.failed())


if __name__ == "__main__":
    sys.exit(main())
