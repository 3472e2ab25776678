#include "cct/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace cct {

void AdviseHugePages(void* data, size_t bytes) {
  if (bytes < (size_t{4} << 20)) return;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t huge = uintptr_t{2} << 20;
  const uintptr_t from = (begin + huge - 1) & ~(huge - 1), to = (begin + bytes) & ~(huge - 1);
  if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
}

}  // namespace cct
