// GPU metrics: attribution of decoded GPU activity (gpu_activity.h) to the
// calling contexts that launched it, and theoretical occupancy.
//
// Pure code: no CUPTI, no CUDA, no clocks, no I/O. The collector runtime
// remembers, for each launching API call, its correlation id and an opaque
// 32-bit handle for the launch context (a node of its own choosing: a trie
// node, a tree node, ...). GpuAttributor takes that map and batches of
// activities and accumulates per handle the catalog metrics of
// src/cct/metric_catalog.cc (see docs/metrics.md, "GPU metrics as
// attributed"): gker, gker:count and the launch-configuration accumulators
// (threads per block, grid size in blocks, registers, shared and local
// memory, theoretical occupancy), gxcopy and its bytes by direction, gmset,
// gmem by memory kind, gsync by kind. AddTo / GpuMetricWriter put the
// accumulators into a cct::Tree.
//
// Correlation: an activity whose correlation id is not (yet) in the map is
// kept pending, so records that arrive before the launch is known still find
// it; Flush retries them and, after `patience` flushes (or when told to give
// up), attributes the rest to the caller's "unknown" handle and counts them.
// Kernels launched by a CUDA graph carry the graph launch's correlation id
// and so attribute to the graph launch site.
//
// Iterations: a launch made while an --iteration range was open carries that
// iteration's index in its LaunchSite; its activity then also counts toward
// the iteration (GpuIterationValues), so per-iteration GPU metrics follow the
// launch, like the tree does, not the time the GPU ran the work.
//
// Thread-safety: GpuAttributor is single-threaded (the caller serializes
// Add/Flush, e.g. on CUPTI's delivery thread under the runtime's lock).
// The free functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cct/flat_index.h"
#include "cct/frame.h"
#include "cct/metric.h"
#include "cct/tree.h"
#include "collector/core/trace_log.h"
#include "collector/gpu/gpu_activity.h"
#include "store/iterations.h"

namespace collector {

// ------------------------------------------------------------ occupancy

// The per-SM limits of one GPU architecture that the CUDA occupancy formula
// needs. Values from the CUDA 13.0 toolkit's cuda_occupancy.h (the code
// behind cudaOccupancyMaxActiveBlocksPerMultiprocessor) and the CUDA C++
// Programming Guide's table of compute capabilities; docs/metrics.md lists
// the table.
struct GpuArchLimits {
  uint32_t cc_major = 0, cc_minor = 0;
  uint32_t max_threads_per_block = 1024;
  uint32_t max_warps_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t regs_per_sm = 65536;
  uint32_t regs_per_block = 65536;
  uint32_t max_regs_per_thread = 255;
  uint32_t reg_alloc_unit = 256;          // registers are allocated per warp in units of this
  uint32_t sub_partitions = 4;            // register file partitions per SM
  uint32_t smem_per_sm = 0;               // bytes: the largest shared-memory carveout
  uint32_t smem_per_block_optin = 0;      // bytes: the most one block may opt in to
  uint32_t smem_alloc_unit = 128;         // bytes
  uint32_t smem_reserved_per_block = 0;   // bytes the driver reserves per block (sm_80 and later: 1 KiB)
  uint32_t warp_size = 32;
};

// The architectures the table knows: sm_70, 75, 80, 86, 89, 90, 100, 120.
std::span<const GpuArchLimits> KnownArchitectures();
// The table entry for a compute capability; for an unlisted minor version,
// the closest lower one of the same major (sm_87 → sm_86's, ...); nullptr
// for an unknown major.
const GpuArchLimits* FindArchLimits(uint32_t cc_major, uint32_t cc_minor);
// The table entry for a device record, with the limits the device reported
// (warps, blocks, registers and shared memory per SM) taking precedence.
// False when neither the table nor the record gives usable limits.
bool LimitsForDevice(const GpuDeviceLimits& device, GpuArchLimits* out);

struct KernelLaunchConfig {
  uint32_t threads_per_block = 0;
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t dynamic_shared_bytes = 0;
  // The SM's shared-memory carveout the driver chose for the launch (CUPTI's
  // sharedMemoryExecuted); 0 = the largest carveout (the theoretical best).
  uint32_t shared_config_bytes = 0;
};

enum OccupancyLimiter : uint8_t {
  kLimitWarps = 1,
  kLimitRegisters = 2,
  kLimitSharedMemory = 4,
  kLimitBlocks = 8,
};

struct Occupancy {
  uint32_t active_blocks_per_sm = 0;
  uint32_t active_warps_per_sm = 0;
  double percent = 0;   // active warps / max warps per SM × 100
  uint8_t limiters = 0; // OccupancyLimiter bits: the limits equal to the result
};

// Theoretical occupancy of a launch, following cuda_occupancy.h: the fewest
// blocks per SM allowed by warps, registers (per-warp allocation, per
// register-file partition), shared memory (static + dynamic + the driver's
// reserve, rounded to the allocation unit) and the blocks-per-SM limit.
// A configuration that cannot run gives 0.
Occupancy TheoreticalOccupancy(const GpuArchLimits& arch, const KernelLaunchConfig& launch);

// ------------------------------------------------------------ attribution

// A launch made outside every iteration.
inline constexpr uint32_t kNoIteration = UINT32_MAX;

// A launch context: the runtime's handle for the node that launched the
// operation, what kind of operation the API call was, and the iteration
// (0-based, in the run's order) that was open at the call.
struct LaunchSite {
  uint32_t node = 0;
  cct::GpuOpKind kind = cct::GpuOpKind::kKernel;
  uint32_t iteration = kNoIteration;
};
// Where the attributor looks launches up: correlation id → site. The
// runtime's table is lock-free and bounded (CorrelationTable); tests and
// replay use LaunchSites, a plain map.
class LaunchSiteLookup {
 public:
  virtual bool Find(uint64_t correlation_id, LaunchSite* out) const = 0;

