// Parsing of cct-diff's option texts into DiffOptions' fields.
#include <cmath>
#include <cstdlib>

#include "diff/diff.h"

namespace diff {

cct::Result<double> ParsePercent(std::string text) {
  const std::string given = text;
  if (!text.empty() && text.back() == '%') text.pop_back();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    return cct::InvalidArgument("not a percentage: '" + given + "'");
  return v / 100;
}

cct::Result<MinAbs> ParseMinAbs(const std::string& text) {
  const cct::Status bad = cct::InvalidArgument("not a percentage of the base total or a value: '" + text + "'");
  MinAbs out;
  if (!text.empty() && text.back() == '%') {
    out.fraction = true;
    auto pct = ParsePercent(text);
    if (!pct.ok() || *pct < 0) return bad;
    out.value = *pct;
    return out;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || v < 0) return bad;
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},           {"s", 1},          {"ms", 1e-3},  {"us", 1e-6},  {"µs", 1e-6},
      {"ns", 1e-9},      {"B", 1},          {"KiB", 1024}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
  };
  for (const auto& [name, scale] : kUnits) {
    if (unit == name) {
      out.fraction = false;
      out.value = v * scale;
      return out;
    }
  }
  return bad;
}

}  // namespace diff
