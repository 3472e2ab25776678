#include "store/tree_codec.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cct/beside.h"
#include "cct/tree_ops.h"

namespace store {

static_assert(std::endian::native == std::endian::little, "the store format is little-endian");

using cct::Corrupt;
using cct::FrameId;
using cct::MetricId;
using cct::NodeId;
using cct::Result;
using cct::Status;
using cct::Tree;

namespace {

constexpr uint32_t kSectionMagic = 0x43455343;  // "CSEC"
constexpr uint16_t kSectionVersion = 1;
enum : uint8_t { kValuesSparse = 0, kValuesDense = 1 };

std::string EncodeStrings(const cct::StringTable& strings) {
  ByteWriter w;
  w.U32(static_cast<uint32_t>(strings.size()));
  std::vector<uint32_t> offsets(strings.offsets().begin(), strings.offsets().end());
  w.Array(offsets);
  w.Bytes(strings.chars());
  return w.Take();
}

std::string EncodeFrames(const cct::FrameTable& frames) {
  const size_t n = frames.size();
  std::vector<uint8_t> kind(n), flags(n);
  std::vector<uint32_t> name(n), module(n), file(n), line(n);
  for (FrameId f = 0; f < n; ++f) {
    const cct::Frame fr = frames.Get(f);
    kind[f] = static_cast<uint8_t>(fr.kind);
    flags[f] = fr.flags;
    name[f] = fr.name;
    module[f] = fr.module;
    file[f] = fr.file;
    line[f] = fr.line;
  }
  ByteWriter w;
  w.U32(static_cast<uint32_t>(n));
  w.Array(kind);
  w.Array(flags);
  w.Array(name);
  w.Array(module);
  w.Array(file);
  w.Array(line);
  return w.Take();
}

std::string EncodeMetrics(const cct::MetricRegistry& metrics) {
  nlohmann::json arr = nlohmann::json::array();
  for (MetricId m = 0; m < metrics.size(); ++m) {
    const cct::MetricDesc& d = metrics.Get(m);
    nlohmann::json j = {{"name", d.name},
                        {"unit", cct::UnitName(d.unit)},
                        {"kind", cct::MetricKindName(d.kind)},
                        {"description", d.description}};
    if (!d.formula.empty()) j["formula"] = d.formula;
    arr.push_back(std::move(j));
  }
  return arr.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// One column's values, as stored ids (defined below, beside their decoder).
std::string EncodeValues(const Tree& tree, const cct::SparseColumn& column, const std::vector<NodeId>& new_id);

}  // namespace

uint32_t Crc32(std::string_view data) { return Crc32Extend(0, data); }

std::vector<Section> EncodeTree(const Tree& tree, std::vector<NodeId>* stored_ids) {
  const cct::Children children = cct::BuildChildren(tree);
  const std::vector<NodeId> order = cct::Preorder(tree, children);
  std::vector<NodeId> new_id(tree.size());
  for (NodeId i = 0; i < order.size(); ++i) new_id[order[i]] = i;

  std::vector<Section> out;
  out.push_back({SectionKind::kStrings, 0, EncodeStrings(tree.strings())});
  out.push_back({SectionKind::kFrames, 0, EncodeFrames(tree.frames())});
  {
    std::vector<uint32_t> parent(tree.size()), frame(tree.size());
    for (NodeId i = 0; i < order.size(); ++i) {
      const NodeId old = order[i];
      parent[i] = old == cct::kRootNode ? cct::kNoNode : new_id[tree.parent(old)];
      frame[i] = tree.frame_id(old);
    }
    ByteWriter w;
    w.U32(static_cast<uint32_t>(tree.size()));
    w.Array(parent);
    w.Array(frame);
    out.push_back({SectionKind::kNodes, 0, w.Take()});
  }
  out.push_back({SectionKind::kMetrics, 0, EncodeMetrics(tree.metrics())});
  // Additive metrics store exclusive values; summary metrics exclusive and
  // inclusive ones (never derived from each other).
  for (MetricId m = 0; m < tree.metrics().size(); ++m) {
    const cct::MetricKind kind = tree.metrics().Get(m).kind;
    if (kind == cct::MetricKind::kDerived) continue;
    out.push_back({SectionKind::kValues, m, EncodeValues(tree, tree.column(m), new_id)});
    if (kind == cct::MetricKind::kSummary)
      out.push_back({SectionKind::kInclusiveValues, m, EncodeValues(tree, tree.inclusive_column(m), new_id)});
  }
  if (stored_ids) *stored_ids = std::move(new_id);
  return out;
}

namespace {

std::string EncodeValues(const Tree& tree, const cct::SparseColumn& column, const std::vector<NodeId>& new_id) {
  std::vector<std::pair<NodeId, double>> entries;
  column.ForEach([&](NodeId n, double v) {
    if (v != 0 && n < tree.size()) entries.emplace_back(new_id[n], v);
  });
  std::sort(entries.begin(), entries.end());
  // Merge duplicates (a column never has them, but stay exact if it did).
  size_t k = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (k > 0 && entries[k - 1].first == entries[i].first) entries[k - 1].second += entries[i].second;
    else entries[k++] = entries[i];
  }
  entries.resize(k);
  ByteWriter w;
  if (entries.size() * 12 > tree.size() * 8) {
    std::vector<double> dense(tree.size(), 0.0);
    for (auto& [n, v] : entries) dense[n] = v;
    w.U8(kValuesDense);
    w.U32(static_cast<uint32_t>(tree.size()));
    w.Array(dense);
  } else {
    std::vector<uint32_t> nodes(k);
    std::vector<double> values(k);
    for (size_t i = 0; i < k; ++i) {
      nodes[i] = entries[i].first;
      values[i] = entries[i].second;
    }
    w.U8(kValuesSparse);
    w.U32(static_cast<uint32_t>(k));
    w.Array(nodes);
    w.Array(values);
  }
  return w.Take();
}

// ByteReader's fixed-width reads over a payload in pieces: a field may
// straddle two pieces (chunks are cut at 1 MiB, whatever the layout).
class PieceReader : public FixedReads<PieceReader> {
 public:
  explicit PieceReader(const std::vector<std::string_view>& pieces) : pieces_(pieces) {
    for (std::string_view p : pieces) remaining_ += p.size();
  }
  size_t remaining() const { return remaining_; }
  // The next `n` bytes into `p` (null: skipped).
  bool Read(void* p, size_t n) {
    if (n > remaining_) return false;
    remaining_ -= n;
    auto* out = static_cast<char*>(p);
    while (n > 0) {
      const std::string_view piece = pieces_[index_];
      const size_t take = std::min(n, piece.size() - offset_);
      if (out) {
        std::memcpy(out, piece.data() + offset_, take);
        out += take;
      }
      n -= take;
      offset_ += take;
      if (offset_ == piece.size()) {
        ++index_;
        offset_ = 0;
      }
    }
    return true;
  }

