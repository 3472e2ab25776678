// PathKeys: a stack merged with the thread's open NVTX ranges, the path of
// CPU samples (cpu/sampler.cc), of NVTX pops and marks (nvtx/) and of GPU
// launches (gpu/launch_capture.cc), so it lives with the shared state.
// SIGNAL-HANDLER CODE: PathKeys runs in the sampling handler and is
// async-signal-safe (no allocation, no locks); keep it so.
#include <atomic>

#include "collector/core/runtime_state.h"

namespace collector::internal {

// A sample's (or a range's) trie path: the stack `frames` (root first,
// `depth` of them) with the thread's first `open` NVTX ranges merged in.
// Interleaved placement puts a range right after the frame that pushed it
// when the sample's stack still holds that frame's callers unchanged (the
// pushing function is still active), else after the stack prefix the two
// share; prefix placement puts all ranges first. Returns the key count.
// SIGNAL-HANDLER CODE (also called in normal context by pop and mark).
int PathKeys(const ThreadState* t, const uintptr_t* frames, int depth, bool truncated, int open, uint32_t epoch,
             uint64_t* keys) {
  std::atomic_signal_fence(std::memory_order_acquire);
  int k = 0;
  if (truncated) keys[k++] = kPartialKey;
  if (rt->config.nvtx_placement == NvtxPlacement::kPrefix || truncated) {
    for (int r = 0; r < open; ++r) keys[k++] = t->ranges[r].key;
    for (int j = 0; j < depth; ++j) keys[k++] = MakeKey(frames[j], epoch);
    return k;
  }
  int r = 0;
  int anchor = 0;  // ranges are nested: anchors never decrease
  auto anchor_of = [&](const ThreadState::OpenRange& e) {
    const uintptr_t* p = t->range_frames + e.frames_offset;
    const int d = static_cast<int>(e.depth);
    int m = 0;
    while (m < d - 1 && m < depth && p[m] == frames[m]) ++m;
    const int a = (m == d - 1 && depth >= d) ? d : m;
    return a > anchor ? a : anchor;
  };
  for (int j = 0; j <= depth; ++j) {
    while (r < open && (anchor = anchor_of(t->ranges[r])) <= j) keys[k++] = t->ranges[r++].key;
    if (j < depth) keys[k++] = MakeKey(frames[j], epoch);
  }
  while (r < open) keys[k++] = t->ranges[r++].key;
  return k;
}

}  // namespace collector::internal
