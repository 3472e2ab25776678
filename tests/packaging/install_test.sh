#!/usr/bin/env bash
# The installed tools, as a user gets them from `meson install`: the build
# directory installed into a DESTDIR and run from another folder, with
# nothing of the build on any path.
#
#   tests/packaging/install_test.sh BUILD_DIR
#
# Checks: cct-record records the example through the installed collector
# and cct-query reads it back (the worker's compress_block and checksum,
# the functions examples/workload.cc spends most time in); --version names
# the version of meson.build and a commit; each man page renders with
# `man -l`, has an EXAMPLES section and names every option its tool's
# --help lists (a page cannot drift from the tool), and every example in it
# is a documented command in docs/; the bash completion, sourced in a bare
# `bash --norc`, completes cct-query's commands, a database's run names,
# ids and tags, --to's and --from's formats, option values spelled as
# clauses (--clock), options, and the program after `cct-record --`.
# Prints "ok: ..." or "FAIL: ..." per check; exit status 1 on any failure.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: tests/packaging/install_test.sh BUILD_DIR" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failed=1; }
check() {  # check WHAT COMMAND...: the command's status decides
  local what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}

# Install, then find the prefix inside the DESTDIR (the build's own).
stage=$work/stage
meson install -C "$build" --no-rebuild --quiet --destdir "$stage" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "meson install"; exit 1; }
prefix=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
root=$stage$prefix
bin=$root/bin
for t in cct-record cct-query cct-import cct-diff; do
  [ -x "$bin/$t" ] || fail "$t is not installed in $bin"
done

# Record and query from another folder, with the example copied there.
mkdir -p "$work/run"
cp "$build/examples/cct-example" "$work/run/"
cd "$work/run"
export PATH=$bin:/usr/bin:/bin
unset CCT_DB CCT_COLLECTOR_LIB LD_LIBRARY_PATH LD_PRELOAD
if cct-record -o x.db --tag variant=base -- ./cct-example >record.out 2>&1; then
  ok "installed cct-record records the example"
else
  cat record.out; fail "installed cct-record records the example"
fi
tree=$(cct-query -d x.db tree latest 2>&1)
grep -q 'compress_block' <<<"$tree" && grep -q 'checksum' <<<"$tree" &&
  ok "installed cct-query shows the example's functions" ||
  { echo "$tree" | head -20; fail "installed cct-query shows the example's functions"; }
