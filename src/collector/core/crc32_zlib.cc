// The collector's Crc32Extend: zlib's crc32, linked in from zlib's static
// archive, in place of store/crc32.cc's ISA-L one. The same function (ISA-L's
// crc32_gzip_refl is zlib's CRC-32, extension included; tests/store/
// checksum_test.cc compares them), a third of the speed (2.3 against 7.9 GB/s
// here): the collector checksums only what it writes, a run's sections. What
// it saves is libisal.so.2 as a dependency of every recorded process: ld.so
// opening, mapping and relocating it, and its ifunc selection, 16 page
// faults, 10 system calls and about 0.2 ms per process (docs/performance.md).
//
// Defined in the collector's own objects, this definition is linked before
// the store archive is searched, so that archive's crc32.o is never taken.
#include <zlib.h>

#include "store/tree_codec.h"

namespace store {

uint32_t Crc32Extend(uint32_t crc, std::string_view data) {
  return static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

}  // namespace store
