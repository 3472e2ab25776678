// Reports: what cct-query prints, one file each (tree.cc, top.cc,
// callers.cc, runs.cc, show.cc, metrics.cc, iterations.cc, kernels.cc,
// table.cc, flame.cc, stats.cc; cct-diff's in diff_report.h). Each writes text, JSON
// or CSV to a stream and returns a Status (kInvalidArgument for bad options
// such as an unknown metric or an invalid regex). Pure functions of the
// Profile and options (those taking a selector read the database); safe to
// call from several threads on different profiles. reports/registry.h
// lists them for cct-query, with the commands that are not reports (check;
// derive, which stores a new run: derive.cc).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cct/node_values.h"
#include "cct/status.h"
#include "output/metric_columns.h"
#include "query/path_query.h"
#include "query/profile.h"

namespace reports {

enum class OutputFormat { kText, kJson, kCsv };
cct::Result<OutputFormat> ParseOutputFormat(const std::string& s);

enum class GroupBy { kFunction, kKernel, kNvtx, kLine, kModule };
cct::Result<GroupBy> ParseGroupBy(const std::string& s);

struct ReportOptions {
  std::vector<std::string> metrics;  // empty: the run's first metric
  int depth = -1;                    // -1: unlimited
  double min_pct = 0;                // hide nodes below this share of the total
  std::string focus;                 // regex: subtrees rooted at matching frames
  std::string query;                 // path query (docs/query.md): tree and top keep its matches
  size_t limit = 20;                 // top -n
  bool sort_exclusive = false;       // top: order by exclusive value
  GroupBy by = GroupBy::kFunction;
  OutputFormat format = OutputFormat::kText;
  bool ascii = false;
  size_t width = 80;  // 0: unlimited
  std::string iteration_range;  // iterations --range: the instances of this NVTX range in the trace
};

// A path query's matches on `tree` (the report's loaded tree: source lines
// folded unless kept). kNotFound, "no path matches the query 'Q'", when
// nothing does and `require_match`.
cct::Result<query::PathQueryMatch> MatchReportQuery(const cct::Tree& tree, cct::NodeValues& values,
                                                    const std::string& text, bool require_match);

cct::Status WriteTreeReport(query::Profile& profile, const ReportOptions& options, std::ostream& out);
// `tree A B ...`: the runs' trees aligned by path identity as cct-diff
// aligns them, one column per run (per metric); children ordered, and --min
// applied, by their largest share of the first metric in any run
// (tree_side_by_side.cc).
cct::Status WriteSideBySideTreeReport(std::vector<query::Profile>& profiles, const ReportOptions& options,
                                      std::ostream& out);
cct::Status WriteTopReport(query::Profile& profile, const ReportOptions& options, std::ostream& out);
cct::Status WriteCallersReport(query::Profile& profile, const std::string& regex, const ReportOptions& options,
                               std::ostream& out);
// `match RUN QUERY`: each end of the query's matching paths, its path from
// the top-level node and its values, largest first; -n rows (match.cc).
cct::Status WriteMatchReport(query::Profile& profile, const std::string& query_text, const ReportOptions& options,
                             std::ostream& out);
cct::Status WriteMetricsReport(query::Profile& profile, const ReportOptions& options, std::ostream& out);
cct::Status WriteShowReport(query::Profile& profile, const ReportOptions& options, std::ostream& out);
// `runs`: the runs listed, children indented under their parents (text);
// JSON and CSV name each one's parent_run and invocation root_run, found
// among `all` (the database's runs; null: among `runs`).
cct::Status WriteRunsReport(const std::vector<store::RunMeta>& runs, const std::string& db_path,
                            const ReportOptions& options, std::ostream& out,
                            const std::vector<store::RunMeta>* all = nullptr);

// `iterations RUN`: per iteration its start (relative to the run's; JSON
// also absolute), duration, total of the metric (-m, default the run's first)
// and its share of the run's total; then duration statistics and the
// iteration @iter=median picks (iterations.cc). With
// options.iteration_range, the trace's instances of that NVTX range instead
// (query::IterationsFromRange), numbered as @range=NAME#K takes them.
cct::Status WriteIterationsReport(const std::string& selector, const std::string& default_db,
                                  const ReportOptions& options, std::ostream& out);

// `kernels`: per GPU kernel its time (-m, default gker), launches
// (gker:count), attached Nsight Compute metrics and bottleneck class; for a
// group selector, kernel popularity across the runs (kernels.cc).
cct::Status WriteKernelsReport(const std::string& selector, const std::string& default_db,
                               const ReportOptions& options, std::ostream& out);

// `table`: per group of runs (the values of tag KEY) the mean of each metric
// with a confidence interval (Student t) and n, for papers; with a baseline
// group, each metric's speedup against it (table.cc).
enum class TableFormat { kText, kMarkdown, kCsv, kLatex, kJson };
cct::Result<TableFormat> ParseTableFormat(const std::string& s);
struct TableOptions {
  std::string by;                    // "tag:KEY"
  std::vector<std::string> metrics;  // empty: the first run's first metric
  std::string nodes;                 // regex: values of the matching frames instead of run totals
  double confidence = 0.95;
  TableFormat format = TableFormat::kText;
  bool ascii = false;
  std::string baseline;  // a group (tag value): add a speedup column against it; empty: none
};
cct::Status WriteTableReport(const std::string& selector, const std::string& default_db,
                             const TableOptions& options, std::ostream& out);
// `stats`: ensemble statistics across the runs the selectors name (at least
// two; a node a run lacks counts as 0 in it), per node of their merged tree
// or, with --by, per flat group: mean, median, sd (n-1), cv, min, max and
// percentiles (linear interpolation), as Thicket's statsframe (stats.cc).
struct StatsOptions {
  ReportOptions report;  // -m, --depth, --min, --focus, -n, --format, --ascii, --width; --by when `flat`
  bool flat = false;     // --by given: a flat list by report.by, sorted by mean
  bool exclusive = false;
  bool merge_threads = false;
  bool keep_lines = false;
  std::vector<double> percentiles{10, 25, 75, 90};
};
// "5,50,95": each from 0 to 100, at least one.
cct::Result<std::vector<double>> ParsePercentiles(const std::string& s);
cct::Status WriteStatsReport(const std::vector<std::string>& selectors, const std::string& default_db,
                             const StatsOptions& options, std::ostream& out);

// The p-quantile of Student's t distribution with df degrees of freedom
// (table.cc, for the intervals).
double StudentTQuantile(double p, double df);

}  // namespace reports
