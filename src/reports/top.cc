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

#include "cct/beside.h"
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
    // side by side (a 10^7-node tree: 0.2-0.3 s each).
    const bool groups_now = opt.query.empty();
    cct::RunBeside(
        groups_now && profile.tree.size() >= cct::kParallelNodes,
        [&] {
          if (groups_now) flat_early.emplace(profile.tree, opt.by);
        },
        [&] {
          own_values.emplace(profile.tree);
          own_cols.emplace(*own_values, ids);
        });
  }
  const cct::Tree& tree = view ? view->tree() : profile.tree;
  const output::MetricColumns& cols = view ? view->columns() : *own_cols;
  const std::string report_label = view ? profile.label + view->Across() : profile.label;
  const cct::MetricRegistry& reg = tree.metrics();
  const std::vector<MetricId> additive = reg.AdditiveOperands(ids);
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

  // Per group the selected metrics' inclusive and exclusive values, flat
  // ([group * ids + i]: 10^5 groups are not 4·10^5 small vectors to make
  // and free), and for imbalance columns the unit holding the max.
  const size_t width = ids.size();
  std::vector<double> group_inc(groups.size() * width), group_exc(groups.size() * width);
  std::vector<uint32_t> group_inc_at, group_exc_at;
  std::vector<std::vector<double>> acc_exc(additive.size()), acc_inc(additive.size());
  std::vector<double> sums_inc(additive.size()), sums_exc(additive.size()), sel_inc, sel_exc;
  // Runs `emit(g, inc, exc)` with group g's selected values under `values`.
  auto group_values = [&](cct::NodeValues& values,
                          const std::function<void(size_t, const double*, const double*)>& emit) {
    for (size_t k = 0; k < additive.size(); ++k)
      flat.Accumulate(values.Exclusive(additive[k]), values.Inclusive(additive[k]), acc_exc[k], acc_inc[k]);
    for (size_t g = 0; g < groups.size(); ++g) {
      if (groups[g].nodes == 0) continue;
      for (size_t k = 0; k < additive.size(); ++k) {
        sums_inc[k] = acc_inc[k][g];
        sums_exc[k] = acc_exc[k][g];
      }
      SelectedValues(reg, ids, additive, sums_inc, sel_inc);
      SelectedValues(reg, ids, additive, sums_exc, sel_exc);
      emit(g, sel_inc.data(), sel_exc.data());
    }
  };
  if (!view) {
    group_values(*own_values, [&](size_t g, const double* inc, const double* exc) {
      std::copy(inc, inc + width, group_inc.begin() + static_cast<std::ptrdiff_t>(g * width));
      std::copy(exc, exc + width, group_exc.begin() + static_cast<std::ptrdiff_t>(g * width));
    });
  } else {
    // Per column: inclusive and exclusive aggregates over the groups.
    std::vector<query::UnitAggregate> agg(2 * width);
    for (query::UnitAggregate& a : agg) a.Reset(groups.size(), view->units().units.size());
    query::ForEachUnit(view->units(), [&](size_t u, cct::NodeValues& values) {
      group_values(values, [&](size_t g, const double* inc, const double* exc) {
        for (size_t i = 0; i < width; ++i) {
          agg[2 * i].Add(u, g, inc[i]);
          agg[2 * i + 1].Add(u, g, exc[i]);
        }
      });
    });
    group_inc_at.resize(groups.size() * width);
    group_exc_at.resize(groups.size() * width);
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t i = 0; i < width; ++i) {
        // A plain column beside aggregated ones: the merged tree's value, the sum.
        const query::Aggregation a = view->aggregations()[i].value_or(query::Aggregation::kSum);
        group_inc[g * width + i] = agg[2 * i].Get(a, g);
        group_exc[g * width + i] = agg[2 * i + 1].Get(a, g);
        group_inc_at[g * width + i] = agg[2 * i].argmax[g];
        group_exc_at[g * width + i] = agg[2 * i + 1].argmax[g];
      }
    }
  }

  // Groups with no value in any selected metric say nothing.
  std::vector<uint32_t> shown;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].nodes == 0) continue;
    bool any = false;
    for (size_t i = g * width; i < (g + 1) * width; ++i)
      any |= (group_inc[i] != 0 && !std::isnan(group_inc[i])) || (group_exc[i] != 0 && !std::isnan(group_exc[i]));
    if (any) shown.push_back(static_cast<uint32_t>(g));
  }
  // NaN (an imbalance where nothing ran) sorts last.
  auto sort_key = [&](uint32_t g) {
    const double k = (opt.sort_exclusive ? group_exc : group_inc)[g * width];
    return std::isnan(k) ? -1.0 : std::fabs(k);
  };
  // Only the first -n rows are ordered (10^5 functions, 20 shown); the
  // groups' own order breaks the last ties, so the rows shown do not depend
  // on how much is sorted.
  auto before = [&](uint32_t a, uint32_t b) {
    const double ka = sort_key(a), kb = sort_key(b);
    if (ka != kb) return ka > kb;
    if (groups[a].name != groups[b].name) return groups[a].name < groups[b].name;
    if (groups[a].module != groups[b].module) return groups[a].module < groups[b].module;
    return a < b;
  };
  if (opt.limit > 0 && shown.size() > opt.limit) {
    std::partial_sort(shown.begin(), shown.begin() + static_cast<std::ptrdiff_t>(opt.limit), shown.end(), before);
    shown.resize(opt.limit);
  } else {
    std::sort(shown.begin(), shown.end(), before);
  }
  struct Row {
    const FlatGroup* g;
    std::vector<double> inc, exc;
    std::vector<uint32_t> inc_at, exc_at;  // imbalance columns only
  };
  std::vector<Row> rows;
  rows.reserve(shown.size());
  for (uint32_t g : shown) {
    auto slice = [&](const auto& v) {
      using T = typename std::decay_t<decltype(v)>::value_type;
      return v.empty() ? std::vector<T>() : std::vector<T>(v.begin() + g * width, v.begin() + (g + 1) * width);
    };
    rows.push_back({&groups[g], slice(group_inc), slice(group_exc), slice(group_inc_at), slice(group_exc_at)});
  }
  const auto at = [&](const std::vector<uint32_t>& v) { return view ? &v : nullptr; };

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
      for (const Row& r : rows) table.AddRow(cols.TextCells(r.inc, r.exc, opt.ascii, true, at(r.inc_at), at(r.exc_at)), "", label(r));
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
        cols.WriteJson(w, r.inc, r.exc, at(r.inc_at), at(r.exc_at));
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
            << (opt.by == GroupBy::kModule ? 0 : f.line) << ',' << r.g->nodes << ',' << cols.CsvCells(r.inc, r.exc, at(r.inc_at), at(r.exc_at))
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
