// What the two HPCToolkit readers share: hpctoolkit.cc (experiment.xml +
// metric-db) and hpctoolkit_sparse.cc (meta.db + profile.db, hpcprof 2022.10
// on) name metrics, convert units, name thread nodes and clear rounding dust
// the same way, so one program's database imports alike from either format.
//
// Internal to the importers library. Pure functions; the Tree ones mutate
// only the tree they are given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "importers/importer.h"

namespace importers::hpc {

// HPCToolkit's metric name without the " (I)"/" (E)" suffix: our metrics
// are one per measured quantity, inclusive values derived at query time.
std::string MetricBaseName(std::string name);

// A metric as registered in the tree; `scale` converts the database's
// numbers (--metric NAME --unit U), 1 otherwise.
struct Metric {
  std::string name;
  cct::MetricId id = 0;
  double scale = 1;
};

// Registers `metrics` (names set) as additive metrics: the catalog's unit
// for known names, --unit for the one --metric names (which must be there:
// kInvalidArgument listing the names otherwise), dimensionless else. A name
// the registry refuses (not UTF-8, ...) is kBadInput "WHERE: why".
cct::Status RegisterMetrics(cct::Tree& tree, std::vector<Metric>& metrics, const ImportOptions& options,
                            const std::string& where);

// "rank R", "rank R thread T" when `show_thread`, then `extra` (" gpustream
// 3", from the sparse format's identifier tuples).
std::string ThreadLabel(uint32_t rank, uint32_t thread, bool show_thread, std::string_view extra = {});

// Whether thread labels carry the thread: when a rank has several profiles.
bool RanksHaveThreads(const std::vector<std::pair<uint32_t, uint32_t>>& rank_thread);

// Exclusive values derived from inclusive ones (own minus the children's)
// leave float dust where the database rounded: clears values below 1e-9 of
// the metric's total.
void ClearDust(cct::Tree& tree, const std::vector<Metric>& metrics);

}  // namespace importers::hpc