 protected:
  ~LaunchSiteLookup() = default;
};
class LaunchSites : public std::unordered_map<uint64_t, LaunchSite>, public LaunchSiteLookup {
 public:
  using std::unordered_map<uint64_t, LaunchSite>::unordered_map;
  bool Find(uint64_t correlation_id, LaunchSite* out) const override {
    auto it = find(correlation_id);
    if (it == end()) return false;
    *out = it->second;
    return true;
  }
};

// The runtime's correlation table: a direct-mapped ring indexed by the
// correlation id (CUPTI's ids increase by one per API call), so a launch is
// one store and a lookup one load, from any threads at once. An id
// is forgotten when an id 2^20 higher lands in its slot: by then its records
// have long arrived (a record older than that is attributed as unknown and
// counted). Thread-safe; lock-free.
class CorrelationTable final : public LaunchSiteLookup {
 public:
  static constexpr size_t kSlots = size_t{1} << 20;
  // `iterations`: also keep each launch's iteration (4 MiB more; only runs
  // cut into iterations need it — without, Find reports kNoIteration).
  explicit CorrelationTable(bool iterations = false);
  void Insert(uint32_t correlation_id, LaunchSite site);
  bool Find(uint64_t correlation_id, LaunchSite* out) const override;

 private:
  // One 64-bit word per slot: correlation id (32) | kind (4) | node (28).
  std::unique_ptr<std::atomic<uint64_t>[]> slots_;
  // Beside it, the launch's iteration: written before the word (release),
  // read after it (acquire) and checked against a second read of the word.
  std::unique_ptr<std::atomic<uint32_t>[]> iterations_;
};
inline constexpr uint32_t kMaxSiteHandle = (uint32_t{1} << 28) - 1;

// The accumulated GPU metrics of one node. Sums over the activities
// attributed to it; docs/metrics.md says which record field feeds each.
struct GpuNodeMetrics {
  // kernels
  uint64_t gker_ns = 0;
  uint64_t gker_count = 0;
  uint64_t blk_thr_acc = 0;  // threads per block
  double blks_acc = 0;       // grid size in blocks (double: a grid may hold up to ~2^63 blocks)
  uint64_t thr_reg_acc = 0;  // registers per thread
  uint64_t stmem_acc = 0;    // static shared memory per block, bytes
  uint64_t dymem_acc = 0;    // dynamic shared memory per block, bytes
  uint64_t lmem_acc = 0;     // local memory per thread, bytes
  double occ_acc = 0;        // theoretical occupancy, percent
  // explicit copies
  uint64_t gxcopy_ns = 0;
  uint64_t gxcopy_count = 0;
  uint64_t gxcopy_bytes[5] = {};  // h2d, d2h, d2d, h2h, p2p (CopyDirection - 1)
  // memsets
  uint64_t gmset_ns = 0;
  uint64_t gmset_bytes = 0;
  uint64_t gmset_count = 0;
  // allocation and release
  uint64_t gmem_ns = 0;           // time in allocation/free API calls
  uint64_t gmem_bytes[6] = {};    // dev, pin, pag, man, ary, unk (see GmemSlot)
  uint64_t gmem_freed = 0;
  uint64_t gmem_count = 0;
  uint64_t gmem_free_count = 0;
  // synchronization
  uint64_t gsync_ns = 0;
  uint64_t gsync_kind_ns[4] = {};  // evt, stre, str, ctx (SyncKind - 1)
  uint64_t gsync_count = 0;
  // PC samples (gins, gins:stl_*)
  uint64_t gins = 0;
  uint64_t gins_stall[kStallSlots] = {};  // by StallSlot; gins:stl_any = gins - gins_stall[kNone]

