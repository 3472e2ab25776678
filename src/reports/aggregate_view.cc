#include "reports/aggregate_view.h"

#include <algorithm>

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
