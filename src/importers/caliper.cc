// --from caliper: Caliper's JSON outputs, as cali-query writes them.
//
//   json-split (`cali-query -q "... format json-split"`, what Hatchet's
//   CaliperReader reads): {"columns", "column_metadata" ({"is_value"}),
//   "nodes" ({"label", "column", "parent"}), "data" (rows, one value per
//   column; non-value columns hold node indices), and the globals as the
//   other top-level members}.
//   json (`format json`): a list of records {"path": "main/foo", "mpi.rank":
//   0, "sum#time.duration": 1.5, ...}; `format json(object)` wraps them as
//   {"records": [...], "globals": {...}}.
//
// The call path is "source.function#callpath.address" when the file has it
// (sampling), else "path" (annotated regions), as Hatchet chooses. Records
// without a path are dropped, as Hatchet drops them (their count is kept in
// the run's import_globals).
// mpi.rank and the thread id columns become thread nodes ("rank 0 thread
// 1", as the hatchet importer names them). Value columns are additive
// metrics: exclusive time (sum#time.duration, time.duration, ...) becomes
// "time" in ns, inclusive time (inclusive#..., time.inclusive.duration)
// gives exclusive time only where the file has no exclusive column
// (inclusive minus the children's); other sums keep their names.
// Statistics that do not add up (avg#, min#, max#) are not imported.
// Caliper's classic time.duration is in microseconds; a column's stated
// unit ("attribute.unit" in its metadata) or a name ending in ".ns" wins,
// and --unit sets the unit of the --metric column.
//
// Globals (Caliper's cali.* and Adiak's values: user, launchdate, cluster,
// ...) are kept in the run's metadata; Adiak's user and launchdate set the
// run's user and start time, and the globals that are not Caliper's own
// (cali.*, spot.*) and not lists become tags.
//
// Read with nlohmann's SAX parser as the bytes arrive (InputFileBuf: the
// 16 MiB limit on one value, the progress line), never into a DOM of the
// file. Caliper writes json-split's "data" before "columns" and "nodes", so
// the rows are kept until the end, compactly: by column, 4 bytes a cell for
// node indices and 8 for other numbers (CaliColumnCells); records are
// reduced as they arrive to their path and location (interned texts) and
// numeric members. The rest (columns, metadata, globals) is small and kept
// whole. What the tree is made of, and in what order, is what the DOM
// version made: the rows and records are replayed in file order at the end.
// One difference: a json-split document's "records" list (never written by
// Caliper) is not kept among its globals. A malformed row, record or node is
// one line naming it and the byte it starts at, found by reading the file
// again up to it, so that no position is kept per row. A value kept whole
// may nest 1000 levels (nlohmann's dump() recurses per level).
// Memory: the tree, the node map, and about the size of the rows' numbers
// in binary (docs/performance.md, "Caliper import").
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "cct/metric.h"
#include "cct/text.h"
#include "importers/importer.h"

