// --to hatchet: Hatchet's literal format (hatchet.GraphFrame.from_literal).
#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "exporters/exporter.h"
#include "output/format.h"
#include "output/json_writer.h"

namespace exporters {

using cct::MetricId;
using cct::NodeId;
using cct::Status;

namespace {

std::string_view HatchetType(cct::FrameKind k) {
  switch (k) {
    case cct::FrameKind::kFunction: return "function";
    case cct::FrameKind::kLine: return "statement";
    case cct::FrameKind::kLoop: return "loop";
    default: return cct::FrameKindName(k);
  }
}

// Hatchet's literal format: a list of roots, each {"frame": {"name", "type",
// ...}, "metrics": {m: exclusive, "m (inc)": inclusive}, "children": [...]};
// times in seconds.
Status WriteHatchetLiteral(const cct::Tree& tree, const std::vector<std::string>& names, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(std::vector<MetricId> ids, ExportMetrics(tree, names, true));
  cct::NodeValues values(tree);
  const cct::Children children = cct::BuildChildren(tree);
  output::JsonWriter w(out);
  auto open = [&](NodeId n) {
    const cct::Frame f = tree.frame(n);
    w.BeginObject().Key("frame").BeginObject();
    w.Field("name", tree.str(f.name)).Field("type", HatchetType(f.kind));
    if (f.module) w.Field("module", tree.str(f.module));
    if (f.file) w.Field("file", tree.str(f.file));
    if (f.line) w.FieldInt("line", f.line);
    w.EndObject().Key("metrics").BeginObject();
    for (MetricId m : ids) {
      const cct::MetricDesc& d = tree.metrics().Get(m);
      w.Field(d.name, output::ExportValue(values.Exclusive(m)[n], d.unit));
      w.Field(d.name + " (inc)", output::ExportValue(values.Inclusive(m)[n], d.unit));
    }
    w.EndObject().Key("children").BeginArray();
  };
  struct Item {
    NodeId node;
    size_t next;
  };
  w.BeginArray();
  for (const NodeId* r = children.begin(cct::kRootNode); r != children.end(cct::kRootNode); ++r) {
    std::vector<Item> stack;
    open(*r);
    stack.push_back({*r, 0});
    while (!stack.empty()) {
      Item& it = stack.back();
      if (it.next < children.count(it.node)) {
        const NodeId c = children.begin(it.node)[it.next++];
        open(c);
        stack.push_back({c, 0});
      } else {
        w.EndArray().EndObject();
        stack.pop_back();
      }
    }
  }
  w.EndArray();
  out << '\n';
  return Status::Ok();
}

}  // namespace

Status ExportHatchet(const query::Profile& profile, const ExportOptions& options, std::ostream& out) {
  return WriteHatchetLiteral(profile.tree, options.metrics, out);
}

}  // namespace exporters
