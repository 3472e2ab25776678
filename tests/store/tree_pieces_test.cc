// Reading a tree straight from its stored chunks: a payload in pieces cut
// anywhere (fields straddling two pieces) decodes as the joined payload
// does, truncated pieces are damage, and a checksum continues across pieces.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "store/database.h"
#include "store/tree_codec.h"
#include "tests/test_util.h"

using namespace cct;

namespace {

// A chain-and-fan tree with a dense metric and a sparse one.
Tree PiecesTree(size_t nodes) {
  Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const MetricId bytes = t.metrics().RegisterStandard("gxcopy:h2d").value();
  std::mt19937 rng(7);
  std::vector<NodeId> ids{kRootNode};
  for (size_t i = 1; i < nodes; ++i) {
    const NodeId parent = ids[i < 4 ? 0 : (rng() % 4 == 0 ? rng() % ids.size() : ids.size() - 1)];
    const NodeId n = t.InternChild(parent, t.InternFrame(FrameKind::kFunction, "f" + std::to_string(rng() % 500)));
    ids.push_back(n);
    t.AddValue(n, cpu, static_cast<double>(1 + rng() % 1000));
    if (rng() % 10 == 0) t.AddValue(n, bytes, static_cast<double>(rng() % 4096));
  }
  return t;
}

void PiecesCheckSame(const Tree& a, const Tree& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.metrics().size() == b.metrics().size());
  for (NodeId n = 0; n < a.size(); ++n) {
    REQUIRE(a.parent(n) == b.parent(n));
    REQUIRE(a.name(n) == b.name(n));
    for (MetricId m = 0; m < a.metrics().size(); ++m) REQUIRE(a.Value(n, m) == b.Value(n, m));
  }
}

}  // namespace

TEST_CASE("tree codec: a payload in pieces cut anywhere decodes as the whole payload does") {
  const Tree t = PiecesTree(2000);
  const std::vector<store::Section> sections = store::EncodeTree(t);
  auto whole = store::DecodeTree(sections);
  REQUIRE(whole.ok());
  for (size_t cut : {1, 3, 5, 7, 4096}) {
    CAPTURE(cut);
    std::vector<store::SectionPieces> pieces;
    for (const store::Section& s : sections) {
      store::SectionPieces p{s.kind, s.arg, {}};
      const std::string_view payload = s.payload;
      for (size_t off = 0; off < payload.size(); off += cut) p.pieces.push_back(payload.substr(off, cut));
      pieces.push_back(std::move(p));
    }
    auto back = store::DecodeTree(pieces);
    REQUIRE(back.ok());
    PiecesCheckSame(*whole, *back);
    // The last byte of the nodes section missing: damage, not a crash.
    for (store::SectionPieces& p : pieces) {
      if (p.kind != store::SectionKind::kNodes) continue;
      std::string_view& last = p.pieces.back();
      last.remove_suffix(1);
    }
    CHECK(store::DecodeTree(pieces).status().code() == ErrorCode::kCorrupt);
  }
}

TEST_CASE("store checksum: Crc32Extend over pieces is the Crc32 of their concatenation") {
  std::string data(100000, '\0');
  std::mt19937 rng(3);
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t cut : {1, 17, 4096, 65536}) {
    uint32_t crc = 0;
    for (size_t off = 0; off < data.size(); off += cut) crc = store::Crc32Extend(crc, std::string_view(data).substr(off, cut));
    CHECK(crc == store::Crc32(data));
  }
}

