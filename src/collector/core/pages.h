// Anonymous zeroed memory for the stores a signal handler writes (sample
// tries, trace logs): mmap is a system call, so taking memory this way is
// async-signal-safe where malloc is not. MAP_NORESERVE: a large table costs
// only the pages that are touched.
//
// SIGNAL-HANDLER CODE: MapZeroedPages is async-signal-safe; UnmapPages is
// called only where nothing writes the memory any more (normal context).
#pragma once

#include <cstddef>

namespace collector {

void* MapZeroedPages(size_t bytes);  // null on failure
void UnmapPages(void* p, size_t bytes);

}  // namespace collector
