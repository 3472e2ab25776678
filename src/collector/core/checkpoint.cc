// The checkpoint writer: WriteRun builds the tree from every thread's tries
// (the sources add theirs through add_to_run) and writes the run; the
// checkpoint thread writes periodically and, for a fatal signal in another
// thread, writes the final state. Thread-safety: WriteRun and LookupSymbols
// need flush_mutex held; the checkpoint thread takes it.
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "cct/tree_ops.h"
#include "collector/core/checkpoint_schedule.h"
#include "collector/core/profile_builder.h"
#include "collector/core/run_info.h"
#include "collector/core/runtime_state.h"
#include "collector/core/source.h"
#include "collector/cpu/cfi_unwinder.h"
#include "collector/nvtx/nvtx_ranges.h"
#include "collector/python/python_frames.h"
#include "store/run_file.h"

namespace collector::internal {

uint64_t LookupKey(uint64_t key, bool return_address) {
  return key | (return_address ? uint64_t{1} << 47 : 0);  // user addresses are below 2^47
}

namespace {
const SymbolFrames& Named(uint64_t lk, const std::string& function, const std::string& module = {}) {
  SymbolFrame f;
  f.function = function;
  f.module = module;
  return rt->frozen.insert_or_assign(lk, SymbolFrames{f}).first->second;
}
}  // namespace

// The symbol lookup for the profile builder. Caller holds flush_mutex.
// A key's epoch says which modules were loaded when it was sampled: an
// address covered by a module unloaded since is named from that module's
// file; any other address is in a module still loaded and goes to the live
// symbolizer (whose results stay cached across checkpoints).
const SymbolFrames& LookupSymbols(uint64_t key, bool return_address) {
  if (IsPythonKey(key)) return python::PythonSymbolFrames(key);
  const uint32_t epoch = static_cast<uint32_t>(key >> kEpochShift);
  const uintptr_t address = KeyAddress(key);
  const uint64_t lk = LookupKey(key, return_address);
  const uint32_t now = rt->epoch.load(std::memory_order_relaxed) & kEpochMask;
  if (now != rt->synced_epoch) {
    // Modules were unloaded since: the live symbolizer forgets them.
    rt->symbolizer->Sync();
    rt->synced_epoch = now;
  }
  UnloadedModules::Match match;
  ModuleImage image;
  {
    std::lock_guard<std::mutex> lock(rt->modules_mutex);
    if (!rt->unloaded.empty()) {
      auto it = rt->frozen.find(lk);
      if (it != rt->frozen.end()) return it->second;
      std::optional<ModuleImage> live;
      if (epoch == rt->unloaded.final_epoch()) {
        for (ModuleImage& m : LoadedModules())
          if (m.Covers(address)) live = std::move(m);
      }
      match = rt->unloaded.Find(epoch, address, live ? &*live : nullptr);
      if (match.module) image = match.module->image;
    }
  }
  switch (match.kind) {
    case UnloadedModules::Match::kLive:
      return rt->symbolizer->Lookup(address, return_address);
    case UnloadedModules::Match::kAmbiguous: {
      char buf[96];
      std::snprintf(buf, sizeof buf, "<code at 0x%lx in one of %zu unloaded modules>",
                    static_cast<unsigned long>(address), match.candidates);
      return Named(lk, buf);
    }
    case UnloadedModules::Match::kUnloaded:
      break;
  }
  const SymbolFrames& frames = rt->symbolizer->LookupImage(image, address, return_address);
  return rt->frozen.insert_or_assign(lk, frames).first->second;
}

namespace {

// The thread node above `node` (kNoNode when there is none).
cct::NodeId ThreadNodeOf(const cct::Tree& tree, cct::NodeId node) {
  while (node != cct::kNoNode && node != cct::kRootNode && tree.kind(node) != cct::FrameKind::kThread)
    node = tree.parent(node);
  return node == cct::kRootNode ? cct::kNoNode : node;
}

// --trace: every thread's logged samples and NVTX ranges on `tree`, through
// the builder's trie-to-tree node maps; times move from CLOCK_MONOTONIC to
// the epoch by rt->epoch_offset_ns. The logs only grow, so each checkpoint
// rebuilds the whole trace from them (the tree's node ids change between
// checkpoints; the trie's do not).
void CollectTrace(const cct::Tree& tree, const std::vector<std::vector<cct::NodeId>>& value_nodes,
                  const std::vector<std::vector<cct::NodeId>>& range_nodes, store::RunTrace& trace) {
  const int64_t to_epoch_ns = rt->epoch_offset_ns;
  const size_t n = value_nodes.size();
  for (size_t i = 0; i < n; ++i) {
    const ThreadState* t = rt->threads[i].load(std::memory_order_acquire);
    if (!t) continue;
    store::TraceSamples samples;
    samples.thread = cct::kNoNode;
    const size_t count = t->sample_trace.size();
    samples.time_ns.reserve(count);
    samples.node.reserve(count);
    for (size_t k = 0; k < count; ++k) {
      const TraceSampleRecord& r = t->sample_trace[k];
      // A leaf the tree has no node for (the trie grew after AddThread read
      // it): a later checkpoint has it.
      if (r.node >= value_nodes[i].size() || value_nodes[i][r.node] == cct::kNoNode) continue;
      const cct::NodeId node = value_nodes[i][r.node];
      if (samples.thread == cct::kNoNode) samples.thread = ThreadNodeOf(tree, node);
      samples.time_ns.push_back(r.time_ns + to_epoch_ns);
      samples.node.push_back(node);
    }
    if (!samples.node.empty() && samples.thread != cct::kNoNode) trace.samples.push_back(std::move(samples));
    const size_t ranges = t->range_trace.size();
    for (size_t k = 0; k < ranges; ++k) {
      const TraceRangeRecord& r = t->range_trace[k];
      if (r.node >= range_nodes[i].size() || range_nodes[i][r.node] == cct::kNoNode) continue;
      const cct::NodeId node = range_nodes[i][r.node];
      const cct::NodeId thread = ThreadNodeOf(tree, node);
      if (thread == cct::kNoNode) continue;
      trace.ranges.push_back({thread, node, r.start_ns + to_epoch_ns, r.end_ns + to_epoch_ns});
    }
    // Ranges not popped yet: open in this write (the next one has them
    // again, open or ended); a crash after it keeps them.
    int64_t open_start[kMaxRanges];
    uint32_t open_node[kMaxRanges];
    const int open = t->open_trace.Read(nullptr, open_start, open_node, 64);
    for (int k = 0; k < open; ++k) {
      if (open_node[k] >= range_nodes[i].size() || range_nodes[i][open_node[k]] == cct::kNoNode) continue;
      const cct::NodeId node = range_nodes[i][open_node[k]];
      const cct::NodeId thread = ThreadNodeOf(tree, node);
      if (thread == cct::kNoNode) continue;
      trace.ranges.push_back({thread, node, open_start[k] + to_epoch_ns, store::kTraceOpenEnd});
    }
  }
  // Ranges are logged at their pop (inner ones first); EncodeTrace puts
  // them in start order.
  trace.limit_bytes = rt->config.trace_limit_bytes;
  trace.dropped = rt->trace_budget.dropped.load(std::memory_order_relaxed);
}

// How long a final write waits for cct-record to take a message before it
// writes the file instead: cct-record reads between its passes, and a pass
// that stores a build's batch takes tens of milliseconds.
constexpr int kInboxSendTimeoutMs = 2000;

// Sends `bytes` (a run file's) to cct-record's inbox (store/run_file.h);
// false when it is not there, refuses, or does not take them in time: the
// caller writes the file then. A message cut short is dropped by the inbox
// (its length says so), so the file and a whole message never both exist
// unless both are complete: the same key, stored once.
bool SendToInbox(const std::string& spool_dir, std::string_view bytes) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = spool_dir + "/" + std::string(store::kInboxSocketName);
  if (bytes.size() > store::kInboxMaxPayload || path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  // Non-blocking: a full backlog (EAGAIN) means a busy recorder; the file
  // is as good.
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return false;
  }
  const std::string header = store::InboxFrameHeader(bytes.size());
  const int64_t deadline = Now(CLOCK_MONOTONIC) + int64_t{kInboxSendTimeoutMs} * 1000000;
  size_t sent = 0;
  const size_t total = header.size() + bytes.size();
  bool ok = true;
  while (sent < total) {
    iovec iov[2];
    int n_iov = 0;
    if (sent < header.size()) iov[n_iov++] = {const_cast<char*>(header.data() + sent), header.size() - sent};
    const size_t body_sent = sent > header.size() ? sent - header.size() : 0;
    iov[n_iov++] = {const_cast<char*>(bytes.data() + body_sent), bytes.size() - body_sent};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n_iov);
    // MSG_NOSIGNAL: a recorder that went away must not SIGPIPE the program.
    const ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int64_t left_ms = (deadline - Now(CLOCK_MONOTONIC)) / 1000000;
    if (n < 0 && errno == EAGAIN && left_ms > 0) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, static_cast<int>(left_ms)) >= 0 || errno == EINTR) continue;
    }
    ok = false;
    break;
  }
  close(fd);
  return ok;
}

}  // namespace