TEST_CASE("database: a tree of several 1 MiB chunks per section reads back from the map") {
  testutil::TempDir dir;
  const std::string path = dir.path() + "/big.db";
  // 300,000 nodes: the node section (8 bytes a node) and the dense values
  // (8 a node, after a 5-byte head, so doubles straddle chunk boundaries)
  // take 3 chunks each.
  const Tree t = PiecesTree(300000);
  store::RunId id = 0;
  {
    auto db = store::Database::Open(path, store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    store::RunMeta meta;
    meta.name = "big";
    REQUIRE((*db)->CreateRun(meta, &t).ok());
    id = meta.id;
  }
  auto db = store::Database::Open(path, store::Database::Mode::kRead);
  REQUIRE(db.ok());
  auto back = (*db)->ReadTree(id);
  REQUIRE(back.ok());
  auto expected = store::DecodeTree(store::EncodeTree(t));  // the same preorder renumbering
  REQUIRE(expected.ok());
  PiecesCheckSame(*expected, *back);
}

TEST_CASE("tree codec: a tree big enough to have its values decoded on a second thread reads back whole; damage is refused") {
  const Tree t = PiecesTree(size_t{1} << 20 | 4096);  // past the size that decodes values beside the nodes
  std::vector<store::Section> sections = store::EncodeTree(t);
  auto back = store::DecodeTree(sections);
  REQUIRE(back.ok());
  REQUIRE(back->size() == t.size());
  REQUIRE(back->metrics().size() == t.metrics().size());
  // Each node's values, found by its path: the stored numbering is preorder.
  double cpu_sum = 0, bytes_sum = 0, cpu_back = 0, bytes_back = 0;
  for (NodeId n = 0; n < t.size(); ++n) cpu_sum += t.Value(n, 0), bytes_sum += t.Value(n, 1);
  for (NodeId n = 0; n < back->size(); ++n) cpu_back += back->Value(n, 0), bytes_back += back->Value(n, 1);
  CHECK(cpu_back == cpu_sum);
  CHECK(bytes_back == bytes_sum);
  const std::vector<store::Section> good = sections;
  for (store::Section& s : sections)
    if (s.kind == store::SectionKind::kValues && s.arg == 0) s.payload.pop_back();  // the dense column cut short
  auto cut = store::DecodeTree(sections);
  CHECK(cut.status().code() == ErrorCode::kCorrupt);
  CHECK(cut.status().message().find("values are truncated") != std::string::npos);
  sections = good;
  for (store::Section& s : sections)
    if (s.kind == store::SectionKind::kValues && s.arg == 1) s.arg = 9;  // a metric the table does not have
  auto unknown = store::DecodeTree(sections);
  CHECK(unknown.status().message().find("unknown metric") != std::string::npos);
}

// A column stored sparse (values on at most two thirds of the nodes: 12
// bytes an entry against 8 a node) but with entries on a third of the nodes
// or more is decoded straight into the dense array SparseColumn itself would
// use. Stored layout of a sparse column: u8 0, u32 count, count u32 node
// ids (increasing), count f64 values.
TEST_CASE("tree codec: a sparse column on a third of the nodes or more decodes dense, value for value; damage is refused") {
  constexpr size_t kNodes = 12000;
  Tree t;
  const MetricId half = t.metrics().RegisterStandard("cputime").value();      // every other node: dense in memory
  const MetricId tenth = t.metrics().RegisterStandard("gxcopy:h2d").value();  // every tenth: stays sparse
  NodeId parent = kRootNode;
  for (size_t i = 1; i < kNodes; ++i) {
    const NodeId n = t.InternChild(i % 7 == 0 ? kRootNode : parent, t.InternFrame(FrameKind::kFunction, "g" + std::to_string(i)));
    if (i % 2 == 0) t.AddValue(n, half, static_cast<double>(i) + 0.25);
    if (i % 10 == 0) t.AddValue(n, tenth, static_cast<double>(i) * 3);
    parent = n;
  }
  std::vector<store::Section> sections = store::EncodeTree(t);
  store::Section* stored = nullptr;
  for (store::Section& s : sections)
    if (s.kind == store::SectionKind::kValues && s.arg == half) stored = &s;
  REQUIRE(stored);
  REQUIRE(stored->payload[0] == 0);  // stored sparse
  uint32_t count = 0;
  std::memcpy(&count, stored->payload.data() + 1, 4);
  REQUIRE(count == (kNodes - 1) / 2);
  REQUIRE(count * 3 >= kNodes);

  // Whole and in pieces cut across the entries.
  for (size_t cut : {size_t{0}, size_t{7}}) {
    CAPTURE(cut);
    std::vector<store::SectionPieces> pieces;
    for (const store::Section& s : sections) {
      store::SectionPieces p{s.kind, s.arg, {}};
      const std::string_view payload = s.payload;
      for (size_t off = 0; off < payload.size(); off += cut ? cut : payload.size()) p.pieces.push_back(payload.substr(off, cut ? cut : payload.size()));
      pieces.push_back(std::move(p));
    }
    auto back = store::DecodeTree(pieces);
    REQUIRE(back.ok());
    CHECK(back->column(half).dense_values() != nullptr);
    CHECK(back->column(tenth).dense_values() == nullptr);
    // Each node's values from its name: g<i> carries i + 0.25 when i is even.
    size_t checked = 0;
    for (NodeId n = 1; n < back->size(); ++n) {
      const size_t i = std::stoul(std::string(back->name(n)).substr(1));
      REQUIRE(back->Value(n, half) == (i % 2 == 0 ? static_cast<double>(i) + 0.25 : 0.0));
      REQUIRE(back->Value(n, tenth) == (i % 10 == 0 ? static_cast<double>(i) * 3 : 0.0));
      ++checked;
    }
    CHECK(checked == kNodes - 1);
  }

  auto corrupt = [&](auto&& damage) {
    std::vector<store::Section> copy = sections;
    for (store::Section& s : copy)
      if (s.kind == store::SectionKind::kValues && s.arg == half) damage(s.payload);
    return store::DecodeTree(copy).status();
  };
  auto id_at = [](std::string& p, size_t i) { return p.data() + 5 + 4 * i; };
  // Two ids swapped, deep into a later block of entries.
  Status swapped = corrupt([&](std::string& p) {
    char tmp[4];
    std::memcpy(tmp, id_at(p, 5000), 4);
    std::memcpy(id_at(p, 5000), id_at(p, 5001), 4);
    std::memcpy(id_at(p, 5001), tmp, 4);
  });
  CHECK(swapped.code() == ErrorCode::kCorrupt);
  CHECK(swapped.message().find("out of order") != std::string::npos);
  // The last id beyond the tree.
  Status beyond = corrupt([&](std::string& p) {
    const uint32_t far = kNodes + 5;
    std::memcpy(id_at(p, count - 1), &far, 4);
  });
  CHECK(beyond.code() == ErrorCode::kCorrupt);
  CHECK(beyond.message().find("beyond the tree") != std::string::npos);
  // The last value cut short.
  Status cut = corrupt([](std::string& p) { p.pop_back(); });
  CHECK(cut.code() == ErrorCode::kCorrupt);
  CHECK(cut.message().find("truncated") != std::string::npos);
}
