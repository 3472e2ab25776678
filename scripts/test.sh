#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (doctest, via
# meson test). Ends with doctest's summary and a plain "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh || exit 1
./scripts/build.sh || exit 1
log=$(mktemp)
meson test -C build --print-errorlogs 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
summary=$(grep -E '^\[doctest\] test cases:' "$log" | tail -n 1)
rm -f "$log"
if [ -z "$summary" ]; then
  echo "test: the test binary printed no summary" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
passed=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$summary")
failed=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$summary")
echo "$summary"
echo "$passed passed, $failed failed"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ]; then exit 1; fi
