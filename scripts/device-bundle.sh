#!/usr/bin/env bash
# Builds cctdb (release) and assembles one folder that runs as is on the GPU
# machine lent through the `device` tool: a bare Ubuntu 24.04-like image with
# CUDA, PyTorch and glibc but none of our Debian packages, where nothing can
# be installed. tests/gpu/run_all.sh runs the GPU checks from it there; see
# tests/gpu/README.md for the whole call.
#
#   scripts/device-bundle.sh [--build DIR] [OUTDIR]   (OUTDIR: .bundle; relative
#                                                     paths: to the repository root)
#
# Without --build it configures and builds build-bundle/ (buildtype=release,
# -Dcuda=enabled, only the seven targets below; -j2). --build DIR takes the
# targets as they are in an existing, built meson build instead (any
# buildtype, nothing rebuilt: what the test suite's quick check does,
# scripts/test-device-bundle.sh --build).
#
# The layout, chosen so that the GPU checks' `--build DIR` (DIR/tools/...)
# and the tools' own lookups work unchanged:
#   OUTDIR/tools/cct-{record,query,import,diff}   RPATH $ORIGIN/lib:$ORIGIN/../lib
#   OUTDIR/lib/libcct-collector.so                RPATH $ORIGIN (cct-record finds
#                                                 it as tools/../lib/)
#   OUTDIR/lib/libcct-cupti.so                    the CUPTI adapter, beside the
#                                                 collector (where it looks)
#   OUTDIR/lib/libcct-pattern.so                  --iteration's matcher (RE2),
#                                                 beside the collector too
#   OUTDIR/lib/*.so.*        what the collector and its modules need (the
#                            libunwind and libdw it dlopens, libelf, liblmdb,
#                            libisal, libre2, libcupti as a fallback; the
#                            lists: scripts/bundle-policy.sh)
#   OUTDIR/tools/lib/*.so.*  what only the tools need (boost, protobuf, expat)
#   OUTDIR/MANIFEST.txt      commit, versions, sizes, build ids, ldd of each
#
# Why the collector's libraries are apart from the tools': the collector is
# LD_PRELOADed into the profiled program and interposes dlopen, so the
# program's dlopen calls reach ld.so from the collector and search the
# collector's RPATH first. Its folder therefore holds only what it needs.
# Every RPATH is a DT_RPATH (patchelf --force-rpath), not a DT_RUNPATH: ld.so
# uses an object's DT_RPATH for its dependencies' dependencies too (libdw ->
# libelf), a DT_RUNPATH only for its own. No LD_LIBRARY_PATH is needed, so
# none leaks into the profiled program and its children.
#
# Never bundled (a stock Ubuntu 24.04 has them, newer; an older copy from
# here would shadow the program's own): glibc's libraries, libstdc++ and
# libgcc_s (checked: nothing may need a symbol version newer than Ubuntu
# 24.04's glibc 2.39 / GCC 14 provide), libz, liblzma, libbz2, libzstd, and
# the driver's libcuda.
#
# libcupti: the adapter's RPATH lists the CUDA toolkit's folders first and
# $ORIGIN last, so the device's own CUPTI 13 is used when it has one (it
# matches its driver and its libnvperf_* companions, which libcupti dlopens),
# and the copy bundled from this machine's toolkit otherwise. A program that
# loaded a libcupti.so.13 itself before (PyTorch's) keeps its own: ld.so
# shares a library by its soname.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

usage() {  # usage [WHAT WAS WRONG]
  echo "device-bundle: ${1:+$1; }usage: scripts/device-bundle.sh [--build DIR] [OUTDIR]" >&2
  exit 2
}

build=""
out=""
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
      [ -z "$out" ] || usage "one OUTDIR only"
      out=$1
      shift
      ;;
  esac
done
out=${out:-.bundle}

for tool in patchelf readelf objdump ldd strip ldconfig; do
  if ! command -v "$tool" >/dev/null; then
    echo "device-bundle: $tool not found (run scripts/install-deps.sh)" >&2
    exit 2
  fi
done

readonly limit_bytes=$((60 * 1024 * 1024))
# Newest symbol versions Ubuntu 24.04 provides: glibc 2.39, GCC 14's libstdc++.
readonly max_glibc=2.39 max_glibcxx=3.4.33 max_cxxabi=1.3.15
readonly cuda_rpath='/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/targets/x86_64-linux/lib'
targets=(tools/cct-record tools/cct-query tools/cct-import tools/cct-diff
  src/collector/libcct-collector.so src/collector/gpu/cupti/libcct-cupti.so src/collector/libcct-pattern.so)

# Only ever delete a folder this script made (it holds MANIFEST.txt).
if [ -e "$out" ] && [ ! -f "$out/MANIFEST.txt" ]; then
  echo "device-bundle: $out exists and is not a bundle (no MANIFEST.txt): not replacing it" >&2
  exit 2
fi

