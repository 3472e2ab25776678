#!/usr/bin/env bash
# Checks that a device bundle (scripts/device-bundle.sh) runs on a machine
# that lacks the libraries it carries: copied to another folder, with
# nothing from this checkout or build on any path and no LD_LIBRARY_PATH.
#
#   scripts/test-device-bundle.sh [BUNDLE]         (BUNDLE: .bundle; relative
#                                                  paths: to the repository root)
#   scripts/test-device-bundle.sh --build DIR      (the test suite's quick check)
#
# --build DIR first assembles a bundle from the meson build DIR as it is
# (device-bundle.sh --build DIR TMP), so the check needs no release build.
#
# Two passes over the same checks:
#   hidden  (root, in a private mount namespace: unshare -m) every system copy
#           of a bundled library is covered by an empty file and the CUDA
#           toolkit's library folders by an empty folder, so anything not
#           taken from the bundle fails to load; the adapter must then load
#           the bundled libcupti. Skipped, with a line that says so, where
#           unshare -m is not allowed.
#   visible the system as it is: the adapter must prefer the toolkit's
#           libcupti where there is one (see device-bundle.sh).
# In both, LD_DEBUG=libs logs every process (cct-record's children too):
# each bundled library that any of them loaded must come from the bundle's
# copy, and each one must have been loaded by something.
#
# The checks: every tool's --help; ldd of every file with nothing missing;
# cct-record of a small two-threaded program (examples/workload.cc, built
# here with g++), of a shell that runs it (the collector reaches the
# child through exec) and of code without CFI (libunwind is loaded for it); cct-query top and export --to pprof (protobuf);
# cct-diff of two runs; cct-import of the folded export; the CUPTI adapter
# dlopen()ed with RTLD_NOW by a tiny C program (no GPU here: cct-record
# --gpu on stops before loading it without a driver).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {  # usage [WHAT WAS WRONG]
  echo "test-device-bundle: ${1:+$1; }usage: scripts/test-device-bundle.sh [--build DIR | BUNDLE]" >&2
  exit 2
}
build=""
bundle=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build)
      [ $# -ge 2 ] || usage "--build needs a folder"
      build=$2
      shift 2
      ;;
    -h | --help) usage ;;
    -*) usage "unknown option $1" ;;
    *)
      [ -z "$bundle" ] || usage "one BUNDLE only"
      bundle=$1
      shift
      ;;
  esac
done
[ -z "$build" ] || [ -z "$bundle" ] || usage "--build DIR or BUNDLE, not both"

# never_bundle
source scripts/bundle-policy.sh

tmp=$(mktemp -d /tmp/cct-bundle-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if [ -n "$build" ]; then
  scripts/device-bundle.sh --build "$build" "$tmp/made" 2>"$tmp/made.log" || {
    cat "$tmp/made.log" >&2
    echo "test-device-bundle: scripts/device-bundle.sh --build $build failed" >&2
    exit 1
  }
  bundle=$tmp/made
fi
bundle=${bundle:-.bundle}
if [ ! -f "$bundle/MANIFEST.txt" ] || [ ! -x "$bundle/tools/cct-record" ]; then
  echo "test-device-bundle: $bundle is not a device bundle (run scripts/device-bundle.sh)" >&2
  exit 2
fi

# The bundle elsewhere, under a name no RPATH or build could know.
b=$tmp/elsewhere/bundle
mkdir -p "$tmp/elsewhere"
cp -a "$bundle" "$b"
rm -rf "$tmp/made"

g++ -O2 -g -pthread examples/workload.cc -o "$tmp/workload"
# Code without CFI: the collector loads libunwind only for samples its own
# walker gives up on (a plain program never loads it).
g++ -O2 -g -Itests/collector/programs tests/collector/programs/no_cfi.cc -o "$tmp/no-cfi"
cat >"$tmp/dlopen.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (!dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  return 0;
}
EOF
cc -O1 "$tmp/dlopen.c" -o "$tmp/dlopen" -ldl

have_adapter=0
[ -f "$b/lib/libcct-cupti.so" ] && have_adapter=1
bundled=$(cd "$b" && find lib tools/lib -maxdepth 1 -type f -name 'lib*.so*' ! -name 'libcct-*' -printf '%f\n' | sort)