cct::Status SpoolWritable() {
  // The spool directory is cct-record's; without it (preloaded by hand, or
  // removed) make it.
  const std::string& dir = rt->config.spool_dir;
  if (access(dir.c_str(), W_OK | X_OK) == 0) return cct::Status::Ok();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (access(dir.c_str(), W_OK | X_OK) == 0) return cct::Status::Ok();
  const int err = errno;
  return cct::IoError(dir + ": " + (ec ? ec.message() : std::string(std::strerror(err))));
}

cct::Status WriteRunFile(const cct::Tree* tree, const store::RunIterations* iterations, const store::RunTrace* trace,
                         bool final) {
  if (rt->run_key.empty()) return cct::Status(cct::ErrorCode::kInternal, "no run key");
  store::RunFile run;
  run.meta = rt->meta;
  run.key = rt->run_key;
  run.parent_key = rt->config.parent_key;
  run.root_key = rt->config.root_key;
  auto sections = store::EncodeRun(run.meta, tree, iterations, trace);
  if (!sections.ok()) return sections.status();
  run.sections = std::move(sections).value();
  rt->meta.node_count = run.meta.node_count;
  if (rt->meta.iteration_regex.empty()) rt->meta.iteration_regex = run.meta.iteration_regex;
  const std::string bytes = store::EncodeRunFile(run);
  // A final write with no file of this run in the spool goes to the inbox;
  // with a file there, the file is replaced (the inbox's copy and an older
  // file would both be stored, in either order). After a write that failed
  // (a full disk: said once already) the file is tried again rather than
  // handing cct-record a run it could not store on the same disk either.
  if (final && rt->config.inbox && !rt->spool_file_written && !rt->warned_write &&
      SendToInbox(rt->config.spool_dir, bytes))
    return cct::Status::Ok();
  const std::string path = rt->config.spool_dir + "/" + rt->run_key + std::string(store::kRunFileSuffix);
  cct::Status st = store::WriteRunFile(path, bytes);
  if (!st.ok()) {
    // The spool directory is cct-record's; without it (preloaded by hand,
    // or removed) make it, then try once more.
    std::error_code ec;
    std::filesystem::create_directories(rt->config.spool_dir, ec);
    st = store::WriteRunFile(path, bytes);
  }
  if (st.ok()) rt->spool_file_written = true;
  return st;
}

