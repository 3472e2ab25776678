// ProfileBuilder: turns the threads' address tries into a calling-context
// tree of functions, inlined functions and source lines.
//
// Each trie path (root first) becomes: a thread node, then — when the
// outermost address is not where a thread starts (_start, clone3, ...) — a
// "<partial call path>" node, then one function node per frame (inlined
// functions as their own nodes, flagged kFrameInlined), and for a leaf a line
// node for the statement where the samples landed. Frames of the thread-start
// machinery and of the collector itself are left out.
//
// The symbol lookup is a parameter, so the builder is a pure function of the
// tries and the lookup (tests use made-up symbols). Not thread-safe; the
// tries may be recorded into concurrently (see sample_trie.h).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <unordered_map>

#include "cct/tree.h"
#include "collector/cpu/sample_trie.h"
#include "collector/cpu/symbolizer.h"

namespace collector {

// Frames for a trie key (an address with its load epoch, see sample_trie.h);
// `return_address` is true for every frame but the leaf.
using SymbolLookup = std::function<const SymbolFrames&(uint64_t key, bool return_address)>;

// The leaf under which a stack deeper than --max-depth ends (kTruncatedKey).
inline constexpr std::string_view kTruncatedStackName = "<truncated stack>";

struct BuildStats {
  uint64_t samples = 0;
  uint64_t partial_samples = 0;  // under "<partial call path>"
  int64_t time_ns = 0;           // the time metric added from CPU sample tries
  uint64_t truncated_samples = 0;  // deeper than --max-depth: under "<truncated stack>"
};

// Whether a function is part of NVTX's own code (hidden like the
// collector's, since the range node stands for it).
bool IsNvtxFunction(std::string_view function);

// Whether a function of the collector library is one of the libc calls it
// interposes (core/interpose.cc: sleeps, waits, the loader, thread creation,
// exec, exit). In a sample, such a frame stands for the program's own call:
// it is shown under its libc name, and the collector's helpers below it
// (restart loops, lambdas, another interposed call) are hidden, so time
// spent sleeping in usleep shows under usleep, not under "<cctdb collector>".
// The collector's own work below it (collector::...) stays visible.
bool IsInterposedCall(std::string_view function);
std::span<const std::string_view> InterposedCalls();

// Whether a frame belongs to the CUDA machinery between a program's CUDA call
// and the collector's launch callback, trimmed from launch sites: the CUDA
// runtime's functions (cuda*, __cuda*, cudart::*, also when linked
// statically into the program), driver entry points (cu + capital letter),
// nvcc's host launch stubs (__device_stub_*); and modules libcuda, libcudart,
// libcupti, libnvidia-*, and the CUPTI adapter.
bool IsGpuRuntimeFunction(std::string_view function);
bool IsGpuRuntimeModule(std::string_view module_path);

// Display names of NVTX range keys ("domain::message", or the bare message
// in the default domain).
using RangeNames = std::function<std::string(uint32_t name_id)>;

class ProfileBuilder {
 public:
  // `time_metric` is "cputime" or "realtime"; `own_module` the path of the
  // collector library (its frames are hidden).
  ProfileBuilder(cct::Tree& tree, std::string_view time_metric, std::string own_module,
                 RangeNames range_names = nullptr);

  // Adds one thread's samples under a thread node named `thread_name`. When
  // `value_nodes` is given, it receives for each trie node the tree node its
  // values went to (kNoNode for nodes without values), for per-iteration
  // values measured on the trie.
  void AddThread(std::string_view thread_name, const SampleTrie& trie, const SymbolLookup& lookup,
                 std::vector<cct::NodeId>* value_nodes = nullptr);
  // Adds one thread's NVTX range durations and counts (a trie written at
  // pop time: each path ends in the range's key; its time is the summed wall
  // duration, its samples the count) as nvtx:time / nvtx:count, and marks as
  // nvtx:marks. Paths align with AddThread's, so a range's node is the same.
  // `nodes` (optional) receives the tree node of every trie node (--trace
  // places range instances by it).
  void AddRanges(std::string_view thread_name, const SampleTrie& ranges, const SymbolLookup& lookup,
                 std::vector<cct::NodeId>* nodes = nullptr);
  // Adds one thread's GPU launch sites (a trie written at each CUDA call
  // that launches work: the caller's stack with its NVTX ranges, then a GPU
  // placeholder key and, for kernels, a kernel key; see gpu_runtime.h).
  // Adds no values; `nodes` receives the tree node of every trie node.
  void AddLaunches(std::string_view thread_name, const SampleTrie& launches, const SymbolLookup& lookup,
                   std::vector<cct::NodeId>* nodes);
  // Whether an outermost key is where threads start, for stacks whose
  // thread-start code has no name (stripped libc): such a stack is complete.
  void SetThreadRoot(std::function<bool(uint64_t key)> is_root) { is_thread_root_ = std::move(is_root); }
  // Names of kernel keys (the runtime's kernel-name ids).
  void SetKernelNames(RangeNames kernel_names) { kernel_names_ = std::move(kernel_names); }
  // A start/end range (not nested): its own node under the thread, which
  // it returns.
  cct::NodeId AddStartEndRange(std::string_view thread_name, uint32_t name_id, int64_t time_ns, uint64_t count);

  const BuildStats& stats() const { return stats_; }

 private:
  bool Hidden(const SymbolFrame& f) const;
  cct::FrameId FunctionFrame(const SymbolFrame& f);
  cct::FrameId RangeFrame(uint64_t key);
  cct::NodeId ThreadNode(std::string_view thread_name);
  enum class Role { kSamples, kRanges, kLaunches };
  void Add(std::string_view thread_name, const SampleTrie& trie, const SymbolLookup& lookup, Role role,
           std::vector<cct::NodeId>* value_nodes);

  cct::Tree& tree_;
  cct::MetricId time_ = 0, samples_ = 0;
  cct::MetricId nvtx_time_ = cct::kNoMetric, nvtx_count_ = cct::kNoMetric, nvtx_marks_ = cct::kNoMetric;
  RangeNames range_names_;
  RangeNames kernel_names_;
  std::string own_module_;
  std::function<bool(uint64_t key)> is_thread_root_;
  BuildStats stats_;
  // One frame per (function, module): where a function is declared comes
  // from the first lookup that knew it, so a frame resolved from DWARF and
  // one resolved from the symbol table are still the same node.
  std::unordered_map<std::string, cct::FrameId> function_frames_;
};

}  // namespace collector
