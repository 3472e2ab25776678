#include "collector/python/code_ids.h"

#include <semaphore.h>
#include <sys/mman.h>

#include <atomic>

namespace collector::python {
namespace {

// An id's pair, written by the handler that hands the id out: `code` last
// (release), so a reader that sees it (acquire) sees the rest.
struct Entry {
  std::atomic<uint64_t> code{0}, globals{0}, fingerprint{0};
};

// Open addressing over (code, globals); a slot holds an id, 0 when empty.
// Twice as many slots as ids keeps probes short.
constexpr uint64_t kSlots = kMaxCodeIds * 2;
constexpr int kMaxProbes = 64;

constinit Entry* g_entries = nullptr;
constinit std::atomic<uint32_t>* g_slots = nullptr;
constinit std::atomic<uint64_t> g_next{1};
constinit std::atomic<uint64_t> g_overflowed{0};
sem_t g_new_ids;
constinit bool g_ready = false;

uint64_t Hash(uintptr_t code, uintptr_t globals) {
  uint64_t h = (static_cast<uint64_t>(code) >> 4) * 0x9e3779b97f4a7c15ull;
  h ^= (static_cast<uint64_t>(globals) >> 4) * 0xc2b2ae3d27d4eb4full;
  return h ^ (h >> 29);
}

uint64_t NewId(uintptr_t code, uintptr_t globals, CodeFingerprintFn fingerprint) {
  const uint64_t id = g_next.fetch_add(1, std::memory_order_relaxed);
  if (id >= kMaxCodeIds) {
    g_next.store(kMaxCodeIds, std::memory_order_relaxed);
    return kNoCodeId;
  }
  Entry& e = g_entries[id];
  e.globals.store(globals, std::memory_order_relaxed);
  e.fingerprint.store(fingerprint != nullptr ? fingerprint(code) : 0, std::memory_order_relaxed);
  e.code.store(code, std::memory_order_release);
  return id;
}

}  // namespace

bool InitCodeIds() {
  if (g_ready) return true;
  void* entries = mmap(nullptr, sizeof(Entry) * kMaxCodeIds, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void* slots = mmap(nullptr, sizeof(std::atomic<uint32_t>) * kSlots, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (entries == MAP_FAILED || slots == MAP_FAILED || sem_init(&g_new_ids, 0, 0) != 0) {
    if (entries != MAP_FAILED) munmap(entries, sizeof(Entry) * kMaxCodeIds);
    if (slots != MAP_FAILED) munmap(slots, sizeof(std::atomic<uint32_t>) * kSlots);
    return false;
  }
  // Zero pages are zero atomics (both types are lock-free words).
  g_entries = static_cast<Entry*>(entries);
  g_slots = static_cast<std::atomic<uint32_t>*>(slots);
  g_ready = true;
  return true;
}

uint64_t CodeIdFor(uintptr_t code, uintptr_t globals, CodeFingerprintFn fingerprint) {
  if (!g_ready) return kNoCodeId;
  const uint64_t h = Hash(code, globals);
  for (int probe = 0; probe < kMaxProbes;) {
    std::atomic<uint32_t>& slot = g_slots[(h + static_cast<uint64_t>(probe)) & (kSlots - 1)];
    uint32_t id = slot.load(std::memory_order_acquire);
    if (id == 0) {
      const uint64_t fresh = NewId(code, globals, fingerprint);
      if (fresh == kNoCodeId) break;
      if (slot.compare_exchange_strong(id, static_cast<uint32_t>(fresh), std::memory_order_acq_rel)) {
        sem_post(&g_new_ids);
        return fresh;
      }
      // Another thread filled the slot first (with this pair, most likely:
      // then its id serves and this one stays unused); look at what it holds.
    }
    const Entry& e = g_entries[id];
    if (e.code.load(std::memory_order_acquire) == code && e.globals.load(std::memory_order_relaxed) == globals)
      return id;
    ++probe;
  }
  g_overflowed.fetch_add(1, std::memory_order_relaxed);
  return kNoCodeId;
}

bool CodeIdentityOf(uint64_t id, CodeIdentity* out) {
  if (!g_ready || id == kNoCodeId || id >= CodeIdEnd()) return false;
  const Entry& e = g_entries[id];
  out->code = e.code.load(std::memory_order_acquire);
  out->globals = e.globals.load(std::memory_order_relaxed);
  out->fingerprint = e.fingerprint.load(std::memory_order_relaxed);
  return out->code != 0;
}

uint64_t CodeIdEnd() {
  const uint64_t next = g_next.load(std::memory_order_acquire);
  return next < kMaxCodeIds ? next : kMaxCodeIds;
}

void WaitForNewCodeIds(int timeout_ms) {
  if (!g_ready) return;
  timespec deadline{};
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_nsec += static_cast<long>(timeout_ms % 1000) * 1000000L;
  deadline.tv_sec += timeout_ms / 1000 + deadline.tv_nsec / 1000000000L;
  deadline.tv_nsec %= 1000000000L;
  while (sem_timedwait(&g_new_ids, &deadline) == 0) {
    // Drain the posts that came together: one pass names them all.
    int more = 0;
    if (sem_getvalue(&g_new_ids, &more) == 0 && more > 0) continue;
    return;
  }
}

uint64_t CodeIdsOverflowed() { return g_overflowed.load(std::memory_order_relaxed); }

}  // namespace collector::python
