// The collector runtime: see runtime.h. The functions OnSample and OnFatal
// are SIGNAL-HANDLER CODE and async-signal-safe; so are the few helpers they
// call (marked).
#include "collector/core/runtime.h"

#include <dlfcn.h>
#include <link.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <memory>
#include <map>
#include <mutex>
#include <regex>
#include <unordered_map>
#include <string>
#include <vector>

#include "cct/tree_ops.h"
#include "cctdb_config.h"
#include "collector/core/config.h"
#include "collector/gpu/gpu_metrics.h"
#include "collector/gpu/gpu_runtime.h"
#include "collector/core/profile_builder.h"
#include "collector/core/run_info.h"
#include "collector/cpu/sample_trie.h"
#include "collector/cpu/symbolizer.h"
#include "collector/cpu/unwinder.h"
#include "store/database.h"
#include "store/iterations.h"

extern char** environ;

namespace collector {
namespace {

constexpr int kMaxDepth = 512;
constexpr int kMaxRanges = 128;
constexpr int kRangeFrames = 16384;
constexpr size_t kMaxThreads = 16384;
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP};

int64_t Now(clockid_t clock) {  // SIGNAL-HANDLER CODE
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}
pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }  // SIGNAL-HANDLER CODE
int OwnTextRange(dl_phdr_info* info, size_t, void*);

struct ThreadState {
  SampleTrie trie;
  pid_t tid = 0;
  uint32_t index = 0;  // registration order in this process; 0 = main thread
  timer_t timer{};
  bool has_timer = false;
  int perf_fd = -1;  // task-clock event, when the kernel lets us open one
  std::atomic<bool> alive{true};
  int64_t last_ns = 0;  // clock reading at the previous sample
  std::atomic<uint32_t> interrupts{0};
  std::atomic<int> in_loader{0};
  std::atomic<uint64_t> lost{0};
  uintptr_t unwind[kMaxDepth + kUnwindSlack];
  uint64_t keys[kMaxDepth + kMaxRanges + 2];

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
  };
  OpenRange ranges[kMaxRanges];
  std::atomic<int> range_count{0};
  int range_overflow = 0;  // pushes beyond kMaxRanges, popped first
  uintptr_t range_frames[kRangeFrames];
  SampleTrie range_trie;   // pop-time durations and counts, marks (owner thread only)
  std::string nvtx_name;   // from nvtxNameOsThread; under registry_mutex
  // GPU launch sites (gpu_runtime.h): written by this thread at CUDA calls.
  SampleTrie launch_trie;
  std::unordered_map<uintptr_t, bool> gpu_runtime_frame;  // return address → trimmed at launches (owner only)
};

struct Runtime {
  CollectorConfig config;
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
  std::atomic<uint32_t> epoch{0};   // bumped when a library is unloaded
  std::atomic<ThreadState*> threads[kMaxThreads] = {};
  std::atomic<size_t> thread_count{0};
  std::atomic<uint64_t> threads_unsampled{0};

  std::mutex flush_mutex;  // checkpoint writes, symbolizer, run metadata
  store::RunMeta meta;
  bool run_created = false;
  bool finished = false;
  int64_t start_mono_ns = 0;
  std::unique_ptr<Symbolizer> symbolizer;
  // Frames of addresses from earlier load epochs (libraries since unloaded),
  // resolved while they were mapped; keyed by LookupKey().
  std::unordered_map<uint64_t, SymbolFrames> frozen;
  bool refresh_symbols = false;
  std::string own_module;
  bool warned_write = false;

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
    int64_t time_ns = 0;
    uint64_t count = 0;
  };
  std::map<std::pair<uint32_t, uint32_t>, EndedRanges> ended;  // (thread index, name) → totals
  std::map<std::string, int64_t> nvtx_problems;
  std::unordered_map<uintptr_t, bool> nvtx_code;  // return address → inside NVTX's code
  std::unique_ptr<std::regex> iteration_regex;

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
  std::atomic<bool> fatal_once{false};
  pthread_t flusher{};
  std::atomic<pid_t> flusher_tid{0};
  bool flusher_running = false;
};

// Never destroyed: host code (and our signal handlers) may run after static
// destructors.
Runtime* rt = nullptr;
// The thread list is changed only from normal (non-handler) code, and only
// under registry_mutex, so slots are appended one at a time.
std::mutex registry_mutex;
__thread ThreadState* t_state __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t exit_key;

void Warn(const std::string& msg) {
  std::string line = "cctdb: " + msg + "\n";
  ssize_t w = write(STDERR_FILENO, line.data(), line.size());
  (void)w;
}

clockid_t ThreadCpuClock(pid_t tid) {
  // The kernel's per-thread CPU clock id (MAKE_THREAD_CPUCLOCK(tid, SCHED)),
  // usable for any thread of this process, not only the calling one.
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6);
}

// --- sampling ----------------------------------------------------------------

ThreadState* FindThread(pid_t tid) {  // SIGNAL-HANDLER CODE
  const size_t n = rt->thread_count.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    ThreadState* t = rt->threads[i].load(std::memory_order_acquire);
    if (t && t->tid == tid && t->alive.load(std::memory_order_relaxed)) return t;
  }
  return nullptr;
}

