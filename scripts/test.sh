#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (doctest, via
# meson test), then the sanitizer and fuzzing stages (scripts/test-sanitizers.sh:
# the unit tests and the fuzz suite under ASan+UBSan, the TSan program).
# Ends with doctest's summary of the main run and a plain "N passed, N
# failed" that also counts the other meson tests and the sanitizer stages.
# CCT_SANITIZERS=0 skips those stages (a quick local run; CI runs them).
set -uo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
./scripts/install-deps.sh --tests || exit 1
t1=$(date +%s)
./scripts/build.sh --all || exit 1
t2=$(date +%s)
log=$(mktemp)
# The sanitizer build runs beside the main tests, at the lowest priority:
# the tests leave much of the two cores idle (the preload shard runs alone,
# mostly one process), and a nice-19 build takes only what they leave, so
# their timings do not move. Its own failure is reported by the sanitizer
# stage below, which builds again (nothing, when this build succeeded).
san_build_pid=""
if [ "${CCT_SANITIZERS:-1}" != 0 ]; then
  nice -n 19 ./scripts/test-sanitizers.sh --build-only >/dev/null 2>&1 &
  san_build_pid=$!
fi
meson test -C build --print-errorlogs 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ -n "$san_build_pid" ] && wait "$san_build_pid"
t3=$(date +%s)
# The doctest binary runs as three shards (cctdb-tests-preload, -1, -2:
# tests/meson.build); each prints one summary.
shards=3
summaries=$(grep -E '^\[doctest\] test cases:' "$log")
# The other meson tests (device-bundle, soak, ...) count one each; the
# shards' cases are counted from their summaries, and a shard itself only
# when it failed without saying so there (a crash after the summary).
# Each test's last verdict: a verbose test is listed RUNNING first, and a
# failure again in the summary.
meson_results=$(sed -nE 's/^ *[0-9]+\/[0-9]+ +([^ ]+) +([A-Z]+)( .*)?$/\1 \2/p' "$log" |
  awk '$2 != "RUNNING" { last[$1] = $2 } END { for (t in last) print t, last[t] }')
rm -f "$log"
other_passed=$(awk '$1 !~ /^cctdb-tests-/ && ($2 == "OK" || $2 == "EXPECTEDFAIL") { n++ } END { print n + 0 }' <<<"$meson_results")
other_failed=$(awk '$1 !~ /^cctdb-tests-/ && $2 != "OK" && $2 != "EXPECTEDFAIL" && $2 != "SKIP" { n++ } END { print n + 0 }' <<<"$meson_results")
binary_failed=$(awk '$1 ~ /^cctdb-tests-/ && $2 != "OK" { n++ } END { print n + 0 }' <<<"$meson_results")
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
missing=$((shards - $(grep -c . <<<"$summaries")))
[ "$missing" -ne 0 ] && echo "test: $missing shard(s) of the test binary printed no summary" >&2
# doctest's summary for the shards together, in doctest's own format.
read -r cases passed failed skipped < <(sed -E 's/.*cases: *([0-9]+) *\| *([0-9]+) passed *\| *([0-9]+) failed *\| *([0-9]+) skipped.*/\1 \2 \3 \4/' <<<"$summaries" |
  awk '{ c += $1; p += $2; f += $3; s += $4 } END { print c + 0, p + 0, f + 0, s + 0 }')
# A shard counts the cases the others run as skipped: each case runs in one
# shard and is skipped by the others, so the cases registered number
# (skipped in all + run) / shards, and those run by none are the real skips.
[ "$missing" -eq 0 ] && skipped=$(((skipped + cases) / shards - cases))
failed=$((failed + missing))
[ "$binary_failed" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
printf '[doctest] test cases: %6d | %6d passed | %6d failed | %6d skipped\n' "$cases" "$passed" "$failed" "$skipped"
echo "$((passed + other_passed + san_passed)) passed, $((failed + other_failed + san_failed)) failed"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$san_failed" -ne 0 ]; then exit 1; fi
