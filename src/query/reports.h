// Reports: what cct-query prints. Each writes text, JSON or CSV to a stream
// and returns a Status (kInvalidArgument for bad options such as an unknown
// metric or an invalid regex). Pure functions of the Profile and options.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cct/node_values.h"
#include "cct/status.h"
#include "query/json_writer.h"
#include "query/profile.h"
#include "query/text_table.h"

namespace query {

enum class OutputFormat { kText, kJson, kCsv };
cct::Result<OutputFormat> ParseOutputFormat(const std::string& s);

enum class GroupBy { kFunction, kKernel, kNvtx, kLine, kModule };
cct::Result<GroupBy> ParseGroupBy(const std::string& s);

struct ReportOptions {
  std::vector<std::string> metrics;  // empty: the run's first metric
  int depth = -1;                    // -1: unlimited
  double min_pct = 0;                // hide nodes below this share of the total
  std::string focus;                 // regex: subtrees rooted at matching frames
  size_t limit = 20;                 // top -n
  bool sort_exclusive = false;       // top: order by exclusive value
  GroupBy by = GroupBy::kFunction;
  OutputFormat format = OutputFormat::kText;
  bool ascii = false;
  size_t width = 80;  // 0: unlimited
};

cct::Status WriteTreeReport(Profile& profile, const ReportOptions& options, std::ostream& out);
cct::Status WriteTopReport(Profile& profile, const ReportOptions& options, std::ostream& out);
cct::Status WriteCallersReport(Profile& profile, const std::string& regex, const ReportOptions& options,
                               std::ostream& out);
cct::Status WriteMetricsReport(Profile& profile, const ReportOptions& options, std::ostream& out);
cct::Status WriteShowReport(Profile& profile, const ReportOptions& options, std::ostream& out);
cct::Status WriteRunsReport(const std::vector<store::RunMeta>& runs, const std::string& db_path,
                            const ReportOptions& options, std::ostream& out);

// `iterations RUN`: per iteration its start (relative to the run's; JSON
// also absolute), duration, total of the metric (-m, default the run's first)
// and its share of the run's total; then duration statistics and the
// iteration @iter=median picks (iterations_report.cc).
cct::Status WriteIterationsReport(const std::string& selector, const std::string& default_db,
                                  const ReportOptions& options, std::ostream& out);

// `kernels`: per GPU kernel its time (-m, default gker), launches
// (gker:count), attached Nsight Compute metrics and bottleneck class; for a
// group selector, kernel popularity across the runs (kernels_report.cc).
cct::Status WriteKernelsReport(const std::string& selector, const std::string& default_db,
                               const ReportOptions& options, std::ostream& out);

// `table`: per group of runs (the values of tag KEY) the mean of each metric
// with a confidence interval (Student t) and n, for papers
// (table_report.cc).
enum class TableFormat { kText, kMarkdown, kCsv, kLatex, kJson };
cct::Result<TableFormat> ParseTableFormat(const std::string& s);
struct TableOptions {
  std::string by;                    // "tag:KEY"
  std::vector<std::string> metrics;  // empty: the first run's first metric
  std::string nodes;                 // regex: values of the matching frames instead of run totals
  double confidence = 0.95;
  TableFormat format = TableFormat::kText;
  bool ascii = false;
};
cct::Status WriteTableReport(const std::string& selector, const std::string& default_db,
                             const TableOptions& options, std::ostream& out);
// The p-quantile of Student's t distribution with df degrees of freedom.
double StudentTQuantile(double p, double df);

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

}  // namespace query
