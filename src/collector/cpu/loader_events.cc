// dlopen/dlclose as the sampler sees them: while the loader runs on a thread
// its samples keep only the interrupted instruction (libunwind may need the
// loader's lock); before a library is unloaded, every address sampled in it
// is symbolized and the key epoch moves on. Called by the interposer
// (core/interpose.cc), normal context; BeforeUnload takes flush_mutex.
#include <mutex>
#include <vector>

#include "collector/core/runtime.h"
#include "collector/core/runtime_state.h"

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

void BeforeUnload() {
  if (!rt || !rt->active.load()) return;
  // Resolve every address sampled so far while the library is still mapped,
  // then start a new key epoch so later samples at the same addresses (a
  // different library loaded there) are told apart.
  std::lock_guard<std::mutex> lock(rt->flush_mutex);
  try {
    if (!rt->symbolizer) rt->symbolizer = Symbolizer::Create();
    const size_t n = rt->thread_count.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) {
      ThreadState* t = rt->threads[i].load(std::memory_order_acquire);
      if (!t) continue;
      const size_t nodes = t->trie.size();
      std::vector<bool> has_child(nodes, false);
      for (SampleTrie::NodeIndex j = 1; j < nodes; ++j) has_child[t->trie.parent(j)] = true;
      const uint32_t epoch = rt->epoch.load(std::memory_order_relaxed) & kEpochMask;
      for (SampleTrie::NodeIndex j = 1; j < nodes; ++j) {
        const uint64_t key = t->trie.key(j);
        if (!IsAddressKey(key) || (key >> kEpochShift) != epoch) continue;
        const uint64_t lk = LookupKey(key, has_child[j]);
        if (!rt->frozen.count(lk)) rt->frozen.emplace(lk, LookupSymbols(key, has_child[j]));
      }
    }
    rt->refresh_symbols = true;
  } catch (...) {
  }
  rt->epoch.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace collector
