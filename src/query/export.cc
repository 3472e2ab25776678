// Exports: JSON tree, folded stacks, Hatchet literal.
#include <cmath>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "query/exchange.h"
#include "query/format.h"
#include "query/json_writer.h"
#include "query/progress.h"
#include "query/reports.h"

namespace query {

using cct::MetricId;
using cct::NodeId;
using cct::Status;

cct::Result<ExportFormat> ParseExportFormat(const std::string& s) {
  if (s == "json") return ExportFormat::kJson;
  if (s == "folded") return ExportFormat::kFolded;
  if (s == "hatchet") return ExportFormat::kHatchet;
  if (s == "hatchet-json") return ExportFormat::kHatchetJson;
  if (s == "pprof") return ExportFormat::kPprof;
  if (s == "csv") return ExportFormat::kCsv;
  return cct::InvalidArgument("unknown export format '" + s +
                              "' (expected json, folded, hatchet, hatchet-json, pprof or csv)");
}

namespace {

// Additive metrics to export: the named ones, or all.
cct::Result<std::vector<MetricId>> ExportMetrics(const cct::Tree& tree, const std::vector<std::string>& names,
                                                 bool additive_only) {
  if (!names.empty()) return ResolveMetrics(tree, names);
  std::vector<MetricId> ids;
  for (MetricId m = 0; m < tree.metrics().size(); ++m)
    if (!additive_only || tree.metrics().Get(m).kind == cct::MetricKind::kAdditive) ids.push_back(m);
  if (ids.empty()) return cct::NotFound("the run has no metrics to export");
  return ids;
}

// Folded stacks: "frame;frame;frame value", one line per node with an
// exclusive value. Frame names lose any ';' (the format's separator).
Status WriteFolded(const cct::Tree& tree, const std::vector<std::string>& names, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(std::vector<MetricId> ids, ResolveMetrics(tree, names));
  const MetricId m = ids.front();
  if (tree.metrics().Get(m).kind != cct::MetricKind::kAdditive)
    return cct::InvalidArgument("folded stacks carry additive metrics; '" + tree.metrics().Get(m).name + "' is derived");
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
    if (exc[it.node] != 0) out << path << ' ' << NumberText(exc[it.node]) << '\n';
    const size_t len = path.size();
    for (const NodeId* c = children.end(it.node); c != children.begin(it.node);) stack.push_back({*--c, len});
  }
  return Status::Ok();
}

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
  JsonWriter w(out);
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
      w.Field(d.name, ExportValue(values.Exclusive(m)[n], d.unit));
      w.Field(d.name + " (inc)", ExportValue(values.Inclusive(m)[n], d.unit));
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

Status WriteExport(Profile& profile, ExportFormat format, const ExportOptions& options, std::ostream& real_out) {
  // Every format's bytes pass through a counter, so the progress line shows
  // how much has been written even for exporters that do not count nodes.
  CountingStreambuf counting(real_out.rdbuf(), options.progress);
  std::ostream counted(&counting);
  std::ostream& out = options.progress ? counted : real_out;
  Status status;
  switch (format) {
    case ExportFormat::kPprof: status = WritePprof(profile, options.metrics, out, options.progress); break;
    case ExportFormat::kHatchetJson:
      status = WriteHatchetGraphFrame(profile.tree, options.metrics, out, options.progress);
      break;
    case ExportFormat::kCsv: status = WriteNodeCsv(profile.tree, options.metrics, out, options.progress); break;
    case ExportFormat::kFolded: status = WriteFolded(profile.tree, options.metrics, out); break;
    case ExportFormat::kHatchet: status = WriteHatchetLiteral(profile.tree, options.metrics, out); break;
    case ExportFormat::kJson: {
      ReportOptions ro;
      ro.format = OutputFormat::kJson;
      CCT_ASSIGN_OR_RETURN(std::vector<MetricId> ids, ExportMetrics(profile.tree, options.metrics, false));
      for (MetricId m : ids) ro.metrics.push_back(profile.tree.metrics().Get(m).name);
      status = WriteTreeReport(profile, ro, out);
      break;
    }
  }
  if (options.progress) {
    options.progress->Tick();  // a last redraw, so a slow export shows where it ended
    options.progress->Finish();
  }
  if (status.ok() && !out) status = cct::IoError("cannot write the export");
  return status;
}

}  // namespace query
