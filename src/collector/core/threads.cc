// The thread registry: ThreadState slots in rt->threads, appended under
// registry_mutex from normal context, found lock-free (FindThread, from the
// sampling signal handler too). Registering a thread tells the sources
// (thread_started: the CPU sampler arms its timer); a thread's exit tells
// them again (thread_exiting).
// SIGNAL-HANDLER CODE: FindThread runs in the sampling handler and is
// async-signal-safe (atomic loads only).
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

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
  // The handler's buffers, sized from --max-depth. Mapped, not allocated:
  // only the pages a deep stack reaches are ever backed.
  t->max_depth = rt->config.max_depth;
  t->unwind_capacity = t->max_depth + kWalkSlack + kUnwindSlack;
  const size_t unwind_bytes = sizeof(uintptr_t) * static_cast<size_t>(t->unwind_capacity);
  // keys, then the Python frames' buffers (python_frames.h): frame keys,
  // group ends, and the spliced path (each eval-loop frame may become many
  // Python frames, plus one line key).
  const size_t key_count = static_cast<size_t>(t->max_depth + kMaxRanges + 3);
  const size_t depth = static_cast<size_t>(t->max_depth);
  const size_t spliced_count = key_count + depth + 1;
  const size_t keys_bytes = sizeof(uint64_t) * (key_count + depth + spliced_count) + sizeof(int32_t) * depth;
  void* u = mmap(nullptr, unwind_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void* k = mmap(nullptr, keys_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (u == MAP_FAILED || k == MAP_FAILED) {
    if (u != MAP_FAILED) munmap(u, unwind_bytes);
    if (k != MAP_FAILED) munmap(k, keys_bytes);
    delete t;
    rt->threads_unsampled.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  t->unwind = static_cast<uintptr_t*>(u);
  t->keys = static_cast<uint64_t*>(k);
  t->py_keys = t->keys + key_count;
  t->spliced = t->py_keys + depth;
  t->spliced_capacity = static_cast<int>(spliced_count);
  t->py_groups = reinterpret_cast<int32_t*>(t->spliced + spliced_count);
  t->tid = tid;
  t->index = static_cast<uint32_t>(slot);
  // The thread's clock now: its first sample measures from registration.
  t->last_ns = Now(SampleClockOf(tid));
  rt->threads[slot].store(t, std::memory_order_release);
  rt->thread_count.store(slot + 1, std::memory_order_release);
  return t;
}

namespace {
// The kernel's name of a thread of this process (comm), "" if unreadable.
std::string OsThreadName(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", static_cast<int>(tid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[64];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  std::string name(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

// The name every thread has until the program names it: the one exec gave
// the process (its file's name, 15 bytes at most), read when the main
// thread registers. Under registry_mutex. A plain array: the last
// checkpoint runs at exit, after static objects' destructors.
constinit char unnamed_thread_name[17] = {};
}  // namespace

void OnThreadExit(void* p) {
  auto* t = static_cast<ThreadState*>(p);
  {
    // Its last name, while it can still be read: a checkpoint after its
    // exit cannot.
    char name[17] = {};
    if (prctl(PR_GET_NAME, name) == 0) {
      std::lock_guard<std::mutex> lock(registry_mutex);
      t->os_name = name;
    }
  }
  SourcesThreadExiting(t);  // the CPU sampler disarms its timer
  t->alive.store(false, std::memory_order_release);
  t_state = nullptr;
  RemoveAltStack();
}

ThreadState* RegisterThread(pid_t tid, bool current) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (tid == getpid() && !unnamed_thread_name[0])
    std::snprintf(unnamed_thread_name, sizeof unnamed_thread_name, "%s", OsThreadName(tid).c_str());
  ThreadState* t = AddThread(tid);
  if (!t) return nullptr;
  if (current) {
    t_state = t;
    pthread_setspecific(exit_key, t);
    t->stack = ThisThreadStack(tid == getpid());
    // Before the timer: the first sample must find libunwind's per-thread
    // state already made. A thread registered by another one (it existed
    // before us) cannot be prepared from here; its samples step the slow,
    // TLS-free way until it prepares itself (RefreshUnwind).
    PrepareUnwind(t);
  }
  SourcesThreadStarted(t);  // the CPU sampler arms its timer
  return t;
}

void PrepareUnwind(ThreadState* t) {
  // While a loader call runs elsewhere glibc's TLS generation may move under
  // us: stay on the slow path until the next chance.
  if (rt->loaders_active.load(std::memory_order_acquire) != 0) return;
  const int64_t generation = rt->loader_generation.load(std::memory_order_acquire);
  if (!PrepareUnwindThread()) return;
  t->unwind_generation.store(generation, std::memory_order_release);
}

// Caller holds flush_mutex (nvtx_name is set under registry_mutex; a
// checkpoint may read a name being replaced only if both lock).
std::string ThreadName(ThreadState& t) {
  // A living thread's name now (the kernel may reuse an exited one's id).
  const std::string os = t.alive.load(std::memory_order_acquire) ? OsThreadName(t.tid) : std::string();
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (!os.empty()) t.os_name = os;
  if (!t.nvtx_name.empty()) return t.nvtx_name;
  if (!t.python_name.empty()) return t.python_name;
  if (!t.os_name.empty() && t.os_name != unnamed_thread_name) return t.os_name;
  return t.index == 0 ? "main thread" : "thread " + std::to_string(t.index);
}

void DistinguishThreadNames(std::vector<std::string>& names) {
  std::unordered_map<std::string, int> uses;
  for (const std::string& n : names)
    if (!n.empty()) ++uses[n];
  for (size_t i = 0; i < names.size(); ++i)
    if (!names[i].empty() && uses[names[i]] > 1) names[i] += " (thread " + std::to_string(i) + ")";
}

bool StartOwnThread(void* (*main)(void*), pthread_t* thread) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static auto real_create = reinterpret_cast<CreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
  pthread_t handle;
  const bool started = real_create != nullptr && real_create(&handle, nullptr, main, nullptr) == 0;
  if (started) {
    pthread_detach(handle);
    if (thread) *thread = handle;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return started;
}

void NameThreads(std::span<const std::pair<pid_t, std::string>> names, std::string ThreadState::*field) {
  if (names.empty()) return;
  std::lock_guard<std::mutex> lock(registry_mutex);
  const size_t n = rt->thread_count.load();
  for (size_t i = 0; i < n; ++i) {
    ThreadState* t = rt->threads[i].load();
    if (t == nullptr || !t->alive.load(std::memory_order_relaxed)) continue;
    auto it = std::lower_bound(names.begin(), names.end(), t->tid,
                               [](const std::pair<pid_t, std::string>& e, pid_t tid) { return e.first < tid; });
    if (it != names.end() && it->first == t->tid && t->*field != it->second) t->*field = it->second;
  }
}

}  // namespace internal

using namespace internal;

void RefreshUnwind() {
  ThreadState* t = t_state;
  if (!t || !rt) return;
  if (t->unwind_generation.load(std::memory_order_relaxed) != rt->loader_generation.load(std::memory_order_relaxed))
    PrepareUnwind(t);
}

void RegisterCurrentThread(std::string python_name) {
  if (!rt || !rt->active.load()) return;
  if (t_state) return;
  ThreadState* t = RegisterThread(Tid(), true);
  InstallAltStack();
  if (t != nullptr && !python_name.empty()) {
    std::lock_guard<std::mutex> lock(registry_mutex);
    t->python_name = std::move(python_name);
  }
}

namespace {
// The name NameNextThread left for the calling thread's next thread.
struct NextThreadName {
  std::string name;
  uintptr_t lo = 0, hi = 0;
};
thread_local NextThreadName t_next_name;  // initialized on first use in each thread
}  // namespace

void NameNextThread(std::string_view name, uintptr_t lo, uintptr_t hi) {
  t_next_name.name.assign(name);
  t_next_name.lo = lo;
  t_next_name.hi = hi;
}

std::string TakeNextThreadName(const void* start_routine) {
  if (t_next_name.name.empty()) return {};
  const auto start = reinterpret_cast<uintptr_t>(start_routine);
  std::string name = std::move(t_next_name.name);
  t_next_name.name.clear();
  return start >= t_next_name.lo && start < t_next_name.hi ? name : std::string();
}

}  // namespace collector