# hidden_paths: files (F path) and folders (D path) to cover in the hidden pass.
hidden_paths() {
  local so p
  for so in $bundled; do
    # ld.so's cache and the usual folders; both spellings of merged /usr.
    for p in $(ldconfig -p | awk -v n="$so" '$1 == n { print $NF }') /lib/x86_64-linux-gnu/"$so" /usr/lib/x86_64-linux-gnu/"$so"; do
      [ -e "$p" ] || continue
      case "$so" in
        libcupti.so.*) echo "D $(dirname "$(readlink -f "$p")")" ;;
        *) echo "F $(readlink -f "$p")" ;;
      esac
    done
  done
  # The toolkit folders the adapter's RPATH names.
  for p in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$p" ] && echo "D $(readlink -f "$p")"
  done
  return 0
}

# checks PASS: runs every check against $b; the LD_DEBUG logs go to $tmp/PASS.
checks() {
  local pass=$1 w=$tmp/$1 f t so
  mkdir -p "$w"
  export LD_DEBUG=libs LD_DEBUG_OUTPUT=$w/ld
  unset LD_LIBRARY_PATH
  local fail=0
  step() {  # step WHAT COMMAND...: runs it, output to $w/log; counts a failure
    local what=$1
    shift
    if "$@" >>"$w/log" 2>&1; then
      echo "  ok   $what"
    else
      echo "  FAIL $what (exit $?; $w/log):"
      tail -n 5 "$w/log" | sed 's/^/       /'
      fail=1
    fi
  }
  echo "== $pass"
  for t in cct-record cct-query cct-import cct-diff; do
    step "$t --help" "$b/tools/$t" --help
  done
  local lddfail=0 out
  for f in $(find "$b" -type f ! -name MANIFEST.txt | sort); do
    # A missing library says "not found"; a covered one makes ldd fail.
    if ! out=$(LD_DEBUG='' ldd "$f" 2>&1) || grep -q 'not found' <<<"$out"; then
      echo "  FAIL ldd ${f#"$b"/}: $(grep -E 'not found|error' <<<"$out" | tr -s '\t ' ' ' | tr '\n' ';')"
      lddfail=1
    fi
  done
  if [ "$lddfail" = 0 ]; then echo "  ok   ldd of every file: nothing missing"; else fail=1; fi
  step "cct-record -- workload" "$b/tools/cct-record" -o "$w/x.db" --name workload -- "$tmp/workload" 0.3
  step "cct-record -- sh -c workload (a child)" "$b/tools/cct-record" -o "$w/x.db" --name shell -- \
    /bin/sh -c "$tmp/workload 0.2"
  step "cct-record -- code without CFI (libunwind loaded)" "$b/tools/cct-record" -o "$w/x.db" --name nocfi -- \
    "$tmp/no-cfi"
  # Complete stacks: each ends at a thread start, named (_start, clone) or
  # at the thread root the collector learns (a stripped libc).
  step "cct-query show: under 10% of the workload's stacks partial" \
    sh -c "'$b/tools/cct-query' -d '$w/x.db' show workload --format json | python3 -c 'import json, sys; d = json.load(sys.stdin)[\"runs\"][0][\"diagnostics\"]; sys.exit(0 if d[\"samples\"] > 0 and d[\"partial_samples\"] < 0.1 * d[\"samples\"] else 1)'"
  step "cct-query top: compress_block in the workload" \
    sh -c "'$b/tools/cct-query' -d '$w/x.db' top workload -n 20 | grep -q compress_block"
  step "cct-query top shell/all: the child was recorded" \
    sh -c "'$b/tools/cct-query' -d '$w/x.db' top shell/all -n 20 | grep -q compress_block"
  step "cct-query export --to pprof" "$b/tools/cct-query" -d "$w/x.db" export workload --to pprof -o "$w/x.pb"
  step "cct-query export --to folded" "$b/tools/cct-query" -d "$w/x.db" export workload --to folded -o "$w/x.folded"
  step "cct-import --from folded" "$b/tools/cct-import" -d "$w/x.db" --from folded --name imported "$w/x.folded"
  step "cct-diff workload imported" "$b/tools/cct-diff" -d "$w/x.db" workload imported
  step "dlopen lib/libcct-pattern.so (RTLD_NOW)" "$tmp/dlopen" "$b/lib/libcct-pattern.so"
  if [ "$have_adapter" = 1 ]; then
    step "dlopen lib/libcct-cupti.so (RTLD_NOW)" "$tmp/dlopen" "$b/lib/libcct-cupti.so"
  fi
  unset LD_DEBUG LD_DEBUG_OUTPUT

  # Where each bundled library came from, in every process.
  local loads cupti_from
  loads=$(cat "$w"/ld.* | sed -n 's/^ *[0-9]*:[[:space:]]*calling init: //p' | sort -u)
  for so in $bundled; do
    local mine others
    mine=$(grep -E "/$so\$" <<<"$loads" | grep -c "^$b/" || true)
    others=$(grep -E "/$so\$" <<<"$loads" | grep -v "^$b/" || true)
    case "$so" in
      libcupti.so.*)
        [ "$have_adapter" = 1 ] || continue
        cupti_from=$(grep -E "/$so\$" <<<"$loads" | head -n 1 || true)
        if [ "$pass" = hidden ] && [ "$mine" -eq 0 ]; then
          echo "  FAIL $so: not the bundled copy with the toolkit hidden (${cupti_from:-not loaded})"
          fail=1
        elif [ "$pass" = visible ] && [ -n "$toolkit_cupti" ] && [ "${cupti_from#"$b"/}" != "$cupti_from" ]; then
          echo "  FAIL $so: the bundled copy, though the toolkit has one ($toolkit_cupti)"
          fail=1
        else
          echo "  ok   $so loaded from ${cupti_from:-nowhere}"
        fi
        continue
        ;;
    esac
    if [ -n "$others" ]; then
      echo "  FAIL $so loaded from outside the bundle: $(tr '\n' ' ' <<<"$others")"
      fail=1
    elif [ "$mine" -eq 0 ]; then
      echo "  FAIL $so: nothing loaded it (not exercised)"
      fail=1
    else
      echo "  ok   $so from the bundle"
    fi
  done
  # Nothing else from outside the bundle: a library that is neither bundled
  # nor the device's own (scripts/bundle-policy.sh) would be missing there,
  # as libdw was before it was bundled (the collector dlopens it: ldd cannot
  # see it, and without it every frame is a bare offset).
  # Only processes that ran our code (loaded something from the bundle):
  # the test's own helpers (python3, grep) are not what the device runs.
  local path outside=0 ours
  # (An if, not `grep && sed`: a last file without our code would end the
  # loop with grep's status 1, and under set -e -o pipefail the assignment
  # would end the whole pass silently, depending on the order of the PIDs.)
  ours=$(for f in "$w"/ld.*; do
    if grep -q "calling init: $b/" "$f"; then
      sed -n 's/^ *[0-9]*:[[:space:]]*calling init: //p' "$f"
    fi
  done | sort -u)
  while read -r path; do
    [ -n "$path" ] && [ "${path#"$b"/}" = "$path" ] || continue
    so=$(basename "$path")
    never_bundle "$so" && continue
    case "$so" in libcupti.so.*) continue ;; esac  # the toolkit's, checked above
    echo "  FAIL $so loaded from $path: neither bundled nor left to the device (scripts/bundle-policy.sh)"
    outside=1
  done <<<"$ours"
  if [ "$outside" = 0 ]; then echo "  ok   nothing else loaded from outside the bundle"; else fail=1; fi
  return $fail
}

