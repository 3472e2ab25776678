// The collector runtime's process-global state, shared by the files of the
// runtime core (core/), the CPU sampler (cpu/), NVTX (nvtx/) and GPU launch
// capture (gpu/launch_capture.cc). INTERNAL: only those files include it;
// the rest of the world goes through runtime.h and gpu_runtime.h.
//
// Ownership: `rt` is created by Start() (lifecycle.cc) and never destroyed:
// host code, and our signal handlers, may run after static destructors.
// Each ThreadState is created by AddThread (threads.cc) and owned by its
// slot in rt->threads for the life of the process (a fork child leaks the
// parent's, see ForkChild).
//
// Thread-safety, per member group of Runtime:
//  - config, signo, clock, period_ns, own_module: written by Start (and by
//    ForkChild in the single-threaded child), read-only afterwards.
//  - threads/thread_count: slots are appended only under registry_mutex, from
//    normal context; readers (signal handlers included) load thread_count
//    with acquire and never see a half-made slot.
//  - flush_mutex guards the run's metadata, the symbolizer, frozen frames
//    and every checkpoint write (WriteRun).
//  - modules_mutex guards the unloaded modules (taken after dlclose, and by
//    LookupSymbols under flush_mutex).
//  - nvtx_mutex guards the NVTX names, start/end ranges, problems and the
//    iteration records.
//  - trim_mutex guards trim_symbolizer (OutermostFrame, at launches and
//    NVTX pushes); nothing else is taken under it but what the symbolizer
//    itself needs (the loader's lock).
//  - atomics (active, epoch, use_perf, current_iteration, fatal_*): any
//    thread, any context.
// Lock order (ForkPrepare takes all five): trim_mutex, flush_mutex,
// modules_mutex, registry_mutex, nvtx_mutex.
//
// SIGNAL HANDLERS touch: rt->active, rt->clock, rt->epoch,
// rt->loader_generation, rt->config (nvtx_placement),
// rt->threads/thread_count (FindThread), the current thread's ThreadState
// (trie, unwind, keys, max_depth, unwind_capacity, unwind_generation, stack,
// ranges, range_count, range_frames, in_loader, last_ns, throttle_until_ns,
// throttled, handler_ns, lost, perf_fd),
// t_state, t_held_call and t_held_caller (cpu/sampler.cc),
// and, in OnFatal, fatal_once, fatal_signal, fatal_tid, fatal_pc,
// fatal_address, deferred_fatal, final_writer, flusher_running,
// flusher_tid, request_pipe and ack_pipe. Nothing else:
// code reaching those from normal context must keep them consistent at
// every instruction (see the fences in NvtxPush/NvtxPop).
// SIGNAL-HANDLER CODE here: Now and Tid (below) are async-signal-safe and
// used by the handlers; keep them so.
#pragma once

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collector/core/config.h"
#include "collector/core/trace_log.h"
#include "collector/cpu/sample_trie.h"
#include "collector/cpu/modules.h"
#include "collector/cpu/symbolizer.h"
#include "collector/cpu/unwinder.h"
#include "collector/gpu/gpu_metrics.h"  // kNoIteration
#include "collector/nvtx/pattern_module.h"
#include "store/trace.h"
#include "store/iterations.h"
#include "store/run_meta.h"
#include <link.h>

