// The reports cctdb knows, for every front end to enumerate: cct-query's
// commands (but export, which the exporters' registry serves), the options
// each accepts, their help lines and the dispatch come from here. Adding a
// report: a file in src/reports/ with its Write...Report function (declared
// in reports.h; a command function below when the common adapters in
// registry.cc do not fit) and one entry in registry.cc.
//
// The table is immutable static data: safe to read from any thread. The
// command functions open the database themselves: read-only, but for the
// commands marked writes_database (derive), which add runs to it.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"
#include "reports/reports.h"

namespace reports {

// A cct-query command line, parsed: the options every report reads the same
// way are in `options`; the ones whose meaning depends on the command are
// kept as given.
struct ReportRequest {
  std::vector<std::string> args;  // after the command name
  std::string db_path;            // store::DefaultDatabasePath applied
  ReportOptions options;          // -m, --depth, --min, --focus, --query, -n, --exclusive, --ascii, --width
  std::optional<std::string> by;      // --by: top's grouping, table's tag:KEY
  std::optional<std::string> format;  // --format: text|json|csv, table also markdown|latex
  std::optional<std::string> nodes;   // table --nodes
  std::optional<double> confidence;   // table --confidence
  std::optional<std::string> baseline;  // table --baseline
  std::optional<std::string> title;   // flame --title
  std::optional<double> min_width;    // flame --min-width
  std::optional<size_t> image_width;  // flame --image-width
  std::optional<std::string> orientation;  // flame --orientation
  std::optional<std::string> percentiles;  // stats --percentiles
  std::optional<std::string> thread;       // timeline --thread
  std::optional<std::string> from, until;  // timeline --from, --to
  std::optional<double> bucket_ms;         // timeline --bucket
  bool lines = false;                 // --lines
  bool merge_threads = false;         // --merge-threads
  // derive: its operations (drop, query, keep-min, merge-threads, normalize)
  // with their values, in command-line order (the order they apply in).
  std::vector<std::pair<std::string, std::string>> operations;
  std::optional<std::string> name;          // derive --name
  std::map<std::string, std::string> tags;  // derive --tag
  bool replace = false;                     // derive --replace
};

using ReportCommand = cct::Status (*)(const ReportRequest& request, std::ostream& out);

struct ReportInfo {
  std::string_view name;         // the cct-query command
  std::string_view usage;        // its arguments, for --help ("RUN", "RUN REGEX")
  std::string_view description;  // one line (--help may wrap it)
  std::vector<std::string_view> options;  // the cct-query options it takes besides -d, --format, --ascii, --width
  size_t min_args, max_args;     // how many arguments it takes
  std::string_view args_error;   // the message when it gets another number
  bool writes_output = false;    // takes -o FILE (written whole or not at all)
  ReportCommand run;
  // Adds runs to the database (opens it for writing): a front end that
  // serves a database read-only leaves these commands out.
  bool writes_database = false;
};

// Every report, in the order cct-query lists them.
const std::vector<ReportInfo>& Reports();

// The report named `name`; kInvalidArgument "unknown command 'NAME' (see
// cct-query --help)" when there is none.
cct::Result<const ReportInfo*> FindReport(std::string_view name);

// The commands whose arguments need more than the common ways registry.cc
// runs a report (on the profile of RUN, or on a selector), each in its
// report's file.
cct::Status RunsCommand(const ReportRequest& request, std::ostream& out);
cct::Status TreeCommand(const ReportRequest& request, std::ostream& out);
// `tree A B ...`: each run is a column per metric, so the count is bounded.
inline constexpr size_t kMaxSideBySideRuns = 16;
cct::Status TopCommand(const ReportRequest& request, std::ostream& out);
cct::Status CallersCommand(const ReportRequest& request, std::ostream& out);
cct::Status MatchCommand(const ReportRequest& request, std::ostream& out);
cct::Status FlameCommand(const ReportRequest& request, std::ostream& out);
cct::Status TableCommand(const ReportRequest& request, std::ostream& out);
cct::Status CheckCommand(const ReportRequest& request, std::ostream& out);
cct::Status StatsCommand(const ReportRequest& request, std::ostream& out);
// timeline (timeline.cc): a run's trace in time buckets, the hottest item of
// each thread and GPU stream in each.
cct::Status TimelineCommand(const ReportRequest& request, std::ostream& out);
// derive (derive.cc): prints what it stored.
cct::Status DeriveCommand(const ReportRequest& request, std::ostream& out);

// Helpers of the commands: --by and --format parsed into ReportOptions (as
// GroupBy and OutputFormat), and the profile of args[0] loaded with the
// request's --lines, --merge-threads and -m (for @iter=median and NAME=EXPR
// definitions); `keep_lines` keeps source lines regardless. `arg` picks the
// argument (tree loads each of its runs); `keep_run_trees` keeps a group's or
// invocation's runs' own trees too (query::LoadOptions).
cct::Result<ReportOptions> ParseReportOptions(const ReportRequest& request);
cct::Result<query::Profile> LoadRequestProfile(const ReportRequest& request, bool keep_lines, size_t arg = 0,
                                               bool keep_run_trees = false);

}  // namespace reports