// A sample's (or a range's) trie path: the stack `frames` (root first,
// `depth` of them) with the thread's first `open` NVTX ranges merged in.
// Interleaved placement puts a range right after the frame that pushed it
// when the sample's stack still holds that frame's callers unchanged (the
// pushing function is still active), else after the stack prefix the two
// share; prefix placement puts all ranges first. Returns the key count.
// SIGNAL-HANDLER CODE (also called in normal context by pop and mark).
int PathKeys(const ThreadState* t, const uintptr_t* frames, int depth, bool truncated, int open, uint32_t epoch,
             uint64_t* keys) {
  std::atomic_signal_fence(std::memory_order_acquire);
  int k = 0;
  if (truncated) keys[k++] = kPartialKey;
  if (rt->config.nvtx_placement == NvtxPlacement::kPrefix || truncated) {
    for (int r = 0; r < open; ++r) keys[k++] = t->ranges[r].key;
    for (int j = 0; j < depth; ++j) keys[k++] = MakeKey(frames[j], epoch);
    return k;
  }
  int r = 0;
  int anchor = 0;  // ranges are nested: anchors never decrease
  auto anchor_of = [&](const ThreadState::OpenRange& e) {
    const uintptr_t* p = t->range_frames + e.frames_offset;
    const int d = static_cast<int>(e.depth);
    int m = 0;
    while (m < d - 1 && m < depth && p[m] == frames[m]) ++m;
    const int a = (m == d - 1 && depth >= d) ? d : m;
    return a > anchor ? a : anchor;
  };
  for (int j = 0; j <= depth; ++j) {
    while (r < open && (anchor = anchor_of(t->ranges[r])) <= j) keys[k++] = t->ranges[r++].key;
    if (j < depth) keys[k++] = MakeKey(frames[j], epoch);
  }
  while (r < open) keys[k++] = t->ranges[r++].key;
  return k;
}

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
    depth = Unwind(uc, t->unwind, kMaxDepth, &truncated);
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
  DisarmTimer(t);
  t->alive.store(false, std::memory_order_release);
  t_state = nullptr;
}


ThreadState* RegisterThread(pid_t tid, bool current) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  ThreadState* t = AddThread(tid);
  if (!t) return nullptr;
  if (current) {
    t_state = t;
    pthread_setspecific(exit_key, t);
  }
  if (rt->active.load() && !ArmTimer(t)) rt->threads_unsampled.fetch_add(1, std::memory_order_relaxed);
  return t;
}

// --- writing the run --------------------------------------------------------

// Caller holds flush_mutex (nvtx_name is set under registry_mutex; a
// checkpoint may read a name being replaced only if both lock).
std::string ThreadName(const ThreadState& t) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (!t.nvtx_name.empty()) return t.nvtx_name;
  return t.index == 0 ? "main thread" : "thread " + std::to_string(t.index);
}

uint64_t LookupKey(uint64_t key, bool return_address) {
  return key | (return_address ? uint64_t{1} << 47 : 0);  // user addresses are below 2^47
}

// The symbol lookup for the profile builder. Caller holds flush_mutex.
const SymbolFrames& LookupSymbols(uint64_t key, bool return_address) {
  const uint32_t epoch = static_cast<uint32_t>(key >> kEpochShift);
  if (epoch != (rt->epoch.load(std::memory_order_relaxed) & kEpochMask)) {
    auto it = rt->frozen.find(LookupKey(key, return_address));
    if (it != rt->frozen.end()) return it->second;
    // Sampled in a library that was unloaded before we could resolve it.
    SymbolFrame f;
    char buf[64];
    std::snprintf(buf, sizeof buf, "<unloaded code 0x%lx>", static_cast<unsigned long>(KeyAddress(key)));
    f.function = buf;
    return rt->frozen.emplace(LookupKey(key, return_address), SymbolFrames{f}).first->second;
  }
  if (rt->refresh_symbols) {
    rt->symbolizer->Refresh();
    rt->refresh_symbols = false;
  }
  return rt->symbolizer->Lookup(KeyAddress(key), return_address);
}

std::string RangeDisplayName(uint32_t id) {
  // Caller holds flush_mutex; names are appended under nvtx_mutex.
  std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
  return id < rt->nvtx_names.size() ? rt->nvtx_names[id] : "";
}

// Per-iteration values on `tree`: each recorded trie delta goes to the tree
// node its trie node's values went to. Caller holds nvtx_mutex.
store::RunIterations CollectIterations(const cct::Tree& tree, const std::vector<std::vector<cct::NodeId>>& value_nodes) {
  store::RunIterations out;
  if (rt->iterations.empty()) return out;
  out.range = rt->config.iteration_regex;
  const cct::MetricId time = tree.metrics().Find(rt->config.clock == SampleClock::kWall ? "realtime" : "cputime");
  const cct::MetricId samples = tree.metrics().Find("samples");
  const int64_t realtime_offset = Now(CLOCK_REALTIME) - Now(CLOCK_MONOTONIC);
  for (size_t k = 0; k < rt->iterations.size(); ++k) {
    const Runtime::IterationRecord& rec = rt->iterations[k];
    std::map<cct::NodeId, std::pair<double, double>> by_node;
    for (const Runtime::TrieDelta& d : rec.deltas) {
      if (d.thread >= value_nodes.size() || d.node >= value_nodes[d.thread].size()) continue;
      const cct::NodeId node = value_nodes[d.thread][d.node];
      if (node == cct::kNoNode) continue;
      auto& v = by_node[node];
      v.first += static_cast<double>(d.time_ns);
      v.second += d.samples;
    }
    store::Iteration it;
    it.index = static_cast<uint32_t>(k);
    it.start_ns = rec.start_ns + realtime_offset;  // boundaries use the monotonic clock; the store wants epoch ns
    it.duration_ns = rec.duration_ns;
    store::IterationColumn ct, cs;
    ct.metric = time;
    cs.metric = samples;
    for (const auto& [node, v] : by_node) {
      ct.nodes.push_back(node);
      ct.values.push_back(v.first);
      cs.nodes.push_back(node);
      cs.values.push_back(v.second);
    }
    it.columns.push_back(std::move(ct));
    it.columns.push_back(std::move(cs));
    out.iterations.push_back(std::move(it));
  }
  return out;
}