namespace collector::internal {

// Stacks captured at NVTX pushes and GPU launches (normal context, on the
// caller's stack) keep at most this many frames; sampled stacks keep
// config.max_depth (--max-depth).
constexpr int kMaxDepth = 512;
// A sampled stack is walked for at most max_depth + kWalkSlack frames, to
// reach its root and keep the outermost max_depth; a runaway walk (a
// corrupt stack) stops there.
constexpr int kWalkSlack = 16384;
constexpr int kMaxRanges = 128;
constexpr int kRangeFrames = 16384;
// Python frames kept for the open ranges' pushes, all ranges together.
constexpr int kRangePyFrames = 4096;
constexpr size_t kMaxThreads = 16384;

// SIGNAL-HANDLER CODE: async-signal-safe.
inline int64_t Now(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}
// CLOCK_REALTIME minus CLOCK_MONOTONIC, from readings taken back to back
// (the realtime pair that brackets the monotonic reading most tightly of a
// few tries, its midpoint): what moves the collector's monotonic times
// (samples, NVTX pushes and pops) to the trace's epoch nanoseconds, within
// a microsecond of the program's own CLOCK_REALTIME readings.
inline int64_t RealtimeMinusMonotonicNs() {
  int64_t best = 0, best_gap = -1;
  for (int i = 0; i < 5; ++i) {
    const int64_t r1 = Now(CLOCK_REALTIME), m = Now(CLOCK_MONOTONIC), r2 = Now(CLOCK_REALTIME);
    if (best_gap < 0 || r2 - r1 < best_gap) best_gap = r2 - r1, best = r1 + (r2 - r1) / 2 - m;
    if (best_gap < 1000) break;
  }
  return best;
}
inline pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }  // SIGNAL-HANDLER CODE

inline clockid_t ThreadCpuClock(pid_t tid) {
  // The kernel's per-thread CPU clock id (MAKE_THREAD_CPUCLOCK(tid, SCHED)),
  // usable for any thread of this process, not only the calling one.
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6);
}

struct ThreadState {
  SampleTrie trie;
  pid_t tid = 0;
  uint32_t index = 0;  // registration order in this process; 0 = main thread
  timer_t timer{};
  bool has_timer = false;
  int perf_fd = -1;  // task-clock event, when the kernel lets us open one
  std::atomic<bool> alive{true};
  int64_t last_ns = 0;  // clock reading at the previous sample
  // Ticks before this clock reading are not unwound (OnSample's throttle);
  // `throttled` counts them.
  int64_t throttle_until_ns = 0;
  std::atomic<uint64_t> throttled{0};
  // Time spent in this thread's sampling handler after its clock reading
  // (unwinding, the trie): the collector's own cost per thread.
  std::atomic<int64_t> handler_ns{0};
  // The part of handler_ns spent reading and splicing Python frames,
  // measured inside the same samples: the walk's cost without comparing
  // two runs (whose speed can differ by 1.7x on a shared host).
  std::atomic<int64_t> python_ns{0};
  std::atomic<int> in_loader{0};
  std::atomic<uint64_t> lost{0};
  // The sampling handler's buffers, mapped at registration (AddThread) from
  // config.max_depth: `unwind` holds unwind_capacity addresses (the walk
  // limit), `keys` max_depth + kMaxRanges + 3. Null when the mapping failed
  // (the thread is then not sampled).
  int max_depth = 0;
  int unwind_capacity = 0;
  uintptr_t* unwind = nullptr;
  uint64_t* keys = nullptr;
  // Python frames (python/python_frames.h), in the same mapping as `keys`:
  // a sample's Python frame keys and group ends (max_depth each), and its
  // path with them spliced in (spliced_capacity keys). py_tstate: this
  // thread's PyThreadState once found (1: none, looked again after
  // py_retry samples). Only the thread's own handler touches them.
  uint64_t* py_keys = nullptr;
  int32_t* py_groups = nullptr;
  uint64_t* spliced = nullptr;
  int spliced_capacity = 0;
  uintptr_t py_tstate = 0;
  uint32_t py_retry = 0;
  // The code ids (python/code_ids.h) this thread's samples met last, by
  // code address: a pair's id never changes, so a hit skips the shared
  // table (a random access or two per Python frame, a third of the walk's
  // cost at depth 32).
  struct PyCodeIdCache {
    uintptr_t code = 0, globals = 0;
    uint64_t id = 0;
  };
  static constexpr int kPyCodeIdCache = 64;
  PyCodeIdCache py_code_ids[kPyCodeIdCache];
  // The loader generation (Runtime::loader_generation) at which this thread
  // last prepared its libunwind state on itself (PrepareUnwindThread); the
  // handler takes libunwind's fast path only while it is current. -1: never
  // (threads registered by another thread start so).
  std::atomic<int64_t> unwind_generation{-1};
  // The thread's stack, for the handler's own walker (unwinder.h); written
  // by the thread itself at registration, {0, 0} when another registered it.
  StackBounds stack;

