// `cct-query stats`: ensemble statistics across runs (Thicket's statsframe),
// per node of the runs' merged tree or per flat group (--by).
//
// Every run is one unit of query::TreeUnits: nodes align by path identity
// and a node a run lacks counts as 0 in it, so the mean is the group mean
// `tree GROUP` shows. Each statistic is computed from the n per-run values of
// a node (query::Summarize: sd with n-1, percentiles by numpy's default
// linear interpolation).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>

#include "cct/pattern.h"
#include "cct/tree_ops.h"
#include "output/format.h"
#include "output/tree_json.h"
#include "query/aggregate.h"
#include "reports/flat_groups.h"
#include "reports/registry.h"
#include "reports/reports.h"

namespace reports {

using cct::MetricId;
using cct::NodeId;
using cct::Status;
using output::CsvField;

namespace {

// A statistic's name in headings and JSON/CSV keys: "p10", "p2.5".
std::string PercentileName(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%g", p);
  return buf;
}

// The statistics per metric, in column order.
struct StatTable {
  std::vector<std::string> names;  // mean, median, sd, cv, min, max, p...
  size_t per_metric() const { return names.size(); }
};

StatTable MakeStatTable(const std::vector<double>& percentiles) {
  StatTable t;
  t.names = {"mean", "median", "sd", "cv", "min", "max"};
  for (double p : percentiles) t.names.push_back(PercentileName(p));
  return t;
}
constexpr size_t kCvColumn = 3;

// Statistics of `values` (one per run) in StatTable order.
void AppendSummary(std::vector<double>& values, const std::vector<double>& percentiles, std::vector<double>& out) {
  const query::Summary s = query::Summarize(values, percentiles);
  out.insert(out.end(), {s.mean, s.median, s.sd, s.cv, s.min, s.max});
  out.insert(out.end(), s.percentiles.begin(), s.percentiles.end());
}

// The runs of every selector, each run once, with their trees.
struct Ensemble {
  std::string label;
  std::vector<store::RunMeta> runs;
  std::vector<cct::Tree> trees;
};

cct::Result<Ensemble> LoadEnsemble(const std::vector<std::string>& selectors, const std::string& default_db,
                                   const StatsOptions& opt) {
  Ensemble e;
  std::set<std::pair<std::string, store::RunId>> seen;
  query::LoadOptions load;
  load.keep_run_trees = true;
  load.skip_merged_tree = true;  // TreeUnits merges the runs
  load.merge_threads = opt.merge_threads;
  load.keep_lines = opt.keep_lines || (opt.flat && opt.report.by == GroupBy::kLine);
  for (const std::string& sel : selectors) {
    CCT_ASSIGN_OR_RETURN(query::Profile p, query::LoadProfile(sel, default_db, load));
    if (p.selector.is_invocation())
      return cct::InvalidArgument("stats compares repeated runs; '" + sel +
                                  "' is one invocation's processes (use tree -m METRIC@AGG across ranks)");
    for (size_t i = 0; i < p.runs.size(); ++i) {
      if (!seen.emplace(p.db_path, p.runs[i].id).second) continue;
      e.runs.push_back(p.runs[i]);
      e.trees.push_back(std::move(p.run_trees[i]));
    }
  }
  std::string what;
  for (const std::string& sel : selectors) what += (what.empty() ? "" : " ") + sel;
  if (e.runs.size() < 2)
    return cct::InvalidArgument("stats needs at least 2 runs to compare; '" + what + "' selects only " +
                                (e.runs.empty() ? std::string("none") : query::RunLabel(e.runs.front())));
  e.label = (selectors.size() == 1 ? "group " : "runs ") + what + " (" + std::to_string(e.runs.size()) + " runs)";
  return e;
}

// Text cell of one statistic; NaN (sd of one value, cv of mean 0) is blank.
std::string StatText(double v, size_t stat, cct::Unit unit, bool ascii) {
  if (std::isnan(v)) return "";
  if (v == 0) return "0";
  if (stat == kCvColumn) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
  }
  return output::FormatValue(v, unit, ascii);
}

// Columns: per metric its statistics; names squeezed drop the percentiles
// (the last first), then cv, min/max, the median and sd, secondary metrics'
// before the first's.
std::vector<output::TextTable::Column> StatColumns(const StatTable& st, const std::vector<std::string>& metric_names) {
  std::vector<output::TextTable::Column> cols;
  for (size_t m = 0; m < metric_names.size(); ++m) {
    const int base = 100 * static_cast<int>(m);  // secondary metrics before the first
    for (size_t k = 0; k < st.per_metric(); ++k) {
      int drop = 0;
      if (k == 1) drop = 2;            // median
      else if (k == 2) drop = 1;       // sd
      else if (k == kCvColumn) drop = 4;
      else if (k == 4 || k == 5) drop = 3;  // min, max
      else if (k >= 6) drop = 5 + static_cast<int>(k);  // percentiles, the last first
      drop += base;
      const std::string header = metric_names.size() > 1 && k == 0 ? metric_names[m] + " mean" : st.names[k];
      cols.push_back({header, drop});
    }
  }
  return cols;
}

void WriteStatsJson(output::JsonWriter& w, const std::vector<std::string>& metric_names,
                    const std::vector<cct::Unit>& units, const StatTable& st, const std::vector<double>& row) {
  w.Key("stats").BeginObject();
  for (size_t m = 0; m < metric_names.size(); ++m) {
    w.Key(metric_names[m]).BeginObject();
    for (size_t k = 0; k < st.per_metric(); ++k) {
      const double v = row[m * st.per_metric() + k];
      w.Key(st.names[k]);
      if (std::isnan(v)) w.Null();
      else w.Number(k == kCvColumn ? v : output::ExportValue(v, units[m]));
    }
    w.EndObject();
  }
  w.EndObject();
}

std::string StatsCsvHeader(const std::vector<std::string>& metric_names, const StatTable& st) {
  std::string h;
  for (const std::string& m : metric_names)
    for (const std::string& s : st.names) h += (h.empty() ? "" : ",") + CsvField(m + " " + s);
  return h;
}

std::string StatsCsvCells(const std::vector<cct::Unit>& units, const StatTable& st, const std::vector<double>& row) {
  std::string s;
  for (size_t i = 0; i < row.size(); ++i) {
    if (i) s += ',';
    const size_t k = i % st.per_metric();
    if (std::isnan(row[i])) continue;
    s += output::NumberText(k == kCvColumn ? row[i] : output::ExportValue(row[i], units[i / st.per_metric()]));
  }
  return s;
}

}  // namespace

