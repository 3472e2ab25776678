#include "reports/registry.h"

#include "reports/aggregate_view.h"

namespace reports {

namespace {

// The common ways to run a report: on the profile of RUN (loaded with all
// source lines when `kKeepLines`, as the summaries of show and metrics
// want), or on a RUN or SELECTOR the report resolves itself.
using ProfileReport = cct::Status (*)(query::Profile& profile, const ReportOptions& options, std::ostream& out);
using SelectorReport = cct::Status (*)(const std::string& selector, const std::string& default_db,
                                       const ReportOptions& options, std::ostream& out);

template <ProfileReport kWrite, bool kKeepLines>
cct::Status OnProfile(const ReportRequest& request, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(ReportOptions opt, ParseReportOptions(request));
  CCT_ASSIGN_OR_RETURN(query::Profile profile, LoadRequestProfile(request, kKeepLines));
  return kWrite(profile, opt, out);
}

template <SelectorReport kWrite>
cct::Status OnSelector(const ReportRequest& request, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(ReportOptions opt, ParseReportOptions(request));
  return kWrite(request.args.at(0), request.db_path, opt, out);
}

}  // namespace

const std::vector<ReportInfo>& Reports() {
  static const std::vector<ReportInfo> kReports = {
      {"runs", "[SELECTOR]", "list the runs in the database", {}, 0, 1, "runs takes at most one selector", false,
       &RunsCommand},
      {"show", "RUN", "a run's metadata, diagnostics and metric totals", {"merge-threads"}, 1, 1,
       "show expects one RUN (see cct-query --help)", false, &OnProfile<WriteShowReport, true>},
      {"metrics", "RUN", "the metrics a run has", {"merge-threads"}, 1, 1,
       "metrics expects one RUN (see cct-query --help)", false, &OnProfile<WriteMetricsReport, true>},
      {"tree", "RUN [RUN...]", "the calling-context tree, top-down; several side by side",
       {"metric", "depth", "min", "focus", "query", "lines", "merge-threads"}, 1, kMaxSideBySideRuns,
       "tree expects one RUN, or up to 16 side by side (see cct-query --help)", false, &TreeCommand},
      {"top", "RUN", "a flat profile by function, kernel, nvtx, line or module",
       {"metric", "n", "by", "inclusive", "exclusive", "query", "merge-threads"}, 1, 1,
       "top expects one RUN (see cct-query --help)", false, &TopCommand},
      {"callers", "RUN REGEX", "bottom-up: who reaches the frames matching REGEX",
       {"metric", "depth", "min", "merge-threads", "lines"}, 2, 2, "callers expects RUN and REGEX (see cct-query --help)",
       false, &CallersCommand},
      {"match", "RUN QUERY", "where the call paths matching QUERY end (docs/query.md)",
       {"metric", "n", "inclusive", "exclusive", "lines", "merge-threads"}, 2, 2,
       "match expects RUN and QUERY (see cct-query --help)", false, &MatchCommand},
      {"iterations", "RUN", "the run's iterations (--iteration): start, duration, metric", {"metric", "range"}, 1, 1,
       "iterations expects one RUN (see cct-query --help)", false, &OnSelector<WriteIterationsReport>},
      {"timeline", "RUN", "the trace (--trace) in time buckets; per thread and GPU stream the hottest item in each",
       {"thread", "from", "to", "bucket", "by"}, 1, 1, "timeline expects one RUN (see cct-query --help)", false,
       &TimelineCommand},
      {"flame", "RUN -o FILE.svg", "an interactive flame graph (SVG)",
       {"metric", "output", "merge-threads", "lines", "title", "min-width", "image-width",
        "orientation"}, 1, 1,
       "flame expects one RUN (see cct-query --help)", true, &FlameCommand},
      {"kernels", "RUN|SELECTOR",
       "GPU kernels: time, launches, Nsight Compute metrics, bottleneck; for a group, kernel popularity across its runs",
       {"metric", "n"}, 1, 1, "kernels expects one RUN or SELECTOR (see cct-query --help)", false, &OnSelector<WriteKernelsReport>},
      {"table", "SELECTOR --by tag:KEY", "per group of runs: mean ± CI (Student t) and n, for papers",
       {"metric", "by", "nodes", "confidence", "baseline"}, 1, 1,
       "table expects one SELECTOR (the runs to tabulate) (see cct-query --help)", false, &TableCommand},
      {"stats", "SELECTOR...",
       "statistics across runs, per node or --by group; mean, median, sd, cv, min, max, percentiles",
       {"metric", "depth", "min", "focus", "n", "by", "exclusive", "percentiles", "merge-threads", "lines"}, 1,
       SIZE_MAX, "stats expects one or more SELECTORs (see cct-query --help)", false, &StatsCommand},
      {"derive", "RUN --name NEW",
       "store a new run made from RUN; its nodes squashed, threads merged, values normalized",
       {"drop", "query", "keep-min", "merge-threads", "normalize", "metric", "name", "tag", "replace"}, 1, 1,
       "derive expects one RUN (see cct-query --help)", false, &DeriveCommand, /*writes_database=*/true},
      {"check", "[DB]", "read every run back whole: checksums and tree invariants; exit 1 naming the damaged runs", {},
       0, 1, "check takes at most one database (or -d DB)", false, &CheckCommand},
  };
  return kReports;
}

cct::Result<const ReportInfo*> FindReport(std::string_view name) {
  for (const ReportInfo& r : Reports())
    if (r.name == name) return &r;
  return cct::InvalidArgument("unknown command '" + std::string(name) + "' (see cct-query --help)");
}

cct::Result<ReportOptions> ParseReportOptions(const ReportRequest& request) {
  ReportOptions opt = request.options;
  if (request.by) {
    CCT_ASSIGN_OR_RETURN(opt.by, ParseGroupBy(*request.by));
  }
  if (request.format) {
    CCT_ASSIGN_OR_RETURN(opt.format, ParseOutputFormat(*request.format));
  }
  return opt;
}

cct::Result<query::Profile> LoadRequestProfile(const ReportRequest& request, bool keep_lines, size_t arg,
                                               bool keep_run_trees) {
  query::LoadOptions load;
  load.keep_lines = request.lines || keep_lines;
  load.merge_threads = request.merge_threads && !AnyAggregation(request.options.metrics);  // the units fold them
  if (!request.options.metrics.empty()) {
    // @iter=median by the first -m's metric (without an @AGG).
    const std::string& first = request.options.metrics.front();
    load.median_metric = cct::MetricRegistry::IsDefinition(first) ? first : first.substr(0, first.rfind('@'));
  }
  load.metrics = request.options.metrics;
  // METRIC@AGG across an invocation's processes needs each process's tree.
  load.keep_run_trees = keep_run_trees || AnyAggregation(request.options.metrics);
  return query::LoadProfile(request.args.at(arg), request.db_path, load);
}

}  // namespace reports
