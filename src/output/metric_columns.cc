#include "output/metric_columns.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <utility>

#include "output/format.h"

namespace output {

using cct::MetricId;
using cct::NodeId;

std::string DisplayName(const cct::Tree& tree, NodeId node) {
  std::string name;
  AppendDisplayName(tree, node, name);
  return name;
}

void AppendDisplayName(const cct::Tree& tree, NodeId node, std::string& out) {
  switch (tree.kind(node)) {
    case cct::FrameKind::kNvtx: out += "[nvtx] "; break;
    case cct::FrameKind::kThread: out += "[thread] "; break;
    default: break;
  }
  out += tree.name(node);
}

struct MetricColumns::CellMemo::Entry {
  uint64_t value_bits = 0;
  uint32_t tag = 0;  // 0: empty; else 1 + (column, kind, ascii)
  std::string text;
};

MetricColumns::CellMemo::CellMemo() = default;
MetricColumns::CellMemo::~CellMemo() = default;
MetricColumns::CellMemo::CellMemo(CellMemo&&) noexcept = default;
MetricColumns::CellMemo& MetricColumns::CellMemo::operator=(CellMemo&&) noexcept = default;

MetricColumns::CellMemo::Entry* MetricColumns::CellMemo::Slot(double v, uint32_t tag) {
  static_assert(kEntries == size_t{1} << 12);
  const uint64_t h = (std::bit_cast<uint64_t>(v) ^ (uint64_t{tag} << 40)) * 0x9e3779b97f4a7c15ull;
  return &entries_[h >> 52];  // the top 12 bits: one of kEntries
}

uint64_t MetricColumns::NextMemoId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

MetricColumns::MetricColumns(cct::NodeValues& values, std::vector<MetricId> ids)
    : tree_(values.tree()), ids_(std::move(ids)) {
  for (MetricId m : ids_) {
    const cct::MetricDesc& d = tree_.metrics().Get(m);
    Source c;
    c.name = d.name;
    c.metric = m;
    c.percent = d.kind == cct::MetricKind::kAdditive;
    c.none_when_zero = !c.percent;
    c.inc = &values.Inclusive(m);
    c.exc = &values.Exclusive(m);
    totals_.push_back((*c.inc)[cct::kRootNode]);
    cols_.push_back(std::move(c));
  }
}

MetricColumns::MetricColumns(const cct::Tree& tree, std::vector<Source> sources, std::vector<std::string> unit_labels)
    : tree_(tree), cols_(std::move(sources)), unit_labels_(std::move(unit_labels)) {
  for (const Source& c : cols_) {
    ids_.push_back(c.metric);
    totals_.push_back((*c.inc)[cct::kRootNode]);
  }
}

const cct::MetricDesc& MetricColumns::desc(size_t i) const { return tree_.metrics().Get(ids_[i]); }
bool MetricColumns::additive(size_t i) const { return cols_[i].percent; }

namespace {

// A ratio (imbalance) in text: two decimals, the unit it was taken at after it.
std::string RatioText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Ratio columns' unit per column, or none.
uint32_t AtOf(const std::vector<uint32_t>* at, size_t i) { return at && i < at->size() ? (*at)[i] : UINT32_MAX; }

}  // namespace

std::string MetricColumns::AtLabel(uint32_t unit) const {
  return unit < unit_labels_.size() ? unit_labels_[unit] : std::string();
}

std::vector<uint32_t> MetricColumns::NodeAt(NodeId n, bool inclusive) const {
  std::vector<uint32_t> at;
  for (const Source& c : cols_) {
    const std::vector<uint32_t>* v = inclusive ? c.inc_at : c.exc_at;
    at.push_back(v ? (*v)[n] : UINT32_MAX);
  }
  return at;
}

// Drop order when names need room: secondary metrics' exclusive values and
// percentages first, then the first metric's percentages, then its exclusive.
std::vector<TextTable::Column> MetricColumns::TextColumns(bool show_exclusive) const {
  std::vector<TextTable::Column> cols;
  for (size_t i = 0; i < cols_.size(); ++i) {
    const bool first = i == 0;
    // One plain metric needs no name over its columns (the totals line has it).
    const bool plain = cols_.size() == 1 && name(i) == desc(i).name;
    cols.push_back({plain ? "inclusive" : name(i), 0});
    cols.push_back({additive(i) ? "%" : "", first ? 4 : 6});
    if (!show_exclusive) continue;
    cols.push_back({plain ? "exclusive" : "excl", first ? 3 : 8});
    cols.push_back({additive(i) ? "%" : "", first ? 5 : 9});
  }
  return cols;
}

// Zeros print blank in text: a tree of mostly empty cells reads faster.
// Cells from per-column accessors, into `cells` (its strings' buffers are
// reused: a streamed tree fills one vector for each of its rows).
template <class Inc, class Exc, class IncAt, class ExcAt>
void MetricColumns::FillTextCells(Inc inc, Exc exc, IncAt inc_at, ExcAt exc_at, bool ascii, bool show_exclusive,
                                  std::vector<std::string>& cells, CellMemo* memo) const {
  cells.resize(cols_.size() * (show_exclusive ? 4 : 2));
  if (memo && memo->owner_ != memo_id_) {
    memo->owner_ = memo_id_;
    memo->entries_.assign(CellMemo::kEntries, CellMemo::Entry{});
  }
  // A cell's text from the memo, or made by `format` and kept there.
  auto remembered = [&](std::string& cell, size_t i, int kind, double v, auto&& format) {
    if (!memo) return void(cell = format());
    const uint32_t tag = 1 + static_cast<uint32_t>((i << 2) | (static_cast<size_t>(kind) << 1) | (ascii ? 1 : 0));
    CellMemo::Entry* e = memo->Slot(v, tag);
    const uint64_t bits = std::bit_cast<uint64_t>(v);
    if (e->tag == tag && e->value_bits == bits) return void(cell = e->text);
    cell = format();
    e->tag = tag;
    e->value_bits = bits;
    e->text = cell;
  };
  auto value = [&](std::string& cell, size_t i, double v, uint32_t at) {
    if (v == 0 || std::isnan(v)) return cell.clear();
    if (!ratio(i)) return remembered(cell, i, 0, v, [&] { return FormatValue(v, desc(i).unit, ascii); });
    const std::string where = AtLabel(at);
    cell = RatioText(v) + (where.empty() ? "" : " (" + where + ")");
  };
  auto percent = [&](std::string& cell, size_t i, double v) {
    if (!additive(i) || v == 0) return cell.clear();
    remembered(cell, i, 1, v, [&] { return FormatPercent(v, totals_[i]); });
  };
  size_t k = 0;
  for (size_t i = 0; i < cols_.size(); ++i) {
    const double in = inc(i);
    value(cells[k++], i, in, inc_at(i));
    percent(cells[k++], i, in);
    if (!show_exclusive) continue;
    const double ex = exc(i);
    value(cells[k++], i, ex, exc_at(i));
    percent(cells[k++], i, ex);
  }
}

std::vector<std::string> MetricColumns::TextCells(const std::vector<double>& inc, const std::vector<double>& exc,
                                                  bool ascii, bool show_exclusive,
                                                  const std::vector<uint32_t>* inc_at,
                                                  const std::vector<uint32_t>* exc_at) const {
  std::vector<std::string> cells;
  FillTextCells([&](size_t i) { return inc[i]; }, [&](size_t i) { return exc[i]; },
                [&](size_t i) { return AtOf(inc_at, i); }, [&](size_t i) { return AtOf(exc_at, i); }, ascii,
                show_exclusive, cells);
  return cells;
}

namespace {

// The largest finite magnitude among `v`, and whether any value is below
// zero. On the values' bits: a non-negative double orders as its bits do, so
// the loop has no branch and no floating-point compare (a 10^7-node column
// is 80 MB, and the loop with both took 35 ms of a report's critical path).
std::pair<double, bool> Extent(const std::vector<double>& v) {
  constexpr uint64_t kMagnitude = ~(uint64_t{1} << 63), kInfinity = 0x7ff0'0000'0000'0000;
  uint64_t largest = 0, negative = 0;
  for (double x : v) {
    const uint64_t bits = std::bit_cast<uint64_t>(x), m = bits & kMagnitude;
    largest = std::max(largest, m < kInfinity ? m : 0);  // NaN and infinities are not finite
    negative |= (bits >> 63) & (m != 0) & (m <= kInfinity);  // x < 0: neither -0 nor NaN
  }
  return {std::bit_cast<double>(largest), negative != 0};
}

}  // namespace

// A cell's width depends on the value's sign and decade only (three
// significant digits, a unit per power of 1000 or 1024, one decimal for
// percentages): the widest cell up to a magnitude is among the widest
// numbers of each decade below it (9.99…, which rounds up to the next
// decade's width) and the magnitude itself.
std::vector<size_t> MetricColumns::TextCellBounds(bool ascii, bool show_exclusive) const {
  size_t label_width = 0;
  for (const std::string& l : unit_labels_) label_width = std::max(label_width, DisplayWidth(l));
  std::vector<size_t> bounds;
  for (size_t i = 0; i < cols_.size(); ++i) {
    const cct::Unit unit = desc(i).unit;
    size_t widths[2] = {0, 0}, percents[2] = {0, 0};
    for (int pass = 0; pass < 2; ++pass) {
      const auto [largest, negative] = Extent(pass == 0 ? *cols_[i].inc : *cols_[i].exc);
      if (ratio(i)) {
        widths[pass] = RatioText(negative ? -largest : largest).size() + 1 + (label_width ? label_width + 3 : 0);
        continue;
      }
      std::vector<double> probes{largest};
      for (double decade = 1e-3; decade <= largest; decade *= 10)
        for (double m : {1.0, 9.99, 9.9951, 9.99951}) {
          if (decade * m <= largest) probes.push_back(decade * m);
          if (decade * m * 1.024 <= largest) probes.push_back(decade * m * 1.024);  // 1024-based units
        }
      for (double p : probes)
        for (double sign : {1.0, -1.0}) {
          if (sign < 0 && !negative) continue;
          widths[pass] = std::max(widths[pass], DisplayWidth(FormatValue(sign * p, unit, ascii)));
          if (additive(i)) percents[pass] = std::max(percents[pass], DisplayWidth(FormatPercent(sign * p, totals_[i])));
        }
    }
    bounds.push_back(widths[0]);
    bounds.push_back(percents[0]);
    if (!show_exclusive) continue;
    bounds.push_back(widths[1]);
    bounds.push_back(percents[1]);
  }
  return bounds;
}

std::vector<double> MetricColumns::NodeInclusive(NodeId n) const {
  std::vector<double> v;
  for (const Source& c : cols_) v.push_back((*c.inc)[n]);
  return v;
}
std::vector<double> MetricColumns::NodeExclusive(NodeId n) const {
  std::vector<double> v;
  for (const Source& c : cols_) v.push_back((*c.exc)[n]);
  return v;
}

std::vector<std::string> MetricColumns::NodeTextCells(NodeId n, bool ascii) const {
  std::vector<std::string> cells;
  NodeTextCells(n, ascii, cells);
  return cells;
}

// Straight from the columns' vectors: a million-row tree builds no per-node
// value or unit vectors.
void MetricColumns::NodeTextCells(NodeId n, bool ascii, std::vector<std::string>& cells, CellMemo* memo) const {
  auto at = [&](const std::vector<uint32_t>* v) { return v ? (*v)[n] : UINT32_MAX; };
  FillTextCells([&](size_t i) { return (*cols_[i].inc)[n]; }, [&](size_t i) { return (*cols_[i].exc)[n]; },
                [&](size_t i) { return at(cols_[i].inc_at); }, [&](size_t i) { return at(cols_[i].exc_at); },
                ascii, true, cells, memo);
}

void MetricColumns::WriteJson(JsonWriter& w, const std::vector<double>& inc, const std::vector<double>& exc,
                              const std::vector<uint32_t>* inc_at, const std::vector<uint32_t>* exc_at) const {
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<double>& v = pass == 0 ? inc : exc;
    const std::vector<uint32_t>* at = pass == 0 ? inc_at : exc_at;
    w.Key(pass == 0 ? "inclusive" : "exclusive").BeginObject();
    for (size_t i = 0; i < cols_.size(); ++i) {
      w.Key(name(i));
      // A derived metric with no operands at this node has no value.
      if ((cols_[i].none_when_zero && v[i] == 0) || std::isnan(v[i])) w.Null();
      else if (ratio(i)) w.Number(v[i]);
      else w.Number(ExportValue(v[i], desc(i).unit));
      if (!ratio(i)) continue;
      w.Key(name(i) + "_at");
      const std::string where = std::isnan(v[i]) ? "" : AtLabel(AtOf(at, i));
      if (where.empty()) w.Null();
      else w.String(where);
    }
    w.EndObject();
  }
}

