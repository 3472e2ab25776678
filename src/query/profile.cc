#include "query/profile.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "cct/tree_ops.h"
#include "query/time_window.h"

namespace query {

using cct::Result;
using cct::Status;

std::string RunLabel(const store::RunMeta& run) {
  std::string s = "run " + std::to_string(run.id);
  if (!run.name.empty()) s += " '" + run.name + "'";
  return s;
}

std::vector<double> IterationTotals(const store::RunIterations& iterations, const cct::MetricRegistry& metrics,
                                    cct::MetricId metric) {
  std::vector<double> out;
  out.reserve(iterations.iterations.size());
  if (metric >= metrics.size()) {
    out.assign(iterations.iterations.size(), 0.0);
    return out;
  }
  const bool derived = metrics.Get(metric).kind == cct::MetricKind::kDerived;
  std::vector<double> sums(metrics.size());
  for (const store::Iteration& it : iterations.iterations) {
    std::fill(sums.begin(), sums.end(), 0.0);
    for (const store::IterationColumn& c : it.columns) {
      if (c.metric >= sums.size()) continue;
      for (double v : c.values) sums[c.metric] += v;
    }
    if (!derived) {
      out.push_back(sums[metric]);
      continue;
    }
    const cct::Formula* f = metrics.formula(metric);
    const std::vector<cct::MetricId>& ops = metrics.operand_ids(metric);
    out.push_back(f ? f->Eval([&](uint32_t i) { return i < ops.size() && ops[i] < sums.size() ? sums[ops[i]] : 0.0; })
                    : 0.0);
  }
  return out;
}

std::string InvocationLabel(const std::string& selector_text, size_t processes) {
  return "invocation " + selector_text + " (total of " + std::to_string(processes) +
         (processes == 1 ? " process)" : " processes)");
}

size_t MedianIteration(const std::vector<double>& totals) {
  std::vector<size_t> order(totals.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool na = std::isnan(totals[a]), nb = std::isnan(totals[b]);
    if (na != nb) return nb;
    if (!na && totals[a] != totals[b]) return totals[a] < totals[b];
    return a < b;
  });
  return order.empty() ? 0 : order[(order.size() - 1) / 2];
}

Status ApplyIterations(cct::Tree& tree, const store::RunIterations& iterations, size_t first, size_t last) {
  const cct::MetricRegistry& reg = tree.metrics();
  if (first > last || last >= iterations.iterations.size())
    return cct::InvalidArgument("iterations " + std::to_string(first + 1) + ".." + std::to_string(last + 1) +
                                " are not all there");
  std::vector<cct::SparseColumn> columns(reg.size());
  std::vector<std::vector<double>> dense(reg.size());
  std::vector<bool> sparse(reg.size(), false);
  for (size_t i = first; i <= last; ++i) {
    for (const store::IterationColumn& c : iterations.iterations[i].columns) {
      if (c.metric >= reg.size() || reg.Get(c.metric).kind != cct::MetricKind::kAdditive ||
          c.nodes.size() != c.values.size())
        return cct::Corrupt("iteration " + std::to_string(i + 1) + " has values of an unknown metric");
      for (cct::NodeId n : c.nodes)
        if (n >= tree.size()) return cct::Corrupt("iteration " + std::to_string(i + 1) + " has values beyond the tree");
      const bool strictly_sorted =
          std::adjacent_find(c.nodes.begin(), c.nodes.end(), std::greater_equal<>()) == c.nodes.end();
      if (first == last && strictly_sorted && !sparse[c.metric] && dense[c.metric].empty()) {
        // One iteration (as stored: one column per metric): its column as it is.
        columns[c.metric] = cct::SparseColumn::FromSparse(c.nodes, c.values);
        sparse[c.metric] = true;
        continue;
      }
      std::vector<double>& d = dense[c.metric];
      if (d.empty()) {
        d.assign(tree.size(), 0.0);
        if (sparse[c.metric]) columns[c.metric].ForEach([&](cct::NodeId n, double v) { d[n] += v; });
        sparse[c.metric] = false;
      }
      for (size_t k = 0; k < c.nodes.size(); ++k) d[c.nodes[k]] += c.values[k];
    }
  }
  for (cct::MetricId m = 0; m < reg.size(); ++m) {
    if (reg.Get(m).kind != cct::MetricKind::kAdditive) continue;
    if (!dense[m].empty()) columns[m] = cct::SparseColumn::FromDense(std::move(dense[m]));
    tree.SetColumn(m, std::move(columns[m]));
  }
  return Status::Ok();
}