  void Merge(const GpuNodeMetrics& other);
  bool empty() const;
};

// Index into GpuNodeMetrics::gmem_bytes for a memory kind.
int GmemSlot(GpuMemoryKind kind);

// A node's accumulators.
struct GpuNodeEntry {
  uint32_t node = 0;
  GpuNodeMetrics metrics;
};

class GpuMetricWriter;

// GPU metrics per iteration, kept sparse: per iteration, one row per
// non-zero additive metric of each node (a kernel node has about ten), so
// memory follows what the iterations hold (16 bytes a value), not
// iterations × nodes × every metric. Rows of the same node and metric may
// repeat (activity of one iteration that arrived in several deliveries);
// the store sums them (store::EncodeIterations). Single-threaded.
class GpuIterationValues {
 public:
  void Add(uint32_t iteration, uint32_t node, const GpuNodeMetrics& m);
  // Appends each existing iteration's values (index < out.iterations.size();
  // later ones belong to iterations still open) to its columns, on the node
  // `node_of` gives for each handle, with the metric ids `writer` uses.
  void AppendTo(store::RunIterations& out, GpuMetricWriter& writer,
                const std::function<cct::NodeId(uint32_t)>& node_of) const;
  size_t values() const { return values_; }
  bool empty() const { return values_ == 0; }

