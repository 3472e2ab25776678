#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time from its committed corpus:
#   run_fuzz.sh TARGET CORPUS_DIR
# CCT_FUZZ_SECONDS (default 10): how long to fuzz; CCT_FUZZ_ARTIFACTS: where
# a crashing input is saved (default ./fuzz-artifacts). New inputs go to a
# scratch corpus, not the committed one (tests/fuzz/README.md: how to keep
# them). Exit status: libFuzzer's (0: no crash, leak, timeout or failed
# property).
set -uo pipefail
target=$1
corpus=$2
seconds=${CCT_FUZZ_SECONDS:-10}
artifacts=${CCT_FUZZ_ARTIFACTS:-fuzz-artifacts}
name=$(basename "$target")
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -d "$corpus" ] || { echo "run_fuzz: no corpus $corpus" >&2; exit 1; }
# -timeout: an input that takes 10 s is a hang; -rss_limit_mb: a parser must
# not need gigabytes for a small input. Halt on the first UBSan report too.
# -error_exitcode, -timeout_exitcode: libFuzzer's own (77, 70) would read as
# "skipped" (77) to meson, so a crash would pass unnoticed.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
"$target" "$work" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -artifact_prefix="$artifacts/$name-" -print_final_stats=1 2>&1 | tail -n 60
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "run_fuzz: $name failed (exit $status); the input is in $artifacts/$name-*;" \
    "rerun it with: $target $artifacts/$name-<file>" >&2
fi
exit "$status"
