#include "collector/gpu/gpu_nodes.h"

#include "cct/tree_ops.h"

namespace collector {

cct::NodeId GpuKernelNode(cct::Tree& tree, cct::NodeId site, std::string_view kernel) {
  return tree.InternChild(site, tree.InternFrame(cct::FrameKind::kKernel, kernel));
}

cct::NodeId GpuSiteKernelNode(cct::Tree& tree, cct::NodeId site, std::string_view kernel) {
  if (site != cct::kRootNode && tree.kind(site) == cct::FrameKind::kKernel) {
    if (tree.name(site) == kernel) return site;
    return GpuKernelNode(tree, tree.parent(site), kernel);
  }
  return GpuKernelNode(tree, site, kernel);
}

cct::NodeId GpuLineNode(cct::Tree& tree, cct::NodeId kernel_node, std::string_view file, uint32_t line) {
  return tree.InternChild(kernel_node,
                          tree.InternFrame(cct::FrameKind::kLine, cct::LineName(file, line), /*module=*/{}, file, line));
}

cct::NodeId GpuUnknownNode(cct::Tree& tree) {
  return tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kGpuOp, kGpuUnknownName));
}

cct::NodeId GpuPlaceholderNode(cct::Tree& tree, cct::NodeId parent, cct::GpuOpKind kind) {
  return tree.InternChild(parent, tree.InternFrame(cct::FrameKind::kGpuOp, cct::GpuOpPlaceholder(kind)));
}

}  // namespace collector
