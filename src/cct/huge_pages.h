// Transparent huge pages for the large per-node arrays of 10^7-node trees.
//
// A tree of 10^7 nodes has arrays of 40-80 MB each (parents, frames,
// values, children). Touched for the first time with 4 KiB pages they cost
// a page fault per 4 KiB (a third of `tree --depth 4`'s time on this VM was
// spent faulting), and randomly indexed later, a TLB miss per access. Where
// the system grants huge pages on request (transparent_hugepage=madvise,
// Debian's default), asking for them before the first touch turns 512
// faults into one. A hint only: results never depend on it.
// Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <vector>

namespace cct {

// Asks for huge pages on [data, data + bytes) (the 2 MiB-aligned part), for
// memory not touched yet. Below 4 MiB it does nothing.
void AdviseHugePages(void* data, size_t bytes);

// v.reserve(n), then AdviseHugePages on the reserved storage: the elements
// a later assign/resize writes land on huge pages.
template <class T>
void ReserveHugePages(std::vector<T>& v, size_t n) {
  if (n <= v.capacity()) return;
  v.reserve(n);
  AdviseHugePages(v.data(), n * sizeof(T));
}

}  // namespace cct
