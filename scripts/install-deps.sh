#!/usr/bin/env bash
# Installs what cctdb needs to build and run (Debian 12); with --tests also
# what only the test suite needs (Go's pprof, Chromium, TeX, clang for the
# sanitizer and fuzzing builds, the Python package's build and tests); with
# --python what the Python package needs to build and install (`pip install
# .`, docs/python.md). Idempotent: packages already present are left alone.
set -euo pipefail
with_tests=0
with_python=0
case "${1:-}" in
  --tests) with_tests=1 ;;
  --python) with_python=1 ;;
  "") ;;
  *) echo "usage: install-deps.sh [--tests|--python]" >&2; exit 2 ;;
esac
packages=(
  g++ meson ninja-build pkg-config python3
  liblmdb-dev libboost-program-options-dev doctest-dev nlohmann-json3-dev zlib1g-dev libisal-dev
  libunwind-dev libdw-dev libelf-dev libre2-dev
  # the GPU machine's bundle (scripts/device-bundle.sh) sets its RPATHs
  patchelf
  # pprof export (protobuf) and HPCToolkit import (expat)
  protobuf-compiler libprotobuf-dev libexpat1-dev
  # Nsight Systems import (its exports are SQLite databases)
  libsqlite3-dev
  # man pages, generated from the tools' --help at build time
  help2man
)
test_packages=(
  # go tool pprof reads our pprof files, headless Chromium renders flame
  # graphs, pdflatex (booktabs) compiles LaTeX tables
  golang-go chromium texlive-latex-base texlive-latex-recommended
  # the sanitizer build and the libFuzzer targets (scripts/test-sanitizers.sh),
  # linked with lld: the 31 ASan executables link in 15 s instead of 45
  clang libclang-rt-14-dev lld
  # the Python-frame tests build a CPython extension (tests/collector/programs/py_ext.cc)
  python3-dev
  # the package test builds the .deb (dpkg-buildpackage, debhelper) and
  # renders the installed man pages
  build-essential debhelper dpkg-dev man-db
  # the Python package (python/): built by `build.sh --all`, tested with
  # pytest against pandas
  pybind11-dev python3-numpy python3-pandas python3-pytest
  # cct-import --from perf: the tests record a program with perf and check
  # the import against perf report (they skip without perf)
  linux-perf
  # cct-aggregate's MPI transport (meson finds it) and the tests' 4-rank MPI
  # program (mpicc, mpirun --oversubscribe); without them the tool uses
  # threads only and those tests skip
  libopenmpi-dev openmpi-bin
)
python_packages=(
  # the extension's build (-Dpython=auto finds them) and `pip install .`
  # offline through Debian's meson-python
  python3-dev pybind11-dev python3-numpy python3-pandas python3-mesonpy python3-pip
)
[ "$with_tests" = 1 ] && packages+=("${test_packages[@]}")
[ "$with_python" = 1 ] && packages+=("${python_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
echo "install-deps: installing ${missing[*]}" >&2
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# --force-unsafe-io: dpkg skips its fsync per unpacked file; a crash
# mid-install is repaired by running this again.
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  -o Dpkg::Options::=--force-unsafe-io "${missing[@]}" >/dev/null
