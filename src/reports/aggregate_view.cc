#include "reports/aggregate_view.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace reports {

using cct::NodeId;

cct::Result<std::vector<MetricSpec>> ParseMetricSpecs(const std::vector<std::string>& names) {
  std::vector<MetricSpec> out;
  for (const std::string& n : names) {
    MetricSpec s;
    s.text = n;
    const size_t at = n.rfind('@');
    if (at == std::string::npos) {
      s.metric = n;
    } else {
      s.metric = n.substr(0, at);
      if (s.metric.empty()) return cct::InvalidArgument("-m '" + n + "' names no metric before '@'");
      auto a = query::ParseAggregation(n.substr(at + 1));
      if (!a.ok()) return a.status().WithContext("-m '" + n + "'");
      s.aggregation = *a;
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool AnyAggregation(const std::vector<MetricSpec>& specs) {
  return std::any_of(specs.begin(), specs.end(), [](const MetricSpec& s) { return s.aggregation.has_value(); });
}

bool AnyAggregation(const std::vector<std::string>& names) {
  return std::any_of(names.begin(), names.end(), [](const std::string& s) { return s.find('@') != std::string::npos; });
}

cct::Result<std::unique_ptr<AggregateView>> AggregateView::Make(const query::Profile& profile,
                                                                const std::vector<MetricSpec>& specs) {
  if (profile.runs.size() == 1 && !profile.selector.is_group() && !profile.selector.is_invocation()) {
    if (auto labels = query::StoredUnitLabels(profile.runs.front())) return MakeStored(profile, specs, *labels);
    // A run derived from an aggregate run keeps its statistics but not its
    // record's unit labels: the units by number.
    const cct::MetricRegistry& reg = profile.tree.metrics();
    size_t units = 0;
    bool summary = false;
    for (cct::MetricId m = 0; m < reg.size(); ++m) {
      if (reg.Get(m).kind != cct::MetricKind::kSummary) continue;
      summary = true;
      const std::string& name = reg.Get(m).name;
      if (!name.ends_with("@argmax")) continue;
      for (const cct::SparseColumn* c : {&profile.tree.column(m), &profile.tree.inclusive_column(m)})
        c->ForEach([&](cct::NodeId, double v) { units = std::max(units, static_cast<size_t>(v) + 1); });
    }
    if (summary) {
      std::vector<std::string> numbered;
      for (size_t u = 0; u < std::max<size_t>(units, 1); ++u) numbered.push_back("unit " + std::to_string(u + 1));
      return MakeStored(profile, specs, numbered);
    }
  }
  std::unique_ptr<AggregateView> v(new AggregateView());
  CCT_ASSIGN_OR_RETURN(v->units_, query::ProfileUnits(profile));
  std::vector<std::string> names;
  for (const MetricSpec& s : specs) names.push_back(s.metric);
  CCT_ASSIGN_OR_RETURN(v->ids_, query::ResolveMetrics(v->units_.merged, names));
  for (const MetricSpec& s : specs) v->aggregations_.push_back(s.aggregation);
  if (specs.empty()) v->aggregations_.emplace_back();  // the first metric, plain
  v->values_ = std::make_unique<cct::NodeValues>(v->units_.merged);

  std::vector<query::AggregateRequest> requests;
  for (size_t i = 0; i < v->ids_.size(); ++i)
    if (v->aggregations_[i]) {
      requests.push_back({v->ids_[i], true});
      requests.push_back({v->ids_[i], false});
    }
  v->aggregates_ = query::AggregateUnits(v->units_, requests);

  const cct::MetricRegistry& reg = v->units_.merged.metrics();
  const size_t n = v->units_.merged.size();
  std::vector<output::MetricColumns::Source> sources;
  // Materialized first: sources point into materialized_, which must not grow after.
  v->materialized_.reserve(2 * requests.size());
  size_t r = 0;
  for (size_t i = 0; i < v->ids_.size(); ++i) {
    const cct::MetricId m = v->ids_[i];
    const bool additive = reg.Get(m).kind == cct::MetricKind::kAdditive;
    output::MetricColumns::Source s;
    s.metric = m;
    if (!v->aggregations_[i]) {
      s.name = reg.Get(m).name;
      s.percent = additive;
      s.none_when_zero = !additive;
      s.inc = &v->values_->Inclusive(m);
      s.exc = &v->values_->Exclusive(m);
      sources.push_back(std::move(s));
      continue;
    }
    const query::Aggregation a = *v->aggregations_[i];
    s.name = reg.Get(m).name + "@" + std::string(query::AggregationName(a));
    s.percent = additive && (a == query::Aggregation::kSum || a == query::Aggregation::kMean);
    s.none_when_zero = !additive;
    s.ratio = a == query::Aggregation::kImbalance;
    const query::UnitAggregate& inc = v->aggregates_[r];
    const query::UnitAggregate& exc = v->aggregates_[r + 1];
    r += 2;
    for (const query::UnitAggregate* agg : {&inc, &exc}) {
      std::vector<double> col(n);
      for (NodeId k = 0; k < n; ++k) col[k] = agg->Get(a, k);
      v->materialized_.push_back(std::move(col));
    }
    s.inc = &v->materialized_[v->materialized_.size() - 2];
    s.exc = &v->materialized_.back();
    if (s.ratio) {
      s.inc_at = &inc.argmax;
      s.exc_at = &exc.argmax;
    }
    sources.push_back(std::move(s));
  }
  std::vector<std::string> labels;
  for (const query::Unit& u : v->units_.units) labels.push_back(u.Label());
  v->columns_ = std::make_unique<output::MetricColumns>(v->units_.merged, std::move(sources), std::move(labels));
  return v;
}

cct::Result<std::unique_ptr<AggregateView>> AggregateView::MakeStored(const query::Profile& profile,
                                                                      const std::vector<MetricSpec>& specs,
                                                                      const std::vector<std::string>& labels) {
  std::unique_ptr<AggregateView> v(new AggregateView());
  v->stored_ = true;
  v->units_.merged = profile.tree;
  for (const std::string& l : labels) {
    constexpr std::string_view kRank = "rank ";
    if (l.rfind(kRank, 0) == 0) v->units_.units.push_back(query::Unit{query::Unit::Kind::kRank, l.substr(kRank.size())});
    else v->units_.units.push_back(query::Unit{query::Unit::Kind::kRun, l});
  }
  const cct::Tree& tree = v->units_.merged;
  const cct::MetricRegistry& reg = tree.metrics();
  std::vector<std::string> names;
  for (const MetricSpec& s : specs) names.push_back(s.metric);
  CCT_ASSIGN_OR_RETURN(v->ids_, query::ResolveMetrics(tree, names));
  for (const MetricSpec& s : specs) v->aggregations_.push_back(s.aggregation);
  v->values_ = std::make_unique<cct::NodeValues>(tree);
  v->materialized_.reserve(2 * specs.size());
  v->stored_at_.reserve(2 * specs.size());
  const std::string run = query::RunLabel(profile.runs.front());
  auto stored = [&](const std::string& name) -> cct::Result<cct::MetricId> {
    const cct::MetricId id = reg.Find(name);
    if (id == cct::kNoMetric || reg.Get(id).kind != cct::MetricKind::kSummary)
      return cct::NotFound(run + " is an aggregate run without '" + name +
                           "' (cct-aggregate stores @mean, @min, @max and @imbalance of its inputs' additive metrics)");
    return id;
  };
  std::vector<output::MetricColumns::Source> sources;
  for (size_t i = 0; i < v->ids_.size(); ++i) {
    const cct::MetricId m = v->ids_[i];
    const bool additive = reg.Get(m).kind == cct::MetricKind::kAdditive;
    output::MetricColumns::Source s;
    s.metric = m;
    s.name = reg.Get(m).name;
    s.percent = additive;
    s.none_when_zero = !additive;
    if (!v->aggregations_[i] || *v->aggregations_[i] == query::Aggregation::kSum) {
      // The run's own values of an additive metric are the sum over its units.
      if (v->aggregations_[i]) s.name += "@sum";
      s.inc = &v->values_->Inclusive(m);
      s.exc = &v->values_->Exclusive(m);
      sources.push_back(std::move(s));
      continue;
    }
    if (!additive)
      return cct::InvalidArgument("-m " + specs[i].text + ": " + run + " stores statistics of additive metrics only");
    const query::Aggregation a = *v->aggregations_[i];
    s.name += "@" + std::string(query::AggregationName(a));
    CCT_ASSIGN_OR_RETURN(const cct::MetricId id, stored(s.name));
    s.percent = a == query::Aggregation::kMean;
    s.ratio = a == query::Aggregation::kImbalance;
    if (!s.ratio) {
      s.inc = &v->values_->Inclusive(id);
      s.exc = &v->values_->Exclusive(id);
      sources.push_back(std::move(s));
      continue;
    }
    // No stored imbalance: the mean was 0 there (NaN, as computed ones).
    CCT_ASSIGN_OR_RETURN(const cct::MetricId at, stored(reg.Get(m).name + "@argmax"));
    for (const std::vector<double>* col : {&v->values_->Inclusive(id), &v->values_->Exclusive(id)}) {
      std::vector<double> r(*col);
      for (double& x : r)
        if (x == 0) x = std::numeric_limits<double>::quiet_NaN();
      v->materialized_.push_back(std::move(r));
    }
    for (const std::vector<double>* col : {&v->values_->Inclusive(at), &v->values_->Exclusive(at)}) {
      std::vector<uint32_t> u(col->size());
      for (size_t k = 0; k < u.size(); ++k) u[k] = static_cast<uint32_t>((*col)[k]);
      v->stored_at_.push_back(std::move(u));
    }
    s.inc = &v->materialized_[v->materialized_.size() - 2];
    s.exc = &v->materialized_.back();
    s.inc_at = &v->stored_at_[v->stored_at_.size() - 2];
    s.exc_at = &v->stored_at_.back();
    sources.push_back(std::move(s));
  }
  v->columns_ = std::make_unique<output::MetricColumns>(tree, std::move(sources), std::vector<std::string>(labels));
  return v;
}

std::string AggregateView::Across() const {
  const std::vector<query::Unit>& u = units_.units;
  const size_t n = u.size();
  auto all = [&](query::Unit::Kind k) {
    return std::all_of(u.begin(), u.end(), [k](const query::Unit& x) { return x.kind == k; });
  };
  std::string what = all(query::Unit::Kind::kRank) ? (n == 1 ? "rank" : "ranks")
                     : all(query::Unit::Kind::kThread) ? (n == 1 ? "thread" : "threads")
                                                       : (n == 1 ? "process" : "processes");
  return " across " + std::to_string(n) + " " + what;
}

}  // namespace reports