namespace importers {

using cct::Result;
using cct::Status;
using nlohmann::json;

namespace {

// A value column and what it becomes.
struct CaliColumn {
  size_t index = 0;        // json-split: the column's position
  std::string key;         // the column's name in the file
  std::string metric;      // ours
  bool inclusive = false;  // an inclusive value (exclusive derived from it)
  double scale = 1;        // to our unit
  cct::Unit unit = cct::Unit::kCount;
  cct::MetricId id = cct::kNoMetric;
};

bool IsRankColumn(const std::string& c) { return c == "mpi.rank" || c == "rank"; }
// Not measurements: the aggregation's record order (Hatchet's "Node order"),
// and record counts' slots.
bool IsOrderColumn(const std::string& c) {
  return c == "Node order" || c.find("aggregate.slot") != std::string::npos;
}
bool IsThreadColumn(const std::string& c) {
  return c == "thread.id" || c == "omp.thread.id" || c == "pthread.id" || c == "cali.thread.id" ||
         c == "omp.thread_num" || c == "thread";
}

// Caliper's time units, by the names its attributes' "unit" metadata uses.
std::optional<double> TimeScale(const std::string& unit) {
  if (unit == "sec" || unit == "s" || unit == "seconds") return 1e9;
  if (unit == "msec" || unit == "ms") return 1e6;
  if (unit == "usec" || unit == "us" || unit == "microseconds") return 1e3;
  if (unit == "nsec" || unit == "ns" || unit == "nanoseconds") return 1;
  return std::nullopt;
}

// What a value column is: nullopt for statistics we do not import.
Result<std::optional<CaliColumn>> ClassifyColumn(const std::string& key, const std::string& stated_unit,
                                                 const ImportOptions& options) {
  std::string base = key;
  bool inclusive = false;
  // Aggregation prefixes: "sum#", "inclusive#", and cross-run "sum#avg#"
  // (Hatchet's "sum#avg#sum#time.duration"), outermost first.
  for (;;) {
    if (base.starts_with("sum#")) base = base.substr(4);
    else if (base.starts_with("inclusive#")) base = base.substr(10), inclusive = true;
    else if (base.starts_with("avg#") || base.starts_with("min#") || base.starts_with("max#") ||
             base.starts_with("variance#") || base.starts_with("stddev#"))
      return std::optional<CaliColumn>();  // averages and extremes do not add up
    else break;
  }
  CaliColumn c;
  c.key = key;
  c.inclusive = inclusive;
  // Caliper's time attributes, and the aliases reports give them ("time",
  // "Time (E)", "Time (I)", "time (inc)").
  std::string lower = base;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const bool time_name = lower == "time.duration" || lower == "time.duration.ns" ||
                         lower == "time.inclusive.duration" || lower == "time.inclusive.duration.ns" ||
                         lower == "time" || lower == "time (e)" || lower == "time (exc)" || lower == "time (i)" ||
                         lower == "time (inc)";
  if (lower.find("inclusive") != std::string::npos || lower == "time (i)" || lower == "time (inc)")
    c.inclusive = true;
  std::optional<std::string> unit = key == options.metric ? options.unit : std::nullopt;
  if (time_name || TimeScale(stated_unit)) {
    // Caliper's own time columns are "time"; another column in a time unit
    // keeps its name.
    c.metric = time_name ? "time" : key;
    if (!time_name) c.inclusive = false;
    c.unit = cct::Unit::kNanoseconds;
    if (unit) {
      cct::Unit u;
      CCT_RETURN_IF_ERROR(ResolveImportUnit("time", unit, u, c.scale));
      if (u != cct::Unit::kNanoseconds) return cct::InvalidArgument("--unit for " + json(key).dump() + " must be a time unit");
    } else if (auto s = TimeScale(stated_unit)) {
      c.scale = *s;
    } else {
      c.scale = base.ends_with(".ns") ? 1 : 1e3;  // Caliper's classic time.duration: microseconds
    }
    return std::optional<CaliColumn>(c);
  }
  // Other sums keep their names; an inclusive one is a metric of its own.
  c.metric = key;
  c.inclusive = false;
  CCT_RETURN_IF_ERROR(ResolveImportUnit(c.metric, unit, c.unit, c.scale));
  return std::optional<CaliColumn>(c);
}

std::string ScalarText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// --- what is kept of the file while it is read

// A json-split cell in 8 bytes: a double as itself (JSON numbers are
// finite, so the NaN and infinity patterns are free), anything else boxed
// in them: null, an integer of 48 bits, or the index of a value kept whole
// (strings, booleans, larger integers, nested values: rare in "data").
constexpr uint64_t kCaliBoxBase = uint64_t{0xFFF} << 52;
constexpr uint64_t kCaliPayloadMask = (uint64_t{1} << 48) - 1;
enum : uint64_t { kCaliBoxNull = 1, kCaliBoxInt = 2, kCaliBoxOther = 3 };
constexpr int64_t kCaliBoxIntLimit = int64_t{1} << 47;

uint64_t CaliBox(uint64_t tag, uint64_t payload) { return kCaliBoxBase | (tag << 48) | (payload & kCaliPayloadMask); }
bool CaliIsBoxed(uint64_t cell) { return (cell & kCaliBoxBase) == kCaliBoxBase; }
uint64_t CaliBoxTag(uint64_t cell) { return CaliIsBoxed(cell) ? (cell >> 48) & 0xF : 0; }

// A list that grows by chunks of 64 Ki elements: past the first chunk no
// doubling, so at most one chunk more than it holds (a vector's growth can
// take twice its size, and three times while it moves). The first chunk
// grows as a vector does, so a short list stays small.
template <typename T>
class CaliChunked {
 public:
  void push_back(T v) {
    if (chunks_.empty() || chunks_.back().size() == kChunk) {
      chunks_.emplace_back();
      if (chunks_.size() > 1) chunks_.back().reserve(kChunk);
    }
    chunks_.back().push_back(v);
    ++size_;
  }
  T operator[](size_t i) const { return chunks_[i >> kShift][i & (kChunk - 1)]; }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kShift = 16, kChunk = size_t{1} << kShift;
  std::vector<std::vector<T>> chunks_;
  size_t size_ = 0;
};

// One column of the rows: 4 bytes a cell while it holds only node indices
// (non-negative integers below 2^32 - 1) and nulls, as path, rank and
// thread columns do; 8 (boxed cells) from its first other value on.
class CaliColumnCells {
 public:
  void Push(uint64_t cell) {
    if (!boxed_) {
      const uint64_t tag = CaliBoxTag(cell);
      if (tag == kCaliBoxNull) return narrow_.push_back(kNarrowNull);
      if (tag == kCaliBoxInt && (cell & kCaliPayloadMask) < kNarrowNull)
        return narrow_.push_back(static_cast<uint32_t>(cell & kCaliPayloadMask));
      for (size_t i = 0; i < narrow_.size(); ++i) wide_.push_back(Widen(narrow_[i]));
      narrow_ = {};
      boxed_ = true;
    }
    wide_.push_back(cell);
  }
  uint64_t Get(size_t i) const { return boxed_ ? wide_[i] : Widen(narrow_[i]); }

 private:
  static constexpr uint32_t kNarrowNull = UINT32_MAX;
  static uint64_t Widen(uint32_t v) { return v == kNarrowNull ? CaliBox(kCaliBoxNull, 0) : CaliBox(kCaliBoxInt, v); }
  bool boxed_ = false;
  CaliChunked<uint32_t> narrow_;
  CaliChunked<uint64_t> wide_;
};

// Strings seen many times (paths, locations, node columns), each kept once.
class CaliTexts {
 public:
  uint32_t Intern(std::string s) {
    auto [it, added] = ids_.try_emplace(std::move(s), static_cast<uint32_t>(by_id_.size()));
    if (added) by_id_.push_back(&it->first);
    return it->second;
  }
  const std::string& Get(uint32_t id) const { return *by_id_[id]; }
  size_t size() const { return by_id_.size(); }
  void Clear() {
    ids_.clear();
    by_id_.clear();
  }

 private:
  std::unordered_map<std::string, uint32_t> ids_;  // node-based: the keys stay put
  std::vector<const std::string*> by_id_;
};

constexpr uint32_t kCaliAbsent = UINT32_MAX;      // a record without the member
constexpr uint32_t kCaliNull = UINT32_MAX - 1;    // ... with it null
constexpr uint32_t kCaliNotArray = UINT32_MAX;    // a "data" element that is not a row
constexpr uint32_t kCaliNotObject = UINT32_MAX;   // a record that is not an object

// A record of the json layout, reduced as it arrives: its path texts (both
// candidates: which one is the path is known only at the end), location and
// numeric members (rec_keys/rec_values, in key order).
struct CaliRec {
  uint32_t path = kCaliAbsent, callpath = kCaliAbsent, location = 0, values = 0;
};

// A json-split node, reduced: its label, "column" and parent.
struct CaliNode {
  std::string label;
  uint32_t column = 0;
  int64_t parent = -1;
};

// Where a part of the file is kept whole as the DOM would have it.
class CaliDom {
 public:
  void Key(std::string k) { key_ = std::move(k); }
  void Value(json v) {
    if (stack_.empty()) root_ = std::move(v);
    else Place(std::move(v));
  }
  void Open(bool object) {
    json v(object ? json::value_t::object : json::value_t::array);
    if (stack_.empty()) {
      root_ = std::move(v);
      stack_.push_back(&root_);
    } else {
      stack_.push_back(Place(std::move(v)));
    }
  }
  // True when this closes the outermost value.
  bool Close() {
    stack_.pop_back();
    return stack_.empty();
  }
  bool active() const { return !stack_.empty(); }
  size_t depth() const { return stack_.size(); }
  json Take() { return std::move(root_); }

