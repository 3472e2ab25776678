// GPU launch capture: the calling thread's stack at a CUDA launch, trimmed
// of the CUDA machinery, recorded in its launch trie (gpu_runtime.cc calls
// CaptureLaunch from the adapter's callbacks). Also the GPU source
// (kGpuSource, core/sources.cc), which hands the runtime core's events to
// gpu_runtime.cc. Normal context only; the launch trie and the trimming
// cache are the owner thread's.
#include <string>
#include <vector>

#include "cct/tree_ops.h"
#include "collector/core/runtime.h"
#include "collector/core/runtime_state.h"
#include "collector/python/python_frames.h"
#include "collector/core/source.h"
#include "collector/gpu/gpu_runtime.h"
#include "collector/nvtx/nvtx_ranges.h"

namespace collector {
namespace internal {
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

// Start: --gpu on attaches now (or exits 125); auto may.
bool AttachGpu() {
  GpuAtStart(rt->config, getpid(), &rt->trace_budget);
  return true;
}

// Inside WriteRun (flush_mutex held): the launch tries, GPU metrics and
// facts, and the GPU values of the iterations NVTX collected.
void AddGpuToRun(RunContext& run) {
  std::vector<LaunchTrieRef> launch_tries;
  for (size_t i = 0; i < run.thread_count; ++i) {
    ThreadState* t = rt->threads[i].load(std::memory_order_acquire);
    if (t && t->launch_trie.size() > 1)
      launch_tries.push_back({static_cast<uint32_t>(i), run.thread_names[i], &t->launch_trie});
  }
  GpuAddToRun(run.tree, run.builder, run.lookup, launch_tries, run.meta, &run.iterations, run.trace);
}

}  // namespace

// The hooks it does not name stay null (core/source.h).
extern const Source kGpuSource = {.name = "gpu", .attach = AttachGpu, .before_checkpoint = GpuFlush,
    .add_to_run = AddGpuToRun, .fork_child = GpuForkChild};

}  // namespace internal

using namespace internal;

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
  // Room for Python frames spliced in (python_frames.h): each eval-loop
  // frame may become many, plus a line key.
  uint64_t keys[2 * kMaxDepth + kMaxRanges + 5];
  const int open = t->range_count.load(std::memory_order_relaxed);
  // --nvtx-inherit main: a thread without ranges of its own works for the
  // main thread's open ones; they come first, like prefix placement.
  const int prefix = open == 0 && t->index != 0 && rt->config.nvtx_inherit_main ? MainThreadRanges(keys) : 0;
  int k = prefix + PathKeys(t, frames, depth, false, open, rt->epoch.load(std::memory_order_relaxed), keys + prefix);
  if (python::Process().enabled) {
    // The Python caller, as CPU samples show it: a kernel launched from a
    // Python forward() sits under forward and its line.
    uint64_t py_keys[kMaxDepth];
    int32_t py_groups[kMaxDepth];
    const python::PythonStack py = python::WalkPythonFrames(t, py_keys, py_groups, kMaxDepth);
    if (py.count > 0) {
      int32_t depths[kMaxRanges];
      for (int r = 0; r < open; ++r) depths[r] = ThreadState::RangePythonDepth(t->ranges[r]);
      python::SpliceOptions options;
      options.range_py_depth = depths;
      options.ranges = open;
      uint64_t spliced[std::size(keys)];
      const int room = static_cast<int>(std::size(keys)) - prefix - 2;  // the op and kernel keys follow
      const int m = python::SplicePython(keys + prefix, k - prefix, py_keys, py_groups, py, python::Process().code,
                                         spliced, room, options);
      std::copy(spliced, spliced + m, keys + prefix);
      k = prefix + m;
    }
  }
  keys[k++] = op_key;
  if (kernel_key) keys[k++] = kernel_key;
  const SampleTrie::NodeIndex leaf = t->launch_trie.AddSampleAt(keys, k, 0);
  if (leaf == SampleTrie::kNoIndex) return false;
  *thread_index = t->index;
  *trie_node = leaf;
  return true;
}

}  // namespace collector