  // NVTX push/pop ranges open on this thread: written by the thread itself
  // in normal context, read by its own signal handler (range_count is
  // published after the entry is complete).
  struct OpenRange {
    uint64_t key = 0;
    int64_t start_ns = 0;
    uint32_t frames_offset = 0;  // push-time stack in range_frames, root first
    uint32_t depth = 0;          // frames up to the caller of the push
    uint32_t domain = 0;
    bool iteration = false;
    // Wall time of the ranges pushed inside this one that already popped:
    // subtracted at its pop, so the range's node holds only its own time
    // and the tree's inclusive sum is its wall time, nested ranges not
    // counted twice.
    int64_t nested_ns = 0;
    // Python frames at the push (python_frames.h), in range_py from
    // py_offset: py_count keys, innermost first (-1: not walked), and
    // py_groups group ends; py_complete: the walk reached the outermost.
    uint32_t py_offset = 0;
    int32_t py_count = -1;
    int32_t py_groups = 0;
    bool py_complete = false;
    // --trace: the range's node in range_trie, made at the push, so that a
    // checkpoint can write the range as open before it pops; the pop adds
    // to it when its path is still the push's: the same `below` ranges
    // under it (pushes go on top, so only a pop out of order below it
    // changes them, and its index with them) and the same loader epoch.
    // SampleTrie::kNoIndex without --trace.
    uint32_t trace_node = UINT32_MAX;
    int32_t below = 0;
    uint32_t epoch = 0;
  };
  OpenRange ranges[kMaxRanges];
  // How many Python frames were active at a range's push, for the splice
  // (-1: unknown).
  static int32_t RangePythonDepth(const OpenRange& r) { return r.py_complete ? r.py_count : -1; }
  std::atomic<int> range_count{0};
  int range_overflow = 0;  // pushes beyond kMaxRanges, popped first
  uintptr_t range_frames[kRangeFrames];
  uint64_t range_py[kRangePyFrames];
  int32_t range_py_groups[kRangePyFrames];
  SampleTrie range_trie;   // pop-time durations and counts, marks (owner thread only)
  // --trace: this thread's samples (written by its sampling handler) and
  // NVTX range instances (written at pop), trie leaves with their times.
  SampleTraceLog sample_trace;
  RangeTraceLog range_trace;
  // A thread's open ranges (key, start, range_trie node), outermost first,
  // republished by the thread at each push and pop for other threads to
  // read. A seqlock: seq is odd while the owner rewrites them.
  struct PublishedRanges {
    std::atomic<uint32_t> seq{0};
    std::atomic<int> count{0};
    std::atomic<uint64_t> key[kMaxRanges];
    std::atomic<int64_t> start_ns[kMaxRanges];
    std::atomic<uint32_t> node[kMaxRanges];
    // The owner's `n` open ranges. One writer.
    void Publish(const OpenRange* ranges, int n) {
      const uint32_t s = seq.load(std::memory_order_relaxed);
      seq.store(s + 1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      for (int i = 0; i < n; ++i) {
        key[i].store(ranges[i].key, std::memory_order_relaxed);
        start_ns[i].store(ranges[i].start_ns, std::memory_order_relaxed);
        node[i].store(ranges[i].trace_node, std::memory_order_relaxed);
      }
      count.store(n, std::memory_order_relaxed);
      seq.store(s + 2, std::memory_order_release);
    }
    // A consistent copy into the arrays given (kMaxRanges each; null: not
    // wanted), trying `attempts` times; the count, 0 when the owner kept
    // rewriting them.
    int Read(uint64_t* keys, int64_t* starts, uint32_t* nodes, int attempts) const {
      for (int attempt = 0; attempt < attempts; ++attempt) {
        const uint32_t before = seq.load(std::memory_order_acquire);
        if (before & 1) continue;
        int n = count.load(std::memory_order_relaxed);
        n = n < 0 ? 0 : n > kMaxRanges ? kMaxRanges : n;
        for (int i = 0; i < n; ++i) {
          if (keys) keys[i] = key[i].load(std::memory_order_relaxed);
          if (starts) starts[i] = start_ns[i].load(std::memory_order_relaxed);
          if (nodes) nodes[i] = node[i].load(std::memory_order_relaxed);
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        if (seq.load(std::memory_order_relaxed) == before) return n;
      }
      return 0;
    }
    // Forgets them (a forked child: the parent's).
    void Reset() {
      seq.store(0, std::memory_order_relaxed);
      count.store(0, std::memory_order_relaxed);
    }
  };
  // --trace: this thread's open ranges, read by checkpoints, which write
  // them as ranges still open (a crash keeps them).
  PublishedRanges open_trace;
  // Names given to the thread (ThreadName prefers them in this order):
  // nvtxNameOsThread's, then its Python threading.Thread's
  // (python/python_threads.cc), then the kernel's (comm: what
  // pthread_setname_np and prctl(PR_SET_NAME) set; read at checkpoints
  // while the thread lives and by the thread itself at its exit). Under
  // registry_mutex.
  std::string nvtx_name;
  std::string python_name;
  std::string os_name;
  // GPU launch sites (gpu_runtime.h): written by this thread at CUDA calls.
  SampleTrie launch_trie;
  std::unordered_map<uintptr_t, bool> gpu_runtime_frame;  // return address → trimmed at launches (owner only)
  // Where the thread started (cpu/thread_time.cc): its start routine and,
  // root first, the return addresses of the thread-start frames that called
  // it (clone3, start_thread). Written by the thread at registration.
  static constexpr int kStartFrames = 8;
  uintptr_t start_routine = 0;
  uintptr_t start_frames[kStartFrames] = {};
  int start_depth = 0;
  // Time after its last sample, measured by the thread as it exits.
  int64_t unsampled_ns = 0;
};

// The thread registry's kMaxThreads slots (128 KiB) in an anonymous
// mapping: the kernel hands out zeroed pages as slots are first used, where
// a zero-initialized array in Runtime cost every process 32 page faults at
// start, most of a short process's overhead on a VM. Never unmapped (the
// Runtime lives as long as the process).
class ThreadSlots {
 public:
  ThreadSlots() {
    void* p = mmap(nullptr, kMaxThreads * sizeof(std::atomic<ThreadState*>), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) slots_ = static_cast<std::atomic<ThreadState*>*>(p);
  }
  ThreadSlots(const ThreadSlots&) = delete;
  ThreadSlots& operator=(const ThreadSlots&) = delete;
  bool ok() const { return slots_ != nullptr; }
  std::atomic<ThreadState*>& operator[](size_t i) { return slots_[i]; }

