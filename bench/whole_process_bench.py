#!/usr/bin/env python3
"""Whole-process overhead of cct-record against the bare program and against
`perf record -g`, on the workloads of issue 15: make -j2 of a generated small
C project, g++ -O2 -c of a generated ~1,300-line C++ file, and a 1000-cycle
dlopen/call/dlclose loop; and on three that take those apart: one `true`
(what a recording costs whatever the program does: cct-record's own start,
the database, its last pass), 300 processes of `true` started with
posix_spawn (what each process's start and exit cost) and a fixed amount of
CPU work under 21 nested calls (what each sample costs). The per-process
and per-sample figures subtract the first's added time when it was
measured in the same invocation (it is in `--only` by default), so a
recording's fixed cost is not counted as the samples' or processes'.
Runs alternate (bare, cct-record, perf, bare, ...)
so load drifts hit every variant alike; reports medians and ratios to the
bare median of the same invocation.

cct-record uses a symbol cache of its own in the benchmark's temporary
directory: the first recording of each workload (printed as "cold", not in
the median) fills it, the measured ones find it filled, as every recording
after the first on a machine does.

  bench/whole_process_bench.py BUILD_DIR [--repeat N] [--only empty,make,gxx,dl,spawn,burn]
                               [--record PATH] [--freq HZ] [--compare-collector LIB] [--compare-record PATH]

--record: another cct-record (the device bundle's, .bundle/tools/cct-record);
--freq: cct-record's sampling rate (its default, 1000, when absent); perf
is run at the same rate. --compare-collector: one more variant, cct-record
with another build of libcct-collector.so (CCT_COLLECTOR_LIB=LIB; e.g. the
one before a change, copied aside), alternated with the others: a before
and after in one invocation. --compare-record: the same with another
cct-record (its own collector beside it, as any cct-record finds it; e.g.
a copy of the tool from before a change). Where perf is not installed its column is left out
(and said so); the dl workload needs BUILD_DIR's test programs.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import SPAWN_C, compile_c  # noqa: E402


def gen_c_project(d, files=30):
    os.makedirs(d, exist_ok=True)
    objs = []
    for i in range(files):
        with open(os.path.join(d, f"f{i}.c"), "w") as f:
            f.write("#include <stdio.h>\n#include <string.h>\n#include <stdlib.h>\n")
            for j in range(12):
                f.write(f"static int h{j}(const char* s, int n) {{ int a = {j}; for (int k = 0; k < n; ++k) "
                        f"a = a * 31 + s[k % (int)strlen(s)]; return a ^ {i}; }}\n")
            f.write(f"int f{i}(int n) {{ char buf[64]; snprintf(buf, sizeof buf, \"%d\", n); int s = 0;\n")
            for j in range(12):
                f.write(f"  s += h{j}(buf, n + {j});\n")
            f.write("  return s; }\n")
        objs.append(f"f{i}.o")
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write("#include <stdio.h>\n")
        for i in range(files):
            f.write(f"int f{i}(int);\n")
        f.write("int main(void) { int s = 0;\n")
        for i in range(files):
            f.write(f"  s += f{i}(10);\n")
        f.write('  printf("%d\\n", s); return 0; }\n')
    with open(os.path.join(d, "Makefile"), "w") as f:
        f.write("CFLAGS = -O2 -g\nOBJS = main.o " + " ".join(objs) + "\n")
        f.write("prog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n")
        f.write("clean:\n\trm -f prog *.o\n")


def gen_cxx_file(path, lines=1300):
    out = ["#include <map>", "#include <string>", "#include <vector>", "#include <algorithm>", "#include <sstream>",
           "namespace gen {"]
    i = 0
    while len(out) < lines - 20:
        out += [f"template <typename T> struct Box{i} {{",
                f"  std::vector<T> v; std::map<std::string, T> m;",
                f"  T sum() const {{ T s{{}}; for (const T& x : v) s += x; for (auto& [k, x] : m) s += x; return s; }}",
                f"  void add(const std::string& k, T x) {{ v.push_back(x); m[k] = x; std::sort(v.begin(), v.end()); }}",
                f"}};",
                f"std::string use{i}(int n) {{ Box{i}<int> b; Box{i}<double> d; std::ostringstream os;",
                f"  for (int k = 0; k < n; ++k) {{ b.add(std::to_string(k), k); d.add(std::to_string(k), k * 0.5); }}",
                f"  os << b.sum() << d.sum(); return os.str(); }}"]
        i += 1
    out += ["}  // namespace gen", "int main() { return gen::use0(3).size() > 100; }"]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return len(out)


BURN_C = r"""
/* A fixed amount of CPU work under 21 nested calls. */
volatile double sink;
__attribute__((noinline)) double leaf(int n) { double a = sink; for (int i = 0; i < n; ++i) a = a * 1.0000001 + i; return a; }
__attribute__((noinline)) double nest(int d, int n) { return d == 0 ? leaf(n) : nest(d - 1, n) + 1; }
int main(int argc, char** argv) { double s = 0; for (int i = 0, k = atoi(argv[1]); i < k; ++i) s += nest(20, 200000); sink = s; return 0; }
"""


def timed(argv, cwd=None, before=None):
    if before:
        before()
    t = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    w = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} failed ({r.returncode})")
    return w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="empty,make,gxx,dl,spawn,burn")
    ap.add_argument("--record")
    ap.add_argument("--freq", type=int, default=1000)
    ap.add_argument("--compare-collector", metavar="LIB")
    ap.add_argument("--compare-record", metavar="PATH")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    record = os.path.abspath(args.record) if args.record else os.path.join(build, "tools/cct-record")
    perf = shutil.which("perf")
    tmp = tempfile.mkdtemp(prefix="cct-wpbench-")
    try:
        proj = os.path.join(tmp, "proj")
        gen_c_project(proj)
        cxx = os.path.join(tmp, "big.cc")
        nlines = gen_cxx_file(cxx)
        db = os.path.join(tmp, "b.db")
        pdata = os.path.join(tmp, "perf.data")
        dl = os.path.join(build, "tests/collector/cct-test-dl-loop")
        plugin = os.path.join(build, "tests/collector/libcct-test-plugin.so")
        gxx = shutil.which("g++")
        workloads = {
            "empty": ([shutil.which("true")], tmp, None),
            "make": (["make", "-s", "-j2", "prog"], proj, lambda: subprocess.run(
                ["make", "-s", "clean"], cwd=proj, stdout=subprocess.DEVNULL)),
            "gxx": ([gxx, "-O2", "-c", cxx, "-o", os.path.join(tmp, "big.o")], tmp, None),
            "dl": ([dl, plugin, "1000", "100", "0"], tmp, None),
            "spawn": ([compile_c(tmp, "spawn", SPAWN_C), "300", shutil.which("true")], tmp, None),
            "burn": ([compile_c(tmp, "burn", BURN_C), "4000"], tmp, None),
        }
        symbols = os.path.join(tmp, "symbols")
        freq = str(args.freq)
        def recording(tool):
            return lambda a: [tool, "-o", db, "--symbol-cache", symbols, "--freq", freq, "--"] + a
        wrappers = {"bare": lambda a: a, "cct-record": recording(record)}
        if args.compare_record:
            wrappers["other record"] = recording(os.path.abspath(args.compare_record))
        if args.compare_collector:
            wrappers["other lib"] = lambda a, lib=os.path.abspath(args.compare_collector): (
                ["env", "CCT_COLLECTOR_LIB=" + lib] + wrappers["cct-record"](a))
        # The collector preloaded without a recording (the part of a
        # recorded process's cost that is loading the library), where a
        # build tree or the device bundle has it.
        root = os.path.dirname(os.path.dirname(record))
        for collector in (os.path.join(root, "src/collector/libcct-collector.so"),  # a build tree
                          os.path.join(root, "lib/libcct-collector.so")):  # the device bundle
            if os.path.exists(collector):
                wrappers["preload only"] = lambda a, c=collector: ["env", "LD_PRELOAD=" + c] + a
                break
        if perf:
            # --no-bpf-event: perf 6.1's BPF side-band thread makes it notice
            # the program's end only at the next whole second (perf record of
            # /bin/true: 1.11 s, 0.28 s without it), which rounded every
            # perf figure of the earlier sessions up to a whole second.
            wrappers["perf -g"] = lambda a: [perf, "record", "-q", "--no-bpf-event", "-e", "cpu-clock", "-F", freq,
                                             "-g", "-o", pdata, "--"] + a
        print(f"# {args.repeat} alternating runs each at {freq} Hz; C project: 31 files; C++ file: {nlines} lines; "
              f"{os.cpu_count()} CPUs; load at start: {os.getloadavg()[0]:.2f}" + ("" if perf else "; perf: not installed"))
        fixed = None  # what cct-record adds to a program that does nothing (the empty row)
        for name in args.only.split(","):
            argv, cwd, before = workloads[name]
            times = {w: [] for w in wrappers}
            timed(argv, cwd, before)  # warm the page cache
            if os.path.exists(db):
                os.remove(db)
            cold = timed(wrappers["cct-record"](argv), cwd, before)  # fills the symbol cache
            for _ in range(args.repeat):
                for w, wrap in wrappers.items():
                    if os.path.exists(db):
                        os.remove(db)
                    times[w].append(timed(wrap(argv), cwd, before))
            base = statistics.median(times["bare"])
            for w in wrappers:
                med = statistics.median(times[w])
                print(f"{name:5s} {w:11s} median {med:7.3f} s  x{med / base:5.2f}  "
                      f"runs: {' '.join(f'{t:.2f}' for t in times[w])}")
            print(f"{name:5s} cct-record, symbol cache empty (first run): {cold:.3f} s  x{cold / base:5.2f}")
            rec = statistics.median(times["cct-record"])
            net = "" if fixed is None else ", the recording's fixed cost (empty) subtracted"
            if name == "empty":
                fixed = rec - base
                print(f"{name:5s} cct-record adds {fixed * 1e3:.1f} ms to a recording, whatever the program does")
                for other, who in (("other lib", "cct-record with the other lib"),
                                   ("other record", "the other cct-record")):
                    if other in times:
                        print(f"{name:5s} {who} adds {(statistics.median(times[other]) - base) * 1e3:.1f} ms")
            if name == "spawn":  # per process: what recording adds to each of the 300
                print(f"{name:5s} cct-record adds {(rec - base - (fixed or 0)) / 300 * 1e3:.2f} ms per process{net}")
                if "other lib" in times:
                    lib = statistics.median(times["other lib"])
                    print(f"{name:5s} cct-record with the other lib adds "
                          f"{(lib - base - (fixed or 0)) / 300 * 1e3:.2f} ms per process{net}")
                if "other record" in times:  # its own fixed cost is not measured apart: gross
                    other = statistics.median(times["other record"])
                    print(f"{name:5s} the other cct-record adds {(other - base) / 300 * 1e3:.2f} ms per process, "
                          f"against {(rec - base) / 300 * 1e3:.2f} for this one, fixed costs included")
            if name == "burn":  # per sample: the bare run's CPU time at `freq` samples a second
                print(f"{name:5s} cct-record adds {(rec - base - (fixed or 0)) / (base * args.freq) * 1e6:.1f} us "
                      f"per sample{net}")
        print(f"# load at end: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
