#!/usr/bin/env bash
# Every real-GPU check in one command, for the GPU machine lent through the
# `device` tool: that machine is bare (nothing can be installed) and each
# call costs minutes of a small budget, so one call does it all. The exact
# call (command, carry list, timeout) and what to do before and after it are
# in tests/gpu/README.md ("On the device machine").
#
#   bash tests/gpu/run_all.sh [--bundle DIR] [--only NAME,...]   (DIR: .bundle)
#
# --only runs the named checks alone (names as below: gpu_e2e, torch,
# trace, ...), for a second call after a fix.
#
# From the repository root, with the bundle scripts/device-bundle.sh made
# here carried along. In order, each with its own time limit so that one
# hang does not eat the call (all of them inside $CCT_GPU_BUDGET_S, default
# 530 s, under the device's 9-minute mark):
#   env          the machine: OS, glibc, GPU and driver, nvcc, ncu, torch,
#                the CUPTI libraries it has; the bundle: its manifest, ldd of
#                every file (missing libraries named), a CPU-only smoke
#                recording
#   gpu_e2e      tests/gpu/check_gpu_e2e.py --save-fixtures
#   gpu_e2e_shared  the same with -cudart=shared (its log joins gpu_e2e.log)
#   torch        tests/gpu/check_torch.py
#   trace        tests/gpu/check_trace.py (cct-record --trace against the
#                program's own clock readings; Perfetto export)
#   pc_sampling  tests/gpu/check_pc_sampling.py
#   bench        bench/gpu_launch_bench.py and bench/gpu_slowdown_bench.py
#   whole_process  bench/device_overhead.sh --no-torch --only make,gxx
#                (issue 15's whole-process overhead; build/bench/handler-bench
#                when carried)
#   python_bench bench/python_bench.py with the machine's python3 (3.12)
#   nsys         whether Nsight Systems is there and can export trace_gpu's
#                run as SQLite (a fixture for cct-import --from nsys)
# The checks build their CUDA programs with nvcc themselves. The ones after
# bench run only while the budget lasts (each is cut to what is left).
#
# Writes into $OUT (a new temporary folder when OUT is unset, so this runs
# anywhere; without a GPU every check says SKIP) at most 8 files, the
# device's limit on what comes back:
#   summary.txt          PASS/FAIL/SKIP/ERROR/TIMEOUT per check, its numbers
#   env.log              the machine and the bundle
#   gpu_e2e.log, torch.log, trace.log
#   bench.log            pc_sampling, bench, whole_process, python_bench and
#                        nsys, one after the other
#   gpu_fixtures.tar.gz  tests/data/gpu/ as check_gpu_e2e.py --save-fixtures
#                        wrote it, tests/data/gpu_trace/ as check_trace.py
#                        wrote it, and tests/data/nsys/ when nsys exported
#                        (unpack at the repository root)
#   debug.tar.gz         the checks' kept scratch folders (databases, raw
#                        dumps, profiles; files over 4 MiB left out)
# and prints the summary last (the device returns the output's last 12,000
# characters). Exit status: 0 when no check failed, 1 otherwise, 2 on bad
# usage or a missing bundle.
set -uo pipefail  # no -e: a failing check must not stop the ones after it
cd "$(dirname "$0")/../.." || exit 2

bundle=.bundle
only=""
usage="usage: bash tests/gpu/run_all.sh [--bundle DIR] [--only NAME,...]"
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle | --only)
      [ $# -ge 2 ] || { echo "run_all: $1 needs a value; $usage" >&2; exit 2; }
      if [ "$1" = --bundle ]; then bundle=$2; else only=$2; fi
      shift 2
      ;;
    *) echo "run_all: unknown argument $1; $usage" >&2; exit 2 ;;
  esac
done

start=$(date +%s)
budget=${CCT_GPU_BUDGET_S:-530}
deadline=$((start + budget))
out=${OUT:-}
if [ -z "$out" ]; then
  out=$(mktemp -d /tmp/cct-gpu-out.XXXXXX)
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/cct-gpu-work.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The checks' scratch folders (kept with --keep) land here, for debug.tar.gz.
mkdir -p "$work/tmp"
export TMPDIR=$work/tmp
export PYTHONUNBUFFERED=1
# nvcc and ncu where a CUDA image keeps them, when not on PATH already.
for d in /usr/local/cuda/bin /usr/local/nvidia/bin; do
  [ -d "$d" ] && case ":$PATH:" in *":$d:"*) ;; *) PATH=$PATH:$d ;; esac