 private:
  json* Place(json v) {
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];  // a repeated key: the last value wins, as in nlohmann's DOM
    slot = std::move(v);
    return &slot;
  }
  json root_;
  std::vector<json*> stack_;
  std::string key_;
};

struct CaliPairHash {
  size_t operator()(const std::pair<uint64_t, uint64_t>& p) const {
    return std::hash<uint64_t>()(p.first * 0x9E3779B97F4A7C15ull ^ p.second);
  }
};

constexpr const char* kCaliCallpath = "source.function#callpath.address";

// The SAX handler: what the file holds, kept compact (see the top comment).
// json-split's data rows arrive before "columns" and "nodes" (Caliper writes
// "data" first), so rows are kept as cells and interpreted at the end;
// records likewise, as the column set is known only after the last one.
// Owns what it keeps; not thread-safe, one per import.
class CaliperSax {
 public:
  enum class Doc : uint8_t { kNone, kScalar, kArray, kObject };
  Doc doc = Doc::kNone;
  // The document's top-level members as the DOM would hold them, but for
  // the lists read as they arrive ("data", "nodes", "records"): an empty
  // list stands for those.
  std::map<std::string, json> members;
  // json-split: the rows. Those as wide as the first row are kept by
  // column; the others ("odd": another width, or kCaliNotArray, not a row at
  // all) with their cells in odd_cells. Values kept whole are in `others`.
  struct OddRow {
    size_t row, first;
    uint32_t size;
  };
  size_t rows = 0;
  std::optional<size_t> width;
  std::vector<CaliColumnCells> columns;
  std::vector<OddRow> odd_rows;
  std::vector<uint64_t> odd_cells;
  std::vector<json> others;
  std::vector<CaliNode> nodes;
  CaliTexts node_columns;
  size_t bad_node = SIZE_MAX;  // the first node that is not an object or has a bad parent
  std::string bad_node_why;
  // json layout: the records, their numeric members (by key id, in the order
  // keys were first seen: the column order), path and location texts.
  CaliChunked<CaliRec> recs;
  CaliChunked<uint32_t> rec_keys;
  CaliChunked<double> rec_values;
  CaliTexts value_keys, texts;
  bool any_callpath = false, any_path = false;
  std::string records_member;  // where the records are: "records", or "" for the document itself
  bool records_streamed = false;  // members["records"] stands for the records read
  Status error = Status::Ok();

  explicit CaliperSax(std::string path) : path_(std::move(path)) {}
  void SetInput(const InputFileBuf* buf) { buf_ = buf; }

