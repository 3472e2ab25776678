// Iterations: a run cut into iterations by an NVTX range (`--iteration
// REGEX`), each with its own exclusive values on the run's tree.
//
// The run's tree is stored once; an iteration holds only the sparse
// exclusive values its interval added, per additive metric, keyed by node id.
// In memory the node ids are those of the tree passed alongside: the tree a
// writer passes to Database::CreateRun/UpdateRun, or the tree
// Database::ReadTree returns (the store renumbers nodes in preorder and maps
// iteration node ids with them). Stored layout: section kind 6,
// docs/format.md. Plain value types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cct/tree.h"

namespace store {

// Exclusive values of one additive metric in one iteration.
struct IterationColumn {
  cct::MetricId metric = 0;        // id in the run's tree's MetricRegistry
  std::vector<cct::NodeId> nodes;  // node ids of the in-memory tree passed alongside (not stored ids)
  std::vector<double> values;      // parallel to nodes
};

struct Iteration {
  uint32_t index = 0;       // 0-based, in start order (selectors and reports count from 1)
  int64_t start_ns = 0;     // Unix epoch ns
  int64_t duration_ns = 0;
  std::vector<IterationColumn> columns;
};

struct RunIterations {
  std::string range;  // the NVTX range name pattern that cut the run (the --iteration regex)
  std::vector<Iteration> iterations;
};

}  // namespace store
