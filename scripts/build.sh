#!/usr/bin/env bash
# Configures (once) and builds cctdb in ./build with two jobs: the tools,
# the collector, the man pages and the example program (the README's first
# command). --all also builds the test suite and the benchmarks
# (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(cctdb)
case "${1:-}" in
  --all) targets=() ;;
  "") ;;
  *) echo "usage: build.sh [--all]" >&2; exit 2 ;;
esac
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Quiet unless something fails: then the last lines say what.
if [ ! -f build/build.ninja ]; then
  meson setup build >"$log" 2>&1 || { tail -n 40 "$log" >&2; echo "build: meson setup failed" >&2; exit 1; }
fi
ninja -C build -j2 "${targets[@]}" >"$log" 2>&1 || { tail -n 60 "$log" >&2; echo "build: failed" >&2; exit 1; }
echo "build: ok ($(pwd)/build)" >&2
