// FlatIndex: an open-addressing hash index over ids whose keys live elsewhere.
//
// Interning tables (strings, frames, tree children, sparse metric columns)
// keep their keys in compact arrays; this index maps a key's hash to the id
// that holds it, so each entry costs 8 bytes per slot instead of a node-based
// map's 40+. The caller supplies the equality test against its own arrays.
// Not thread-safe; owned by the table that uses it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace cct {

// 64-bit mixing (splitmix64 finalizer): cheap and good enough for ids.
inline uint64_t MixHash(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

inline uint64_t HashCombine(uint64_t seed, uint64_t v) { return MixHash(seed ^ (v + 0x9e3779b97f4a7c15ULL)); }

// FNV-1a over 8-byte words, then mixed; strings in profiles are short.
inline uint64_t HashBytes(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0x100000001b3ULL;
  return MixHash(h);
}

class FlatIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // Returns the id whose key equals the probe, or kNone. `eq(id)` compares.
  template <class Eq>
  uint32_t Find(uint64_t hash, Eq&& eq) const {
    if (slots_.empty()) return kNone;
    const uint32_t h = Fold(hash);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id == kNone) return kNone;
      if (s.hash == h && eq(s.id)) return s.id;
    }
  }

  // Adds an id known not to be present.
  void Insert(uint64_t hash, uint32_t id) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    Place(Slot{id, Fold(hash)});
    ++size_;
  }

  void Reserve(size_t n) {
    while (n * 4 > slots_.size() * 3) Grow();
  }
  void Clear() {
    slots_.clear();
    slots_.shrink_to_fit();
    size_ = 0;
    mask_ = 0;
  }
  size_t size() const { return size_; }
  size_t MemoryBytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  // 32 bits of hash per slot both place the entry (capacity stays below 2^32)
  // and filter probes before the caller's equality test.
  struct Slot {
    uint32_t id = kNone;
    uint32_t hash = 0;
  };
  static uint32_t Fold(uint64_t hash) { return static_cast<uint32_t>(hash ^ (hash >> 32)); }

  void Place(Slot slot) {
    for (size_t i = slot.hash & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].id == kNone) {
        slots_[i] = slot;
        return;
      }
    }
  }

  void Grow() {
    const size_t cap = slots_.empty() ? 16 : slots_.size() * 2;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    for (const Slot& s : old)
      if (s.id != kNone) Place(s);
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
  size_t mask_ = 0;
};

}  // namespace cct
