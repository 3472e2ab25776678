#!/usr/bin/env bash
# The sanitizer and fuzzing stages of the test command (scripts/test.sh runs
# this after the main suite). One clang build, build-san, serves all three:
# -Dfuzz=true builds every library with libFuzzer's coverage and ASan+UBSan.
#   1. san-tests  the doctest binary under ASan+UBSan, without the tests
#                 that preload the collector into other programs
#                 (cctdb-san-tests, tests/meson.build) and the collector
#                 tests that examine this build's own binaries (SAN_EXCLUDE);
#                 two shards at once (by source folder)
#   2. fuzz       every libFuzzer target for CCT_FUZZ_SECONDS (default 2)
#                 from its corpus, two at a time (meson test --suite fuzz)
#   3. tsan       tests/tsan/tsan_test.cc under ThreadSanitizer
# Only the targets those need are built.
#
#   scripts/test-sanitizers.sh [--build-only]
#
# --build-only builds them and stops (to fix a build without running
# anything). Beside the main suite it would save nothing on two cores: the
# collector's tests use both, and ran 60 % longer with this build at nice 19
# beside them. Prints one line per stage, "sanitizers: STAGE: P passed, F failed (S s)", and last a
# line "sanitizers: P passed, F failed" that scripts/test.sh adds to its
# count. Exit status 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=${CCT_JOBS:-2}
# 2 s per target keeps CI under 20 minutes on 2 cores (docs: tests/fuzz/README.md).
export CCT_FUZZ_SECONDS=${CCT_FUZZ_SECONDS:-2}
stages=${CCT_SAN_STAGES:-san-tests fuzz tsan}
build_only=0
case "${1:-}" in
  --build-only) build_only=1 ;;
  "") ;;
  *) echo "test-sanitizers: unknown argument $1; usage: scripts/test-sanitizers.sh [--build-only]" >&2; exit 2 ;;
esac
total_passed=0
total_failed=0
record() {  # STAGE PASSED FAILED START
  local now
  now=$(date +%s)
  echo "sanitizers: $1: $2 passed, $3 failed ($((now - $4)) s)"
  total_passed=$((total_passed + $2))
  total_failed=$((total_failed + $3))
}

start=$(date +%s)
buildlog=$(mktemp)
trap 'rm -f "$buildlog"' EXIT
build_failed() {  # WHAT: the log's tail, the failure counted, the summary line
  echo "sanitizers: $1 failed:" >&2
  tail -n 60 "$buildlog" >&2
  record build 0 1 "$start"
  echo "sanitizers: $total_passed passed, $total_failed failed"
  exit 1
}
if [ ! -f build-san/build.ninja ]; then
  # -O0 (half the compile time of -O1 under the sanitizers) and line
  # tables only: ASan reports keep their file:line, the build stays short;
  # asserts stay on (b_ndebug=false). Linked with lld: its 31 executables
  # (the tests, three tools, the fuzz targets) link in 15 s instead of 45.
  # libFuzzer's coverage only in the fuzz targets themselves unless
  # CCT_FUZZ_COVERAGE=true: the libraries compile in 57 % of the time, and
  # CI's two seconds a target mostly replay the corpora (longer runs:
  # tests/fuzz/README.md). (Unity files of 8 sources, meson.build's
  # default: at -O0 parsing the headers is most of a file's compile time,
  # and this build took 290 s instead of 402 with 4.)
  CC=clang CXX=clang++ meson setup build-san -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
    -Db_ndebug=false --buildtype=plain -Doptimization=0 -Ddebug=false -Dcpp_args=-gline-tables-only \
    -Dc_link_args=-fuse-ld=lld -Dcpp_link_args=-fuse-ld=lld -Dfuzz_coverage="${CCT_FUZZ_COVERAGE:-false}" \
    >"$buildlog" 2>&1 || build_failed "meson setup"