 private:
  friend class FixedReads<PieceReader>;
  bool ReadRaw(void* p, size_t n) { return Read(p, n); }
  const std::vector<std::string_view>& pieces_;
  size_t index_ = 0, offset_ = 0, remaining_ = 0;
};

Status DecodeStrings(const std::vector<std::string_view>& payload, cct::StringTable& strings) {
  PieceReader r(payload);
  uint32_t count = 0;
  std::vector<uint32_t> offsets32;
  if (!r.U32(count) || count == UINT32_MAX || !r.Array(offsets32, static_cast<size_t>(count) + 1))
    return Corrupt("string table is truncated");
  std::string chars;
  if (!r.Bytes(chars, r.remaining())) return Corrupt("string table is truncated");
  std::vector<uint64_t> offsets(offsets32.begin(), offsets32.end());
  if (!strings.Assign(std::move(offsets), std::move(chars))) return Corrupt("string table offsets are invalid");
  return Status::Ok();
}

Status DecodeFrames(const std::vector<std::string_view>& payload, size_t string_count, cct::FrameTable& frames) {
  PieceReader r(payload);
  uint32_t n = 0;
  std::vector<uint8_t> kind, flags;
  std::vector<uint32_t> name, module, file, line;
  if (!r.U32(n) || !r.Array(kind, n) || !r.Array(flags, n) || !r.Array(name, n) || !r.Array(module, n) ||
      !r.Array(file, n) || !r.Array(line, n))
    return Corrupt("frame table is truncated");
  std::vector<cct::Frame> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (kind[i] >= cct::kFrameKindCount) return Corrupt("frame " + std::to_string(i) + " has an unknown kind");
    if (name[i] >= string_count || module[i] >= string_count || file[i] >= string_count)
      return Corrupt("frame " + std::to_string(i) + " refers to a string beyond the table");
    out[i] = cct::Frame{static_cast<cct::FrameKind>(kind[i]), flags[i], name[i], module[i], file[i], line[i]};
  }
  if (n == 0 || out[0].kind != cct::FrameKind::kRoot) return Corrupt("frame table lacks the root frame");
  frames.Assign(std::move(out));
  return Status::Ok();
}

Status DecodeMetrics(std::string_view payload, cct::MetricRegistry& metrics) {
  nlohmann::json arr = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (!arr.is_array()) return Corrupt("metric table is not valid JSON");
  for (const auto& j : arr) {
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || !j.contains("unit") ||
        !j["unit"].is_string())
      return Corrupt("metric table entry is malformed");
    cct::MetricDesc d;
    d.name = j["name"].get<std::string>();
    const auto unit = cct::ParseUnit(j["unit"].get<std::string>());
    if (!unit) return Corrupt("metric '" + d.name + "' has an unknown unit");
    d.unit = *unit;
    const auto kind = cct::ParseMetricKind(j.value("kind", std::string("additive")));
    if (!kind) return Corrupt("metric '" + d.name + "' has an unknown kind");
    d.kind = *kind;
    d.description = j.value("description", std::string());
    d.formula = j.value("formula", std::string());
    auto id = metrics.Register(d);
    if (!id.ok()) return Corrupt("metric table: " + id.status().message());
  }
  return Status::Ok();
}

