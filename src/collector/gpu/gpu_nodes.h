// Where GPU metrics land in a calling-context tree: the nodes the collector
// runtime (gpu_runtime.cc) and the raw-dump replay (cupti/raw_replay.cc)
// both make, so that a replayed dump rebuilds the tree the collector stored.
//
//   site ─ <gpu kernel> ─ kernel            GpuPlaceholderNode, GpuKernelNode
//                           └ file.cu:42    GpuLineNode (PC sampling)
//   <root> ─ <gpu unknown>                  GpuUnknownNode: activity whose
//                                           launch was never known
//
// Pure functions over cct::Tree (InternChild: calling one twice returns the
// same node). Not thread-safe (the tree is not).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cct/frame.h"
#include "cct/tree.h"

namespace collector {

// The name of the node that collects activity of unknown launches.
inline constexpr std::string_view kGpuUnknownName = "<gpu unknown>";

// The kernel child (kind kKernel, named by the demangled kernel) of `site`.
cct::NodeId GpuKernelNode(cct::Tree& tree, cct::NodeId site, std::string_view kernel);
// Where a kernel's metrics go given its launch site's node: the site itself
// when it is a kernel node of that name (a launch that named its kernel),
// a kernel child of the site's parent when it is a kernel node of another
// name (the launch's placeholder), else a kernel child of the site (a
// placeholder: graph launches, `<gpu unknown>`, ...). The rule of the
// runtime's kernel handles (gpu_runtime.cc), used by the raw-dump replay.
cct::NodeId GpuSiteKernelNode(cct::Tree& tree, cct::NodeId site, std::string_view kernel);
// The source-line child (kind kLine) of a kernel node: named by
// cct::LineName ("BASENAME:LINE") like the CPU line nodes, with the full
// `file` and `line` in the frame; no module.
cct::NodeId GpuLineNode(cct::Tree& tree, cct::NodeId kernel_node, std::string_view file, uint32_t line);
// `<gpu unknown>` (kind kGpuOp) under the root.
cct::NodeId GpuUnknownNode(cct::Tree& tree);
// The placeholder child (kind kGpuOp, cct::GpuOpPlaceholder(kind)) of `parent`.
cct::NodeId GpuPlaceholderNode(cct::Tree& tree, cct::NodeId parent, cct::GpuOpKind kind);

}  // namespace collector
