"""Helpers shared by the real-GPU checks in tests/gpu/ and bench/gpu_launch_bench.py.

Finding the GPU, nvcc / ncu and the cctdb tools, building CUDA programs,
running commands, reading `cct-query ... --format json`, walking its trees,
and the scratch directory and RESULT line that end every check. Standard
library only.
"""
import argparse
import contextlib
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# sm_80 and sm_90 code, plus sm_90 PTX for anything newer (JIT-compiled).
DEFAULT_GENCODE = ["-gencode", "arch=compute_80,code=sm_80",
                   "-gencode", "arch=compute_90,code=sm_90",
                   "-gencode", "arch=compute_90,code=compute_90"]


# ------------------------------------------------------------------ setup

def have_gpu(detail=True):
    """(True, description) when an NVIDIA GPU is usable, else (False, why).
    With detail, a failing `nvidia-smi -L` adds the start of its output to why."""
    # /dev/nvidia0 usually; a container given one GPU may have only /dev/nvidiaN.
    if not glob.glob("/dev/nvidia[0-9]*"):
        return False, "no /dev/nvidia0"
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False, "nvidia-smi not found"
    try:
        r = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"nvidia-smi failed: {e}"
    if r.returncode != 0 or "GPU" not in r.stdout:
        if not detail:
            return False, f"nvidia-smi -L failed ({r.returncode})"
        return False, f"nvidia-smi -L failed ({r.returncode}): {(r.stderr or r.stdout).strip()[:200]}"
    return True, r.stdout.strip().splitlines()[0]


def gpu_or_skip(detail=True):
    """The GPU's description (have_gpu), or None after printing
    "SKIP: no GPU (why)" when there is none: the caller then exits 0."""
    ok, why = have_gpu(detail)
    if not ok:
        print(f"SKIP: no GPU ({why})")
        return None
    return why


def find_cuda_tool(name, env_var, explicit=None):
    """The first executable of: explicit, $env_var, name on PATH,
    /usr/local/cuda/bin/name; None when there is none."""
    for c in (explicit, os.environ.get(env_var), shutil.which(name), f"/usr/local/cuda/bin/{name}"):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def find_nvcc(explicit=None):
    """nvcc: explicit (--nvcc), $NVCC, nvcc on PATH or /usr/local/cuda/bin/nvcc; None if none."""
    return find_cuda_tool("nvcc", "NVCC", explicit)


def find_ncu(explicit=None):
    """ncu: explicit (--ncu), $NCU, ncu on PATH or /usr/local/cuda/bin/ncu; None if none."""
    return find_cuda_tool("ncu", "NCU", explicit)


def nvcc_or_skip(explicit=None):
    """find_nvcc(explicit), or None after printing "SKIP: no nvcc (...)":
    the caller then exits 0."""
    nvcc = find_nvcc(explicit)
    if not nvcc:
        print("SKIP: no nvcc (install the CUDA toolkit, or pass --nvcc / set $NVCC)")
    return nvcc