version=$(sed -nE "s/^ *version *: *'([^']+)'.*/\1/p" "$src/meson.build" | head -n 1)
for t in cct-record cct-query cct-import cct-diff; do
  v=$("$t" --version)
  [[ $v =~ ^$t\ ${version//./\\.}(\ \(git\ [0-9a-f]{7,}(-dirty)?\))?$ ]] && ok "$t --version: $v" ||
    fail "$t --version printed '$v' (expected '$t $version (git COMMIT)')"
done
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  commit=$(git -C "$src" rev-parse --short=7 HEAD)
  [[ $(cct-query --version) == *"(git $commit"* ]] && ok "--version names HEAD ($commit)" ||
    fail "--version does not name HEAD ($commit): $(cct-query --version)"
fi

# Man pages.
mandir=$root/share/man/man1
if [ ! -d "$mandir" ]; then
  fail "no man pages in $mandir (is help2man installed?)"
elif ! command -v man >/dev/null; then
  echo "skip: man pages not rendered (no man command: apt-get install man-db)"
else
  for t in cct-record cct-query cct-import cct-diff; do
    page=$mandir/$t.1
    [ -f "$page" ] || { fail "$t.1 is not installed"; continue; }
    text=$(MANWIDTH=200 LC_ALL=C.UTF-8 man -l -P cat "$page" 2>&1 | sed 's/.\x08//g')
    grep -q '^EXAMPLES' <<<"$text" && grep -q '^SYNOPSIS\|^DESCRIPTION' <<<"$text" &&
      ok "man -l $t.1 renders, with EXAMPLES" || { echo "$text" | head; fail "man -l $t.1 renders, with EXAMPLES"; }
    # help2man run in the C locale turns the help's ± and › into "??".
    grep -q '??' "$page" && fail "$t.1 has characters help2man could not convert (??)"
    missing=""
    for o in $("$t" --help | grep -oE '^  (-[A-Za-z0-9] \[ )?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+'); do
      grep -qF -- "$o" <<<"$text" || missing+=" $o"
    done
    [ -z "$missing" ] && ok "$t.1 names every option of $t --help" || fail "$t.1 lacks$missing"
    # Every example is a command the docs show (as "$ COMMAND").
    while IFS= read -r example; do
      grep -qF -- "\$ $example" "$src"/docs/*.md && ok "$t.1 example is documented: $example" ||
        fail "$t.1 example is not in docs/*.md: $example"
    done < <(sed -n '/^\[EXAMPLES\]/,/^\[/{s/^\.B //p}' "$src/docs/man/$t.h2m" | sed 's/\\-/-/g')
  done
fi

# bash completion, in a bare shell (no bash-completion package needed).
compdir=$root/share/bash-completion/completions
# bash calls the function `complete -p TOOL` names, as it would on TAB.
complete_line() {  # complete_line TOOL LINE: the candidates bash would offer
  bash --norc --noprofile -c '
    source "$1"; COMP_LINE=$3; COMP_POINT=${#COMP_LINE}
    read -ra COMP_WORDS <<<"$COMP_LINE"; COMP_CWORD=${#COMP_WORDS[@]}
    [[ $COMP_LINE == *" " ]] || COMP_CWORD=$((COMP_CWORD - 1))
    f=$(complete -p "$2" | sed -E "s/.* -F ([^ ]+) .*/\1/") || exit 1
    "$f" "$2" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"' _ "$compdir/$1" "$1" "$2" | sort
}
expect_complete() {  # expect_complete TOOL LINE WORD...: each WORD offered
  local got missing="" line=$2
  got=$(complete_line "$1" "$2")
  shift 2
  for w in "$@"; do grep -qxF -- "$w" <<<"$got" || missing+=" $w"; done
  [ -z "$missing" ] && ok "completion of '$line' offers $*" ||
    { fail "completion of '$line' lacks$missing (got: $(tr '\n' ' ' <<<"$got"))"; }
}
for t in cct-record cct-import cct-diff; do
  [ "$(readlink "$compdir/$t")" = cct-query ] && ok "completion installed for $t" || fail "no completion for $t in $compdir"
done
run_id=$(cct-query -d x.db runs --format csv | awk -F, 'NR == 2 { print $1 }')
expect_complete cct-query "cct-query " tree top callers iterations export flame kernels table check runs show metrics
expect_complete cct-query "cct-query -d x.db tree " latest "$run_id" cct-example tag:variant=base
expect_complete cct-query "cct-query --db=x.db top " "$run_id" cct-example
expect_complete cct-query "cct-query -d x.db tree tag:va" variant=base
expect_complete cct-query "cct-query -d x.db export 1 --to " folded pprof hatchet
expect_complete cct-query "cct-query top 1 --by " function kernel nvtx line module
expect_complete cct-query "cct-query tree 1 --dep" --depth
expect_complete cct-import "cct-import --from " folded hatchet hpctoolkit ncu-csv cupti-raw nsys
expect_complete cct-record "cct-record --clock " cpu wall
expect_complete cct-record "cct-record --gpu " auto on off
expect_complete cct-record "cct-record -o x.db -- cct-que" cct-query
expect_complete cct-diff "cct-diff -d x.db 1 " latest "$run_id" cct-example
expect_complete cct-diff "cct-diff --format " text json markdown csv

[ "$failed" -eq 0 ] && echo "install test: all checks passed" || echo "install test: some checks failed"
exit "$failed"
