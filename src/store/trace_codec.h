// TraceCodec: a run's trace as one section (kind 8), and back.
//
// Pure functions, no I/O, like IterationCodec: one section holds the whole
// trace (the collector rewrites it at each checkpoint with its run file), so
// the store chunks it like any other section. Compact: per-thread sample
// streams of varint time deltas and zigzag-varint node deltas (a repeated
// node costs one byte), ranges and GPU activities as delta-coded rows with
// each GPU (device, stream) interned once. Node ids are stored as the tree's
// stored (preorder) ids. Layout: docs/format.md, "kind 8 — trace".
// Decoding validates every count, length, varint (no overlong or truncated
// ones), time order and id: damaged input yields kCorrupt, never a crash,
// and no allocation larger than the payload could fill. Thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "store/trace.h"
#include "store/tree_codec.h"

namespace store {

// Encodes `trace`, whose node ids refer to `tree`; `stored_ids` maps every
// tree node to its stored id (EncodeTree's output). Sample streams are sorted
// by time and ranges and GPU activities by start where they are not already
// (stable), and empty sample streams are left out. Bad input (a node beyond
// the tree, two streams of one thread, time_ns and node of different
// lengths, an end before its start, an unknown GPU kind) is
// kInvalidArgument.
cct::Result<Section> EncodeTrace(const RunTrace& trace, const cct::Tree& tree,
                                 const std::vector<cct::NodeId>& stored_ids);

// Decodes a kind-8 payload. `node_count` is the stored tree's; node ids come
// back as stored ids (= ReadTree's ids).
cct::Result<RunTrace> DecodeTrace(std::string_view payload, size_t node_count);

}  // namespace store
