#include "cct/metric.h"

#include <algorithm>
#include <cctype>

#include <array>

namespace cct {

namespace {
constexpr std::array<std::string_view, 5> kUnitNames = {"ns", "bytes", "count", "percent", "1"};
}  // namespace

std::string_view UnitName(Unit unit) {
  const auto i = static_cast<size_t>(unit);
  return i < kUnitNames.size() ? kUnitNames[i] : "invalid";
}

std::string_view MetricKindName(MetricKind kind) {
  switch (kind) {
    case MetricKind::kAdditive: return "additive";
    case MetricKind::kDerived: return "derived";
    case MetricKind::kSummary: return "summary";
  }
  return "invalid";
}

std::optional<MetricKind> ParseMetricKind(std::string_view name) {
  for (MetricKind k : {MetricKind::kAdditive, MetricKind::kDerived, MetricKind::kSummary})
    if (MetricKindName(k) == name) return k;
  return std::nullopt;
}

std::optional<Unit> ParseUnit(std::string_view name) {
  for (size_t i = 0; i < kUnitNames.size(); ++i)
    if (kUnitNames[i] == name) return static_cast<Unit>(i);
  return std::nullopt;
}

MetricId MetricRegistry::Find(std::string_view name) const {
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].desc.name == name) return static_cast<MetricId>(i);
  return kNoMetric;
}

std::vector<MetricId> MetricRegistry::AdditiveOperands(const std::vector<MetricId>& ids) const {
  std::vector<MetricId> additive;
  auto need = [&](MetricId m) {
    if (std::find(additive.begin(), additive.end(), m) == additive.end()) additive.push_back(m);
  };
  for (MetricId m : ids) {
    if (Get(m).kind == MetricKind::kAdditive) need(m);
    else
      for (MetricId op : operand_ids(m)) need(op);
  }
  return additive;
}

namespace {
// Stored metric tables are JSON, which holds UTF-8 only: two names that
// differed only in invalid bytes would come back as one name, and the run
// could not be read again.
bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (c < 0x80) n = 1, cp = c;
    else if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
    else return false;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n;
  }
  return true;
}
}  // namespace

Result<MetricId> MetricRegistry::Register(const MetricDesc& desc) {
  if (desc.name.empty()) return InvalidArgument("metric name is empty");
  if (!IsValidUtf8(desc.name)) return InvalidArgument("metric name '" + desc.name + "' is not valid UTF-8");
  const MetricId existing = Find(desc.name);
  if (existing != kNoMetric) {
    const MetricDesc& have = entries_[existing].desc;
    if (have.unit != desc.unit || have.kind != desc.kind)
      return InvalidArgument("metric '" + desc.name + "' is already registered as " +
                             std::string(UnitName(have.unit)) + " " + std::string(MetricKindName(have.kind)));
    return existing;
  }
  if (entries_.size() >= kNoMetric) return InvalidArgument("too many metrics");
  Entry e;
  e.desc = desc;
  if (desc.kind == MetricKind::kDerived) {
    CCT_ASSIGN_OR_RETURN(Formula f, Formula::Parse(desc.formula));
    // Inline derived operands until only additive ones remain: each pass
    // replaces one, and registered formulas are already flat, so this ends
    // after at most one pass per distinct derived operand.
    for (size_t i = 0; i < f.operands().size();) {
      const std::string& op = f.operands()[i];
      const MetricId id = Find(op);
      if (id == kNoMetric)
        return InvalidArgument("derived metric '" + desc.name + "' reads unknown metric '" + op + "'");
      if (entries_[id].desc.kind == MetricKind::kAdditive) {
        ++i;
        continue;
      }
      if (entries_[id].desc.kind == MetricKind::kSummary)
        return InvalidArgument("derived metric '" + desc.name + "' reads '" + op +
                               "', a summary statistic of an aggregate run: formulas read additive metrics only");
      CCT_ASSIGN_OR_RETURN(f, f.Inline(i, *entries_[id].formula));
    }
    for (const std::string& op : f.operands()) e.operand_ids.push_back(Find(op));
    e.formula = std::make_shared<const Formula>(std::move(f));
  } else if (!desc.formula.empty()) {
    return InvalidArgument(std::string(MetricKindName(desc.kind)) + " metric '" + desc.name +
                           "' cannot have a formula");
  }
  entries_.push_back(std::move(e));
  return static_cast<MetricId>(entries_.size() - 1);
}

