// IterationCodec: a run's iterations as one section (kind 6), and back.
//
// Pure functions, no I/O, like TreeCodec: one section holds every iteration
// of a run, columnar (all starts, all durations, all column descriptors, all
// node ids, all values), so the store chunks it like any other section and a
// reader copies it out of the map once. Node ids are stored as the tree's
// stored (preorder) ids. Layout: docs/format.md, "kind 6 — iterations".
// Decoding validates every count, offset, order and id against the stored
// tree: damaged input yields kCorrupt, never a crash. Thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "store/iterations.h"
#include "store/tree_codec.h"

namespace store {

// Encodes `iterations`, whose columns refer to `tree`'s node ids;
// `stored_ids` maps every tree node to its stored id (EncodeTree's output).
// Within a column, values of the same node are summed and zeros dropped;
// columns of the same metric in one iteration are merged. Bad input (an
// index out of order, a metric that is not an additive metric of the tree, a
// node beyond the tree, nodes and values of different lengths) is
// kInvalidArgument. Empty columns are ignored whatever their metric.
cct::Result<Section> EncodeIterations(const RunIterations& iterations, const cct::Tree& tree,
                                      const std::vector<cct::NodeId>& stored_ids);

// Decodes a kind-6 payload. `node_count` and `metrics` are those of the
// stored tree; node ids come back as stored ids (= ReadTree's ids).
cct::Result<RunIterations> DecodeIterations(std::string_view payload, size_t node_count,
                                            const cct::MetricRegistry& metrics);

}  // namespace store
