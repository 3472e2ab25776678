// Frames: what a calling-context-tree node stands for.
//
// A frame is a kind plus name, module, file and line where they apply. Frames
// are interned per tree (FrameTable), so a node stores one 32-bit FrameId and
// equal frames compare by id. The numeric values of FrameKind and the flag
// bits are part of the store format (docs/format.md); append, never reorder.
// Tables are owned by their Tree; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "cct/flat_index.h"
#include "cct/prefetch.h"
#include "cct/string_table.h"

namespace cct {

using FrameId = uint32_t;

enum class FrameKind : uint8_t {
  kRoot = 0,
  kThread = 1,
  kFunction = 2,  // CPU procedure (possibly an inlined instance, see kFrameInlined)
  kNvtx = 3,      // NVTX range; name is "domain::message" or bare for the default domain
  kGpuOp = 4,     // placeholder for a GPU operation: "<gpu kernel>", "<gpu copyin>", ...
  kKernel = 5,    // device function
  kLine = 6,      // source statement: where samples landed inside the parent function
  kUnknown = 7,   // "<partial call path>": the unwind failed above this point
  kLoop = 8,      // loop construct (HPCToolkit imports)
};
inline constexpr int kFrameKindCount = 9;

std::string_view FrameKindName(FrameKind kind);
std::optional<FrameKind> ParseFrameKind(std::string_view name);

// Frame flag bits.
inline constexpr uint8_t kFrameInlined = 1;  // function frame produced by inlining

// The GPU operation placeholders of the design.
enum class GpuOpKind : uint8_t { kKernel, kCopyIn, kCopyOut, kCopy, kMemset, kAlloc, kFree, kSync };
std::string_view GpuOpPlaceholder(GpuOpKind kind);  // "<gpu kernel>", ...

inline constexpr std::string_view kRootName = "<root>";
inline constexpr std::string_view kPartialCallPathName = "<partial call path>";

struct Frame {
  FrameKind kind = FrameKind::kFunction;
  uint8_t flags = 0;
  StringId name = 0;
  StringId module = 0;
  StringId file = 0;
  uint32_t line = 0;

  bool operator==(const Frame&) const = default;
};

class FrameTable {
 public:
  FrameId Intern(const Frame& frame);
  FrameId Find(const Frame& frame) const;  // FlatIndex::kNone when absent
  Frame Get(FrameId id) const {
    return Frame{kind_[id], flags_[id], name_[id], module_[id], file_[id], line_[id]};
  }
  FrameKind kind(FrameId id) const { return kind_[id]; }
  StringId name(FrameId id) const { return name_[id]; }
  // Asks for the entry kind() and name() read (a hint).
  void Prefetch(FrameId id) const {
    cct::Prefetch(kind_.data() + id);
    cct::Prefetch(name_.data() + id);
  }
  size_t size() const { return kind_.size(); }
  void Reserve(size_t n);

  // Replaces the table with deserialized frames; the index is rebuilt lazily.
  void Assign(std::vector<Frame> frames);
  size_t MemoryBytes() const;

 private:
  static uint64_t Hash(const Frame& f);
  void EnsureIndex() const;

  std::vector<FrameKind> kind_;
  std::vector<uint8_t> flags_;
  std::vector<StringId> name_, module_, file_;
  std::vector<uint32_t> line_;
  mutable FlatIndex index_;
  mutable bool indexed_ = true;
};

}  // namespace cct
