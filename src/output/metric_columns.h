// Metric columns: the values of the selected metrics, laid out the same way
// by every report and exporter (text cells, JSON fields, CSV cells, totals),
// and the display name of a node's frame. Depends on cct only.
//
// A MetricColumns borrows the NodeValues it reads (which must outlive it);
// const use from several threads is safe, like NodeValues' own.
#pragma once

#include <string>
#include <vector>

#include "cct/node_values.h"
#include "cct/tree.h"
#include "output/json_writer.h"
#include "output/text_table.h"

namespace output {

// The display name of a node's frame: NVTX ranges and threads are marked
// ("[nvtx] step", "[thread] main").
std::string DisplayName(const cct::Tree& tree, cct::NodeId node);

// Values of the selected metrics, laid out the same way by every report.
class MetricColumns {
 public:
  MetricColumns(cct::NodeValues& values, std::vector<cct::MetricId> ids);

  const std::vector<cct::MetricId>& ids() const { return ids_; }
  cct::MetricId first() const { return ids_.front(); }
  double total(size_t i) const { return totals_[i]; }
  const cct::MetricDesc& desc(size_t i) const;
  bool additive(size_t i) const;

  // Text columns: per metric "inclusive", "%", "exclusive", "%" (percentages
  // of additive metrics only).
  std::vector<TextTable::Column> TextColumns(bool show_exclusive = true) const;
  std::vector<std::string> TextCells(const std::vector<double>& inc, const std::vector<double>& exc, bool ascii,
                                     bool show_exclusive = true) const;
  std::vector<std::string> NodeTextCells(cct::NodeId n, bool ascii) const;
  // Per text column the widest cell any node of the tree can have (for
  // TextTable::Stream): from each metric's largest magnitude, not by
  // formatting every node.
  std::vector<size_t> TextCellBounds(bool ascii, bool show_exclusive = true) const;

  // "inclusive": {metric: value}, "exclusive": {...} in export units.
  void WriteJson(JsonWriter& w, const std::vector<double>& inc, const std::vector<double>& exc) const;
  void WriteNodeJson(JsonWriter& w, cct::NodeId n) const;
  std::string CsvHeader() const;  // "<m> (inc),<m> (exc),..."
  std::string CsvCells(const std::vector<double>& inc, const std::vector<double>& exc) const;

  // One line per metric: "cputime: 2.51 s total".
  std::string TotalsLine(bool ascii) const;

  std::vector<double> NodeInclusive(cct::NodeId n) const;
  std::vector<double> NodeExclusive(cct::NodeId n) const;

 private:
  cct::NodeValues& values_;
  std::vector<cct::MetricId> ids_;
  std::vector<const std::vector<double>*> inc_, exc_;
  std::vector<double> totals_;
};

}  // namespace output