done
export PATH
if [ -z "${NCU:-}" ] && ! command -v ncu >/dev/null; then
  ncu=$(ls -d /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/nsight-compute*/ncu 2>/dev/null | sort -V | tail -n 1)
  [ -n "$ncu" ] && export NCU=$ncu
fi

summary=$out/summary.txt
envlog=$out/env.log
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
elapsed() { echo $(($(date +%s) - start)); }

# --- the machine -----------------------------------------------------------------
# show TITLE COMMAND...: the command's output (60 s at most) under a title.
show() {
  local title=$1
  shift
  echo "== $title"
  timeout 60 "$@" 2>&1 || echo "(exit $?)"
  echo
}
{
  echo "run_all.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -a)"
  echo
  show "/etc/os-release" cat /etc/os-release
  show "ldd --version" sh -c 'ldd --version | head -n 1'
  show "libstdc++ (newest GLIBCXX)" sh -c 'f=$(ldconfig -p | awk "/libstdc\\+\\+.so.6 .*x86-64/ { print \$NF; exit }"); echo "$f"; grep -aoE "GLIBCXX_3\.4\.[0-9]+" "$f" | sort -uV | tail -n 1'
  show "CPU and memory" sh -c 'nproc; free -g | head -n 2'
  show "nvidia-smi" nvidia-smi
  show "GPU" nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm,memory.total --format=csv
  show "/dev/nvidia*" sh -c 'ls -la /dev/nvidia*'
  show "driver profiling permission" sh -c 'grep -i profiling /proc/driver/nvidia/params'
  show "nvcc --version" nvcc --version
  show "ncu --version" sh -c '"${NCU:-ncu}" --version'
  show "python3 and torch" python3 -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "CUDA", torch.version.cuda, "available", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
  show "CUPTI, nvperf, libcuda in ld.so's cache" sh -c 'ldconfig -p | grep -E "libcupti|libnvperf|libcuda\.so|libunwind|libdw\.|liblmdb|libisal"'
  show "the toolkit's CUPTI" sh -c 'ls -la /usr/local/cuda /usr/local/cuda/lib64/libcupti* /usr/local/cuda/extras/CUPTI/lib64/libcupti* 2>&1; ls -d /usr/local/cuda/dist-info/*cupti* 2>/dev/null'
  show "PyTorch's CUPTI" python3 -c 'import glob, os, site; [print(p) for d in site.getsitepackages() for p in sorted(glob.glob(os.path.join(d, "nvidia", "**", "libcupti*"), recursive=True))]'
} >"$envlog" 2>&1

# --- the bundle --------------------------------------------------------------------
bundle_status=OK
cupti=""
bundle_note=""
{
  echo "== bundle $bundle"
  if [ ! -f "$bundle/MANIFEST.txt" ] || [ ! -x "$bundle/tools/cct-record" ]; then
    echo "no bundle at $bundle: make it with scripts/device-bundle.sh and carry .bundle (tests/gpu/README.md)"
  else
    sed -n '1,/^== bundled libraries/p' "$bundle/MANIFEST.txt"
    echo
    echo "== ldd of every file in the bundle, here"
    for f in $(find "$bundle" -type f ! -name MANIFEST.txt | sort); do
      echo "-- $f"
      ldd "$f" 2>&1
    done
  fi
} >>"$envlog" 2>&1
if [ ! -f "$bundle/MANIFEST.txt" ] || [ ! -x "$bundle/tools/cct-record" ]; then
  bundle_status=MISSING
  bundle_note="no bundle at $bundle (run scripts/device-bundle.sh here and carry .bundle)"