 private:
  struct Row {
    uint32_t node;
    uint32_t slot;  // the writer's metric slot
    double value;
  };
  std::vector<std::vector<Row>> by_iteration_;
  size_t values_ = 0;
};

struct ExternalCorrelation {
  uint8_t kind = 0;  // CUpti_ExternalCorrelationKind
  uint64_t id = 0;
};

struct GpuAttributionStats {
  uint64_t activities = 0;          // operations attributed (to a site or to unknown)
  uint64_t late = 0;                // of those, attributed after waiting for their launch
  uint64_t unknown = 0;             // attributed to the unknown handle: launch never known
  uint64_t pending_overflow = 0;    // of those, given up early because too many were pending
  uint64_t no_correlation = 0;      // of those, records without a correlation id
  uint64_t dropped = 0;             // records CUPTI dropped (buffer space), as reported
  uint64_t kernels_without_device = 0;  // kernels whose occupancy could not be computed
  uint64_t devices = 0;             // device records seen
  uint64_t external_correlations = 0;
  uint64_t pc_samples = 0;          // PC sample records attributed
  uint64_t pc_samples_unknown = 0;  // of those, to the unknown handle
};

// Maps a kernel under its launch site to the node its metrics go to, e.g.
// the `<gpu kernel>` placeholder's kernel child of that name (graph launches
// learn their kernels' names only from the activity). Called once per
// (site, kernel name); the answer is cached by GpuActivity::kernel_name_id,
// so one attributor takes the activities of one decoder.
using KernelNodeFn = std::function<uint32_t(uint32_t site_node, std::string_view kernel_name)>;
// Maps a kernel node and a source line of the kernel (PC sampling) to the
// node the line's samples go to, e.g. a line child of the kernel node.
// Called once per (kernel node, file, line); the answer is cached.
using LineNodeFn = std::function<uint32_t(uint32_t kernel_node, std::string_view file, uint32_t line)>;

// --trace: one attributed activity, on the handle (node) its values went
// to (a kernel's node, a copy's or memset's placeholder). `op` is a
// cct::GpuOpKind. Times are CUPTI's, ns.
struct GpuTraceRecord {
  uint64_t start_ns = 0, end_ns = 0, bytes = 0;
  uint32_t device = 0, stream = 0, node = 0;
  uint8_t op = 0;
};

class GpuAttributor {
 public:
  // `unknown_node`: the handle for activity whose launch is never known.
  // `kernel_node`: optional, see KernelNodeFn; without it kernels go to
  // their site's node. `patience`: how many Flush calls a record may wait
  // for its launch. `max_pending`: a bound on waiting records (records
  // that find it full go to unknown at once, counted as pending_overflow).
  explicit GpuAttributor(uint32_t unknown_node, KernelNodeFn kernel_node = nullptr, int patience = 2,
                         size_t max_pending = size_t{1} << 20);

  // Attributes a batch (any order of kinds; device and external-correlation
  // records are taken in as context). Activities whose correlation id is
  // not in `sites` wait for a Flush.
  void Add(const LaunchSiteLookup& sites, std::span<const GpuActivity> batch);
  // PC samples: gins and gins:stl_* on the kernel node of each sample's
  // launch (KernelNode of its site and function name) or, where the sample
  // has a source line and a LineNodeFn is set, on that line's node. Samples
  // whose launch is unknown go to the unknown handle (counted).
  void AddPcSamples(const LaunchSiteLookup& sites, std::span<const GpuPcSample> samples);
  void SetLineNode(LineNodeFn line_node) { line_node_ = std::move(line_node); }
  // Records CUPTI reported as dropped (counted; they carry no data).
  void AddDropped(uint64_t n) { stats_.dropped += n; }
  // Retries waiting activities against `sites`. Those still unknown after
  // `patience` flushes, or all of them with `give_up` (at exit), go to the
  // unknown handle and are counted.
  void Flush(const LaunchSiteLookup& sites, bool give_up);

  // A device's limits (also learned from kDevice activities).
  void SetDevice(uint32_t device_id, const GpuDeviceLimits& device);

  // The accumulators of every node that received activity, in the order
  // nodes first appeared.
  const std::vector<GpuNodeEntry>& metrics() const { return entries_; }
  const GpuNodeMetrics* Find(uint32_t node) const;  // nullptr when none
  // Hands over the accumulated metrics and starts afresh (for incremental
  // writes: merge them into the run's totals).
  std::vector<GpuNodeEntry> TakeMetrics();
  // The per-iteration values of activity launched inside iterations.
  // Accumulated densely per (iteration, node) and moved to the sparse form
  // when more than kIterationWorkingSet pairs are open, or by
  // SealIterations (call it before reading iteration_values()).
  void SealIterations();
  const GpuIterationValues& iteration_values() const { return iteration_values_; }
  static constexpr size_t kIterationWorkingSet = 4096;
  const std::unordered_map<uint32_t, ExternalCorrelation>& external() const { return external_; }
  const GpuAttributionStats& stats() const { return stats_; }
  size_t pending() const { return pending_.size(); }
  // --trace: from now on each attributed activity is also kept as a
  // GpuTraceRecord, while `budget` (the process's --trace-limit) allows.
  void EnableTrace(TraceBudget* budget) { trace_budget_ = budget; }
  const std::vector<GpuTraceRecord>& trace() const { return trace_; }

