// The thread registry: ThreadState slots in rt->threads, appended under
// registry_mutex from normal context, found lock-free (FindThread, from the
// sampling signal handler too). Registering a thread tells the sources
// (thread_started: the CPU sampler arms its timer); a thread's exit tells
// them again (thread_exiting).
// SIGNAL-HANDLER CODE: FindThread runs in the sampling handler and is
// async-signal-safe (atomic loads only).
#include <pthread.h>

#include <new>
#include <string>

#include "collector/core/runtime.h"
#include "collector/core/runtime_state.h"
#include "collector/core/source.h"
#include "collector/cpu/sampler.h"

namespace collector {
namespace internal {

ThreadState* FindThread(pid_t tid) {  // SIGNAL-HANDLER CODE
  const size_t n = rt->thread_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    ThreadState* t = rt->threads[i].load(std::memory_order_acquire);
    if (t && t->tid == tid && t->alive.load(std::memory_order_relaxed)) return t;
  }
  return nullptr;
}

ThreadState* AddThread(pid_t tid) {
  const size_t slot = rt->thread_count.load(std::memory_order_relaxed);
  if (slot >= kMaxThreads) {
    rt->threads_unsampled.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  auto* t = new (std::nothrow) ThreadState;
  if (!t) return nullptr;
  t->tid = tid;
  t->index = static_cast<uint32_t>(slot);
  // The thread's clock now: its first sample measures from registration.
  t->last_ns = rt->clock == CLOCK_MONOTONIC ? Now(CLOCK_MONOTONIC) : Now(ThreadCpuClock(tid));
  rt->threads[slot].store(t, std::memory_order_release);
  rt->thread_count.store(slot + 1, std::memory_order_release);
  return t;
}

void OnThreadExit(void* p) {
  auto* t = static_cast<ThreadState*>(p);
  SourcesThreadExiting(t);  // the CPU sampler disarms its timer
  t->alive.store(false, std::memory_order_release);
  t_state = nullptr;
  RemoveAltStack();
}

ThreadState* RegisterThread(pid_t tid, bool current) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  ThreadState* t = AddThread(tid);
  if (!t) return nullptr;
  if (current) {
    t_state = t;
    pthread_setspecific(exit_key, t);
  }
  SourcesThreadStarted(t);  // the CPU sampler arms its timer
  return t;
}

// Caller holds flush_mutex (nvtx_name is set under registry_mutex; a
// checkpoint may read a name being replaced only if both lock).
std::string ThreadName(const ThreadState& t) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (!t.nvtx_name.empty()) return t.nvtx_name;
  return t.index == 0 ? "main thread" : "thread " + std::to_string(t.index);
}

}  // namespace internal

using namespace internal;

void RegisterCurrentThread() {
  if (!rt || !rt->active.load()) return;
  if (t_state) return;
  RegisterThread(Tid(), true);
  InstallAltStack();
}

}  // namespace collector
