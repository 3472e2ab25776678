#include "diff/diff.h"

#include <algorithm>
#include <cmath>

#include "cct/beside.h"
#include "cct/tree_ops.h"
#include "diff/stats.h"

namespace diff {

using cct::MetricId;
using cct::NodeId;
using cct::Result;

std::string_view StatusName(NodeStatus s) {
  switch (s) {
    case NodeStatus::kBoth: return "both";
    case NodeStatus::kGone: return "gone";
    case NodeStatus::kNew: return "new";
  }
  return "both";
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kNone: return "";
    case Verdict::kRegression: return "regression";
    case Verdict::kImprovement: return "improvement";
  }
  return "";
}

namespace {

struct Input {
  const RunTree* run;
  const char* side;  // "base" or "candidate"
};

std::string MetricList(const cct::Tree& t) {
  std::string s;
  for (MetricId m = 0; m < t.metrics().size(); ++m) s += (m ? ", " : "") + t.metrics().Get(m).name;
  return s.empty() ? "no metrics" : s;
}

std::string Describe(const cct::MetricDesc& d) {
  std::string s(cct::UnitName(d.unit));
  if (d.kind == cct::MetricKind::kDerived) s += " derived (" + d.formula + ")";
  if (d.kind == cct::MetricKind::kSummary) s += " summary";
  return s;
}

// The metrics to compare, checked present and alike in every input.
Result<std::vector<cct::MetricDesc>> ResolveMetrics(const std::vector<Input>& inputs,
                                                    const std::vector<std::string>& names) {
  const cct::Tree& first = inputs.front().run->tree;
  // -m NAME=EXPR: the loader registered the definition as NAME in every tree.
  std::vector<std::string> wanted;
  for (const std::string& n : names)
    wanted.push_back(first.metrics().Find(n) == cct::kNoMetric ? std::string(cct::MetricRegistry::DefinedName(n)) : n);
  if (wanted.empty()) {
    for (MetricId m = 0; m < first.metrics().size() && wanted.empty(); ++m) {
      const cct::MetricDesc& d = first.metrics().Get(m);
      bool everywhere = true;
      for (const Input& in : inputs) {
        // By name only: a namesake in another unit is reported below as
        // incompatible, not skipped silently.
        if (in.run->tree.metrics().Find(d.name) == cct::kNoMetric) {
          everywhere = false;
          break;
        }
      }
      if (everywhere) wanted.push_back(d.name);
    }
    if (wanted.empty()) {
      const Input& other = inputs.back();
      return cct::InvalidArgument("the base and the candidate have no metric in common (" +
                                  inputs.front().run->label + ": " + MetricList(first) + "; " + other.run->label +
                                  ": " + MetricList(other.run->tree) + ")");
    }
  }
  std::vector<cct::MetricDesc> out;
  for (const std::string& name : wanted) {
    if (std::find_if(out.begin(), out.end(), [&](const cct::MetricDesc& d) { return d.name == name; }) != out.end())
      continue;
    const cct::MetricDesc* ref = nullptr;
    const Input* ref_input = nullptr;
    for (const Input& in : inputs) {
      const cct::Tree& t = in.run->tree;
      const MetricId id = t.metrics().Find(name);
      if (id == cct::kNoMetric)
        return cct::InvalidArgument("no metric '" + name + "' in " + std::string(in.side) + " " + in.run->label +
                                    "; it has: " + MetricList(t));
      const cct::MetricDesc& d = t.metrics().Get(id);
      if (ref == nullptr) {
        ref = &d;
        ref_input = &in;
      } else if (d.unit != ref->unit || d.kind != ref->kind || d.formula != ref->formula) {
        return cct::InvalidArgument("metric '" + name + "' is incompatible: " + Describe(*ref) + " in " +
                                    ref_input->side + " " + ref_input->run->label + ", " + Describe(d) + " in " +
                                    in.side + " " + in.run->label);
      }
    }
    out.push_back(*ref);
  }
  return out;
}

// Adds every node's inclusive value to its parent: one reverse pass, since
// union ids grow from parents to children.
void Accumulate(const cct::Tree& tree, std::vector<double>& values) {
  for (NodeId n = static_cast<NodeId>(tree.size()) - 1; n > 0; --n) values[tree.parent(n)] += values[n];
}

struct RunValues {
  std::vector<double> exc, inc;
};

// One run's values of an additive metric in union space.
RunValues AdditiveValues(const cct::Tree& tree, const std::vector<NodeId>& map, MetricId m, const cct::Tree& u) {
  RunValues v;
  v.exc.assign(u.size(), 0.0);
  tree.column(m).ForEach([&](NodeId n, double x) {
    if (n < map.size() && map[n] != cct::kNoNode) v.exc[map[n]] += x;
  });
  v.inc = v.exc;
  Accumulate(u, v.inc);
  return v;
}

// A summary metric (an aggregate run's statistic): its stored exclusive and
// inclusive values, node by node; a statistic is not summed, so a union
// node reached by no node of the run holds 0 and one reached by several
// (path identity merged them) the last one's.
RunValues SummaryValues(const cct::Tree& tree, const std::vector<NodeId>& map, MetricId m, const cct::Tree& u) {
  RunValues v;
  v.exc.assign(u.size(), 0.0);
  v.inc.assign(u.size(), 0.0);
  tree.column(m).ForEach([&](NodeId n, double x) {
    if (n < map.size() && map[n] != cct::kNoNode) v.exc[map[n]] = x;
  });
  tree.inclusive_column(m).ForEach([&](NodeId n, double x) {
    if (n < map.size() && map[n] != cct::kNoNode) v.inc[map[n]] = x;
  });
  return v;
}

// A derived metric: its formula over the operands' union-space values. A
// node none of whose operands has a value, or whose formula has none
// (division by zero), counts 0.
RunValues DerivedValues(const cct::Tree& tree, const std::vector<NodeId>& map, MetricId m, const cct::Tree& u) {
  const cct::Formula* formula = tree.metrics().formula(m);
  std::vector<RunValues> ops;
  for (MetricId op : tree.metrics().operand_ids(m)) ops.push_back(AdditiveValues(tree, map, op, u));
  RunValues v;
  v.exc.assign(u.size(), 0.0);
  v.inc.assign(u.size(), 0.0);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double>& out = pass == 0 ? v.exc : v.inc;
    for (NodeId n = 0; n < u.size(); ++n) {
      bool any = false;
      for (const RunValues& o : ops) any |= (pass == 0 ? o.exc[n] : o.inc[n]) != 0;
      if (!any) continue;
      const double x = formula->Eval([&](size_t i) { return pass == 0 ? ops[i].exc[n] : ops[i].inc[n]; });
      out[n] = std::isfinite(x) ? x : 0.0;
    }
  }
  return v;
}

