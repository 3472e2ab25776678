// Fuzz target: collector::DecodeSharedRowsHeader (cpu/shared_rows.h), the
// header of the CFI row table a recorded process maps from the path
// cct-record hands it. Input: the file's size (8 bytes, little-endian),
// then the file's first bytes. An accepted header states a power-of-two
// entry count within the limit whose table is exactly the file's size,
// and re-encodes to the bytes it was read from (all but the padding).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "collector/cpu/shared_rows.h"

namespace {
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "property failed: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t file_size = 0;
  std::memcpy(&file_size, data, 8);
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 8, size - 8);
  const cct::Result<size_t> entries = collector::DecodeSharedRowsHeader(bytes, file_size);
  if (!entries.ok()) {
    Check(!entries.status().message().empty(), "a refusal says why");
    return 0;
  }
  const size_t n = *entries;
  Check(n != 0 && (n & (n - 1)) == 0 && n <= collector::kSharedRowsMaxEntries, "entry count in range");
  Check(collector::SharedRowsBytes(n) == file_size, "the table is the file");
  const std::string header = collector::EncodeSharedRowsHeader(n);
  Check(header.size() == collector::kSharedRowsHeader, "header size");
  Check(bytes.substr(0, 24) == std::string_view(header).substr(0, 24), "re-encodes");
  return 0;
}
