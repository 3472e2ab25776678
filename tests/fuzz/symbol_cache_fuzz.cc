// Fuzz target: collector::SymbolCacheFile (cpu/symbol_cache.h) on arbitrary
// bytes: accepted tables are searched across the whole address range.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "collector/cpu/symbol_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The build id the file names for itself, when its header gets that far.
  std::string id;
  if (size >= 36) {
    uint32_t n = 0;
    __builtin_memcpy(&n, data + 32, 4);
    if (n <= 64 && 36 + n <= size) id.assign(bytes.substr(36, n));
  }
  auto file = collector::SymbolCacheFile::FromBytes(bytes, id);
  if (!file.ok()) return 0;
  for (uintptr_t a = 0; a < (uintptr_t{1} << 16); a += 97) (void)(*file)->Find(a);
  (void)(*file)->Find(UINTPTR_MAX);
  return 0;
}