// Builds the tree from every thread's trie and writes the run. Caller holds
// flush_mutex. Never throws.
void WriteRun(store::RunState state) noexcept {
  const int64_t duration_ns = Now(CLOCK_MONOTONIC) - rt->start_mono_ns;  // before symbolization's cost
  try {
    if (!rt->symbolizer) rt->symbolizer = Symbolizer::Create();
    cct::Tree tree;
    ProfileBuilder builder(tree, rt->config.clock == SampleClock::kWall ? "realtime" : "cputime", rt->own_module,
                           RangeDisplayName);
    SymbolLookup lookup = LookupSymbols;
    uint64_t lost = 0;
    const size_t n = rt->thread_count.load(std::memory_order_acquire);
    size_t sampled_threads = 0;
    std::vector<std::vector<cct::NodeId>> value_nodes(n);
    std::vector<std::string> names(n);
    for (size_t i = 0; i < n; ++i) {
      ThreadState* t = rt->threads[i].load(std::memory_order_acquire);
      if (!t) continue;
      if (t->trie.size() > 1) ++sampled_threads;
      names[i] = ThreadName(*t);
      builder.AddThread(names[i], t->trie, lookup, &value_nodes[i]);
      builder.AddRanges(names[i], t->range_trie, lookup);
      lost += t->lost.load(std::memory_order_relaxed);
    }
    store::RunIterations iterations;
    std::map<std::pair<uint32_t, uint32_t>, Runtime::EndedRanges> ended;
    {
      std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
      ended = rt->ended;
      for (const auto& [what, count] : rt->nvtx_problems) rt->meta.diagnostics[what] = count;
      int64_t open_ranges = 0;
      for (size_t i = 0; i < n; ++i)
        if (ThreadState* t = rt->threads[i].load()) open_ranges += t->range_count.load() + t->range_overflow;
      open_ranges += static_cast<int64_t>(rt->started.size());
      if (open_ranges) rt->meta.diagnostics["nvtx_open_ranges"] = open_ranges;
      else rt->meta.diagnostics.erase("nvtx_open_ranges");
      iterations = CollectIterations(tree, value_nodes);
    }
    for (const auto& [key, totals] : ended)
      if (key.first < n) builder.AddStartEndRange(names[key.first], key.second, totals.time_ns, totals.count);
    std::vector<LaunchTrieRef> launch_tries;
    for (size_t i = 0; i < n; ++i) {
      ThreadState* t = rt->threads[i].load(std::memory_order_acquire);
      if (t && t->launch_trie.size() > 1) launch_tries.push_back({static_cast<uint32_t>(i), names[i], &t->launch_trie});
    }
    store::RunMeta& m = rt->meta;
    m.state = state;
    m.sampling["source"] = rt->config.clock == SampleClock::kWall ? "posix-timer"
                           : rt->use_perf.load() == 1           ? "perf-task-clock"
                                                                : "posix-cpu-timer";
    m.duration_ns = duration_ns;
    m.updated_ns = Now(CLOCK_REALTIME);
    ++m.checkpoints;
    m.diagnostics["samples"] = static_cast<int64_t>(builder.stats().samples);
    m.diagnostics["partial_samples"] = static_cast<int64_t>(builder.stats().partial_samples);
    m.diagnostics["lost_samples"] = static_cast<int64_t>(lost);
    m.diagnostics["threads"] = static_cast<int64_t>(n);
    m.diagnostics["sampled_threads"] = static_cast<int64_t>(sampled_threads);
    if (uint64_t u = rt->threads_unsampled.load()) m.diagnostics["unsampled_threads"] = static_cast<int64_t>(u);
    GpuAddToRun(tree, builder, lookup, launch_tries, m, &iterations);
    m.node_count = tree.size();

    auto db = store::Database::Open(rt->config.db_path, store::Database::Mode::kWrite);
    cct::Status st = db.ok() ? cct::Status() : db.status();
    const store::RunIterations* iters = iterations.iterations.empty() ? nullptr : &iterations;
    if (st.ok()) st = rt->run_created ? (*db)->UpdateRun(m, &tree, iters) : (*db)->CreateRun(m, &tree, iters);
    if (st.ok()) {
      if (!rt->run_created) {
        rt->run_created = true;
        // Children started from now on (system(), posix_spawn) link to us.
        setenv("CCT_RECORD_PARENT_RUN", std::to_string(m.id).c_str(), 1);
      }
    } else if (!rt->warned_write) {
      rt->warned_write = true;
      Warn("cannot write the profile to " + rt->config.db_path + ": " + st.message());
    }
  } catch (const std::exception& e) {
    if (!rt->warned_write) {
      rt->warned_write = true;
      Warn(std::string("cannot write the profile: ") + e.what());
    }
  } catch (...) {
    if (!rt->warned_write) {
      rt->warned_write = true;
      Warn("cannot write the profile");
    }
  }
}

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

// The last write of this process's run.
void Finish(store::RunState state, std::optional<int> exit_code, std::optional<int> term_signal) {
  std::lock_guard<std::mutex> lock(rt->flush_mutex);
  if (rt->finished) return;
  rt->finished = true;
  rt->meta.exit_code = exit_code;
  rt->meta.term_signal = term_signal;
  rt->meta.diagnostics["final_flush"] = 1;
  WriteRun(state);
}

// --- the checkpoint thread --------------------------------------------------

void* FlusherMain(void*) {
  rt->flusher_tid.store(Tid());
  const int timeout_ms =
      rt->config.checkpoint_s > 0 ? static_cast<int>(rt->config.checkpoint_s * 1000 + 0.5) : -1;
  int64_t next = Now(CLOCK_MONOTONIC) + int64_t{timeout_ms} * 1000000;
  for (;;) {
    pollfd pfd{rt->request_pipe[0], POLLIN, 0};
    int wait_ms = -1;
    if (timeout_ms > 0) {
      const int64_t left = next - Now(CLOCK_MONOTONIC);
      wait_ms = left > 0 ? static_cast<int>(left / 1000000) + 1 : 0;
    }
    const int r = poll(&pfd, 1, wait_ms);
    if (r > 0) {
      char c = 0;
      if (read(rt->request_pipe[0], &c, 1) != 1) continue;
      if (c == 'F') {
        // A fatal signal in another thread: write what we have, then let the
        // handler go on (it waits for this byte, with a timeout).
        StopSampling();
        Finish(store::RunState::kCrashed, std::nullopt, rt->fatal_signal.load());
        const char ack = 'A';
        ssize_t w = write(rt->ack_pipe[1], &ack, 1);
        (void)w;
      }
      continue;
    }
    if (r < 0 && errno != EINTR) return nullptr;
    if (timeout_ms > 0 && Now(CLOCK_MONOTONIC) >= next) {
      next += int64_t{timeout_ms} * 1000000;
      GpuFlush(/*final=*/false);  // before flush_mutex: see gpu_runtime.h
      std::lock_guard<std::mutex> lock(rt->flush_mutex);
      if (!rt->finished) WriteRun(store::RunState::kRecording);
    }
  }
}