namespace {

// Replaces the run's values in `tree` with those of the iteration(s) the
// selector names; returns how the label names them ("iteration 4").
Result<std::string> SelectIterations(store::Database& db, const store::RunMeta& run, const store::IterationSpec& spec,
                                     const std::string& selector_text, const LoadOptions& options, cct::Tree& tree) {
  const std::string where = "'" + selector_text + "': " + RunLabel(run);
  CCT_ASSIGN_OR_RETURN(std::optional<store::RunIterations> its, db.ReadIterations(run.id));
  if (!its) return cct::InvalidArgument(where + " has no iterations (record with --iteration REGEX)");
  const size_t n = its->iterations.size();
  if (n == 0)
    return cct::InvalidArgument(where + " has no iterations (no NVTX range matched /" + its->range + "/)");
  std::string desc;
  size_t first = 0, last = 0;
  if (spec.median) {
    cct::MetricId metric = 0;
    if (!options.median_metric.empty()) {
      CCT_RETURN_IF_ERROR(DefineMetrics(tree, {options.median_metric}));
      CCT_ASSIGN_OR_RETURN(std::vector<cct::MetricId> ids, ResolveMetrics(tree, {options.median_metric}));
      metric = ids.front();
    } else if (tree.metrics().size() == 0) {
      return cct::NotFound(where + " has no metrics to choose the median iteration by");
    }
    first = last = MedianIteration(IterationTotals(*its, tree.metrics(), metric));
    desc = "iteration " + std::to_string(first + 1) + " (median of " + std::to_string(n) + " by " +
           tree.metrics().Get(metric).name + ")";
  } else {
    if (spec.last > n) {
      const std::string asked = spec.first == spec.last
                                    ? "iteration " + std::to_string(spec.first)
                                    : "iterations " + std::to_string(spec.first) + ".." + std::to_string(spec.last);
      return cct::InvalidArgument(where + " has " + std::to_string(n) + (n == 1 ? " iteration" : " iterations") +
                                  " (1.." + std::to_string(n) + "), not " + asked);
    }
    first = spec.first - 1;
    last = spec.last - 1;
    desc = first == last ? "iteration " + std::to_string(spec.first)
                         : "iterations " + std::to_string(spec.first) + ".." + std::to_string(spec.last) + " (sum)";
  }
  Status applied = ApplyIterations(tree, *its, first, last);
  if (!applied.ok()) return cct::Corrupt(db.path() + " is damaged: run " + std::to_string(run.id) + ": " + applied.message());
  return desc;
}

// Replaces the run's values in `tree` with those of the selector's time
// window; returns how the label names it ("t=0.300s..0.500s").
Result<std::string> SelectWindow(store::Database& db, const store::RunMeta& run, const store::TimeWindowSpec& spec,
                                 cct::Tree& tree) {
  CCT_ASSIGN_OR_RETURN(std::optional<store::RunTrace> trace, db.ReadTrace(run.id));
  if (!trace) return cct::InvalidArgument("run " + std::to_string(run.id) + " has no trace (record with cct-record --trace)");
  auto window = ResolveWindow(tree, *trace, spec);
  if (!window.ok()) return cct::InvalidArgument(RunLabel(run) + ": " + window.status().message());
  auto applied = ApplyTimeWindow(tree, *trace, *window);
  if (!applied.ok())
    return cct::Corrupt(db.path() + " is damaged: run " + std::to_string(run.id) + ": " + applied.status().message());
  std::string desc = (spec.is_range() ? "range " + spec.range + "#" + std::to_string(spec.instance) + " (" : "") +
                     DescribeWindow(*window, *trace) + (spec.is_range() ? ")" : "");
  std::string notes;
  if (!applied->dropped.empty()) {
    notes = "not windowed, left out: ";
    for (size_t i = 0; i < applied->dropped.size(); ++i) notes += (i ? ", " : "") + applied->dropped[i];
  }
  if (trace->dropped > 0)
    notes += std::string(notes.empty() ? "" : "; ") + "the trace stops at --trace-limit (" +
             std::to_string(trace->dropped) + " events not kept)";
  if (!notes.empty()) desc += " [" + notes + "]";
  return desc;
}

}  // namespace