 private:
  std::atomic<ThreadState*>* slots_ = nullptr;  // all-zero bits: every slot null
};

// The entries an exec'd image's environment gets on top of the one passed to
// exec (ExecEnvironment): the recording's settings and run keys, and whether
// and where the collector goes into LD_PRELOAD. Immutable once published.
struct ExecOverlay {
  std::vector<std::string> entries;  // "NAME=VALUE", ours: they win
  std::string own;                   // the collector's path
  bool follow = true;                // false: the collector is taken out
};

struct Runtime {
  CollectorConfig config;
  // --trace: the bytes of events the process may still keep (config's
  // trace_limit_bytes at the start and in a forked child) and those it
  // could not; every thread's trace logs draw from it.
  TraceBudget trace_budget;
  int signo = 0;
  clockid_t clock = CLOCK_THREAD_CPUTIME_ID;
  int64_t period_ns = 1000000;
  // CPU-time sampling source: the kernel's task-clock software event (an
  // hrtimer on the thread's CPU time, so any rate works), else POSIX
  // thread-CPU-clock timers, which the kernel checks only at its tick (a
  // 250 Hz kernel gives at most 250 samples/s; each still carries the
  // measured CPU time, so totals stay right).
  std::atomic<int> use_perf{-1};  // -1 untried, 0 no, 1 yes
  std::atomic<bool> active{false};  // sampling on
  // Bumped when dlclose unloads a module; saturates at kEpochMask.
  std::atomic<uint32_t> epoch{0};
  // Bumped when any thread enters or leaves dlopen/dlclose: a library with
  // TLS changes glibc's TLS generation, and a thread's next access to
  // dynamic TLS (libunwind's trace cache) may then free or grow its TLS
  // vector with malloc. Odd while a loader call is in progress.
  std::atomic<int64_t> loader_generation{0};
  std::atomic<int> loaders_active{0};
  ThreadSlots threads;
  std::atomic<size_t> thread_count{0};
  std::atomic<uint64_t> threads_unsampled{0};
  // Thread time that fell after a thread's last sample (cpu/thread_time.cc):
  // of exited threads, of those running when sampling stopped, and how much
  // of it was added to start routines.
  std::atomic<int64_t> exited_unsampled_ns{0};
  std::atomic<int64_t> stopped_unsampled_ns{0};
  std::atomic<int64_t> accounted_unsampled_ns{0};

