// StringTable: interned strings, addressed by dense StringId.
//
// All characters live in one arena with an offset array, so a table of a
// million names is two allocations and can be written to (and read back from)
// the store as two flat columns. Id 0 is always the empty string.
// Owned by its Tree; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cct/flat_index.h"
#include "cct/prefetch.h"

namespace cct {

using StringId = uint32_t;

class StringTable {
 public:
  StringTable();

  StringId Intern(std::string_view s);
  // Id of an interned string, or FlatIndex::kNone.
  StringId Find(std::string_view s) const;
  std::string_view Get(StringId id) const {
    return std::string_view(chars_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  size_t size() const { return offsets_.size() - 1; }
  // Hints ahead of Get(id): its offsets, then (once they are in cache) its text.
  void PrefetchOffsets(StringId id) const { cct::Prefetch(offsets_.data() + id); }
  void Prefetch(StringId id) const { cct::Prefetch(chars_.data() + offsets_[id]); }

  // Flat access for serialization: offsets has size()+1 entries.
  const std::vector<uint64_t>& offsets() const { return offsets_; }
  const std::string& chars() const { return chars_; }
  // Replaces the contents with serialized columns; the index is rebuilt lazily.
  // Returns false when the columns are inconsistent.
  bool Assign(std::vector<uint64_t> offsets, std::string chars);

  size_t MemoryBytes() const;

 private:
  void EnsureIndex() const;

  std::string chars_;
  std::vector<uint64_t> offsets_;
  mutable FlatIndex index_;
  mutable bool indexed_ = true;
};

}  // namespace cct
