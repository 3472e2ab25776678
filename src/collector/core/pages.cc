// SIGNAL-HANDLER CODE (MapZeroedPages): async-signal-safe; see pages.h.
#include <sys/mman.h>

#include "collector/core/pages.h"

namespace collector {

void* MapZeroedPages(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void UnmapPages(void* p, size_t bytes) { munmap(p, bytes); }

}  // namespace collector
