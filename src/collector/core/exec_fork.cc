// fork and exec: the atfork handlers (the child starts its own run, linked
// to the parent's, or goes quiet with --no-follow), the final write before
// exec and the environment an exec'd image gets. Normal context only; the
// atfork handlers take every runtime lock around fork (ForkPrepare).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <string_view>
#include <nlohmann/json.hpp>

#include "collector/core/runtime.h"
#include "collector/core/run_info.h"
#include "collector/core/runtime_state.h"
#include "collector/core/source.h"
#include "collector/cpu/sampler.h"

namespace collector {
namespace internal {

void ForkPrepare() {
  if (!rt) return;
  rt->trim_mutex.lock();
  rt->flush_mutex.lock();
  rt->modules_mutex.lock();
  registry_mutex.lock();
  rt->nvtx_mutex.lock();
}
void ForkParent() {
  if (!rt) return;
  rt->nvtx_mutex.unlock();
  registry_mutex.unlock();
  rt->modules_mutex.unlock();
  rt->flush_mutex.unlock();
  rt->trim_mutex.unlock();
  RaiseDeferredFatal();
}
namespace {
// Set by ForkForVfork around its fork, for ForkChild in the child.
__thread bool t_vforking __attribute__((tls_model("initial-exec"))) = false;
}  // namespace

void ForkChild() {
  if (!rt) return;
  // The mutexes were taken by this thread in ForkPrepare; a fresh object is
  // the portable way to get an unlocked one in the child.
  new (&registry_mutex) std::mutex;
  new (&rt->flush_mutex) std::mutex;
  new (&rt->trim_mutex) std::mutex;
  // The unloaded modules stay: the child inherits the address space they
  // describe (and the key epoch they go with).
  new (&rt->modules_mutex) std::mutex;
  new (&rt->nvtx_mutex) std::mutex;
  ThreadState* self = t_state;
  rt->active.store(false);
  rt->deferred_fatal.store(0);  // a signal the parent got while it forked was the parent's
  // Loader calls other threads had in progress do not exist in the child.
  rt->loaders_active.store(self ? self->in_loader.load() : 0);
  rt->flusher_running = false;
  rt->fatal_once.store(false);
  // Only exec or exit follow: the parent's state stays as it is (each page
  // written here would be copied for nothing), and so does rt->pid, which
  // makes this a foreign process: it writes nothing.
  if (t_vforking) return;
  ForkChildUnwinder();
  if (!rt->config.follow) return;  // --no-follow: the child is not recorded
  rt->pid = getpid();
  // Only this thread exists in the child; its samples so far were the
  // parent's. The child's run starts now, empty, linked to the parent's.
  std::string parent_key = ParentKeyForChildren();
  std::string root_key = RootKeyForChildren();
  for (size_t i = 0; i < rt->thread_count.load(); ++i) {
    // The parent's events, inherited as descriptors: not ours to keep.
    ThreadState* t = rt->threads[i].load();
    if (t && t->perf_fd >= 0) close(t->perf_fd), t->perf_fd = -1;
  }
  // Only the slots in use: clearing all 16384 would copy 128 KB of pages
  // into every forked child (a build forks a hundred times).
  for (size_t i = 0, n = rt->thread_count.load(); i < n && i < kMaxThreads; ++i)
    rt->threads[i].store(nullptr, std::memory_order_relaxed);
  rt->thread_count.store(0);
  rt->threads_unsampled.store(0);
  rt->symbolizer.release();  // inherited descriptors and the parent's pid: leak, never reuse
  rt->trim_symbolizer.release();
  // The main thread's published ranges were the parent's (--nvtx-inherit).
  rt->main_ranges.Reset();
  rt->run_created = false;
  rt->start_write_pending = false;
  rt->spool_file_written = false;
  rt->finished = false;
  rt->warned_write = false;
  rt->config.parent_key = std::move(parent_key);
  rt->config.root_key = std::move(root_key);
  rt->run_key = NewRunKey();
  PublishExecOverlay();
  // The metadata waits for the child's first write (EnsureChildMeta): a
  // child that execs before its first sample never needs it, and filling it
  // (command line, environment, /proc reads) was a third of a shell's fork.
  rt->child_meta_pending = true;
  rt->child_start_ns = Now(CLOCK_REALTIME);
  rt->start_mono_ns = Now(CLOCK_MONOTONIC);
  rt->epoch_offset_ns = RealtimeMinusMonotonicNs();
  rt->checkpoint_ns = 0;
  rt->checkpoints_spaced = 0;
  rt->child_cwd = CurrentDirectory();
  rt->trace_budget.Reset(rt->config.trace_limit_bytes);
  if (pipe2(rt->request_pipe, O_CLOEXEC) != 0 || pipe2(rt->ack_pipe, O_CLOEXEC) != 0) return;
  rt->active.store(true);
  // NVTX totals and the GPU's state restart for the child's run.
  SourcesForkChild();
  if (self) {
    self->trie.Reset();
    self->range_trie.Reset();
    // Ranges the parent had open stay open here, but their nodes were in
    // the parent's trie: the child's trace has them at their pop only.
    for (int r = 0, n = self->range_count.load(); r < n && r < kMaxRanges; ++r)
      self->ranges[r].trace_node = SampleTrie::kNoIndex;
    self->open_trace.Reset();
    self->launch_trie.Reset();
    self->sample_trace.Reset();
    self->range_trace.Reset();
    self->gpu_runtime_frame.clear();
    self->alive.store(true);
    self->has_timer = false;
    self->lost.store(0);
    self->throttled.store(0);
    self->handler_ns.store(0);
    self->python_ns.store(0);
    self->throttle_until_ns = 0;
    rt->threads[0].store(self);
    self->tid = Tid();
    self->index = 0;
    self->last_ns = Now(SampleClockOf(self->tid));
    rt->thread_count.store(1);
    ArmTimer(self);
  } else {
    RegisterThread(Tid(), true);
  }
  StartFlusher();
}

namespace {

// The items of an LD_PRELOAD value other than the collector, joined by ':',
// written to `out` (at most all.size() bytes). Allocates nothing.
size_t WriteWithoutCollector(std::string_view all, std::string_view own, char* out) {
  size_t n = 0;
  size_t i = 0;
  while (i <= all.size()) {
    const size_t j = all.find_first_of(": ", i);
    const std::string_view item = all.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    if (!item.empty() && item != own && item.find("libcct-collector") == std::string_view::npos) {
      if (n) out[n++] = ':';
      memcpy(out + n, item.data(), item.size());
      n += item.size();
    }
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return n;
}

std::string_view NameOf(std::string_view entry) { return entry.substr(0, entry.find('=')); }
// After the '=' ("" for an entry without one: environments are the
// program's, anything goes).
std::string_view ValueOf(std::string_view entry) {
  const size_t eq = entry.find('=');
  return eq == std::string_view::npos ? std::string_view() : entry.substr(eq + 1);
}

constexpr std::string_view kPreloadName = "LD_PRELOAD";

// How an entry of the environment passed to exec is carried over.
enum class Carry { kAsIs, kDropped, kPreload };
Carry CarryOf(const ExecOverlay& o, std::string_view entry) {
  const std::string_view name = NameOf(entry);
  for (const std::string& ours : o.entries)
    if (NameOf(ours) == name) return Carry::kDropped;  // ours win
  if (name == kPreloadName) return Carry::kPreload;
  // --no-follow: the NVTX and CUDA drivers must not load the collector into
  // the child either.
  if (!o.follow && (name == "NVTX_INJECTION64_PATH" || name == "CUDA_INJECTION64_PATH") &&
      ValueOf(entry) == o.own)
    return Carry::kDropped;
  return Carry::kAsIs;
}

const ExecOverlay* Overlay() { return rt ? rt->exec_overlay.load(std::memory_order_acquire) : nullptr; }

}  // namespace

// An LD_PRELOAD value without the collector.
std::string WithoutCollector(const std::string& all, const std::string& own) {
  std::string kept(all.size(), '\0');
  kept.resize(WriteWithoutCollector(all, own, kept.data()));
  return kept;
}

void PublishExecOverlay() {
  auto* o = new (std::nothrow) ExecOverlay;
  if (!o) return;
  o->own = rt->own_module;
  o->follow = rt->config.follow;
  if (o->follow) {
    std::map<std::string, std::string> ours = ConfigEnvironment(rt->config);
    if (const std::string parent = ParentKeyForChildren(); !parent.empty()) ours["CCT_RECORD_PARENT_KEY"] = parent;
    else ours.erase("CCT_RECORD_PARENT_KEY");
    if (const std::string root = RootKeyForChildren(); !root.empty()) ours["CCT_RECORD_ROOT_KEY"] = root;
    else ours.erase("CCT_RECORD_ROOT_KEY");
    for (const auto& [k, v] : ours) o->entries.push_back(k + "=" + v);
  }
  // The previous overlay is not freed: a vfork child of another thread may
  // be reading it. One or two per process image.
  rt->exec_overlay.store(o, std::memory_order_release);
}

// Removes the collector from LD_PRELOAD so children run without it.
void StripPreload(const std::string& own) {
  const char* pre = getenv("LD_PRELOAD");
  if (!pre) return;
  const std::string kept = WithoutCollector(pre, own);
  if (kept.empty()) unsetenv("LD_PRELOAD");
  else setenv("LD_PRELOAD", kept.c_str(), 1);
}

}  // namespace internal

using namespace internal;

pid_t ForkForVfork() {
  t_vforking = true;
  const pid_t pid = fork();
  t_vforking = false;
  return pid;
}

void BeforeExec() {
  if (!rt || rt->finished || InForeignChild()) return;
  rt->final_writer.store(Tid());  // until RaiseDeferredFatal below
  SourcesBeforeCheckpoint(/*final=*/true);
  SourcesStop();
  bool written = false;
  {
    std::lock_guard<std::mutex> lock(rt->flush_mutex);
    // A forked child that execs before anything was sampled has no run of
    // its own: the new image links straight to the parent's run.
    bool sampled = false;
    for (size_t i = 0; i < rt->thread_count.load(); ++i)
      if (ThreadState* t = rt->threads[i].load(); t && t->trie.size() > 1) sampled = true;
    if (rt->run_created || sampled) {
      EnsureChildMeta();
      rt->meta.extra["exec"] = true;
      rt->meta.diagnostics["final_flush"] = 1;
      WriteRun(store::RunState::kComplete);
      written = true;
    }
  }
  RaiseDeferredFatal();  // not carried into the new image: it ends this one, as without us
  if (!written) return;
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
  if (!rt || rt->finished || InForeignChild()) return;
  {
    std::lock_guard<std::mutex> lock(rt->flush_mutex);
    rt->meta.extra->erase("exec");
    rt->meta.diagnostics.erase("final_flush");
  }
  RaiseDeferredFatal();
  SourcesResume();
}

namespace {
// The last LD_PRELOAD entry's value, as exec would see it.
std::string_view PreloadOf(const ExecOverlay& o, const char* const* envp) {
  std::string_view preload;
  for (const char* const* e = envp; e && *e; ++e)
    if (CarryOf(o, *e) == Carry::kPreload) preload = ValueOf(*e);
  return preload;
}
}  // namespace

ExecEnvSize MeasureExecEnv(const char* const* envp) {
  const ExecOverlay* o = Overlay();
  if (!o) return {};
  ExecEnvSize size;
  for (const char* const* e = envp; e && *e; ++e) ++size.slots;
  size.slots += o->entries.size() + 2;  // LD_PRELOAD, the null
  size.text = kPreloadName.size() + 1 + o->own.size() + 1 + PreloadOf(*o, envp).size() + 1;
  return size;
}

char* const* BuildExecEnv(const char* const* envp, const char** slots, char* text) {
  const ExecOverlay* o = Overlay();
  if (!o) return const_cast<char* const*>(envp);
  size_t n = 0;
  for (const char* const* e = envp; e && *e; ++e)
    if (CarryOf(*o, *e) == Carry::kAsIs) slots[n++] = *e;
  const std::string_view preload = PreloadOf(*o, envp);
  char* p = text;
  auto put = [&p](std::string_view s) {
    memcpy(p, s.data(), s.size());
    p += s.size();
  };
  put(kPreloadName);
  put("=");
  const char* value = p;
  if (!o->follow) {
    p += WriteWithoutCollector(preload, o->own, p);
  } else if (!o->own.empty() && preload.find(o->own) == std::string_view::npos) {
    put(o->own);
    if (!preload.empty()) put(":"), put(preload);
  } else {
    put(preload);
  }
  if (p != value) {
    *p = '\0';
    slots[n++] = text;
  }
  for (const std::string& entry : o->entries) slots[n++] = entry.c_str();
  slots[n] = nullptr;
  return const_cast<char* const*>(slots);
}

ExecEnv ExecEnvironment(const char* const* envp) {
  ExecEnv out;
  const ExecEnvSize size = MeasureExecEnv(envp);
  out.slots.resize(size.slots);
  out.text.resize(size.text);
  out.env = BuildExecEnv(envp, out.slots.data(), out.text.data());
  return out;
}

bool InForeignChild() { return rt && getpid() != rt->pid; }  // async-signal-safe

}  // namespace collector
