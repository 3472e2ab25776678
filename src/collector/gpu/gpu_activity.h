// GpuActivity: one decoded GPU activity record, in plain C++ (no CUPTI types).
//
// The CUPTI adapter (src/collector/gpu/cupti/, the only code that includes CUPTI
// headers) decodes CUPTI's activity buffers into these; the attribution in
// gpu_metrics.h turns them into per-node metrics. A record describes one
// kernel execution, explicit copy, memset, memory allocation or release, or
// synchronization, identified by the correlation id of the API call that
// launched it. Two further kinds carry context for the others: kDevice (a
// device's compute capability and per-SM limits, which occupancy needs) and
// kExternalCorrelation (an external id pushed around the launching API call).
//
// Plain values; copying one is cheap (kernel names are views into the
// decoder's name table, which lives as long as the decoder — for the
// collector, the process).
#pragma once

#include <cstdint>
#include <string_view>

namespace collector {

enum class GpuActivityKind : uint8_t {
  kKernel = 0,               // CUPTI CONCURRENT_KERNEL / KERNEL
  kMemcpy = 1,               // MEMCPY, MEMCPY2 (peer to peer)
  kMemset = 2,               // MEMSET
  kMemory = 3,               // MEMORY2: one allocation or one release
  kSync = 4,                 // SYNCHRONIZATION
  kMemoryApi = 5,            // time spent in an allocation/free API call (measured by the adapter)
  kDevice = 6,               // DEVICE: compute capability and SM limits (fills `device`)
  kExternalCorrelation = 7,  // EXTERNAL_CORRELATION: correlation_id → external_id
};

// Copy direction. Array endpoints count as device memory (HtoA = h2d,
// AtoD = d2d, ...); kUnknown copies count in time and count, not bytes.
enum class CopyDirection : uint8_t { kUnknown = 0, kH2D, kD2H, kD2D, kH2H, kP2P };

// CUPTI's memory kinds (CUpti_ActivityMemoryKind), same order.
enum class GpuMemoryKind : uint8_t {
  kUnknown = 0,
  kPageable = 1,
  kPinned = 2,
  kDevice = 3,
  kArray = 4,
  kManaged = 5,
  kDeviceStatic = 6,
  kManagedStatic = 7,
};

enum class MemoryOp : uint8_t { kAlloc = 0, kFree = 1 };

// Synchronization kinds (CUpti_ActivitySynchronizationType, same order).
enum class SyncKind : uint8_t { kUnknown = 0, kEvent, kStreamWaitEvent, kStream, kContext };

// A device's compute capability and the per-SM limits CUPTI reports for it
// (CUpti_ActivityDevice5). Zero means "not reported"; occupancy then uses the
// architecture table (gpu_metrics.h).
struct GpuDeviceLimits {
  uint32_t cc_major = 0, cc_minor = 0;
  uint32_t sm_count = 0;
  uint32_t max_warps_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t regs_per_sm = 0;
  uint32_t smem_per_sm = 0;     // bytes
  uint32_t smem_per_block = 0;  // bytes (the default limit, without opt-in)
  uint32_t max_threads_per_block = 0;
};

struct GpuActivity {
  GpuActivityKind kind = GpuActivityKind::kKernel;
  CopyDirection copy = CopyDirection::kUnknown;      // kMemcpy
  GpuMemoryKind memory_kind = GpuMemoryKind::kUnknown;  // kMemset, kMemory
  MemoryOp memory_op = MemoryOp::kAlloc;             // kMemory, kMemoryApi
  SyncKind sync = SyncKind::kUnknown;                // kSync
  uint8_t external_kind = 0;                         // kExternalCorrelation (CUpti_ExternalCorrelationKind)
  uint16_t registers_per_thread = 0;                 // kKernel
  // The correlation id of the launching API call (CUPTI's are 32-bit; 0 =
  // none). For kernels of a CUDA graph it is the graph launch's.
  uint32_t correlation_id = 0;
  uint32_t device_id = 0;
  uint32_t peer_device_id = 0;  // kMemcpy p2p: destination device (device_id is the source)
  uint32_t stream_id = 0;
  uint32_t graph_id = 0;        // 0 unless launched from a CUDA graph
  uint64_t graph_node_id = 0;
  uint64_t start_ns = 0, end_ns = 0;  // kMemory: both the operation's timestamp
  uint64_t bytes = 0;                 // kMemcpy, kMemset, kMemory
  uint64_t external_id = 0;           // kExternalCorrelation

  // --- kKernel
  std::string_view kernel_name;  // demangled; a view into the decoder's name table
  uint32_t kernel_name_id = 0;   // the decoder's id for the name (0 = none); equal names, equal ids
  uint32_t grid_x = 0, grid_y = 0, grid_z = 0;
  uint32_t block_x = 0, block_y = 0, block_z = 0;
  uint32_t static_shared_bytes = 0;   // per block
  uint32_t dynamic_shared_bytes = 0;  // per block
  uint32_t local_bytes_per_thread = 0;
  uint32_t shared_config_bytes = 0;   // the SM's shared-memory carveout the driver chose (0 = not reported)

  // --- kDevice
  GpuDeviceLimits device;

  uint64_t duration_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
  uint64_t threads_per_block() const { return uint64_t{block_x} * block_y * block_z; }
  uint64_t blocks() const { return uint64_t{grid_x} * grid_y * grid_z; }  // grid size in blocks
};

// PC sampling: HPCToolkit's stall-reason classes (gins:stl_*), the slots of
// GpuPcSample::stall. `any` is not a slot: it is every sample but kNone's
// (docs/metrics.md maps CUPTI's stall-reason names onto these).
enum class StallSlot : uint8_t {
  kNone = 0,  // selected: the warp issued (not stalled)
  kIfet,      // instruction fetch
  kIdep,      // instruction (execution/register) dependency
  kGmem,      // global memory
  kTmem,      // texture memory
  kSync,      // synchronization (barrier, membar)
  kCmem,      // constant memory
  kPipe,      // pipe busy
  kMthr,      // memory throttle
  kNsel,      // not selected
  kOthr,      // other
  kSlp,       // sleeping
};
inline constexpr int kStallSlots = 12;

// One PC's samples for one kernel launch (CUPTI's PC sampling API, in
// kernel-serialized collection, names the launch's correlation id). Strings
// are views into the adapter's (or the reader's) tables, which outlive the
// samples.
struct GpuPcSample {
  uint32_t correlation_id = 0;  // of the kernel launch (0: unknown)
  uint32_t device_id = 0;
  uint64_t cubin_crc = 0;
  uint64_t pc_offset = 0;
  std::string_view function_name;  // the kernel (demangled)
  std::string_view file;           // source file of the PC; empty without line information
  uint32_t line = 0;
  uint64_t samples = 0;                  // all samples at this PC
  uint64_t stall[kStallSlots] = {};      // by StallSlot; sums to `samples`
};

}  // namespace collector
