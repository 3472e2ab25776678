// GPU tracing in the collector runtime: loading the adapter, capturing launch
// sites, attributing activity, and putting the GPU part of the run into the
// tree at each checkpoint. Internal to libcct-collector.so (the runtime core
// with launch_capture.cc, and gpu_runtime.cc talk through this header).
//
// Data flow. Each CUDA call that launches GPU work reaches on_launch on the
// calling thread (CUPTI's API-entry callback, through the adapter). The
// runtime (CaptureLaunch, gpu/launch_capture.cc) unwinds the thread's stack, trims the
// frames of libcuda, libcudart, libcupti, the adapter and the collector and
// nvcc's launch stubs, merges in the thread's open NVTX ranges exactly as a
// CPU sample would, and appends a placeholder key (`<gpu kernel>`,
// `<gpu copyin>`, ...) and, for kernels, a kernel key; the path goes into the
// thread's launch trie (a SampleTrie written only by its thread). Its leaf is
// a launch site; the site's 28-bit handle is stored under the call's
// correlation id in a lock-free CorrelationTable. Activity records arrive on
// the adapter's thread and are attributed by correlation id (GpuAttributor);
// kernels of CUDA graphs and kernels the launch did not name get a kernel
// child of their site, PC samples with source lines a line child of their
// kernel — "virtual" handles, made on the adapter's thread. At a checkpoint
// the launch tries become tree nodes (ProfileBuilder::AddLaunches) and every
// handle is resolved to its node; the accumulated metrics are written there.
//
// Locks: the launch path takes only `handles_mu` (new sites and kernel names
// — rare) and never waits for the attributor; the adapter's thread holds the
// attributor lock while attributing. The checkpoint flushes the adapter
// before taking the runtime's flush_mutex (CUPTI may wait for an API call
// that waits for the symbolizer), so nothing here calls into CUDA with it held.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cct/tree.h"
#include "collector/core/config.h"
#include "collector/core/profile_builder.h"
#include "collector/core/trace_log.h"
#include "collector/cpu/sample_trie.h"
#include "store/iterations.h"
#include "store/trace.h"
#include "store/run_meta.h"

namespace collector {

// --- provided by the runtime (gpu/launch_capture.cc, core/lifecycle.cc,
// nvtx/nvtx_ranges.cc)

// Records the calling thread's launch path ending in `op_key` (and
// `kernel_key` when nonzero) in its launch trie. False when the collector is
// not recording or the trie is full. Normal context only.
bool CaptureLaunch(uint64_t op_key, uint64_t kernel_key, uint32_t* thread_index, uint32_t* trie_node);
// The collector library's path (its frames are trimmed; the adapter is
// looked for beside it).
const std::string& CollectorModule();
// Its folder, where the modules it loads on demand live ("." when unknown).
std::string CollectorDirectory();
// A line on stderr prefixed "cctdb: ".
void RuntimeWarn(const std::string& message);
// The index of the --iteration range open now (the index its iteration will
// have in the run), kNoIteration (gpu_metrics.h) outside iterations.
// Lock-free; any thread.
uint32_t CurrentIteration();

// --- provided by gpu_runtime.cc

// At the collector's start, before the run is created: --gpu on starts
// tracing now in the process cct-record started (and exits it with 125 when
// it cannot; its children attach at their cuInit); --gpu auto
// starts now only when the library was preloaded without the driver's
// injection (CUDA_INJECTION64_PATH) and a GPU is present; otherwise tracing
// starts from InitializeInjection, inside the program's first cuInit.
// `trace_budget`: the process's --trace-limit budget, which GPU activities
// draw from under --trace.
void GpuAtStart(const CollectorConfig& config, pid_t pid, TraceBudget* trace_budget);
// Delivers outstanding activity (`final`: everything, then stops tracing).
// Call WITHOUT the runtime's flush_mutex.
void GpuFlush(bool final);

struct LaunchTrieRef {
  uint32_t thread_index = 0;
  std::string thread_name;
  const SampleTrie* launches = nullptr;
};
// Inside WriteRun (flush_mutex held): adds the launch tries to the tree,
// the GPU metrics onto their nodes, GPU facts and diagnostics to `meta`,
// and to each of `iterations` (the run's ended iterations, with their CPU
// values on `tree`) the GPU metrics of what was launched inside it; in raw
// mode writes the snapshot (tree and CPU iterations) first; under --trace
// appends every activity kept so far to `trace` (on its node). Never throws.
void GpuAddToRun(cct::Tree& tree, ProfileBuilder& builder, const SymbolLookup& lookup,
                 const std::vector<LaunchTrieRef>& threads, store::RunMeta& meta, store::RunIterations* iterations,
                 store::RunTrace* trace);
// A forked child: when the parent had attached, CUDA is not usable there and
// the child traces nothing; otherwise it may attach at its own cuInit.
void GpuForkChild();

}  // namespace collector
