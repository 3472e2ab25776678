#include "collector/gpu/cupti/cupti_decode.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "collector/cpu/symbolizer.h"  // Demangle

namespace collector::cupti {

size_t RecordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_DEVICE_ATTRIBUTE: return sizeof(CUpti_ActivityDeviceAttribute);
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    case CUPTI_ACTIVITY_KIND_NAME: return sizeof(CUpti_ActivityName);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: return sizeof(CUpti_ActivityMarkerData2);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_CDP_KERNEL: return sizeof(CUpti_ActivityCdpKernel);
    case CUPTI_ACTIVITY_KIND_PREEMPTION: return sizeof(CUpti_ActivityPreemption);
    case CUPTI_ACTIVITY_KIND_ENVIRONMENT: return sizeof(CUpti_ActivityEnvironment);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_FUNCTION: return sizeof(CUpti_ActivityFunction);
    case CUPTI_ACTIVITY_KIND_MODULE: return sizeof(CUpti_ActivityModule);
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return sizeof(CUpti_ActivityCudaEvent2);
    case CUPTI_ACTIVITY_KIND_STREAM: return sizeof(CUpti_ActivityStream);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_NVLINK: return sizeof(CUpti_ActivityNvLink4);
    case CUPTI_ACTIVITY_KIND_MEMORY: return sizeof(CUpti_ActivityMemory);
    case CUPTI_ACTIVITY_KIND_PCIE: return sizeof(CUpti_ActivityPcie);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: return sizeof(CUpti_ActivityMemoryPool3);
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: return sizeof(CUpti_ActivityGraphTrace2);
    default: return 0;
  }
}

namespace {
CUpti_ActivityKind KindAt(const uint8_t* buffer, size_t offset) { return RecordKindAt(buffer + offset); }
size_t Aligned8(size_t n) { return (n + 7) & ~size_t{7}; }
}  // namespace

bool MatchesBuildLayout(const uint8_t* buffer, size_t valid_bytes, const std::vector<size_t>& offsets) {
  size_t expected = 0;
  for (size_t offset : offsets) {
    if (offset != expected || offset + sizeof(CUpti_Activity) > valid_bytes) return false;
    const size_t size = RecordSize(KindAt(buffer, offset));
    if (size == 0) return false;
    expected = offset + Aligned8(size);
  }
  return expected == valid_bytes;
}

size_t RepackRecords(const uint8_t* buffer, size_t valid_bytes, const std::vector<size_t>& offsets,
                     std::vector<uint64_t>& out) {
  size_t total = 0;
  for (size_t offset : offsets)
    if (offset + sizeof(CUpti_Activity) <= valid_bytes) total += Aligned8(RecordSize(KindAt(buffer, offset)));
  out.assign(total / 8, 0);
  auto* to = reinterpret_cast<uint8_t*>(out.data());
  size_t at = 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    const size_t offset = offsets[i];
    if (offset + sizeof(CUpti_Activity) > valid_bytes) continue;
    const size_t size = RecordSize(KindAt(buffer, offset));
    if (size == 0) continue;
    // CUPTI's record runs to the next one (or the buffer's end).
    size_t extent = valid_bytes - offset;
    if (i + 1 < offsets.size() && offsets[i + 1] > offset) extent = std::min(extent, offsets[i + 1] - offset);
    std::memcpy(to + at, buffer + offset, std::min(extent, size));
    at += Aligned8(size);
  }
  return at;
}

namespace {

CopyDirection DirectionOf(uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyDirection::kH2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyDirection::kD2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return CopyDirection::kD2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyDirection::kH2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyDirection::kP2P;
    default: return CopyDirection::kUnknown;
  }
}

GpuMemoryKind MemoryKindOf(uint32_t kind) {
  return kind <= CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC ? static_cast<GpuMemoryKind>(kind)
                                                           : GpuMemoryKind::kUnknown;
}

SyncKind SyncKindOf(uint32_t type) {
  return type <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ? static_cast<SyncKind>(type)
                                                                        : SyncKind::kUnknown;
}

uint32_t NonNegative(int32_t v) { return v > 0 ? static_cast<uint32_t>(v) : 0; }

}  // namespace

ActivityDecoder::ActivityDecoder() = default;

DemangledNames::DemangledNames() {
  names_.emplace_back();
  mangled_.emplace_back();
}

uint32_t DemangledNames::Intern(const char* mangled) {
  if (mangled == nullptr || *mangled == '\0') return 0;
  // CUPTI gives every record of a kernel the same string; check the text
  // too, since a string of an unloaded module may be reused for another.
  if (mangled == last_pointer_ && std::strcmp(mangled_[last_id_].c_str(), mangled) == 0) return last_id_;
  uint32_t id = 0;
  auto p = by_pointer_.find(mangled);
  if (p != by_pointer_.end() && std::strcmp(mangled_[p->second].c_str(), mangled) == 0) {
    id = p->second;
  } else {
    const std::string_view text(mangled);
    auto m = by_mangled_.find(text);
    if (m != by_mangled_.end()) {
      id = m->second;
    } else {
      id = static_cast<uint32_t>(names_.size());
      mangled_.emplace_back(text);
      names_.push_back(Demangle(mangled));
      by_mangled_.emplace(mangled_.back(), id);
    }
    by_pointer_[mangled] = id;
  }
  last_pointer_ = mangled;
  last_id_ = id;
  return id;
}