void MeanInto(const std::vector<RunValues>& runs, bool inclusive, std::vector<double>& out) {
  const size_t size = inclusive ? runs.front().inc.size() : runs.front().exc.size();
  out.assign(size, 0.0);
  for (const RunValues& r : runs) {
    const std::vector<double>& v = inclusive ? r.inc : r.exc;
    for (size_t i = 0; i < size; ++i) out[i] += v[i];
  }
  const double k = static_cast<double>(runs.size());
  if (runs.size() > 1)
    for (double& x : out) x /= k;
}

std::vector<double> SdOf(const std::vector<std::vector<double>>& runs, const std::vector<double>& mean) {
  std::vector<double> sd(mean.size(), 0.0);
  if (runs.size() < 2) return sd;
  for (const auto& r : runs)
    for (size_t i = 0; i < sd.size(); ++i) sd[i] += (r[i] - mean[i]) * (r[i] - mean[i]);
  const double k = static_cast<double>(runs.size() - 1);
  for (double& x : sd) x = std::sqrt(x / k);
  return sd;
}

}  // namespace

std::vector<std::string> DiffResult::Path(NodeId n) const {
  std::vector<std::string> names;
  for (; n != cct::kRootNode && n != cct::kNoNode; n = tree().parent(n)) names.emplace_back(name(n));
  std::reverse(names.begin(), names.end());
  return names;
}

