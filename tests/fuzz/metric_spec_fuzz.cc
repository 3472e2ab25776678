// Fuzz target: what users type for aggregations and ensemble statistics:
// reports::ParseMetricSpecs (`-m METRIC@AGG`) and reports::ParsePercentiles
// (`stats --percentiles P,P,...`) on arbitrary text. An accepted spec is its
// metric, '@' and the aggregation's name, or a metric without '@'; accepted
// percentiles are one per comma-separated item, each within 0..100.
#include <algorithm>
#include <cmath>

#include "reports/aggregate_view.h"
#include "reports/reports.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::Bytes(data, size));
  auto specs = reports::ParseMetricSpecs({text});
  if (!specs.ok()) {
    FUZZ_CHECK(!specs.status().message().empty());
    FUZZ_CHECK(text.find('@') != std::string::npos);
  } else {
    FUZZ_CHECK(specs->size() == 1);
    const reports::MetricSpec& s = specs->front();
    FUZZ_CHECK(s.text == text);
    if (s.aggregation) {
      FUZZ_CHECK(!s.metric.empty());
      FUZZ_CHECK(s.metric + "@" + std::string(query::AggregationName(*s.aggregation)) == text);
    } else {
      FUZZ_CHECK(s.metric == text);
      FUZZ_CHECK(text.find('@') == std::string::npos);
    }
  }
  auto p = reports::ParsePercentiles(text);
  if (!p.ok()) {
    FUZZ_CHECK(!p.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(p->size() == static_cast<size_t>(std::count(text.begin(), text.end(), ',')) + 1);
  for (double v : *p) FUZZ_CHECK(v >= 0 && v <= 100 && !std::isnan(v));
  return 0;
}