void StartFlusher() {
  // The checkpoint thread takes no signals (it is not sampled, and a
  // process-directed signal must go to the program's threads).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static auto real_create = reinterpret_cast<CreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
  rt->flusher_running = real_create && real_create(&rt->flusher, nullptr, FlusherMain, nullptr) == 0;
  if (rt->flusher_running) pthread_detach(rt->flusher);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// --- fatal signals ----------------------------------------------------------

void OnFatal(int sig, siginfo_t* info, void*) {  // SIGNAL-HANDLER CODE
  const int saved_errno = errno;
  if (rt && !rt->fatal_once.exchange(true)) {
    rt->active.store(false, std::memory_order_release);
    if (rt->flusher_running && Tid() != rt->flusher_tid.load()) {
      rt->fatal_signal.store(sig);
      const char req = 'F';
      if (write(rt->request_pipe[1], &req, 1) == 1) {
        // Wait for the final write, but not forever: the thread that crashed
        // may hold a lock the writer needs (malloc's, for instance). Another
        // signal (a sampling tick already on its way, the program's own)
        // interrupts poll; giving up then would let the process die before
        // the write, losing the whole run, so wait out the deadline.
        const int64_t deadline = Now(CLOCK_MONOTONIC) + int64_t{5000} * 1000000;
        for (;;) {
          const int64_t left_ms = (deadline - Now(CLOCK_MONOTONIC)) / 1000000;
          if (left_ms <= 0) break;
          pollfd pfd{rt->ack_pipe[0], POLLIN, 0};
          const int r = poll(&pfd, 1, static_cast<int>(left_ms));
          if (r > 0) {
            char c;
            ssize_t n = read(rt->ack_pipe[0], &c, 1);
            (void)n;
            break;
          }
          if (r == 0 || errno != EINTR) break;
        }
      }
    }
  }
  // Die exactly as without us: default action, same signal. A fault raised
  // by the kernel recurs when the instruction is retried; anything else is
  // raised again (it is blocked until this handler returns).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  const bool kernel_fault =
      (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && info && info->si_code > 0;
  if (!kernel_fault) raise(sig);
  errno = saved_errno;
}

void InstallFatalHandlers() {
  for (int sig : kFatalSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    // Only where the program has not chosen a disposition (an ignored
    // SIGHUP under nohup stays ignored; a program's handler stays its own).
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL) continue;
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) continue;
    struct sigaction sa {};
    sa.sa_sigaction = OnFatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    // No sampling tick inside the handler: it would only interrupt the wait.
    sigaddset(&sa.sa_mask, rt->signo);
    sigaction(sig, &sa, nullptr);
  }
}

// An alternate stack so a stack overflow's SIGSEGV can still be handled.
void InstallAltStack() {
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE)) return;
  const size_t size = 64 * 1024;
  void* mem = malloc(size);
  if (!mem) return;
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = size;
  if (sigaltstack(&ss, nullptr) != 0) free(mem);
}

// --- process lifecycle ------------------------------------------------------

void FillMeta(store::RunMeta& m) {
  m = store::RunMeta{};
  m.name = rt->config.name;
  m.source = "cct-record";
  m.state = store::RunState::kRecording;
  m.start_time_ns = Now(CLOCK_REALTIME);
  m.command = ProcessCommandLine();
  if (m.name.empty() && !m.command.empty()) {
    m.name = std::string(cct::BaseName(m.command.front()));
  }
  m.cwd = CurrentDirectory();
  m.host = store::HostName();
  m.cpu_model = CpuModel();
  m.collector_version = CCTDB_VERSION;
  m.git_commit = GitCommit(m.cwd);
  m.tags = rt->config.tags;
  m.env = RecordedEnvironment(environ);
  m.pid = getpid();
  m.pid_start_ticks = store::ProcessStartTicks(m.pid);
  m.parent_run = rt->config.parent_run;
  m.iteration_regex = rt->config.iteration_regex;
  m.sampling = {{"clock", rt->config.clock == SampleClock::kWall ? "wall" : "cpu"},
                {"freq_hz", rt->config.freq_hz},
                {"checkpoint_s", rt->config.checkpoint_s},
                {"signal", "SIGRTMIN+" + std::to_string(rt->config.signal_offset)},
                {"max_depth", kMaxDepth},
                {"unwinder", "libunwind"}};
  if (!rt->config.session.empty()) m.extra["session"] = rt->config.session;
  rt->start_mono_ns = Now(CLOCK_MONOTONIC);
}