else
  missing=""
  for f in $(find "$bundle" -type f ! -name MANIFEST.txt | sort); do
    if ! lines=$(ldd "$f" 2>&1) || grep -q 'not found' <<<"$lines"; then
      missing+="$(grep -E 'not found|error' <<<"$lines" | sed "s|^[[:space:]]*|    ${f#"$bundle"/}: |")"$'\n'
    fi
  done
  if [ -n "$missing" ]; then
    bundle_status=FAIL
    bundle_note=$'libraries missing on this machine:\n'"$missing"
  fi
  for t in cct-record cct-query cct-import cct-diff; do
    if ! "$bundle/tools/$t" --help >/dev/null 2>>"$envlog"; then
      bundle_status=FAIL
      bundle_note+="    $t --help failed"$'\n'
    fi
  done
  # A CPU-only recording: the collector preloaded, a database written and read.
  {
    echo "== smoke: cct-record --gpu off -- sh busy loop; cct-query top"
    timeout 60 "$bundle/tools/cct-record" --gpu off -o "$work/smoke.db" --name smoke -- \
      /bin/sh -c 'i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done' &&
      timeout 60 "$bundle/tools/cct-query" -d "$work/smoke.db" top smoke -n 5
  } >>"$envlog" 2>&1 || { bundle_status=FAIL; bundle_note+="    the smoke recording failed (env.log)"$'\n'; }
  cupti=$(ldd "$bundle/lib/libcct-cupti.so" 2>/dev/null | awk '$1 ~ /^libcupti/ { print $3 }')
fi

head_commit=$(sed -n 's/^commit: *//p' "$bundle/MANIFEST.txt" 2>/dev/null)
say "run_all.sh on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo 'no GPU'); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"); $(ldd --version 2>/dev/null | head -n 1 | sed 's/.* //' | sed 's/^/glibc /')"
say "nvcc: $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || true); torch: $(sed -n 's/^torch \([^ ]*\) CUDA.*/\1/p' "$envlog" | grep . || echo none)"
say "bundle: $bundle_status${head_commit:+ (commit $head_commit)}${cupti:+; the adapter loads $cupti}"
[ -n "$bundle_note" ] && say "$bundle_note"
if [ "$bundle_status" = MISSING ]; then
  say "RESULT: ERROR (no bundle)"
  exit 2
fi

# --- the checks --------------------------------------------------------------------
failed=0
# run_check NAME LIMIT KEYS COMMAND...: runs COMMAND under a time limit (LIMIT
# seconds, less when the budget is short), its output to NAME.log and the
# terminal; adds its status and the log lines matching the extended regex
# KEYS to the summary.
run_check() {
  local name=$1 limit=$2 keys=$3
  shift 3
  case ",${only:-$name}," in *",$name,"*) ;; *) return ;; esac
  local log=$out/$name.log left=$((deadline - $(date +%s) - 20))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 30 ]; then
    say ""
    say "$name: NOT RUN (the budget of ${budget} s is spent)"
    failed=1
    return
  fi
  echo "=== $name: $* (limit $limit s)" | tee "$log"
  local t0 rc status
  t0=$(date +%s)
  # timeout signals the whole process group: the check, cct-record, the program.
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  case $rc in
    0) if grep -q '^SKIP:' "$log"; then status=SKIP; else status=PASS; fi ;;
    1) status=FAIL ;;
    124 | 137) status=TIMEOUT ;;
    *) status=ERROR ;;
  esac
  case $status in PASS | SKIP) ;; *) failed=1 ;; esac
  say ""
  say "$name: $status (exit $rc, $(($(date +%s) - t0)) s)"
  grep -E "$keys" "$log" | cut -c1-200 | head -n 30 | sed 's/^/  /' | tee -a "$summary"
  if [ "$status" = ERROR ] || [ "$status" = TIMEOUT ]; then
    tail -n 6 "$log" | cut -c1-200 | sed 's/^/  | /' | tee -a "$summary"
  fi
}

fixtures=$work/fixtures/tests/data/gpu
run_check gpu_e2e 150 \
  '^(GPU:|SKIP:|ERROR:|RESULT:|gpu_e2e: |  (FAIL|WARN) \[|  [a-z_]+_kernel: events|  wall:|fixtures written|note:)' \
  python3 tests/gpu/check_gpu_e2e.py --build "$bundle" --save-fixtures --fixtures "$fixtures" --keep
# Which libraries the recorded gpu_e2e run really had loaded (the run's
# module list), and what GPU tracing said about itself: where libcupti came
# from is otherwise a guess.
e2e_db=$(ls "$fixtures/gpu_e2e.db" "$TMPDIR"/cct-gpu-e2e-*/gpu_e2e.db 2>/dev/null | head -n 1)
if [ -n "$e2e_db" ]; then
  "$bundle/tools/cct-query" -d "$e2e_db" show gpu_e2e --format json 2>&1 | python3 -c '
import json, re, sys
try:
    run = json.load(sys.stdin)["runs"][0]
except Exception as e:
    sys.exit(f"  (cct-query show gpu_e2e: {e})")
