// The store's CRC-32 (store::Crc32, ISA-L) against zlib's crc32, the
// definition docs/format.md gives for every section and raw-dump record:
// databases and dumps written before the switch must keep verifying, and
// the collector, which computes it with zlib's crc32_z itself
// (collector/core/crc32_zlib.cc), writes what the tools verify.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "store/tree_codec.h"

TEST_CASE("store checksum: Crc32 is zlib's CRC-32 for every length and alignment") {
  std::mt19937_64 rng(7);
  std::string data(1 << 20, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  const auto zlib = [](std::string_view s) {
    return static_cast<uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(s.data()), s.size()));
  };
  // Short lengths at every alignment (the vector code's head and tail), then
  // long ones.
  for (size_t offset = 0; offset < 16; ++offset)
    for (size_t length = 0; length <= 300; ++length) {
      const std::string_view s(data.data() + offset, length);
      REQUIRE_MESSAGE(store::Crc32(s) == zlib(s), "offset " << offset << ", length " << length);
    }
  for (size_t length : {4095u, 4096u, 65537u, 1u << 19, (1u << 20) - 3})
    CHECK(store::Crc32(std::string_view(data.data() + 3, length)) == zlib(std::string_view(data.data() + 3, length)));
  // The check value of the CRC-32 catalogue ("123456789" → 0xCBF43926).
  CHECK(store::Crc32("123456789") == 0xCBF43926u);
  CHECK(store::Crc32("") == 0);
}

TEST_CASE("store checksum: Crc32Extend continues a checksum as zlib's crc32_z does") {
  std::mt19937_64 rng(11);
  std::string data(70000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (uint32_t start : {0u, 1u, 0xCBF43926u, 0xFFFFFFFFu, static_cast<uint32_t>(rng())})
    for (size_t length : {0u, 1u, 7u, 64u, 1000u, 4097u, 70000u}) {
      const std::string_view s(data.data(), length);
      CHECK(store::Crc32Extend(start, s) == crc32_z(start, reinterpret_cast<const Bytef*>(s.data()), s.size()));
    }
}