// Whether a sparse column's node ids (the next `m`, after the id `*last`;
// -1 before the first) are below `nodes` and increasing, as they are
// stored: anything else is damage.
bool IdsInOrder(const uint32_t* ids, size_t m, size_t nodes, int64_t* last) {
  for (size_t i = 0; i < m; ++i) {
    if (ids[i] >= nodes || static_cast<int64_t>(ids[i]) <= *last) return false;
    *last = ids[i];
  }
  return true;
}
constexpr std::string_view kIdsOutOfOrder = "metric values refer to nodes out of order or beyond the tree";

// A values section's column, for a tree of `nodes` nodes.
Result<cct::SparseColumn> DecodeValues(const std::vector<std::string_view>& payload, size_t nodes) {
  PieceReader r(payload);
  uint8_t encoding = 0;
  uint32_t count = 0;
  if (!r.U8(encoding) || !r.U32(count)) return Corrupt("metric values are truncated");
  if (encoding == kValuesDense) {
    std::vector<double> dense;
    if (count != nodes || !r.Array(dense, count)) return Corrupt("dense metric values are truncated");
    return cct::SparseColumn::FromDense(std::move(dense));
  }
  if (encoding == kValuesSparse) {
    // Past a third of the nodes a column is dense in memory (SparseColumn's
    // own rule, and every report wants one value per node): decoded straight
    // into the dense array, a block of entries at a time, instead of into
    // the entries and then the array (at 10^7 nodes, 60 MB of fresh pages
    // fewer for the kernel to clear, and no second pass).
    if (cct::SparseColumn::DenseFor(count, nodes)) {
      if (count > r.remaining() / 12) return Corrupt("sparse metric values are truncated");
      std::vector<double> dense(nodes, 0.0);
      PieceReader values = r;
      values.Read(nullptr, static_cast<size_t>(count) * 4);
      constexpr size_t kBlock = 2048;
      uint32_t ids[kBlock];
      double block[kBlock];
      int64_t last = -1;
      for (size_t done = 0; done < count;) {
        const size_t m = std::min<size_t>(kBlock, count - done);
        if (!r.Read(ids, m * 4) || !values.Read(block, m * 8)) return Corrupt("sparse metric values are truncated");
        if (!IdsInOrder(ids, m, nodes, &last)) return Corrupt(std::string(kIdsOutOfOrder));
        for (size_t i = 0; i < m; ++i) dense[ids[i]] = block[i];
        done += m;
      }
      return cct::SparseColumn::FromDense(std::move(dense));
    }
    std::vector<uint32_t> ids;
    std::vector<double> values;
    if (!r.Array(ids, count) || !r.Array(values, count)) return Corrupt("sparse metric values are truncated");
    int64_t last = -1;
    if (!IdsInOrder(ids.data(), count, nodes, &last)) return Corrupt(std::string(kIdsOutOfOrder));
    return cct::SparseColumn::FromSparse(std::move(ids), std::move(values));
  }
  return Corrupt("metric values have an unknown encoding");
}

const SectionPieces* FindSection(const std::vector<SectionPieces>& sections, SectionKind kind) {
  for (const SectionPieces& s : sections)
    if (s.kind == kind) return &s;
  return nullptr;
}

}  // namespace

Status DecodeMetricTable(std::string_view payload, cct::MetricRegistry& metrics) {
  return DecodeMetrics(payload, metrics);
}

Result<Tree> DecodeTree(const std::vector<Section>& sections) {
  std::vector<SectionPieces> pieces;
  pieces.reserve(sections.size());
  for (const Section& s : sections) pieces.push_back({s.kind, s.arg, {std::string_view(s.payload)}});
  return DecodeTree(pieces);
}

