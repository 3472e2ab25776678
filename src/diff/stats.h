// Statistics for comparing groups of runs: summaries, the Mann-Whitney U
// test, and a confidence interval for the ratio of two means.
//
// Why Mann-Whitney U (the Wilcoxon rank-sum test) and not Welch's t on log
// values: profiles of repeated runs are small samples (3 to 10 runs) whose
// noise is skewed and has outliers (one run disturbed by another job), and
// many nodes are absent from some runs (value 0, so no logarithm) or carry
// small integer counts (ties). The rank test needs no distribution, is not
// moved by one outlier, handles zeros and ties exactly, and its small-sample
// p-values are exact, not approximations. Its price: with n and m runs the
// smallest two-sided p-value is 2/C(n+m, n), so 5 vs 5 runs (0.0079) are
// needed to reach the default alpha of 0.01.
//
// The p-value is exact (the permutation distribution of the rank sum, ties
// given mid-ranks) when the two samples hold at most kExactLimit values in
// all; beyond, the normal approximation with tie and continuity correction.
// Exact distributions are cached by (sample size, tie pattern), so testing a
// hundred thousand nodes computes a handful of them.
//
// The 95% interval of the ratio of means (candidate / base) comes from the
// delta method on the log of the ratio, with Welch-Satterthwaite degrees of
// freedom and Student's t; it describes the size of a change, while the
// verdict uses the rank test.
//
// MannWhitney holds a cache: not thread-safe (use one per thread). The free
// functions are pure.
#pragma once

#include "cct/statistics.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace diff {

struct Summary {
  double mean = 0;
  double sd = 0;  // sample standard deviation (n - 1); 0 for one value
};
Summary Summarize(std::span<const double> values);

// The distributions live in cct/statistics.h (shared with the paper tables).
using cct::IncompleteBeta;
using cct::NormalCdf;
using cct::StudentTCdf;
using cct::StudentTQuantile;

// 95% (or `level`) interval of mean(y) / mean(x); nullopt when a mean is not
// positive or a sample has fewer than two values.
std::optional<std::pair<double, double>> RatioInterval(std::span<const double> x, std::span<const double> y,
                                                       double level = 0.95);

class MannWhitney {
 public:
  static constexpr size_t kExactLimit = 20;
  static constexpr size_t kMaxCached = 4096;  // exact distributions kept

  // Two-sided p-value for "x and y come from the same distribution".
  // 1 when either sample is empty or all values are equal.
  double PValue(std::span<const double> x, std::span<const double> y);

  // The smallest p-value samples of these sizes can reach (complete
  // separation without ties).
  double SmallestPValue(size_t n, size_t m);

  // Mann-Whitney U of y (pairs (xi, yj) with yj > xi, ties counting half),
  // for reports and tests.
  static double U(std::span<const double> x, std::span<const double> y);

 private:
  // P(|S - E| >= |s - E|) for the rank sum S of m values drawn among tie
  // groups of the given sizes (doubled mid-ranks, so sums are integers).
  double ExactTwoSided(size_t m, const std::vector<uint32_t>& groups, int64_t doubled_sum);

  std::unordered_map<std::string, std::vector<double>> cache_;  // key: m + groups; value: P(S2 = s)
  // Reused between calls, so testing a node allocates nothing.
  std::vector<std::pair<double, uint8_t>> scratch_;
  std::vector<uint32_t> groups_;
  std::string key_;
};

}  // namespace diff
