#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (doctest, via
# meson test), then the sanitizer and fuzzing stages (scripts/test-sanitizers.sh:
# the fuzz suite under ASan+UBSan and the TSan program; the unit tests under
# ASan+UBSan are a stage it runs on request, for time).
# Ends with doctest's summary of the main run and a plain "N passed, N
# failed" that also counts the sanitizer stages' results. CCT_SANITIZERS=0
# skips those stages (a quick local run; CI runs them).
set -uo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
./scripts/install-deps.sh --tests || exit 1
t1=$(date +%s)
./scripts/build.sh || exit 1
t2=$(date +%s)
log=$(mktemp)
meson test -C build --print-errorlogs 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
t3=$(date +%s)
summary=$(grep -E '^\[doctest\] test cases:' "$log" | tail -n 1)
rm -f "$log"
san_passed=0
san_failed=0
if [ "${CCT_SANITIZERS:-1}" != 0 ]; then
  san_log=$(mktemp)
  ./scripts/test-sanitizers.sh 2>&1 | tee "$san_log"
  san_status=${PIPESTATUS[0]}
  san_line=$(grep -E '^sanitizers: [0-9]+ passed, [0-9]+ failed$' "$san_log" | tail -n 1)
  rm -f "$san_log"
  if [ -n "$san_line" ]; then
    san_passed=$(sed -E 's/^sanitizers: ([0-9]+) passed.*/\1/' <<<"$san_line")
    san_failed=$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$san_line")
  fi
  [ "$san_status" -ne 0 ] && [ "$san_failed" -eq 0 ] && san_failed=1
fi
t4=$(date +%s)
echo "test: times: deps $((t1 - t0)) s, build $((t2 - t1)) s, tests $((t3 - t2)) s, sanitizers+fuzz $((t4 - t3)) s, total $((t4 - t0)) s"
if [ -z "$summary" ]; then
  echo "test: the test binary printed no summary" >&2
  echo "$san_passed passed, $((san_failed + 1)) failed"
  exit 1
fi
passed=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$summary")
failed=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$summary")
echo "$summary"
echo "$((passed + san_passed)) passed, $((failed + san_failed)) failed"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$san_failed" -ne 0 ]; then exit 1; fi