namespace {

// Where a thread that libc's pthread_create started ends: the checkpoint
// thread is one, and unwinds itself (rt->thread_root_pc). It does so before
// its first write, or when another thread's write asks ('P'), not at start:
// the walk reads the collector's and libc's unwind tables, about 11 page
// faults, which a process that ends before its start write (50 ms) with no
// thread but the main one never needs (docs/performance.md). Checkpoint
// thread only.
void ProbeThreadRoot() {
  if (rt->thread_root_probed.load(std::memory_order_acquire)) return;
  uintptr_t stack[128];
  const int n = UnwindHere(stack, 128, ThisThreadStack(false));
  if (n > 1 && n < 128) rt->thread_root_pc.store(stack[n - 1], std::memory_order_release);
  rt->thread_root_probed.store(true, std::memory_order_release);
}

// A write on another thread (exit, exec) of a process with threads besides
// the main one, before the checkpoint thread probed: ask it, and wait a
// little. It is then in poll, never waiting for flush_mutex (which the
// caller holds): every path of it that takes that mutex probes first.
// Without an answer the write goes on; such threads' stacks are then
// complete only where libc's names say so.
void AwaitThreadRoot() {
  if (rt->thread_root_probed.load(std::memory_order_acquire) || !rt->flusher_running ||
      rt->thread_count.load(std::memory_order_acquire) <= 1 || Tid() == rt->flusher_tid.load())
    return;
  const char req = 'P';
  if (write(rt->request_pipe[1], &req, 1) != 1) return;
  const int64_t deadline = Now(CLOCK_MONOTONIC) + 100 * int64_t{1000000};
  while (!rt->thread_root_probed.load(std::memory_order_acquire) && Now(CLOCK_MONOTONIC) < deadline) {
    timespec pause{0, 50 * 1000};
    nanosleep(&pause, nullptr);
  }
}

}  // namespace