cct::Result<std::vector<double>> ParsePercentiles(const std::string& s) {
  std::vector<double> out;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    const double v = item.empty() ? NAN : std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !(v >= 0 && v <= 100))
      return cct::InvalidArgument("--percentiles '" + cct::ElideMiddle(s, 60) +
                                  "': expected numbers from 0 to 100 separated by commas (e.g. 5,50,95)");
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Status WriteStatsReport(const std::vector<std::string>& selectors, const std::string& default_db,
                        const StatsOptions& opt, std::ostream& out) {
  for (const std::string& m : opt.report.metrics)
    if (m.find('@') != std::string::npos)
      return cct::InvalidArgument("-m '" + m +
                                  "': stats computes its own statistics across runs; name the metric alone");
  CCT_ASSIGN_OR_RETURN(Ensemble e, LoadEnsemble(selectors, default_db, opt));
  std::vector<query::Unit> unit_list;
  std::vector<const cct::Tree*> trees;
  for (size_t i = 0; i < e.runs.size(); ++i) {
    unit_list.push_back(query::Unit{query::Unit::Kind::kRun, query::RunLabel(e.runs[i])});
    trees.push_back(&e.trees[i]);
  }
  CCT_ASSIGN_OR_RETURN(const query::Units units, query::TreeUnits(std::move(unit_list), trees, /*fold_threads=*/false));
  const cct::Tree& tree = units.merged;
  CCT_ASSIGN_OR_RETURN(const std::vector<MetricId> ids, query::ResolveMetrics(tree, opt.report.metrics));
  const cct::MetricRegistry& reg = tree.metrics();
  std::vector<std::string> metric_names;
  std::vector<cct::Unit> metric_units;
  for (MetricId m : ids) {
    metric_names.push_back(reg.Get(m).name);
    metric_units.push_back(reg.Get(m).unit);
  }
  const StatTable st = MakeStatTable(opt.percentiles);
  const size_t n_runs = units.units.size();
  const ReportOptions& ro = opt.report;
  const std::string kind_word = opt.exclusive ? "exclusive" : "inclusive";

  // Per entry (node, or group) per run per metric: the values, entry-major.
  size_t entries = 0;
  std::vector<double> matrix;  // [entry][metric][run]
  auto put = [&](size_t entry, size_t m, size_t run, double v) { matrix[(entry * ids.size() + m) * n_runs + run] = v; };
  std::optional<FlatGroups> flat;
  if (!opt.flat) {
    entries = tree.size();
    matrix.assign(entries * ids.size() * n_runs, 0.0);
    query::ForEachUnit(units, [&](size_t u, cct::NodeValues& values) {
      for (size_t m = 0; m < ids.size(); ++m) {
        const std::vector<double>& v = opt.exclusive ? values.Exclusive(ids[m]) : values.Inclusive(ids[m]);
        for (NodeId n = 0; n < entries; ++n) put(n, m, u, v[n]);
      }
    });
  } else {
    flat.emplace(tree, ro.by);
    entries = flat->groups().size();
    matrix.assign(entries * ids.size() * n_runs, 0.0);
    const std::vector<MetricId> additive = reg.AdditiveOperands(ids);
    std::vector<std::vector<double>> acc_exc(additive.size()), acc_inc(additive.size());
    std::vector<double> sums(additive.size());
    query::ForEachUnit(units, [&](size_t u, cct::NodeValues& values) {
      for (size_t k = 0; k < additive.size(); ++k)
        flat->Accumulate(values.Exclusive(additive[k]), values.Inclusive(additive[k]), acc_exc[k], acc_inc[k]);
      for (size_t g = 0; g < entries; ++g) {
        for (size_t k = 0; k < additive.size(); ++k) sums[k] = opt.exclusive ? acc_exc[k][g] : acc_inc[k][g];
        const std::vector<double> sel = SelectedValues(reg, ids, additive, sums);
        for (size_t m = 0; m < ids.size(); ++m) put(g, m, u, sel[m]);
      }
    });
  }
  // Per entry: the statistics of each metric, StatTable order.
  std::vector<std::vector<double>> stats(entries);
  std::vector<double> scratch(n_runs);
  for (size_t e_i = 0; e_i < entries; ++e_i) {
    stats[e_i].reserve(ids.size() * st.per_metric());
    for (size_t m = 0; m < ids.size(); ++m) {
      const double* v = &matrix[(e_i * ids.size() + m) * n_runs];
      scratch.assign(v, v + n_runs);
      AppendSummary(scratch, opt.percentiles, stats[e_i]);
    }
  }
  matrix.clear();
  matrix.shrink_to_fit();
  auto mean_of = [&](size_t entry) { return stats[entry][0]; };

  std::string totals;
  if (!opt.flat)
    for (size_t m = 0; m < ids.size(); ++m)
      totals += std::string(m ? ", " : "") + metric_names[m] + " mean " +
                StatText(stats[cct::kRootNode][m * st.per_metric()], 0, metric_units[m], ro.ascii) + " total";

  if (opt.flat) {
    std::vector<size_t> rows;
    for (size_t g = 0; g < entries; ++g) {
      if (flat->groups()[g].nodes == 0) continue;
      bool any = false;
      for (size_t m = 0; m < ids.size(); ++m) any |= stats[g][m * st.per_metric() + 5] != 0 || stats[g][m * st.per_metric() + 4] != 0;
      if (any) rows.push_back(g);
    }
    std::sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
      const double ka = std::fabs(mean_of(a)), kb = std::fabs(mean_of(b));
      if (ka != kb) return ka > kb;
      const FlatGroup &ga = flat->groups()[a], &gb = flat->groups()[b];
      if (ga.name != gb.name) return ga.name < gb.name;
      return ga.module < gb.module;
    });
    if (ro.limit > 0 && rows.size() > ro.limit) rows.resize(ro.limit);
    auto label = [&](const FlatGroup& g) {
      std::string s = g.name;
      if (ro.by == GroupBy::kLine && !g.detail.empty()) s += "  " + g.detail;
      if (ro.by == GroupBy::kFunction && !g.module.empty()) s += "  [" + std::string(output::BaseName(g.module)) + "]";
      return s;
    };
    switch (ro.format) {
      case OutputFormat::kText: {
        out << e.label << ": " << kind_word << " " << metric_names.front() << "; top " << rows.size() << " by "
            << GroupHeader(ro.by) << " (mean)\n";
        output::TextTable table(StatColumns(st, metric_names), std::string(GroupHeader(ro.by)));
        for (size_t g : rows) {
          std::vector<std::string> cells;
          for (size_t i = 0; i < stats[g].size(); ++i)
            cells.push_back(StatText(stats[g][i], i % st.per_metric(), metric_units[i / st.per_metric()], ro.ascii));
          table.AddRow(std::move(cells), "", label(flat->groups()[g]));
        }
        table.Render(out, ro.width, ro.ascii);
        break;
      }
      case OutputFormat::kJson: {
        output::JsonWriter w(out);
        w.BeginObject().Field("by", GroupHeader(ro.by)).FieldInt("runs", static_cast<long long>(n_runs));
        w.Field("values", kind_word).Key("rows").BeginArray();
        for (size_t g : rows) {
          const FlatGroup& grp = flat->groups()[g];
          w.BeginObject().Field("name", grp.name).Field("kind", cct::FrameKindName(grp.kind)).Field("module", grp.module);
          w.FieldInt("nodes", static_cast<long long>(grp.nodes));
          WriteStatsJson(w, metric_names, metric_units, st, stats[g]);
          w.EndObject();
        }
        w.EndArray().EndObject();
        out << '\n';
        break;
      }
      case OutputFormat::kCsv: {
        out << "name,kind,module,nodes," << StatsCsvHeader(metric_names, st) << '\n';
        for (size_t g : rows) {
          const FlatGroup& grp = flat->groups()[g];
          out << CsvField(grp.name) << ',' << cct::FrameKindName(grp.kind) << ',' << CsvField(grp.module) << ','
              << grp.nodes << ',' << StatsCsvCells(metric_units, st, stats[g]) << '\n';
        }
        break;
      }
    }
    return Status::Ok();
  }

  // The tree: children by mean, --min against the root's mean, --depth, --focus.
  std::vector<double> key(entries);
  for (size_t n = 0; n < entries; ++n) key[n] = mean_of(n);
  const cct::Children children = cct::BuildChildren(tree);
  const double threshold = ro.min_pct > 0 ? std::fabs(key[cct::kRootNode]) * ro.min_pct / 100.0 : 0.0;
  output::VisibleTree vis(tree, children, key, threshold, ro.depth);
  std::vector<NodeId> tops{cct::kRootNode};
  if (!ro.focus.empty()) {
    CCT_ASSIGN_OR_RETURN(const cct::Pattern focus, cct::Pattern::Compile(ro.focus, "--focus pattern"));
    tops = cct::OutermostMatches(tree, focus);
    if (tops.empty()) return cct::NotFound("no frame matches --focus '" + cct::ElideMiddle(ro.focus, 80) + "'");
  }
  struct Item {
    NodeId node;
    int depth;
    std::string prefix, child_prefix;
  };
  switch (ro.format) {
    case OutputFormat::kText: {
      out << e.label << ", " << kind_word << ": " << totals << '\n';
      const output::TreeGlyphs& g = output::Glyphs(ro.ascii);
      for (NodeId top : tops) {
        if (!ro.focus.empty()) {
          out << "\nfocus: ";
          const std::vector<std::string> path = cct::PathNames(tree, top);
          for (size_t i = 0; i < path.size(); ++i) out << (i ? (ro.ascii ? " > " : " › ") : "") << path[i];
          out << '\n';
        }
        output::TextTable table(StatColumns(st, metric_names), "calling context");
        std::vector<Item> stack{{top, 0, "", ""}};
        while (!stack.empty()) {
          Item it = std::move(stack.back());
          stack.pop_back();
          std::vector<std::string> cells;
          for (size_t i = 0; i < stats[it.node].size(); ++i)
            cells.push_back(StatText(stats[it.node][i], i % st.per_metric(), metric_units[i / st.per_metric()], ro.ascii));
          table.AddRow(std::move(cells), it.prefix, output::DisplayName(tree, it.node));
          const std::vector<NodeId> kids = vis.Children(it.node, it.depth);
          for (size_t i = kids.size(); i-- > 0;) {
            const bool last = i + 1 == kids.size();
            stack.push_back({kids[i], it.depth + 1, it.child_prefix + (last ? g.last : g.branch),
                             it.child_prefix + (last ? g.space : g.pipe)});
          }
        }
        table.Render(out, ro.width, ro.ascii);
      }
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      w.BeginObject().Field("label", e.label).FieldInt("runs", static_cast<long long>(n_runs));
      w.Field("values", kind_word);
      w.Key("run_ids").BeginArray();
      for (const store::RunMeta& r : e.runs) w.Int(static_cast<long long>(r.id));
      w.EndArray();
      w.Key("trees").BeginArray();
      for (NodeId top : tops) {
        // Nested objects as tree --format json, "stats" in place of values.
        output::WriteNestedJson(
            w, top,
            [&](NodeId n) {
              output::WriteFrameFields(w, tree, n);
              WriteStatsJson(w, metric_names, metric_units, st, stats[n]);
            },
            [&](NodeId n, int depth) { return vis.Children(n, depth); });
      }
      w.EndArray().EndObject();
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      out << "depth,name,kind,module,file,line," << StatsCsvHeader(metric_names, st) << ",path\n";
      for (NodeId top : tops) {
        // The path column grows along the walk (`prefix` holds a node's path)
        // instead of climbing to the root for every row.
        std::string top_path;
        for (const std::string& p : cct::PathNames(tree, top)) top_path += (top_path.empty() ? "" : ";") + p;
        std::vector<Item> stack{{top, 0, top_path, ""}};
        while (!stack.empty()) {
          const Item it = std::move(stack.back());
          stack.pop_back();
          const cct::Frame f = tree.frame(it.node);
          out << it.depth << ',' << CsvField(tree.str(f.name)) << ',' << cct::FrameKindName(f.kind) << ','
              << CsvField(tree.str(f.module)) << ',' << CsvField(tree.str(f.file)) << ',' << f.line << ','
              << StatsCsvCells(metric_units, st, stats[it.node]) << ',' << CsvField(it.prefix) << '\n';
          const std::vector<NodeId> kids = vis.Children(it.node, it.depth);
          for (size_t i = kids.size(); i-- > 0;)
            stack.push_back({kids[i], it.depth + 1,
                             (it.prefix.empty() ? "" : it.prefix + ";") + std::string(tree.name(kids[i])), ""});
        }
      }
      break;
    }
  }
  return Status::Ok();
}

cct::Status StatsCommand(const ReportRequest& request, std::ostream& out) {
  StatsOptions opt;
  CCT_ASSIGN_OR_RETURN(opt.report, ParseReportOptions(request));
  opt.flat = request.by.has_value();
  opt.exclusive = opt.report.sort_exclusive;
  opt.merge_threads = request.merge_threads;
  opt.keep_lines = request.lines;
  if (request.percentiles) {
    CCT_ASSIGN_OR_RETURN(opt.percentiles, ParsePercentiles(*request.percentiles));
  }
  return WriteStatsReport(request.args, request.db_path, opt, out);
}

}  // namespace reports