double DiffResult::Change(size_t metric, NodeId n) const {
  const MetricDiff& m = metrics_[metric];
  const double b = m.base_inc[n], c = m.cand_inc[n];
  if (b != 0) return (c - b) / std::fabs(b);
  if (c > 0) return std::numeric_limits<double>::infinity();
  if (c < 0) return -std::numeric_limits<double>::infinity();
  return 0;
}

std::optional<double> DiffResult::Ratio(size_t metric, NodeId n, bool inclusive) const {
  const MetricDiff& m = metrics_[metric];
  const double b = inclusive ? m.base_inc[n] : m.base_exc[n];
  const double c = inclusive ? m.cand_inc[n] : m.cand_exc[n];
  if (b == 0) return std::nullopt;
  return c / b;
}

std::optional<std::pair<double, double>> DiffResult::Interval(size_t metric, NodeId n) const {
  if (!tested_) return std::nullopt;
  const MetricDiff& m = metrics_[metric];
  std::vector<double> x, y;
  for (const auto& r : m.base_runs) x.push_back(r[n]);
  for (const auto& r : m.cand_runs) y.push_back(r[n]);
  return RatioInterval(x, y);
}

std::vector<NodeId> DiffResult::Ranked(size_t metric, Verdict verdict) const {
  const MetricDiff& m = metrics_[metric];
  std::vector<NodeId> out;
  for (NodeId n = 1; n < size(); ++n)
    if (m.verdict[n] == verdict) out.push_back(n);
  std::sort(out.begin(), out.end(), [&](NodeId a, NodeId b) {
    const double da = std::fabs(m.cand_inc[a] - m.base_inc[a]), db = std::fabs(m.cand_inc[b] - m.base_inc[b]);
    return da != db ? da > db : a < b;
  });
  return out;
}

std::vector<NodeId> DiffResult::Causes(size_t metric, Verdict verdict) const {
  std::vector<NodeId> out = Ranked(metric, verdict);
  std::erase_if(out, [&](NodeId n) { return !IsCause(metric, n); });
  return out;
}

std::vector<NodeId> DiffResult::Context(size_t metric, Verdict verdict) const {
  std::vector<NodeId> out = Ranked(metric, verdict);
  std::erase_if(out, [&](NodeId n) { return IsCause(metric, n); });
  return out;
}

std::vector<NodeId> DiffResult::SubtreeRoots(size_t metric, NodeStatus status) const {
  const MetricDiff& m = metrics_[metric];
  const std::vector<double>& value = status == NodeStatus::kNew ? m.cand_inc : m.base_inc;
  std::vector<NodeId> out;
  for (NodeId n = 1; n < size(); ++n)
    if (status_[n] == status && status_[tree().parent(n)] != status && value[n] != 0) out.push_back(n);
  std::sort(out.begin(), out.end(), [&](NodeId a, NodeId b) {
    const double va = std::fabs(value[a]), vb = std::fabs(value[b]);
    return va != vb ? va > vb : a < b;
  });
  return out;
}

size_t DiffResult::regressions() const {
  size_t n = 0;
  for (const MetricDiff& m : metrics_) n += m.regressions;
  return n;
}