void ForkPrepare() {
  if (!rt) return;
  rt->flush_mutex.lock();
  registry_mutex.lock();
  rt->nvtx_mutex.lock();
}
void ForkParent() {
  if (!rt) return;
  rt->nvtx_mutex.unlock();
  registry_mutex.unlock();
  rt->flush_mutex.unlock();
}
void ForkChild() {
  if (!rt) return;
  // The mutexes were taken by this thread in ForkPrepare; a fresh object is
  // the portable way to get an unlocked one in the child.
  new (&registry_mutex) std::mutex;
  new (&rt->flush_mutex) std::mutex;
  new (&rt->nvtx_mutex) std::mutex;
  ThreadState* self = t_state;
  rt->active.store(false);
  rt->flusher_running = false;
  rt->fatal_once.store(false);
  if (!rt->config.follow) return;  // --no-follow: the child is not recorded
  // Only this thread exists in the child; its samples so far were the
  // parent's. The child's run starts now, empty, linked to the parent's.
  const uint32_t parent_run = rt->run_created ? rt->meta.id : rt->config.parent_run;
  for (size_t i = 0; i < rt->thread_count.load(); ++i) {
    // The parent's events, inherited as descriptors: not ours to keep.
    ThreadState* t = rt->threads[i].load();
    if (t && t->perf_fd >= 0) close(t->perf_fd), t->perf_fd = -1;
  }
  for (auto& slot : rt->threads) slot.store(nullptr, std::memory_order_relaxed);
  rt->thread_count.store(0);
  rt->threads_unsampled.store(0);
  rt->symbolizer.release();  // inherited descriptors and the parent's pid: leak, never reuse
  rt->run_created = false;
  rt->finished = false;
  rt->warned_write = false;
  rt->config.parent_run = parent_run;
  FillMeta(rt->meta);
  if (pipe2(rt->request_pipe, O_CLOEXEC) != 0 || pipe2(rt->ack_pipe, O_CLOEXEC) != 0) return;
  rt->active.store(true);
  // The child's NVTX totals start empty; ranges it inherited open stay open
  // (the child's code will pop them).
  rt->started.clear();
  rt->ended.clear();
  rt->nvtx_problems.clear();
  rt->iterations.clear();
  rt->iteration_depth = 0;
  rt->current_iteration.store(kNoIteration);
  GpuForkChild();
  if (self) {
    self->trie.Reset();
    self->range_trie.Reset();
    self->launch_trie.Reset();
    self->gpu_runtime_frame.clear();
    self->alive.store(true);
    self->has_timer = false;
    self->lost.store(0);
    rt->threads[0].store(self);
    self->tid = Tid();
    self->index = 0;
    self->last_ns = rt->clock == CLOCK_MONOTONIC ? Now(CLOCK_MONOTONIC) : Now(CLOCK_THREAD_CPUTIME_ID);
    rt->thread_count.store(1);
    ArmTimer(self);
  } else {
    RegisterThread(Tid(), true);
  }
  StartFlusher();
}

void OnProcessExit(int status, void*) {
  if (!rt || rt->finished) return;
  GpuFlush(/*final=*/true);
  StopSampling();
  Finish(store::RunState::kComplete, status, std::nullopt);
}

std::string OwnModule() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&OwnModule), &info) && info.dli_fname) return info.dli_fname;
  return "";
}

// An LD_PRELOAD value without the collector.
std::string WithoutCollector(const std::string& all, const std::string& own) {
  std::string kept;
  size_t i = 0;
  while (i <= all.size()) {
    const size_t j = all.find_first_of(": ", i);
    const std::string item = all.substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (!item.empty() && item != own && item.find("libcct-collector") == std::string::npos)
      kept += (kept.empty() ? "" : ":") + item;
    if (j == std::string::npos) break;
    i = j + 1;
  }
  return kept;
}

// Removes the collector from LD_PRELOAD so children run without it.
void StripPreload(const std::string& own) {
  const char* pre = getenv("LD_PRELOAD");
  if (!pre) return;
  const std::string kept = WithoutCollector(pre, own);
  if (kept.empty()) unsetenv("LD_PRELOAD");
  else setenv("LD_PRELOAD", kept.c_str(), 1);
}

}  // namespace

bool Active() { return rt && rt->active.load(std::memory_order_relaxed); }

uint32_t SamplerInterrupts() {
  ThreadState* t = t_state;
  return t ? t->interrupts.load(std::memory_order_relaxed) : 0;
}

void RegisterCurrentThread() {
  if (!rt || !rt->active.load()) return;
  if (t_state) return;
  RegisterThread(Tid(), true);
  InstallAltStack();
}

void Start() {
  auto parsed = ParseConfig([](const char* n) -> const char* { return getenv(n); });
  if (!parsed.ok()) {
    Warn(parsed.status().message() + "; not profiling this process");
    return;
  }
  if (!parsed->has_value()) return;
  rt = new (std::nothrow) Runtime;
  if (!rt) return;
  rt->config = std::move(**parsed);
  rt->own_module = OwnModule();
  dl_iterate_phdr(OwnTextRange, nullptr);
  if (!rt->config.iteration_regex.empty()) {
    try {
      rt->iteration_regex = std::make_unique<std::regex>(rt->config.iteration_regex, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      Warn("--iteration '" + rt->config.iteration_regex + "' is not a valid regular expression; no iterations");
    }
  }
  if (!rt->config.follow) StripPreload(rt->own_module);

  std::string error;
  if (!LoadUnwinder(&error)) {
    Warn(error + "; call stacks will hold only the sampled instruction");
  }
  rt->signo = SIGRTMIN + rt->config.signal_offset;
  rt->clock = rt->config.clock == SampleClock::kWall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
  rt->period_ns = static_cast<int64_t>(1e9 / rt->config.freq_hz);
  if (pthread_key_create(&exit_key, OnThreadExit) != 0) return;
  if (pipe2(rt->request_pipe, O_CLOEXEC) != 0 || pipe2(rt->ack_pipe, O_CLOEXEC) != 0) return;

  struct sigaction sa {};
  sa.sa_sigaction = OnSample;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(rt->signo, &sa, nullptr) != 0) {
    Warn("cannot install the sampling signal handler; not profiling");
    return;
  }
  {
    // Warm libunwind's per-thread cache outside a signal handler.
    uintptr_t buf[64];
    UnwindHere(buf, 64);
  }

  // --gpu on must fail before anything is written; auto may attach now.
  GpuAtStart(rt->config, getpid());

  FillMeta(rt->meta);
  {
    std::lock_guard<std::mutex> lock(rt->flush_mutex);
    // The run exists from the start (state recording), so a crash before the
    // first checkpoint still leaves a trace, and children can link to it.
    // Written with an empty tree, so the run's metrics are known from the
    // start.
    cct::Tree empty;
    ProfileBuilder warm(empty, rt->config.clock == SampleClock::kWall ? "realtime" : "cputime", rt->own_module);
    auto db = store::Database::Open(rt->config.db_path, store::Database::Mode::kWrite);
    cct::Status st = db.ok() ? (*db)->CreateRun(rt->meta, &empty) : db.status();
    if (!st.ok()) {
      Warn("cannot record into " + rt->config.db_path + ": " + st.message() + "; not profiling");
      return;
    }
    rt->run_created = true;
    setenv("CCT_RECORD_PARENT_RUN", std::to_string(rt->meta.id).c_str(), 1);
  }

  pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  on_exit(OnProcessExit, nullptr);
  InstallFatalHandlers();
  InstallAltStack();

  rt->active.store(true);
  RegisterThread(Tid(), true);
  // Threads started before us (by other libraries' constructors).
  if (DIR* d = opendir("/proc/self/task")) {
    const pid_t self = Tid();
    while (dirent* e = readdir(d)) {
      const pid_t tid = static_cast<pid_t>(atoi(e->d_name));
      if (tid > 0 && tid != self && !FindThread(tid)) RegisterThread(tid, false);
    }
    closedir(d);
  }
  StartFlusher();
}

