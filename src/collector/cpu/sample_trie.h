// SampleTrie: one thread's samples as a tree of raw code addresses.
//
// The sampling signal handler records each sample here: the unwound return
// addresses, root first, become a path of (parent, key) nodes, and the leaf
// node accumulates the time and the count. Symbolization happens later, on
// the collector's own thread, by reading the trie (see profile_builder.h).
//
// SIGNAL-HANDLER CODE: AddSample (and everything it calls) runs inside the
// sampling signal handler. It is async-signal-safe: no malloc, no locks, no
// stdio; memory comes from mmap (a system call), node storage is chunked so
// existing nodes never move, and the hash index is rebuilt into a new mapping
// when it fills.
//
// Thread-safety: one writer (the owning thread, in its signal handler) and any
// number of concurrent readers. Readers call size() (acquire) and may then
// read key(), parent() of nodes below it, and time_ns()/samples() of any of
// them (values are updated with relaxed atomics; a reader sees each value as
// of some recent sample). Ownership: the trie owns its mappings; it is never
// destroyed while the process runs (threads' tries outlive the threads).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace collector {

// Keys are code addresses with a 15-bit load epoch above them (user
// addresses fit in 47 bits), so an address in a library that was unloaded
// and an equal address in a library loaded later are different keys. Keys
// with the top bit set are NVTX ranges and marks (MakeRangeKey).
inline constexpr int kEpochShift = 48;
inline constexpr uint64_t kAddressMask = (uint64_t{1} << kEpochShift) - 1;
inline constexpr uint32_t kEpochMask = 0x7fff;
inline uint64_t MakeKey(uintptr_t address, uint32_t epoch) {
  return (uint64_t{address} & kAddressMask) | (uint64_t{epoch & kEpochMask} << kEpochShift);
}
// Keys with the top bit set are not addresses: NVTX ranges and marks, and
// (with kGpuKeyBit) the GPU operation placeholders and kernels of GPU launch
// sites (the per-thread launch tries, see gpu_runtime.h).
inline constexpr uint64_t kRangeKeyBit = uint64_t{1} << 63;
inline constexpr uint64_t kMarkKeyBit = uint64_t{1} << 62;
inline constexpr uint64_t kGpuKeyBit = uint64_t{1} << 61;
// An NVTX push/pop range (or, with `mark`, an NVTX mark) named by `name_id`.
inline uint64_t MakeRangeKey(uint32_t name_id, bool mark = false) {
  return kRangeKeyBit | (mark ? kMarkKeyBit : 0) | name_id;
}
// A Python frame (python/python_frames.h): its code object's id
// (python/code_ids.h: a code object's address is not an identity; 44 bits)
// and the instruction's index in code units (15 bits, clamped); with
// kPythonLineBit, the line node of a sample's innermost Python frame.
inline constexpr uint64_t kPythonKeyBit = uint64_t{1} << 60;
inline constexpr uint64_t kPythonLineBit = uint64_t{1} << 15;
inline constexpr uint32_t kPythonMaxIndex = 0x7fff;
inline constexpr uint64_t kPythonCodeIdMask = (uint64_t{1} << 44) - 1;
inline uint64_t MakePythonKey(uint64_t code_id, uint32_t index) {
  return kRangeKeyBit | kPythonKeyBit | ((code_id & kPythonCodeIdMask) << 16) |
         (index < kPythonMaxIndex ? index : kPythonMaxIndex);
}
inline bool IsPythonKey(uint64_t key) {
  return (key & (kRangeKeyBit | kGpuKeyBit | kPythonKeyBit)) == (kRangeKeyBit | kPythonKeyBit);
}
inline bool IsPythonLineKey(uint64_t key) { return IsPythonKey(key) && (key & kPythonLineBit) != 0; }
inline uint64_t PythonKeyCodeId(uint64_t key) { return (key >> 16) & kPythonCodeIdMask; }
inline uint32_t PythonKeyIndex(uint64_t key) { return static_cast<uint32_t>(key & kPythonMaxIndex); }
inline bool IsRangeKey(uint64_t key) { return (key & (kRangeKeyBit | kGpuKeyBit | kPythonKeyBit)) == kRangeKeyBit; }
inline bool IsMarkKey(uint64_t key) {
  return (key & (kRangeKeyBit | kMarkKeyBit | kGpuKeyBit | kPythonKeyBit)) == (kRangeKeyBit | kMarkKeyBit);
}
inline uint32_t RangeNameId(uint64_t key) { return static_cast<uint32_t>(key); }
// A GPU operation placeholder (`op` is a cct::GpuOpKind) and, below it, a
// kernel named by the runtime's kernel-name id.
inline uint64_t MakeGpuOpKey(uint8_t op) { return kRangeKeyBit | kGpuKeyBit | op; }
inline uint64_t MakeKernelKey(uint32_t name_id) { return kRangeKeyBit | kGpuKeyBit | kMarkKeyBit | name_id; }
inline bool IsGpuKey(uint64_t key) { return (key & (kRangeKeyBit | kGpuKeyBit)) == (kRangeKeyBit | kGpuKeyBit); }
inline bool IsKernelKey(uint64_t key) {
  return (key & (kRangeKeyBit | kGpuKeyBit | kMarkKeyBit)) == (kRangeKeyBit | kGpuKeyBit | kMarkKeyBit);
}
inline uintptr_t KeyAddress(uint64_t key) { return static_cast<uintptr_t>(key & kAddressMask); }
// A path that starts with this key was not unwound to the thread's start:
// the unwind was cut (too deep, unsafe moment); the builder shows it under
// "<partial call path>".
inline constexpr uint64_t kPartialKey = 1;
// The leaf of a path whose stack was deeper than --max-depth: the path holds
// the outermost frames (it reached the thread's start), the innermost ones
// are dropped; the builder shows "<truncated stack>" there.
inline constexpr uint64_t kTruncatedKey = 2;
inline bool IsAddressKey(uint64_t key) {
  return (key & kRangeKeyBit) == 0 && key != kPartialKey && key != kTruncatedKey;
}