// Builds the tree from every thread's trie and writes the run. Caller holds
// flush_mutex. Never throws.
void WriteRun(store::RunState state) noexcept {
  const int64_t duration_ns = Now(CLOCK_MONOTONIC) - rt->start_mono_ns;  // before symbolization's cost
  EnsureChildMeta();
  AwaitThreadRoot();
  try {
    if (!rt->symbolizer) {
      rt->symbolizer = Symbolizer::Create(0, rt->config.system_debug_info, rt->config.symbol_cache_dir);
      rt->symbolizer->AddSymbolTableOnly(rt->own_module);
    }
    cct::Tree tree;
    ProfileBuilder builder(tree, rt->config.clock == SampleClock::kWall ? "realtime" : "cputime", rt->own_module,
                           RangeDisplayName);
    // Where a thread pthread_create started ends, and the loader's entry
    // code, which ran the first constructors (ours among them).
    builder.SetThreadRoot([root = rt->thread_root_pc.load(std::memory_order_acquire)](uint64_t key) {
      const uintptr_t a = KeyAddress(key);
      return (root != 0 && a == root) || InStackRootCode(a);
    });
    SymbolLookup lookup = LookupSymbols;
    uint64_t lost = 0, throttled = 0;
    int64_t handler_ns = 0, python_ns = 0;
    const size_t n = rt->thread_count.load(std::memory_order_acquire);
    size_t sampled_threads = 0;
    std::vector<std::vector<cct::NodeId>> value_nodes(n), range_nodes(rt->config.trace ? n : 0);
    std::vector<std::string> names(n);
    for (size_t i = 0; i < n; ++i)
      if (ThreadState* t = rt->threads[i].load(std::memory_order_acquire)) names[i] = ThreadName(*t);
    DistinguishThreadNames(names);
    for (size_t i = 0; i < n; ++i) {
      ThreadState* t = rt->threads[i].load(std::memory_order_acquire);
      if (!t) continue;
      if (t->trie.size() > 1) ++sampled_threads;
      builder.AddThread(names[i], t->trie, lookup, &value_nodes[i]);
      builder.AddRanges(names[i], t->range_trie, lookup, rt->config.trace ? &range_nodes[i] : nullptr);
      lost += t->lost.load(std::memory_order_relaxed);
      throttled += t->throttled.load(std::memory_order_relaxed);
      handler_ns += t->handler_ns.load(std::memory_order_relaxed);
      python_ns += t->python_ns.load(std::memory_order_relaxed);
    }
    store::RunIterations iterations;
    store::RunMeta& m = rt->meta;
    m.state = state;
    m.sampling["source"] = rt->config.clock == SampleClock::kWall ? "posix-timer"
                           : rt->use_perf.load() == 1           ? "perf-task-clock"
                                                                : "posix-cpu-timer";
    m.duration_ns = duration_ns;
    m.updated_ns = Now(CLOCK_REALTIME);
    m.process_cpu_ns = ProcessCpuNs();  // every thread's, this one's included
    if (state != store::RunState::kCrashed) MergeModules(m.modules, RunModules());  // the crashed thread may hold the loader lock
    ++m.checkpoints;
    m.diagnostics["samples"] = static_cast<int64_t>(builder.stats().samples);
    m.diagnostics["partial_samples"] = static_cast<int64_t>(builder.stats().partial_samples);
    m.diagnostics["truncated_samples"] = static_cast<int64_t>(builder.stats().truncated_samples);
    m.diagnostics["lost_samples"] = static_cast<int64_t>(lost);
    m.diagnostics["throttled_samples"] = static_cast<int64_t>(throttled);
    const UnwindCounts unwound = UnwindCountsSoFar();
    m.diagnostics["walker_samples"] = static_cast<int64_t>(unwound.walker);
    // The walker's rows from the recording's shared table, and those it
    // computed from CFI (cpu/shared_rows.h).
    const CfiRowCounts rows = CfiRowCountsSoFar();
    m.diagnostics["walker_rows_shared"] = static_cast<int64_t>(rows.shared);
    m.diagnostics["walker_rows_computed"] = static_cast<int64_t>(rows.computed);
    m.diagnostics["libunwind_samples"] = static_cast<int64_t>(unwound.libunwind);
    m.diagnostics["handler_ns"] = handler_ns;
    if (python_ns > 0) m.diagnostics["python_handler_ns"] = python_ns;
    m.diagnostics["checkpoint_ns"] = rt->checkpoint_ns;  // the periodic writes before this one
    if (rt->checkpoints_spaced) m.diagnostics["checkpoints_spaced"] = rt->checkpoints_spaced;
    if (const int64_t s = rt->start_cost_ns.load(std::memory_order_relaxed); s > 0) m.diagnostics["start_ns"] = s;
    m.diagnostics["threads"] = static_cast<int64_t>(n);
    m.diagnostics["sampled_threads"] = static_cast<int64_t>(sampled_threads);
    m.diagnostics["thread_root"] = rt->thread_root_pc.load(std::memory_order_acquire) != 0 ? 1 : 0;
    if (uint64_t u = rt->threads_unsampled.load()) m.diagnostics["unsampled_threads"] = static_cast<int64_t>(u);
    if (state == store::RunState::kCrashed && rt->fatal_tid.load() != 0) {
      // Where the process faulted: the thread, the instruction and the
      // address it touched, and the function the instruction is in.
      const uint64_t pc = rt->fatal_pc.load();
      m.diagnostics["fatal_tid"] = rt->fatal_tid.load();
      m.diagnostics["fatal_pc"] = static_cast<int64_t>(pc);
      m.diagnostics["fatal_address"] = static_cast<int64_t>(rt->fatal_address.load());
      if (pc != 0) {
        const SymbolFrames& frames = rt->symbolizer->Lookup(pc, /*return_address=*/false);
        if (!frames.empty() && !frames.back().function.empty()) {
          const SymbolFrame& f = frames.back();
          std::string site = f.function;
          if (!f.module.empty()) site += " in " + std::string(cct::BaseName(f.module));
          if (!f.file.empty() && f.line != 0) site += " at " + cct::LineName(f.file, f.line);
          m.sampling["crash_site"] = site;
        }
      }
    }
    if (const std::string& why = Symbolizer::LibDwProblem(); !why.empty()) {
      // The run says why its frames are bare offsets; the user hears it once.
      m.sampling["symbolizer_problem"] = why;
      if (!rt->warned_symbols) {
        rt->warned_symbols = true;
        Warn(why + "; frames are named module+0xOFFSET");
      }
    }
    // NVTX adds its start/end ranges, problems and iterations; the GPU its
    // launch tries, metrics and facts (onto those iterations).
    std::optional<store::RunTrace> trace;
    if (rt->config.trace) {
      trace.emplace();
      CollectTrace(tree, value_nodes, range_nodes, *trace);
    }
    RunContext run{tree, builder, lookup, n, names, value_nodes, m, iterations, trace ? &*trace : nullptr};
    SourcesAddToRun(run);
    m.node_count = tree.size();
    if (trace) {
      m.diagnostics["trace_events"] = static_cast<int64_t>(store::TraceEventCount(*trace));
      if (trace->dropped > 0) {
        // Said where a user looks first (cct-query show), besides the trace's own count.
        m.diagnostics["trace_dropped_events"] = static_cast<int64_t>(trace->dropped);
        m.sampling["trace_limit_reached"] = "the trace holds the events up to --trace-limit " +
                                            std::to_string(trace->limit_bytes) + " bytes; " +
                                            std::to_string(trace->dropped) + " later events were counted, not kept";
      }
    }

    const store::RunIterations* iters = iterations.iterations.empty() ? nullptr : &iterations;
    const cct::Status st = WriteRunFile(&tree, iters, trace ? &*trace : nullptr, state != store::RunState::kRecording);
    if (st.ok()) {
      rt->start_write_pending = false;  // a complete run file exists
      if (!rt->run_created) {
        rt->run_created = true;
        // Children started from now on (system(), posix_spawn) link to us.
        PublishRunKeys();
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

// --- the checkpoint thread --------------------------------------------------

void WriteStartRun() noexcept {
  if (!rt->start_write_pending || rt->finished) return;
  rt->start_write_pending = false;
  try {
    // Written with an empty tree, so the run's metrics are known from the
    // start.
    cct::Tree empty;
    ProfileBuilder warm(empty, rt->config.clock == SampleClock::kWall ? "realtime" : "cputime", rt->own_module);
    const cct::Status st = WriteRunFile(&empty, nullptr);
    if (!st.ok() && !rt->warned_write) {
      rt->warned_write = true;
      Warn("cannot write the profile to " + rt->config.db_path + ": " + st.message());
    }
  } catch (...) {
    // Out of memory: the next write tries again.
  }
}

void* FlusherMain(void*) {
  rt->flusher_tid.store(Tid());
  const int timeout_ms =
      rt->config.checkpoint_s > 0 ? static_cast<int>(rt->config.checkpoint_s * 1000 + 0.5) : -1;
  int64_t next = Now(CLOCK_MONOTONIC) + int64_t{timeout_ms} * 1000000;
  // The start write Start left to this thread (checkpoint_schedule.h).
  int64_t start_write_at = rt->start_mono_ns + kStartWriteDelayNs;
  bool start_write = true;
  for (;;) {
    pollfd pfd{rt->request_pipe[0], POLLIN, 0};
    int wait_ms = -1;
    if (timeout_ms > 0 || start_write) {
      const int64_t due = start_write && (timeout_ms <= 0 || start_write_at < next) ? start_write_at : next;
      const int64_t left = due - Now(CLOCK_MONOTONIC);
      wait_ms = left > 0 ? static_cast<int>(left / 1000000) + 1 : 0;
    }
    const int r = poll(&pfd, 1, wait_ms);
    if (start_write && Now(CLOCK_MONOTONIC) >= start_write_at) {
      start_write = false;
      ProbeThreadRoot();
      std::lock_guard<std::mutex> lock(rt->flush_mutex);
      WriteStartRun();
    }
    if (r > 0) {
      char c = 0;
      if (read(rt->request_pipe[0], &c, 1) != 1) continue;
      if (c == 'U') {
        // A sample the walker gave up on: libunwind takes such samples from
        // now on.
        std::string error;
        if (!EnsureLibunwind(&error)) Warn(error + "; samples the walker cannot unwind keep only their first frame");
        continue;
      }
      if (c == 'P') {  // AwaitThreadRoot
        ProbeThreadRoot();
        continue;
      }
      if (c == 'F') {
        // A fatal signal in another thread: write what we have, then let the
        // handler go on (it waits for this byte, with a timeout).
        ProbeThreadRoot();
        SourcesStop();
        Finish(store::RunState::kCrashed, std::nullopt, rt->fatal_signal.load());
        const char ack = 'A';
        ssize_t w = write(rt->ack_pipe[1], &ack, 1);
        (void)w;
      }
      continue;
    }
    if (r < 0 && errno != EINTR) return nullptr;
    if (timeout_ms > 0 && Now(CLOCK_MONOTONIC) >= next) {
      const int64_t interval_ns = int64_t{timeout_ms} * 1000000;
      const int64_t began = Now(CLOCK_MONOTONIC);
      ProbeThreadRoot();
      SourcesBeforeCheckpoint(/*final=*/false);  // before flush_mutex: the GPU flushes its adapter
      std::lock_guard<std::mutex> lock(rt->flush_mutex);
      if (!rt->finished) WriteRun(store::RunState::kRecording);
      const int64_t ended = Now(CLOCK_MONOTONIC);
      rt->checkpoint_ns += ended - began;
      const NextCheckpoint after =
          NextCheckpointNs(next + interval_ns, interval_ns, ended, rt->start_mono_ns, rt->checkpoint_ns);
      next = after.at_ns;
      if (after.spaced) ++rt->checkpoints_spaced;
    }
  }
}

void StartFlusher() {
  rt->flusher_running = StartOwnThread(FlusherMain, &rt->flusher);
}

}  // namespace collector::internal
