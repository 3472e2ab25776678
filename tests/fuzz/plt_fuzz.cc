// Fuzz target: collector::DecodePltStubs (cpu/plt_stubs.h), the decoder of
// a module's PLT entries, on arbitrary section bytes. Input: an entry size
// byte, a slot count byte N, N little-endian u64 slot addresses, then the
// section's bytes (an exact-size heap copy: a read outside it is an ASan
// report), placed at link-time address 0x1000. Properties: the entries
// tile the section from its start, each of the decoded size; a slot
// returned is one of the given ones; decoding is deterministic.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "collector/cpu/plt_stubs.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace collector;
  if (size < 2) return 0;
  const uint64_t entry_size = data[0];
  const size_t n = data[1];
  if (size < 2 + 8 * n) return 0;
  std::vector<GotSlot> slots(n);
  for (size_t i = 0; i < n; ++i) std::memcpy(&slots[i].address, data + 2 + 8 * i, 8);
  SortGotSlots(&slots);
  const size_t len = size - 2 - 8 * n;
  auto section = std::make_unique<char[]>(len ? len : 1);
  std::memcpy(section.get(), data + 2 + 8 * n, len);
  const std::string_view bytes(section.get(), len);
  constexpr uint64_t kAt = 0x1000;
  const auto stubs = DecodePltStubs(kAt, bytes, entry_size, slots);
  const uint64_t step = entry_size == 0 || entry_size > 64 ? 16 : entry_size;
  FUZZ_CHECK(stubs.size() == len / step);
  for (size_t i = 0; i < stubs.size(); ++i) {
    FUZZ_CHECK(stubs[i].start == kAt + i * step && stubs[i].size == step);
    FUZZ_CHECK(!stubs[i].slot || (stubs[i].slot >= slots.data() && stubs[i].slot < slots.data() + slots.size()));
  }
  const auto again = DecodePltStubs(kAt, bytes, entry_size, slots);
  FUZZ_CHECK(again.size() == stubs.size());
  for (size_t i = 0; i < stubs.size(); ++i) FUZZ_CHECK(again[i].slot == stubs[i].slot);
  return 0;
}
