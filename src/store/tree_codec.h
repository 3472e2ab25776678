// TreeCodec: a Tree as a few flat byte sections, and back.
//
// Pure functions, no I/O: the store writes each section as one (chunked)
// LMDB value and reads it back with one copy out of the memory map. Nodes are
// renumbered in preorder on the way out, so a subtree is a contiguous id
// range in every stored tree. Layouts are in docs/format.md (format 1).
// Decoding validates every length, index and checksum: damaged input yields
// kCorrupt, never a crash. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"

namespace store {

enum class SectionKind : uint8_t {
  kStrings = 1,
  kFrames = 2,
  kNodes = 3,
  kMetrics = 4,
  kValues = 5,      // one per additive or summary metric (exclusive values); arg = metric id
  kIterations = 6,  // per-iteration values (iteration_codec.h)
  // 7 is run files' run record (run_file.cc), never stored in a database.
  kTrace = 8,       // the run's events in time order (trace_codec.h)
  kInclusiveValues = 9,  // a summary metric's stored inclusive values (format 3); arg = metric id
};

struct Section {
  SectionKind kind;
  uint16_t arg = 0;
  std::string payload;  // without the header; Frame()/Unframe() add and check it
};

// Encodes a tree. Optionally returns, for every tree node, its stored id.
std::vector<Section> EncodeTree(const cct::Tree& tree, std::vector<cct::NodeId>* stored_ids = nullptr);

// Decodes sections (any order) into a tree. Sections of other kinds
// (iterations) are ignored.
cct::Result<cct::Tree> DecodeTree(const std::vector<Section>& sections);

// A section's payload as the pieces it is stored in (a database's chunks,
// viewed in LMDB's memory map), checksum already verified. Decoding these
// copies each byte once, from the map into the tree's arrays, where joining
// the chunks into a Section first copied a 10^7-node tree's 150 MB twice.
struct SectionPieces {
  SectionKind kind;
  uint16_t arg = 0;
  std::vector<std::string_view> pieces;  // borrowed: valid while their transaction is open
};
cct::Result<cct::Tree> DecodeTree(const std::vector<SectionPieces>& sections);

// Decodes the metrics section (kind 4) alone, into an empty registry.
cct::Status DecodeMetricTable(std::string_view payload, cct::MetricRegistry& metrics);

// A section's stored form: a 24-byte header (magic, kind, arg, length,
// CRC-32) followed by the payload.
std::string FrameSection(const Section& section);
cct::Result<Section> UnframeSection(std::string_view stored);
inline constexpr size_t kSectionHeaderSize = 24;

// For readers that assemble a payload from chunks without an extra copy:
// the header alone, then the payload's checksum.
struct SectionHeader {
  SectionKind kind;
  uint16_t arg;
  uint64_t length;  // payload bytes
  uint32_t crc;
};
cct::Result<SectionHeader> ParseSectionHeader(std::string_view stored);
cct::Status VerifySection(const Section& section, uint32_t crc);

// The CRC-32 (zlib's) the store and the raw GPU dumps check records with.
uint32_t Crc32(std::string_view data);
// The CRC-32 of what `crc` was computed over followed by `data`.
uint32_t Crc32Extend(uint32_t crc, std::string_view data);

// Little-endian flat column helpers shared by the section codecs and the
// raw GPU dumps (collector/gpu/gpu_raw_dump.h).
class ByteWriter {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Raw(&v, 2); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void F64(double v) { Raw(&v, 8); }
  void Bytes(std::string_view s) { out_.append(s); }
  // A string with its length (u32) first.
  void String(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    Bytes(s);
  }
  template <class T>
  void Array(const std::vector<T>& v) {
    Raw(v.data(), v.size() * sizeof(T));
  }
  // LEB128: 7 bits a byte, low bits first (1 byte below 128, at most 10).
  void Varint(uint64_t v) {
    char buf[10];
    size_t n = 0;
    for (; v >= 0x80; v >>= 7) buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    buf[n++] = static_cast<char>(v);
    out_.append(buf, n);
  }
  // Signed values near 0 as small varints (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...).
  void Zigzag(int64_t v) { Varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void Reserve(size_t n) { out_.reserve(n); }
  size_t size() const { return out_.size(); }
  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

// The fixed-width reads of a reader, over its ReadRaw(void*, n) (false
// past the end) and remaining(): ByteReader over one buffer, and the tree
// decoder's reader over a payload stored in pieces (tree_codec.cc). Each
// refuses, before allocating, what the rest of the input cannot hold.
template <class Reader>
class FixedReads {
 public:
  bool U8(uint8_t& v) { return Raw(&v, 1); }
  bool U16(uint16_t& v) { return Raw(&v, 2); }
  bool U32(uint32_t& v) { return Raw(&v, 4); }
  bool U64(uint64_t& v) { return Raw(&v, 8); }
  bool F64(double& v) { return Raw(&v, 8); }
  template <class T>
  bool Array(std::vector<T>& v, size_t count) {
    if (count > self().remaining() / sizeof(T)) return false;
    v.resize(count);
    return Raw(v.data(), count * sizeof(T));
  }
  bool Bytes(std::string& s, size_t count) {
    if (count > self().remaining()) return false;
    s.resize(count);
    return Raw(s.data(), count);
  }

 private:
  Reader& self() { return static_cast<Reader&>(*this); }
  bool Raw(void* p, size_t n) { return self().ReadRaw(p, n); }
};

class ByteReader : public FixedReads<ByteReader> {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  // The next `count` bytes without copying them.
  bool View(std::string_view& v, uint64_t count) {
    if (count > remaining()) return false;
    v = in_.substr(pos_, count);
    pos_ += count;
    return true;
  }
  // A string written by ByteWriter::String.
  bool String(std::string_view& v) {
    uint32_t n = 0;
    return U32(n) && View(v, n);
  }
  // A varint written by ByteWriter::Varint. Refuses truncated ones, those
  // above 64 bits and overlong ones (a needless final 0 byte): every value
  // has one encoding, so a damaged byte cannot hide in padding.
  bool Varint(uint64_t& v) {
    if (pos_ < in_.size() && static_cast<unsigned char>(in_[pos_]) < 0x80) {  // the common 1-byte case
      v = static_cast<unsigned char>(in_[pos_++]);
      return true;
    }
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64 && pos_ < in_.size(); shift += 7) {
      const auto b = static_cast<unsigned char>(in_[pos_++]);
      if (shift == 63 && b > 1) return false;
      r |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) {
        v = r;
        return b != 0 || shift == 0;
      }
    }
    return false;
  }
  bool Zigzag(int64_t& v) {
    uint64_t u = 0;
    if (!Varint(u)) return false;
    v = static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
    return true;
  }
  // A count of entries of at least `min_size` bytes each: refuses counts the
  // rest of the input cannot hold (so no huge allocation on damaged input).
  bool Count(uint32_t& n, size_t min_size) { return U32(n) && n <= remaining() / min_size; }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  friend class FixedReads<ByteReader>;
  bool ReadRaw(void* p, size_t n) {  // inline: decoders call it once per field
    if (n > remaining()) return false;
    if (n > 0) std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace store
