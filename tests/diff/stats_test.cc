// Statistics of the diff engine against independently computed values:
// hand counts, printed tables, and tests/diff/reference_values.py (Python's
// standard library; brute-force enumeration for exact p-values).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "diff/stats.h"

using diff::MannWhitney;

namespace {
double P(std::vector<double> x, std::vector<double> y) {
  MannWhitney mw;
  return mw.PValue(x, y);
}
}  // namespace

TEST_CASE("diff stats: exact Mann-Whitney p-values by hand count") {
  // Complete separation: only the observed labelling (and its mirror) is as
  // extreme; 2 of C(n+m, n) labellings.
  CHECK(P({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}) == doctest::Approx(2.0 / 252).epsilon(1e-12));
  CHECK(P({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}) == doctest::Approx(2.0 / 252).epsilon(1e-12));
  CHECK(P({1, 2, 3}, {4, 5, 6}) == doctest::Approx(2.0 / 20).epsilon(1e-12));
  CHECK(P({1, 2, 3, 4}, {5, 6, 7, 8}) == doctest::Approx(2.0 / 70).epsilon(1e-12));
  // U = 1: labellings with U <= 1 are two on each side: 4/252.
  CHECK(P({1, 2, 3, 4, 6}, {5, 7, 8, 9, 10}) == doctest::Approx(4.0 / 252).epsilon(1e-12));
  // 5 vs 5 reaches alpha 0.01; 4 vs 4 cannot.
  MannWhitney mw;
  CHECK(mw.SmallestPValue(5, 5) < 0.01);
  CHECK(mw.SmallestPValue(4, 4) == doctest::Approx(2.0 / 70).epsilon(1e-12));
  CHECK(mw.SmallestPValue(3, 3) == doctest::Approx(0.1).epsilon(1e-12));
}

TEST_CASE("diff stats: exact p-values with ties match brute-force enumeration") {
  // tests/diff/reference_values.py, EXACT.
  CHECK(P({0, 0, 0, 0, 0}, {1, 2, 3, 4, 5}) == doctest::Approx(0.007936507936507936).epsilon(1e-12));
  CHECK(P({1, 2, 2, 3}, {2, 3, 3, 4, 5}) == doctest::Approx(0.1111111111111111).epsilon(1e-12));
  CHECK(P({3.1, 2.7, 4.0, 3.3, 2.9, 3.6}, {3.5, 4.2, 3.9, 4.4, 3.8, 4.1, 4.6}) ==
        doctest::Approx(0.013986013986013986).epsilon(1e-12));
  CHECK(P({10, 12, 12, 15, 11}, {12, 14, 15, 15, 16}) == doctest::Approx(0.1111111111111111).epsilon(1e-12));
  CHECK(P({7, 7, 7, 7, 7}, {7, 7, 7, 7, 7}) == 1.0);
  CHECK(P({}, {1, 2}) == 1.0);
}