void BeforeExec() {
  if (!rt || rt->finished) return;
  GpuFlush(/*final=*/true);
  StopSampling();
  {
    std::lock_guard<std::mutex> lock(rt->flush_mutex);
    // A forked child that execs before anything was sampled has no run of
    // its own: the new image links straight to the parent's run.
    bool sampled = false;
    for (size_t i = 0; i < rt->thread_count.load(); ++i)
      if (ThreadState* t = rt->threads[i].load(); t && t->trie.size() > 1) sampled = true;
    if (!rt->run_created && !sampled) return;
    rt->meta.extra["exec"] = true;
    rt->meta.diagnostics["final_flush"] = 1;
    WriteRun(store::RunState::kComplete);
  }
  // A sample signal still pending would kill the new image (its default
  // action): take it now.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, rt->signo);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &set, &old);
  timespec zero{0, 0};
  while (sigtimedwait(&set, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void AfterFailedExec() {
  if (!rt || rt->finished) return;
  {
    std::lock_guard<std::mutex> lock(rt->flush_mutex);
    rt->meta.extra.erase("exec");
    rt->meta.diagnostics.erase("final_flush");
  }
  ResumeSampling();
}

ExecEnv ExecEnvironment(const char* const* envp) {
  ExecEnv out;
  std::map<std::string, std::string> ours;
  const bool follow = rt && rt->config.follow;
  if (follow) {
    ours = ConfigEnvironment(rt->config);
    const uint32_t parent = rt->run_created ? rt->meta.id : rt->config.parent_run;
    if (parent) ours["CCT_RECORD_PARENT_RUN"] = std::to_string(parent);
    else ours.erase("CCT_RECORD_PARENT_RUN");
  }
  std::string preload;
  for (const char* const* e = envp; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::string name(entry.substr(0, entry.find('=')));
    if (ours.count(name)) continue;  // ours win
    if (name == "LD_PRELOAD") {
      preload = std::string(entry.substr(entry.find('=') + 1));
      continue;
    }
    // --no-follow: the NVTX and CUDA drivers must not load the collector
    // into the child either.
    if (!follow && (name == "NVTX_INJECTION64_PATH" || name == "CUDA_INJECTION64_PATH") && rt &&
        entry.substr(name.size() + 1) == rt->own_module)
      continue;
    out.strings.emplace_back(entry);
  }
  const std::string own = rt ? rt->own_module : "";
  if (follow && !own.empty() && preload.find(own) == std::string::npos)
    preload = own + (preload.empty() ? "" : ":" + preload);
  if (!follow) preload = WithoutCollector(preload, own);
  if (!preload.empty()) out.strings.push_back("LD_PRELOAD=" + preload);
  for (const auto& [k, v] : ours) out.strings.push_back(k + "=" + v);
  for (const auto& str : out.strings) out.pointers.push_back(str.c_str());
  out.pointers.push_back(nullptr);
  return out;
}

void BeforeExit(int status) {
  if (!rt || rt->finished) return;
  GpuFlush(/*final=*/true);
  StopSampling();
  Finish(store::RunState::kComplete, status, std::nullopt);
}

void EnterLoader() {
  if (ThreadState* t = t_state) t->in_loader.fetch_add(1, std::memory_order_relaxed);
}
void LeaveLoader() {
  if (ThreadState* t = t_state) t->in_loader.fetch_sub(1, std::memory_order_relaxed);
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

// --- NVTX ----------------------------------------------------------------------

namespace {

// The collector's own code, skipped at the leaf end of push-time stacks.
uintptr_t own_text_lo = 0, own_text_hi = 0;

int OwnTextRange(dl_phdr_info* info, size_t, void*) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    const auto self = reinterpret_cast<uintptr_t>(&OwnTextRange);
    if (self >= lo && self < hi) {
      own_text_lo = lo;
      own_text_hi = hi;
      return 1;
    }
  }
  return 0;
}

void Problem(const char* what) {
  std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
  ++rt->nvtx_problems[what];
}

// Whether a return address lies in NVTX's own code (its header stubs, not
// inlined into the caller, or its C++ API). Resolved once per address; push
// sites are few, so after warm-up this is one hash lookup.
// The outermost (not inlined) frame at a return address, resolved outside
// a signal handler for the NVTX and launch-site stack trimming; empty when
// unknown. Takes flush_mutex (the symbolizer's guard).
SymbolFrame OutermostFrame(uintptr_t address) {
  std::lock_guard<std::mutex> lock(rt->flush_mutex);
  try {
    if (!rt->symbolizer) rt->symbolizer = Symbolizer::Create();
    const SymbolFrames& frames = rt->symbolizer->Lookup(address, true);
    if (!frames.empty()) return frames.front();
  } catch (...) {
  }
  return SymbolFrame{};
}

bool InNvtxCode(uintptr_t address) {
  {
    std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
    auto it = rt->nvtx_code.find(address);
    if (it != rt->nvtx_code.end()) return it->second;
  }
  const SymbolFrame outer = OutermostFrame(address);
  const bool nvtx = IsNvtxFunction(outer.function);
  std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
  rt->nvtx_code[address] = nvtx;
  return nvtx;
}

// The calling thread's stack, root first, without the collector's and
// NVTX's own frames: frames up to (and including) the caller of the NVTX
// call.
int CallerStack(uintptr_t* out, int max) {
  uintptr_t buf[kMaxDepth + 16];
  const int n = UnwindHere(buf, kMaxDepth + 16);
  int skip = 0;
  while (skip < n && buf[skip] >= own_text_lo && buf[skip] < own_text_hi) ++skip;
  while (skip < n && InNvtxCode(buf[skip])) ++skip;
  int depth = n - skip;
  if (depth > max) depth = max;
  for (int i = 0; i < depth; ++i) out[i] = buf[n - 1 - i];
  return depth;
}

// Iteration boundaries: snapshot every trie; at an end, keep the difference
// from the start. Caller holds nvtx_mutex.
void SnapshotTries(std::vector<std::vector<std::pair<int64_t, uint32_t>>>& snap) {
  const size_t n = rt->thread_count.load(std::memory_order_acquire);
  snap.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    ThreadState* t = rt->threads[i].load(std::memory_order_acquire);
    if (!t) continue;
    const size_t nodes = t->trie.size();
    snap[i].resize(nodes);
    for (SampleTrie::NodeIndex j = 0; j < nodes; ++j) snap[i][j] = {t->trie.time_ns(j), t->trie.samples(j)};
  }
}

void IterationBegin(int64_t now) {
  std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
  if (rt->iteration_depth++ > 0) return;  // nested instances: the outermost counts
  SnapshotTries(rt->iteration_start);
  rt->iteration_start_ns = now;
  rt->current_iteration.store(static_cast<uint32_t>(rt->iterations.size()), std::memory_order_release);
}

void IterationEnd(int64_t now) {
  std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
  if (rt->iteration_depth == 0 || --rt->iteration_depth > 0) return;
  rt->current_iteration.store(kNoIteration, std::memory_order_release);
  std::vector<std::vector<std::pair<int64_t, uint32_t>>> end;
  SnapshotTries(end);
  Runtime::IterationRecord rec;
  rec.start_ns = rt->iteration_start_ns;
  rec.duration_ns = now - rt->iteration_start_ns;
  for (size_t i = 0; i < end.size(); ++i) {
    for (size_t j = 0; j < end[i].size(); ++j) {
      const auto before = i < rt->iteration_start.size() && j < rt->iteration_start[i].size()
                              ? rt->iteration_start[i][j]
                              : std::pair<int64_t, uint32_t>{0, 0};
      const int64_t dt = end[i][j].first - before.first;
      const uint32_t ds = end[i][j].second - before.second;
      if (dt != 0 || ds != 0)
        rec.deltas.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(j), dt, ds});
    }
  }
  rt->iterations.push_back(std::move(rec));
}

}  // namespace