  std::mutex flush_mutex;  // checkpoint writes, symbolizer, run metadata
  store::RunMeta meta;
  // This process image's run key (config.h): its run file is
  // spool_dir/run_key.run. A new one after fork and exec.
  std::string run_key;
  // Children may link to run_key: the run file exists, or will by the end
  // of the start write's delay (start_write_pending, checkpoint.h's
  // kStartWriteDelayMs) unless the process is killed before.
  bool run_created = false;
  // Start deferred the run's first write to the checkpoint thread: a process
  // that ends (or writes a checkpoint) before the delay never makes it.
  bool start_write_pending = false;
  // This run has a file in the spool (its final write replaces it rather
  // than going to the inbox).
  bool spool_file_written = false;
  bool finished = false;
  // The process this state is recording (getpid at Start, and in a forked
  // child that is recorded). Any other pid is a child that shares or copied
  // this memory without a run of its own (a vfork child, a fork under
  // --no-follow, a raw clone): it writes nothing (InForeignChild, runtime.h), and what it
  // execs links to run_key.
  pid_t pid = 0;
  // What every exec'd image's environment gets (ExecOverlay): rebuilt in
  // normal context whenever the run keys change, never freed (a vfork child
  // may be reading the previous one), read without a lock.
  std::atomic<const ExecOverlay*> exec_overlay{nullptr};
  int64_t start_mono_ns = 0;
  // RealtimeMinusMonotonicNs() when start_mono_ns was set: the trace's and
  // the iterations' epoch times are monotonic times plus this. Not the run's
  // start_time_ns minus start_mono_ns: the start's metadata is gathered
  // between those two readings (150 µs on an H200 host, more on a VM).
  int64_t epoch_offset_ns = 0;
  // The checkpoint thread's writes so far (wall time; flush_mutex) and how
  // many times their cost pushed the next one past its interval
  // (checkpoint_schedule.h): diagnostics checkpoint_ns, checkpoints_spaced.
  int64_t checkpoint_ns = 0;
  int64_t checkpoints_spaced = 0;
  // Wall time of Start in this process, from its first line to its last
  // (diagnostic start_ns): what the collector's start costs a process,
  // apart from loading the library and from the kernel's part. Written once
  // by the starting thread, read by whichever thread writes.
  std::atomic<int64_t> start_cost_ns{0};
  // A forked child's metadata is filled at its first write, not at the fork
  // (EnsureChildMeta): most children exec before any sample and never write.
  // Until then `meta` is the parent's; these hold what the fork time fixes.
  bool child_meta_pending = false;
  int64_t child_start_ns = 0;  // CLOCK_REALTIME at the fork
  std::string child_cwd;
  std::unique_ptr<Symbolizer> symbolizer;
  // Frames of keys resolved from unloaded modules' files (or named as
  // unresolvable), keyed by LookupKey(); kept across checkpoints.
  std::unordered_map<uint64_t, SymbolFrames> frozen;
  // The epoch the live symbolizer last caught up with the loaded modules in.
  uint32_t synced_epoch = 0;
  // The symbolizer that trims launch and NVTX-push stacks (OutermostFrame):
  // symbol tables only, behind its own mutex, so a new launch site is named
  // without reading DWARF and without waiting for a checkpoint.
  std::mutex trim_mutex;
  std::unique_ptr<Symbolizer> trim_symbolizer;
  uint32_t trim_synced_epoch = 0;
  // The modules dlclose unloaded (cpu/loader_events.cc). Guarded by
  // modules_mutex, which dlclose takes without flush_mutex (a checkpoint in
  // progress must not stall the program's dlclose).
  std::mutex modules_mutex;
  UnloadedModules unloaded{kEpochMask};
  std::string own_module;
  bool warned_write = false;
  bool warned_symbols = false;  // libdw missing (Symbolizer::LibDwProblem), said once

