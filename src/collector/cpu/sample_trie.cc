// SIGNAL-HANDLER CODE (AddSample and its callees): async-signal-safe; see the
// header.
#include "collector/cpu/sample_trie.h"

#include <sys/mman.h>

#include <cstring>

#include "collector/core/pages.h"

namespace collector {

uint64_t SampleTrie::Hash(NodeIndex parent, uint64_t key) {
  uint64_t h = key * 0x9E3779B97F4A7C15ull ^ (uint64_t{parent} + 0x632BE59BD9B4E019ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

bool SampleTrie::GrowIndex() {
  const size_t capacity = index_capacity_ ? index_capacity_ * 2 : 4096;
  auto* index = static_cast<uint32_t*>(MapZeroedPages(capacity * sizeof(uint32_t)));
  if (!index) return false;
  const size_t n = count_.load(std::memory_order_relaxed);
  for (NodeIndex i = 1; i < n; ++i) {
    size_t slot = Hash(parent(i), key(i)) & (capacity - 1);
    while (index[slot]) slot = (slot + 1) & (capacity - 1);
    index[slot] = i + 1;
  }
  if (index_) munmap(index_, index_capacity_ * sizeof(uint32_t));
  index_ = index;
  index_capacity_ = capacity;
  return true;
}

SampleTrie::NodeIndex SampleTrie::FindOrAdd(NodeIndex parent_node, uint64_t k) {
  const size_t n = count_.load(std::memory_order_relaxed);
  if ((n + 1) * 2 > index_capacity_ && !GrowIndex()) return kNoIndex;
  size_t slot = Hash(parent_node, k) & (index_capacity_ - 1);
  while (const uint32_t s = index_[slot]) {
    const NodeIndex i = s - 1;
    if (key(i) == k && parent(i) == parent_node) return i;
    slot = (slot + 1) & (index_capacity_ - 1);
  }
  if (n >= kChunkNodes * kMaxChunks) return kNoIndex;
  std::atomic<NodeChunk*>* table = chunks_.load(std::memory_order_relaxed);
  NodeChunk* chunk = table[n / kChunkNodes].load(std::memory_order_relaxed);
  if (!chunk) {
    chunk = static_cast<NodeChunk*>(MapZeroedPages(sizeof(NodeChunk)));
    if (!chunk) return kNoIndex;
    table[n / kChunkNodes].store(chunk, std::memory_order_release);
  }
  chunk->key[n % kChunkNodes] = k;
  chunk->parent[n % kChunkNodes] = parent_node;
  index_[slot] = static_cast<uint32_t>(n) + 1;
  count_.store(n + 1, std::memory_order_release);  // publishes the node to readers
  return static_cast<NodeIndex>(n);
}

bool SampleTrie::AddSample(const uint64_t* keys, int depth, int64_t time_ns_delta, uint32_t samples) {
  return AddSampleAt(keys, depth, time_ns_delta, samples) != kNoIndex;
}

SampleTrie::NodeIndex SampleTrie::AddSampleAt(const uint64_t* keys, int depth, int64_t time_ns_delta,
                                              uint32_t samples) {
  if (count_.load(std::memory_order_relaxed) == 0) {
    // Node 0 is the root; the chunk table and its first chunk are mapped on
    // the first sample (a Reset keeps the table).
    std::atomic<NodeChunk*>* table = chunks_.load(std::memory_order_relaxed);
    if (!table) {
      table = static_cast<std::atomic<NodeChunk*>*>(MapZeroedPages(kMaxChunks * sizeof(std::atomic<NodeChunk*>)));
      if (!table) return kNoIndex;
      chunks_.store(table, std::memory_order_release);
    }
    auto* chunk = static_cast<NodeChunk*>(MapZeroedPages(sizeof(NodeChunk)));
    if (!chunk) return kNoIndex;
    table[0].store(chunk, std::memory_order_release);
    count_.store(1, std::memory_order_release);
  }
  NodeIndex node = kRoot;
  int i = 0;
  // Reuse the previous sample's nodes for the common prefix.
  const int cached = last_depth_ < depth ? last_depth_ : depth;
  while (i < cached && last_keys_[i] == keys[i]) node = last_nodes_[i++];
  for (; i < depth; ++i) {
    node = FindOrAdd(node, keys[i]);
    if (node == kNoIndex) {
      last_depth_ = 0;
      return kNoIndex;
    }
    if (i < kCacheDepth) {
      last_keys_[i] = keys[i];
      last_nodes_[i] = node;
    }
  }
  last_depth_ = depth < kCacheDepth ? depth : kCacheDepth;
  AddToNode(node, time_ns_delta, samples);
  return node;
}

void SampleTrie::AddToNode(NodeIndex node, int64_t time_ns_delta, uint32_t samples) {
  NodeChunk* chunk = Chunk(node);
  std::atomic_ref<int64_t> t(chunk->time_ns[node % kChunkNodes]);
  t.store(t.load(std::memory_order_relaxed) + time_ns_delta, std::memory_order_relaxed);
  std::atomic_ref<uint32_t> s(chunk->samples[node % kChunkNodes]);
  s.store(s.load(std::memory_order_relaxed) + samples, std::memory_order_relaxed);
}

void SampleTrie::Reset() {
  if (std::atomic<NodeChunk*>* table = chunks_.load(std::memory_order_relaxed)) {
    // Chunks are mapped in order as nodes are added, so only the first ones
    // can be set: the rest of the table is never touched (in a forked child
    // every page written here is a copy).
    const size_t used = (count_.load(std::memory_order_relaxed) + kChunkNodes - 1) / kChunkNodes;
    for (size_t i = 0; i < used && i < kMaxChunks; ++i) {
      if (NodeChunk* chunk = table[i].load(std::memory_order_relaxed)) munmap(chunk, sizeof(NodeChunk));
      table[i].store(nullptr, std::memory_order_relaxed);
    }
  }
  if (index_) munmap(index_, index_capacity_ * sizeof(uint32_t));
  index_ = nullptr;
  index_capacity_ = 0;
  last_depth_ = 0;
  count_.store(0, std::memory_order_release);
}

size_t SampleTrie::MappedBytes() const {
  const std::atomic<NodeChunk*>* table = chunks_.load(std::memory_order_acquire);
  if (!table) return 0;
  size_t chunks = 0;
  for (size_t i = 0; i < kMaxChunks; ++i)
    if (table[i].load(std::memory_order_relaxed)) ++chunks;
  return chunks * sizeof(NodeChunk) + kMaxChunks * sizeof(std::atomic<NodeChunk*>) +
         index_capacity_ * sizeof(uint32_t);
}

}  // namespace collector
