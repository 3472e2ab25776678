// `cct-query top`: a flat profile, nodes grouped by function, kernel, NVTX
// range, source line or module (reports/flat_groups.h says how groups sum
// their nodes). With METRIC@AGG columns, each unit's (rank's, thread's) group
// value is computed first, then aggregated across the units. With a path
// query, only the query's match ends are grouped.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "cct/tree_ops.h"
#include "output/format.h"
#include "reports/aggregate_view.h"
#include "reports/flat_groups.h"
#include "reports/registry.h"
#include "reports/reports.h"

namespace reports {

using cct::FrameKind;
using cct::MetricId;
using cct::NodeId;
using cct::Status;
using output::BaseName;
using output::CsvField;

Status WriteTopReport(query::Profile& profile, const ReportOptions& opt, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(const std::vector<MetricSpec> specs, ParseMetricSpecs(opt.metrics));
  // METRIC@AGG columns: groups of the thread-merged tree, each unit's group
  // values aggregated across the units.
  std::unique_ptr<AggregateView> view;
  std::optional<cct::NodeValues> own_values;
  std::optional<output::MetricColumns> own_cols;
  std::vector<MetricId> ids;
  std::optional<FlatGroups> flat_early;
  if (AnyAggregation(specs)) {
    CCT_ASSIGN_OR_RETURN(view, AggregateView::Make(profile, specs));
    // A function's statistics need each unit's own values (the sum of a
    // function's nodes per unit, then across units); an aggregate run
    // keeps only per-node statistics.
    if (view->stored())
      return cct::InvalidArgument(
          "top -m METRIC@AGG needs each unit's own values, and " + query::RunLabel(profile.runs.front()) +
          " is an aggregate run, which keeps per-node statistics only: use `tree` on it, or `top` over its "
          "input runs (`show` lists them)");
    ids = view->ids();
  } else {
    CCT_ASSIGN_OR_RETURN(ids, query::ResolveMetrics(profile.tree, opt.metrics));
    // Without a query the groups and the values only read the tree: made
    // side by side (a 10^7-node tree: 0.2-0.3 s each). Nothing returns
    // before the join.
    std::jthread groups_thread;  // joined on the way out, whatever happens here
    if (opt.query.empty()) {
      try {
        groups_thread = std::jthread([&] {
          try {
            flat_early.emplace(profile.tree, opt.by);
          } catch (...) {
            flat_early.reset();  // out of memory there: made again below, where it is reported
          }
        });
      } catch (const std::system_error&) {
        // No thread to be had: made below.
      }
    }
    own_values.emplace(profile.tree);
    own_cols.emplace(*own_values, ids);
    if (groups_thread.joinable()) groups_thread.join();
  }
  const cct::Tree& tree = view ? view->tree() : profile.tree;
  const output::MetricColumns& cols = view ? view->columns() : *own_cols;
  const std::string report_label = view ? profile.label + view->Across() : profile.label;
  const cct::MetricRegistry& reg = tree.metrics();
  const std::vector<MetricId> additive = AdditiveOperands(reg, ids);
  // Metric predicates read the tree shown: the thread-merged one under
  // METRIC@AGG columns.
  query::PathQueryMatch match;
  if (!opt.query.empty()) {
    CCT_ASSIGN_OR_RETURN(match, MatchReportQuery(tree, view ? view->values() : *own_values, opt.query,
                                                 /*require_match=*/true));
  }
  const std::vector<char>* ends = opt.query.empty() ? nullptr : &match.end;
  const FlatGroups flat = flat_early ? std::move(*flat_early) : FlatGroups(tree, opt.by, ends);
  const std::vector<FlatGroup>& groups = flat.groups();

  // Per group the selected metrics' inclusive and exclusive values (and, for
  // imbalance columns, the unit holding the max).
  std::vector<std::vector<double>> group_inc(groups.size()), group_exc(groups.size());
  std::vector<std::vector<uint32_t>> group_inc_at(groups.size()), group_exc_at(groups.size());
  std::vector<std::vector<double>> acc_exc(additive.size()), acc_inc(additive.size());
  std::vector<double> sums_inc(additive.size()), sums_exc(additive.size());
  // Runs `emit(g, inc, exc)` with group g's selected values under `values`.
  auto group_values = [&](cct::NodeValues& values, const std::function<void(size_t, const std::vector<double>&,
                                                                             const std::vector<double>&)>& emit) {
    for (size_t k = 0; k < additive.size(); ++k)
      flat.Accumulate(values.Exclusive(additive[k]), values.Inclusive(additive[k]), acc_exc[k], acc_inc[k]);
    for (size_t g = 0; g < groups.size(); ++g) {
      if (groups[g].nodes == 0) continue;
      for (size_t k = 0; k < additive.size(); ++k) {
        sums_inc[k] = acc_inc[k][g];
        sums_exc[k] = acc_exc[k][g];
      }
      emit(g, SelectedValues(reg, ids, additive, sums_inc), SelectedValues(reg, ids, additive, sums_exc));
    }
  };
  if (!view) {
    group_values(*own_values, [&](size_t g, const std::vector<double>& inc, const std::vector<double>& exc) {
      group_inc[g] = inc;
      group_exc[g] = exc;
    });
  } else {
    // Per column: inclusive and exclusive aggregates over the groups.
    std::vector<query::UnitAggregate> agg(2 * ids.size());
    for (query::UnitAggregate& a : agg) a.Reset(groups.size(), view->units().units.size());
    query::ForEachUnit(view->units(), [&](size_t u, cct::NodeValues& values) {
      group_values(values, [&](size_t g, const std::vector<double>& inc, const std::vector<double>& exc) {
        for (size_t i = 0; i < ids.size(); ++i) {
          agg[2 * i].Add(u, g, inc[i]);
          agg[2 * i + 1].Add(u, g, exc[i]);
        }
      });
    });
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t i = 0; i < ids.size(); ++i) {
        // A plain column beside aggregated ones: the merged tree's value, the sum.
        const query::Aggregation a = view->aggregations()[i].value_or(query::Aggregation::kSum);
        group_inc[g].push_back(agg[2 * i].Get(a, g));
        group_exc[g].push_back(agg[2 * i + 1].Get(a, g));
        group_inc_at[g].push_back(agg[2 * i].argmax[g]);
        group_exc_at[g].push_back(agg[2 * i + 1].argmax[g]);
      }
    }
  }

  struct Row {
    const FlatGroup* g;
    std::vector<double> inc, exc;
    const std::vector<uint32_t>* inc_at;
    const std::vector<uint32_t>* exc_at;
  };
  std::vector<Row> rows;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const FlatGroup& g = groups[gi];
    if (g.nodes == 0) continue;
    Row r{&g, std::move(group_inc[gi]), std::move(group_exc[gi]), view ? &group_inc_at[gi] : nullptr,
          view ? &group_exc_at[gi] : nullptr};
    // Groups with no value in any selected metric say nothing.
    bool any = false;
    for (size_t i = 0; i < ids.size(); ++i)
      any |= (r.inc[i] != 0 && !std::isnan(r.inc[i])) || (r.exc[i] != 0 && !std::isnan(r.exc[i]));
    if (any) rows.push_back(std::move(r));
  }
  // NaN (an imbalance where nothing ran) sorts last.
  auto sort_key = [&](const Row& r) {
    const double k = opt.sort_exclusive ? r.exc[0] : r.inc[0];
    return std::isnan(k) ? -1.0 : std::fabs(k);
  };
  // Only the first -n rows are ordered (10^5 functions, 20 shown); the
  // groups' own order breaks the last ties, so the rows shown do not depend
  // on how much is sorted.
  auto before = [&](const Row& a, const Row& b) {
    const double ka = sort_key(a), kb = sort_key(b);
    if (ka != kb) return ka > kb;
    if (a.g->name != b.g->name) return a.g->name < b.g->name;
    if (a.g->module != b.g->module) return a.g->module < b.g->module;
    return a.g < b.g;
  };
  if (opt.limit > 0 && rows.size() > opt.limit) {
    std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(opt.limit), rows.end(), before);
    rows.resize(opt.limit);
  } else {
    std::sort(rows.begin(), rows.end(), before);
  }

  auto label = [&](const Row& r) {
    std::string s = r.g->name;
    if (opt.by == GroupBy::kLine && !r.g->detail.empty()) s += "  " + r.g->detail;
    if (opt.by == GroupBy::kFunction && !r.g->module.empty()) s += "  [" + std::string(BaseName(r.g->module)) + "]";
    return s;
  };

  switch (opt.format) {
    case OutputFormat::kText: {
      out << report_label << ": " << cols.TotalsLine(opt.ascii) << "; top " << rows.size() << " by "
          << GroupHeader(opt.by) << (opt.sort_exclusive ? " (exclusive)" : "")
          << (ends ? " among the " + std::to_string(match.ends) + " query ends" : "") << '\n';
      output::TextTable table(cols.TextColumns(), std::string(GroupHeader(opt.by)));
      for (const Row& r : rows) table.AddRow(cols.TextCells(r.inc, r.exc, opt.ascii, true, r.inc_at, r.exc_at), "", label(r));
      table.Render(out, opt.width, opt.ascii);
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginObject().Field("by", GroupHeader(opt.by)).Key("rows").BeginArray();
      for (const Row& r : rows) {
        const cct::Frame f = tree.frame(r.g->first_node);
        w.BeginObject().Field("name", r.g->name).Field("kind", cct::FrameKindName(r.g->kind));
        w.Field("module", r.g->module);
        if (opt.by == GroupBy::kLine) {
          w.Field("file", tree.str(f.file)).FieldInt("line", f.line).Field("function", r.g->detail);
        } else if (opt.by != GroupBy::kModule) {
          w.Field("file", tree.str(f.file)).FieldInt("line", f.line);
        }
        w.FieldInt("nodes", static_cast<long long>(r.g->nodes));
        cols.WriteJson(w, r.inc, r.exc, r.inc_at, r.exc_at);
        w.EndObject();
      }
      w.EndArray().EndObject();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "name,kind,module,file,line,nodes," << cols.CsvHeader() << '\n';
      for (const Row& r : rows) {
        const cct::Frame f = tree.frame(r.g->first_node);
        out << CsvField(r.g->name) << ',' << cct::FrameKindName(r.g->kind) << ',' << CsvField(r.g->module) << ','
            << CsvField(opt.by == GroupBy::kModule ? "" : tree.str(f.file)) << ','
            << (opt.by == GroupBy::kModule ? 0 : f.line) << ',' << r.g->nodes << ',' << cols.CsvCells(r.inc, r.exc, r.inc_at, r.exc_at)
            << '\n';
      }
      break;
    }
  }
  return Status::Ok();
}

cct::Status TopCommand(const ReportRequest& request, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(ReportOptions opt, ParseReportOptions(request));
  CCT_ASSIGN_OR_RETURN(query::Profile profile, LoadRequestProfile(request, /*keep_lines=*/opt.by == GroupBy::kLine));
  return WriteTopReport(profile, opt, out);
}

}  // namespace reports
