#include "output/metric_columns.h"

#include <algorithm>
#include <cmath>

#include "output/format.h"

namespace output {

using cct::MetricId;
using cct::NodeId;

std::string DisplayName(const cct::Tree& tree, NodeId node) {
  const std::string_view name = tree.name(node);
  switch (tree.kind(node)) {
    case cct::FrameKind::kNvtx: return "[nvtx] " + std::string(name);
    case cct::FrameKind::kThread: return "[thread] " + std::string(name);
    default: return std::string(name);
  }
}

MetricColumns::MetricColumns(cct::NodeValues& values, std::vector<MetricId> ids)
    : values_(values), ids_(std::move(ids)) {
  for (MetricId m : ids_) {
    inc_.push_back(&values_.Inclusive(m));
    exc_.push_back(&values_.Exclusive(m));
    totals_.push_back((*inc_.back())[cct::kRootNode]);
  }
}

const cct::MetricDesc& MetricColumns::desc(size_t i) const { return values_.tree().metrics().Get(ids_[i]); }
bool MetricColumns::additive(size_t i) const { return desc(i).kind == cct::MetricKind::kAdditive; }

// Drop order when names need room: secondary metrics' exclusive values and
// percentages first, then the first metric's percentages, then its exclusive.
std::vector<TextTable::Column> MetricColumns::TextColumns(bool show_exclusive) const {
  std::vector<TextTable::Column> cols;
  for (size_t i = 0; i < ids_.size(); ++i) {
    const bool first = i == 0;
    const std::string& name = desc(i).name;
    cols.push_back({ids_.size() == 1 ? "inclusive" : name, 0});
    cols.push_back({additive(i) ? "%" : "", first ? 4 : 6});
    if (!show_exclusive) continue;
    cols.push_back({ids_.size() == 1 ? "exclusive" : "excl", first ? 3 : 8});
    cols.push_back({additive(i) ? "%" : "", first ? 5 : 9});
  }
  return cols;
}

// Zeros print blank in text: a tree of mostly empty cells reads faster.
std::vector<std::string> MetricColumns::TextCells(const std::vector<double>& inc, const std::vector<double>& exc,
                                                  bool ascii, bool show_exclusive) const {
  std::vector<std::string> cells;
  for (size_t i = 0; i < ids_.size(); ++i) {
    const cct::Unit unit = desc(i).unit;
    const bool zi = inc[i] == 0, ze = exc[i] == 0;
    cells.push_back(zi ? "" : FormatValue(inc[i], unit, ascii));
    cells.push_back(additive(i) && !zi ? FormatPercent(inc[i], totals_[i]) : "");
    if (!show_exclusive) continue;
    cells.push_back(ze ? "" : FormatValue(exc[i], unit, ascii));
    cells.push_back(additive(i) && !ze ? FormatPercent(exc[i], totals_[i]) : "");
  }
  return cells;
}

// A cell's width depends on the value's sign and decade only (three
// significant digits, a unit per power of 1000 or 1024, one decimal for
// percentages): the widest cell up to a magnitude is among the widest
// numbers of each decade below it (9.99…, which rounds up to the next
// decade's width) and the magnitude itself.
std::vector<size_t> MetricColumns::TextCellBounds(bool ascii, bool show_exclusive) const {
  std::vector<size_t> bounds;
  for (size_t i = 0; i < ids_.size(); ++i) {
    const cct::Unit unit = desc(i).unit;
    size_t widths[2] = {0, 0}, percents[2] = {0, 0};
    for (int pass = 0; pass < 2; ++pass) {
      const std::vector<double>& v = pass == 0 ? *inc_[i] : *exc_[i];
      double largest = 0;
      bool negative = false;
      for (double x : v) {
        if (std::isfinite(x)) largest = std::max(largest, std::fabs(x));
        negative |= x < 0;
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
  for (const auto* col : inc_) v.push_back((*col)[n]);
  return v;
}
std::vector<double> MetricColumns::NodeExclusive(NodeId n) const {
  std::vector<double> v;
  for (const auto* col : exc_) v.push_back((*col)[n]);
  return v;
}

std::vector<std::string> MetricColumns::NodeTextCells(NodeId n, bool ascii) const {
  return TextCells(NodeInclusive(n), NodeExclusive(n), ascii);
}

void MetricColumns::WriteJson(JsonWriter& w, const std::vector<double>& inc, const std::vector<double>& exc) const {
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<double>& v = pass == 0 ? inc : exc;
    w.Key(pass == 0 ? "inclusive" : "exclusive").BeginObject();
    for (size_t i = 0; i < ids_.size(); ++i) {
      w.Key(desc(i).name);
      // A derived metric with no operands at this node has no value.
      if (!additive(i) && v[i] == 0) w.Null();
      else w.Number(ExportValue(v[i], desc(i).unit));
    }
    w.EndObject();
  }
}

void MetricColumns::WriteNodeJson(JsonWriter& w, NodeId n) const { WriteJson(w, NodeInclusive(n), NodeExclusive(n)); }

std::string MetricColumns::CsvHeader() const {
  std::string h;
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (i) h += ',';
    h += CsvField(desc(i).name + " (inc)") + "," + CsvField(desc(i).name + " (exc)");
  }
  return h;
}

std::string MetricColumns::CsvCells(const std::vector<double>& inc, const std::vector<double>& exc) const {
  std::string s;
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (i) s += ',';
    const cct::Unit u = desc(i).unit;
    const bool none_inc = !additive(i) && inc[i] == 0, none_exc = !additive(i) && exc[i] == 0;
    s += (none_inc ? "" : NumberText(ExportValue(inc[i], u))) + "," + (none_exc ? "" : NumberText(ExportValue(exc[i], u)));
  }
  return s;
}

std::string MetricColumns::TotalsLine(bool ascii) const {
  std::string s;
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (i) s += ", ";
    s += desc(i).name + " " + (totals_[i] == 0 && !additive(i) ? "-" : FormatValue(totals_[i], desc(i).unit, ascii));
    s += additive(i) ? " total" : " overall";
  }
  return s;
}

}  // namespace output
