// The seam between the collector runtime (libcct-collector.so) and a GPU
// tracing adapter: a shared library the runtime dlopen()s when GPU tracing
// starts — libcct-cupti.so (src/collector/gpu/cupti/, the only code that
// includes CUPTI) or, in tests, a fake one that replays records built from
// CUPTI's structs. Keeping CUPTI out of the preloaded library means a program
// that never touches CUDA never maps libcupti.
//
// The adapter exports one function, cctdb_gpu_adapter_v1(), returning a
// static table. Both sides are built by the same build, so plain C++ structs
// (GpuActivity, GpuPcSample) cross the boundary; the version number guards
// against a stale adapter on the library path. No exception crosses it: the
// table's functions and the callbacks catch everything.
//
// Threads: on_launch and on_alias run on the application thread making the
// CUDA call, at API entry, in normal context (never in a signal handler),
// on many threads at once. on_activity and on_pc_samples run on the
// adapter's delivery thread (CUPTI's buffer thread) or on the thread calling
// flush/stop, one call at a time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collector/gpu/gpu_activity.h"

namespace collector {

inline constexpr uint32_t kGpuAdapterAbi = 1;
inline constexpr const char* kGpuAdapterEntry = "cctdb_gpu_adapter_v1";

struct GpuAdapterCallbacks {
  void* context = nullptr;
  // A call that launches GPU work: `kind` is a cct::GpuOpKind; `kernel_name`
  // the demangled kernel for kernel launches (null for graph launches and
  // other kinds), valid for the life of the process.
  void (*on_launch)(void* context, uint32_t correlation_id, uint8_t kind, const char* kernel_name) = nullptr;
  // A tracked call inside another (cudaMemcpy → cuMemcpy): records carrying
  // `nested` belong to the launch reported as `outer`.
  void (*on_alias)(void* context, uint32_t nested, uint32_t outer) = nullptr;
  // A batch of decoded activity: the records of one activity buffer (the
  // raw bytes, as CUPTI wrote them, in raw/raw_bytes; null when the batch
  // came from no buffer) followed by the adapter's own kMemoryApi timings.
  // `dropped`: records CUPTI reported dropped since the previous batch.
  void (*on_activity)(void* context, const GpuActivity* activities, size_t count, uint64_t dropped,
                      const uint8_t* raw, size_t raw_bytes) = nullptr;
  // PC samples (--gpu-pc-sampling), by kernel launch.
  void (*on_pc_samples)(void* context, const GpuPcSample* samples, size_t count) = nullptr;
};

struct GpuAdapterOptions {
  int mode = 0;              // 0 auto (needs a driver and a device), 1 on (a driver)
  bool pc_sampling = false;  // collect PC samples with stall reasons
  uint32_t pc_sampling_period = 0;  // CUPTI's samplingPeriod: one sample every 2^n cycles (5..31); 0 = CUPTI's default
};

// Process-wide counters, for the run's diagnostics.
struct GpuTracingStats {
  uint64_t launches = 0;          // on_launch calls
  uint64_t buffers = 0;           // buffers CUPTI completed
  uint64_t records = 0;           // records in them
  uint64_t activities = 0;        // GpuActivity values delivered
  uint64_t skipped_records = 0;   // records of kinds not decoded
  uint64_t dropped_records = 0;   // records CUPTI dropped
  uint64_t declined_buffers = 0;  // buffer requests refused: the pool was exhausted
  uint64_t aliases = 0;           // nested calls with their own correlation id
  uint64_t hook_exceptions = 0;   // exceptions thrown by a hook (caught)
  uint64_t pc_samples = 0;        // PC samples delivered
  uint64_t pc_dropped = 0;        // PC samples CUPTI reported dropped (hardware buffer full)
};

struct GpuAdapter {
  uint32_t abi = kGpuAdapterAbi;
  const char* name = nullptr;  // "cupti", "fake", ...
  // Starts tracing. 0 on success; otherwise a one-line reason in `error`
  // ("no CUDA driver (...)", "no GPU (...)", "CUPTI: ...") and nothing left
  // started. Starting twice is a no-op.
  int (*start)(const GpuAdapterOptions* options, const GpuAdapterCallbacks* callbacks, char* error,
               size_t error_size) = nullptr;
  // Delivers completed activity (and PC samples) now; returns once the
  // callbacks have seen them. At checkpoints.
  void (*flush)() = nullptr;
  // Forces out everything, complete or not, and stops. At exit.
  void (*stop)() = nullptr;
  void (*stats)(GpuTracingStats* out) = nullptr;
  // Facts about the GPUs for the run's metadata: a JSON object as text
  // ({"driver": "...", "cuda": "...", "devices": [...]}), or "" (static storage).
  const char* (*describe)() = nullptr;
};

}  // namespace collector

extern "C" {
using CctdbGpuAdapterEntry = const collector::GpuAdapter* (*)();
}
