// Transparent huge pages for large, randomly indexed arrays.
//
// A table probed at random over hundreds of MB (cct-diff's alignment table
// at 10^7 nodes: 200 MB) misses the TLB on nearly every probe with 4 KiB
// pages. Where the system grants huge pages on request
// (transparent_hugepage=madvise, Debian's default), asking for them before
// the first touch avoids that. Arrays read in order gained nothing
// measurable (docs/performance.md, "Scale"), so only such tables ask. A
// hint only: results never depend on it. Thread-safe (no shared state).
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
