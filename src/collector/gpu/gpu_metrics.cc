#include "collector/gpu/gpu_metrics.h"

#include <algorithm>
#include <optional>
#include <array>
#include <climits>
#include <cstring>
#include <string>

namespace collector {

// ------------------------------------------------------------ occupancy

namespace {

constexpr uint32_t KiB = 1024;

// Per-architecture limits. Sources: CUDA 13.0 cuda_occupancy.h
// (cudaOccMaxBlocksPerMultiprocessor, cudaOccSMemAllocationGranularity,
// cudaOccRegAllocationGranularity, cudaOccSubPartitionsPerMultiprocessor,
// cudaOccAlignUpShmemSizeVoltaPlus for the largest carveout) and the CUDA C++
// Programming Guide, "Compute Capabilities" (threads/warps per SM, shared
// memory per SM and per block, the 1 KiB per-block reserve from sm_80 on).
// Every listed architecture has 64 Ki registers per SM and per block, at most
// 255 per thread, allocated per warp in units of 256, over 4 partitions.
//                 cc     thr/blk warps blocks regs/SM regs/blk maxreg unit part smem/SM   optin/blk  unit rsv
const GpuArchLimits kArch[] = {
    {7, 0, 1024, 64, 32, 65536, 65536, 255, 256, 4, 96 * KiB, 96 * KiB, 256, 0, 32},      // V100
    {7, 5, 1024, 32, 16, 65536, 65536, 255, 256, 4, 64 * KiB, 64 * KiB, 256, 0, 32},      // Turing
    {8, 0, 1024, 64, 32, 65536, 65536, 255, 256, 4, 164 * KiB, 163 * KiB, 128, KiB, 32},  // A100
    {8, 6, 1024, 48, 16, 65536, 65536, 255, 256, 4, 100 * KiB, 99 * KiB, 128, KiB, 32},   // GA10x
    {8, 9, 1024, 48, 24, 65536, 65536, 255, 256, 4, 100 * KiB, 99 * KiB, 128, KiB, 32},   // Ada
    {9, 0, 1024, 64, 32, 65536, 65536, 255, 256, 4, 228 * KiB, 227 * KiB, 128, KiB, 32},  // H100/H200
    {10, 0, 1024, 64, 32, 65536, 65536, 255, 256, 4, 228 * KiB, 227 * KiB, 128, KiB, 32}, // B200
    {12, 0, 1024, 48, 24, 65536, 65536, 255, 256, 4, 100 * KiB, 99 * KiB, 128, KiB, 32},  // RTX 50
};

uint32_t DivUp(uint32_t x, uint32_t y) { return (x + y - 1) / y; }
uint64_t RoundUp(uint64_t x, uint64_t y) { return y == 0 ? x : (x + y - 1) / y * y; }

}  // namespace

std::span<const GpuArchLimits> KnownArchitectures() { return kArch; }

const GpuArchLimits* FindArchLimits(uint32_t cc_major, uint32_t cc_minor) {
  const GpuArchLimits* best = nullptr;
  for (const GpuArchLimits& a : kArch) {
    if (a.cc_major != cc_major) continue;
    if (a.cc_minor == cc_minor) return &a;
    if (a.cc_minor < cc_minor && (best == nullptr || a.cc_minor > best->cc_minor)) best = &a;
  }
  if (best == nullptr)  // a minor below every listed one: the lowest of the major
    for (const GpuArchLimits& a : kArch)
      if (a.cc_major == cc_major && (best == nullptr || a.cc_minor < best->cc_minor)) best = &a;
  return best;
}

bool LimitsForDevice(const GpuDeviceLimits& d, GpuArchLimits* out) {
  GpuArchLimits a;
  if (const GpuArchLimits* base = FindArchLimits(d.cc_major, d.cc_minor)) {
    a = *base;
  } else {
    // An architecture newer than the table: the device's own limits with
    // the granularities every architecture since sm_80 shares.
    if (d.cc_major < 8 || d.max_warps_per_sm == 0 || d.max_blocks_per_sm == 0 || d.regs_per_sm == 0 ||
        d.smem_per_sm == 0)
      return false;
    a.smem_alloc_unit = 128;
    a.smem_reserved_per_block = KiB;
    a.smem_per_block_optin = d.smem_per_sm;
  }
  a.cc_major = d.cc_major;
  a.cc_minor = d.cc_minor;
  if (d.max_warps_per_sm) a.max_warps_per_sm = d.max_warps_per_sm;
  if (d.max_blocks_per_sm) a.max_blocks_per_sm = d.max_blocks_per_sm;
  if (d.regs_per_sm) a.regs_per_sm = d.regs_per_sm;
  if (d.smem_per_sm) a.smem_per_sm = d.smem_per_sm;
  if (d.max_threads_per_block) a.max_threads_per_block = d.max_threads_per_block;
  if (a.smem_per_block_optin > a.smem_per_sm) a.smem_per_block_optin = a.smem_per_sm;
  *out = a;
  return true;
}

Occupancy TheoreticalOccupancy(const GpuArchLimits& arch, const KernelLaunchConfig& launch) {
  Occupancy r;
  const uint32_t threads = launch.threads_per_block;
  if (threads == 0 || threads > arch.max_threads_per_block || arch.max_warps_per_sm == 0 || arch.warp_size == 0)
    return r;
  const uint32_t warps_per_block = DivUp(threads, arch.warp_size);

  // Warp slots.
  const uint32_t by_warps = arch.max_warps_per_sm / warps_per_block;
  // Resident blocks.
  const uint32_t by_blocks = arch.max_blocks_per_sm;
  // Registers: allocated per warp, rounded to the allocation unit; each of
  // the SM's partitions holds whole warps.
  uint32_t by_regs = UINT32_MAX;
  if (launch.registers_per_thread > arch.max_regs_per_thread) return r;
  const uint64_t regs_per_warp = RoundUp(uint64_t{launch.registers_per_thread} * arch.warp_size, arch.reg_alloc_unit);
  if (regs_per_warp > 0) {
    const uint64_t regs_per_block = regs_per_warp * warps_per_block;
    // The hardware's per-block check assumes warps spread over all partitions.
    const uint64_t assumed = regs_per_warp * RoundUp(warps_per_block, arch.sub_partitions);
    if (regs_per_block > arch.regs_per_block || assumed > arch.regs_per_block) return r;
    const uint64_t warps_per_partition = (arch.regs_per_sm / arch.sub_partitions) / regs_per_warp;
    by_regs = static_cast<uint32_t>(warps_per_partition * arch.sub_partitions / warps_per_block);
  }
  // Shared memory: static + dynamic + the driver's reserve, rounded up.
  uint32_t by_smem = UINT32_MAX;
  const uint64_t smem_block = RoundUp(uint64_t{launch.static_shared_bytes} + launch.dynamic_shared_bytes +
                                          arch.smem_reserved_per_block,
                                      arch.smem_alloc_unit);
  if (arch.smem_per_block_optin > 0 && smem_block > uint64_t{arch.smem_per_block_optin} + arch.smem_reserved_per_block)
    return r;
  if (smem_block > 0) {
    uint64_t smem_sm = launch.shared_config_bytes ? launch.shared_config_bytes : arch.smem_per_sm;
    // A carveout below one block's need cannot have run it: the driver
    // grows the carveout to fit (cuda_occupancy.h does the same).
    if (smem_sm < smem_block) smem_sm = smem_block;
    by_smem = static_cast<uint32_t>(smem_sm / smem_block);
  }

  const uint32_t blocks = std::min({by_warps, by_blocks, by_regs, by_smem});
  r.active_blocks_per_sm = blocks;
  r.active_warps_per_sm = blocks * warps_per_block;
  r.percent = 100.0 * r.active_warps_per_sm / arch.max_warps_per_sm;
  if (blocks == by_warps) r.limiters |= kLimitWarps;
  if (blocks == by_regs) r.limiters |= kLimitRegisters;
  if (blocks == by_smem) r.limiters |= kLimitSharedMemory;
  if (blocks == by_blocks) r.limiters |= kLimitBlocks;
  return r;
}

// ------------------------------------------------------------ node metrics

void GpuNodeMetrics::Merge(const GpuNodeMetrics& o) {
  gker_ns += o.gker_ns;
  gker_count += o.gker_count;
  blk_thr_acc += o.blk_thr_acc;
  blks_acc += o.blks_acc;
  thr_reg_acc += o.thr_reg_acc;
  stmem_acc += o.stmem_acc;
  dymem_acc += o.dymem_acc;
  lmem_acc += o.lmem_acc;
  occ_acc += o.occ_acc;
  gxcopy_ns += o.gxcopy_ns;
  gxcopy_count += o.gxcopy_count;
  for (int i = 0; i < 5; ++i) gxcopy_bytes[i] += o.gxcopy_bytes[i];
  gmset_ns += o.gmset_ns;
  gmset_bytes += o.gmset_bytes;
  gmset_count += o.gmset_count;
  gmem_ns += o.gmem_ns;
  for (int i = 0; i < 6; ++i) gmem_bytes[i] += o.gmem_bytes[i];
  gmem_freed += o.gmem_freed;
  gmem_count += o.gmem_count;
  gmem_free_count += o.gmem_free_count;
  gsync_ns += o.gsync_ns;
  for (int i = 0; i < 4; ++i) gsync_kind_ns[i] += o.gsync_kind_ns[i];
  gsync_count += o.gsync_count;
  gins += o.gins;
  for (int i = 0; i < kStallSlots; ++i) gins_stall[i] += o.gins_stall[i];
}

bool GpuNodeMetrics::empty() const {
  return gker_count == 0 && gker_ns == 0 && gxcopy_count == 0 && gxcopy_ns == 0 && gmset_count == 0 &&
         gmset_ns == 0 && gmem_count == 0 && gmem_free_count == 0 && gmem_ns == 0 && gsync_count == 0 &&
         gsync_ns == 0 && gins == 0;
}

int GmemSlot(GpuMemoryKind kind) {
  switch (kind) {
    case GpuMemoryKind::kDevice:
    case GpuMemoryKind::kDeviceStatic:
      return 0;  // dev
    case GpuMemoryKind::kPinned:
      return 1;  // pin
    case GpuMemoryKind::kPageable:
      return 2;  // pag
    case GpuMemoryKind::kManaged:
    case GpuMemoryKind::kManagedStatic:
      return 3;  // man
    case GpuMemoryKind::kArray:
      return 4;  // ary
    case GpuMemoryKind::kUnknown:
      break;
  }
  return 5;  // unk
}

// ------------------------------------------------------------ attribution

CorrelationTable::CorrelationTable(bool iterations) : slots_(new std::atomic<uint64_t>[kSlots]) {
  for (size_t i = 0; i < kSlots; ++i) slots_[i].store(0, std::memory_order_relaxed);
  if (iterations) {
    iterations_.reset(new std::atomic<uint32_t>[kSlots]);
    for (size_t i = 0; i < kSlots; ++i) iterations_[i].store(kNoIteration, std::memory_order_relaxed);
  }
}

void CorrelationTable::Insert(uint32_t correlation_id, LaunchSite site) {
  const uint64_t word = (uint64_t{correlation_id} << 32) | (uint64_t{static_cast<uint8_t>(site.kind)} << 28) |
                        (site.node & kMaxSiteHandle);
  const size_t slot = correlation_id & (kSlots - 1);
  if (iterations_) iterations_[slot].store(site.iteration, std::memory_order_relaxed);
  slots_[slot].store(word, std::memory_order_release);
}

bool CorrelationTable::Find(uint64_t correlation_id, LaunchSite* out) const {
  if (correlation_id == 0 || correlation_id > UINT32_MAX) return false;
  const size_t slot = correlation_id & (kSlots - 1);
  const uint64_t word = slots_[slot].load(std::memory_order_acquire);
  if ((word >> 32) != correlation_id) return false;
  out->node = static_cast<uint32_t>(word) & kMaxSiteHandle;
  out->kind = static_cast<cct::GpuOpKind>((word >> 28) & 0xf);
  out->iteration = kNoIteration;
  if (iterations_) {
    out->iteration = iterations_[slot].load(std::memory_order_acquire);
    // An id 2^20 higher took the slot meanwhile: this one is forgotten.
    if (slots_[slot].load(std::memory_order_acquire) != word) return false;
  }
  return true;
}

GpuAttributor::GpuAttributor(uint32_t unknown_node, KernelNodeFn kernel_node, int patience, size_t max_pending)
    : unknown_node_(unknown_node),
      kernel_node_(std::move(kernel_node)),
      patience_(std::max(patience, 1)),
      max_pending_(max_pending) {}

void GpuAttributor::SetDevice(uint32_t device_id, const GpuDeviceLimits& device) {
  GpuArchLimits limits;
  if (!LimitsForDevice(device, &limits)) return;
  auto [it, inserted] = devices_.insert_or_assign(device_id, limits);
  (void)inserted;
  fallback_device_ = &it->second;  // unordered_map values never move
  for (OccEntry& e : occ_cache_) e = OccEntry{};  // limits changed: forget computed values
}

uint32_t GpuAttributor::Position(uint32_t node) const {
  if (node < kDirectNodes) return node < direct_.size() && direct_[node] ? direct_[node] - 1 : cct::FlatIndex::kNone;
  return index_.Find(cct::MixHash(node), [&](uint32_t i) { return entries_[i].node == node; });
}

GpuNodeMetrics& GpuAttributor::At(uint32_t node) {
  if (last_ < entries_.size() && entries_[last_].node == node) return entries_[last_].metrics;
  uint32_t at = Position(node);
  if (at == cct::FlatIndex::kNone) {
    at = static_cast<uint32_t>(entries_.size());
    entries_.push_back(GpuNodeEntry{node, {}});
    if (node < kDirectNodes) {
      if (node >= direct_.size())
        direct_.resize(std::min<size_t>(std::max<size_t>(node + 1, direct_.size() * 2), kDirectNodes), 0);
      direct_[node] = at + 1;
    } else {
      index_.Insert(cct::MixHash(node), at);
    }
  }
  last_ = at;
  return entries_[at].metrics;
}

const GpuNodeMetrics* GpuAttributor::Find(uint32_t node) const {
  const uint32_t at = Position(node);
  return at == cct::FlatIndex::kNone ? nullptr : &entries_[at].metrics;
}

std::vector<GpuNodeEntry> GpuAttributor::TakeMetrics() {
  std::vector<GpuNodeEntry> out;
  out.swap(entries_);
  direct_.clear();
  index_.Clear();
  last_ = SIZE_MAX;
  return out;
}

namespace {

// A node hook's answer; its exception (never to reach the host program)
// leaves the metrics on `fallback`.
template <class Fn, class... Args>
uint32_t CallHook(const Fn& fn, uint32_t fallback, Args&&... args) {
  try {
    return fn(std::forward<Args>(args)...);
  } catch (...) {
    return fallback;
  }
}

// An exact cache key: a node, a number and a name.
std::string NodeKey(uint32_t node, uint32_t number, std::string_view text) {
  std::string key(8, '\0');
  std::memcpy(key.data(), &node, 4);
  std::memcpy(key.data() + 4, &number, 4);
  key.append(text);
  return key;
}

}  // namespace

uint32_t GpuAttributor::KernelNode(uint32_t site_node, const GpuActivity& a) {
  if (!kernel_node_ || a.kernel_name_id == 0) return site_node;
  // Most sites launch one kernel: its answer sits in a slot by site node,
  // one load; other names go through the map.
  SiteKernel* first = nullptr;
  if (site_node < kDirectNodes) {
    if (site_node >= first_kernel_.size())
      first_kernel_.resize(std::min<size_t>(std::max<size_t>(site_node + 1, first_kernel_.size() * 2), kDirectNodes));
    first = &first_kernel_[site_node];
    if (first->name_id == a.kernel_name_id) return first->node;
  }
  const uint64_t key = (uint64_t{site_node} << 32) | a.kernel_name_id;
  auto it = kernel_nodes_.find(key);
  if (it != kernel_nodes_.end()) return it->second;
  const uint32_t node = CallHook(kernel_node_, site_node, site_node, a.kernel_name);
  if (first && first->name_id == 0) *first = SiteKernel{a.kernel_name_id, node};
  else kernel_nodes_.emplace(key, node);
  return node;
}

double GpuAttributor::OccupancyOf(const GpuActivity& a) {
  const OccKey key{a.device_id,           static_cast<uint32_t>(a.threads_per_block()), a.registers_per_thread,
                   a.static_shared_bytes, a.dynamic_shared_bytes,                       a.shared_config_bytes};
  const uint64_t h = cct::MixHash((uint64_t{key.threads} << 40) ^ (uint64_t{key.regs} << 32) ^
                                  (uint64_t{key.device} << 24) ^ key.stmem ^ (uint64_t{key.dymem} << 12) ^
                                  (uint64_t{key.config} << 20));
  OccEntry& slot = occ_cache_[h % kOccCache];
  if (slot.key == key) return slot.value;
  const GpuArchLimits* arch = nullptr;
  if (auto it = devices_.find(a.device_id); it != devices_.end())
    arch = &it->second;
  else
    arch = fallback_device_;
  if (arch == nullptr) return -1;
  KernelLaunchConfig c;
  c.threads_per_block = key.threads;
  c.registers_per_thread = a.registers_per_thread;
  c.static_shared_bytes = a.static_shared_bytes;
  c.dynamic_shared_bytes = a.dynamic_shared_bytes;
  c.shared_config_bytes = a.shared_config_bytes;
  slot.value = TheoreticalOccupancy(*arch, c).percent;
  slot.key = key;
  return slot.value;
}

namespace {

// One activity's contribution to a node's accumulators; `occ` is the
// kernel's theoretical occupancy (< 0: unknown).
inline void Accumulate(GpuNodeMetrics& m, const GpuActivity& a, double occ) {
  const uint64_t dur = a.duration_ns();
  switch (a.kind) {
    case GpuActivityKind::kKernel:
      m.gker_ns += dur;
      m.gker_count += 1;
      m.blk_thr_acc += a.threads_per_block();
      m.blks_acc += static_cast<double>(a.blocks());  // grid size in blocks: gridX·gridY·gridZ
      m.thr_reg_acc += a.registers_per_thread;
      m.stmem_acc += a.static_shared_bytes;
      m.dymem_acc += a.dynamic_shared_bytes;
      m.lmem_acc += a.local_bytes_per_thread;
      if (occ >= 0) m.occ_acc += occ;
      break;
    case GpuActivityKind::kMemcpy:
      m.gxcopy_ns += dur;
      m.gxcopy_count += 1;
      if (a.copy != CopyDirection::kUnknown) m.gxcopy_bytes[static_cast<int>(a.copy) - 1] += a.bytes;
      break;
    case GpuActivityKind::kMemset:
      m.gmset_ns += dur;
      m.gmset_bytes += a.bytes;
      m.gmset_count += 1;
      break;
    case GpuActivityKind::kMemory:
      if (a.memory_op == MemoryOp::kAlloc) {
        m.gmem_bytes[GmemSlot(a.memory_kind)] += a.bytes;
        m.gmem_count += 1;
      } else {
        m.gmem_freed += a.bytes;
        m.gmem_free_count += 1;
      }
      break;
    case GpuActivityKind::kMemoryApi:
      m.gmem_ns += dur;
      break;
    case GpuActivityKind::kSync:
      m.gsync_ns += dur;
      if (a.sync != SyncKind::kUnknown) m.gsync_kind_ns[static_cast<int>(a.sync) - 1] += dur;
      m.gsync_count += 1;
      break;
    case GpuActivityKind::kDevice:
    case GpuActivityKind::kExternalCorrelation:
      break;  // context, not an operation (handled by Add)
  }
}

}  // namespace

namespace {

// The trace's kind of an activity that happened on a device; nullopt for
// the time spent in allocation calls on the CPU (kMemoryApi).
std::optional<cct::GpuOpKind> TraceOpOf(const GpuActivity& a) {
  switch (a.kind) {
    case GpuActivityKind::kKernel: return cct::GpuOpKind::kKernel;
    case GpuActivityKind::kMemcpy:
      return a.copy == CopyDirection::kH2D ? cct::GpuOpKind::kCopyIn
             : a.copy == CopyDirection::kD2H ? cct::GpuOpKind::kCopyOut
                                             : cct::GpuOpKind::kCopy;
    case GpuActivityKind::kMemset: return cct::GpuOpKind::kMemset;
    case GpuActivityKind::kMemory: return a.memory_op == MemoryOp::kFree ? cct::GpuOpKind::kFree : cct::GpuOpKind::kAlloc;
    case GpuActivityKind::kSync: return cct::GpuOpKind::kSync;
    default: return std::nullopt;
  }
}

}  // namespace

void GpuAttributor::Attribute(const GpuActivity& a, uint32_t site_node, uint32_t iteration) {
  if (a.kind == GpuActivityKind::kDevice || a.kind == GpuActivityKind::kExternalCorrelation) return;
  ++stats_.activities;
  uint32_t node = site_node;
  double occ = -1;
  if (a.kind == GpuActivityKind::kKernel) {
    node = KernelNode(site_node, a);
    occ = OccupancyOf(a);
    if (occ < 0) ++stats_.kernels_without_device;
  }
  Accumulate(At(node), a, occ);
  if (iteration != kNoIteration) Accumulate(IterationAt(iteration, node), a, occ);
  if (trace_budget_) {
    std::optional<cct::GpuOpKind> op = TraceOpOf(a);
    if (op && trace_budget_->Take(sizeof(GpuTraceRecord)))
      trace_.push_back({a.start_ns, std::max(a.end_ns, a.start_ns), a.bytes, a.device_id, a.stream_id, node,
                        static_cast<uint8_t>(*op)});
  }
}

GpuNodeMetrics& GpuAttributor::IterationAt(uint32_t iteration, uint32_t node) {
  const uint64_t key = (uint64_t{iteration} << 32) | node;
  if (iteration_last_ < iteration_open_.size() && iteration_open_[iteration_last_].first == key)
    return iteration_open_[iteration_last_].second;
  const uint64_t hash = cct::MixHash(key);
  uint32_t at = iteration_index_.Find(hash, [&](uint32_t i) { return iteration_open_[i].first == key; });
  if (at == cct::FlatIndex::kNone) {
    if (iteration_open_.size() >= kIterationWorkingSet) SealIterations();
    if (iteration_open_.empty()) iteration_index_.Reserve(kIterationWorkingSet);  // one allocation per fold
    at = static_cast<uint32_t>(iteration_open_.size());
    iteration_open_.emplace_back(key, GpuNodeMetrics{});
    iteration_index_.Insert(hash, at);
  }
  iteration_last_ = at;
  return iteration_open_[at].second;
}

void GpuAttributor::SealIterations() {
  for (const auto& [key, m] : iteration_open_)
    iteration_values_.Add(static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key), m);
  iteration_open_.clear();
  iteration_index_.Clear();
  iteration_last_ = SIZE_MAX;
}

