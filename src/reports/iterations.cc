// `cct-query iterations RUN`: the iterations an NVTX range (--iteration
// REGEX) cut a run into: each one's start (relative to the run's start),
// duration, total of the chosen metric and its share of the run's total,
// then the duration statistics and the iteration @iter=median picks; with
// --range NAME, the instances of that NVTX range in the run's trace.
#include <algorithm>
#include <cmath>

#include "cct/node_values.h"
#include "output/format.h"
#include "reports/reports.h"
#include "query/time_window.h"
#include "store/selector.h"

namespace reports {

using cct::Status;

namespace {

struct DurationStats {
  double mean = NAN, median = NAN, min = NAN, max = NAN;
};

// The usual statistics; an even count's median is the mean of the middle two.
DurationStats Stats(const store::RunIterations& its) {
  DurationStats s;
  std::vector<double> d;
  for (const store::Iteration& it : its.iterations) d.push_back(static_cast<double>(it.duration_ns));
  if (d.empty()) return s;
  std::sort(d.begin(), d.end());
  double sum = 0;
  for (double x : d) sum += x;
  s.mean = sum / static_cast<double>(d.size());
  const size_t mid = d.size() / 2;
  s.median = d.size() % 2 ? d[mid] : (d[mid - 1] + d[mid]) / 2;
  s.min = d.front();
  s.max = d.back();
  return s;
}

}  // namespace

Status WriteIterationsReport(const std::string& selector, const std::string& default_db,
                             const ReportOptions& opt, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(store::RunSelector sel, store::ParseSelector(selector, default_db));
  if (sel.iteration || sel.window)
    return cct::InvalidArgument("iterations lists every iteration of a run; drop the " +
                                std::string(sel.iteration ? "@iter=" : "time window (@t=, @range=)") + " from '" +
                                selector + "'");
  if (opt.metrics.size() > 1) return cct::InvalidArgument("iterations takes one metric (-m)");
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(sel.db_path, store::Database::Mode::kRead));
  CCT_ASSIGN_OR_RETURN(std::vector<store::RunMeta> runs, store::SelectRuns(*db, sel));
  if (sel.is_group() || runs.size() != 1)
    return cct::InvalidArgument("'" + selector + "' names a group of " + std::to_string(runs.size()) +
                                " runs; iterations lists one run's iterations");
  const store::RunMeta& run = runs.front();
  CCT_ASSIGN_OR_RETURN(cct::Tree tree, db->ReadTree(run.id));
  CCT_RETURN_IF_ERROR(query::DefineMetrics(tree, opt.metrics));
  std::optional<store::RunIterations> its;
  int64_t trace_start = 0;
  const bool from_trace = !opt.iteration_range.empty();
  if (from_trace) {
    CCT_ASSIGN_OR_RETURN(std::optional<store::RunTrace> trace, db->ReadTrace(run.id));
    if (!trace) return cct::InvalidArgument("run " + std::to_string(run.id) + " has no trace (record with cct-record --trace)");
    CCT_ASSIGN_OR_RETURN(its, query::IterationsFromRange(tree, *trace, opt.iteration_range));
    trace_start = SpanOf(*trace).first_ns;
  } else {
    CCT_ASSIGN_OR_RETURN(its, db->ReadIterations(run.id));
  }
  if (!its)
    return cct::InvalidArgument("'" + selector + "': " + query::RunLabel(run) +
                                " has no iterations (record with --iteration REGEX)");
  CCT_ASSIGN_OR_RETURN(std::vector<cct::MetricId> ids, query::ResolveMetrics(tree, opt.metrics));
  const cct::MetricId metric = ids.front();
  const cct::MetricDesc& desc = tree.metrics().Get(metric);
  const bool additive = desc.kind == cct::MetricKind::kAdditive;
  cct::NodeValues values(tree);
  const double run_total = values.Total(metric);
  const std::vector<double> totals = query::IterationTotals(*its, tree.metrics(), metric);
  const size_t n = its->iterations.size();
  // Starts count from the run's start; instances in a trace from the trace's, as @t= does.
  const int64_t base = from_trace                ? trace_start
                       : run.start_time_ns > 0 ? run.start_time_ns
                                               : (n ? its->iterations.front().start_ns : 0);
  const DurationStats stats = Stats(*its);
  double in_iterations = 0;
  for (double t : totals) in_iterations += t;
  auto share = [&](double v) { return additive && run_total != 0 ? v / run_total : NAN; };
  const std::string range = from_trace            ? "NVTX range '" + its->range + "' in the trace"
                            : its->range.empty() ? "an NVTX range"
                                                 : "NVTX range /" + its->range + "/";
  // What selects the median one: @iter=median, or for instances in the trace their number.
  const auto median_selector = [&](size_t k) {
    return from_trace ? "@range=" + its->range + "#" + std::to_string(k) : std::string("@iter=median");
  };