TEST_CASE("diff stats: normal approximation beyond the exact limit") {
  // tests/diff/reference_values.py, NORMAL (24 and 28 values > kExactLimit).
  CHECK(P({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
          {5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5}) ==
        doctest::Approx(0.012022825407617344).epsilon(1e-9));
  CHECK(P({0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, {0, 0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}) ==
        doctest::Approx(0.0074697580604286).epsilon(1e-9));
}

TEST_CASE("diff stats: the exact cache gives the same answers in any order") {
  MannWhitney mw;
  const double a1 = mw.PValue(std::vector<double>{1, 2, 2, 3}, std::vector<double>{2, 3, 3, 4, 5});
  const double b1 = mw.PValue(std::vector<double>{1, 2, 3, 4, 5}, std::vector<double>{6, 7, 8, 9, 10});
  const double a2 = mw.PValue(std::vector<double>{10, 20, 20, 30}, std::vector<double>{20, 30, 30, 40, 50});
  const double b2 = mw.PValue(std::vector<double>{1, 2, 3, 4, 5}, std::vector<double>{6, 7, 8, 9, 10});
  CHECK(a1 == a2);
  CHECK(b1 == b2);
  // y = 2 beats 1 and ties 2 (1.5); y = 4 beats all three (3).
  CHECK(MannWhitney::U(std::vector<double>{1, 2, 3}, std::vector<double>{2, 4}) == 4.5);
}

TEST_CASE("diff stats: Student t quantiles match printed tables") {
  // Two-sided 95% (p = 0.975) and 99% (p = 0.995) critical values, as
  // printed in standard t tables (to three decimals).
  const struct {
    double p, df, t;
  } table[] = {{0.975, 1, 12.706}, {0.975, 2, 4.303}, {0.975, 4, 2.776}, {0.975, 8, 2.306},
               {0.975, 10, 2.228}, {0.975, 30, 2.042}, {0.995, 5, 4.032}, {0.995, 20, 2.845},
               {0.95, 3, 2.353},   {0.975, 1e6, 1.960}};
  for (const auto& row : table) {
    CAPTURE(row.df);
    CAPTURE(row.p);
    CHECK(diff::StudentTQuantile(row.p, row.df) == doctest::Approx(row.t).epsilon(2e-4));
    CHECK(diff::StudentTQuantile(1 - row.p, row.df) == doctest::Approx(-row.t).epsilon(2e-4));
  }
  // Closed forms: df = 1 is Cauchy (F(1) = 3/4); df = 2 has
  // F(t) = 1/2 + t / (2 sqrt(2 + t^2)).
  CHECK(diff::StudentTCdf(1, 1) == doctest::Approx(0.75).epsilon(1e-12));
  CHECK(diff::StudentTCdf(2, 2) == doctest::Approx(0.5 + 2 / (2 * std::sqrt(6.0))).epsilon(1e-12));
  CHECK(diff::StudentTCdf(-2, 2) == doctest::Approx(0.5 - 2 / (2 * std::sqrt(6.0))).epsilon(1e-12));
  // Incomplete beta identities: I_x(1,1) = x, I_x(a,1) = x^a, I_1/2(a,a) = 1/2.
  CHECK(diff::IncompleteBeta(1, 1, 0.3) == doctest::Approx(0.3).epsilon(1e-12));
  CHECK(diff::IncompleteBeta(3, 1, 0.6) == doctest::Approx(0.216).epsilon(1e-12));
  CHECK(diff::IncompleteBeta(4.5, 4.5, 0.5) == doctest::Approx(0.5).epsilon(1e-12));
  CHECK(diff::NormalCdf(1.959963984540054) == doctest::Approx(0.975).epsilon(1e-12));
}

TEST_CASE("diff stats: summaries and the ratio interval") {
  // statistics.mean / statistics.stdev of [2.5, 3.5, 9.0, 1.25].
  const std::vector<double> v{2.5, 3.5, 9.0, 1.25};
  const diff::Summary s = diff::Summarize(v);
  CHECK(s.mean == doctest::Approx(4.0625).epsilon(1e-12));
  CHECK(s.sd == doctest::Approx(3.417936755802639).epsilon(1e-12));
  CHECK(diff::Summarize(std::vector<double>{5}).sd == 0);

  // Equal coefficients of variation make the Welch-Satterthwaite degrees of
  // freedom exactly 2(n-1) = 8, so the table's t_0.975(8) applies
  // (reference_values.py).
  const std::vector<double> base{10, 11, 12, 13, 14}, cand{20, 22, 24, 26, 28};
  const auto ci = diff::RatioInterval(base, cand);
  REQUIRE(ci.has_value());
  CHECK(ci->first == doctest::Approx(1.6503381075049905).epsilon(1e-6));
  CHECK(ci->second == doctest::Approx(2.4237457656766277).epsilon(1e-6));
  // No interval without a positive mean on both sides or without spread
  // estimates; a degenerate one without noise.
  CHECK(!diff::RatioInterval(std::vector<double>{0, 0, 0}, cand).has_value());
  CHECK(!diff::RatioInterval(std::vector<double>{1}, cand).has_value());
  const auto exact = diff::RatioInterval(std::vector<double>{2, 2, 2}, std::vector<double>{3, 3, 3});
  REQUIRE(exact.has_value());
  CHECK(exact->first == 1.5);
  CHECK(exact->second == 1.5);
}
