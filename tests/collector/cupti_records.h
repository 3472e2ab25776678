// CUPTI activity records built from CUPTI's own structs, for tests that
// need records without a GPU (decoding, attribution, raw dumps) and for the
// fake GPU adapter (programs/fake_gpu.cc). Header-only; each builder zeroes
// its struct and fills the fields the decoder reads.
#pragma once

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace cupti_records {

// Mangled kernel names as CUPTI reports them: a plain function and a
// template instance (demangled in the tree).
inline constexpr char kMangledSaxpy[] = "_Z5saxpyifPKfPf";
inline constexpr char kMangledGemm[] = "_Z4gemmILi128EEvPKfS1_Pfiii";

// A CUPTI activity buffer: records appended back to back, each padded to a
// multiple of 8 bytes, in 8-byte-aligned storage (as CUPTI lays them out).
class RecordBuffer {
 public:
  template <class T>
  void Add(const T& record) {
    static_assert(sizeof(T) % 8 == 0, "CUPTI records are 8-byte multiples");
    if constexpr (std::is_same_v<T, CUpti_ActivityKernel10>) kernels_.push_back(bytes_);
    const size_t at = bytes_;
    bytes_ += sizeof(T);
    words_.resize((bytes_ + 7) / 8);
    std::memcpy(reinterpret_cast<uint8_t*>(words_.data()) + at, &record, sizeof(T));
  }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(words_.data()); }
  size_t size() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  void Clear() {
    words_.clear();
    kernels_.clear();
    bytes_ = 0;
  }
  // The bytes as another process sees them: every kernel's name pointer
  // points nowhere (a replay must never follow it).
  std::vector<uint8_t> Scrambled() const {
    std::vector<uint8_t> out(data(), data() + size());
    for (size_t at : kernels_) {
      const char* bogus = reinterpret_cast<const char*>(uintptr_t{0xdead0000});
      std::memcpy(out.data() + at + offsetof(CUpti_ActivityKernel10, name), &bogus, sizeof bogus);
    }
    return out;
  }

 private:
  std::vector<uint64_t> words_;
  std::vector<size_t> kernels_;  // offsets of kernel records
  size_t bytes_ = 0;
};

inline CUpti_ActivityKernel10 Kernel(uint32_t corr, const char* name, uint64_t start, uint64_t end, int gx, int gy, int gz,
                              int bx, int by, int bz, uint16_t regs, int32_t static_smem = 0, int32_t dyn_smem = 0,
                              uint32_t local = 0) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = corr;
  k.name = name;
  k.start = start;
  k.end = end;
  k.gridX = gx, k.gridY = gy, k.gridZ = gz;
  k.blockX = bx, k.blockY = by, k.blockZ = bz;
  k.registersPerThread = regs;
  k.staticSharedMemory = static_smem;
  k.dynamicSharedMemory = dyn_smem;
  k.localMemoryPerThread = local;
  k.deviceId = 0;
  k.streamId = 7;
  return k;
}

inline CUpti_ActivityMemcpy6 Memcpy(uint32_t corr, CUpti_ActivityMemcpyKind kind, uint64_t bytes, uint64_t start,
                             uint64_t end) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = static_cast<uint8_t>(kind);
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.correlationId = corr;
  m.deviceId = 0;
  m.streamId = 7;
  return m;
}

inline CUpti_ActivityMemcpyPtoP4 Peer(uint32_t corr, uint64_t bytes, uint32_t src, uint32_t dst, uint64_t start,
                               uint64_t end) {
  CUpti_ActivityMemcpyPtoP4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.srcDeviceId = src;
  m.dstDeviceId = dst;
  m.deviceId = src;
  m.correlationId = corr;
  return m;
}

inline CUpti_ActivityMemset4 Memset(uint32_t corr, uint64_t bytes, uint64_t start, uint64_t end) {
  CUpti_ActivityMemset4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.correlationId = corr;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  return m;
}

inline CUpti_ActivityMemory4 Memory(uint32_t corr, CUpti_ActivityMemoryOperationType op, CUpti_ActivityMemoryKind kind,
                             uint64_t bytes, uint64_t timestamp) {
  CUpti_ActivityMemory4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = op;
  m.memoryKind = kind;
  m.correlationId = corr;
  m.bytes = bytes;
  m.timestamp = timestamp;
  return m;
}

inline CUpti_ActivitySynchronization2 Sync(uint32_t corr, CUpti_ActivitySynchronizationType type, uint64_t start,
                                    uint64_t end) {
  CUpti_ActivitySynchronization2 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = type;
  s.start = start;
  s.end = end;
  s.correlationId = corr;
  return s;
}

inline CUpti_ActivityExternalCorrelation External(uint32_t corr, uint64_t external_id) {
  CUpti_ActivityExternalCorrelation e;
  std::memset(&e, 0, sizeof e);
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = external_id;
  e.correlationId = corr;
  return e;
}

// An H100-like device record (sm_90, 132 SMs).
inline CUpti_ActivityDevice5 Device(uint32_t id, uint32_t major, uint32_t minor) {
  CUpti_ActivityDevice5 d;
  std::memset(&d, 0, sizeof d);
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.id = id;
  d.computeCapabilityMajor = major;
  d.computeCapabilityMinor = minor;
  d.numMultiprocessors = 132;
  d.maxWarpsPerMultiprocessor = 64;
  d.maxBlocksPerMultiprocessor = 32;
  d.maxRegistersPerMultiprocessor = 65536;
  d.maxSharedMemoryPerMultiprocessor = 228 * 1024;
  d.maxSharedMemoryPerBlock = 48 * 1024;
  d.maxThreadsPerBlock = 1024;
  d.numThreadsPerWarp = 32;
  return d;
}

// A runtime API record: a kind the decoder does not decode (it skips it).
inline CUpti_ActivityAPI RuntimeApi(uint32_t corr) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.correlationId = corr;
  return a;
}

}  // namespace cupti_records
