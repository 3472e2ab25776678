// The collector's own code and the outermost frame at an address: NVTX
// (nvtx/nvtx_ranges.cc) and launch capture (gpu/launch_capture.cc) trim
// these from the leaf end of the stacks they record. own_text_lo/hi are set
// once in Start; OutermostFrame takes trim_mutex (its symbolizer's guard).
#include <mutex>

#include "collector/core/runtime_state.h"
#include "collector/cpu/modules.h"

namespace collector::internal {

// The collector's own code, skipped at the leaf end of push-time stacks.
uintptr_t own_text_lo = 0, own_text_hi = 0;

void FindOwnText() {
  ExecutableSegment(reinterpret_cast<uintptr_t>(&FindOwnText), &own_text_lo, &own_text_hi);
}

// The outermost (not inlined) frame at a return address, resolved outside
// a signal handler for the NVTX and launch-site stack trimming; empty when
// unknown. Named from symbol tables only (the outermost function is what
// decides), by a symbolizer of its own: the first launch from a new site
// used to wait for DWARF (1-3 ms on an H100, the GPU idle meanwhile) and
// for any checkpoint in progress. Takes trim_mutex.
SymbolFrame OutermostFrame(uintptr_t address) {
  std::lock_guard<std::mutex> lock(rt->trim_mutex);
  try {
    if (!rt->trim_symbolizer) {
      rt->trim_symbolizer = Symbolizer::Create(0, false, rt->config.symbol_cache_dir);
      rt->trim_symbolizer->UseSymbolTablesOnly();
      rt->trim_synced_epoch = rt->epoch.load(std::memory_order_relaxed) & kEpochMask;
    }
    if (const uint32_t now = rt->epoch.load(std::memory_order_relaxed) & kEpochMask; now != rt->trim_synced_epoch) {
      rt->trim_symbolizer->Sync();  // modules were unloaded since
      rt->trim_synced_epoch = now;
    }
    const SymbolFrames& frames = rt->trim_symbolizer->Lookup(address, true);
    if (!frames.empty()) return frames.front();
  } catch (...) {
  }
  return SymbolFrame{};
}

}  // namespace collector::internal