print("  gpu: " + json.dumps(run.get("gpu"), sort_keys=True)[:600])
for m in run.get("modules") or []:
    if re.search(r"cupti|nvperf|libcuda\.|libcudart|libcct-|libdw|libelf|liblmdb|libisal|libunwind", m.get("path", "")):
        print("  loaded: " + m["path"])
' 2>&1 | tee -a "$summary"
fi

# The same with the CUDA runtime as a shared library (nvcc links it
# statically by default): its frames are trimmed by module, and the run's
# cuda_version comes from it. Its log joins gpu_e2e.log below.
run_check gpu_e2e_shared 90 \
  '^(SKIP:|ERROR:|RESULT:|gpu_e2e: |  (FAIL|WARN) \[)' \
  python3 tests/gpu/check_gpu_e2e.py --build "$bundle" --nvcc-flag=-cudart=shared

run_check torch 150 \
  '^(SKIP:|ERROR:|RESULT:|torch [0-9].*kernels|cctdb: |total kernel time|check_torch: |tree structure)|(FAIL|FAIL\(missing\))$|^  (WARN|FAIL|PASS)|^ +[0-9.]+%  thread|launched by a named|^iterations|^  (PASS|FAIL) per-iteration' \
  python3 tests/gpu/check_torch.py --build "$bundle" --keep
run_check trace 120 \
  '^(SKIP:|ERROR:|RESULT:|  FAIL |  gpu facts|  phase [0-9]: program|  copy: program|  torch: a launch|  python diagnostics)' \
  python3 tests/gpu/check_trace.py --build "$bundle" --keep --save-fixtures --fixtures "$work/fixtures/tests/data/gpu_trace"
run_check pc_sampling 120 \
  '^(SKIP:|ERROR:|RESULT:|FAIL|state |run total gins|[a-z_]+_kernel: |  stall shares|  ncu|  ratio|  FAIL|  PASS)' \
  python3 tests/gpu/check_pc_sampling.py --build "$bundle" --keep
# Both benchmarks in one log (the device returns 8 files at most).
run_check bench 220 \
  '^(SKIP:|ERROR:|bench:|workload:|median|variant|bare |cct gpu|gpu on |pcs |target:|=== )' \
  bash -c 'python3 bench/gpu_launch_bench.py --build "$1"; a=$?; echo "=== bench/gpu_slowdown_bench.py";
           python3 bench/gpu_slowdown_bench.py --build "$1"; b=$?; exit $((a > b ? a : b))' bench "$bundle"

run_check whole_process 200 \
  '^(== |make|gxx|g\+\+|workload|bare|cct-record|median|walker|fast|slow|[a-z_ ]+ +[0-9.]+ (s|µs))' \
  env OUT="$work/overhead" bash bench/device_overhead.sh --no-torch --only make,gxx --repeat 5 "$bundle"
run_check python_bench 90 \
  '^(CPU-bound|variant|bare|python (auto|off)|Python walk)' \
  python3 bench/python_bench.py "$bundle" --repeat 5 --python "$(command -v python3)"

