#include "cct/frame.h"

#include <array>

namespace cct {

namespace {
constexpr std::array<std::string_view, kFrameKindCount> kKindNames = {
    "root", "thread", "function", "nvtx", "gpu-op", "kernel", "line", "unknown", "loop"};
}  // namespace

std::string_view FrameKindName(FrameKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < kKindNames.size() ? kKindNames[i] : "invalid";
}

std::optional<FrameKind> ParseFrameKind(std::string_view name) {
  for (size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == name) return static_cast<FrameKind>(i);
  return std::nullopt;
}

std::string_view GpuOpPlaceholder(GpuOpKind kind) {
  switch (kind) {
    case GpuOpKind::kKernel: return "<gpu kernel>";
    case GpuOpKind::kCopyIn: return "<gpu copyin>";
    case GpuOpKind::kCopyOut: return "<gpu copyout>";
    case GpuOpKind::kCopy: return "<gpu copy>";
    case GpuOpKind::kMemset: return "<gpu memset>";
    case GpuOpKind::kAlloc: return "<gpu alloc>";
    case GpuOpKind::kFree: return "<gpu free>";
    case GpuOpKind::kSync: return "<gpu sync>";
  }
  return "<gpu op>";
}

uint64_t FrameTable::Hash(const Frame& f) {
  uint64_t h = MixHash((static_cast<uint64_t>(f.kind) << 8) | f.flags);
  h = HashCombine(h, f.name);
  h = HashCombine(h, (static_cast<uint64_t>(f.module) << 32) | f.file);
  return HashCombine(h, f.line);
}

void FrameTable::EnsureIndex() const {
  if (indexed_) return;
  index_.Clear();
  index_.Reserve(size());
  for (FrameId id = 0; id < size(); ++id) index_.Insert(Hash(Get(id)), id);
  indexed_ = true;
}

FrameId FrameTable::Find(const Frame& frame) const {
  EnsureIndex();
  return index_.Find(Hash(frame), [&](uint32_t id) { return Get(id) == frame; });
}

FrameId FrameTable::Intern(const Frame& frame) {
  EnsureIndex();
  const uint64_t h = Hash(frame);
  const uint32_t found = index_.Find(h, [&](uint32_t id) { return Get(id) == frame; });
  if (found != FlatIndex::kNone) return found;
  const FrameId id = static_cast<FrameId>(size());
  kind_.push_back(frame.kind);
  flags_.push_back(frame.flags);
  name_.push_back(frame.name);
  module_.push_back(frame.module);
  file_.push_back(frame.file);
  line_.push_back(frame.line);
  index_.Insert(h, id);
  return id;
}

void FrameTable::Reserve(size_t n) {
  kind_.reserve(n);
  flags_.reserve(n);
  name_.reserve(n);
  module_.reserve(n);
  file_.reserve(n);
  line_.reserve(n);
}

void FrameTable::Assign(std::vector<Frame> frames) {
  kind_.clear();
  flags_.clear();
  name_.clear();
  module_.clear();
  file_.clear();
  line_.clear();
  Reserve(frames.size());
  for (const Frame& f : frames) {
    kind_.push_back(f.kind);
    flags_.push_back(f.flags);
    name_.push_back(f.name);
    module_.push_back(f.module);
    file_.push_back(f.file);
    line_.push_back(f.line);
  }
  index_.Clear();
  indexed_ = false;
}

size_t FrameTable::MemoryBytes() const {
  return kind_.capacity() + flags_.capacity() +
         (name_.capacity() + module_.capacity() + file_.capacity() + line_.capacity()) * 4 +
         index_.MemoryBytes();
}

}  // namespace cct
