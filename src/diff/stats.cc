#include "diff/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace diff {

Summary Summarize(std::span<const double> values) {
  Summary s;
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  if (values.size() < 2) return s;
  double ss = 0;
  for (double v : values) ss += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(ss / static_cast<double>(values.size() - 1));
  return s;
}


std::optional<std::pair<double, double>> RatioInterval(std::span<const double> x, std::span<const double> y,
                                                       double level) {
  if (x.size() < 2 || y.size() < 2) return std::nullopt;
  const Summary sx = Summarize(x), sy = Summarize(y);
  if (!(sx.mean > 0) || !(sy.mean > 0)) return std::nullopt;
  const double ratio = sy.mean / sx.mean;
  const double n = static_cast<double>(x.size()), m = static_cast<double>(y.size());
  // Var(log mean) ~ sd^2 / (n mean^2), by the delta method.
  const double a = sx.sd * sx.sd / (n * sx.mean * sx.mean);
  const double b = sy.sd * sy.sd / (m * sy.mean * sy.mean);
  const double se = std::sqrt(a + b);
  if (se == 0) return std::make_pair(ratio, ratio);
  const double df = (a + b) * (a + b) / (a * a / (n - 1) + b * b / (m - 1));
  const double t = StudentTQuantile(1 - (1 - level) / 2, df);
  return std::make_pair(ratio * std::exp(-t * se), ratio * std::exp(t * se));
}

double MannWhitney::U(std::span<const double> x, std::span<const double> y) {
  double u = 0;
  for (double yj : y)
    for (double xi : x) u += yj > xi ? 1.0 : yj == xi ? 0.5 : 0.0;
  return u;
}

double MannWhitney::PValue(std::span<const double> x, std::span<const double> y) {
  const size_t n = x.size(), m = y.size();
  if (n == 0 || m == 0) return 1;
  const size_t total = n + m;
  scratch_.clear();
  for (double v : x) scratch_.emplace_back(v, 0);
  for (double v : y) scratch_.emplace_back(v, 1);
  std::sort(scratch_.begin(), scratch_.end());
  // Tie groups in sorted order; each value's doubled mid-rank is
  // 2*start + size + 1 (ranks from 1), so rank sums stay integers.
  std::vector<uint32_t>& groups = groups_;
  groups.clear();
  int64_t sum2 = 0;  // doubled rank sum of y
  double tie_term = 0;
  for (size_t start = 0; start < total;) {
    size_t end = start + 1;
    while (end < total && scratch_[end].first == scratch_[start].first) ++end;
    const int64_t size = static_cast<int64_t>(end - start);
    const int64_t rank2 = 2 * static_cast<int64_t>(start) + size + 1;
    for (size_t i = start; i < end; ++i)
      if (scratch_[i].second) sum2 += rank2;
    groups.push_back(static_cast<uint32_t>(size));
    tie_term += static_cast<double>(size * size * size - size);
    start = end;
  }
  if (groups.size() == 1) return 1;  // all values equal: no evidence of a difference
  if (total <= kExactLimit) return ExactTwoSided(m, groups, sum2);

  const double dn = static_cast<double>(n), dm = static_cast<double>(m), dt = static_cast<double>(total);
  const double u = static_cast<double>(sum2) / 2 - dm * (dm + 1) / 2;
  const double mu = dn * dm / 2;
  const double var = dn * dm / 12 * ((dt + 1) - tie_term / (dt * (dt - 1)));
  if (var <= 0) return 1;
  const double z = std::max(0.0, std::fabs(u - mu) - 0.5) / std::sqrt(var);
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

double MannWhitney::ExactTwoSided(size_t m, const std::vector<uint32_t>& groups, int64_t sum2) {
  key_.assign(reinterpret_cast<const char*>(&m), sizeof m);
  key_.append(reinterpret_cast<const char*>(groups.data()), groups.size() * sizeof(uint32_t));
  auto it = cache_.find(key_);
  size_t total = 0;
  for (uint32_t g : groups) total += g;
  const size_t max_sum = total * (total + 1);  // doubled sum of all ranks
  if (it == cache_.end()) {
    // ways[k][s]: ways to pick k values with doubled rank sum s, group by
    // group; picking j of a group of t values has C(t, j) ways.
    const size_t width = max_sum + 1;
    std::vector<double> ways((m + 1) * width, 0.0), next;
    ways[0] = 1;
    size_t start = 0;
    for (uint32_t t : groups) {
      const size_t rank2 = 2 * start + t + 1;
      next.assign(ways.size(), 0.0);
      for (size_t k = 0; k <= m; ++k) {
        for (size_t s = 0; s < width; ++s) {
          const double w = ways[k * width + s];
          if (w == 0) continue;
          double choose = 1;  // C(t, j)
          for (size_t j = 0; j <= t && k + j <= m; ++j) {
            const size_t s2 = s + j * rank2;
            if (s2 < width) next[(k + j) * width + s2] += w * choose;
            choose = choose * static_cast<double>(t - j) / static_cast<double>(j + 1);
          }
        }
      }
      ways.swap(next);
      start += t;
    }
    std::vector<double> dist(ways.begin() + static_cast<std::ptrdiff_t>(m * width), ways.end());
    double all = 0;
    for (double w : dist) all += w;
    for (double& w : dist) w /= all;
    // Bounded: a few thousand tie patterns at most a few KiB each.
    if (cache_.size() >= kMaxCached) cache_.clear();
    it = cache_.emplace(key_, std::move(dist)).first;
  }
  const std::vector<double>& dist = it->second;
  const int64_t expect2 = static_cast<int64_t>(m) * static_cast<int64_t>(total + 1);
  const int64_t observed = std::llabs(sum2 - expect2);
  double p = 0;
  for (size_t s = 0; s < dist.size(); ++s)
    if (dist[s] != 0 && std::llabs(static_cast<int64_t>(s) - expect2) >= observed) p += dist[s];
  return std::min(1.0, p);
}

double MannWhitney::SmallestPValue(size_t n, size_t m) {
  std::vector<double> x(n), y(m);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<double>(i);
  for (size_t j = 0; j < m; ++j) y[j] = static_cast<double>(n + j);
  return PValue(x, y);
}

}  // namespace diff