// Sets m.cause and the counts (diff.h, "Causes"). A node's own change: its
// inclusive value minus its flagged children's (same verdict), per run for
// the test and as means for the thresholds.
void DiffResult::MarkCauses(size_t mi, const cct::Children& kids, MannWhitney& mw) {
  MetricDiff& m = metrics_[mi];
  const DiffOptions& options = options_;
  m.cause.assign(m.verdict.size(), 0);
  std::vector<double> x(m.base_runs.size()), y(m.cand_runs.size());
  for (NodeId n = 0; n < m.verdict.size(); ++n) {
    const Verdict v = m.verdict[n];
    if (v == Verdict::kNone) continue;
    double base_own = m.base_inc[n], cand_own = m.cand_inc[n];
    bool explained = false;
    // A derived metric's value (a ratio, a rate) is not the sum of its
    // children's: nothing below explains a node's change, each is its own.
    for (const NodeId* c = kids.begin(n); c != kids.end(n); ++c) {
      if (!m.additive || m.verdict[*c] != v) continue;
      explained = true;
      base_own -= m.base_inc[*c];
      cand_own -= m.cand_inc[*c];
    }
    bool cause = !explained;  // nothing below explains it: its change is its own
    if (explained) {
      const double sign = v == Verdict::kRegression ? 1 : -1;
      const double own = sign * (cand_own - base_own);
      const double relative = base_own != 0 ? own / std::fabs(base_own) : (own > 0 ? INFINITY : 0);
      cause = own > m.min_abs && relative > options.threshold;
      if (cause && tested_) {
        auto own_per_run = [&](const std::vector<std::vector<double>>& runs, std::vector<double>& out) {
          for (size_t i = 0; i < out.size(); ++i) {
            out[i] = runs[i][n];
            for (const NodeId* c = kids.begin(n); c != kids.end(n); ++c)
              if (m.verdict[*c] == v) out[i] -= runs[i][*c];
          }
        };
        own_per_run(m.base_runs, x);
        own_per_run(m.cand_runs, y);
        cause = mw.PValue(x, y) < options.alpha;
      }
    }
    m.cause[n] = cause;
    if (cause) ++(v == Verdict::kRegression ? m.regressions : m.improvements);
  }
}