uint32_t NvtxDomain(std::string_view name) {
  if (!rt) return 0;
  std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
  const std::string key(name);
  auto it = rt->nvtx_domain_ids.find(key);
  if (it != rt->nvtx_domain_ids.end()) return it->second;
  const auto id = static_cast<uint32_t>(rt->nvtx_domains.size());
  rt->nvtx_domains.push_back(key);
  rt->nvtx_domain_ids.emplace(key, id);
  return id;
}

uint32_t NvtxName(uint32_t domain, std::string_view message) {
  if (!rt) return 0;
  std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
  std::string key = std::to_string(domain);
  key.push_back('\x1f');
  key.append(message);
  auto it = rt->nvtx_name_ids.find(key);
  if (it != rt->nvtx_name_ids.end()) return it->second;
  const auto id = static_cast<uint32_t>(rt->nvtx_names.size());
  const std::string& dom = domain < rt->nvtx_domains.size() ? rt->nvtx_domains[domain] : "";
  std::string display = dom.empty() ? std::string(message) : dom + "::" + std::string(message);
  bool iteration = false;
  if (rt->iteration_regex) {
    try {
      iteration = std::regex_search(display, *rt->iteration_regex);
    } catch (...) {
    }
  }
  rt->nvtx_names.push_back(std::move(display));
  rt->nvtx_is_iteration.push_back(iteration);
  rt->nvtx_name_ids.emplace(std::move(key), id);
  return id;
}

void NvtxPush(uint32_t domain, uint32_t name) {
  if (!rt || !rt->active.load(std::memory_order_relaxed)) return;
  ThreadState* t = t_state;
  if (!t) return Problem("nvtx_unregistered_thread");
  const int c = t->range_count.load(std::memory_order_relaxed);
  if (c >= kMaxRanges || t->range_overflow > 0) {
    ++t->range_overflow;
    return Problem("nvtx_too_deep");
  }
  ThreadState::OpenRange& e = t->ranges[c];
  e.frames_offset = c == 0 ? 0 : t->ranges[c - 1].frames_offset + t->ranges[c - 1].depth;
  const int room = kRangeFrames - static_cast<int>(e.frames_offset);
  e.depth = room > 0 ? static_cast<uint32_t>(CallerStack(t->range_frames + e.frames_offset,
                                                          room < kMaxDepth ? room : kMaxDepth))
                     : 0;
  e.key = MakeRangeKey(name);
  e.domain = domain;
  bool iteration;
  {
    std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
    iteration = name < rt->nvtx_is_iteration.size() && rt->nvtx_is_iteration[name];
  }
  e.iteration = iteration;
  e.start_ns = Now(CLOCK_MONOTONIC);
  std::atomic_signal_fence(std::memory_order_release);
  t->range_count.store(c + 1, std::memory_order_relaxed);
  if (iteration) IterationBegin(e.start_ns);
}

