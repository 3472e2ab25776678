// The thread-time source: how much of the program's threads' time the
// samples saw. Each sample carries the thread's time since the previous one,
// so what a thread does after its last sample is never recorded — for a
// thread shorter than one sampling period, that is all of it (1,000 threads
// of 0.5 ms each at 1 kHz leave almost nothing in the tree). Each thread
// measures that tail on its own clock as it exits (thread_exiting, after the
// CPU sampler has disarmed its timer); the run gets the totals as
// diagnostics (sampled_ns, unsampled_ns; threads still running when sampling
// stops add their tails then), the summary its share, and with
// --account-short-threads the tail is added, without a sample, to the
// thread's start routine under the thread-start frames that called it.
//
// Normal context only. Each thread writes its own ThreadState; the totals are
// atomics; add_to_run runs under flush_mutex like every source's.
#include <signal.h>

#include <mutex>

#include "collector/core/runtime.h"
#include "collector/core/runtime_state.h"
#include "collector/core/source.h"

namespace collector {
namespace internal {
namespace {

// The clock a thread's samples are measured on, read for thread `t` (which
// may be another thread of this process); -1 when it cannot be read (the
// thread is gone).
int64_t ThreadClockNow(const ThreadState& t) {
  timespec ts;
  if (clock_gettime(SampleClockOf(t.tid), &ts) != 0) return -1;
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The calling thread is exiting; its timer is disarmed (the CPU sampler's
// hook runs first).
void ThreadExiting(ThreadState* t) {
  // A sampling signal already queued must not write the trie while this
  // thread does: block it; it lands (harmlessly) after.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, rt->signo);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  const int64_t now = ThreadClockNow(*t);
  const int64_t tail = now > t->last_ns ? now - t->last_ns : 0;
  if (tail > 0) {
    t->last_ns = now;
    t->unsampled_ns += tail;
    rt->exited_unsampled_ns.fetch_add(tail, std::memory_order_relaxed);
    if (rt->config.account_short_threads && t->start_routine) {
      uint64_t keys[ThreadState::kStartFrames + 1];
      const uint32_t epoch = rt->epoch.load(std::memory_order_relaxed);
      int k = 0;
      for (int i = 0; i < t->start_depth; ++i) keys[k++] = MakeKey(t->start_frames[i], epoch);
      keys[k++] = MakeKey(t->start_routine, epoch);
      if (t->trie.AddSample(keys, k, tail, /*samples=*/0))
        rt->accounted_unsampled_ns.fetch_add(tail, std::memory_order_relaxed);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// Sampling stops (exit, exec, a fatal signal): the tails of the threads
// still running, measured now, before the final write's own work
// (symbolizing) runs on their clocks. Their last_ns moves on, so a resumed
// recording (a failed exec) does not count them twice.
void StopThreadTime() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  const size_t n = rt->thread_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    ThreadState* t = rt->threads[i].load(std::memory_order_acquire);
    if (!t || !t->alive.load(std::memory_order_acquire)) continue;
    const int64_t now = ThreadClockNow(*t);
    if (now > t->last_ns) {
      rt->stopped_unsampled_ns.fetch_add(now - t->last_ns, std::memory_order_relaxed);
      t->last_ns = now;
    }
  }
}

void AddThreadTimeToRun(RunContext& run) {
  const int64_t accounted = rt->accounted_unsampled_ns.load(std::memory_order_relaxed);
  run.meta.diagnostics["sampled_ns"] = run.builder.stats().time_ns - accounted;
  run.meta.diagnostics["unsampled_ns"] = rt->exited_unsampled_ns.load(std::memory_order_relaxed) +
                                         rt->stopped_unsampled_ns.load(std::memory_order_relaxed);
  if (rt->config.account_short_threads) run.meta.diagnostics["accounted_unsampled_ns"] = accounted;
}

void ResetAfterFork() {
  rt->exited_unsampled_ns.store(0);
  rt->accounted_unsampled_ns.store(0);
  rt->stopped_unsampled_ns.store(0);
}

}  // namespace

// After the CPU sampler in the table: its thread_exiting disarms the timer
// before this one reads the clock.
extern const Source kThreadTimeSource = {
    .name = "thread-time", .thread_exiting = ThreadExiting, .stop = StopThreadTime, .add_to_run = AddThreadTimeToRun, .fork_child = ResetAfterFork};

}  // namespace internal

using namespace internal;

void NoteThreadStart(void* start_routine, void* start_return_address) {
  ThreadState* t = t_state;
  if (!t || !rt) return;
  t->start_routine = reinterpret_cast<uintptr_t>(start_routine);
  if (!rt->config.account_short_threads) return;
  // The thread-start frames above the trampoline (start_thread, clone3), so
  // the tail's path begins where this thread's samples begin and merges with
  // them. They are the same for every thread that start_thread starts from
  // the same place: unwound once (a first unwind on a thread costs about a
  // millisecond of libunwind set-up), then copied.
  static std::mutex mutex;
  static uintptr_t known_return = 0;
  static uintptr_t known_frames[ThreadState::kStartFrames];
  static int known_depth = 0;
  const auto ret = reinterpret_cast<uintptr_t>(start_return_address);
  std::lock_guard<std::mutex> lock(mutex);
  if (known_return != ret) {
    uintptr_t stack[64];
    const int n = UnwindHere(stack, 64, t->stack);
    int from = 0;
    while (from < n && stack[from] != ret) ++from;
    if (from == n) {
      known_frames[0] = ret;  // at least start_thread: the path counts as complete
      known_depth = 1;
    } else {
      // Root first, the outermost kept when there are more than fit.
      known_depth = n - from > ThreadState::kStartFrames ? ThreadState::kStartFrames : n - from;
      for (int i = 0; i < known_depth; ++i) known_frames[i] = stack[n - 1 - i];
    }
    known_return = ret;
  }
  for (int i = 0; i < known_depth; ++i) t->start_frames[i] = known_frames[i];
  t->start_depth = known_depth;
}

}  // namespace collector