Result<DiffResult> Compare(const Side& base, const Side& candidate, const DiffOptions& options) {
  if (base.runs.empty() || candidate.runs.empty()) return cct::InvalidArgument("a side of the comparison has no runs");
  if (!(options.threshold >= 0)) return cct::InvalidArgument("the threshold must be 0 or more");
  if (!(options.alpha > 0 && options.alpha < 1)) return cct::InvalidArgument("alpha must be between 0 and 1");
  std::vector<Input> inputs;
  for (const RunTree& r : base.runs) inputs.push_back({&r, "base"});
  for (const RunTree& r : candidate.runs) inputs.push_back({&r, "candidate"});
  CCT_ASSIGN_OR_RETURN(std::vector<cct::MetricDesc> descs, ResolveMetrics(inputs, options.metrics));

  // Align every run into one union tree; remember which side had each node.
  Aligner aligner(options.align);
  std::vector<const cct::Tree*> trees;
  std::vector<std::vector<char>> keep;
  for (const Input& in : inputs) {
    trees.push_back(&in.run->tree);
    keep.push_back(cct::NodesWithValues(in.run->tree));
  }
  const std::vector<std::vector<NodeId>> maps = aligner.AddAll(trees, keep);
  keep.clear();
  const size_t nb = base.runs.size(), nc = candidate.runs.size();
  std::vector<uint8_t> present(aligner.size(), 0);
  for (size_t i = 0; i < maps.size(); ++i) {
    const uint8_t bit = i < nb ? 1 : 2;
    for (NodeId x : maps[i])
      if (x != cct::kNoNode) present[x] |= bit;
  }
  present[cct::kRootNode] = 3;

  DiffResult result(std::move(aligner), options);
  result.base_runs_ = nb;
  result.cand_runs_ = nc;
  result.tested_ = nb >= kMinRunsForTest && nc >= kMinRunsForTest;
  MannWhitney mw;
  if (result.tested_) result.smallest_p_ = mw.SmallestPValue(nb, nc);
  result.status_.resize(present.size());
  for (size_t i = 0; i < present.size(); ++i)
    result.status_[i] = present[i] == 3 ? NodeStatus::kBoth : present[i] == 1 ? NodeStatus::kGone : NodeStatus::kNew;
  const cct::Tree& ut = result.tree();
  const cct::Children kids = cct::BuildChildren(ut);

  for (const cct::MetricDesc& desc : descs) {
    MetricDiff md;
    md.name = desc.name;
    md.unit = desc.unit;
    md.additive = desc.kind == cct::MetricKind::kAdditive;
    const bool shares = options.normalize_total && md.additive;
    if (shares) md.unit = cct::Unit::kPercent;
    // Each run's values in union space, half of the runs on a second thread
    // when the union is large: they only read the trees.
    std::vector<RunValues> values(inputs.size());
    auto compute = [&](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) {
        const cct::Tree& t = inputs[i].run->tree;
        const MetricId id = t.metrics().Find(desc.name);
        const cct::MetricKind kind = t.metrics().Get(id).kind;
        RunValues& v = values[i];
        v = kind == cct::MetricKind::kAdditive  ? AdditiveValues(t, maps[i], id, ut)
            : kind == cct::MetricKind::kSummary ? SummaryValues(t, maps[i], id, ut)
                                                : DerivedValues(t, maps[i], id, ut);
        if (shares && v.inc[cct::kRootNode] != 0) {
          const double scale = 100.0 / v.inc[cct::kRootNode];
          for (double& x : v.exc) x *= scale;
          for (double& x : v.inc) x *= scale;
        }
      }
    };
    const size_t half = inputs.size() / 2;
    cct::RunBeside(ut.size() >= cct::kParallelNodes, [&] { compute(0, half); },
                   [&] { compute(half, inputs.size()); });
    std::vector<RunValues> runs[2];
    for (size_t i = 0; i < inputs.size(); ++i) runs[i < nb ? 0 : 1].push_back(std::move(values[i]));
    values.clear();
    if (base.group || candidate.group || nb > 1 || nc > 1) {
      MeanInto(runs[0], true, md.base_inc);
      MeanInto(runs[0], false, md.base_exc);
      MeanInto(runs[1], true, md.cand_inc);
      MeanInto(runs[1], false, md.cand_exc);
      for (RunValues& r : runs[0]) md.base_runs.push_back(std::move(r.inc));
      for (RunValues& r : runs[1]) md.cand_runs.push_back(std::move(r.inc));
      md.base_sd = SdOf(md.base_runs, md.base_inc);
      md.cand_sd = SdOf(md.cand_runs, md.cand_inc);
    } else {
      // One run a side, not kept per run: its values are the means as they
      // are (at 10^7 nodes, copying them was a tenth of the comparison).
      md.base_inc = std::move(runs[0].front().inc);
      md.base_exc = std::move(runs[0].front().exc);
      md.cand_inc = std::move(runs[1].front().inc);
      md.cand_exc = std::move(runs[1].front().exc);
    }
    runs[0].clear();
    runs[1].clear();

    if (result.tested_) {
      md.p_value.assign(ut.size(), 1.0);
      std::vector<double> x(nb), y(nc);
      for (NodeId n = 0; n < ut.size(); ++n) {
        bool any = false;
        for (size_t i = 0; i < nb; ++i) any |= (x[i] = md.base_runs[i][n]) != 0;
        for (size_t j = 0; j < nc; ++j) any |= (y[j] = md.cand_runs[j][n]) != 0;
        if (any) md.p_value[n] = mw.PValue(x, y);
      }
    }

    if (options.min_abs.fraction) {
      md.min_abs = options.min_abs.value * std::fabs(md.base_inc[cct::kRootNode]);
    } else {
      md.min_abs = options.min_abs.value;
      if (md.unit == cct::Unit::kNanoseconds) md.min_abs *= 1e9;  // given in seconds
    }
    md.verdict.assign(ut.size(), Verdict::kNone);
    result.metrics_.push_back(std::move(md));
    MetricDiff& m = result.metrics_.back();
    const size_t mi = result.metrics_.size() - 1;
    for (NodeId n = 0; n < ut.size(); ++n) {
      const double delta = m.cand_inc[n] - m.base_inc[n];
      if (delta == 0) continue;
      const double change = result.Change(mi, n);
      const bool significant = !result.tested_ || m.p_value[n] < options.alpha;
      if (!significant) continue;
      if (change > options.threshold && delta > m.min_abs) m.verdict[n] = Verdict::kRegression;
      else if (change < -options.threshold && -delta > m.min_abs) m.verdict[n] = Verdict::kImprovement;
    }
    result.MarkCauses(mi, kids, mw);
  }
  return result;
}

}  // namespace diff
