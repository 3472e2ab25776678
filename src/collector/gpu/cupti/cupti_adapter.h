// The CUPTI adapter: GPU tracing for the collector runtime, behind an
// interface with no CUPTI or CUDA types (include it anywhere).
//
// What it does when started: subscribes to CUPTI's runtime- and driver-API
// callbacks for the calls that launch GPU work (cupti_api_kinds.h: kernel and
// graph launches, copies, memsets, allocations and frees, synchronization)
// and reports each launch through GpuHooks::on_launch on the launching
// thread; enables the activity kinds CONCURRENT_KERNEL, MEMCPY, MEMCPY2,
// MEMSET, MEMORY2, SYNCHRONIZATION, EXTERNAL_CORRELATION and DEVICE; hands
// CUPTI a bounded pool of activity buffers (kActivityBuffers × 4 MiB; when
// all are in use CUPTI drops records, and the dropped count CUPTI reports is
// passed on); decodes each completed buffer (cupti_decode.h) and reports the
// activities through GpuHooks::on_activity.
//
// Correlation: an activity record carries the correlation id of the API call
// that launched it. Only the outermost tracked call on a thread is reported
// through on_launch (cudaMemcpy calls cuMemcpy* inside; one launch, one
// stack); a nested call with its own id is reported through on_alias, so the
// runtime maps both ids to the one launch. Allocation and free calls are also
// timed (API entry to exit, CUPTI's clock) and reported as kMemoryApi
// activities: the `gmem` time.
//
// PC sampling (options.pc_sampling): cupti_pc_sampling.h, enabled on each
// context as it is created; samples go to on_pc_samples.
//
// Threads: on_launch runs on the application thread making the CUDA call,
// at API entry, in normal context (never a signal handler), possibly on many
// threads at once. on_activity runs on CUPTI's buffer thread or on the thread
// calling FlushGpuActivity/StopGpuTracing, one call at a time (serialized by
// the adapter). Hooks must not throw; an exception is caught and counted.
// No exception leaves any function here.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cct/frame.h"
#include "cct/status.h"
#include "collector/gpu/gpu_activity.h"
#include "collector/gpu/gpu_adapter_abi.h"

namespace collector {

struct GpuHooks {
  // On the launching thread, at the API entry, in normal context: the
  // runtime captures the CPU stack and NVTX stack here and remembers the
  // correlation id. kernel_name is the demangled kernel symbol when known
  // (kernel launches through cudaLaunchKernel/cuLaunchKernel...; null for
  // graph launches and for other kinds). The pointer stays valid for the
  // life of the process.
  std::function<void(uint64_t correlation_id, cct::GpuOpKind kind, const char* kernel_name)> on_launch;
  // A tracked call inside another, with its own correlation id: its records
  // belong to the outer launch.
  std::function<void(uint32_t nested, uint32_t outer)> on_alias;
  // Decoded activity, on CUPTI's thread (normal context): one buffer's
  // records (its bytes in raw/raw_bytes; null when none) followed by the
  // adapter's kMemoryApi timings. `dropped`: records CUPTI reported dropped
  // since the previous call (no buffer space).
  std::function<void(std::vector<GpuActivity>&&, uint64_t dropped, const uint8_t* raw, size_t raw_bytes)> on_activity;
  // PC samples (--gpu-pc-sampling).
  std::function<void(std::vector<GpuPcSample>&&)> on_pc_samples;
};

struct GpuStartOptions {
  bool pc_sampling = false;
  uint32_t pc_sampling_period = 0;  // 0: CUPTI's default
};

enum class GpuMode {
  kAuto,  // trace when a driver and a GPU are present (cheap probe first)
  kOn,    // trace whenever a driver is present: CUPTI's own error otherwise
  kOff,   // do not trace; StartGpuTracing returns OK and does nothing
};

// Starts tracing; returns an error Status (kUnavailable) with a one-line
// reason ("no CUDA driver (...)", "no GPU (...)", "CUPTI: ...") when it
// cannot, having undone whatever it started. Starting twice is a no-op.
// Call it where CUDA is about to be used (the CUDA injection entry point,
// InitializeInjection, runs inside cuInit) so programs that never touch
// CUDA pay nothing.
cct::Status StartGpuTracing(GpuMode mode, GpuHooks hooks, GpuStartOptions options = {});
// Delivers the completed activity buffers now (cuptiActivityFlushAll(0)): at
// checkpoints. Returns once on_activity has seen them.
void FlushGpuActivity();
// Forces out every buffer, complete or not, disables the activity kinds and
// unsubscribes: at exit, before the final write.
void StopGpuTracing();
bool GpuTracingActive();

// Process-wide counters (gpu_adapter_abi.h), for the run's diagnostics.
GpuTracingStats GetGpuTracingStats();

inline constexpr int kActivityBuffers = 8;
inline constexpr size_t kActivityBufferBytes = size_t{4} << 20;

namespace gpu_internal {
// StartGpuTracing without the probe: the CUPTI calls alone. Tests call it
// on machines without a GPU to check that CUPTI's failure is clean.
cct::Status StartCupti(GpuHooks hooks, GpuStartOptions options = {});
}  // namespace gpu_internal

}  // namespace collector
