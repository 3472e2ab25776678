// cct-diff's option texts and the pieces it prints through (diff/diff.h,
// reports/diff_report.h).
#include <doctest/doctest.h>

#include <sstream>

#include "diff/diff.h"
#include "diff/inputs.h"
#include "reports/diff_report.h"
#include "reports/flame.h"

TEST_CASE("cct-diff's --threshold and --min-abs texts") {
  CHECK(*diff::ParsePercent("5") == doctest::Approx(0.05));
  CHECK(*diff::ParsePercent("12.5%") == doctest::Approx(0.125));
  CHECK(!diff::ParsePercent("").ok());
  CHECK(!diff::ParsePercent("5x").ok());
  CHECK(diff::ParsePercent("five").status().code() == cct::ErrorCode::kInvalidArgument);

  auto pct = diff::ParseMinAbs("1%");
  REQUIRE(pct.ok());
  CHECK(pct->fraction);
  CHECK(pct->value == doctest::Approx(0.01));
  auto ms = diff::ParseMinAbs("10ms");
  REQUIRE(ms.ok());
  CHECK(!ms->fraction);
  CHECK(ms->value == doctest::Approx(0.01));
  CHECK(diff::ParseMinAbs("4KiB")->value == 4096);
  CHECK(diff::ParseMinAbs("2 us")->value == doctest::Approx(2e-6));
  CHECK(diff::ParseMinAbs("0.5")->value == doctest::Approx(0.5));
  CHECK(!diff::ParseMinAbs("-1").ok());
  CHECK(!diff::ParseMinAbs("-1%").ok());
  CHECK(!diff::ParseMinAbs("3 parsecs").ok());
}

TEST_CASE("a side of several runs is drawn as their mean in the differential flame graph") {
  auto side_of = [](const std::vector<double>& values) {
    diff::Side side;
    side.group = values.size() > 1;
    for (double v : values) {
      diff::RunTree r;
      r.label = "run";
      cct::MetricDesc d;
      d.name = "cputime";
      d.unit = cct::Unit::kNanoseconds;
      const cct::MetricId m = r.tree.metrics().Register(d).value();
      const cct::NodeId n = r.tree.InternChild(cct::kRootNode, r.tree.InternFrame(cct::FrameKind::kFunction, "main"));
      r.tree.AddValue(n, m, v);
      side.runs.push_back(std::move(r));
    }
    return side;
  };
  // The candidate's runs, 2 and 4, are drawn as 3: the graph's total.
  auto r = diff::Compare(side_of({5.0}), side_of({2.0, 4.0}), diff::DiffOptions());
  REQUIRE(r.ok());
  std::ostringstream out;
  REQUIRE(reports::WriteDiffFlameGraph(*r, 0, reports::FlameOptions(), out).ok());
  CHECK(out.str().find("data-total=\"3\"") != std::string::npos);
  // The metric is an index into the comparison's metrics.
  CHECK(reports::WriteDiffFlameGraph(*r, 1, reports::FlameOptions(), out).code() == cct::ErrorCode::kInvalidArgument);
}