void GpuAttributor::Add(const LaunchSiteLookup& sites, std::span<const GpuActivity> batch) {
  for (const GpuActivity& a : batch) {
    switch (a.kind) {
      case GpuActivityKind::kDevice:
        ++stats_.devices;
        SetDevice(a.device_id, a.device);
        continue;
      case GpuActivityKind::kExternalCorrelation:
        ++stats_.external_correlations;
        external_[a.correlation_id] = ExternalCorrelation{a.external_kind, a.external_id};
        continue;
      default:
        break;
    }
    if (a.correlation_id == 0) {
      ++stats_.no_correlation;
      ++stats_.unknown;
      Attribute(a, unknown_node_, kNoIteration);
      continue;
    }
    LaunchSite site;
    if (sites.Find(a.correlation_id, &site)) {
      Attribute(a, site.node, site.iteration);
    } else if (pending_.size() < max_pending_) {
      pending_.push_back(Pending{a, generation_});
    } else {
      ++stats_.pending_overflow;
      ++stats_.unknown;
      Attribute(a, unknown_node_, kNoIteration);
    }
  }
}

void GpuAttributor::AddPcSamples(const LaunchSiteLookup& sites, std::span<const GpuPcSample> samples) {
  for (const GpuPcSample& p : samples) {
    ++stats_.pc_samples;
    LaunchSite site;
    uint32_t node;
    uint32_t iteration = kNoIteration;
    if (p.correlation_id != 0 && sites.Find(p.correlation_id, &site)) {
      iteration = site.iteration;
      node = site.node;
      if (kernel_node_ && !p.function_name.empty()) {
        // The kernel child of the site, as its activity record names it.
        auto [it, added] = pc_kernel_nodes_.try_emplace(NodeKey(site.node, 0, p.function_name), site.node);
        if (added) it->second = CallHook(kernel_node_, site.node, site.node, p.function_name);
        node = it->second;
      }
    } else {
      ++stats_.pc_samples_unknown;
      node = unknown_node_;
    }
    if (line_node_ && p.line != 0) {
      auto [it, added] = line_nodes_.try_emplace(NodeKey(node, p.line, p.file), node);
      if (added) it->second = CallHook(line_node_, node, node, p.file, p.line);
      node = it->second;
    }
    const auto add = [&p](GpuNodeMetrics& m) {
      m.gins += p.samples;
      for (int i = 0; i < kStallSlots; ++i) m.gins_stall[i] += p.stall[i];
    };
    add(At(node));
    if (iteration != kNoIteration) add(IterationAt(iteration, node));
  }
}

