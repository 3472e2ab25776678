#include "query/aggregate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "cct/tree_ops.h"

namespace query {

using cct::MetricId;
using cct::NodeId;

namespace {

constexpr uint32_t kNoUnit = UINT32_MAX;

// "rank 3" / "rank 3 thread 1" (the HPCToolkit and Hatchet importers' thread
// names): the rank part as the unit's name, else "".
std::string RankOfThreadName(std::string_view name) {
  constexpr std::string_view kPrefix = "rank ";
  if (name.substr(0, kPrefix.size()) != kPrefix || name.size() == kPrefix.size()) return "";
  const std::string_view rest = name.substr(kPrefix.size());
  const size_t digits = rest.find_first_not_of("0123456789");
  if (digits == 0) return "";
  if (digits == std::string_view::npos) return std::string(rest);
  constexpr std::string_view kThread = " thread ";
  const std::string_view tail = rest.substr(digits);
  if (tail.substr(0, kThread.size()) != kThread || tail.size() == kThread.size() ||
      tail.find_first_not_of("0123456789", kThread.size()) != std::string_view::npos)
    return "";
  return std::string(rest);
}

// (merged node, value) entries as a column: sorted, and summed per node,
// since several source nodes of one unit can map to one merged node (a
// thread nested in another, sibling frames that path identity does not
// tell apart).
cct::SparseColumn SumEntries(std::vector<std::pair<NodeId, double>>& e) {
  std::sort(e.begin(), e.end());
  std::vector<NodeId> nodes;
  std::vector<double> values;
  for (const auto& nv : e) {
    if (!nodes.empty() && nodes.back() == nv.first) {
      values.back() += nv.second;
    } else {
      nodes.push_back(nv.first);
      values.push_back(nv.second);
    }
  }
  return cct::SparseColumn::FromSparse(std::move(nodes), std::move(values));
}

// One unit's exclusive columns, sized to the merged tree's metrics.
void SizeColumns(Units& u) {
  for (std::vector<cct::SparseColumn>& cols : u.exclusive) cols.resize(u.merged.metrics().size());
}

}  // namespace

std::string Unit::Label() const {
  switch (kind) {
    case Kind::kRank: return "rank " + name;
    case Kind::kRun: return name;
    case Kind::kThread: return name.empty() ? "whole run" : "thread '" + name + "'";
  }
  return name;
}

Units ThreadUnits(const cct::Tree& tree) {
  Units out;
  const cct::MetricRegistry& reg = tree.metrics();
  if (!cct::HasKind(tree, cct::FrameKind::kThread)) {
    out.merged = tree;
    out.units.push_back(Unit{Unit::Kind::kThread, ""});
    out.exclusive.emplace_back(reg.size());
    for (MetricId m = 0; m < reg.size(); ++m)
      if (reg.Get(m).kind == cct::MetricKind::kAdditive) out.exclusive[0][m] = tree.column(m);
    return out;
  }
  std::vector<NodeId> node_map;
  // FoldKind(kThread) as a Rebuild, for its node map.
  out.merged = cct::Rebuild(
      tree,
      [](cct::Tree& dst, cct::FrameId f) {
        return dst.frames().kind(f) == cct::FrameKind::kThread ? cct::kFoldFrame : f;
      },
      false, &node_map);
  // Each node's unit: its nearest thread ancestor's (parents have smaller ids).
  std::vector<uint32_t> unit_of(tree.size(), kNoUnit);
  for (NodeId n = 0; n < tree.size(); ++n) {
    if (tree.kind(n) == cct::FrameKind::kThread) {
      unit_of[n] = static_cast<uint32_t>(out.units.size());
      const std::string name(tree.name(n));
      const std::string rank = RankOfThreadName(name);
      out.units.push_back(rank.empty() ? Unit{Unit::Kind::kThread, name} : Unit{Unit::Kind::kRank, rank});
    } else if (n != cct::kRootNode) {
      unit_of[n] = unit_of[tree.parent(n)];
    }
  }
  out.exclusive.assign(out.units.size(), std::vector<cct::SparseColumn>(reg.size()));
  for (MetricId m = 0; m < reg.size(); ++m) {
    if (reg.Get(m).kind != cct::MetricKind::kAdditive) continue;
    std::vector<std::vector<std::pair<NodeId, double>>> entries(out.units.size());
    tree.column(m).ForEach([&](NodeId n, double v) {
      if (n < unit_of.size() && unit_of[n] != kNoUnit && v != 0) entries[unit_of[n]].emplace_back(node_map[n], v);
    });
    for (size_t u = 0; u < entries.size(); ++u) out.exclusive[u][m] = SumEntries(entries[u]);
  }
  return out;
}

cct::Result<Units> TreeUnits(std::vector<Unit> units, const std::vector<const cct::Tree*>& trees, bool fold_threads) {
  Units out;
  out.units = std::move(units);
  out.exclusive.resize(trees.size());
  std::vector<NodeId> node_map;
  for (size_t u = 0; u < trees.size(); ++u) {
    cct::Tree folded;
    const bool threads = fold_threads && cct::HasKind(*trees[u], cct::FrameKind::kThread);
    if (threads) folded = cct::FoldKind(*trees[u], cct::FrameKind::kThread);
    const cct::Tree& t = threads ? folded : *trees[u];
    const std::string where = u < out.units.size() ? out.units[u].Label() : "unit " + std::to_string(u + 1);
    CCT_RETURN_IF_ERROR(cct::MergeInto(out.merged, t, 1.0, &node_map).WithContext(where));
    const cct::MetricRegistry& reg = t.metrics();
    out.exclusive[u].resize(out.merged.metrics().size());
    for (MetricId m = 0; m < reg.size(); ++m) {
      if (reg.Get(m).kind != cct::MetricKind::kAdditive) continue;
      const MetricId to = out.merged.metrics().Find(reg.Get(m).name);
      std::vector<std::pair<NodeId, double>> e;
      t.column(m).ForEach([&](NodeId n, double v) {
        if (v != 0) e.emplace_back(node_map[n], v);
      });
      out.exclusive[u][to] = SumEntries(e);
    }
  }
  SizeColumns(out);
  return out;
}

cct::Result<Units> ProfileUnits(const Profile& profile) {
  // A job's ranks (job:ID, job:ID/all; not one rank's processes), or a
  // group whose runs all carry a launcher rank (what cct-aggregate forms,
  // src/aggregate/job.cc): a unit per rank, in rank order, its processes'
  // trees merged.
  const bool ranked_group =
      !profile.selector.is_invocation() && profile.runs.size() > 1 &&
      std::all_of(profile.runs.begin(), profile.runs.end(),
                  [](const store::RunMeta& r) { return r.launcher && r.launcher->rank >= 0; });
  const bool ranks = (profile.selector.is_job() && !profile.selector.rank) || ranked_group;
  if (!profile.selector.is_invocation() && !ranks) return ThreadUnits(profile.tree);
  if (profile.run_trees.size() != profile.runs.size())
    return cct::Status(cct::ErrorCode::kInternal, "the processes' trees were not kept (LoadOptions::keep_run_trees)");
  std::vector<Unit> units;
  std::vector<const cct::Tree*> trees;
  if (ranks) {
    std::map<int64_t, std::vector<size_t>> by_rank;
    for (size_t i = 0; i < profile.runs.size(); ++i)
      by_rank[profile.runs[i].launcher ? profile.runs[i].launcher->rank : -1].push_back(i);
    std::vector<cct::Tree> merged;
    merged.reserve(by_rank.size());  // `trees` points into it
    for (const auto& [rank, runs] : by_rank) {
      units.push_back(Unit{Unit::Kind::kRank, std::to_string(rank)});
      if (runs.size() == 1) {
        trees.push_back(&profile.run_trees[runs.front()]);
        continue;
      }
      merged.emplace_back();
      for (size_t i : runs)
        CCT_RETURN_IF_ERROR(cct::MergeInto(merged.back(), profile.run_trees[i]).WithContext(RunLabel(profile.runs[i])));
      trees.push_back(&merged.back());
    }
    return TreeUnits(std::move(units), trees, /*fold_threads=*/true);
  }
  for (size_t i = 0; i < profile.runs.size(); ++i) {
    const store::RunMeta& run = profile.runs[i];
    if (run.launcher && run.launcher->rank >= 0)
      units.push_back(Unit{Unit::Kind::kRank, std::to_string(run.launcher->rank)});
    else
      units.push_back(Unit{Unit::Kind::kRun, RunLabel(run)});
    trees.push_back(&profile.run_trees[i]);
  }
  return TreeUnits(std::move(units), trees, /*fold_threads=*/true);
}

std::optional<std::vector<std::string>> StoredUnitLabels(const store::RunMeta& run) {
  // Not only source "aggregate": a run derived from one keeps the record's
  // members, and its statistics.
  if (!run.extra->contains(std::string(kAggregateUnitsKey))) return std::nullopt;
  const nlohmann::json& a = (*run.extra)[std::string(kAggregateUnitsKey)];
  if (!a.is_object() || !a.contains("units") || !a["units"].is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const nlohmann::json& u : a["units"]) out.push_back(u.is_string() ? u.get<std::string>() : u.dump());
  return out;
}

void ForEachUnit(const Units& units, const std::function<void(size_t unit, cct::NodeValues& values)>& f) {
  // One scratch copy of the merged tree whose columns are swapped per unit:
  // NodeValues then derives inclusive and derived values as for any tree.
  cct::Tree scratch = units.merged;
  const cct::MetricRegistry& reg = scratch.metrics();
  for (size_t u = 0; u < units.units.size(); ++u) {
    for (MetricId m = 0; m < reg.size(); ++m)
      if (reg.Get(m).kind == cct::MetricKind::kAdditive)
        scratch.SetColumn(m, m < units.exclusive[u].size() ? units.exclusive[u][m] : cct::SparseColumn());
    cct::NodeValues values(scratch);
    f(u, values);
  }
}

cct::Result<Aggregation> ParseAggregation(std::string_view name) {
  if (name == "sum") return Aggregation::kSum;
  if (name == "mean") return Aggregation::kMean;
  if (name == "min") return Aggregation::kMin;
  if (name == "max") return Aggregation::kMax;
  if (name == "imbalance") return Aggregation::kImbalance;
  return cct::InvalidArgument("unknown aggregation '" + std::string(name) +
                              "' (expected sum, mean, min, max or imbalance)");
}

std::string_view AggregationName(Aggregation a) {
  switch (a) {
    case Aggregation::kSum: return "sum";
    case Aggregation::kMean: return "mean";
    case Aggregation::kMin: return "min";
    case Aggregation::kMax: return "max";
    case Aggregation::kImbalance: return "imbalance";
  }
  return "";
}

double UnitAggregate::imbalance(NodeId n) const {
  const double m = mean(n);
  return m == 0 ? std::numeric_limits<double>::quiet_NaN() : max[n] / m;
}

double UnitAggregate::Get(Aggregation a, NodeId n) const {
  switch (a) {
    case Aggregation::kSum: return sum[n];
    case Aggregation::kMean: return mean(n);
    case Aggregation::kMin: return min[n];
    case Aggregation::kMax: return max[n];
    case Aggregation::kImbalance: return imbalance(n);
  }
  return 0;
}

void UnitAggregate::Reset(size_t entries, size_t unit_count) {
  units = unit_count;
  sum.assign(entries, 0.0);
  min.assign(entries, 0.0);
  max.assign(entries, 0.0);
  argmax.assign(entries, 0);
}

void UnitAggregate::Add(size_t u, size_t i, double x) {
  sum[i] += x;
  if (u == 0) {
    min[i] = max[i] = x;
    return;
  }
  min[i] = std::min(min[i], x);
  if (x > max[i]) {
    max[i] = x;
    argmax[i] = static_cast<uint32_t>(u);
  }
}

std::vector<UnitAggregate> AggregateUnits(const Units& units, const std::vector<AggregateRequest>& requests) {
  const size_t n = units.merged.size();
  std::vector<UnitAggregate> out(requests.size());
  for (UnitAggregate& a : out) a.Reset(n, units.units.size());
  ForEachUnit(units, [&](size_t u, cct::NodeValues& values) {
    for (size_t r = 0; r < requests.size(); ++r) {
      const std::vector<double>& v =
          requests[r].inclusive ? values.Inclusive(requests[r].metric) : values.Exclusive(requests[r].metric);
      for (NodeId i = 0; i < n; ++i) out[r].Add(u, i, v[i]);
    }
  });
  return out;
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Summary Summarize(std::vector<double>& values, const std::vector<double>& percentiles) {
  Summary s;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (values.empty()) {
    s.mean = s.median = s.sd = s.cv = s.min = s.max = nan;
    s.percentiles.assign(percentiles.size(), nan);
    return s;
  }
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double ss = 0;
  for (double v : values) ss += (v - s.mean) * (v - s.mean);
  s.sd = values.size() > 1 ? std::sqrt(ss / (n - 1)) : nan;
  s.cv = s.mean != 0 ? s.sd / s.mean : nan;
  s.min = values.front();
  s.max = values.back();
  s.median = Percentile(values, 50);
  for (double p : percentiles) s.percentiles.push_back(Percentile(values, p));
  return s;
}

}  // namespace query