# --- build --------------------------------------------------------------------
build_it=0
if [ -z "$build" ]; then
  build_it=1
  build="build-bundle"
  if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" --buildtype=release -Dcuda=enabled >/dev/null
  else
    meson configure "$build" -Dbuildtype=release -Dcuda=enabled >/dev/null
  fi
fi
[ -f "$build/build.ninja" ] || { echo "device-bundle: $build is not a meson build directory" >&2; exit 2; }
build=$(cd "$build" && pwd)
have_adapter=1
if [ "$build_it" = 1 ]; then
  echo "device-bundle: building ${#targets[@]} targets in $build (-j2)" >&2
  ninja -C "$build" -j2 "${targets[@]}" >/dev/null
elif ! grep -q "^build ${targets[5]}:" "$build/build.ninja"; then
  # Only with --build: the default build is configured -Dcuda=enabled.
  echo "device-bundle: warning: $build has no CUPTI adapter (no CUDA toolkit): this bundle cannot trace GPUs" >&2
  have_adapter=0
  unset 'targets[5]'
fi
for t in "${targets[@]}"; do
  [ -f "$build/$t" ] || { echo "device-bundle: $build/$t not found (build it first)" >&2; exit 2; }
done

# --- the folder -----------------------------------------------------------------
rm -rf "$out"
mkdir -p "$out/tools/lib" "$out/lib"
out=$(cd "$out" && pwd)
# Marks the folder as ours at once, so that a run stopped halfway can be redone.
echo "incomplete: scripts/device-bundle.sh did not finish" >"$out/MANIFEST.txt"

ours=()  # bundle paths of our own seven binaries
for t in "${targets[@]}"; do
  case "$t" in
    tools/*) dest=$out/tools/$(basename "$t") ;;
    *) dest=$out/lib/$(basename "$t") ;;
  esac
  cp "$build/$t" "$dest"
  # A debug build's DWARF only (release has none): .symtab stays, so the
  # collector's own frames keep their names in profiles and crash reports
  # on the device; the build-id note stays too.
  strip --strip-debug "$dest"
  ours+=("$dest")
done

# collector_dlopens, never_bundle, known_bundled
source "$root/scripts/bundle-policy.sh"

# deps FILE: "SONAME PATH" for every library FILE needs, transitively, as
# ld.so resolves them on this machine. Dies on a library not found.
deps() {
  local lines
  lines=$(ldd "$1") || { echo "device-bundle: ldd $1 failed" >&2; exit 1; }
  if grep -q 'not found' <<<"$lines"; then
    echo "device-bundle: $1 needs libraries not found here:" >&2
    grep 'not found' <<<"$lines" >&2
    exit 1
  fi
  awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' <<<"$lines"
}

# system_path SONAME: where ld.so's cache has it.
system_path() {
  # awk reads to the end: an early exit would kill ldconfig with SIGPIPE,
  # and pipefail would turn that into a silent failure of the whole script.
  ldconfig -p | awk -v n="$1" '$1 == n && /x86-64/ && !found { print $NF; found = 1 }'
}

declare -A where=()  # soname -> lib or tools/lib
declare -A from=()   # soname -> path on this machine
add() {  # add SONAME PATH DIR (lib wins over tools/lib)
  never_bundle "$1" && return 0
  if [ -z "${where[$1]:-}" ] || [ "$3" = lib ]; then where[$1]=$3; fi
  from[$1]=$2
}
for f in "${ours[@]}"; do
  case "$f" in
    "$out"/lib/*) dir=lib ;;
    *) dir=tools/lib ;;
  esac
  while read -r so path; do add "$so" "$path" "$dir"; done < <(deps "$f")
done
for so in "${collector_dlopens[@]}"; do
  path=$(system_path "$so")
  [ -n "$path" ] || { echo "device-bundle: $so (the collector dlopens it) is not installed here" >&2; exit 1; }
  add "$so" "$path" lib
  while read -r dso dpath; do add "$dso" "$dpath" lib; done < <(deps "$path")
done

for so in "${!where[@]}"; do
  known_bundled "$so" || echo "device-bundle: note: bundling $so (${from[$so]}), which is not in the known list: review" >&2
  dest=$out/${where[$so]}/$so
  cp -L "${from[$so]}" "$dest"
  chmod u+w "$dest"
  case "$so" in
    libcupti.so.*) ;;  # NVIDIA's, needs glibc only: left as shipped
    *) if [ "${where[$so]}" = lib ]; then
         patchelf --force-rpath --set-rpath '$ORIGIN' "$dest"
       else
         patchelf --force-rpath --set-rpath '$ORIGIN:$ORIGIN/../../lib' "$dest"
       fi ;;
  esac
done

for f in "${ours[@]}"; do
  case "$f" in
    "$out"/tools/*) rpath='$ORIGIN/lib:$ORIGIN/../lib' ;;
    */libcct-cupti.so) rpath="$cuda_rpath:\$ORIGIN" ;;
    *) rpath='$ORIGIN' ;;
  esac
  patchelf --force-rpath --set-rpath "$rpath" "$f"