void GpuAttributor::Flush(const LaunchSiteLookup& sites, bool give_up) {
  ++generation_;
  size_t keep = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = pending_[i];
    LaunchSite site;
    if (sites.Find(p.activity.correlation_id, &site)) {
      ++stats_.late;
      Attribute(p.activity, site.node, site.iteration);
    } else if (give_up || generation_ - p.generation >= static_cast<uint64_t>(patience_)) {
      ++stats_.unknown;
      Attribute(p.activity, unknown_node_, kNoIteration);
    } else {
      if (keep != i) pending_[keep] = std::move(p);
      ++keep;
    }
  }
  pending_.resize(keep);
}

// ------------------------------------------------------------ into the tree

namespace {

// Additive catalog metrics by writer slot.
enum Slot : int {
  kGker, kGkerCount, kBlkThrAcc, kBlksAcc, kThrRegAcc, kStmemAcc, kDymemAcc, kLmemAcc, kOccAcc,
  kGxcopy, kGxcopyCount, kGxcopyH2d, kGxcopyD2h, kGxcopyD2d, kGxcopyH2h, kGxcopyP2p,
  kGmset, kGmsetBytes, kGmsetCount,
  kGmem, kGmemDev, kGmemPin, kGmemPag, kGmemMan, kGmemAry, kGmemUnk, kGmemFreed, kGmemCount, kGmemFreeCount,
  kGsync, kGsyncEvt, kGsyncStre, kGsyncStr, kGsyncCtx, kGsyncCount,
  kGins, kGinsAny, kGinsNone,  // then one slot per StallSlot after kNone
  kSlotCount = kGinsNone + kStallSlots,
};
constexpr std::array<std::string_view, kSlotCount> kSlotNames = {
    "gker", "gker:count", "gker:blk_thr_acc", "gker:blks_acc", "gker:thr_reg_acc", "gker:stmem_acc",
    "gker:dymem_acc", "gker:lmem_acc", "gker:occ_acc",
    "gxcopy", "gxcopy:count", "gxcopy:h2d", "gxcopy:d2h", "gxcopy:d2d", "gxcopy:h2h", "gxcopy:p2p",
    "gmset", "gmset:bytes", "gmset:count",
    "gmem", "gmem:dev", "gmem:pin", "gmem:pag", "gmem:man", "gmem:ary", "gmem:unk", "gmem:freed", "gmem:count",
    "gmem:free:count",
    "gsync", "gsync:evt", "gsync:stre", "gsync:str", "gsync:ctx", "gsync:count",
    "gins", "gins:stl_any", "gins:stl_none", "gins:stl_ifet", "gins:stl_idep", "gins:stl_gmem", "gins:stl_tmem",
    "gins:stl_sync", "gins:stl_cmem", "gins:stl_pipe", "gins:stl_mthr", "gins:stl_nsel", "gins:stl_othr",
    "gins:stl_slp",
};
static_assert(kGinsNone + static_cast<int>(StallSlot::kSlp) == kSlotCount - 1, "one slot per stall class");
constexpr std::string_view kKernelAverages[] = {"gker:blk_thr", "gker:blks", "gker:thr_reg", "gker:stmem",
                                                "gker:dymem",   "gker:lmem", "gker:occ"};

// Calls fn(slot, value) for each additive metric of `m` that is not zero.
template <class Fn>
void ForEachSlot(const GpuNodeMetrics& m, Fn&& fn) {
  const auto put = [&fn](int slot, double value) {
    if (value != 0) fn(slot, value);
  };
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  put(kGker, d(m.gker_ns));
  put(kGkerCount, d(m.gker_count));
  put(kBlkThrAcc, d(m.blk_thr_acc));
  put(kBlksAcc, m.blks_acc);
  put(kThrRegAcc, d(m.thr_reg_acc));
  put(kStmemAcc, d(m.stmem_acc));
  put(kDymemAcc, d(m.dymem_acc));
  put(kLmemAcc, d(m.lmem_acc));
  put(kOccAcc, m.occ_acc);
  put(kGxcopy, d(m.gxcopy_ns));
  put(kGxcopyCount, d(m.gxcopy_count));
  for (int i = 0; i < 5; ++i) put(kGxcopyH2d + i, d(m.gxcopy_bytes[i]));
  put(kGmset, d(m.gmset_ns));
  put(kGmsetBytes, d(m.gmset_bytes));
  put(kGmsetCount, d(m.gmset_count));
  put(kGmem, d(m.gmem_ns));
  for (int i = 0; i < 6; ++i) put(kGmemDev + i, d(m.gmem_bytes[i]));
  put(kGmemFreed, d(m.gmem_freed));
  put(kGmemCount, d(m.gmem_count));
  put(kGmemFreeCount, d(m.gmem_free_count));
  put(kGsync, d(m.gsync_ns));
  for (int i = 0; i < 4; ++i) put(kGsyncEvt + i, d(m.gsync_kind_ns[i]));
  put(kGsyncCount, d(m.gsync_count));
  put(kGins, d(m.gins));
  put(kGinsAny, d(m.gins - m.gins_stall[static_cast<int>(StallSlot::kNone)]));
  for (int i = 0; i < kStallSlots; ++i) put(kGinsNone + i, d(m.gins_stall[i]));
}

}  // namespace