class SampleTrie {
 public:
  using NodeIndex = uint32_t;
  static constexpr NodeIndex kRoot = 0;
  static constexpr size_t kChunkNodes = size_t{1} << 14;
  static constexpr size_t kMaxChunks = 1024;  // 16 Mi nodes per thread
  static constexpr NodeIndex kNoIndex = UINT32_MAX;

  SampleTrie() = default;
  SampleTrie(const SampleTrie&) = delete;
  SampleTrie& operator=(const SampleTrie&) = delete;

  // Records one sample: `keys` root first, `depth` of them; adds `time_ns` and
  // `samples` (one sample; 0 for time that no sample saw, such as a thread's
  // time after its last sample) to the leaf. Returns false when the trie is
  // full or memory could not be mapped (the caller counts the sample as
  // lost). Async-signal-safe.
  bool AddSample(const uint64_t* keys, int depth, int64_t time_ns, uint32_t samples = 1);
  // The same, returning the leaf's index (kNoIndex on failure).
  NodeIndex AddSampleAt(const uint64_t* keys, int depth, int64_t time_ns, uint32_t samples = 1);
  // Adds to node n, an index AddSampleAt returned. Async-signal-safe.
  void AddToNode(NodeIndex n, int64_t time_ns, uint32_t samples);

  // Forgets everything (a forked child starts empty). Not signal-safe; the
  // caller makes sure no sample is being recorded.
  void Reset();

  // --- reader side
  size_t size() const { return count_.load(std::memory_order_acquire); }
  uint64_t key(NodeIndex n) const { return Chunk(n)->key[n % kChunkNodes]; }
  NodeIndex parent(NodeIndex n) const { return Chunk(n)->parent[n % kChunkNodes]; }
  int64_t time_ns(NodeIndex n) const {
    return std::atomic_ref<int64_t>(Chunk(n)->time_ns[n % kChunkNodes]).load(std::memory_order_relaxed);
  }
  uint32_t samples(NodeIndex n) const {
    return std::atomic_ref<uint32_t>(Chunk(n)->samples[n % kChunkNodes]).load(std::memory_order_relaxed);
  }
  size_t MappedBytes() const;

 private:
  struct NodeChunk {
    uint64_t key[kChunkNodes];
    uint32_t parent[kChunkNodes];
    uint32_t samples[kChunkNodes];
    int64_t time_ns[kChunkNodes];
  };
  NodeChunk* Chunk(NodeIndex n) const {
    return chunks_.load(std::memory_order_acquire)[n / kChunkNodes].load(std::memory_order_acquire);
  }
  NodeIndex FindOrAdd(NodeIndex parent, uint64_t key);  // kNoIndex on failure
  bool GrowIndex();
  static uint64_t Hash(NodeIndex parent, uint64_t key);

  static constexpr int kCacheDepth = 512;

  // The chunk table is mapped with the first sample, not with the trie: a
  // thread's state holds several tries, most never written, and zeroing
  // their tables at every thread's registration cost page faults on each.
  // Published before count_ leaves 0, so readers that saw size() > 0 see it.
  std::atomic<std::atomic<NodeChunk*>*> chunks_{nullptr};
  std::atomic<size_t> count_{0};
  uint32_t* index_ = nullptr;  // slots hold node index + 1; 0 = empty
  size_t index_capacity_ = 0;  // a power of two
  // The previous sample's path: consecutive samples share most of their
  // stack, so the common prefix needs no hash lookups.
  uint64_t last_keys_[kCacheDepth];
  NodeIndex last_nodes_[kCacheDepth];
  int last_depth_ = 0;
};

}  // namespace collector