toolkit_cupti=$(ldd "$b/lib/libcct-cupti.so" 2>/dev/null | awk '$1 ~ /^libcupti/ && $3 ~ /^\// { print $3 }' | grep -v "^$b/" || true)
status=0

if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  hidden_paths | sort -u >"$tmp/hide"
  : >"$tmp/empty-file"
  mkdir -p "$tmp/empty-dir"
  # One shell in its own mount namespace: the covers vanish with it.
  export -f checks never_bundle
  export b tmp bundled have_adapter toolkit_cupti
  unshare -m bash -c '
    set -euo pipefail
    while read -r kind path; do
      if [ "$kind" = F ]; then mount --bind "$tmp/empty-file" "$path"; else mount --bind "$tmp/empty-dir" "$path"; fi
    done <"$tmp/hide"
    echo "hidden: $(wc -l <"$tmp/hide") system files and folders ($(awk "{ print \$2 }" "$tmp/hide" | tr "\n" " "))"
    checks hidden' || status=1
else
  echo "== hidden: SKIPPED (needs root and unshare -m to cover the system copies); the visible pass still checks where each library came from"
fi
checks visible || status=1

if [ "$status" = 0 ]; then
  echo "test-device-bundle: PASS ($(du -sh "$b" | cut -f1) bundle, run from $b)"
else
  echo "test-device-bundle: FAIL"
fi
exit $status
