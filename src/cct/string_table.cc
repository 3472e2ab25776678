#include "cct/string_table.h"

namespace cct {

StringTable::StringTable() : offsets_{0} { Intern(""); }

void StringTable::EnsureIndex() const {
  if (indexed_) return;
  index_.Clear();
  index_.Reserve(size());
  for (StringId id = 0; id < size(); ++id) index_.Insert(HashBytes(Get(id)), id);
  indexed_ = true;
}

StringId StringTable::Find(std::string_view s) const {
  EnsureIndex();
  return index_.Find(HashBytes(s), [&](uint32_t id) { return Get(id) == s; });
}

StringId StringTable::Intern(std::string_view s) {
  EnsureIndex();
  const uint64_t h = HashBytes(s);
  const uint32_t found = index_.Find(h, [&](uint32_t id) { return Get(id) == s; });
  if (found != FlatIndex::kNone) return found;
  const StringId id = static_cast<StringId>(size());
  chars_.append(s);
  offsets_.push_back(chars_.size());
  index_.Insert(h, id);
  return id;
}

bool StringTable::Assign(std::vector<uint64_t> offsets, std::string chars) {
  if (offsets.empty() || offsets.front() != 0 || offsets.back() != chars.size()) return false;
  for (size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] < offsets[i - 1]) return false;
  if (offsets.size() < 2 || offsets[1] != 0) return false;  // id 0 must be ""
  offsets_ = std::move(offsets);
  chars_ = std::move(chars);
  index_.Clear();
  indexed_ = false;
  return true;
}

size_t StringTable::MemoryBytes() const {
  return chars_.capacity() + offsets_.capacity() * sizeof(uint64_t) + index_.MemoryBytes();
}

}  // namespace cct