  int request_pipe[2] = {-1, -1};  // fatal handler → checkpoint thread
  int ack_pipe[2] = {-1, -1};      // checkpoint thread → fatal handler
  // NVTX: names of domains and range messages, start/end ranges, problems.
  std::mutex nvtx_mutex;
  std::vector<std::string> nvtx_domains{""};
  std::unordered_map<std::string, uint32_t> nvtx_domain_ids{{"", 0}};
  std::vector<std::string> nvtx_names;        // display name by id
  std::vector<char> nvtx_is_iteration;        // the name matches --iteration
  std::unordered_map<std::string, uint32_t> nvtx_name_ids;  // domain '\x1f' message
  struct StartedRange {
    uint32_t thread = 0, name = 0;
    int64_t start_ns = 0;
  };
  std::unordered_map<uint64_t, StartedRange> started;  // by nvtxRangeId_t
  uint64_t next_range_id = 1;
  struct EndedRanges {
    int64_t time_ns = 0;  // the union of the instances' intervals
    uint64_t count = 0;
    // Instances of this (thread, name) open now, and since when one has
    // been: overlapping instances count their common time once.
    uint32_t open = 0;
    int64_t open_since_ns = 0;
  };
  std::map<std::pair<uint32_t, uint32_t>, EndedRanges> ended;  // (thread index, name) → totals, open instances
  // --trace: each start/end instance that ended (thread index: where it
  // started, as `ended` counts it; CLOCK_MONOTONIC ns), within trace_budget.
  struct EndedInstance {
    uint32_t thread = 0, name = 0;
    int64_t start_ns = 0, end_ns = 0;
  };
  std::vector<EndedInstance> ended_instances;
  std::map<std::string, int64_t> nvtx_problems;
  std::unordered_map<uintptr_t, bool> nvtx_code;  // return address → inside NVTX's code
  IterationPattern iteration_pattern;  // --iteration, loaded at start

  // Iterations: at each boundary every trie's values are snapshotted; an
  // iteration's values are the difference (see IterationBoundary).
  struct TrieDelta {
    uint32_t thread, node;
    int64_t time_ns;
    uint32_t samples;
  };
  struct IterationRecord {
    int64_t start_ns = 0, duration_ns = 0;
    std::vector<TrieDelta> deltas;
  };
  std::vector<IterationRecord> iterations;
  std::vector<std::vector<std::pair<int64_t, uint32_t>>> iteration_start;  // by thread, by trie node
  int64_t iteration_start_ns = 0;
  int iteration_depth = 0;
  // The open iteration's index (the one its record will get), read without
  // a lock by GPU launches; kNoIteration between iterations.
  std::atomic<uint32_t> current_iteration{kNoIteration};

