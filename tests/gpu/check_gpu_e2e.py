#!/usr/bin/env python3
"""End-to-end check of cct-record's GPU tracing on a real GPU.

    python3 tests/gpu/check_gpu_e2e.py [--build build] [--save-fixtures [--fixtures tests/data/gpu]]

Needs a machine with an NVIDIA GPU, its driver, and nvcc (CUDA toolkit); on a
machine without a GPU it prints "SKIP: no GPU" and exits 0. Standard library
only.

What it does:
  1. builds tests/gpu/gpu_e2e.cu with nvcc into a temporary directory;
  2. runs it bare once (its JSON line: what it did and measured);
  3. runs it under `cct-record --gpu on -o DB --name gpu_e2e`, then again with
     `--gpu-raw DIR --name gpu_e2e_raw`, into the same DB;
  4. for each recorded run reads `cct-query tree RUN --format json` with every
     metric of the run (`-m` for each name `cct-query metrics RUN` lists), and
     `cct-query show RUN --format json` (state, diagnostics, metadata);
  5. compares, printing every number (measured, expected, ratio):
       FAIL-able (the contract):
         - gxcopy:h2d summed over the NVTX "upload" subtree == the program's
           H2D bytes (exact), all of it on <gpu copyin> nodes whose launching
           CPU function is upload(...);
         - gxcopy:d2h over "download" == the D2H bytes (exact), on
           <gpu copyout> nodes launched by download(...);
         - under "compute": kernel nodes (kind "kernel") under a <gpu kernel>
           node launched by compute(...): gker:count per kernel == the launch
           counts (20 and 7, exact), gker per kernel within --tolerance (10%)
           of the CUDA-event time the bare run measured (the recorded run's
           events also count the GPU idling while the host is slow between
           an event and its launch: shown, not checked);
         - gmset:bytes == the memset bytes (exact) on <gpu memset> nodes
           launched by clear(...), and the run's total gmset:bytes likewise;
         - the run is complete with exit status 0; the raw run's DIR holds a
           non-empty dump; when cct-import knows `--from cupti-raw`, each dump
           replays to the same exact byte and launch totals; the diagnostic
           gpu_dropped_records is 0;
       WARN (reported; --strict makes them fail): run totals of the copy
         bytes and launches (nothing outside the ranges), copy counts, kernel
         names exactly as c++filt prints them, launch configuration
         (gker:blk_thr, gker:blks, gker:thr_reg) against the program's,
         gmem:dev / gmem:count under "alloc", gsync under "finish", frees
         under "release", frames between the NVTX range and the placeholder,
         other non-zero gpu_* diagnostics (gpu_unknown_activities,
         gpu_lost_launch_sites, ...), GPU model / driver / CUDA version unset.
  6. with --save-fixtures, copies the DB, the raw dump and a manifest (the
     program's JSON, versions, the commands) into --fixtures.

Exit status: 0 all checks passed (or SKIP), 1 a check failed, 2 a setup error
(tools missing, build failed, a command failed).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCE = os.path.join(HERE, "gpu_e2e.cu")
sys.path.insert(0, HERE)
from gpu_util import (Checks, base_name, build_cuda, gpu_or_skip, launcher, nvcc_argv, nvcc_or_skip,  # noqa: E402
                      program_json, result, run, run_metrics, run_recorded, run_show, run_tree, scratch_dir, tools,
                      val, walk)


# ------------------------------------------------------------------ setup

def tool_versions(nvcc):
    out = {}
    try:
        out["nvcc"] = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                                     timeout=60).stdout.strip().splitlines()[-1]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        pass
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=60)
        out["gpu"] = r.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return out


# ------------------------------------------------------------ tree helpers

def nvtx_matches(node, name):
    n = node.get("name", "")
    return node.get("kind") == "nvtx" and (n == name or n.endswith("::" + name))


def outermost(root, pred):
    """Nodes matching pred, not counting those inside another match, with ancestors."""
    out = []
    for n, anc in walk(root):
        if pred(n) and not any(pred(a) for a in anc):
            out.append((n, anc))
    return out


# Diagnostics that count what happened (docs/metrics.md), not what went wrong.
COUNT_DIAGNOSTICS = {"gpu_launches", "gpu_buffers", "gpu_records", "gpu_pc_samples"}
def between(ancestors, nvtx_node):
    """Names of the frames strictly between nvtx_node and the end of ancestors."""
    names, seen = [], False
    for a in ancestors:
        if a is nvtx_node:
            seen = True
            continue
        if seen:
            names.append(f"[{a.get('kind')}] {a.get('name')}")
    return names


# ---------------------------------------------------------------- checking

def check_copies(c, root, prog, range_name, placeholder, metric, expected, func, other_metrics):
    """Bytes of one direction under an NVTX range, on their placeholders."""
    ranges = outermost(root, lambda n: nvtx_matches(n, range_name))
    if not c.true(f"NVTX range '{range_name}' is in the tree", bool(ranges), note=f"{len(ranges)} node(s)"):
        return
    c.exact(f"{metric} over the '{range_name}' subtree", sum(val(n, metric, "inclusive") for n, _ in ranges), expected)
    ops = [(n, anc) for r, ranc in ranges for n, anc in walk(r, ranc)
           if n.get("kind") == "gpu-op" and n.get("name") == placeholder]
    c.exact(f"{metric} on {placeholder} nodes in '{range_name}'", sum(val(n, metric) for n, _ in ops), expected,
            note=f"{len(ops)} node(s)")
    for n, anc in ops:
        if val(n, metric) == 0:
            continue
        f, skipped = launcher(anc)
        fname = f.get("name", "") if f else None
        c.true(f"{placeholder} launched by {func}(...)", bool(fname) and fname.startswith(func + "("),
               note=f"launcher {fname!r}" + (f", skipped {skipped}" if skipped else ""))
        extra = [x for x in between(anc, next((a for a in anc if nvtx_matches(a, range_name)), None))
                 if not x.startswith("[nvtx]")]
        c.true(f"{placeholder} directly under the range/{func}", not extra, hard=False,
               note=f"frames in between: {extra}" if extra else "")
    c.exact(f"run total {metric}", val(root, metric, "inclusive"), expected, hard=False,
            note="nothing of this direction outside the range")
    for m, exp in other_metrics:
        c.exact(f"{m} on {placeholder} nodes in '{range_name}'", sum(val(n, m) for n, _ in ops), exp, hard=False)


def check_kernels(c, root, prog, tol, bare):
    kernels = prog["kernels"]
    bases = {base_name(k["name"]) for k in kernels.values()}
    ranges = outermost(root, lambda n: nvtx_matches(n, "compute"))
    if not c.true("NVTX range 'compute' is in the tree", bool(ranges), note=f"{len(ranges)} node(s)"):
        return
    knodes = [(n, anc) for r, ranc in ranges for n, anc in walk(r, ranc) if n.get("kind") == "kernel"]
    c.info("kernel nodes under 'compute'", len(knodes),
           note=", ".join(sorted({n.get("name", "") for n, _ in knodes})))
    for key, k in kernels.items():
        mine = [(n, anc) for n, anc in knodes if base_name(n.get("name", "")) == key]
        if not c.true(f"{key}: kernel node under 'compute'", bool(mine), note=f"{len(mine)} node(s)"):
            continue
        names = sorted({n.get("name", "") for n, _ in mine})
        c.exact(f"{key}: kernel name", names[0] if len(names) == 1 else names, k["name"], hard=False)
        c.exact(f"{key}: gker:count", sum(val(n, "gker:count") for n, _ in mine), k["launches"])
        gker = sum(val(n, "gker") for n, _ in mine)
        # The bare run's events: in the recorded run the host's work between
        # an event and its launch (the launch callback, the first time a
        # launch site is symbolized) can hold the GPU idle inside the event
        # pair, which the events count and the kernel's own time does not.
        b = bare["kernels"][key]
        c.within(f"{key}: gker (s) vs the CUDA events' time (bare run)", gker, b["event_ms"] / 1000.0, tol,
                 note=f"bare events min/max per launch {b['event_ms_min']:.4f}/{b['event_ms_max']:.4f} ms")
        c.info(f"{key}: gker (s) vs this run's events", gker, k["event_ms"] / 1000.0,
               note=f"events min/max per launch {k['event_ms_min']:.4f}/{k['event_ms_max']:.4f} ms")
        count = sum(val(n, "gker:count") for n, _ in mine)
        if count:
            c.info(f"{key}: gker per launch (ms)", gker * 1000 / count, k["event_ms"] / k["launches"])
        for n, anc in mine:
            parent = anc[-1] if anc else {}
            c.true(f"{key}: parent is <gpu kernel>",
                   parent.get("kind") == "gpu-op" and parent.get("name") == "<gpu kernel>",
                   note=f"parent [{parent.get('kind')}] {parent.get('name')!r}")
            f, skipped = launcher(anc[:-1], bases)
            fname = f.get("name", "") if f else None
            c.true(f"{key}: <gpu kernel> launched by compute(...)", bool(fname) and fname.startswith("compute("),
                   note=f"launcher {fname!r}" + (f", skipped {skipped}" if skipped else ""))
            extra = [x for x in between(anc[:-1], next((a for a in anc if nvtx_matches(a, "compute")), None))
                     if not x.startswith("[nvtx]")]
            c.true(f"{key}: <gpu kernel> directly under the range/compute", not extra, hard=False,
                   note=f"frames in between: {extra}" if extra else "")
        # Launch configuration (derived metrics are per-launch averages).
        for metric, expected in (("gker:blk_thr", k["block"]), ("gker:blks", k["grid"]),
                                 ("gker:thr_reg", k["registers"])):
            vals = [n["exclusive"][metric] for n, _ in mine
                    if (n.get("exclusive") or {}).get(metric) is not None]
            if not vals:
                c.add("WARN", f"{key}: {metric}", None, expected, "metric absent")
            elif metric == "gker:thr_reg":
                # CUPTI reports the registers allocated per thread, which the
                # driver may round up from the compiled count that
                # cudaFuncGetAttributes gives (16 for 8 on an H200);
                # check_pc_sampling.py compares it with ncu's
                # launch__registers_per_thread exactly.
                c.true(f"{key}: {metric} >= the compiled registers ({expected})",
                       all(v >= expected for v in vals), hard=False, note=f"measured {vals}")
            else:
                c.exact(f"{key}: {metric}", vals[0] if len(vals) == 1 else vals, expected, hard=False)
    total = sum(val(n, "gker:count") for n, _ in walk(root) if n.get("kind") == "kernel")
    c.exact("run total gker:count on kernel nodes", total, prog["kernel_launches"], hard=False,
            note="no other kernels anywhere")
    c.exact("run total gker:count (inclusive at the root)", val(root, "gker:count", "inclusive"),
            prog["kernel_launches"], hard=False, note="kernel metrics only on kernel nodes")


def check_memset(c, root, prog):
    ranges = outermost(root, lambda n: nvtx_matches(n, "clear"))
    ops = [(n, anc) for r, ranc in ranges for n, anc in walk(r, ranc)
           if n.get("kind") == "gpu-op" and n.get("name") == "<gpu memset>"]
    c.exact("gmset:bytes on <gpu memset> nodes in 'clear'", sum(val(n, "gmset:bytes") for n, _ in ops),
            prog["memset_bytes"], note=f"{len(ops)} node(s)")
    c.exact("run total gmset:bytes", val(root, "gmset:bytes", "inclusive"), prog["memset_bytes"])
    for n, anc in ops:
        f, skipped = launcher(anc)
        fname = f.get("name", "") if f else None
        c.true("<gpu memset> launched by clear(...)", bool(fname) and fname.startswith("clear("),
               note=f"launcher {fname!r}" + (f", skipped {skipped}" if skipped else ""))
    c.exact("gmset:count on <gpu memset> nodes in 'clear'", sum(val(n, "gmset:count") for n, _ in ops),
            prog["memset_count"], hard=False)
    gmset = sum(val(n, "gmset") for n, _ in ops)
    c.true("gmset (time) > 0 in 'clear'", gmset > 0, hard=False, note=f"{gmset:.9g} s")


def soft_op_sums(c, root, range_name, placeholder, pairs):
    ranges = outermost(root, lambda n: nvtx_matches(n, range_name))
    ops = [(n, anc) for r, ranc in ranges for n, anc in walk(r, ranc)
           if n.get("kind") == "gpu-op" and n.get("name") == placeholder]
    if not ops:
        c.add("WARN", f"{placeholder} under '{range_name}'", 0, None, "no such node")
        return
    for metric, expected in pairs:
        got = sum(val(n, metric) for n, _ in ops)
        if expected is None:
            c.true(f"{metric} on {placeholder} in '{range_name}' > 0", got > 0, hard=False, note=f"{got:.9g}")
        else:
            c.exact(f"{metric} on {placeholder} in '{range_name}'", got, expected, hard=False)


def check_run(query, db, sel, prog, tol, shared_cudart, bare):
    """All checks of one recorded run. Returns (Checks, tree, show)."""
    c = Checks(sel)
    print(f"\n== run {sel}", flush=True)
    show = run_show(query, db, sel)
    rec = (show.get("runs") or [{}])[0]
    c.exact("state", rec.get("state"), "complete")
    c.exact("exit status", rec.get("exit_code"), 0)
    diags = rec.get("diagnostics") or {}
    print("  diagnostics: " + (json.dumps(diags, sort_keys=True) if diags else "none"))
    # Dropped records would make every exact comparison below moot: say so first.
    if "gpu_dropped_records" in diags:
        c.exact("diagnostic gpu_dropped_records", diags["gpu_dropped_records"], 0)
    else:
        c.add("WARN", "diagnostic gpu_dropped_records", None, 0, "absent (docs: always present when tracing was on)")
    for k, v in sorted(diags.items()):
        if k.startswith("gpu") and k not in COUNT_DIAGNOSTICS and k != "gpu_dropped_records" and v:
            c.add("WARN", f"diagnostic {k}", v, 0)
    for k in ("gpu_model", "driver_version"):
        c.true(f"metadata {k} set", bool(rec.get(k)), hard=False, note=repr(rec.get(k)))
    # The collector reads the runtime's version from a shared libcudart; nvcc
    # links the runtime statically unless -cudart=shared, and then nothing
    # outside the program can ask it (docs/metrics.md).
    if shared_cudart:
        c.true("metadata cuda_version set (shared libcudart)", bool(rec.get("cuda_version")), hard=False,
               note=repr(rec.get("cuda_version")))
    else:
        c.info("metadata cuda_version (static runtime: not visible to the collector)", rec.get("cuda_version"), None)
    meta = {k: v for k, v in rec.items() if k not in ("env", "diagnostics", "storage_bytes")}
    print("  metadata: " + json.dumps(meta, sort_keys=True)[:3000])
    print("  totals: " + json.dumps(show.get("totals", {}), sort_keys=True))

    metrics = run_metrics(query, db, sel)
    names = [m["name"] for m in metrics]
    print("  metrics: " + " ".join(names))
    for m in ("gker", "gker:count", "gxcopy", "gxcopy:h2d", "gxcopy:d2h", "gmset", "gmset:bytes"):
        c.true(f"metric {m} present", m in names)
    tree = run_tree(query, db, sel, names)

    check_copies(c, tree, prog, "upload", "<gpu copyin>", "gxcopy:h2d", prog["h2d_bytes"], "upload",
                 [("gxcopy:count", len(prog["h2d_copies"]))])
    check_copies(c, tree, prog, "download", "<gpu copyout>", "gxcopy:d2h", prog["d2h_bytes"], "download",
                 [("gxcopy:count", len(prog["d2h_copies"]))])
    check_kernels(c, tree, prog, tol, bare)
    check_memset(c, tree, prog)
    soft_op_sums(c, tree, "alloc", "<gpu alloc>",
                 [("gmem:dev", prog["device_alloc_bytes"]), ("gmem:count", prog["device_alloc_count"]
                                                             + prog["pinned_alloc_count"])])
    soft_op_sums(c, tree, "finish", "<gpu sync>", [("gsync:count", prog["sync"]["device"]), ("gsync", None)])
    soft_op_sums(c, tree, "release", "<gpu free>", [("gmem:free:count", prog["device_free_count"] + 1)])
    for m in ("gxcopy", "gker", "gsync"):
        c.info(f"run total {m} (s)", val(tree, m, "inclusive"))
    return c, tree, show


def replay_raw(tools_, tmp, raw_dir, query, db, sel, prog):
    """Replays each raw dump with cct-import (when it knows cupti-raw) and
    compares the exact totals with the recorded run."""
    c = Checks(f"replay of {raw_dir}")
    print(f"\n== raw dump {raw_dir}", flush=True)
    files = sorted(f for f in glob.glob(os.path.join(raw_dir, "**"), recursive=True) if os.path.isfile(f))
    for f in files:
        print(f"  {os.path.relpath(f, raw_dir)}  {os.path.getsize(f)} bytes")
    if not c.true("raw dump written", any(os.path.getsize(f) > 0 for f in files), note=f"{len(files)} file(s)"):
        return c
    imp = tools_["cct-import"]
    helptext = ""
    if os.access(imp, os.X_OK):
        r = subprocess.run([imp, "--help"], capture_output=True, text=True)
        helptext = r.stdout + r.stderr
    if "cupti-raw" not in helptext:
        c.add("INFO", "replay", note="cct-import has no --from cupti-raw here: not replayed")
        return c
    rdb = os.path.join(tmp, "replay.db")
    rec_tree = run_tree(query, db, sel, [m["name"] for m in run_metrics(query, db, sel)])
    for i, f in enumerate(files):
        if os.path.getsize(f) == 0:
            continue
        name = f"replay{i}"
        r = run([imp, "-d", rdb, "--from", "cupti-raw", "--name", name, f], check=False)
        if not c.true(f"replay {os.path.basename(f)}: cct-import --from cupti-raw succeeds", r.returncode == 0,
                      note=(r.stdout + r.stderr).strip()[-300:]):
            continue
        names = [m["name"] for m in run_metrics(query, rdb, name)]
        t = run_tree(query, rdb, name, names)
        for m in ("gxcopy:h2d", "gxcopy:d2h", "gmset:bytes", "gker:count", "gxcopy:count", "gker", "gxcopy"):
            c.exact(f"replay {os.path.basename(f)}: run total {m} == recorded run's", val(t, m, "inclusive"),
                    val(rec_tree, m, "inclusive"))
    return c


def gpu_paths(node):
    """A copy of the tree keeping only nodes with a GPU metric (g*) in their
    inclusive values, that is the paths from the root to GPU work."""
    if not any(k.startswith("g") for k, v in (node.get("inclusive") or {}).items() if v):
        return None
    kept = [c for c in (gpu_paths(c) for c in node.get("children", [])) if c is not None]
    out = {k: v for k, v in node.items() if k != "children"}
    if kept:
        out["children"] = kept
    return out


def save_fixtures(dest, db, raw_dir, manifest):
    os.makedirs(dest, exist_ok=True)
    shutil.copy2(db, os.path.join(dest, "gpu_e2e.db"))
    raw_dest = os.path.join(dest, "raw")
    if os.path.isdir(raw_dest):
        shutil.rmtree(raw_dest)
    shutil.copytree(raw_dir, raw_dest)
    with open(os.path.join(dest, "gpu_e2e.manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"\nfixtures written to {dest}: gpu_e2e.db, raw/, gpu_e2e.manifest.json "
          "(.gitignore ignores *.db: commit it with git add -f)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build",
                    help="meson build directory, or device bundle (scripts/device-bundle.sh), with "
                         "tools/cct-record (default build)")
    ap.add_argument("--nvcc", help="nvcc to use (default: $NVCC, nvcc on PATH, /usr/local/cuda/bin/nvcc)")
    ap.add_argument("--gencode", action="append",
                    help="nvcc -gencode value, repeatable (default: sm_80, sm_90 and compute_90 PTX)")
    ap.add_argument("--nvcc-flag", action="append", default=[],
                    help="extra nvcc flag, repeatable (e.g. -DSCALE_ITERS=131072, -cudart=shared)")
    ap.add_argument("--tolerance", type=float, default=0.10, help="relative tolerance of gker vs events (0.10)")
    ap.add_argument("--strict", action="store_true", help="warnings fail too")
    ap.add_argument("--save-fixtures", action="store_true", help="copy the DB and raw dump into --fixtures")
    ap.add_argument("--fixtures", default=os.path.join(ROOT, "tests", "data", "gpu"))
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()

    gpu = gpu_or_skip()
    if gpu is None:
        return 0
    print(f"GPU: {gpu}")
    nvcc = nvcc_or_skip(a.nvcc)
    if not nvcc:
        return 0
    t = tools(a.build)
    with scratch_dir("cct-gpu-e2e-", a.keep) as tmp:
        gencode = None
        if a.gencode:
            gencode = [x for g in a.gencode for x in ("-gencode", g)]
        exe = build_cuda(nvcc, SOURCE, os.path.join(tmp, "gpu_e2e"), gencode, a.nvcc_flag)

        bare = program_json(run([exe]).stdout)
        print("bare run: " + json.dumps(bare))

        db = os.path.join(tmp, "gpu_e2e.db")
        raw_dir = os.path.join(tmp, "raw")
        commands = {
            "build": " ".join(nvcc_argv(nvcc, "tests/gpu/gpu_e2e.cu", "gpu_e2e", gencode, a.nvcc_flag)),
        }
        rec_argv = [t["cct-record"], "--gpu", "on", "-o", db, "--name", "gpu_e2e", "--", exe]
        r1 = run_recorded(rec_argv)
        prog1 = program_json(r1.stdout)
        print("recorded run: " + json.dumps(prog1))
        raw_argv = [t["cct-record"], "--gpu", "on", "--gpu-raw", raw_dir, "-o", db, "--name", "gpu_e2e_raw", "--",
                    exe]
        r2 = run_recorded(raw_argv, "cct-record --gpu-raw")
        prog2 = program_json(r2.stdout)
        print("recorded run with --gpu-raw: " + json.dumps(prog2))
        commands["record"] = "cct-record --gpu on -o gpu_e2e.db --name gpu_e2e -- ./gpu_e2e"
        commands["record_raw"] = "cct-record --gpu on --gpu-raw raw -o gpu_e2e.db --name gpu_e2e_raw -- ./gpu_e2e"

        # Tracing's cost on the kernels themselves, as the events saw it.
        for key, k in bare["kernels"].items():
            rk = prog1["kernels"][key]
            print(f"  {key}: events {k['event_ms']:.4f} ms bare, {rk['event_ms']:.4f} ms recorded "
                  f"(ratio {rk['event_ms'] / k['event_ms']:.4f}); {k['launches']} launches, grid {k['grid']}, "
                  f"block {k['block']}, {k['registers']} registers")
        print(f"  wall: {bare['wall_s']:.3f} s bare, {prog1['wall_s']:.3f} s recorded, "
              f"{prog2['wall_s']:.3f} s recorded with --gpu-raw")

        all_checks = []
        shared_cudart = any(f.replace(" ", "") in ("-cudart=shared", "--cudart=shared") for f in a.nvcc_flag)
        c1, tree1, _ = check_run(t["cct-query"], db, "gpu_e2e", prog1, a.tolerance, shared_cudart, bare)
        c2, _, _ = check_run(t["cct-query"], db, "gpu_e2e_raw", prog2, a.tolerance, shared_cudart, bare)
        c3 = replay_raw(t, tmp, raw_dir, t["cct-query"], db, "gpu_e2e_raw", prog2)
        all_checks += [c1, c2, c3]

        fails = [(c.label, r) for c in all_checks for r in c.failed()]
        warns = [(c.label, r) for c in all_checks for r in c.warned()]
        n = sum(len(c.rows) for c in all_checks)
        print(f"\ngpu_e2e: {n} rows, {len(fails)} failed, {len(warns)} warnings")
        for label, r in fails:
            print(f"  FAIL [{label}] {r[1]}: measured {r[2]} expected {r[3]} {r[5]}")
        for label, r in warns:
            print(f"  WARN [{label}] {r[1]}: measured {r[2]} expected {r[3]} {r[5]}")

        if a.save_fixtures:
            manifest = {
                "what": "tests/gpu/check_gpu_e2e.py fixtures: gpu_e2e recorded by cct-record on a real GPU",
                "runs": {"gpu_e2e": prog1, "gpu_e2e_raw": prog2}, "bare": bare,
                "versions": tool_versions(nvcc), "commands": commands,
                "raw_files": sorted(os.path.relpath(f, raw_dir) for f in
                                    glob.glob(os.path.join(raw_dir, "**"), recursive=True) if os.path.isfile(f)),
                "checks": {"failed": len(fails), "warnings": len(warns)},
                # Only the paths to GPU work: the CPU samples' subtrees
                # would make the manifest megabytes.
                "tree_gpu_e2e": gpu_paths(tree1),
            }
            save_fixtures(os.path.abspath(a.fixtures), db, raw_dir, manifest)
            if fails:
                print("note: checks failed; the fixtures were written for inspection (see the manifest's checks)")

        return result(fails, len(warns), a.strict)


if __name__ == "__main__":
    sys.exit(main())
