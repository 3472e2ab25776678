// The CPU sampler: per-thread timers (a perf task-clock event, else POSIX
// timers) deliver rt->signo to each thread; OnSample unwinds the thread's
// stack and adds it, merged with its open NVTX ranges, to its trie.
// SIGNAL-HANDLER CODE: the functions marked so run in signal handlers and
// are async-signal-safe (no allocation, no locks, only async-signal-safe
// calls); keep them so.
// OnSample and SamplerInterrupts are SIGNAL-HANDLER CODE (with PathKeys,
// FindThread, Unwind and SampleTrie::AddSample, which they call); the timer
// functions and the source's hooks run in normal context.
#include "collector/cpu/sampler.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <utility>

#include "collector/core/runtime.h"
#include "collector/core/source.h"

namespace collector {
namespace internal {
namespace {

void OnSample(int, siginfo_t*, void* uc) {  // SIGNAL-HANDLER CODE
  const int saved_errno = errno;
  ThreadState* t = t_state;
  if (!t && rt) {
    t = FindThread(Tid());  // a thread registered by another (it existed before us)
    t_state = t;
  }
  if (!t || !rt->active.load(std::memory_order_acquire)) {
    errno = saved_errno;
    return;
  }
  t->interrupts.fetch_add(1, std::memory_order_relaxed);
  const int64_t now = Now(rt->clock == CLOCK_MONOTONIC ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID);
  const int64_t delta = now > t->last_ns ? now - t->last_ns : 0;
  t->last_ns = now;

  bool truncated = false;
  int depth;
  if (t->in_loader.load(std::memory_order_relaxed) > 0) {
    // libunwind may need the loader's lock, which this thread may hold: keep
    // only the interrupted instruction.
    t->unwind[0] = static_cast<uintptr_t>(static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RIP]);
    depth = 1;
    truncated = true;
  } else {
    // A thread not yet prepared (it existed before the collector) is
    // unwound without libunwind's TLS, whose first use would malloc here.
    depth = Unwind(uc, t->unwind, kMaxDepth, &truncated, t->unwind_ready.load(std::memory_order_relaxed));
    if (depth == 0) {
      t->unwind[0] = static_cast<uintptr_t>(static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RIP]);
      depth = 1;
      truncated = true;
    }
  }
  // The stack root first, for merging in the open NVTX ranges.
  for (int i = 0, j = depth - 1; i < j; ++i, --j) std::swap(t->unwind[i], t->unwind[j]);
  const int k = PathKeys(t, t->unwind, depth, truncated, t->range_count.load(std::memory_order_relaxed),
                         rt->epoch.load(std::memory_order_relaxed), t->keys);
  if (!t->trie.AddSample(t->keys, k, delta)) t->lost.fetch_add(1, std::memory_order_relaxed);
  if (t->perf_fd >= 0) ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, 1);  // one more overflow signal
  errno = saved_errno;
}

bool ArmPerfEvent(ThreadState* t) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = static_cast<uint64_t>(rt->period_ns);
  attr.disabled = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, t->tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) return false;
  f_owner_ex owner{F_OWNER_TID, t->tid};
  if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, rt->signo) != 0 ||
      fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
    close(fd);
    return false;
  }
  t->perf_fd = fd;
  return true;
}

}  // namespace

bool ArmTimer(ThreadState* t) {
  if (rt->clock != CLOCK_MONOTONIC && rt->use_perf.load() != 0) {
    const bool ok = ArmPerfEvent(t);
    if (rt->use_perf.load() == -1) rt->use_perf.store(ok ? 1 : 0);
    if (ok) {
      t->has_timer = true;
      return true;
    }
  }
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = rt->signo;
  sev._sigev_un._tid = t->tid;
  const clockid_t clock = rt->clock == CLOCK_MONOTONIC ? CLOCK_MONOTONIC : ThreadCpuClock(t->tid);
  if (timer_create(clock, &sev, &t->timer) != 0) return false;
  itimerspec its{};
  its.it_interval.tv_sec = rt->period_ns / 1000000000;
  its.it_interval.tv_nsec = rt->period_ns % 1000000000;
  its.it_value = its.it_interval;
  if (timer_settime(t->timer, 0, &its, nullptr) != 0) {
    timer_delete(t->timer);
    return false;
  }
  t->has_timer = true;
  return true;
}

void DisarmTimer(ThreadState* t) {
  if (!t->has_timer) return;
  if (t->perf_fd >= 0) {
    const int fd = t->perf_fd;
    t->perf_fd = -1;  // the handler stops refreshing before the descriptor goes
    close(fd);
  } else {
    timer_delete(t->timer);
  }
  t->has_timer = false;
}

namespace {

void StopSampling() {
  rt->active.store(false, std::memory_order_release);
  std::lock_guard<std::mutex> lock(registry_mutex);
  const size_t n = rt->thread_count.load();
  for (size_t i = 0; i < n; ++i)
    if (ThreadState* t = rt->threads[i].load()) DisarmTimer(t);
}

void ResumeSampling() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  rt->active.store(true, std::memory_order_release);
  const size_t n = rt->thread_count.load();
  for (size_t i = 0; i < n; ++i) {
    ThreadState* t = rt->threads[i].load();
    if (t && t->alive.load() && !t->has_timer) ArmTimer(t);
  }
}

// Start: the sampling signal's handler (libunwind was loaded, and this
// thread prepared, by Start).
bool Attach() {
  struct sigaction sa {};
  sa.sa_sigaction = OnSample;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(rt->signo, &sa, nullptr) != 0) {
    Warn("cannot install the sampling signal handler; not profiling");
    return false;
  }
  return true;
}

// A registered thread is sampled from now on (registry_mutex held). The
// calling thread is prepared for unwinding before its timer is armed; a
// thread registered by another (it existed before the collector) is
// prepared at its first interposed call (PrepareCurrentThread).
void ThreadStarted(ThreadState* t) {
  if (t->tid == Tid() && PrepareUnwindThread()) t->unwind_ready.store(true, std::memory_order_relaxed);
  if (rt->active.load() && !ArmTimer(t)) rt->threads_unsampled.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

// The hooks it does not name stay null (core/source.h).
extern const Source kCpuSamplerSource = {.name = "cpu", .attach = Attach, .thread_started = ThreadStarted,
    .thread_exiting = DisarmTimer, .stop = StopSampling, .resume = ResumeSampling};

}  // namespace internal

using namespace internal;

void PrepareCurrentThread() {
  ThreadState* t = t_state;
  if (!t || t->unwind_ready.load(std::memory_order_relaxed)) return;
  if (PrepareUnwindThread()) t->unwind_ready.store(true, std::memory_order_relaxed);
}

// SIGNAL-HANDLER CODE (reads only): called around blocking calls that a
// sampling signal may interrupt.
uint32_t SamplerInterrupts() {
  ThreadState* t = t_state;
  return t ? t->interrupts.load(std::memory_order_relaxed) : 0;
}

}  // namespace collector