cct::MetricId GpuMetricWriter::Metric(int slot) {
  if (slot < 0 || slot >= kSlotCount) return cct::kNoMetric;
  if (ids_.empty()) ids_.assign(kSlotCount, cct::kNoMetric);
  if (ids_[slot] == cct::kNoMetric) {
    auto id = tree_.metrics().RegisterStandard(kSlotNames[slot]);
    // A metric of that name with another unit (e.g. imported) keeps its
    // place; the GPU value is then left out rather than mixed in.
    if (!id.ok()) return cct::kNoMetric;
    ids_[slot] = *id;
  }
  return ids_[slot];
}

void GpuMetricWriter::Put(int slot, cct::NodeId node, double value) {
  const cct::MetricId id = Metric(slot);
  if (id != cct::kNoMetric) tree_.AddValue(node, id, value);
}

void GpuMetricWriter::Add(cct::NodeId node, const GpuNodeMetrics& m) {
  if (m.gker_count > 0 && !derived_kernel_) {
    derived_kernel_ = true;
    for (std::string_view name : kKernelAverages) (void)tree_.metrics().RegisterStandard(name);
  }
  const bool has_time = m.gker_ns || m.gxcopy_ns || m.gmset_ns || m.gmem_ns || m.gsync_ns;
  if (has_time && !derived_gpuop_) {
    derived_gpuop_ = true;
    (void)tree_.metrics().RegisterStandard("gpuop");
  }
  ForEachSlot(m, [&](int slot, double value) { Put(slot, node, value); });
}