void MetricColumns::WriteNodeJson(JsonWriter& w, NodeId n) const {
  if (unit_labels_.empty()) return WriteJson(w, NodeInclusive(n), NodeExclusive(n));
  const std::vector<uint32_t> inc_at = NodeAt(n, true), exc_at = NodeAt(n, false);
  WriteJson(w, NodeInclusive(n), NodeExclusive(n), &inc_at, &exc_at);
}

std::string MetricColumns::CsvHeader() const {
  std::string h;
  for (size_t i = 0; i < cols_.size(); ++i) {
    if (i) h += ',';
    h += CsvField(name(i) + " (inc)") + "," + CsvField(name(i) + " (exc)");
    if (ratio(i)) h += "," + CsvField(name(i) + " at (inc)") + "," + CsvField(name(i) + " at (exc)");
  }
  return h;
}

std::string MetricColumns::CsvCells(const std::vector<double>& inc, const std::vector<double>& exc,
                                    const std::vector<uint32_t>* inc_at, const std::vector<uint32_t>* exc_at) const {
  std::string s;
  for (size_t i = 0; i < cols_.size(); ++i) {
    if (i) s += ',';
    auto cell = [&](double v) -> std::string {
      if ((cols_[i].none_when_zero && v == 0) || std::isnan(v)) return "";
      return NumberText(ratio(i) ? v : ExportValue(v, desc(i).unit));
    };
    s += cell(inc[i]) + "," + cell(exc[i]);
    if (ratio(i))
      s += "," + CsvField(std::isnan(inc[i]) ? "" : AtLabel(AtOf(inc_at, i))) + "," +
           CsvField(std::isnan(exc[i]) ? "" : AtLabel(AtOf(exc_at, i)));
  }
  return s;
}

std::string MetricColumns::NodeCsvCells(NodeId n) const {
  if (unit_labels_.empty()) return CsvCells(NodeInclusive(n), NodeExclusive(n));
  const std::vector<uint32_t> inc_at = NodeAt(n, true), exc_at = NodeAt(n, false);
  return CsvCells(NodeInclusive(n), NodeExclusive(n), &inc_at, &exc_at);
}

std::string MetricColumns::TotalsLine(bool ascii) const {
  std::string s;
  for (size_t i = 0; i < cols_.size(); ++i) {
    if (i) s += ", ";
    const double t = totals_[i];
    if (ratio(i)) {
      const std::vector<uint32_t>* at = cols_[i].inc_at;
      s += name(i) + " " + (std::isnan(t) ? "-" : RatioText(t)) +
           (at && !std::isnan(t) ? " (" + AtLabel((*at)[cct::kRootNode]) + ")" : "") + " overall";
      continue;
    }
    const bool none = (t == 0 && cols_[i].none_when_zero) || std::isnan(t);
    s += name(i) + " " + (none ? "-" : FormatValue(t, desc(i).unit, ascii));
    s += additive(i) ? " total" : " overall";
  }
  return s;
}

}  // namespace output
