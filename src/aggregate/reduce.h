// Reducible statistics across units (the ranks of a job, the runs of a
// group): the per-node partials query/aggregate.h computes in one pass,
// kept in a form that combines, so a job's units can be reduced in parallel
// (threads, MPI ranks) and the partials combined pairwise.
//
// A Partial covers a contiguous range of units [first_unit, first_unit +
// units). Over it, per node of its merged tree (path identity, as
// cct::MergeInto matches nodes) and per additive metric, exclusive and
// inclusive: the sum, min and max across its units and the first unit
// holding the max. A node a unit lacks counts as 0 there, exactly as
// query::TreeUnits and query::UnitAggregate count it, so combining partials
// in unit order gives the values one pass over all units gives (sums of
// integer-valued metrics, such as times in ns, exactly; ties of the max go to
// the first unit either way).
//
// Plain value type; not thread-safe (one thread per Partial).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"

namespace aggregate {

struct NodeStats {
  std::vector<double> sum, min, max;
  std::vector<uint32_t> argmax;  // a unit index (global, not relative to first_unit)
};

class Partial {
 public:
  explicit Partial(size_t first_unit = 0) : first_unit_(first_unit) {}

  size_t first_unit() const { return first_unit_; }
  size_t units() const { return units_; }
  const cct::Tree& merged() const { return merged_; }
  // Statistics of merged()'s metric m (additive metrics only; empty
  // otherwise), on merged()'s node ids.
  const NodeStats& exclusive(cct::MetricId m) const { return exc_[m]; }
  const NodeStats& inclusive(cct::MetricId m) const { return inc_[m]; }

  // Adds the next unit (index first_unit() + units()): its tree, with thread
  // and source-line nodes already folded as the caller wants them. A summary
  // metric (an aggregate run as input) is kInvalidArgument.
  cct::Status AddUnit(const cct::Tree& tree);
  // Adds `next`, whose units follow this one's (next.first_unit() ==
  // first_unit() + units()). Either may be empty.
  cct::Status Combine(const Partial& next);

  // The bytes another process reads back with Deserialize (MPI transport).
  std::string Serialize() const;
  static cct::Result<Partial> Deserialize(std::string_view bytes);

  // The aggregate tree: merged() with, per additive metric M, M itself (the
  // sum, additive) and the summary metrics M@mean, M@min, M@max,
  // M@imbalance (max/mean; no value where the mean is 0) and M@argmax (the
  // unit holding the max), exclusive and inclusive.
  cct::Result<cct::Tree> Finish() const;

 private:
  // Maps `src`'s frames, nodes and metrics into merged_, growing the
  // statistics for new nodes and metrics. Returns src node -> merged node.
  cct::Result<std::vector<cct::NodeId>> MergeNodes(const cct::Tree& src, std::vector<cct::MetricId>& metric_map);
  void Grow();

  size_t first_unit_ = 0;
  size_t units_ = 0;
  cct::Tree merged_;
  std::vector<NodeStats> exc_, inc_;  // by merged_ metric id
  std::unordered_map<std::string, cct::FrameId> frame_index_;  // FrameIdentity -> merged_ frame
};

// The names of the summary metrics Finish registers for additive metric M,
// in order: M@mean, M@min, M@max, M@imbalance, M@argmax.
std::vector<std::string> SummaryMetricNames(const std::string& metric);

}  // namespace aggregate
