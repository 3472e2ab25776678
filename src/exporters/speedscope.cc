// --to speedscope: speedscope's JSON file format
// (https://www.speedscope.app/file-format-schema.json) for one additive
// metric. One "sampled" profile per thread node (the nodes above any thread
// go into one profile named after the run): each node with an exclusive
// value is one sample, its path below the thread, weighted by that value.
// That represents the calling-context tree exactly: speedscope rebuilds the
// same tree and the same inclusive values from it. Frames carry name, file
// and line; time metrics are written in nanoseconds, bytes in bytes, the
// rest as "none".
#include <map>
#include <tuple>
#include <unordered_map>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "exporters/exporter.h"
#include "output/json_writer.h"

namespace exporters {

using cct::MetricId;
using cct::NodeId;
using cct::Status;

namespace {

std::string_view SpeedscopeUnit(cct::Unit u) {
  switch (u) {
    case cct::Unit::kNanoseconds: return "nanoseconds";
    case cct::Unit::kBytes: return "bytes";
    default: return "none";
  }
}

Status WriteSpeedscope(const query::Profile& profile, const std::vector<std::string>& names, std::ostream& out) {
  const cct::Tree& tree = profile.tree;
  CCT_ASSIGN_OR_RETURN(std::vector<MetricId> ids, query::ResolveMetrics(tree, names));
  const MetricId m = ids.front();
  const cct::MetricDesc& desc = tree.metrics().Get(m);
  if (desc.kind != cct::MetricKind::kAdditive)
    return cct::InvalidArgument("speedscope samples carry an additive metric; '" + desc.name + "' is " + std::string(cct::MetricKindName(desc.kind)));
  cct::NodeValues values(tree);
  const std::vector<double>& exc = values.Exclusive(m);
  const cct::Children children = cct::BuildChildren(tree);

  // Profiles: the thread nodes under the root, and one for the other
  // top-level nodes (a tree without threads has only that one).
  struct Prof {
    std::string name;
    std::vector<NodeId> tops;  // the nodes whose subtrees it holds (their paths start below `base`)
    NodeId base;
  };
  std::vector<Prof> profs;
  Prof rest{profile.runs.empty() ? std::string("profile") : profile.runs.front().name, {}, cct::kRootNode};
  for (const NodeId* c = children.begin(cct::kRootNode); c != children.end(cct::kRootNode); ++c) {
    if (tree.kind(*c) == cct::FrameKind::kThread) profs.push_back({std::string(tree.name(*c)), {*c}, *c});
    else rest.tops.push_back(*c);
  }
  if (!rest.tops.empty() || profs.empty()) profs.insert(profs.begin(), std::move(rest));

  // Frames: one per distinct (name, file, line), numbered as samples first
  // use them; written after the profiles (as py-spy and rbspy order them),
  // so only frames that are used are listed.
  std::unordered_map<cct::FrameId, uint32_t> frame_index;
  std::vector<NodeId> frame_nodes;  // a node with that frame, to write it
  std::map<std::tuple<std::string_view, std::string_view, uint32_t>, uint32_t> by_text;
  auto frame_of = [&](NodeId n) {
    auto it = frame_index.find(tree.frame_id(n));
    if (it == frame_index.end()) {
      const cct::Frame f = tree.frame(n);
      auto [t, added] = by_text.emplace(std::make_tuple(tree.str(f.name), tree.str(f.file), f.line),
                                        static_cast<uint32_t>(frame_nodes.size()));
      if (added) frame_nodes.push_back(n);
      it = frame_index.emplace(tree.frame_id(n), t->second).first;
    }
    return it->second;
  };

  output::JsonWriter w(out);
  w.BeginObject().Field("$schema", "https://www.speedscope.app/file-format-schema.json");
  w.Key("profiles").BeginArray();
  std::vector<uint32_t> path;
  for (const Prof& p : profs) {
    // Nodes with a value, preorder, and the sum of the weights.
    std::vector<NodeId> sampled;
    double total = 0;
    std::vector<NodeId> stack(p.tops.rbegin(), p.tops.rend());  // a thread's profile: the thread itself
    while (!stack.empty()) {
      const NodeId n = stack.back();
      stack.pop_back();
      if (exc[n] != 0) sampled.push_back(n), total += exc[n];  // the thread's own value: an empty stack
      for (const NodeId* c = children.end(n); c != children.begin(n);) stack.push_back(*--c);
    }
    w.BeginObject().Field("type", "sampled").Field("name", p.name).Field("unit", SpeedscopeUnit(desc.unit));
    w.FieldInt("startValue", 0).Field("endValue", total);
    w.Key("samples").BeginArray();
    for (NodeId n : sampled) {
      path.clear();
      for (NodeId k = n; k != p.base && k != cct::kRootNode; k = tree.parent(k)) path.push_back(frame_of(k));
      w.BeginArray();
      for (size_t i = path.size(); i-- > 0;) w.Int(path[i]);
      w.EndArray();
    }
    w.EndArray().Key("weights").BeginArray();
    for (NodeId n : sampled) w.Number(exc[n]);
    w.EndArray().EndObject();
  }
  w.EndArray();
  w.Key("shared").BeginObject().Key("frames").BeginArray();
  for (NodeId n : frame_nodes) {
    const cct::Frame f = tree.frame(n);
    w.BeginObject().Field("name", tree.str(f.name));
    if (f.file) w.Field("file", tree.str(f.file));
    if (f.line) w.FieldInt("line", f.line);
    w.EndObject();
  }
  w.EndArray().EndObject();
  w.Field("name", profile.label.empty() ? std::string_view("cctdb") : std::string_view(profile.label));
  w.Field("exporter", "cctdb");
  w.FieldInt("activeProfileIndex", 0);
  w.EndObject();
  out << '\n';
  return Status::Ok();
}

}  // namespace

Status ExportSpeedscope(const query::Profile& profile, const ExportOptions& options, std::ostream& out) {
  return WriteSpeedscope(profile, options.metrics, out);
}

}  // namespace exporters