Result<Tree> DecodeTree(const std::vector<SectionPieces>& sections) {
  const SectionPieces* strings = FindSection(sections, SectionKind::kStrings);
  const SectionPieces* frames = FindSection(sections, SectionKind::kFrames);
  const SectionPieces* nodes = FindSection(sections, SectionKind::kNodes);
  const SectionPieces* metrics = FindSection(sections, SectionKind::kMetrics);
  if (!strings || !frames || !nodes || !metrics) return Corrupt("the run's tree is incomplete");
  Tree tree;
  // The values sections need only the node count: with many nodes they are
  // decoded beside the rest.
  uint32_t n = 0;
  PieceReader node_reader(nodes->pieces);
  if (!node_reader.U32(n)) return Corrupt("node table is truncated");
  std::vector<const SectionPieces*> value_sections;
  for (const SectionPieces& s : sections)
    if (s.kind == SectionKind::kValues || s.kind == SectionKind::kInclusiveValues) value_sections.push_back(&s);
  std::vector<Result<cct::SparseColumn>> columns(value_sections.size(), Corrupt("not decoded"));
  Status rest;
  cct::RunBeside(
      n >= cct::kParallelNodes && !value_sections.empty(),
      [&] {
        for (size_t i = 0; i < value_sections.size(); ++i) columns[i] = DecodeValues(value_sections[i]->pieces, n);
      },
      [&] {
        rest = [&]() -> Status {
          CCT_RETURN_IF_ERROR(DecodeStrings(strings->pieces, tree.strings()));
          CCT_RETURN_IF_ERROR(DecodeFrames(frames->pieces, tree.strings().size(), tree.frames()));
          std::vector<uint32_t> parent, frame;
          if (!node_reader.Array(parent, n) || !node_reader.Array(frame, n)) return Corrupt("node table is truncated");
          CCT_RETURN_IF_ERROR(tree.AssignNodes(std::move(parent), std::move(frame)));
          // The metric table is small JSON: one piece, or joined.
          std::string joined;
          std::string_view json = metrics->pieces.size() == 1 ? metrics->pieces.front() : std::string_view();
          if (metrics->pieces.size() > 1) {
            for (std::string_view p : metrics->pieces) joined.append(p);
            json = joined;
          }
          return DecodeMetrics(json, tree.metrics());
        }();
      });
  CCT_RETURN_IF_ERROR(rest);
  for (size_t i = 0; i < value_sections.size(); ++i) {
    const SectionPieces& s = *value_sections[i];
    const bool inclusive = s.kind == SectionKind::kInclusiveValues;
    if (s.arg >= tree.metrics().size()) return Corrupt("values stored for an unknown metric");
    const cct::MetricKind kind = tree.metrics().Get(s.arg).kind;
    if (inclusive ? kind != cct::MetricKind::kSummary : kind == cct::MetricKind::kDerived)
      return Corrupt("values stored for an unknown metric");
    if (!columns[i].ok()) return columns[i].status();
    if (inclusive) tree.SetInclusiveColumn(s.arg, std::move(columns[i]).value());
    else tree.SetColumn(s.arg, std::move(columns[i]).value());
  }
  return tree;
}

std::string FrameSection(const Section& section) {
  ByteWriter w;
  w.U32(kSectionMagic);
  w.U16(kSectionVersion);
  w.U8(static_cast<uint8_t>(section.kind));
  w.U8(0);
  w.U16(section.arg);
  w.U16(0);
  w.U64(section.payload.size());
  w.U32(Crc32(section.payload));
  std::string out = w.Take();
  out.append(section.payload);
  return out;
}

Result<Section> UnframeSection(std::string_view stored) {
  CCT_ASSIGN_OR_RETURN(SectionHeader h, ParseSectionHeader(stored));
  if (h.length != stored.size() - kSectionHeaderSize) return Corrupt("section length does not match its header");
  Section s{h.kind, h.arg, std::string(stored.substr(kSectionHeaderSize))};
  if (Crc32(s.payload) != h.crc) return Corrupt("section checksum mismatch");
  return s;
}

Result<SectionHeader> ParseSectionHeader(std::string_view stored) {
  ByteReader r(stored);
  uint32_t magic = 0, crc = 0;
  uint16_t version = 0, arg = 0, reserved16 = 0;
  uint8_t kind = 0, reserved8 = 0;
  uint64_t length = 0;
  if (!r.U32(magic) || !r.U16(version) || !r.U8(kind) || !r.U8(reserved8) || !r.U16(arg) || !r.U16(reserved16) ||
      !r.U64(length) || !r.U32(crc))
    return Corrupt("section header is truncated");
  if (magic != kSectionMagic) return Corrupt("section header has a bad magic number");
  if (version != kSectionVersion) return Corrupt("section has unknown version " + std::to_string(version));
  return SectionHeader{static_cast<SectionKind>(kind), arg, length, crc};
}

Status VerifySection(const Section& section, uint32_t crc) {
  return Crc32(section.payload) == crc ? Status::Ok() : Corrupt("section checksum mismatch");
}

}  // namespace store
