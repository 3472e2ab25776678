# What a device bundle carries and what it leaves to the device: sourced by
# scripts/device-bundle.sh (which assembles it) and
# scripts/test-device-bundle.sh (which checks that nothing else is loaded
# from outside it). Why these choices: the top of device-bundle.sh.

# Libraries the collector dlopens by name, which ldd cannot see: the
# unwinder (cpu/unwinder.cc) and the symbolizer's elfutils
# (cpu/symbolizer.cc). Without libdw every frame is a bare offset.
collector_dlopens=(libunwind.so.8 libdw.so.1)

# never_bundle SONAME: true for what the device has and must provide itself.
never_bundle() {
  case "$1" in
    linux-vdso.so.* | ld-linux-x86-64.so.* | libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | \
      librt.so.* | libutil.so.* | libresolv.so.* | libanl.so.* | libnsl.so.* | libcrypt.so.*) return 0 ;;  # glibc
    libstdc++.so.* | libgcc_s.so.*) return 0 ;;                         # GCC's runtime: the device's is newer
    libz.so.* | liblzma.so.* | libbz2.so.* | libzstd.so.*) return 0 ;;  # in every Ubuntu 24.04
    libcuda.so.* | libnvidia-*) return 0 ;;                             # the driver
  esac
  return 1
}

# known_bundled SONAME: what we expect to bundle; anything else is bundled
# too, with a note to review.
known_bundled() {
  case "$1" in
    libdw.so.1 | libelf.so.1 | liblmdb.so.0 | libisal.so.2 | libunwind.so.8 | libcupti.so.13 | \
      libboost_program_options.so.* | libprotobuf.so.* | libexpat.so.1 | libre2.so.* | \
      libsqlite3.so.0) return 0 ;;
  esac
  return 1
}