fi
# Only what the chosen stages run.
targets=()
case " $stages " in *" san-tests "*) targets+=(tests/cctdb-san-tests tools/cct-query tools/cct-import tools/cct-diff) ;; esac
case " $stages " in
  *" fuzz "*) for f in tests/fuzz/*_fuzz.cc; do targets+=("tests/fuzz/$(basename "$f" .cc)"); done ;;
esac
if [ ${#targets[@]} -gt 0 ]; then
  ninja -C build-san -j"$jobs" "${targets[@]}" >"$buildlog" 2>&1 || build_failed "ninja -C build-san"
fi
# The TSan program: its own small build (TSan cannot be combined with ASan),
# redone when a source is newer than the binary.
tsan_srcs=(tests/tsan/tsan_test.cc src/collector/cpu/sample_trie.cc src/collector/core/pages.cc src/store/*.cc src/cct/*.cc
  src/diff/align.cc src/diff/normalize.cc)
if [[ " $stages " == *" tsan "* ]] &&
   { [ ! -x build-san/tsan/tsan_test ] || [ -n "$(find tests/tsan src/store src/cct src/diff src/collector/cpu src/collector/core/pages.cc -newer build-san/tsan/tsan_test -print -quit)" ]; }; then
  rm -rf build-san/tsan
  mkdir -p build-san/tsan
  printf '%s\n' "${tsan_srcs[@]}" | xargs -P "$jobs" -I{} sh -c \
    'clang++ -std=c++20 -fsanitize=thread -O1 -gline-tables-only -Isrc -I. -Ibuild-san -c {} -o build-san/tsan/$(echo {} | tr / _).o' \
    >"$buildlog" 2>&1 || build_failed "the TSan build"
  clang++ -fsanitize=thread build-san/tsan/*.o -o build-san/tsan/tsan_test.new -llmdb -lisal -lre2 -lpthread \
    >>"$buildlog" 2>&1 || build_failed "the TSan link"
  mv build-san/tsan/tsan_test.new build-san/tsan/tsan_test
fi
echo "sanitizers: build: ok ($(($(date +%s) - start)) s)"
[ "$build_only" = 1 ] && exit 0

# halt_on_error: UBSan's reports are failures, not warnings.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0

# san_shard LOG FILTER: the san-tests binary over one shard; its status.
san_shard() {
  local log=$1
  shift
  CCT_BUILD_DIR=$PWD/build-san CCT_SOURCE_DIR=$PWD build-san/tests/cctdb-san-tests --duration=false \
    --test-case-exclude="$SAN_EXCLUDE" "$@" >"$log" 2>&1
}

for stage in $stages; do
  start=$(date +%s)
  case $stage in
    san-tests)
      # Tests of the collector that examine this build's own binaries,
      # which the sanitizers change: the exports of libcct-collector.so (it
      # does not link under ASan: -Wl,--no-undefined, a static libstdc++);
      # dlsym("qsort") in libc (ASan interposes it); the test binary's own
      # DWARF lines and unwind tables, and nm's names for every function of
      # cct-record (not built here), as the symbolizer and unwinder read
      # them. (Patterns end in * before any comma of a test's name: doctest
      # splits its filters at commas.)
      SAN_EXCLUDE="*exactly the collector library's exported libc functions*"
      SAN_EXCLUDE+=",symbol cache: libc named from the shared table*"
      SAN_EXCLUDE+=",symbolizer: this binary's own function*"
      SAN_EXCLUDE+=",symbolizer: the sorted symbol table names what nm names*"
      SAN_EXCLUDE+=",unwinder: a new thread's first unwinds step*"
      # cct-record, which preloads the collector, is not built here.
      SAN_EXCLUDE+=",cct-record into a damaged database*"
      # ulimit -v: ASan reserves terabytes of shadow address space up front,
      # so a process under an address-space limit cannot even start.
      SAN_EXCLUDE+=",importers: a line of 1 GiB or more*,importers: a JSON value or XML tag over 16 MiB*"
      SAN_EXCLUDE+=",importers: a Caliper json-split file imports in memory below*"
      # Time: Chromium's rendering of a flame graph (33 s under ASan) checks
      # nothing of ours the other flame tests do not.
      SAN_EXCLUDE+=",flame: headless Chromium renders it*,flame: hostile frame names*"
      SAN_EXCLUDE+=",flame: in headless Chromium*,flame: screenshots*"
      # Time: these run cct-query hundreds of times on damaged files (the
      # tools' answers, not the library's memory safety, which the
      # database fuzz target covers under ASan).
      SAN_EXCLUDE+=",check: intact*,damaged database corpus*,a database LMDB loops*"
      # Time: a replay of 2,000 damaged payloads (33 s here) and a
      # 100,000-deep import (16 s); the cupti_raw, hatchet and folded fuzz
      # targets feed the same code damaged input under ASan.
      SAN_EXCLUDE+=",gpu raw dump: payloads damaged behind valid checksums*,importers: 100*"
      # Two shards at once, split by source folder into halves of about
      # equal time (the binary runs its tests one after another).
      shard_a="*/cct/*,*/collector/*,*/diff/*,*/exporters/*,*/query/*"
      log_a=$(mktemp)
      log_b=$(mktemp)
      san_shard "$log_a" --source-file="$shard_a" &
      pid_a=$!
      san_shard "$log_b" --source-file-exclude="$shard_a"
      status_b=$?
      wait "$pid_a"
      status_a=$?
      p=0
      f=0
      for shard in a b; do
        if [ $shard = a ]; then log=$log_a status=$status_a; else log=$log_b status=$status_b; fi
        summary=$(grep -E '^\[doctest\] test cases:' "$log" | tail -n 1)
        if [ "$status" -ne 0 ] || [ -z "$summary" ]; then tail -n 200 "$log"; fi
        if [ -z "$summary" ]; then
          f=$((f + 1))
        else
          sp=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$summary")
          sf=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$summary")
          [ "$status" -ne 0 ] && [ "$sf" -eq 0 ] && sf=1  # a sanitizer report after the last test case
          p=$((p + sp))
          f=$((f + sf))
        fi
      done
      rm -f "$log_a" "$log_b"
      record san-tests "$p" "$f" "$start"
      ;;
    fuzz)
      log=$(mktemp)
      meson test -C build-san --no-rebuild --suite fuzz --num-processes "$jobs" --print-errorlogs >"$log" 2>&1
      # meson's summary: "Ok: N", then "Fail:", "Timeout:" ... counts.
      p=$(sed -nE 's/^Ok: *([0-9]+).*/\1/p' "$log" | tail -n 1)
      # (No target skips: one reported skipped exited 77, libFuzzer's own
      # error status, which run_fuzz.sh must have turned into 1.)
      f=$(sed -nE 's/^(Fail|Unexpected Pass|Timeout|Skipped): *([0-9]+).*/\2/p' "$log" | awk '{ n += $1 } END { print n + 0 }')
      p=${p:-0}
      if [ "$f" -ne 0 ] || [ "$p" -eq 0 ]; then tail -n 150 "$log"; [ "$p" -eq 0 ] && f=$((f + 1)); fi
      rm -f "$log"
      record fuzz "$p" "$f" "$start"
      ;;
    tsan)
      if TSAN_OPTIONS=halt_on_error=0 build-san/tsan/tsan_test; then
        record tsan 1 0 "$start"
      else
        record tsan 0 1 "$start"
      fi
      ;;
  esac
done
echo "sanitizers: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
