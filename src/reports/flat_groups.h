// Flat groups: the nodes of a tree grouped by function, kernel, NVTX range,
// source line or module, as `top` lists them, with per-group sums of any
// per-node values (the tree's own, one rank's, one run's).
//
// A group's exclusive value is the sum over its nodes. Its inclusive value
// counts each node's subtree once: a node inside another node of the same
// group (recursion) adds nothing, so recursive functions are not counted
// twice. Derived metrics are evaluated from the group's summed operands.
//
// Internal to the reports library (top, stats). Borrows the tree, which must
// outlive it; const use is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cct/tree.h"
#include "reports/reports.h"

namespace reports {

struct FlatGroup {
  cct::NodeId first_node = 0;  // a representative node (for name, module, file)
  std::string name, module, detail;
  cct::FrameKind kind = cct::FrameKind::kFunction;
  size_t nodes = 0;
};

class FlatGroups {
 public:
  // With `only`, nodes whose entry is 0 belong to no group (top --query
  // groups a path query's match ends only).
  FlatGroups(const cct::Tree& tree, GroupBy by, const std::vector<char>* only = nullptr);

  const std::vector<FlatGroup>& groups() const { return groups_; }
  // Per group the sums of `exc` over its nodes and of `inc` over its
  // outermost nodes (both per node of the tree); resized to groups().size().
  void Accumulate(const std::vector<double>& exc, const std::vector<double>& inc, std::vector<double>& group_exc,
                  std::vector<double>& group_inc) const;

 private:
  std::vector<FlatGroup> groups_;
  size_t n_ = 0;                             // the tree's nodes
  std::unique_ptr<uint32_t[]> node_group_;  // per node; UINT32_MAX: none
  std::unique_ptr<char[]> outermost_;       // per node: no ancestor in the same group
};

// The selected metrics' values of one group from its sums of `additive`
// (derived ones by their formula; 0 when no operand has a value).
std::vector<double> SelectedValues(const cct::MetricRegistry& reg, const std::vector<cct::MetricId>& ids,
                                   const std::vector<cct::MetricId>& additive, const std::vector<double>& sums);
// The same into `out` (its storage reused: called once per group).
void SelectedValues(const cct::MetricRegistry& reg, const std::vector<cct::MetricId>& ids,
                    const std::vector<cct::MetricId>& additive, const std::vector<double>& sums,
                    std::vector<double>& out);

std::string_view GroupHeader(GroupBy by);

}  // namespace reports
