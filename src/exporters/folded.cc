// --to folded: folded stacks, "frame;frame;frame value" (FlameGraph,
// inferno, speedscope read them). Source-line nodes are folded into their
// functions unless asked for: those readers draw a "file.cc:56" pseudo-frame
// as one more function. The optional first line "# metric=NAME unit=UNIT"
// says what the numbers are (cct-import --from folded reads it back;
// flamegraph.pl skips it with a warning about one line it ignored).
#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "exporters/exporter.h"
#include "output/format.h"

namespace exporters {

using cct::MetricId;
using cct::NodeId;
using cct::Status;

namespace {

// Folded stacks: "frame;frame;frame value", one line per node with an
// exclusive value. Frame names lose any ';' (the format's separator).
Status WriteFolded(const cct::Tree& tree, const std::vector<std::string>& names, bool unit_comment,
                   std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(std::vector<MetricId> ids, query::ResolveMetrics(tree, names));
  const MetricId m = ids.front();
  const cct::MetricDesc& desc = tree.metrics().Get(m);
  if (desc.kind != cct::MetricKind::kAdditive)
    return cct::InvalidArgument("folded stacks carry additive metrics; '" + desc.name + "' is " + std::string(cct::MetricKindName(desc.kind)));
  if (unit_comment) {
    if (desc.name.find_first_of(" \t\n") != std::string::npos)
      return cct::InvalidArgument("--unit-comment: the metric name '" + desc.name + "' has white space");
    out << "# metric=" << desc.name << " unit=" << cct::UnitName(desc.unit) << '\n';
  }
  cct::NodeValues values(tree);
  const std::vector<double>& exc = values.Exclusive(m);
  const cct::Children children = cct::BuildChildren(tree);
  // Preorder with the current path kept as a string of names.
  struct Item {
    NodeId node;
    size_t path_len;  // length of the parent's path
  };
  std::string path;
  std::vector<Item> stack;
  for (const NodeId* c = children.end(cct::kRootNode); c != children.begin(cct::kRootNode);) stack.push_back({*--c, 0});
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    path.resize(it.path_len);
    if (!path.empty()) path.push_back(';');
    for (char c : tree.name(it.node)) path.push_back(c == ';' ? ':' : (c == '\n' ? ' ' : c));
    if (exc[it.node] != 0) out << path << ' ' << output::NumberText(exc[it.node]) << '\n';
    const size_t len = path.size();
    for (const NodeId* c = children.end(it.node); c != children.begin(it.node);) stack.push_back({*--c, len});
  }
  return Status::Ok();
}

}  // namespace

Status ExportFolded(const query::Profile& profile, const ExportOptions& options, std::ostream& out) {
  if (options.lines || !cct::HasKind(profile.tree, cct::FrameKind::kLine))
    return WriteFolded(profile.tree, options.metrics, options.unit_comment, out);
  return WriteFolded(cct::FoldKind(profile.tree, cct::FrameKind::kLine), options.metrics, options.unit_comment, out);
}

}  // namespace exporters
