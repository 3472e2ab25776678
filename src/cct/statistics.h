// Probability distributions shared by the diff engine (confidence intervals,
// significance) and the paper tables (Student's t intervals): one
// implementation for both. Pure functions; thread-safe.
#pragma once

namespace cct {

// Standard normal distribution function.
double NormalCdf(double z);
// Regularized incomplete beta function I_x(a, b).
double IncompleteBeta(double a, double b, double x);
// Student's t distribution function and quantile, df > 0 (not necessarily an
// integer). The quantile is -inf/+inf for p <= 0 / p >= 1, NaN for df <= 0.
double StudentTCdf(double t, double df);
double StudentTQuantile(double p, double df);

}  // namespace cct