def bench_args(doc):
    """An ArgumentParser for a GPU benchmark with the options they share:
    --build (a meson build or a device bundle) and --nvcc."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build",
                    help="meson build directory, or device bundle (scripts/device-bundle.sh), with "
                         "tools/cct-record (default build)")
    ap.add_argument("--nvcc")
    return ap


def gpu_and_nvcc(nvcc=None):
    """(the GPU's description, nvcc), or None after printing why not (SKIP:
    the caller then exits 0)."""
    why = gpu_or_skip(detail=False)
    if why is None:
        return None
    found = nvcc_or_skip(nvcc)
    return (why, found) if found else None


def die(msg, code=2):
    """Prints "ERROR: msg" and exits with code (2: a setup error)."""
    print(f"ERROR: {msg}", flush=True)
    sys.exit(code)


def run(argv, timeout=600, env=None, check=True, quiet=False):
    """Runs argv, prints it (unless quiet), returns the CompletedProcess (text,
    output captured). Dies on a timeout, on a program that cannot start, and
    with check on a non-zero exit status (after printing the output's tail)."""
    if not quiet:
        print("$ " + " ".join(argv), flush=True)
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        die(f"timed out after {timeout} s: {' '.join(argv)}")
    except OSError as e:
        die(f"cannot run {argv[0]}: {e}")
    if check and r.returncode != 0:
        sys.stdout.write(r.stdout[-4000:])
        sys.stdout.write(r.stderr[-4000:])
        die(f"exit status {r.returncode}: {' '.join(argv)}")
    return r


def run_recorded(argv, what="cct-record"):
    """Runs a cct-record command line (argv) with run(check=False), prints
    the tail of its stderr, dies with "WHAT exited N" on a non-zero status;
    returns the CompletedProcess."""
    r = run(argv, check=False)
    sys.stdout.write(r.stderr[-2000:])
    if r.returncode != 0:
        die(f"{what} exited {r.returncode}")
    return r


def nvcc_argv(nvcc, source, out, gencode=None, extra=(), libs=("-ldl",)):
    """The nvcc command line: -O2 -g -lineinfo, gencode (default
    DEFAULT_GENCODE), extra flags, -o out, source, libs."""
    return [nvcc, "-O2", "-g", "-lineinfo", *(gencode or DEFAULT_GENCODE), *extra, "-o", out, source, *libs]


def build_cuda(nvcc, source, out, gencode=None, extra=()):
    """Builds source into out with nvcc_argv (printed, dies on failure); returns out."""
    run(nvcc_argv(nvcc, source, out, gencode, extra))
    return out


def tool_path(build, name):
    """Absolute path of the cctdb tool name in build: a meson build directory,
    or a device bundle (scripts/device-bundle.sh), which has the same tools/."""
    return os.path.join(os.path.abspath(build), "tools", name)


def tools(build):
    """{name: path} of cct-record, cct-query and cct-import under build;
    dies when cct-record or cct-query is not there."""
    t = {n: tool_path(build, n) for n in ("cct-record", "cct-query", "cct-import")}
    for n in ("cct-record", "cct-query"):
        if not os.access(t[n], os.X_OK):
            die(f"{t[n]} not found: build first (meson setup {build} && ninja -C {build}) or pass --build DIR "
                "(a build directory or a device bundle)")
    return t


@contextlib.contextmanager
def scratch_dir(prefix, keep=False):
    """A temporary directory for the with block; afterwards removed, or with
    keep left in place and printed as "kept DIR"."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield tmp
    finally:
        if keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def result(failed, warnings=0, strict=False):
    """Prints "RESULT: FAIL" (something failed, or strict and warnings) and
    returns 1, else "RESULT: PASS" (with the number of warnings) and returns 0."""
    if failed or (strict and warnings):
        print("RESULT: FAIL")
        return 1
    print("RESULT: PASS" + (f" ({warnings} warnings)" if warnings else ""))
    return 0


# ------------------------------------------------------------ checks

class Checks:
    """A check's rows: each printed as "  STATUS what: measured M  expected E
    [ratio R]" as it is added (PASS, FAIL, WARN: a soft failure, INFO)."""

    def __init__(self, label):
        self.label = label
        self.rows = []  # (status, what, measured, expected, ratio, note)

    def add(self, status, what, measured=None, expected=None, note=""):
        ratio = None
        if isinstance(measured, (int, float)) and isinstance(expected, (int, float)) and expected:
            ratio = measured / expected
        self.rows.append((status, what, measured, expected, ratio, note))
        m = "-" if measured is None else (f"{measured:.9g}" if isinstance(measured, float) else str(measured))
        e = "-" if expected is None else (f"{expected:.9g}" if isinstance(expected, float) else str(expected))
        r = "" if ratio is None else f"  ratio {ratio:.6f}"
        print(f"  {status:<4} {what}: measured {m}  expected {e}{r}{('  ' + note) if note else ''}", flush=True)

    def exact(self, what, measured, expected, hard=True, note=""):
        ok = measured == expected
        self.add("PASS" if ok else ("FAIL" if hard else "WARN"), what, measured, expected, note)
        return ok

    def within(self, what, measured, expected, tol, hard=True, note=""):
        ok = expected > 0 and abs(measured / expected - 1) <= tol
        self.add("PASS" if ok else ("FAIL" if hard else "WARN"), what, measured, expected,
                 (note + "  " if note else "") + f"tolerance {tol:.0%}")
        return ok

    def true(self, what, cond, hard=True, note=""):
        self.add("PASS" if cond else ("FAIL" if hard else "WARN"), what, note=note)
        return cond

    def info(self, what, measured=None, expected=None, note=""):
        self.add("INFO", what, measured, expected, note)

    def failed(self):
        return [r for r in self.rows if r[0] == "FAIL"]

    def warned(self):
        return [r for r in self.rows if r[0] == "WARN"]


# ------------------------------------------------------------ program and cct-query output

def program_json(stdout):
    """The program's JSON line: the last stdout line that parses as an object."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    die("the program printed no JSON line:\n" + stdout[-2000:])


def query_json(query, db, *args):
    """`cct-query -d db ARGS --format json`, parsed; dies when it fails or is not JSON."""
    r = run([query, "-d", db, *args, "--format", "json"], quiet=True)
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        die(f"cct-query {' '.join(args)}: not JSON ({e}): {r.stdout[:300]}")


def run_metrics(query, db, sel):
    """The metrics of run sel (`cct-query metrics`): a list of {name, ...}."""
    return query_json(query, db, "metrics", sel)


def run_tree(query, db, sel, metric_names):
    """The calling-context tree of run sel with the given metrics (`cct-query tree -m ...`)."""
    args = ["tree", sel]
    for m in metric_names:
        args += ["-m", m]
    return query_json(query, db, *args)


def run_show(query, db, sel):
    """State, diagnostics and metadata of run sel (`cct-query show`)."""
    return query_json(query, db, "show", sel)


# ------------------------------------------------------------ tree helpers

def walk(node, ancestors=()):
    """Preorder (node, ancestors root..parent)."""
    stack = [(node, tuple(ancestors))]
    while stack:
        n, anc = stack.pop()
        yield n, anc
        for c in reversed(n.get("children", [])):
            stack.append((c, anc + (n,)))


def val(node, metric, which="exclusive"):
    """A node's exclusive (or which) value of metric; 0 when absent."""
    v = (node.get(which) or {}).get(metric)
    return 0 if v is None else v


def base_name(name):
    """scale_kernel(float*, int, float) -> scale_kernel; void ns::k<int>(x) -> ns::k."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    depth, cut = 0, len(s)
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    s = s[:cut]
    s = re.sub(r"<.*>$", "", s)
    return s.strip()


# The CUDA machinery between a launching call and its GPU placeholder (the
# collector trims it; profile_builder.cc's IsGpuRuntimeFunction and
# IsGpuRuntimeModule).
RUNTIME_FRAME = re.compile(r"^(cuda[A-Z_]|cu[A-Z]|__cuda|__device_stub__|cudart::|libcuda|libcudart|libcupti)")
# A frame the symbolizer could not name: a bare address or "module+0xOFFSET".
UNNAMED_FRAME = re.compile(r"^0x[0-9a-f]+$|\+0x[0-9a-f]+$")


def launcher(ancestors, kernel_bases=(), skip_unnamed=False):
    """The CPU function that made the call: the nearest function ancestor,
    skipping NVTX ranges, CUDA runtime/driver frames, nvcc's __device_stub__
    frames, the host wrapper nvcc generates with the kernel's own name (its
    base name in kernel_bases) and, with skip_unnamed, frames without a name
    (libraries without symbols, such as cuBLAS's internals).
    Returns (function node or None, [names of the skipped frames])."""
    skipped = []
    for a in reversed(ancestors):
        k = a.get("kind")
        name = a.get("name", "")
        if k == "nvtx":
            continue
        if k == "function":
            if (RUNTIME_FRAME.match(name) or base_name(name) in kernel_bases
                    or (skip_unnamed and UNNAMED_FRAME.search(name))):
                skipped.append(name)
                continue
            return a, skipped
        skipped.append(f"[{k}] {name}")
    return None, skipped
