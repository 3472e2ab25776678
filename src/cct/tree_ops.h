// Whole-tree operations: children lists, preorder, path identity, rebuilding
// a tree with frames mapped or folded away, and merging trees by identity.
//
// All are pure functions of their inputs (no shared state); thread-safe for
// distinct outputs.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cct/prefetch.h"
#include "cct/status.h"
#include "cct/tree.h"

namespace cct {

// Children of every node, as compressed rows: the children of n are
// ids[offsets[n] .. offsets[n+1]), in increasing id (creation) order.
struct Children {
  std::vector<uint32_t> offsets;
  std::vector<NodeId> ids;

  size_t count(NodeId n) const { return offsets[n + 1] - offsets[n]; }
  const NodeId* begin(NodeId n) const { return ids.data() + offsets[n]; }
  const NodeId* end(NodeId n) const { return ids.data() + offsets[n + 1]; }
  // Asks for n's entry in offsets ahead of begin(n)/end(n) (a hint).
  void Prefetch(NodeId n) const { cct::Prefetch(offsets.data() + n); }
};
Children BuildChildren(const Tree& tree);

// Node ids in depth-first preorder (children in creation order).
std::vector<NodeId> Preorder(const Tree& tree, const Children& children);

// How many levels the tree's deepest node lies below `top`'s depth, at most
// `limit` (0 when none is deeper). Reads only as far as it must: a 10^7-node
// tree reaches a --depth limit within its first nodes.
size_t LevelsBelow(const Tree& tree, NodeId top, size_t limit);

// The identity of a frame for matching nodes across runs: kind and name;
// for functions, kernels and loops the module's file name without directory or
// shared-library version (libfoo.so.1.2 -> libfoo.so); for source lines the
// file's base name and line. Addresses, ids and paths never take part.
std::string FrameIdentity(const Tree& tree, FrameId frame);
std::string_view ModuleIdentity(std::string_view module);

// Per node: whether its subtree holds a non-zero exclusive value of some
// additive metric (the root always counts). An iteration's profile keeps the
// run's whole tree, with zeros where the iteration did not go: reports hide
// those nodes, and a comparison leaves them out of the run.
std::vector<char> NodesWithValues(const Tree& tree);

// The last component of a path ("/usr/lib/libc.so.6" -> "libc.so.6").
std::string_view BaseName(std::string_view path);
// The display name of a source-line node: "BASENAME:LINE" ("train.cc:42").
std::string LineName(std::string_view file, uint32_t line);
// The display name of a loop node: "loop at BASENAME:LINE".
std::string LoopName(std::string_view file, uint32_t line);

// A node's path identity: the FrameIdentity of each frame from the root's
// child down to the node, joined by '\n' (a character no frame name holds).
std::string PathIdentity(const Tree& tree, NodeId node);

// Display names of the frames from the root's child down to `node`.
std::vector<std::string> PathNames(const Tree& tree, NodeId node);

inline constexpr FrameId kFoldFrame = UINT32_MAX;

// Rebuilds `src` node by node. `map(dst, src_frame)` returns the frame the
// node gets in the result (interning into `dst` as needed; the result starts
// with src's strings, frames and metrics, so ids of src are valid in it), or
// kFoldFrame to fold the node into its parent: its values go to the parent's
// node and its children become the parent's. With `fold_recursion`, a node
// whose frame equals its parent's (after mapping) also folds (direct
// recursion collapses to one level). The map is called once per src frame.
// Optionally returns, for every src node, its node in the result.
Tree Rebuild(const Tree& src, const std::function<FrameId(Tree& dst, FrameId src_frame)>& map,
             bool fold_recursion = false, std::vector<NodeId>* node_map = nullptr);

// Rebuilds `src` without the nodes marked in `fold` (one entry per node; the
// root's is ignored): a folded node's exclusive values go to its nearest
// ancestor that stays, and its children become that ancestor's, merging
// with a child of the same frame (values add). Every metric's total is
// kept. The result has src's strings, frames and metrics; node ids keep
// their order (a parent before its children). Optionally returns, for every
// src node, its node in the result.
Tree FoldNodes(const Tree& src, const std::vector<char>& fold, std::vector<NodeId>* node_map = nullptr);

// (Rebuild and FoldNodes keep a summary metric's values only on nodes that
// stay as they were; see metric.h.)
// Folds away every node whose frame kind is `kind` (e.g. kLine, kThread).
Tree FoldKind(const Tree& src, FrameKind kind);
bool HasKind(const Tree& tree, FrameKind kind);

// Adds `src`'s nodes and values (times `scale`) into `dst`, matching nodes
// by path identity. Metrics are matched by name; a metric src has and dst
// lacks is registered; one registered with another unit is an error, and
// so is a summary metric in src (statistics across units do not add up).
// Optionally returns, for every src node, its node in dst.
Status MergeInto(Tree& dst, const Tree& src, double scale = 1.0, std::vector<NodeId>* node_map = nullptr);

}  // namespace cct
