// The CPU sampler: per-thread timers (a perf task-clock event, else POSIX
// timers) deliver rt->signo to each thread; OnSample unwinds the thread's
// stack and adds it, merged with its open NVTX ranges (and, in a CPython
// program, with its Python frames: python/python_frames.h), to its trie.
// SIGNAL-HANDLER CODE: the functions marked so run in signal handlers and
// are async-signal-safe (no allocation, no locks, only async-signal-safe
// calls); keep them so.
// OnSample is SIGNAL-HANDLER CODE (with PathKeys, FindThread, Unwind,
// WalkPythonFrames, SplicePython and SampleTrie::AddSample, which they
// call); the timer
// functions and the source's hooks run in normal context. What makes
// unwinding safe here (no malloc, no TLS allocation, no lock a sampled
// thread can hold) is described at Unwind (unwinder.h) and PrepareUnwind
// (threads.cc): every thread prepares libunwind's per-thread state on itself
// before its timer is armed; a thread that could not (registered by another
// thread) or whose TLS a loader call may have changed is unwound without
// libunwind's per-thread cache.
#include "collector/cpu/sampler.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <utility>

#include "collector/core/runtime.h"
#include "collector/core/source.h"
#include "collector/cpu/task_clock.h"
#include "collector/python/python_frames.h"

