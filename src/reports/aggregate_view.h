// Aggregated metric columns for `tree` and `top`: `-m METRIC@AGG` (sum, mean,
// min, max, imbalance across the ranks or threads of a profile, see
// query/aggregate.h) beside plain metrics, on the thread-merged tree.
//
// Internal to the reports library. An AggregateView owns the units, their
// aggregates and the columns over them; not copyable, not thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cct/node_values.h"
#include "cct/status.h"
#include "output/metric_columns.h"
#include "query/aggregate.h"
#include "query/profile.h"

namespace reports {

// A -m argument: METRIC or METRIC@AGG (split at the last '@': metric names
// hold ':' but no '@').
struct MetricSpec {
  std::string text;    // as given
  std::string metric;  // the metric's name
  std::optional<query::Aggregation> aggregation;
};
cct::Result<std::vector<MetricSpec>> ParseMetricSpecs(const std::vector<std::string>& names);
bool AnyAggregation(const std::vector<MetricSpec>& specs);
// "-m" arguments name a METRIC@AGG (LoadRequestProfile keeps an invocation's
// process trees for it).
bool AnyAggregation(const std::vector<std::string>& names);

class AggregateView {
 public:
  // The units of `profile` (query::ProfileUnits) and the columns `specs`
  // ask for; plain metrics show the merged tree's values (the sum over units).
  static cct::Result<std::unique_ptr<AggregateView>> Make(const query::Profile& profile,
                                                          const std::vector<MetricSpec>& specs);
  AggregateView(const AggregateView&) = delete;
  AggregateView& operator=(const AggregateView&) = delete;

  const cct::Tree& tree() const { return units_.merged; }
  const query::Units& units() const { return units_; }
  cct::NodeValues& values() { return *values_; }
  const output::MetricColumns& columns() const { return *columns_; }
  // An aggregate run's stored statistics (cct-aggregate): the columns read
  // its summary metrics, and units() has labels but no values.
  bool stored() const { return stored_; }
  // " across 4 ranks", " across 3 threads", " across 2 processes".
  std::string Across() const;
  // The metric ids of the columns, in order, and their aggregations.
  const std::vector<cct::MetricId>& ids() const { return ids_; }
  const std::vector<std::optional<query::Aggregation>>& aggregations() const { return aggregations_; }

 private:
  AggregateView() = default;
  // The columns of an aggregate run, from its stored summary metrics.
  static cct::Result<std::unique_ptr<AggregateView>> MakeStored(const query::Profile& profile,
                                                                const std::vector<MetricSpec>& specs,
                                                                const std::vector<std::string>& labels);

  query::Units units_;
  std::unique_ptr<cct::NodeValues> values_;
  std::vector<cct::MetricId> ids_;
  std::vector<std::optional<query::Aggregation>> aggregations_;
  std::vector<query::UnitAggregate> aggregates_;  // per column: inclusive, exclusive
  std::vector<std::vector<double>> materialized_;  // per column: inclusive, exclusive values
  std::vector<std::vector<uint32_t>> stored_at_;   // per imbalance column: inclusive, exclusive argmax
  std::unique_ptr<output::MetricColumns> columns_;
  bool stored_ = false;
};

}  // namespace reports
