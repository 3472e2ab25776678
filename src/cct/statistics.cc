#include "cct/statistics.h"

#include <algorithm>
#include <cmath>

namespace cct {

double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

namespace {

// Continued fraction of the incomplete beta function (modified Lentz).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEps = 1e-15;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) break;
  }
  return h;
}

}  // namespace

double IncompleteBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  // The continued fraction converges fast for x < (a+1)/(a+b+2); use the
  // symmetry I_x(a,b) = 1 - I_{1-x}(b,a) otherwise.
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

double StudentTCdf(double t, double df) {
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  const double x = df / (df + t * t);
  const double tail = 0.5 * IncompleteBeta(df / 2, 0.5, x);  // P(T > |t|)
  return t >= 0 ? 1 - tail : tail;
}

double StudentTQuantile(double p, double df) {
  if (!(df > 0)) return NAN;
  if (p <= 0) return -INFINITY;
  if (p >= 1) return INFINITY;
  if (p == 0.5) return 0;
  if (p < 0.5) return -StudentTQuantile(1 - p, df);
  double lo = 0, hi = 1;
  while (StudentTCdf(hi, df) < p && hi < 1e12) {
    lo = hi;
    hi *= 2;
  }
  // Bisection: monotone and robust for any df; only reports call it.
  for (int i = 0; i < 200 && hi - lo > 1e-13 * std::max(1.0, hi); ++i) {
    const double mid = 0.5 * (lo + hi);
    if (StudentTCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace cct