void ActivityDecoder::DecodeKernel(const CUpti_ActivityKernel10& r, GpuActivity& a) {
  a.kind = GpuActivityKind::kKernel;
  a.correlation_id = r.correlationId;
  a.start_ns = r.start;
  a.end_ns = r.end;
  a.device_id = r.deviceId;
  a.stream_id = r.streamId;
  a.graph_id = r.graphId;
  a.graph_node_id = r.graphNodeId;
  a.grid_x = NonNegative(r.gridX);
  a.grid_y = NonNegative(r.gridY);
  a.grid_z = NonNegative(r.gridZ);
  a.block_x = NonNegative(r.blockX);
  a.block_y = NonNegative(r.blockY);
  a.block_z = NonNegative(r.blockZ);
  a.registers_per_thread = r.registersPerThread;
  a.static_shared_bytes = NonNegative(r.staticSharedMemory);
  a.dynamic_shared_bytes = NonNegative(r.dynamicSharedMemory);
  a.local_bytes_per_thread = r.localMemoryPerThread;
  a.shared_config_bytes = r.sharedMemoryExecuted;
  a.kernel_name_id = names_.Intern(r.name);
  a.kernel_name = names_.Name(a.kernel_name_id);
}

void ActivityDecoder::Decode(const CUpti_Activity* record, std::vector<GpuActivity>& out) {
  ++stats_.records;
  GpuActivity a;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      DecodeKernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record), a);
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      a.kind = GpuActivityKind::kMemcpy;
      a.copy = DirectionOf(r.copyKind);
      a.correlation_id = r.correlationId;
      a.start_ns = r.start;
      a.end_ns = r.end;
      a.bytes = r.bytes;
      a.device_id = r.deviceId;
      a.stream_id = r.streamId;
      a.graph_id = r.graphId;
      a.graph_node_id = r.graphNodeId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
      a.kind = GpuActivityKind::kMemcpy;
      a.copy = CopyDirection::kP2P;  // MEMCPY2 is peer to peer by definition
      a.correlation_id = r.correlationId;
      a.start_ns = r.start;
      a.end_ns = r.end;
      a.bytes = r.bytes;
      a.device_id = r.srcDeviceId;
      a.peer_device_id = r.dstDeviceId;
      a.stream_id = r.streamId;
      a.graph_id = r.graphId;
      a.graph_node_id = r.graphNodeId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      a.kind = GpuActivityKind::kMemset;
      a.memory_kind = MemoryKindOf(r.memoryKind);
      a.correlation_id = r.correlationId;
      a.start_ns = r.start;
      a.end_ns = r.end;
      a.bytes = r.bytes;
      a.device_id = r.deviceId;
      a.stream_id = r.streamId;
      a.graph_id = r.graphId;
      a.graph_node_id = r.graphNodeId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityMemory4*>(record);
      if (r.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
        a.memory_op = MemoryOp::kAlloc;
      } else if (r.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
        a.memory_op = MemoryOp::kFree;
      } else {
        ++stats_.skipped;
        return;
      }
      a.kind = GpuActivityKind::kMemory;
      a.memory_kind = MemoryKindOf(r.memoryKind);
      a.correlation_id = r.correlationId;
      a.start_ns = a.end_ns = r.timestamp;  // an instant: no duration
      a.bytes = r.bytes;
      a.device_id = r.deviceId;
      a.stream_id = r.streamId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& r = *reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      a.kind = GpuActivityKind::kSync;
      a.sync = SyncKindOf(r.type);
      a.correlation_id = r.correlationId;
      a.start_ns = r.start;
      a.end_ns = r.end;
      a.stream_id = r.streamId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      a.kind = GpuActivityKind::kExternalCorrelation;
      a.external_kind = static_cast<uint8_t>(r.externalKind);
      a.external_id = r.externalId;
      a.correlation_id = r.correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto& r = *reinterpret_cast<const CUpti_ActivityDevice5*>(record);
      a.kind = GpuActivityKind::kDevice;
      a.device_id = r.id;
      a.device.cc_major = r.computeCapabilityMajor;
      a.device.cc_minor = r.computeCapabilityMinor;
      a.device.sm_count = r.numMultiprocessors;
      a.device.max_warps_per_sm = r.maxWarpsPerMultiprocessor;
      a.device.max_blocks_per_sm = r.maxBlocksPerMultiprocessor;
      a.device.regs_per_sm = r.maxRegistersPerMultiprocessor;
      a.device.smem_per_sm = r.maxSharedMemoryPerMultiprocessor;
      a.device.smem_per_block = r.maxSharedMemoryPerBlock;
      a.device.max_threads_per_block = r.maxThreadsPerBlock;
      break;
    }
    default:
      ++stats_.skipped;
      return;
  }
  ++stats_.decoded;
  out.push_back(a);
}

void ActivityDecoder::DecodeBuffer(const uint8_t* buffer, size_t valid_bytes, std::vector<GpuActivity>& out) {
  // Room for a buffer of the smallest common record (synchronization, 56
  // bytes) without reallocation; untouched capacity costs no memory.
  out.reserve(out.size() + valid_bytes / sizeof(CUpti_ActivitySynchronization2));
  const RecordWalk walk = WalkRecords(buffer, valid_bytes, [&](size_t offset, CUpti_ActivityKind) {
    Decode(reinterpret_cast<const CUpti_Activity*>(buffer + offset), out);
  });
  if (walk.unknown_kind) {  // counted; the rest cannot be walked
    ++stats_.records;
    ++stats_.skipped;
  }
  stats_.unparsed_bytes += valid_bytes - walk.end;
}

}  // namespace collector::cupti
