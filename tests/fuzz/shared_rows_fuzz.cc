// Fuzz target: collector::DecodeSharedRowsHeader (cpu/shared_rows.h), the
// header of the CFI row table a recorded process maps from the path
// cct-record hands it. Input: the file's size (8 bytes, little-endian),
// then the file's first bytes. An accepted header states a power-of-two
// entry count within the limit whose table is exactly the file's size,
// and re-encodes to the bytes it was read from (all but the padding).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "collector/cpu/shared_rows.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t file_size = 0;
  std::memcpy(&file_size, data, 8);
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 8, size - 8);
  const cct::Result<size_t> entries = collector::DecodeSharedRowsHeader(bytes, file_size);
  if (!entries.ok()) {
    FUZZ_CHECK(!entries.status().message().empty());
    return 0;
  }
  const size_t n = *entries;
  FUZZ_CHECK(n != 0 && (n & (n - 1)) == 0 && n <= collector::kSharedRowsMaxEntries);
  FUZZ_CHECK(collector::SharedRowsBytes(n) == file_size);
  const std::string header = collector::EncodeSharedRowsHeader(n);
  FUZZ_CHECK(header.size() == collector::kSharedRowsHeader);
  FUZZ_CHECK(bytes.substr(0, 24) == std::string_view(header).substr(0, 24));
  return 0;
}
