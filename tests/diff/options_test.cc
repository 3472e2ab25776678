// cct-diff's option texts and the pieces it prints through (diff/diff.h,
// reports/diff_report.h).
#include <doctest/doctest.h>

#include "diff/diff.h"
#include "diff/inputs.h"
#include "reports/diff_report.h"

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

TEST_CASE("a side of several runs is drawn as their mean") {
  diff::Side side;
  for (double v : {2.0, 4.0}) {
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
  auto mean = diff::SideTree(side);
  REQUIRE(mean.ok());
  REQUIRE(mean->size() == 2);
  CHECK(mean->Value(1, 0) == doctest::Approx(3.0));
  side.runs.pop_back();
  CHECK(diff::SideTree(side)->Value(1, 0) == doctest::Approx(2.0));
}