  std::atomic<int> fatal_signal{0};
  // Where the first fault the kernel raised (SIGSEGV, SIGBUS, SIGFPE,
  // SIGILL) happened: the faulting thread, its instruction and the address
  // it touched. Set once, by OnFatal; the crashed run's write reports them.
  std::atomic<pid_t> fatal_tid{0};
  std::atomic<uint64_t> fatal_pc{0}, fatal_address{0};
  // A termination signal (SIGTERM, SIGINT, SIGHUP) that arrived on a thread
  // while it held flush_mutex (writing its run at exit or exec, or forking):
  // the checkpoint thread could not have written, so the handler left it
  // here and the thread raises it again once the mutex is released
  // (RaiseDeferredFatal).
  std::atomic<int> deferred_fatal{0};
  // The thread stopping the sources and writing the run at exit or exec
  // (BeforeExit — _exit and on_exit — and BeforeExec): before it takes
  // flush_mutex it may hold registry_mutex (the sampler's stop) or a
  // source's lock the write needs, so a termination signal landing there is
  // deferred the same way; 0 when none (RaiseDeferredFatal clears it).
  std::atomic<pid_t> final_writer{0};
  std::atomic<bool> fatal_once{false};
  pthread_t flusher{};
  std::atomic<pid_t> flusher_tid{0};
  // The outermost return address of a thread that pthread_create started
  // (inside clone3), learned by the checkpoint thread unwinding itself: a
  // stack that ends there is complete even where libc has no symbols to
  // name it (Ubuntu's stripped libc.so.6). 0 until learned.
  std::atomic<uintptr_t> thread_root_pc{0};
  // Whether the checkpoint thread has looked for it (ProbeThreadRoot in
  // checkpoint.cc: before its first write, or when another thread's write
  // asks).
  std::atomic<bool> thread_root_probed{false};
  // --nvtx-inherit main: the main thread's open NVTX ranges, republished by
  // it at each push and pop (nvtx_ranges.cc) and read by other threads' GPU
  // launches (MainThreadRanges).
  ThreadState::PublishedRanges main_ranges;
  bool flusher_running = false;
};

// Never destroyed: host code (and our signal handlers) may run after static
// destructors. Defined in lifecycle.cc.
extern Runtime* rt;

// The clock thread `tid`'s samples are measured on: the wall clock
// (--clock wall), else that thread's CPU clock. SIGNAL-HANDLER CODE.
inline clockid_t SampleClockOf(pid_t tid) {
  return rt->clock == CLOCK_MONOTONIC ? CLOCK_MONOTONIC : ThreadCpuClock(tid);
}
// The thread list is changed only from normal (non-handler) code, and only
// under registry_mutex, so slots are appended one at a time.
extern std::mutex registry_mutex;
// The calling thread's state, or null before it registers. Initial-exec TLS:
// a signal handler may read it without the lazy TLS allocation (malloc) that
// the general-dynamic model could do.
extern __thread ThreadState* t_state __attribute__((tls_model("initial-exec")));
extern pthread_key_t exit_key;  // its destructor is OnThreadExit

// A line on stderr prefixed "cctdb: ". Normal context only (allocates).
void Warn(const std::string& msg);

// --- threads.cc: the thread registry
ThreadState* FindThread(pid_t tid);  // SIGNAL-HANDLER CODE
ThreadState* AddThread(pid_t tid);   // caller holds registry_mutex
void OnThreadExit(void* p);
// Registers `tid` (`current`: the calling thread) and tells the sources
// (thread_started). Takes registry_mutex.
ThreadState* RegisterThread(pid_t tid, bool current);
std::string ThreadName(ThreadState& t);
// Threads given one name (a pool's workers named alike) stay apart in the
// tree: each such name, `names` by thread index, gets " (thread N)" with
// the thread's index, the number an unnamed thread shows. "" is no thread.
void DistinguishThreadNames(std::vector<std::string>& names);
// Starts a thread of the collector's own, detached: libc's pthread_create
// (not the interposed one: never registered nor sampled), with every signal
// blocked (a process-directed signal must reach the program's threads).
// `thread` (optional) receives its handle. Normal context.
bool StartOwnThread(void* (*main)(void*), pthread_t* thread = nullptr);
// Gives live threads a name of the kind `field` (&ThreadState::nvtx_name,
// &ThreadState::python_name) by thread id; `names` sorted by id. An exited
// thread keeps its own (the kernel may reuse its id). Takes registry_mutex.
void NameThreads(std::span<const std::pair<pid_t, std::string>> names, std::string ThreadState::*field);

// Prepares the calling thread's unwind state (PrepareUnwindThread) and
// records the loader generation it is good for. Normal context, on `t`'s
// own thread.
void PrepareUnwind(ThreadState* t);

// --- fatal.cc
// Whether the calling thread holds flush_mutex (glibc's mutex records its
// owner). Async-signal-safe.
bool HoldsFlushMutex();
// Raises a termination signal deferred while this thread held flush_mutex
// (Runtime::deferred_fatal). Call after releasing it; normal context.
void RaiseDeferredFatal();
// A read of memory that may be gone, guarded (SIGNAL-HANDLER CODE may use
// it; python_frames.cc does): while this thread's t_fault_guard points to a
// buffer _setjmp filled, a SIGSEGV or SIGBUS the kernel raises on the thread
// at an instruction of the collector's own text (own_text_lo/hi: so the
// guarded reads are our own loads, not libc's memcpy) returns to that
// _setjmp with 1 instead of ending the process — wherever the collector's
// fatal-signal handler is the one installed (a program that installed its
// own SIGSEGV handler before us keeps it). Set it with the previous value
// saved and put that back after (a sampling signal may nest a guarded read
// in another).
extern __thread jmp_buf* t_fault_guard __attribute__((tls_model("initial-exec")));
// How long a fatal signal's handler waits for the run's final write.
inline constexpr int64_t kFatalWriteDeadlineNs = int64_t{5000} * 1000000;

// --- path_keys.cc
int PathKeys(const ThreadState* t, const uintptr_t* frames, int depth, bool truncated, int open, uint32_t epoch,
             uint64_t* keys);  // SIGNAL-HANDLER CODE

// --- own_code.cc: the collector's own text and the outermost frame at an
// address, for trimming NVTX and launch stacks.
extern uintptr_t own_text_lo, own_text_hi;
void FindOwnText();  // sets own_text_lo/hi (Start)
SymbolFrame OutermostFrame(uintptr_t address);  // takes trim_mutex

// --- checkpoint.cc: writing the run and the checkpoint thread
uint64_t LookupKey(uint64_t key, bool return_address);
const SymbolFrames& LookupSymbols(uint64_t key, bool return_address);  // caller holds flush_mutex
void WriteRun(store::RunState state) noexcept;                          // caller holds flush_mutex
// Writes the run file (meta, and the tree, iterations and trace when given).
// Caller holds flush_mutex.
// `final`: the run's last write, which may go to cct-record's inbox.
cct::Status WriteRunFile(const cct::Tree* tree, const store::RunIterations* iterations,
                         const store::RunTrace* trace = nullptr, bool final = false);
void StartFlusher();
// Whether run files can be written into the spool directory (made when
// missing): what Start checks before it promises a run.
cct::Status SpoolWritable();
// The run's first write, with an empty tree, if Start left it pending and
// nothing has been written since. Caller holds flush_mutex.
void WriteStartRun() noexcept;

// --- lifecycle.cc
// The run's metadata at its start. `inherit`: the parent's, in a forked
// child, at its first write (EnsureChildMeta): the same image, so
// executable, modules, compiler, system and user are copied, not read again
// — no loader lock or NSS lookup after fork — and the start time and cwd
// are the fork's (Runtime::child_start_ns, child_cwd).
void FillMeta(store::RunMeta& m, const store::RunMeta* inherit = nullptr);
// A forked child's metadata, from its parent's, if still pending (caller
// holds flush_mutex; before anything sets fields of rt->meta for a write).
void EnsureChildMeta() noexcept;
// A fresh run key (16 hex digits from getrandom).
std::string NewRunKey();
// The key children link to as their parent: our run's once it exists, else
// the run we were started from (a forked child that has written nothing).
std::string ParentKeyForChildren();
// The root run of this process's invocation for its children: our root, or
// our own run when we are the root ("" while we have no run).
std::string RootKeyForChildren();
// Sets CCT_RECORD_PARENT_KEY and CCT_RECORD_ROOT_KEY for children started
// through the environment (system(), posix_spawn) once our run exists.
void PublishRunKeys();
void Finish(store::RunState state, std::optional<int> exit_code, std::optional<int> term_signal);
void OnProcessExit(int status, void*);

// --- fatal.cc
void InstallFatalHandlers();
void InstallAltStack();
void RemoveAltStack();  // the calling thread's, from InstallAltStack; at its exit

// --- exec_fork.cc
void ForkPrepare();
void ForkParent();
void ForkChild();
// Rebuilds rt->exec_overlay from the config and run keys (normal context).
void PublishExecOverlay();
std::string WithoutCollector(const std::string& all, const std::string& own);
void StripPreload(const std::string& own);

}  // namespace collector::internal
