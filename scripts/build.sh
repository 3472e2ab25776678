#!/usr/bin/env bash
# Configures (once) and builds cctdb in ./build with two jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  meson setup build >/dev/null
fi
ninja -C build -j2 >/dev/null
echo "build: ok ($(pwd)/build)" >&2