namespace collector {
namespace internal {
namespace {

// The blocking call whose tick is being held on this thread (HeldSamples):
// the wrapper's entry and the return address into the program. Written in
// normal context, read by this thread's sampling handler.
__thread uintptr_t t_held_call __attribute__((tls_model("initial-exec"))) = 0;
__thread uintptr_t t_held_caller __attribute__((tls_model("initial-exec"))) = 0;

constexpr int64_t kThrottleFactor = 4;
constexpr uint32_t kRefreshBatch = 8;

// A tick held over a blocking call is taken as the call returns, inside the
// wrapper's epilogue or libc's signal-mask call: the stack is cut back to
// the program's caller, and the call itself becomes the leaf. Frames are
// leaf first. SIGNAL-HANDLER CODE.
int AsHeldCall(uintptr_t*& frames, int depth) {
  const uintptr_t call = t_held_call;
  std::atomic_signal_fence(std::memory_order_acquire);
  if (!call) return depth;
  const uintptr_t caller = t_held_caller;
  for (int i = 1; i < depth; ++i) {
    if (frames[i] != caller) continue;
    frames += i - 1;
    frames[0] = call;
    return depth - (i - 1);
  }
  return depth;  // the caller is not on the stack (a walk cut short): as it is
}

// The task-clock event signals its overflows until its limit runs out; the
// overflow that uses the limit up disables the event and signals POLL_HUP,
// and PERF_EVENT_IOC_REFRESH adds to the limit and enables it again. A
// limit of kRefreshBatch renewed at each POLL_HUP costs one system call per
// kRefreshBatch samples instead of one per sample (on the CI VM a kernel
// entry seemed to cost a program with a large working set tens of
// microseconds: docs/performance.md), and never lets more than kRefreshBatch signals queue on a
// thread that blocks ours (a queue that overflowed RLIMIT_SIGPENDING would
// turn into a SIGIO, which kills the program). Counting signals instead of
// waiting for POLL_HUP would not do: the kernel sends one signal for
// overflows that come faster than it delivers them. SIGNAL-HANDLER CODE.
void RenewLimit(const ThreadState* t, const siginfo_t* info) {
  if (t->perf_fd >= 0 && info->si_code == POLL_HUP) ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, kRefreshBatch);
}

void OnSample(int, siginfo_t* info, void* uc) {  // SIGNAL-HANDLER CODE
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
  const bool wall = rt->clock == CLOCK_MONOTONIC;
  const int64_t now = Now(wall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID);
  if (now < t->throttle_until_ns) {
    // Throttled: the time since the last sample goes to the next one.
    t->throttled.fetch_add(1, std::memory_order_relaxed);
    RenewLimit(t, info);
    errno = saved_errno;
    return;
  }
  const int64_t delta = now > t->last_ns ? now - t->last_ns : 0;
  t->last_ns = now;
  // The handler's cost, on the vDSO's clock: a second reading of the
  // thread's CPU clock would be a system call per sample.
  const int64_t began = wall ? now : Now(CLOCK_MONOTONIC);

  if (!t->unwind) {  // no buffers (their mapping failed)
    RenewLimit(t, info);
    errno = saved_errno;
    return;
  }
  // `partial`: the walk did not reach the stack's root; `deep`: it did, but
  // the stack was deeper than max_depth and only its outermost max_depth
  // frames are kept, so the path still merges with the complete ones.
  bool partial = false, deep = false;
  uintptr_t* frames = t->unwind;
  // libunwind's fast path touches its dynamic TLS: only when this thread
  // prepared it and no loader call has changed glibc's TLS since.
  const bool fast = t->unwind_generation.load(std::memory_order_relaxed) ==
                    rt->loader_generation.load(std::memory_order_acquire);
  const UnwindResult unwound = Unwind(uc, frames, t->unwind_capacity, fast,
                                      t->in_loader.load(std::memory_order_relaxed) > 0, t->stack);
  if (unwound.wants_libunwind && rt->flusher_running) {
    // The checkpoint thread loads it (EnsureLibunwind). One byte, once per
    // process: the pipe never fills.
    const char req = 'U';
    ssize_t w = write(rt->request_pipe[1], &req, 1);
    (void)w;
  }
  int depth = AsHeldCall(frames, unwound.depth);
  if (unwound.partial) {
    partial = true;
  } else if (depth == 0) {
    frames[0] = static_cast<uintptr_t>(static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RIP]);
    depth = 1;
    partial = true;
  } else if (depth > t->max_depth) {
    if (unwound.cut) {
      partial = true;  // a runaway walk: the innermost frames, marked partial
    } else {
      frames += depth - t->max_depth;
      deep = true;
    }
    depth = t->max_depth;
  } else if (unwound.cut) {
    partial = true;
  }
  // The stack root first, for merging in the open NVTX ranges.
  for (int i = 0, j = depth - 1; i < j; ++i, --j) std::swap(frames[i], frames[j]);
  const int open = t->range_count.load(std::memory_order_relaxed);
  int k = PathKeys(t, frames, depth, partial, open, rt->epoch.load(std::memory_order_relaxed), t->keys);
  if (deep) t->keys[k++] = kTruncatedKey;
  const uint64_t* path = t->keys;
  int64_t python_cost = 0;  // the Python walk's part of this sample's cost
  if (python::Process().enabled) {
    const int64_t python_began = Now(CLOCK_MONOTONIC);
    const python::PythonStack py = python::WalkPythonFrames(t, t->py_keys, t->py_groups, t->max_depth);
    if (py.count > 0) {
      bool mismatched = false;
      int32_t depths[kMaxRanges];
      for (int r = 0; r < open; ++r) depths[r] = ThreadState::RangePythonDepth(t->ranges[r]);
      python::SpliceOptions options;
      options.range_py_depth = depths;
      options.ranges = open;
      k = python::SplicePython(t->keys, k, t->py_keys, t->py_groups, py, python::Process().code, t->spliced,
                               t->spliced_capacity, options, &mismatched);
      path = t->spliced;
      python::CountSplice(mismatched);
    }
    python_cost = Now(CLOCK_MONOTONIC) - python_began;
  }
  const SampleTrie::NodeIndex leaf = t->trie.AddSampleAt(path, k, delta);
  if (leaf == SampleTrie::kNoIndex) t->lost.fetch_add(1, std::memory_order_relaxed);
  else if (rt->config.trace) t->sample_trace.Append({began, leaf}, rt->trace_budget);
  // A sample that cost c (an unwind that steps, on a thread off the fast
  // path; a deep stack) holds off the next ones for kThrottleFactor * c
  // after it. The handler's share of the thread's time stays near
  // 1 / (1 + kThrottleFactor) however slow unwinding gets; without that, a
  // handler slower than the sampling period starves the program (a storm of
  // new threads at 20 kHz on a loaded VM barely progressed). The wall
  // clock also counts time the thread spent preempted inside the handler:
  // under the CPU clock, a cost past a tenth of the period is taken from
  // the thread's CPU clock instead (a system call, for those samples only),
  // so that a handler preempted on a busy machine does not hold off the
  // next samples for five times its wait (CI: a thread's whole 200 ms
  // phase unsampled at 4 kHz, 20.8 % of a run's time unsampled).
  int64_t cost = Now(CLOCK_MONOTONIC) - began;
  if (!wall && cost > rt->period_ns / 10) {
    const int64_t cpu_cost = Now(CLOCK_THREAD_CPUTIME_ID) - now;
    if (cpu_cost >= 0 && cpu_cost < cost) cost = cpu_cost;
  }
  // A part of a cost taken from the CPU clock: the walk's wall time may
  // include the wait, and a part must not exceed its whole.
  if (python_cost > 0) t->python_ns.fetch_add(std::min(python_cost, std::max<int64_t>(cost, 0)), std::memory_order_relaxed);
  if (cost > 0) {
    t->throttle_until_ns = now + (1 + kThrottleFactor) * cost;
    t->handler_ns.fetch_add(cost, std::memory_order_relaxed);
  }
  RenewLimit(t, info);
  errno = saved_errno;
}

bool ArmPerfEvent(ThreadState* t) {
  const int fd = OpenTaskClock(t->tid, static_cast<uint64_t>(rt->period_ns));
  if (fd < 0) return false;
  f_owner_ex owner{F_OWNER_TID, t->tid};
  if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, rt->signo) != 0 ||
      fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_REFRESH, kRefreshBatch) != 0) {
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
  const clockid_t clock = SampleClockOf(t->tid);
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

// Start: the sampling signal's handler. Each thread's libunwind state is
// prepared when it registers (RegisterThread), before its timer is armed.
bool AttachSampler() {
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

// A registered thread is sampled from now on (registry_mutex held; a
// thread registering itself prepared its unwind state first, RegisterThread).
void ThreadStarted(ThreadState* t) {
  if (rt->active.load() && !ArmTimer(t)) rt->threads_unsampled.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

// The hooks it does not name stay null (core/source.h).
extern const Source kCpuSamplerSource = {.name = "cpu", .attach = AttachSampler, .thread_started = ThreadStarted,
    .thread_exiting = DisarmTimer, .stop = StopSampling, .resume = ResumeSampling};

}  // namespace internal

using namespace internal;

HeldSamples::HeldSamples(void* call, void* caller, const sigset_t* call_mask) {
  if (call_mask) {
    call_mask_ = *call_mask;
    has_call_mask_ = true;
  }
  if (!rt) return;
  // Before the signal is held: a tick arriving in between is in the call's
  // wrapper already.
  outer_call_ = t_held_call;
  outer_caller_ = t_held_caller;
  t_held_caller = reinterpret_cast<uintptr_t>(caller);
  std::atomic_signal_fence(std::memory_order_release);
  t_held_call = reinterpret_cast<uintptr_t>(call);
  if (call_mask) {
    sigaddset(&call_mask_, rt->signo);
    return;
  }
  sigset_t tick;
  sigemptyset(&tick);
  sigaddset(&tick, rt->signo);
  blocked_ = pthread_sigmask(SIG_BLOCK, &tick, &old_mask_) == 0;
}

HeldSamples::~HeldSamples() {
  if (!rt) return;
  const int saved_errno = errno;
  // A tick held over the call is taken here, while the wrapper still names it.
  if (blocked_) pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  t_held_call = outer_call_;
  std::atomic_signal_fence(std::memory_order_release);
  t_held_caller = outer_caller_;
  errno = saved_errno;
}

}  // namespace collector