void GpuIterationValues::Add(uint32_t iteration, uint32_t node, const GpuNodeMetrics& m) {
  if (iteration >= by_iteration_.size()) by_iteration_.resize(size_t{iteration} + 1);
  std::vector<Row>& rows = by_iteration_[iteration];
  ForEachSlot(m, [&](int slot, double value) {
    rows.push_back(Row{node, static_cast<uint32_t>(slot), value});
    ++values_;
  });
}

void GpuIterationValues::AppendTo(store::RunIterations& out, GpuMetricWriter& writer,
                                  const std::function<cct::NodeId(uint32_t)>& node_of) const {
  const size_t n = std::min(out.iterations.size(), by_iteration_.size());
  for (size_t k = 0; k < n; ++k) {
    if (by_iteration_[k].empty()) continue;
    std::vector<store::IterationColumn>& columns = out.iterations[k].columns;
    std::array<int, kSlotCount> column_of;  // slot → index in columns, -1 before its first row
    column_of.fill(-1);
    for (const Row& r : by_iteration_[k]) {
      int& c = column_of[r.slot];
      if (c < 0) {
        const cct::MetricId metric = writer.Metric(static_cast<int>(r.slot));
        if (metric == cct::kNoMetric) continue;
        c = static_cast<int>(columns.size());
        columns.push_back(store::IterationColumn{metric, {}, {}});
      }
      columns[c].nodes.push_back(node_of(r.node));
      columns[c].values.push_back(r.value);
    }
  }
}

void AddTo(cct::Tree& tree, cct::NodeId node, const GpuNodeMetrics& m) {
  GpuMetricWriter writer(tree);
  writer.Add(node, m);
}

}  // namespace collector