done

# --- checks ---------------------------------------------------------------------
elf_files=$(find "$out" -type f \( -name 'cct-*' -o -name '*.so' -o -name '*.so.*' \) | sort)

# Each file resolves every library from the bundle or from the never-bundled set.
for f in $elf_files; do
  lines=$(ldd "$f" 2>&1) || { echo "device-bundle: ldd $f failed in the bundle:" >&2; echo "$lines" >&2; exit 1; }
  while read -r so arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = "not" ]; then
      echo "device-bundle: $f: $so not found in the bundle" >&2
      exit 1
    fi
    # libcupti may come from the device's toolkit (see the top of this file).
    if ! never_bundle "$so" && [ "${so#libcupti.so}" = "$so" ] && [ "${path#"$out"/}" = "$path" ]; then
      echo "device-bundle: $f: $so resolves outside the bundle ($path)" >&2
      exit 1
    fi
  done <<<"$lines"
done

# newest VERSION_PREFIX: the newest symbol version any bundled file asks for.
newest() {
  for f in $elf_files; do objdump -T "$f"; done | grep -oE "\\b$1_[0-9][0-9.]*" | sed "s/^$1_//" | sort -uV | tail -n 1
}
check_version() {  # check_version PREFIX MAX
  local v
  v=$(newest "$1")
  if [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$v" "$2" | sort -V | tail -n 1)" != "$2" ]; then
    echo "device-bundle: the bundle needs $1_$v, newer than Ubuntu 24.04's $1_$2" >&2
    exit 1
  fi
  echo "$1_${v:-none} (Ubuntu 24.04 has up to $1_$2)"
}
versions=$(check_version GLIBC "$max_glibc"; check_version GLIBCXX "$max_glibcxx"; check_version CXXABI "$max_cxxabi")

# --- manifest -------------------------------------------------------------------
manifest=$out/MANIFEST.txt
{
  echo "cctdb device bundle (scripts/device-bundle.sh)"
  echo "made:     $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -m)"
  echo "commit:   $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)$(
    [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' (with uncommitted changes)')"
  echo "build:    $build (buildtype $(meson introspect --buildoptions "$build" |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="buildtype"))'))"
  echo "compiler: $(c++ --version | head -n 1)"
  echo "glibc:    $(ldd --version | head -n 1)"
  echo "adapter:  $([ "$have_adapter" = 1 ] && echo "lib/libcct-cupti.so; libcupti from $cuda_rpath, else the bundled lib/libcupti.so.13" || echo 'none (no CUDA toolkit in the build): GPU tracing is off')"
  echo "needs:    $versions" | sed '2,$s/^/          /'
  echo
  echo "== files (bytes, build id)"
  for f in $elf_files; do
    bid=$(readelf -n "$f" 2>/dev/null | awk '/Build ID/ { print $3 }')
    printf '%10d  %-44s %s\n' "$(stat -c %s "$f")" "${f#"$out"/}" "${bid:--}"
  done
  echo
  echo "== bundled libraries: origin here"
  for so in $(printf '%s\n' "${!where[@]}" | sort); do
    pkg=""
    real=$(readlink -f "${from[$so]}")
    # dpkg knows each file under one of the merged-/usr spellings.
    for p in "${from[$so]}" "$real" "${real#/usr}" "/usr${from[$so]}"; do
      pkg=$(dpkg -S "$p" 2>/dev/null | head -n 1 | cut -d: -f1) && break
    done
    ver=""
    [ -n "$pkg" ] && ver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
    case "$so" in
      libcupti.so.*) ver=$(ls -d "$(dirname "$(readlink -f "${from[$so]}")")"/../dist-info/nvidia_cuda_cupti-* 2>/dev/null |
        sed 's/.*nvidia_cuda_cupti-//; s/\.dist-info//' | head -n 1) ;;
    esac
    printf '%-40s %-22s %s %s\n' "${where[$so]}/$so" "${pkg:-(not a package)}" "${ver:-}" "${from[$so]}"
  done
  echo
  echo "== RPATH and ldd (here, from the bundle)"
  for f in $elf_files; do
    echo "-- ${f#"$out"/}  RPATH $(readelf -d "$f" | sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p')"
    ldd "$f" | sed "s|$out|<bundle>|g"
  done
} >"$manifest"

size=$(du -sb "$out" | cut -f1)
echo "size:     $size bytes" >>"$manifest"
if [ "$size" -gt "$limit_bytes" ]; then
  echo "device-bundle: $out is $size bytes, over the limit of $limit_bytes (60 MiB): it must travel with the working tree (64 MiB in all)" >&2
  exit 1
fi
echo "device-bundle: $out: $(find "$out" -type f | wc -l) files, $(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }') MiB;" \
  "needs $(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $1 }' <<<"$versions")" >&2
