// NVTX as the collector records it: push/pop ranges (merged into the CPU
// samples' paths while open, and recorded with their durations at pop),
// start/end ranges, marks, thread names, and --iteration boundaries. Also
// the NVTX source (kNvtxSource, core/sources.cc). Normal context only; the
// open-range entries a signal handler reads are published with fences
// (NvtxPush, NvtxPop). Locks: nvtx_mutex; registry_mutex for thread names.
#include "collector/nvtx/nvtx_ranges.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cct/tree.h"
#include "collector/core/runtime_state.h"
#include "collector/python/python_frames.h"
#include "collector/core/source.h"
#include "collector/gpu/gpu_runtime.h"  // CurrentIteration

namespace collector {
namespace internal {

std::string RangeDisplayName(uint32_t id) {
  // Caller holds flush_mutex; names are appended under nvtx_mutex.
  std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
  return id < rt->nvtx_names.size() ? rt->nvtx_names[id] : "";
}

namespace {

// Per-iteration values on `tree`: each recorded trie delta goes to the tree
// node its trie node's values went to. Caller holds nvtx_mutex.
store::RunIterations CollectIterations(const cct::Tree& tree, const std::vector<std::vector<cct::NodeId>>& value_nodes) {
  store::RunIterations out;
  if (rt->iterations.empty()) return out;
  out.range = rt->config.iteration_regex;
  const cct::MetricId time = tree.metrics().Find(rt->config.clock == SampleClock::kWall ? "realtime" : "cputime");
  const cct::MetricId samples = tree.metrics().Find("samples");
  // The trace's offset, so that an iteration starts where its range does
  // in the trace (`iterations --range`).
  const int64_t realtime_offset = rt->epoch_offset_ns;
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

void Problem(const char* what) {
  std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
  ++rt->nvtx_problems[what];
}

// Whether a return address lies in NVTX's own code (its header stubs, not
// inlined into the caller, or its C++ API). Resolved once per address; push
// sites are few, so after warm-up this is one hash lookup.
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

// Start: the --iteration pattern, matched against each range name once.
void CompileIterationPattern(const CollectorConfig& config) {
  if (!config.iteration_regex.empty()) {
    const std::string error =
        rt->iteration_pattern.Load(CollectorDirectory() + "/" + kPatternModuleName, config.iteration_regex);
    if (!error.empty()) Warn(error + "; no iterations");
  }
}

// Inside WriteRun (flush_mutex held): start/end ranges, problems, ranges
// still open, and the iterations with their CPU values.
void AddNvtxToRun(RunContext& run) {
  const size_t n = run.thread_count;
  std::map<std::pair<uint32_t, uint32_t>, Runtime::EndedRanges> ended;
  std::vector<Runtime::EndedInstance> instances;
  std::vector<Runtime::StartedRange> open;  // --trace: start/end ranges not ended yet
  {
    std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
    ended = rt->ended;
    if (run.trace) {
      instances = rt->ended_instances;
      for (const auto& [id, s] : rt->started) open.push_back(s);
    }
    for (const auto& [what, count] : rt->nvtx_problems) rt->meta.diagnostics[what] = count;
    int64_t open_ranges = 0;
    for (size_t i = 0; i < n; ++i)
      if (ThreadState* t = rt->threads[i].load()) open_ranges += t->range_count.load() + t->range_overflow;
    open_ranges += static_cast<int64_t>(rt->started.size());
    if (open_ranges) rt->meta.diagnostics["nvtx_open_ranges"] = open_ranges;
    else rt->meta.diagnostics.erase("nvtx_open_ranges");
    run.iterations = CollectIterations(run.tree, run.value_nodes);
  }
  std::map<std::pair<uint32_t, uint32_t>, cct::NodeId> nodes;
  for (const auto& [key, totals] : ended)
    if (key.first < n && totals.count > 0)
      nodes[key] = run.builder.AddStartEndRange(run.thread_names[key.first], key.second, totals.time_ns, totals.count);
  if (run.trace) {
    // --trace: each instance on its range's node (under the thread that
    // started it), in the trace's time (the epoch); EncodeTrace orders them.
    for (const Runtime::EndedInstance& e : instances) {
      auto it = nodes.find({e.thread, e.name});
      if (it == nodes.end()) continue;
      run.trace->ranges.push_back({run.tree.parent(it->second), it->second, e.start_ns + rt->epoch_offset_ns,
                                   e.end_ns + rt->epoch_offset_ns});
    }
    // Those still open, as open ranges (a crash after this write keeps
    // them); one never ended before has a node with no values yet.
    for (const Runtime::StartedRange& s : open) {
      if (s.thread >= n) continue;
      auto it = nodes.find({s.thread, s.name});
      if (it == nodes.end())
        it = nodes.emplace(std::make_pair(s.thread, s.name),
                           run.builder.AddStartEndRange(run.thread_names[s.thread], s.name, 0, 0)).first;
      run.trace->ranges.push_back({run.tree.parent(it->second), it->second, s.start_ns + rt->epoch_offset_ns,
                                   store::kTraceOpenEnd});
    }
  }
}

// A forked child: its NVTX totals start empty; ranges it inherited open stay
// open (the child's code will pop them).
void ResetForChild() {
  rt->started.clear();
  rt->ended.clear();
  rt->ended_instances.clear();
  rt->nvtx_problems.clear();
  rt->iterations.clear();
  rt->iteration_depth = 0;
  rt->current_iteration.store(kNoIteration);
}

}  // namespace

// The hooks it does not name stay null (core/source.h).
extern const Source kNvtxSource = {.name = "nvtx", .start = CompileIterationPattern, .add_to_run = AddNvtxToRun,
    .fork_child = ResetForChild};

}  // namespace internal

using namespace internal;

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
  if (rt->iteration_pattern.loaded()) iteration = rt->iteration_pattern.Search(display);
  rt->nvtx_names.push_back(std::move(display));
  rt->nvtx_is_iteration.push_back(iteration);
  rt->nvtx_name_ids.emplace(std::move(key), id);
  return id;
}

namespace {

// The main thread's open ranges for --nvtx-inherit main (Runtime::main_ranges),
// after each change on the main thread.
void PublishMainRanges(const ThreadState* t) {
  if (t->index != 0 || !rt->config.nvtx_inherit_main) return;
  rt->main_ranges.Publish(t->ranges, t->range_count.load(std::memory_order_relaxed));
}

// --trace: the thread's open ranges for checkpoints (ThreadState::open_trace),
// after each push and pop.
void PublishOpenTrace(ThreadState* t) {
  if (!rt->config.trace) return;
  t->open_trace.Publish(t->ranges, t->range_count.load(std::memory_order_relaxed));
}

// Python frames kept in a range's own path (its pop-time splice).
constexpr int kPythonRangeFrames = kMaxDepth;

// Room for a range's own path (RangePath).
struct RangePathBuffers {
  uint64_t keys[kMaxDepth + kMaxRanges + 2];
  uint64_t spliced[kMaxDepth + kPythonRangeFrames + kMaxRanges + 3];
};

// Range e's own path in range_trie, the `below` ranges under it first: its
// push-time stack with those ranges, with the push's Python frames as
// samples have them (so that the range's node is the samples' one), then
// its key. Returns the key count; *path points into `b`.
int RangePath(const ThreadState* t, const ThreadState::OpenRange& e, int below, RangePathBuffers& b,
              const uint64_t** path) {
  int k = PathKeys(t, t->range_frames + e.frames_offset, static_cast<int>(e.depth), false, below,
                   rt->epoch.load(std::memory_order_relaxed), b.keys);
  uint64_t* out = b.keys;
  if (e.py_count > 0) {
    int32_t depths[kMaxRanges];
    for (int r = 0; r < below; ++r) depths[r] = ThreadState::RangePythonDepth(t->ranges[r]);
    python::PythonStack py;
    py.count = std::min(e.py_count, kPythonRangeFrames);
    py.groups = e.py_groups;
    py.complete = e.py_complete && e.py_count <= kPythonRangeFrames;
    while (py.groups > 0 && t->range_py_groups[e.py_offset + py.groups - 1] > py.count) --py.groups;
    python::SpliceOptions options;
    options.line_key = false;
    options.cut_after_innermost = true;
    options.range_py_depth = depths;
    options.ranges = below;
    k = python::SplicePython(b.keys, k, t->range_py + e.py_offset, t->range_py_groups + e.py_offset, py,
                             python::Process().code, b.spliced, static_cast<int>(std::size(b.spliced)) - 1, options);
    out = b.spliced;
  }
  out[k++] = e.key;
  *path = out;
  return k;
}

}  // namespace

namespace internal {

int MainThreadRanges(uint64_t* keys) { return rt->main_ranges.Read(keys, nullptr, nullptr, 16); }

}  // namespace internal

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
  e.py_count = -1;
  if (python::Process().enabled) {
    // The Python frames too, so that the range sits under the Python
    // function that pushed it (python::SplicePython).
    e.py_offset = c == 0 ? 0 : t->ranges[c - 1].py_offset + static_cast<uint32_t>(std::max(t->ranges[c - 1].py_count, 0));
    const int py_room = kRangePyFrames - static_cast<int>(e.py_offset);
    if (py_room > 0) {
      const python::PythonStack py =
          python::WalkPythonFrames(t, t->range_py + e.py_offset, t->range_py_groups + e.py_offset, py_room);
      e.py_count = py.count;
      e.py_groups = py.groups;
      e.py_complete = py.complete;
    }
    // The native frames past the innermost eval-loop frame are the push
    // call's own (an extension's push function, its C-API call machinery):
    // the range belongs to the Python frame that called it, as its pop
    // places it. Kept, they would anchor samples taken inside that call
    // after the push (its return, or native work it does next) below the
    // C function: a second node for the same range.
    if (e.py_count > 0) {
      const python::InterpreterCode& code = python::Process().code;
      const uintptr_t* frames = t->range_frames + e.frames_offset;
      for (int i = static_cast<int>(e.depth) - 1; i >= 0; --i)
        if (frames[i] >= code.eval_lo && frames[i] < code.eval_hi) {
          e.depth = static_cast<uint32_t>(i + 1);
          break;
        }
    }
  }
  e.key = MakeRangeKey(name);
  e.domain = domain;
  bool iteration;
  {
    std::lock_guard<std::mutex> lock(rt->nvtx_mutex);
    iteration = name < rt->nvtx_is_iteration.size() && rt->nvtx_is_iteration[name];
  }
  e.iteration = iteration;
  e.nested_ns = 0;
  e.trace_node = SampleTrie::kNoIndex;
  if (rt->config.trace) {
    // Its node now, with nothing added (the pop adds its time and count):
    // a checkpoint before the pop writes the range as open.
    RangePathBuffers b;
    const uint64_t* path = nullptr;
    e.below = c;
    e.epoch = rt->epoch.load(std::memory_order_relaxed);
    const int k = RangePath(t, e, c, b, &path);
    e.trace_node = t->range_trie.AddSampleAt(path, k, 0, 0);
  }
  e.start_ns = Now(CLOCK_MONOTONIC);
  std::atomic_signal_fence(std::memory_order_release);
  t->range_count.store(c + 1, std::memory_order_relaxed);
  PublishMainRanges(t);
  PublishOpenTrace(t);
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
  // Its own time: the ranges nested in it are their own nodes below its
  // node, with theirs. The enclosing range's nested time grows by our wall
  // time (ranges of other domains popped out of order included: they were
  // pushed inside it).
  const int64_t wall = now - e.start_ns;
  if (idx > 0) t->ranges[idx - 1].nested_ns += wall;
  const int64_t own = std::max<int64_t>(wall - e.nested_ns, 0);
  SampleTrie::NodeIndex leaf;
  if (e.trace_node != SampleTrie::kNoIndex && e.below == idx && e.epoch == rt->epoch.load(std::memory_order_relaxed)) {
    // The path the push made its node for (--trace).
    leaf = e.trace_node;
    t->range_trie.AddToNode(leaf, own, 1);
  } else {
    // The range's own path: its push-time stack with the ranges below it.
    RangePathBuffers b;
    const uint64_t* path = nullptr;
    const int k = RangePath(t, e, idx, b, &path);
    leaf = t->range_trie.AddSampleAt(path, k, own);
  }
  if (leaf == SampleTrie::kNoIndex) Problem("nvtx_lost_ranges");
  else if (rt->config.trace) t->range_trace.Append({e.start_ns, now, leaf}, rt->trace_budget);
  // Hide the entries from idx up while they move (the handler may run).
  t->range_count.store(idx, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  for (int i = idx; i + 1 < c; ++i) t->ranges[i] = t->ranges[i + 1];
  std::atomic_signal_fence(std::memory_order_release);
  t->range_count.store(c - 1, std::memory_order_relaxed);
  PublishMainRanges(t);
  PublishOpenTrace(t);
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
    auto& total = rt->ended[{t ? t->index : 0, name}];
    if (total.open++ == 0) total.open_since_ns = now;
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
    // Start/end ranges may overlap (asynchronous work): the range's time is
    // the union of its instances, counted when the last open one ends.
    if (total.open > 0 && --total.open == 0) total.time_ns += now - total.open_since_ns;
    ++total.count;
    if (rt->config.trace && rt->trace_budget.Take(sizeof(Runtime::EndedInstance)))
      rt->ended_instances.push_back({it->second.thread, it->second.name, it->second.start_ns, now});
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
  const std::pair<pid_t, std::string> named{static_cast<pid_t>(tid), std::string(name)};
  NameThreads({&named, 1}, &ThreadState::nvtx_name);
}

void NvtxCountProblem(const char* what) {
  if (rt) Problem(what);
}

uint32_t CurrentIteration() {
  return rt ? rt->current_iteration.load(std::memory_order_acquire) : kNoIteration;
}

}  // namespace collector
