#!/usr/bin/env bash
# The Debian package, built from an already built and tested meson build
# directory (debian/rules' CCT_DEB_PREBUILT: CI cannot afford a second
# build) with dpkg-buildpackage, then checked as an admin would get it:
#
#   tests/packaging/deb_test.sh BUILD_DIR
#
# Checks: cctdb_VERSION_amd64.deb is built, VERSION being meson.build's;
# its contents list has the four tools, the collector, the pattern module,
# the CUPTI adapter (when the build has one), the four man pages and the
# completion files, and nothing under /usr/local; every shared library an
# ELF file in it needs (the CUPTI adapter's libcupti aside) is either in the
# package or belongs to a package its Depends names, libdw1 included (the
# collector dlopen()s it); unpacked into a fresh folder (dpkg -x, no build
# tree anywhere on a path), the tools record the example and report it.
# Skipped, with a line that says so, where dpkg-buildpackage or debhelper
# is missing (scripts/install-deps.sh --tests installs them).
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: tests/packaging/deb_test.sh BUILD_DIR" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
if ! command -v dpkg-buildpackage >/dev/null || ! command -v dh >/dev/null; then
  echo "skip: no dpkg-buildpackage or debhelper (scripts/install-deps.sh --tests installs them)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failed=1; }

# The sources as git has them (dpkg-buildpackage writes its results beside
# the source folder, so it gets one of its own).
version=$(sed -nE "s/^ *version *: *'([^']+)'.*/\1/p" "$src/meson.build" | head -n 1)
tree=$work/cctdb-$version
mkdir -p "$tree"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$tree" 2>/dev/null)
else
  (cd "$src" && tar --exclude=./build --exclude='./build-*' -cf - .) | tar -xf - -C "$tree"
fi
changelog_version=$(cd "$tree" && dpkg-parsechangelog -S Version)
[ "$changelog_version" = "$version" ] && ok "debian/changelog's version is meson.build's ($version)" ||
  fail "debian/changelog says $changelog_version, meson.build $version"

start=$(date +%s)
if (cd "$tree" && CCT_DEB_PREBUILT=$build dpkg-buildpackage -b -uc -us >"$work/build.log" 2>&1); then
  ok "dpkg-buildpackage -b -uc -us ($(($(date +%s) - start)) s)"
else
  tail -n 40 "$work/build.log"
  fail "dpkg-buildpackage -b -uc -us"
  exit 1
fi
deb=$work/cctdb_${changelog_version}_amd64.deb
[ -f "$deb" ] && ok "built $(basename "$deb")" || { ls "$work"; fail "no $(basename "$deb")"; exit 1; }

# Contents.
contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|')
expect=(/usr/bin/cct-record /usr/bin/cct-query /usr/bin/cct-import /usr/bin/cct-diff
        /usr/share/man/man1/cct-record.1.gz /usr/share/man/man1/cct-query.1.gz
        /usr/share/man/man1/cct-import.1.gz /usr/share/man/man1/cct-diff.1.gz
        /usr/share/bash-completion/completions/cct-query /usr/share/bash-completion/completions/cct-record
        /usr/share/bash-completion/completions/cct-import /usr/share/bash-completion/completions/cct-diff)
for lib in libcct-collector.so libcct-pattern.so; do expect+=("/usr/lib/x86_64-linux-gnu/$lib"); done
[ -f "$build/src/collector/gpu/cupti/libcct-cupti.so" ] && expect+=(/usr/lib/x86_64-linux-gnu/libcct-cupti.so)
missing=""
for f in "${expect[@]}"; do grep -qxF -- "$f" <<<"$contents" || missing+=" $f"; done
[ -z "$missing" ] && ok "the package holds the tools, libraries, man pages and completions" ||
  { echo "$contents"; fail "the package lacks$missing"; }
grep -q '^/usr/local' <<<"$contents" && fail "the package installs into /usr/local" || ok "nothing under /usr/local"

# Dependencies: each NEEDED library is in the package or in a Depends package.
root=$work/root
dpkg-deb -x "$deb" "$root"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
dep_names=$(tr ',|' '\n\n' <<<"$depends" | sed -E 's/\(.*\)//; s/:any//; s/ //g' | grep -v '^$')
grep -qx libdw1 <<<"$dep_names" && ok "Depends names libdw1 (dlopen()ed by the collector)" || fail "Depends lacks libdw1"
undeclared=""
while IFS= read -r elf; do
  case $elf in *libcct-cupti.so) continue ;; esac
  for needed in $(readelf -d "$elf" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p'); do
    [ -n "$(find "$root" -name "$needed" -print -quit)" ] && continue
    path=$(ldconfig -p | awk -v n="$needed" '$1 == n && /x86-64/ { print $NF; exit }')
    [ -n "$path" ] || { undeclared+=" $needed(not found)"; continue; }
    owner=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null)
    owner=${owner%%:*}
    grep -qx "$owner" <<<"$dep_names" || undeclared+=" $needed($owner)"
  done
done < <(find "$root" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)
[ -z "$undeclared" ] && ok "every library the package's ELF files need is declared in Depends" ||
  fail "libraries needed but not declared:$undeclared"

# The unpacked package, alone: record and report.
mkdir -p "$work/run"
cp "$build/examples/cct-example" "$work/run/"
cd "$work/run"
export PATH=$root/usr/bin:/usr/bin:/bin
unset CCT_DB CCT_COLLECTOR_LIB LD_LIBRARY_PATH LD_PRELOAD
if cct-record -o pkg.db -- ./cct-example >record.out 2>&1 &&
   cct-query -d pkg.db top latest -n 5 | grep -q compress_block; then
  ok "the packaged tools record the example and report compress_block"
else
  cat record.out; fail "the packaged tools record the example and report compress_block"
fi
[ "$failed" -eq 0 ] && echo "deb test: all checks passed" || echo "deb test: some checks failed"
exit "$failed"