void NvtxPop(uint32_t domain) {
  if (!rt || !rt->active.load(std::memory_order_relaxed)) return;
  ThreadState* t = t_state;
  if (!t) return Problem("nvtx_unregistered_thread");
  if (t->range_overflow > 0) {
    --t->range_overflow;
    return;
  }
  const int c = t->range_count.load(std::memory_order_relaxed);
  int idx = c - 1;
  while (idx >= 0 && t->ranges[idx].domain != domain) --idx;
  if (idx < 0) return Problem("nvtx_pop_without_push");
  const int64_t now = Now(CLOCK_MONOTONIC);
  const ThreadState::OpenRange e = t->ranges[idx];
  // The range's own path: its push-time stack with the ranges below it.
  uint64_t keys[kMaxDepth + kMaxRanges + 2];
  int k = PathKeys(t, t->range_frames + e.frames_offset, static_cast<int>(e.depth), false, idx,
                   rt->epoch.load(std::memory_order_relaxed), keys);
  keys[k++] = e.key;
  if (!t->range_trie.AddSample(keys, k, now - e.start_ns)) Problem("nvtx_lost_ranges");
  // Hide the entries from idx up while they move (the handler may run).
  t->range_count.store(idx, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  for (int i = idx; i + 1 < c; ++i) t->ranges[i] = t->ranges[i + 1];
  std::atomic_signal_fence(std::memory_order_release);
  t->range_count.store(c - 1, std::memory_order_relaxed);
  if (e.iteration) IterationEnd(now);
}

uint64_t NvtxStart(uint32_t name) {
  if (!rt || !rt->active.load(std::memory_order_relaxed)) return 0;
  ThreadState* t = t_state;
  const int64_t now = Now(CLOCK_MONOTONIC);
  bool iteration;
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
    id = rt->next_range_id++;
    rt->started[id] = {t ? t->index : 0, name, now};
    iteration = name < rt->nvtx_is_iteration.size() && rt->nvtx_is_iteration[name];
  }
  if (iteration) IterationBegin(now);
  return id;
}

void NvtxEnd(uint64_t id) {
  if (!rt || !rt->active.load(std::memory_order_relaxed)) return;
  const int64_t now = Now(CLOCK_MONOTONIC);
  bool iteration = false;
  {
    std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
    auto it = rt->started.find(id);
    if (it == rt->started.end()) {
      ++rt->nvtx_problems["nvtx_end_unknown_id"];
      return;
    }
    auto& total = rt->ended[{it->second.thread, it->second.name}];
    total.time_ns += now - it->second.start_ns;
    ++total.count;
    iteration = it->second.name < rt->nvtx_is_iteration.size() && rt->nvtx_is_iteration[it->second.name];
    rt->started.erase(it);
  }
  if (iteration) IterationEnd(now);
}

void NvtxMark(uint32_t name) {
  if (!rt || !rt->active.load(std::memory_order_relaxed)) return;
  ThreadState* t = t_state;
  if (!t) return Problem("nvtx_unregistered_thread");
  uintptr_t frames[kMaxDepth];
  const int depth = CallerStack(frames, kMaxDepth);
  uint64_t keys[kMaxDepth + kMaxRanges + 2];
  int k = PathKeys(t, frames, depth, false, t->range_count.load(std::memory_order_relaxed),
                   rt->epoch.load(std::memory_order_relaxed), keys);
  keys[k++] = MakeRangeKey(name, true);
  if (!t->range_trie.AddSample(keys, k, 0)) Problem("nvtx_lost_ranges");
}

void NvtxNameThread(uint32_t tid, std::string_view name) {
  if (!rt) return;
  std::lock_guard<std::mutex> lock(registry_mutex);
  const size_t n = rt->thread_count.load();
  for (size_t i = 0; i < n; ++i) {
    ThreadState* t = rt->threads[i].load();
    if (t && static_cast<uint32_t>(t->tid) == tid) t->nvtx_name = std::string(name);
  }
}

void NvtxCountProblem(const char* what) {
  if (rt) Problem(what);
}

// --- GPU launch sites ---------------------------------------------------------

namespace {

// Whether a return address, met at the leaf end of a launch's stack, is part
// of the CUDA machinery between the program and our callback (libcuda,
// libcudart — static or shared —, libcupti, the adapter, nvcc's launch
// stubs). Resolved once per address and thread.
bool TrimmedAtLaunch(ThreadState* t, uintptr_t address) {
  if (address >= own_text_lo && address < own_text_hi) return true;
  auto it = t->gpu_runtime_frame.find(address);
  if (it != t->gpu_runtime_frame.end()) return it->second;
  const SymbolFrame outer = OutermostFrame(address);
  // The outermost function at the address decides (an inlined
  // cudaLaunchKernel<> template inside user code is the user's call).
  const bool trimmed =
      IsGpuRuntimeModule(outer.module) || IsGpuRuntimeFunction(outer.function) ||
      (!rt->config.gpu_adapter.empty() && !outer.module.empty() &&
       cct::BaseName(outer.module) == cct::BaseName(rt->config.gpu_adapter));
  t->gpu_runtime_frame.emplace(address, trimmed);
  return trimmed;
}

}  // namespace

bool CaptureLaunch(uint64_t op_key, uint64_t kernel_key, uint32_t* thread_index, uint32_t* trie_node) {
  if (!rt || !rt->active.load(std::memory_order_relaxed)) return false;
  ThreadState* t = t_state;
  if (!t) {
    // A thread we have not met (started before us by raw clone, or a
    // runtime's own thread): registered now, sampled from now on.
    RegisterCurrentThread();
    t = t_state;
    if (!t) return false;
  }
  uintptr_t buf[kMaxDepth + 16];
  const int n = UnwindHere(buf, kMaxDepth + 16);
  int skip = 0;
  while (skip < n && TrimmedAtLaunch(t, buf[skip])) ++skip;
  int depth = n - skip;
  if (depth > kMaxDepth) depth = kMaxDepth;
  uintptr_t frames[kMaxDepth];
  for (int i = 0; i < depth; ++i) frames[i] = buf[n - 1 - i];
  uint64_t keys[kMaxDepth + kMaxRanges + 4];
  int k = PathKeys(t, frames, depth, false, t->range_count.load(std::memory_order_relaxed),
                   rt->epoch.load(std::memory_order_relaxed), keys);
  keys[k++] = op_key;
  if (kernel_key) keys[k++] = kernel_key;
  const SampleTrie::NodeIndex leaf = t->launch_trie.AddSampleAt(keys, k, 0);
  if (leaf == SampleTrie::kNoIndex) return false;
  *thread_index = t->index;
  *trie_node = leaf;
  return true;
}

const std::string& CollectorModule() {
  static const std::string empty;
  return rt ? rt->own_module : empty;
}

void RuntimeWarn(const std::string& message) { Warn(message); }

uint32_t CurrentIteration() {
  return rt ? rt->current_iteration.load(std::memory_order_acquire) : kNoIteration;
}

}  // namespace collector