std::string_view MetricRegistry::DefinedName(std::string_view spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string_view::npos) return spec;
  std::string_view name = spec.substr(0, eq);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  return name;
}

Unit MetricRegistry::InferUnit(const Formula& formula) const {
  // A number has no unit of its own: it scales what it meets.
  struct Dim {
    bool number;
    Unit unit;
  };
  const std::vector<MetricId> ids = [&] {
    std::vector<MetricId> v;
    for (const std::string& op : formula.operands()) v.push_back(Find(op));
    return v;
  }();
  const Dim d = formula.Fold<Dim>(
      [] { return Dim{true, Unit::kNone}; },
      [&](size_t i) { return Dim{false, ids[i] == kNoMetric ? Unit::kNone : entries_[ids[i]].desc.unit}; },
      [](Dim x) { return x; },
      [](char op, Dim a, Dim b) {
        if (a.number && b.number) return Dim{true, Unit::kNone};
        switch (op) {
          case '*':
            if (a.number) return b;
            if (b.number) return a;
            return Dim{false, Unit::kNone};
          case '/':
            if (b.number) return a;
            if (a.number) return Dim{false, Unit::kNone};
            if (b.unit == Unit::kCount && a.unit != Unit::kCount) return a;
            return Dim{false, Unit::kNone};
          default:  // + - min max
            if (a.number) return b;
            if (b.number) return a;
            return Dim{false, a.unit == b.unit ? a.unit : Unit::kNone};
        }
      });
  return d.unit;
}

Result<MetricId> MetricRegistry::Define(std::string_view spec) {
  const std::string name(DefinedName(spec));
  const std::string_view expr = spec.substr(spec.find('=') + 1);
  // The name must be one a formula can read back (-m 'b=a*2' -m 'c=b/2').
  const bool word = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                    std::all_of(name.begin(), name.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '.';
                    });
  if (!word)
    return InvalidArgument("metric definition '" + std::string(spec) +
                           "': the name before '=' must be a word (letters, digits, '_', ':', '.')");
  if (Find(name) != kNoMetric)
    return InvalidArgument("metric definition '" + std::string(spec) + "': the run already has a metric '" + name +
                           "'; choose another name");
  auto parsed = Formula::Parse(expr);
  if (!parsed.ok()) return parsed.status().WithContext("metric definition '" + std::string(spec) + "'");
  const Formula& f = *parsed;
  for (const std::string& op : f.operands())
    if (Find(op) == kNoMetric) {
      std::string have;
      for (const Entry& e : entries_) have += (have.empty() ? "" : ", ") + e.desc.name;
      return InvalidArgument("metric definition '" + std::string(spec) + "' reads '" + op +
                             "', which this run does not have; it has: " + have);
    }
  MetricDesc desc;
  desc.name = name;
  desc.kind = MetricKind::kDerived;
  desc.unit = InferUnit(f);
  desc.formula = std::string(expr);
  desc.description = "defined by -m";
  return Register(desc);
}

Result<MetricId> MetricRegistry::RegisterStandard(std::string_view name) {
  const MetricDesc* desc = FindStandardMetric(name);
  if (desc == nullptr) return InvalidArgument("'" + std::string(name) + "' is not a standard metric");
  if (desc->kind == MetricKind::kDerived) {
    CCT_ASSIGN_OR_RETURN(Formula f, Formula::Parse(desc->formula));
    for (const std::string& op : f.operands()) {
      if (Find(op) != kNoMetric) continue;
      CCT_RETURN_IF_ERROR(RegisterStandard(op).status());
    }
  }
  return Register(*desc);
}

}  // namespace cct
