// Metric columns: the values of the selected metrics, laid out the same way
// by every report and exporter (text cells, JSON fields, CSV cells, totals),
// and the display name of a node's frame. Depends on cct only.
//
// A MetricColumns borrows the NodeValues or the Source vectors it reads and
// the tree (which must outlive it); const use from several threads is safe,
// like NodeValues' own.
#pragma once

#include <string>
#include <vector>

#include "cct/node_values.h"
#include "cct/prefetch.h"
#include "cct/tree.h"
#include "output/json_writer.h"
#include "output/text_table.h"

namespace output {

// The display name of a node's frame: NVTX ranges and threads are marked
// ("[nvtx] step", "[thread] main").
std::string DisplayName(const cct::Tree& tree, cct::NodeId node);
// The same appended to `out`.
void AppendDisplayName(const cct::Tree& tree, cct::NodeId node, std::string& out);

// Values of the selected metrics, laid out the same way by every report.
class MetricColumns {
 public:
  // A column whose values were computed elsewhere: a metric aggregated
  // across ranks or threads ("cputime@max"), per node of the tree.
  struct Source {
    std::string name;              // heading, JSON key and CSV name
    cct::MetricId metric;          // the metric it aggregates
    bool percent = false;          // show shares of the root's inclusive value
    bool ratio = false;            // a ratio with the unit it was taken at (imbalance: "1.84 (rank 3)")
    bool none_when_zero = false;   // 0 means "no value" (derived metrics): blank, JSON null
    const std::vector<double>* inc = nullptr;
    const std::vector<double>* exc = nullptr;
    const std::vector<uint32_t>* inc_at = nullptr;  // ratio columns: per node the unit (index into unit labels)
    const std::vector<uint32_t>* exc_at = nullptr;
  };

  MetricColumns(cct::NodeValues& values, std::vector<cct::MetricId> ids);
  // Columns from sources; `unit_labels` names the units ratio columns point
  // at ("rank 3", "thread 'worker-2'"). Borrows the sources' vectors.
  MetricColumns(const cct::Tree& tree, std::vector<Source> sources, std::vector<std::string> unit_labels);

  const std::vector<cct::MetricId>& ids() const { return ids_; }
  cct::MetricId first() const { return ids_.front(); }
  double total(size_t i) const { return totals_[i]; }
  const cct::MetricDesc& desc(size_t i) const;  // the metric column i shows (or aggregates)
  const std::string& name(size_t i) const { return cols_[i].name; }
  bool additive(size_t i) const;  // percentages shown
  bool ratio(size_t i) const { return cols_[i].ratio; }
  const std::vector<double>& inclusive(size_t i) const { return *cols_[i].inc; }
  const std::vector<std::string>& unit_labels() const { return unit_labels_; }

  // Text columns: per metric "inclusive", "%", "exclusive", "%" (percentages
  // of additive metrics only).
  std::vector<TextTable::Column> TextColumns(bool show_exclusive = true) const;
  // `inc_at`/`exc_at`: per column the unit a ratio column's value was taken
  // at (rows computed outside the tree, as top's); null: none.
  std::vector<std::string> TextCells(const std::vector<double>& inc, const std::vector<double>& exc, bool ascii,
                                     bool show_exclusive = true, const std::vector<uint32_t>* inc_at = nullptr,
                                     const std::vector<uint32_t>* exc_at = nullptr) const;
  std::vector<std::string> NodeTextCells(cct::NodeId n, bool ascii) const;

  // Formatted cells remembered by value: a streamed tree formats four cells
  // per row (7.7·10^5 rows for `tree --depth 4` of a 10^7-node run), and a
  // profile's values repeat (counts of samples), so most cells can be copies
  // of text made before. Direct-mapped: a miss costs one comparison.
  // Entries belong to one MetricColumns (its units and totals), named by an
  // id no other instance has. Not thread-safe: one per formatting thread.
  class CellMemo {
   public:
    CellMemo();
    ~CellMemo();
    CellMemo(CellMemo&&) noexcept;
    CellMemo& operator=(CellMemo&&) noexcept;

   private:
    friend class MetricColumns;
    struct Entry;
    static constexpr size_t kEntries = size_t{1} << 12;
    Entry* Slot(double v, uint32_t tag);
    uint64_t owner_ = 0;
    std::vector<Entry> entries_;
  };
  // NodeTextCells into `cells`, reusing its strings (one vector for every
  // row), and with `memo` (kept from row to row by the caller) reusing text.
  void NodeTextCells(cct::NodeId n, bool ascii, std::vector<std::string>& cells, CellMemo* memo = nullptr) const;
  // Asks for node n's values ahead of NodeTextCells (a hint; no effect on
  // results): rows of a large tree are far apart in its value vectors.
  void Prefetch(cct::NodeId n) const {
    for (const Source& c : cols_) {
      cct::Prefetch(c.inc->data() + n);
      cct::Prefetch(c.exc->data() + n);
    }
  }
  // Per text column the widest cell any node of the tree can have (for
  // TextTable::Stream): from each metric's largest magnitude, not by
  // formatting every node.
  std::vector<size_t> TextCellBounds(bool ascii, bool show_exclusive = true) const;

  // "inclusive": {metric: value}, "exclusive": {...} in export units; a
  // ratio column adds "<name>_at": the unit's label.
  void WriteJson(JsonWriter& w, const std::vector<double>& inc, const std::vector<double>& exc,
                 const std::vector<uint32_t>* inc_at = nullptr, const std::vector<uint32_t>* exc_at = nullptr) const;
  void WriteNodeJson(JsonWriter& w, cct::NodeId n) const;
  // "<m> (inc),<m> (exc),..."; a ratio column adds "<m> at (inc)" and "<m> at (exc)".
  std::string CsvHeader() const;
  std::string CsvCells(const std::vector<double>& inc, const std::vector<double>& exc,
                       const std::vector<uint32_t>* inc_at = nullptr,
                       const std::vector<uint32_t>* exc_at = nullptr) const;
  std::string NodeCsvCells(cct::NodeId n) const;

  // One line per metric: "cputime: 2.51 s total".
  std::string TotalsLine(bool ascii) const;

  std::vector<double> NodeInclusive(cct::NodeId n) const;
  std::vector<double> NodeExclusive(cct::NodeId n) const;

 private:
  template <class Inc, class Exc, class IncAt, class ExcAt>
  void FillTextCells(Inc inc, Exc exc, IncAt inc_at, ExcAt exc_at, bool ascii, bool show_exclusive,
                     std::vector<std::string>& cells, CellMemo* memo = nullptr) const;
  std::vector<uint32_t> NodeAt(cct::NodeId n, bool inclusive) const;
  std::string AtLabel(uint32_t unit) const;

  const cct::Tree& tree_;
  uint64_t memo_id_ = NextMemoId();  // names this instance's cells in CellMemo (metric_columns.cc)
  static uint64_t NextMemoId();
  std::vector<Source> cols_;
  std::vector<cct::MetricId> ids_;
  std::vector<double> totals_;
  std::vector<std::string> unit_labels_;
};

}  // namespace output
