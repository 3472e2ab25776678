// dlopen/dlclose as the sampler sees them: while the loader runs on a thread
// its samples keep only the interrupted instruction (libunwind may need the
// loader's lock). Around dlclose the collector notes which modules went away
// (identity only: path, build id, bias, span; no symbols are read here, so
// dlclose stays cheap) and moves the key epoch on, so later samples at the
// same addresses (a different library mapped there) are told apart. The
// profile builder symbolizes the old addresses later, from the files
// (checkpoint.cc, LookupSymbols). Called by the interposer (core/interpose.cc),
// normal context; AfterUnload takes modules_mutex, never flush_mutex.
#include <mutex>
#include <vector>

#include "collector/core/runtime.h"
#include "collector/core/runtime_state.h"
#include "collector/cpu/modules.h"

namespace collector {

using namespace internal;

// Every thread's libunwind fast path is off from the moment a loader call
// starts (its TLS generation may change); the calling thread prepares its
// own state again when the call is over, the others at their next
// RefreshUnwind or registration.
void EnterLoader() {
  if (!rt) return;
  rt->loaders_active.fetch_add(1, std::memory_order_acq_rel);
  rt->loader_generation.fetch_add(1, std::memory_order_acq_rel);
  if (ThreadState* t = t_state) t->in_loader.fetch_add(1, std::memory_order_relaxed);
}
void LeaveLoader() {
  if (!rt) return;
  if (ThreadState* t = t_state) t->in_loader.fetch_sub(1, std::memory_order_relaxed);
  rt->loader_generation.fetch_add(1, std::memory_order_acq_rel);
  // Never below zero: a call that began before the collector started was
  // not counted.
  int active = rt->loaders_active.load(std::memory_order_relaxed);
  while (active > 0 && !rt->loaders_active.compare_exchange_weak(active, active - 1, std::memory_order_acq_rel)) {
  }
  if (ThreadState* t = t_state; t && t->in_loader.load(std::memory_order_relaxed) == 0) PrepareUnwind(t);
}

void* EnterLoaderList() {
  ThreadState* t = t_state;
  if (t) t->in_loader.fetch_add(1, std::memory_order_relaxed);
  return t;
}
void LeaveLoaderList(void* token) {
  // The thread that was counted, even if it registered meanwhile.
  if (auto* t = static_cast<ThreadState*>(token)) t->in_loader.fetch_sub(1, std::memory_order_relaxed);
}

void* BeforeUnload() {
  if (!rt || !rt->active.load()) return nullptr;
  try {
    // Build ids must be read while the modules are still mapped.
    return new std::vector<ModuleImage>(LoadedModules());
  } catch (...) {
    return nullptr;
  }
}

void AfterUnload(void* token) {
  auto* before = static_cast<std::vector<ModuleImage>*>(token);
  if (!before) return;
  try {
    const std::vector<ModuleImage> gone = Disappeared(*before, LoadedModules());
    if (!gone.empty()) {
      // Not under the loader's lock: a dlopen on another thread could map a
      // new library over the old addresses before the epoch moves; its
      // samples in that window would be named from the old file.
      std::lock_guard<std::mutex> lock(rt->modules_mutex);
      const uint32_t epoch = rt->epoch.load(std::memory_order_relaxed);
      for (const ModuleImage& m : gone) rt->unloaded.Add(m, epoch);
      // Saturates instead of wrapping: an epoch reused would merge old and new
      // samples at one address into one trie node.
      if (epoch < kEpochMask) rt->epoch.store(epoch + 1, std::memory_order_relaxed);
    }
  } catch (...) {
  }
  delete before;
}

}  // namespace collector