Result<Profile> LoadProfile(const std::string& selector_text, const std::string& default_db,
                            const LoadOptions& options) {
  Profile p;
  CCT_ASSIGN_OR_RETURN(p.selector, store::ParseSelector(selector_text, default_db));
  p.db_path = p.selector.db_path;
  CCT_ASSIGN_OR_RETURN(auto db, store::Database::Open(p.db_path, store::Database::Mode::kRead));
  CCT_ASSIGN_OR_RETURN(p.runs, store::SelectRuns(*db, p.selector));

  // A run's tree, holding the selected iterations' values when asked.
  std::string iteration_desc;
  auto read = [&](const store::RunMeta& run) -> Result<cct::Tree> {
    CCT_ASSIGN_OR_RETURN(cct::Tree t, db->ReadTree(run.id));
    if (p.selector.iteration) {
      CCT_ASSIGN_OR_RETURN(iteration_desc,
                           SelectIterations(*db, run, *p.selector.iteration, selector_text, options, t));
    }
    if (p.selector.window) {
      CCT_ASSIGN_OR_RETURN(iteration_desc, SelectWindow(*db, run, *p.selector.window, t));
    }
    return t;
  };
  // Folds what the options fold away, in the merged tree and in each run's.
  auto fold = [&](cct::Tree& t) {
    if (!options.keep_lines && cct::HasKind(t, cct::FrameKind::kLine)) t = cct::FoldKind(t, cct::FrameKind::kLine);
    if (options.merge_threads && cct::HasKind(t, cct::FrameKind::kThread))
      t = cct::FoldKind(t, cct::FrameKind::kThread);
  };
  if (p.runs.size() == 1 && !p.selector.is_group()) {
    CCT_ASSIGN_OR_RETURN(p.tree, read(p.runs.front()));
    if (options.keep_run_trees) {
      p.run_trees.push_back(p.tree);
      fold(p.run_trees.back());
    }
    p.label = RunLabel(p.runs.front());
    if (!iteration_desc.empty()) p.label += " " + iteration_desc;
  } else {
    // A tag group's runs are repetitions: their mean. An invocation's runs
    // are its processes, each doing part of the work: their total.
    const bool total = p.selector.is_invocation();
    const double scale = total ? 1.0 : 1.0 / static_cast<double>(p.runs.size());
    for (const store::RunMeta& run : p.runs) {
      CCT_ASSIGN_OR_RETURN(cct::Tree t, read(run));
      if (!(options.keep_run_trees && options.skip_merged_tree))
        CCT_RETURN_IF_ERROR(cct::MergeInto(p.tree, t, scale).WithContext(RunLabel(run)));
      if (options.keep_run_trees) {
        fold(t);
        p.run_trees.push_back(std::move(t));
      }
    }
    p.label = total ? InvocationLabel(p.selector.text, p.runs.size())
                    : "group " + p.selector.text + " (mean of " + std::to_string(p.runs.size()) + " runs)";
    if (p.selector.window) p.label += ", each run " + iteration_desc + " of its own trace";
  }
  fold(p.tree);
  CCT_RETURN_IF_ERROR(DefineMetrics(p.tree, options.metrics));
  for (cct::Tree& t : p.run_trees) CCT_RETURN_IF_ERROR(DefineMetrics(t, options.metrics));
  return p;
}

Status DefineMetrics(cct::Tree& tree, const std::vector<std::string>& specs) {
  cct::MetricRegistry& reg = tree.metrics();
  for (const std::string& spec : specs) {
    // A stored metric whose name holds '=' is a name, not a definition.
    if (!cct::MetricRegistry::IsDefinition(spec) || reg.Find(spec) != cct::kNoMetric) continue;
    const cct::MetricId have = reg.Find(cct::MetricRegistry::DefinedName(spec));
    if (have != cct::kNoMetric && reg.Get(have).kind == cct::MetricKind::kDerived &&
        reg.Get(have).formula == spec.substr(spec.find('=') + 1))
      continue;
    CCT_RETURN_IF_ERROR(reg.Define(spec).status());
  }
  return Status::Ok();
}

Result<std::vector<cct::MetricId>> ResolveMetrics(const cct::Tree& tree, const std::vector<std::string>& names) {
  const cct::MetricRegistry& reg = tree.metrics();
  if (reg.size() == 0) return cct::NotFound("the run has no metrics");
  std::vector<cct::MetricId> out;
  if (names.empty()) {
    out.push_back(0);
    return out;
  }
  for (const std::string& n : names) {
    cct::MetricId id = reg.Find(n);
    if (id == cct::kNoMetric && cct::MetricRegistry::IsDefinition(n)) id = reg.Find(cct::MetricRegistry::DefinedName(n));
    if (id == cct::kNoMetric) {
      std::string have;
      for (cct::MetricId m = 0; m < reg.size(); ++m) have += (m ? ", " : "") + reg.Get(m).name;
      return cct::InvalidArgument("no metric '" + n + "' in this run; it has: " + have);
    }
    out.push_back(id);
  }
  return out;
}

}  // namespace query
