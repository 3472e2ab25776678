#!/usr/bin/env bash
# Whole-process overhead of cct-record on the GPU machine lent through the
# `device` tool: a machine whose page faults and kernel entries cost what
# they cost on real hardware, where this repository's VM makes each one
# tens of microseconds (docs/performance.md, "Whole-process overhead"). One
# device call runs it all, with the bundle scripts/device-bundle.sh made
# (carried as .bundle) and bench/handler-bench built here (carried too):
#
#   run  command: bash bench/device_overhead.sh
#        carry:   [".bundle", "build/bench/handler-bench"] (ninja -C build bench/handler-bench first)
#
# Prints, and writes to $OUT/overhead.log: the machine; handler-bench at
# depth 64 with the handler's own walker, libunwind's trace cache and
# libunwind stepping; bench/whole_process_bench.py for make -j2, g++ -O2,
# and its per-process (spawn) and per-sample (burn) workloads (perf's
# column where perf is installed); a PyTorch CPU workload bare and
# recorded, with the run's diagnostics (which unwinder took its samples) and
# where its partial samples fell. --torch-only: only that last part;
# --no-torch: all but it. --only and --repeat go to whole_process_bench.py
# (default empty,make,gxx,spawn,burn and 5). tests/gpu/run_all.sh runs it with
# --no-torch --only make,gxx.
#
#   bash bench/device_overhead.sh [--torch-only | --no-torch] [--only LIST]
#                                 [--repeat N] [BUNDLE]   (BUNDLE: .bundle)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
torch_only=false
torch=true
only=empty,make,gxx,spawn,burn
repeat=5
bundle=.bundle
while [ $# -gt 0 ]; do
  case "$1" in
    --torch-only) torch_only=true; shift ;;
    --no-torch) torch=false; shift ;;
    --only | --repeat)
      [ $# -ge 2 ] || { echo "device_overhead: $1 needs a value" >&2; exit 2; }
      if [ "$1" = --only ]; then only=$2; else repeat=$2; fi
      shift 2
      ;;
    -*) echo "device_overhead: unknown option $1" >&2; exit 2 ;;
    *) bundle=$1; shift ;;
  esac
done
[ -x "$bundle/tools/cct-record" ] || { echo "device_overhead: no bundle at $bundle (scripts/device-bundle.sh)" >&2; exit 2; }
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
record=$bundle/tools/cct-record
query=$bundle/tools/cct-query
torch_job='import torch
torch.manual_seed(0)
x = torch.randn(384, 384)
for i in range(400):
    x = torch.tanh(x @ x) + torch.sin(x).sum(0)
print(float(x.sum()))'
now() { date +%s.%N; }
{
  echo "== machine"
  head -n 2 /etc/os-release
  ldd --version | head -n 1
  echo "cpus $(nproc), kernel $(uname -r)"
  for t in gcc g++ make perf python3; do echo "$t: $(command -v "$t" || echo missing)"; done
  echo
  if ! $torch_only; then
  echo "== handler-bench, depth 64: walker, libunwind's trace cache (fast), libunwind stepping (slow)"
  if [ -x build/bench/handler-bench ]; then
    for m in walker fast slow; do LD_LIBRARY_PATH=$bundle/lib timeout 60 build/bench/handler-bench 64 20000 $m; done
  else
    echo "not carried"
  fi
  echo
  echo "== bench/whole_process_bench.py --only $only --repeat $repeat"
  timeout 360 python3 bench/whole_process_bench.py build --record "$record" --only "$only" --repeat "$repeat"
  echo
  fi
  if $torch; then
  echo "== PyTorch on the CPU (a 384x384 matmul/tanh loop), 3 alternating runs"
  for i in 1 2 3; do
    t0=$(now); timeout 120 python3 -c "$torch_job" >/dev/null; t1=$(now)
    rm -rf "$work/t.db"
    timeout 120 "$record" -o "$work/t.db" -- python3 -c "$torch_job" >/dev/null 2>"$work/rec.err"; t2=$(now)
    python3 -c "print(f'bare {$t1 - $t0:.3f} s  cct-record {$t2 - $t1:.3f} s')"
  done
  tail -n 3 "$work/rec.err"
  "$query" -d "$work/t.db" show latest | grep -E "diagnostics|samples"
  "$query" -d "$work/t.db" top latest 2>&1 | head -n 14
  echo "-- where the partial samples fell (their leaf frames)"
  "$query" -d "$work/t.db" tree latest --depth 2 2>&1 | grep -A 15 "partial call path" | head -n 20
  echo "-- by module"
  "$query" -d "$work/t.db" top latest --by module 2>&1 | head -n 12
  fi
} 2>&1 | tee "$out/overhead.log"