  // --- SAX
  bool null() { return Scalar(json()); }
  bool boolean(bool v) { return Scalar(json(v)); }
  bool number_integer(json::number_integer_t v) { return Top() == Ctx::kRow && !Capturing() ? Cell(v) : Scalar(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) {
    return Top() == Ctx::kRow && !Capturing() && v < static_cast<uint64_t>(kCaliBoxIntLimit)
               ? Cell(static_cast<int64_t>(v))
               : Scalar(json(v));
  }
  bool number_float(json::number_float_t v, const std::string&) {
    if (Top() == Ctx::kRow && !Capturing()) {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      row_.push_back(bits);
      return true;
    }
    return Scalar(json(v));
  }
  bool string(std::string& v) { return Scalar(json(std::move(v))); }
  bool binary(json::binary_t&) { return Fail("unexpected binary value"); }
  bool key(std::string& k) {
    if (skip_ > 0) return true;
    if (Capturing()) dom_.Key(std::move(k));
    else key_ = std::move(k);
    return true;
  }
  bool start_object(size_t) { return Open(true); }
  bool end_object() { return Close(); }
  bool start_array(size_t) { return Open(false); }
  bool end_array() { return Close(); }
  bool parse_error(size_t pos, const std::string&, const nlohmann::detail::exception& e) {
    if (error.ok()) error = JsonSyntaxError(path_, pos, e.what());
    return false;
  }

 private:
  enum class Ctx : uint8_t { kTop, kDoc, kData, kRow, kNodes, kNode, kRecords, kRecord };
  // What a value kept whole becomes once complete.
  enum class Target : uint8_t { kMember, kCell, kNodeLabel, kRecordMember };

  bool Fail(const std::string& why) {
    if (error.ok()) error = cct::BadInput(path_ + ": " + why);
    return false;
  }
  Ctx Top() const { return ctx_.empty() ? Ctx::kTop : ctx_.back(); }
  bool Capturing() const { return skip_ > 0 || dom_.active(); }

  bool Cell(int64_t v) {
    if (v >= -kCaliBoxIntLimit && v < kCaliBoxIntLimit) row_.push_back(CaliBox(kCaliBoxInt, static_cast<uint64_t>(v)));
    else CellOther(json(v));
    return true;
  }
  void CellOther(json v) {
    row_.push_back(CaliBox(kCaliBoxOther, others.size()));
    others.push_back(std::move(v));
  }

  void StartCapture(Target t, bool object) {
    target_ = t;
    dom_.Open(object);
  }
  // A value kept whole is turned into text by nlohmann's dump(), which
  // recurses per level: deeper ones would overflow the stack.
  static constexpr size_t kMaxDepth = 1000;
  bool OpenKept(bool object) {
    if (dom_.depth() >= kMaxDepth)
      return Fail("at byte " + std::to_string(buf_ ? buf_->offset() - 1 : 0) + ": a value nested more than " +
                  std::to_string(kMaxDepth) + " levels deep");
    dom_.Open(object);
    return true;
  }
  void Skip() { skip_ = 1; }

  bool Open(bool object) {
    if (skip_ > 0) return ++skip_, true;
    if (dom_.active()) return OpenKept(object);
    switch (Top()) {
      case Ctx::kTop:
        if (object) {
          doc = Doc::kObject;
          ctx_.push_back(Ctx::kDoc);
        } else {
          doc = Doc::kArray;
          StartRecords("");
          ctx_.push_back(Ctx::kRecords);
        }
        return true;
      case Ctx::kDoc:
        // A repeated member replaces the earlier one, as in the DOM.
        if (key_ == "data" || key_ == "nodes" || (key_ == "records" && !object)) {
          members[key_] = object ? json::object() : json::array();
          if (object) return Skip(), true;
          if (key_ == "data") {
            rows = 0, width.reset(), columns.clear(), odd_rows.clear(), odd_cells.clear(), others.clear();
            ctx_.push_back(Ctx::kData);
          } else if (key_ == "nodes") {
            nodes.clear(), node_columns.Clear(), bad_node = SIZE_MAX, bad_node_why.clear();
            ctx_.push_back(Ctx::kNodes);
          } else {
            StartRecords("records");
            records_streamed = true;
            ctx_.push_back(Ctx::kRecords);
          }
          return true;
        }
        if (key_ == "records") records_streamed = false;
        member_key_ = key_;
        StartCapture(Target::kMember, object);
        return true;
      case Ctx::kData:
        if (object) return NotRow(), Skip(), true;
        row_.clear();
        ctx_.push_back(Ctx::kRow);
        return true;
      case Ctx::kRow:
        StartCapture(Target::kCell, object);
        return true;
      case Ctx::kNodes:
        if (!object) {
          NoteBadNode(nodes.size(), " is not an object");
          nodes.emplace_back();
          return Skip(), true;
        }
        nodes.emplace_back();
        nodes.back().column = node_columns.Intern("");
        node_parent_ = json(json::value_t::discarded);
        ctx_.push_back(Ctx::kNode);
        return true;
      case Ctx::kNode:
        if (key_ == "label") return StartCapture(Target::kNodeLabel, object), true;
        if (key_ == "column") nodes.back().column = node_columns.Intern("");
        else if (key_ == "parent") node_parent_ = json::array();  // not an index
        return Skip(), true;
      case Ctx::kRecords:
        if (!object) return recs.push_back(CaliRec{kCaliAbsent, kCaliAbsent, kCaliNotObject, 0}), Skip(), true;
        members_.clear();
        ctx_.push_back(Ctx::kRecord);
        return true;
      case Ctx::kRecord:
        if (key_ == "path" || key_ == kCaliCallpath || IsRankColumn(key_) || IsThreadColumn(key_)) {
          record_key_ = key_;
          StartCapture(Target::kRecordMember, object);
          return true;
        }
        members_.emplace_back(key_, json(json::value_t::discarded));  // not a number
        return Skip(), true;
    }
    return true;
  }

  bool Close() {
    if (skip_ > 0) return --skip_, true;
    if (dom_.active()) {
      if (dom_.Close()) Deliver(dom_.Take());
      return true;
    }
    if (ctx_.empty()) return Fail("unbalanced JSON");
    const Ctx c = ctx_.back();
    ctx_.pop_back();
    switch (c) {
      case Ctx::kRow:
        return EndRow();
      case Ctx::kNode:
        return EndNode(), true;
      case Ctx::kRecord:
        return EndRecord(), true;
      default:
        return true;
    }
  }

  bool Scalar(json v) {
    if (skip_ > 0) return true;
    if (dom_.active()) return dom_.Value(std::move(v)), true;
    switch (Top()) {
      case Ctx::kTop:
        doc = Doc::kScalar;
        return true;
      case Ctx::kDoc:
        if (key_ == "records") records_streamed = false;
        members[key_] = std::move(v);
        return true;
      case Ctx::kData:
        NotRow();
        return true;
      case Ctx::kRow:
        if (v.is_null()) row_.push_back(CaliBox(kCaliBoxNull, 0));
        else CellOther(std::move(v));
        return true;
      case Ctx::kNodes:
        NoteBadNode(nodes.size(), " is not an object");
        nodes.emplace_back();
        return true;
      case Ctx::kNode:
        NodeMember(std::move(v));
        return true;
      case Ctx::kRecords:
        recs.push_back(CaliRec{kCaliAbsent, kCaliAbsent, kCaliNotObject, 0});
        return true;
      case Ctx::kRecord:
        members_.emplace_back(key_, std::move(v));
        return true;
    }
    return true;
  }

  void Deliver(json v) {
    switch (target_) {
      case Target::kMember:
        members[member_key_] = std::move(v);
        break;
      case Target::kCell:
        CellOther(std::move(v));
        break;
      case Target::kNodeLabel:
        nodes.back().label = ScalarText(v);
        break;
      case Target::kRecordMember:
        members_.emplace_back(record_key_, std::move(v));
        break;
    }
  }

  void NotRow() { odd_rows.push_back({rows++, odd_cells.size(), kCaliNotArray}); }
  bool EndRow() {
    if (!width) {
      width = row_.size();
      columns.resize(row_.size());
    }
    if (row_.size() == *width) {
      for (size_t c = 0; c < row_.size(); ++c) columns[c].Push(row_[c]);
    } else {
      if (row_.size() >= kCaliNotArray) return Fail("data[" + std::to_string(rows) + "] has too many values");
      odd_rows.push_back({rows, odd_cells.size(), static_cast<uint32_t>(row_.size())});
      odd_cells.insert(odd_cells.end(), row_.begin(), row_.end());
    }
    ++rows;
    return true;
  }

  void NoteBadNode(size_t i, const std::string& why) {
    if (bad_node == SIZE_MAX) bad_node = i, bad_node_why = why;
  }

  void NodeMember(json v) {
    CaliNode& n = nodes.back();
    if (key_ == "label") n.label = ScalarText(v);
    else if (key_ == "column") n.column = node_columns.Intern(v.is_string() ? v.get<std::string>() : std::string());
    else if (key_ == "parent") node_parent_ = std::move(v);
  }

  void EndNode() {
    const size_t i = nodes.size() - 1;
    const json& p = node_parent_;
    if (p.is_discarded() || p.is_null()) return;
    if (!p.is_number_integer() || p.get<int64_t>() < 0 || p.get<int64_t>() >= static_cast<int64_t>(i))
      NoteBadNode(i, ".parent is not the index of an earlier node");
    else nodes.back().parent = p.get<int64_t>();
  }

  void StartRecords(std::string member) {
    records_member = std::move(member);
    recs = {}, rec_keys = {}, rec_values = {}, value_keys.Clear(), texts.Clear();
    any_callpath = any_path = false;
  }

  // A record's members in key order, the last of a repeated key, as the
  // DOM (a std::map) would give them.
  void EndRecord() {
    std::stable_sort(members_.begin(), members_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    CaliRec rec;
    std::string location;
    for (size_t i = 0; i < members_.size(); ++i) {
      if (i + 1 < members_.size() && members_[i + 1].first == members_[i].first) continue;
      const std::string& k = members_[i].first;
      const json& v = members_[i].second;
      if (k == "path" || k == kCaliCallpath) {
        (k == "path" ? any_path : any_callpath) = true;
        (k == "path" ? rec.path : rec.callpath) = v.is_null() ? kCaliNull : texts.Intern(ScalarText(v));
      }
      if (IsRankColumn(k)) location = "rank " + ScalarText(v) + (location.empty() ? "" : " " + location);
      else if (IsThreadColumn(k)) location += (location.empty() ? "" : " ") + ("thread " + ScalarText(v));
      else if (v.is_number() && !IsOrderColumn(k)) {
        rec_keys.push_back(value_keys.Intern(k));
        rec_values.push_back(v.get<double>());
        ++rec.values;
      }
    }
    rec.location = texts.Intern(std::move(location));
    recs.push_back(rec);
  }

  std::string path_;
  const InputFileBuf* buf_ = nullptr;  // for the position in messages
  std::vector<Ctx> ctx_;
  std::string key_, member_key_, record_key_;
  size_t skip_ = 0;  // > 0: inside a value nobody reads (its depth)
  CaliDom dom_;
  Target target_ = Target::kMember;
  std::vector<uint64_t> row_;  // the row being read
  json node_parent_;
  std::vector<std::pair<std::string, json>> members_;  // the record being read
};

// Finds where element `index` of a list starts: the top-level member
// `member`, or the document itself when `member` is empty. Run again over
// the file only for an error's message, so that nothing is kept per row.
class CaliElementFinder {
 public:
  CaliElementFinder(const InputFileBuf& buf, std::string member, size_t index)
      : buf_(buf), member_(std::move(member)), index_(index) {}
  std::optional<uint64_t> found;
  bool scalar = false;  // found is where the parser stood before the element (a scalar)

  bool null() { return Scalar(); }
  bool boolean(bool) { return Scalar(); }
  bool number_integer(json::number_integer_t) { return Scalar(); }
  bool number_unsigned(json::number_unsigned_t) { return Scalar(); }
  bool number_float(json::number_float_t, const std::string&) { return Scalar(); }
  bool string(std::string&) { return Scalar(); }
  bool binary(json::binary_t&) { return false; }
  bool key(std::string& k) {
    if (depth_ == 1) key_ = std::move(k);
    return Seen();
  }
  bool start_object(size_t) { return Open(); }
  bool end_object() { return --depth_, Seen(); }
  bool start_array(size_t) {
    if ((depth_ == 0 && member_.empty()) || (depth_ == 1 && key_ == member_)) list_depth_ = depth_ + 1, count_ = 0;
    return Open();
  }
  bool end_array() {
    if (depth_-- == list_depth_) list_depth_ = 0;
    return Seen();
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  // At an element's '[' or '{' the parser has taken just that byte; at a
  // scalar, the scalar and for a number the byte after it, so a scalar's
  // start is found from where the parser stood at the event before it.
  bool Element(uint64_t at, bool is_scalar) {
    if (count_++ != index_) return true;
    found = at;
    scalar = is_scalar;
    return false;  // done: stop reading
  }
  bool Open() {
    if (list_depth_ != 0 && depth_ == list_depth_ && !Element(buf_.offset() - 1, false)) return false;
    ++depth_;
    return Seen();
  }
  bool Scalar() {
    if (list_depth_ != 0 && depth_ == list_depth_ && !Element(before_, true)) return false;
    return Seen();
  }
  bool Seen() {
    before_ = buf_.offset();
    return true;
  }

  const InputFileBuf& buf_;
  std::string member_, key_;
  size_t index_, depth_ = 0, list_depth_ = 0, count_ = 0;
  uint64_t before_ = 0;
};

std::optional<uint64_t> CaliElementByte(const std::string& path, const std::string& member, size_t index) {
  auto buf = InputFileBuf::Open(path, PieceLimit{PieceKind::kJsonTokens, kMaxLineBytes});
  if (!buf.ok()) return std::nullopt;
  CaliElementFinder finder(**buf, member, index);
  std::istream in(buf->get());
  try {
    nlohmann::json::sax_parse(in, &finder);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!finder.found || !finder.scalar) return finder.found;
  // Past the separators between the event before and the scalar.
  uint64_t at = *finder.found;
  std::ifstream f(path, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  for (char c; f.get(c) && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '[');) ++at;
  return at;
}

class CaliperReader {
 public:
  CaliperReader(std::string path, const ImportOptions& options) : path_(std::move(path)), options_(options) {}

  Result<ImportResult> Read() {
    {
      CCT_ASSIGN_OR_RETURN(auto buf, InputFileBuf::Open(path_, PieceLimit{PieceKind::kJsonTokens, kMaxLineBytes}));
      std::istream in(buf.get());
      sax_.SetInput(buf.get());
      bool parsed = false;
      try {
        parsed = nlohmann::json::sax_parse(in, &sax_);
      } catch (const std::exception& e) {  // nlohmann on input it cannot adapt; never expected
        return cct::BadInput(path_ + ": " + cct::ElideMiddle(e.what(), 200, true));
      }
      CCT_RETURN_IF_ERROR(buf->status());  // a read error or an overlong token ended the stream
      if (!sax_.error.ok()) return sax_.error;
      if (!parsed) return cct::BadInput(path_ + ": not valid JSON");
    }  // the progress line ends with the reading
    using Doc = CaliperSax::Doc;
    const auto& m = sax_.members;
    if (sax_.doc == Doc::kObject && m.count("columns") && m.count("data") && m.count("nodes")) {
      CCT_RETURN_IF_ERROR(ReadSplit());
    } else if (sax_.doc == Doc::kArray) {
      CCT_RETURN_IF_ERROR(ReadRecords());
    } else if (sax_.doc == Doc::kObject && m.count("records") && m.at("records").is_array()) {
      if (auto g = m.find("globals"); g != m.end() && g->second.is_object())
        for (auto it = g->second.begin(); it != g->second.end(); ++it) Global(it.key(), *it);
      CCT_RETURN_IF_ERROR(ReadRecords());
    } else {
      return cct::BadInput(path_ + ": not Caliper JSON (expected json-split's columns/nodes/data or a list of "
                                   "records)");
    }
    if (result_.records == 0 && result_.skipped == 0) return cct::BadInput(path_ + ": no records");
    if (dropped_ > 0)
      result_.globals["import_records_without_path"] = std::to_string(dropped_);
    if (result_.skipped > 0) result_.first_skip += AtByte(first_skip_list_, first_skip_index_, " (at byte ", ")");
    return std::move(result_);
  }

 private:
  void Global(const std::string& key, const json& v) {
    const std::string text = ScalarText(v);
    result_.globals[key] = text;
    if (key == "user" && v.is_string()) result_.user = text;
    if (key == "launchdate") {
      // Adiak's launchdate: seconds since the epoch (a number, or its text).
      double s = 0;
      if (v.is_number()) s = v.get<double>();
      else if (v.is_string()) {
        try {
          s = std::stod(text);
        } catch (...) {
          s = 0;
        }
      }
      // Up to 2262, where nanoseconds since the epoch leave int64 (a later
      // one, as the fuzzer wrote, is no start time).
      if (s > 0 && s < 9.2e9) result_.start_time_ns = static_cast<int64_t>(s * 1e9);
    }
    // Lists (Adiak's libraries, cmdline: "[a,b,...]") stay in the globals
    // only: as tags they would be long and never grouped by.
    const bool list = v.is_array() || v.is_object() || (!text.empty() && text.front() == '[' && text.back() == ']');
    if (!key.starts_with("cali.") && !key.starts_with("spot.") && !list &&
        (v.is_string() || v.is_number() || v.is_boolean()))
      result_.tags[key] = cct::CutToBytes(text, 256);
  }

  Status RegisterColumns() {
    // Exclusive time wins over inclusive time: inclusive columns then only
    // serve to derive it where no exclusive column exists.
    bool exclusive_time = false;
    for (const CaliColumn& c : columns_)
      if (c.metric == "time" && !c.inclusive) exclusive_time = true;
    std::vector<CaliColumn> kept;
    for (CaliColumn& c : columns_) {
      if (c.metric == "time" && c.inclusive && exclusive_time) continue;
      // Two columns for the same metric (time.duration and
      // sum#time.duration): the first is used.
      bool dup = false;
      for (const CaliColumn& k : kept) dup |= k.metric == c.metric;
      if (dup) continue;
      cct::MetricDesc d;
      d.name = c.metric;
      d.unit = c.unit;
      d.description = "imported from Caliper (" + c.key + ")";
      CCT_ASSIGN_OR_RETURN(c.id, result_.tree.metrics().Register(d));
      kept.push_back(c);
    }
    columns_ = std::move(kept);
    if (columns_.empty()) return cct::BadInput(path_ + ": no value columns to import (sums or times)");
    return Status::Ok();
  }

  cct::NodeId Base(const std::string& location) {
    if (location.empty()) return cct::kRootNode;
    return result_.tree.InternChild(cct::kRootNode, result_.tree.InternFrame(cct::FrameKind::kThread, location));
  }

  // Adds a record's values at `node` (under `base`).
  void AddValues(cct::NodeId node, cct::NodeId base, const std::vector<std::optional<double>>& values) {
    cct::Tree& t = result_.tree;
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (!values[i]) continue;
      const double v = *values[i] * columns_[i].scale;
      t.AddValue(node, columns_[i].id, v);
      if (columns_[i].inclusive && t.parent(node) != base && node != base) t.AddValue(t.parent(node), columns_[i].id, -v);
    }
  }

  // How element `index` of list `list` is named in messages.
  static std::string Where(const std::string& list, size_t index) {
    return (list == "records" || list.empty() ? "record " + std::to_string(index) : list + "[" + std::to_string(index) + "]");
  }
  // "<before>N<after>" with the byte element `index` of `list` starts at,
  // or "" when it cannot be found again (the file changed).
  std::string AtByte(const std::string& list, size_t index, const char* before, const char* after) const {
    const std::optional<uint64_t> at = CaliElementByte(path_, list, index);
    return at ? before + std::to_string(*at) + after : std::string();
  }
  // A malformed element: "PATH: at byte N: data[3]<tail>".
  Status BadAt(const std::string& list, size_t index, const std::string& tail) const {
    return cct::BadInput(path_ + ": " + AtByte(list, index, "at byte ", ": ") + Where(list, index) + tail);
  }
  // A malformed row or record: the error, or skipped with --skip-bad-lines.
  Status Bad(const std::string& list, size_t index, const std::string& why) {
    if (!options_.skip_bad_lines) return BadAt(list, index, ": " + why);
    if (result_.skipped++ == 0) {
      result_.first_skip = Where(list, index) + ": " + why;
      first_skip_list_ = list;
      first_skip_index_ = index;
    }
    return Status::Ok();
  }

  json Cell(uint64_t cell) const {
    if (!CaliIsBoxed(cell)) {
      double d;
      std::memcpy(&d, &cell, sizeof d);
      return json(d);
    }
    const uint64_t payload = cell & kCaliPayloadMask;
    switch ((cell >> 48) & 0xF) {
      case kCaliBoxNull:
        return json();
      case kCaliBoxInt: {
        // Sign-extend the 48 bits; the DOM keeps non-negative integers unsigned.
        const int64_t v = static_cast<int64_t>(payload << 16) >> 16;
        return v >= 0 ? json(static_cast<uint64_t>(v)) : json(v);
      }
      default:
        return sax_.others[payload];
    }
  }

  // --- json-split
  Status ReadSplit() {
    const auto& m = sax_.members;
    const json& cols = m.at("columns");
    const json no_meta = json::array();
    const json& meta = m.count("column_metadata") ? m.at("column_metadata") : no_meta;
    if (!cols.is_array() || !m.at("nodes").is_array() || !m.at("data").is_array() || !meta.is_array())
      return cct::BadInput(path_ + ": \"columns\", \"column_metadata\", \"nodes\" and \"data\" must be lists");
    for (const auto& [key, value] : m) {
      // A list of records read as such is not at hand as text (an empty
      // one is: "[]").
      if (key == "records" && sax_.records_streamed && sax_.recs.size() > 0) continue;
      if (key != "data" && key != "columns" && key != "column_metadata" && key != "nodes") Global(key, value);
    }
    std::vector<std::string> names;
    for (size_t i = 0; i < cols.size(); ++i) {
      if (!cols[i].is_string()) return BadAt("columns", i, " is not a string");
      names.push_back(cols[i].get<std::string>());
    }
    auto find = [&](std::string_view n) -> std::optional<size_t> {
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == n) return i;
      return std::nullopt;
    };
    std::optional<size_t> path_col = find(kCaliCallpath);
    if (!path_col) path_col = find("path");
    if (!path_col) return cct::BadInput(path_ + ": no \"path\" or \"source.function#callpath.address\" column");
    std::optional<size_t> rank_col, thread_col;
    std::vector<bool> is_value(names.size(), false);
    for (size_t i = 0; i < names.size(); ++i) {
      const json mi = i < meta.size() ? meta[i] : json::object();
      is_value[i] = mi.is_object() && mi.value("is_value", false);
      if (IsRankColumn(names[i])) rank_col = i;
      else if (IsThreadColumn(names[i])) thread_col = i;
      else if (is_value[i] && !IsOrderColumn(names[i])) {
        std::string unit;
        if (mi.is_object())
          for (const char* k : {"attribute.unit", "unit"})
            if (auto u = mi.find(k); u != mi.end() && u->is_string()) unit = u->get<std::string>();
        CCT_ASSIGN_OR_RETURN(std::optional<CaliColumn> c, ClassifyColumn(names[i], unit, options_));
        if (c) {
          c->index = i;
          columns_.push_back(*c);
        }
      }
    }
    CCT_RETURN_IF_ERROR(RegisterColumns());
    // Nodes: labels, parents (checked to come first: Caliper writes them so,
    // and it rules out cycles).
    const std::vector<CaliNode>& sn = sax_.nodes;
    if (sax_.bad_node != SIZE_MAX) return BadAt("nodes", sax_.bad_node, sax_.bad_node_why);
    // A rank or thread column holds the value itself (is_value), or the
    // index of the node whose label it is.
    auto label_of = [&](size_t col, const json& v, std::string& out) {
      if (!is_value[col] && v.is_number_integer() && v.get<int64_t>() >= 0 &&
          v.get<int64_t>() < static_cast<int64_t>(sn.size()))
        out = sn[static_cast<size_t>(v.get<int64_t>())].label;
      else out = ScalarText(v);
    };
    // (location, caliper node) -> our node.
    // Locations are numbered (loc_base: each one's thread node); the rank
    // and thread cells of a row name theirs, remembered for numbers (the
    // labels come from dump() otherwise, per row).
    std::unordered_map<std::string, uint32_t> loc_of_text;
    std::vector<cct::NodeId> loc_base;
    std::unordered_map<std::pair<uint64_t, uint64_t>, uint32_t, CaliPairHash> loc_of_cells;
    std::unordered_map<std::pair<uint64_t, uint64_t>, cct::NodeId, CaliPairHash> ours;  // (location, caliper node)
    const std::string& path_name = names[*path_col];
    size_t odd = 0, even = 0;  // the next odd row, the next row kept by column
    std::vector<int64_t> up;
    std::vector<std::optional<double>> values(columns_.size());
    for (size_t r = 0; r < sax_.rows; ++r) {
      const CaliperSax::OddRow* o = odd < sax_.odd_rows.size() && sax_.odd_rows[odd].row == r ? &sax_.odd_rows[odd++] : nullptr;
      const uint32_t size = o ? o->size : static_cast<uint32_t>(*sax_.width);
      const size_t at = o ? o->first : even++;
      if (size != names.size()) {
        CCT_RETURN_IF_ERROR(Bad("data", r, "a row of " + std::to_string(size == kCaliNotArray ? 0 : size) +
                                               " values for " + std::to_string(names.size()) + " columns"));
        continue;
      }
      auto row = [&](size_t c) { return Cell(o ? sax_.odd_cells[at + c] : sax_.columns[c].Get(at)); };
      const json pv = row(*path_col);
      if (pv.is_null()) {
        ++dropped_;
        continue;
      }
      if (!pv.is_number_integer() || pv.get<int64_t>() < 0 || pv.get<int64_t>() >= static_cast<int64_t>(sn.size())) {
        CCT_RETURN_IF_ERROR(Bad("data", r, "the " + path_name + " value is not a node index"));
        continue;
      }
      const uint64_t rank_cell = rank_col ? (o ? sax_.odd_cells[at + *rank_col] : sax_.columns[*rank_col].Get(at)) : 0;
      const uint64_t thread_cell =
          thread_col ? (o ? sax_.odd_cells[at + *thread_col] : sax_.columns[*thread_col].Get(at)) : 0;
      const bool numbers = CaliBoxTag(rank_cell) != kCaliBoxOther && CaliBoxTag(thread_cell) != kCaliBoxOther;
      auto known = numbers ? loc_of_cells.find({rank_cell, thread_cell}) : loc_of_cells.end();
      uint32_t loc;
      if (known != loc_of_cells.end()) {
        loc = known->second;
      } else {
        std::string location, rank, thread;
        if (rank_col) {
          const json v = Cell(rank_cell);
          if (!v.is_null()) label_of(*rank_col, v, rank), location = "rank " + rank;
        }
        if (thread_col) {
          const json v = Cell(thread_cell);
          if (!v.is_null()) label_of(*thread_col, v, thread), location += (location.empty() ? "" : " ") + ("thread " + thread);
        }
        auto [it, added] = loc_of_text.try_emplace(location, static_cast<uint32_t>(loc_base.size()));
        if (added) loc_base.push_back(Base(location));
        loc = it->second;
        if (numbers) loc_of_cells.emplace(std::make_pair(rank_cell, thread_cell), loc);
      }
      const cct::NodeId base = loc_base[loc];
      // Walk up the path's own nodes to the first one already made, then
      // down. A parent of another attribute's column is above the path.
      const int64_t leaf = pv.get<int64_t>();
      const uint32_t column = sn[static_cast<size_t>(leaf)].column;
      auto in_path = [&](int64_t k) { return k >= 0 && sn[static_cast<size_t>(k)].column == column; };
      auto key = [&](int64_t k) { return std::make_pair(uint64_t{loc}, static_cast<uint64_t>(k)); };
      up.clear();
      for (int64_t k = leaf; in_path(k) && !ours.count(key(k)); k = sn[static_cast<size_t>(k)].parent) up.push_back(k);
      for (size_t j = up.size(); j-- > 0;) {
        const int64_t k = up[j];
        const int64_t p = sn[static_cast<size_t>(k)].parent;
        const cct::NodeId parent = in_path(p) ? ours.at(key(p)) : base;
        const std::string& label = sn[static_cast<size_t>(k)].label;
        ours[key(k)] = result_.tree.InternChild(
            parent, result_.tree.InternFrame(cct::FrameKind::kFunction, label.empty() ? "UNKNOWN" : label));
      }
      std::fill(values.begin(), values.end(), std::nullopt);
      bool bad = false;
      for (size_t i = 0; i < columns_.size(); ++i) {
        const json v = row(columns_[i].index);
        if (v.is_null()) continue;
        if (!v.is_number()) {
          CCT_RETURN_IF_ERROR(Bad("data", r, "column " + cct::ElideMiddle(json(columns_[i].key).dump(), 80) + " is not a number"));
          bad = true;
          break;
        }
        values[i] = v.get<double>();
      }
      if (bad) continue;
      AddValues(ours.at(key(leaf)), base, values);
      ++result_.records;
    }
    return Status::Ok();
  }

  // --- json: records with the path as "a/b/c"
  Status ReadRecords() {
    // Columns: every numeric member of any record but the path, rank and
    // thread, in the order first seen (the ids of value_keys).
    const std::string path_key = sax_.any_callpath ? kCaliCallpath : sax_.any_path ? "path" : "";
    if (path_key.empty() && sax_.recs.size() > 0)
      return cct::BadInput(path_ + ": no record has a \"path\" or \"source.function#callpath.address\"");
    for (uint32_t k = 0; k < sax_.value_keys.size(); ++k) {
      CCT_ASSIGN_OR_RETURN(std::optional<CaliColumn> c, ClassifyColumn(sax_.value_keys.Get(k), "", options_));
      if (c) {
        c->index = k;
        columns_.push_back(*c);
      }
    }
    CCT_RETURN_IF_ERROR(RegisterColumns());
    std::vector<int64_t> column_of(sax_.value_keys.size(), -1);
    for (size_t i = 0; i < columns_.size(); ++i) column_of[columns_[i].index] = static_cast<int64_t>(i);
    const std::string& list = sax_.records_member;
    size_t first_value = 0;
    for (size_t r = 0; r < sax_.recs.size(); ++r) {
      const CaliRec rec = sax_.recs[r];
      const size_t values_at = first_value;
      first_value += rec.values;
      if (rec.location == kCaliNotObject) {
        CCT_RETURN_IF_ERROR(Bad(list, r, "not an object"));
        continue;
      }
      const uint32_t pv = path_key == "path" ? rec.path : rec.callpath;
      if (pv == kCaliAbsent || pv == kCaliNull) {
        ++dropped_;
        continue;
      }
      const std::string& location = sax_.texts.Get(rec.location);
      const cct::NodeId base = Base(location);
      cct::NodeId node = base;
      const std::string& p = sax_.texts.Get(pv);
      for (size_t start = 0; start <= p.size();) {
        size_t slash = p.find('/', start);
        if (slash == std::string::npos) slash = p.size();
        if (slash > start)
          node = result_.tree.InternChild(
              node, result_.tree.InternFrame(cct::FrameKind::kFunction, std::string_view(p).substr(start, slash - start)));
        start = slash + 1;
      }
      if (node == base) {
        CCT_RETURN_IF_ERROR(Bad(list, r, "an empty " + path_key));
        continue;
      }
      std::vector<std::optional<double>> values(columns_.size());
      for (size_t j = values_at; j < values_at + rec.values; ++j)
        if (const int64_t c = column_of[sax_.rec_keys[j]]; c >= 0) values[static_cast<size_t>(c)] = sax_.rec_values[j];
      AddValues(node, base, values);
      ++result_.records;
    }
    return Status::Ok();
  }

  std::string path_;
  const ImportOptions& options_;
  CaliperSax sax_{path_};
  ImportResult result_;
  std::vector<CaliColumn> columns_;
  size_t dropped_ = 0;
  std::string first_skip_list_;
  size_t first_skip_index_ = 0;
};

}  // namespace

Result<ImportResult> ImportCaliper(const std::string& path, const ImportOptions& options) {
  // nlohmann's typed accessors throw on unexpected types; the file is what
  // is malformed, so that is bad input, and nothing escapes this module.
  try {
    CaliperReader reader(path, options);
    return reader.Read();
  } catch (const json::exception& e) {
    return cct::BadInput(path + ": unexpected JSON structure (" + cct::ElideMiddle(e.what(), 200, true) + ")");
  }
}

Result<ImportReport> ImportCaliperRun(const ImportRequest& request) {
  return ImportNewRun(request, "caliper", &ImportCaliper);
}

}  // namespace importers
