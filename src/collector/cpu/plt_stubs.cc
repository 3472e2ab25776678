#include "collector/cpu/plt_stubs.h"

#include <algorithm>
#include <cstring>

namespace collector {

void SortGotSlots(std::vector<GotSlot>* slots) {
  std::stable_sort(slots->begin(), slots->end(),
                   [](const GotSlot& a, const GotSlot& b) { return a.address < b.address; });
}

std::vector<PltStub> DecodePltStubs(uint64_t address, std::string_view bytes, uint64_t entry_size,
                                    std::span<const GotSlot> slots) {
  if (entry_size == 0 || entry_size > 64) entry_size = 16;
  std::vector<PltStub> out;
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  for (uint64_t off = 0; bytes.size() - off >= entry_size; off += entry_size) {
    PltStub stub{address + off, entry_size, nullptr};
    uint64_t p = off;
    const uint64_t end = off + entry_size;
    // endbr64 (IBT), then a bnd prefix (MPX): both in front of the jump in
    // .plt.sec and in IBT's .plt.got.
    if (end - p >= 4 && b[p] == 0xf3 && b[p + 1] == 0x0f && b[p + 2] == 0x1e && b[p + 3] == 0xfa) p += 4;
    if (end - p >= 1 && b[p] == 0xf2) p += 1;
    if (end - p >= 6 && b[p] == 0xff && b[p + 1] == 0x25) {
      int32_t disp = 0;
      std::memcpy(&disp, b + p + 2, 4);
      // RIP-relative: from the end of the 6-byte instruction.
      const uint64_t target = address + p + 6 + static_cast<uint64_t>(static_cast<int64_t>(disp));
      const auto it = std::lower_bound(slots.begin(), slots.end(), target,
                                       [](const GotSlot& s, uint64_t a) { return s.address < a; });
      if (it != slots.end() && it->address == target) stub.slot = &*it;
    }
    out.push_back(stub);
  }
  return out;
}

}  // namespace collector