# nsys_export: Nsight Systems, where the machine has it, on trace_gpu (the
# binary check_trace.py built and kept), exported as SQLite: a real fixture
# for cct-import --from nsys, with the program's JSON line beside it.
nsys_export() {
  local nsys exe dest
  nsys=$(command -v nsys || ls -d /opt/nvidia/nsight-systems*/*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys \
    /usr/local/cuda/bin/nsys /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -n 1)
  echo "nsys: ${nsys:-none}"
  ls -d /opt/nvidia/* /usr/local/cuda/nsight* 2>/dev/null
  [ -n "$nsys" ] || { echo "SKIP: no nsys"; return 0; }
  ls "$(dirname "$nsys")" | head -n 40
  "$nsys" --version
  exe=$(ls "$TMPDIR"/cct-trace-*/trace_gpu 2>/dev/null | head -n 1)
  [ -n "$exe" ] || { echo "ERROR: no trace_gpu binary (check_trace.py did not build it)"; return 2; }
  dest=$work/fixtures/tests/data/nsys
  mkdir -p "$dest" "$work/nsys"
  "$nsys" profile --trace=cuda,nvtx --sample=cpu --force-overwrite=true -o "$work/nsys/trace_gpu" "$exe" \
    >"$work/nsys/program.out" 2>&1
  echo "nsys profile: exit $?"
  tail -n 5 "$work/nsys/program.out"
  ls -la "$work/nsys"
  local rep
  rep=$(ls "$work"/nsys/trace_gpu.nsys-rep 2>/dev/null)
  if [ -z "$rep" ] && [ -f "$work/nsys/trace_gpu.qdstrm" ]; then
    local imp
    imp=$(ls "$(dirname "$nsys")"/QdstrmImporter "$(dirname "$nsys")"/../*/QdstrmImporter 2>/dev/null | head -n 1)
    echo "QdstrmImporter: ${imp:-none}"
    [ -n "$imp" ] && "$imp" -i "$work/nsys/trace_gpu.qdstrm" && rep=$(ls "$work"/nsys/trace_gpu.nsys-rep 2>/dev/null)
  fi
  [ -n "$rep" ] || { echo "ERROR: nsys made no report"; return 2; }
  "$nsys" export --type sqlite --force-overwrite=true -o "$dest/trace_gpu.sqlite" "$rep" || return 2
  grep '^{' "$work/nsys/program.out" | tail -n 1 >"$dest/trace_gpu.program.json"
  ls -la "$dest"
}
export -f nsys_export
export work
run_check nsys 60 '^(nsys|SKIP:|ERROR:|NVIDIA Nsight)' bash -c nsys_export

# --- what comes back -----------------------------------------------------------------
# At most 8 files come back: the later checks' logs join bench.log, and
# gpu_e2e_shared's joins gpu_e2e.log.
join_log() {  # join_log INTO FROM...
  local into=$1
  shift
  for f in "$@"; do
    [ -f "$out/$f.log" ] || continue
    cat "$out/$f.log" >>"$out/$into.log"
    rm -f "$out/$f.log"
  done
}
join_log gpu_e2e gpu_e2e_shared
join_log bench_all pc_sampling bench whole_process python_bench nsys
[ -f "$out/bench_all.log" ] && mv "$out/bench_all.log" "$out/bench.log"
readonly max_file=$((15 * 1024 * 1024))  # under the device's 16 MiB per file
say ""
# Any check's fixtures (gpu_e2e's, trace's, nsys's): a call with --only
# trace writes only tests/data/gpu_trace/.
if [ -n "$(find "$work/fixtures" -type f 2>/dev/null | head -n 1)" ]; then
  tar -C "$work/fixtures" -czf "$out/gpu_fixtures.tar.gz" tests
  if [ "$(stat -c %s "$out/gpu_fixtures.tar.gz")" -gt "$max_file" ]; then
    # The raw dump and the manifest are what replay tests need; the database is a convenience.
    tar -C "$work/fixtures" -czf "$out/gpu_fixtures.tar.gz" --exclude='*.db' tests
    say "fixtures: over 15 MiB with the database: gpu_e2e.db left out"
  fi
  say "fixtures: gpu_fixtures.tar.gz, $(stat -c %s "$out/gpu_fixtures.tar.gz") bytes:" \
    "$(tar -tzf "$out/gpu_fixtures.tar.gz" | grep -v '/$' | tr '\n' ' ')"
  say "  unpack at the repository root: tar -xzf gpu_fixtures.tar.gz (-> tests/data/...)"
else
  say "fixtures: none (no check wrote them)"
fi
if [ -n "$(find "$TMPDIR" -type f -size -4M 2>/dev/null | head -n 1)" ]; then
  (cd "$TMPDIR" && find . -type f -size -4M -print0 | tar -czf "$out/debug.tar.gz" --null -T -)
  if [ "$(stat -c %s "$out/debug.tar.gz")" -gt "$max_file" ]; then
    rm -f "$out/debug.tar.gz"
    say "debug: the checks' scratch folders are over 15 MiB compressed: not returned"
  else
    say "debug: debug.tar.gz, $(stat -c %s "$out/debug.tar.gz") bytes (the checks' kept scratch folders)"
  fi
fi
nfiles=$(find "$out" -type f | wc -l)
say "files in $out: $nfiles ($(cd "$out" && ls | tr '\n' ' '))$([ "$nfiles" -gt 8 ] && echo ' OVER the 8 the device returns')"
say "elapsed: $(elapsed) s of a ${budget} s budget"
if [ "$failed" = 0 ]; then say "RESULT: PASS (no check failed)"; else say "RESULT: FAIL"; fi

echo
echo "================================ summary ($summary)"
cat "$summary"
exit $failed