 private:
  struct Pending {
    GpuActivity activity;
    uint64_t generation;
  };
  void Attribute(const GpuActivity& a, uint32_t site_node, uint32_t iteration);
  GpuNodeMetrics& At(uint32_t node);
  GpuNodeMetrics& IterationAt(uint32_t iteration, uint32_t node);
  uint32_t KernelNode(uint32_t site_node, const GpuActivity& a);
  double OccupancyOf(const GpuActivity& a);

  uint32_t unknown_node_;
  TraceBudget* trace_budget_ = nullptr;
  std::vector<GpuTraceRecord> trace_;
  KernelNodeFn kernel_node_;
  LineNodeFn line_node_;
  int patience_;
  size_t max_pending_;
  uint64_t generation_ = 0;
  std::vector<Pending> pending_;
  std::vector<GpuNodeEntry> entries_;
  // node → position in entries_ + 1: directly indexed for node ids below
  // kDirectNodes (handles and tree node ids are dense), hashed above.
  static constexpr uint32_t kDirectNodes = uint32_t{1} << 22;
  std::vector<uint32_t> direct_;
  cct::FlatIndex index_;
  uint32_t Position(uint32_t node) const;  // FlatIndex::kNone when absent
  size_t last_ = SIZE_MAX;  // the entry of the previous activity
  struct SiteKernel {
    uint32_t name_id = 0;  // 0: none yet
    uint32_t node = 0;
  };
  std::vector<SiteKernel> first_kernel_;                 // by site node: its first kernel name's node
  std::unordered_map<uint64_t, uint32_t> kernel_nodes_;  // (site << 32 | name id) → node, the others
  std::unordered_map<std::string, uint32_t> pc_kernel_nodes_;  // NodeKey(site, 0, function) → node
  std::unordered_map<std::string, uint32_t> line_nodes_;       // NodeKey(node, line, file) → node
  std::unordered_map<uint32_t, GpuArchLimits> devices_;   // device id → limits
  const GpuArchLimits* fallback_device_ = nullptr;        // the last device learned
  std::unordered_map<uint32_t, ExternalCorrelation> external_;
  GpuAttributionStats stats_;
  // The working set: (iteration << 32 | node, accumulators), found through
  // iteration_index_; cleared (capacity kept) when folded.
  std::vector<std::pair<uint64_t, GpuNodeMetrics>> iteration_open_;
  cct::FlatIndex iteration_index_;
  size_t iteration_last_ = SIZE_MAX;  // the pair of the previous activity
  GpuIterationValues iteration_values_;
  // Occupancy by launch configuration, direct-mapped: programs alternate
  // among a few kernels' configurations.
  struct OccKey {
    uint32_t device, threads, regs, stmem, dymem, config;
    bool operator==(const OccKey&) const = default;
  };
  struct OccEntry {
    OccKey key{UINT32_MAX, 0, 0, 0, 0, 0};
    double value = 0;
  };
  static constexpr size_t kOccCache = 256;
  std::vector<OccEntry> occ_cache_ = std::vector<OccEntry>(kOccCache);
};

// ------------------------------------------------------------ into the tree

// Registers the catalog metrics a node's values need (lazily: only metrics
// with a value somewhere, plus the derived averages when there are kernels
// and `gpuop` when there is GPU time) and adds the values to the node's
// exclusive values. Keep one writer per tree: it caches the metric ids.
class GpuMetricWriter {
 public:
  explicit GpuMetricWriter(cct::Tree& tree) : tree_(tree) {}
  void Add(cct::NodeId node, const GpuNodeMetrics& m);
  // The metric of a writer slot (GpuIterationValues' rows), registered when
  // first needed; kNoMetric when the tree has that name with another unit.
  cct::MetricId Metric(int slot);

 private:
  void Put(int slot, cct::NodeId node, double value);
  cct::Tree& tree_;
  std::vector<cct::MetricId> ids_;  // by slot; kNoMetric until registered
  bool derived_kernel_ = false, derived_gpuop_ = false;
};

// One node, one call: a GpuMetricWriter for a single Add.
void AddTo(cct::Tree& tree, cct::NodeId node, const GpuNodeMetrics& m);

}  // namespace collector
