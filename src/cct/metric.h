// Metrics: registered by name with a unit and a kind.
//
// Additive metrics are stored per node as exclusive values; inclusive values
// are subtree sums computed at query time. Derived metrics store nothing:
// a Formula over additive metrics, evaluated from inclusive (or exclusive)
// accumulators, e.g. an average per launch = accumulator / count.
// Summary metrics are statistics across the units of an aggregate run
// (cct-aggregate: M@mean, M@min, M@max, M@imbalance, M@argmax): their
// exclusive AND inclusive values are both stored per node and never summed,
// folded or re-derived (a mean of sums is not a sum of means), so they
// cannot be a formula's operand and cannot merge with another tree.
// The numeric values of Unit and MetricKind are part of the store format.
// Owned by its Tree; not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cct/formula.h"
#include "cct/status.h"

namespace cct {

using MetricId = uint16_t;
inline constexpr MetricId kNoMetric = UINT16_MAX;

enum class Unit : uint8_t {
  kNanoseconds = 0,  // stored in ns, shown as s/ms/µs
  kBytes = 1,        // shown as B/KiB/MiB/GiB
  kCount = 2,        // events, samples, launches
  kPercent = 3,
  kNone = 4,  // dimensionless (registers per thread, threads per block, ...)
};
std::string_view UnitName(Unit unit);  // "ns", "bytes", "count", "percent", "1"
std::optional<Unit> ParseUnit(std::string_view name);

enum class MetricKind : uint8_t { kAdditive = 0, kDerived = 1, kSummary = 2 };
std::string_view MetricKindName(MetricKind kind);  // "additive", "derived", "summary"
std::optional<MetricKind> ParseMetricKind(std::string_view name);

struct MetricDesc {
  std::string name;
  Unit unit = Unit::kCount;
  MetricKind kind = MetricKind::kAdditive;
  std::string description;
  std::string formula;  // derived metrics only
};

// The vocabulary cctdb knows (HPCToolkit's, lower case, plus our own): unit,
// kind and description by name, so importers and collectors register metrics
// consistently. nullptr for names outside the catalog.
const MetricDesc* FindStandardMetric(std::string_view name);
const std::vector<MetricDesc>& StandardMetrics();

class MetricRegistry {
 public:
  // Registers a metric, or returns the id of the one with that name when its
  // unit and kind agree. Derived formulas must name registered metrics; a
  // derived operand's formula is inlined, so every registered formula reads
  // additive metrics only (what Eval's callers sum per node or iteration).
  Result<MetricId> Register(const MetricDesc& desc);
  // A derived metric defined where it is used: "NAME=EXPR" (cct-query -m
  // 'ipc=inst/cycles'). Its unit follows from the formula (InferUnit). An
  // error when NAME is taken by another metric or EXPR is not a formula over
  // this registry's metrics.
  Result<MetricId> Define(std::string_view spec);
  // Whether `spec` is a definition rather than a metric's name, and the
  // name it defines ("ipc" for "ipc=inst/cycles"; `spec` itself otherwise).
  static bool IsDefinition(std::string_view spec) { return spec.find('=') != std::string_view::npos; }
  static std::string_view DefinedName(std::string_view spec);
  // The unit of a formula's value: a sum, difference, min or max of one unit
  // keeps it, as does a product or quotient with a number and a quotient by
  // a count (a per-event average); a ratio of two metrics of one unit, and
  // anything mixing units, is dimensionless (Unit::kNone).
  Unit InferUnit(const Formula& formula) const;
  // Registers a catalog metric by name (see FindStandardMetric), together with
  // the additive operands its formula needs.
  Result<MetricId> RegisterStandard(std::string_view name);

  MetricId Find(std::string_view name) const;  // kNoMetric when absent
  const MetricDesc& Get(MetricId id) const { return entries_[id].desc; }
  const Formula* formula(MetricId id) const { return entries_[id].formula.get(); }
  // For derived metrics: the operand metric ids, in Formula::operands() order.
  const std::vector<MetricId>& operand_ids(MetricId id) const { return entries_[id].operand_ids; }
  // The additive metrics the values of `ids` are computed from: the additive
  // ones themselves and derived ones' operands (additive: formulas are
  // inlined), each once, in first use order. Summary metrics need none.
  std::vector<MetricId> AdditiveOperands(const std::vector<MetricId>& ids) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    MetricDesc desc;
    std::shared_ptr<const Formula> formula;
    std::vector<MetricId> operand_ids;
  };
  std::vector<Entry> entries_;
};

}  // namespace cct