  switch (opt.format) {
    case OutputFormat::kText: {
      auto time = [&](double ns) { return output::FormatValue(ns, cct::Unit::kNanoseconds, opt.ascii); };
      out << query::RunLabel(run) << ": " << n << (n == 1 ? " iteration" : " iterations") << " of " << range << '\n';
      if (n == 0) break;
      output::TextTable t({{"iter"}, {"start"}, {"duration"}, {desc.name}, {"share"}}, "");
      for (size_t i = 0; i < n; ++i) {
        const store::Iteration& it = its->iterations[i];
        t.AddRow({std::to_string(i + 1), time(static_cast<double>(it.start_ns - base)),
                  time(static_cast<double>(it.duration_ns)), output::FormatValue(totals[i], desc.unit, opt.ascii),
                  additive ? output::FormatPercent(totals[i], run_total) : ""},
                 "", "");
      }
      t.Render(out, opt.width, opt.ascii);
      out << "duration: mean " << time(stats.mean) << ", median " << time(stats.median) << ", min "
          << time(stats.min) << ", max " << time(stats.max) << '\n';
      if (additive) {
        out << desc.name << ": " << output::FormatValue(in_iterations, desc.unit, opt.ascii) << " in iterations";
        if (run_total != 0) out << " (" << output::FormatPercent(in_iterations, run_total) << " of the run)";
        out << '\n';
      }
      out << "median iteration by " << desc.name << ": " << query::MedianIteration(totals) + 1 << " ("
          << median_selector(query::MedianIteration(totals) + 1) << ")\n";
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginObject();
      w.FieldInt("run", run.id).Field("name", run.name).Field("label", query::RunLabel(run)).Field("range", its->range);
      w.FieldInt("run_start_time_ns", run.start_time_ns);
      w.Field("metric", desc.name).Field("unit", cct::UnitName(desc.unit));
      w.Field("run_total", output::ExportValue(run_total, desc.unit));
      w.Key("iterations").BeginArray();
      for (size_t i = 0; i < n; ++i) {
        const store::Iteration& it = its->iterations[i];
        w.BeginObject().FieldInt("iteration", static_cast<long long>(i + 1));
        w.Field("start", static_cast<double>(it.start_ns - base) / 1e9).FieldInt("start_time_ns", it.start_ns);
        w.Field("duration", static_cast<double>(it.duration_ns) / 1e9);
        w.Field("value", output::ExportValue(totals[i], desc.unit)).Field("share", share(totals[i]));
        w.EndObject();
      }
      w.EndArray();
      w.Key("duration").BeginObject();
      w.Field("mean", stats.mean / 1e9).Field("median", stats.median / 1e9);
      w.Field("min", stats.min / 1e9).Field("max", stats.max / 1e9);
      w.EndObject();
      w.Key("median_iteration");
      n ? w.Int(static_cast<long long>(query::MedianIteration(totals) + 1)) : w.Null();
      w.EndObject();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "iteration,start,start_time_ns,duration," << output::CsvField(desc.name) << ",share\n";
      for (size_t i = 0; i < n; ++i) {
        const store::Iteration& it = its->iterations[i];
        const double sh = share(totals[i]);
        out << i + 1 << ',' << output::NumberText(static_cast<double>(it.start_ns - base) / 1e9) << ',' << it.start_ns
            << ',' << output::NumberText(static_cast<double>(it.duration_ns) / 1e9) << ','
            << (std::isnan(totals[i]) ? "" : output::NumberText(output::ExportValue(totals[i], desc.unit))) << ','
            << (std::isnan(sh) ? "" : output::NumberText(sh)) << '\n';
      }
      break;
    }
  }
  return Status::Ok();
}

}  // namespace reports
