// Hatchet JSON: the literal format (a list of roots, each {"frame",
// "metrics", "children"}) and the graph + dataframe layout of
// GraphFrame.to_json ({"graph", "dataframe", "dataframe_indices",
// "exclusive_metrics", "inclusive_metrics"}).
//
// Metric keys containing "(inc)" are inclusive, the others exclusive. We
// import exclusive values (an inclusive-only metric gets exclusive = own
// inclusive minus the children's) and check that their subtree sums agree
// with the inclusive values the file states. Time metrics of our own
// vocabulary are read in seconds (what our exports write); other metrics
// keep their numbers, unit from --unit or dimensionless.
// Dataframe rows indexed by rank and/or thread become thread nodes.
//
// Frames: Hatchet's "function" (and "region", "None"), "statement" and
// "loop", Caliper's "kernel"/"memcpy", and our own kind names. A statement or
// loop frame that states file and line is named from them as our HPCToolkit
// importer and the collector name such nodes (cct::LineName), so the same
// profile imported either way has the same frames; its Hatchet name (which
// to_literal writes beside the frame, not in it) is used otherwise. Sibling
// nodes with the same frame are one node here, as Hatchet merges them: their
// values add up, and a stated inclusive value is checked as the siblings'
// sum. A node whose "_hatchet_nid" was seen before (to_literal repeats a node
// reached through a second parent) is skipped, as Hatchet's literal reader
// does not add it twice.
#include <algorithm>
#include <cmath>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>

#include <set>

#include "cct/node_values.h"
#include "cct/text.h"
#include "cct/tree_ops.h"
#include "importers/importer.h"

namespace importers {

using cct::Result;
using cct::Status;
using nlohmann::json;

namespace {

// A node as the file describes it, before it becomes ours.
struct HNode {
  int64_t parent = -1;
  std::string name, module, file;
  std::optional<std::string> type;  // as the file states it (a non-string dumped)
  uint32_t line = 0;
  // Where the node is, for messages: literal: position among its parent's
  // children (or the roots); graph: the graph entry and the node id.
  int64_t position = 0;
  int64_t graph_id = -1;
  std::string dataframe_name;  // graph form: the "name" column, when the frame has none
  cct::FrameKind kind = cct::FrameKind::kFunction;
  // per location (rank/thread key, "" when none): metric key -> value
  std::map<std::string, std::map<std::string, double>> values;
};

std::string BaseMetric(const std::string& key) {
  const size_t p = key.find("(inc)");
  if (p == std::string::npos) return key;
  std::string base = key.substr(0, p) + key.substr(p + 5);
  while (!base.empty() && base.back() == ' ') base.pop_back();
  while (!base.empty() && base.front() == ' ') base.erase(base.begin());
  return base;
}
bool IsInclusive(const std::string& key) { return key.find("(inc)") != std::string::npos; }

// Hatchet's frame types (its readers': HPCToolkit's function/statement/loop,
// Caliper's function/region/kernel/memcpy, "None" when a frame has no type)
// and the kind names our exports write.
std::optional<cct::FrameKind> KindOf(const std::string& type) {
  using K = cct::FrameKind;
  if (type == "function" || type == "region" || type == "None" || type.empty()) return K::kFunction;
  if (type == "statement") return K::kLine;
  if (type == "memcpy") return K::kGpuOp;
  const auto k = cct::ParseFrameKind(type);
  if (!k || *k == K::kRoot) return std::nullopt;
  return k;
}
constexpr std::string_view kKnownTypes =
    "function, statement, loop, region, kernel, memcpy, thread, nvtx, gpu-op, line or unknown";

// Where node i is: "[0].children[2].children[1]" (literal) or "graph node
// \"12\"" (graph), elided in the middle when deep.
std::string JsonPath(const std::vector<HNode>& nodes, size_t i, bool literal) {
  if (!literal) return "graph node \"" + std::to_string(nodes[i].graph_id) + "\"";
  std::vector<int64_t> up;
  for (int64_t k = static_cast<int64_t>(i); k >= 0; k = nodes[static_cast<size_t>(k)].parent)
    up.push_back(nodes[static_cast<size_t>(k)].position);
  std::string p = "[" + std::to_string(up.back()) + "]";
  for (size_t k = up.size() - 1; k-- > 0;) p += ".children[" + std::to_string(up[k]) + "]";
  return cct::ElideMiddle(p, 200);
}

// The node's kind and, for statements and loops, its name, file and line.
Status ResolveFrame(std::vector<HNode>& nodes, size_t i, bool literal, const std::string& path) {
  HNode& h = nodes[i];
  const auto kind = KindOf(h.type.value_or(""));
  if (!kind)
    return cct::BadInput(path + ": " + JsonPath(nodes, i, literal) + (literal ? ".frame" : ".data") +
                         ".type: unknown frame type " +
                         cct::ElideMiddle(json(*h.type).dump(), 80) + " (expected " + std::string(kKnownTypes) + ")");
  h.kind = *kind;
  if (h.name.empty()) h.name = h.dataframe_name;
  if (h.kind == cct::FrameKind::kLine && h.file.empty()) {
    // A statement named "file:line" without the fields.
    if (const size_t c = h.name.rfind(':'); c != std::string::npos) {
      h.file = h.name.substr(0, c);
      try {
        h.line = static_cast<uint32_t>(std::stoul(h.name.substr(c + 1)));
      } catch (...) {
        h.line = 0;
      }
    }
  }
  if (!h.file.empty() && h.line > 0) {
    if (h.kind == cct::FrameKind::kLine) h.name = cct::LineName(h.file, h.line);
    if (h.kind == cct::FrameKind::kLoop) h.name = cct::LoopName(h.file, h.line);
  }
  if (h.name.empty()) {
    if (literal) return cct::BadInput(path + ": " + JsonPath(nodes, i, literal) + " has no name");
    h.name = "node " + std::to_string(h.graph_id);
  }
  return Status::Ok();
}

void ReadFrameAttrs(const json& frame, HNode& h) {
  if (!frame.is_object()) return;
  if (auto it = frame.find("name"); it != frame.end())
    h.name = it->is_string() ? it->get<std::string>() : it->dump();
  if (auto it = frame.find("type"); it != frame.end() && !it->is_null())
    h.type = it->is_string() ? it->get<std::string>() : it->dump();
  if (auto it = frame.find("module"); it != frame.end() && it->is_string()) h.module = it->get<std::string>();
  if (auto it = frame.find("file"); it != frame.end() && it->is_string()) h.file = it->get<std::string>();
  if (auto it = frame.find("line"); it != frame.end() && it->is_number_integer() && it->get<int64_t>() >= 0)
    h.line = static_cast<uint32_t>(it->get<int64_t>());
}

void ReadMetrics(const json& metrics, std::map<std::string, double>& out, const std::vector<std::string>* skip) {
  if (!metrics.is_object()) return;
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    if (!it->is_number() || it.key() == "_hatchet_nid") continue;  // to_literal's node id, not a metric
    if (skip && std::find(skip->begin(), skip->end(), it.key()) != skip->end()) continue;
    out[it.key()] = it->get<double>();
  }
}

Status ParseLiteral(const json& roots, const std::string& path, std::vector<HNode>& nodes) {
  struct Item {
    const json* obj;
    int64_t parent;
    int64_t position;
  };
  std::vector<Item> stack;
  for (size_t i = roots.size(); i-- > 0;) stack.push_back({&roots[i], -1, static_cast<int64_t>(i)});
  std::set<int64_t> seen_nids;
  while (!stack.empty()) {
    const Item item = stack.back();
    stack.pop_back();
    const json& o = *item.obj;
    HNode h;
    h.parent = item.parent;
    h.position = item.position;
    nodes.push_back(std::move(h));
    const size_t self = nodes.size() - 1;
    if (!o.is_object() || !o.contains("frame"))
      return cct::BadInput(path + ": " + JsonPath(nodes, self, true) + " has no \"frame\"");
    const json* metrics = nullptr;
    if (auto m = o.find("metrics"); m != o.end() && m->is_object()) metrics = &*m;
    if (metrics) {
      if (auto n = metrics->find("_hatchet_nid"); n != metrics->end() && n->is_number_integer() &&
                                                  !seen_nids.insert(n->get<int64_t>()).second) {
        nodes.pop_back();  // a node already read, reached again through another parent
        continue;
      }
    }
    HNode& node = nodes.back();
    ReadFrameAttrs(o["frame"], node);
    // to_literal writes the dataframe's name beside the frame; statement and
    // loop frames have none of their own.
    if (node.name.empty())
      if (auto n = o.find("name"); n != o.end() && n->is_string()) node.name = n->get<std::string>();
    CCT_RETURN_IF_ERROR(ResolveFrame(nodes, self, true, path));
    if (metrics) ReadMetrics(*metrics, nodes.back().values[""], nullptr);
    if (auto c = o.find("children"); c != o.end()) {
      if (!c->is_array()) return cct::BadInput(path + ": \"children\" of '" + nodes.back().name + "' is not a list");
      for (size_t i = c->size(); i-- > 0;)
        stack.push_back({&(*c)[i], static_cast<int64_t>(self), static_cast<int64_t>(i)});
    }
  }
  return Status::Ok();
}

Status ParseGraphFrame(const json& doc, const std::string& path, std::vector<HNode>& nodes) {
  const json& graph = doc["graph"];
  if (!graph.is_array()) return cct::BadInput(path + ": \"graph\" is not a list");
  // Node ids -> attributes and children, in file order.
  std::map<int64_t, const json*> by_id;
  std::vector<int64_t> order;
  for (const json& part : graph) {
    if (!part.is_object()) return cct::BadInput(path + ": a \"graph\" entry is not an object");
    for (auto it = part.begin(); it != part.end(); ++it) {
      int64_t id = 0;
      try {
        id = std::stoll(it.key());
      } catch (...) {
        return cct::BadInput(path + ": graph node id '" + it.key() + "' is not a number");
      }
      if (!by_id.emplace(id, &it.value()).second)
        return cct::BadInput(path + ": graph node " + it.key() + " appears twice");
      order.push_back(id);
    }
  }
  std::map<int64_t, int64_t> parent_of;
  for (int64_t id : order) {
    const json& n = *by_id[id];
    if (auto c = n.find("children"); c != n.end() && c->is_array())
      for (const json& child : *c) {
        if (!child.is_number_integer() || !by_id.count(child.get<int64_t>()))
          return cct::BadInput(path + ": graph node " + std::to_string(id) + " has an unknown child");
        if (!parent_of.emplace(child.get<int64_t>(), id).second)
          return cct::BadInput(path + ": graph node " + child.dump() + " has two parents");
      }
  }
  // Depth-first from the roots so parents precede children.
  std::map<int64_t, int64_t> index;  // file id -> position in nodes
  std::vector<std::pair<int64_t, int64_t>> stack;  // (file id, parent position)
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (!parent_of.count(*it)) stack.push_back({*it, -1});
  while (!stack.empty()) {
    const auto [id, parent] = stack.back();
    stack.pop_back();
    if (index.count(id)) return cct::BadInput(path + ": the graph has a cycle at node " + std::to_string(id));
    const json& n = *by_id[id];
    HNode h;
    h.parent = parent;
    h.graph_id = id;
    if (auto d = n.find("data"); d != n.end()) ReadFrameAttrs(*d, h);
    nodes.push_back(std::move(h));
    index[id] = static_cast<int64_t>(nodes.size() - 1);
    if (auto c = n.find("children"); c != n.end() && c->is_array())
      for (auto it = c->rbegin(); it != c->rend(); ++it) stack.push_back({it->get<int64_t>(), index[id]});
  }
  if (index.size() != order.size()) return cct::BadInput(path + ": the graph has a cycle");

  // Dataframe rows: metrics per node and location.
  std::vector<std::string> indices = {"node"};
  if (auto it = doc.find("dataframe_indices"); it != doc.end() && it->is_array())
    indices = it->get<std::vector<std::string>>();
  const json& df = doc["dataframe"];
  if (!df.is_array()) return cct::BadInput(path + ": \"dataframe\" is not a list");
  std::vector<std::string> metric_keys;
  for (const char* k : {"exclusive_metrics", "inclusive_metrics"})
    if (auto it = doc.find(k); it != doc.end() && it->is_array())
      for (const json& m : *it)
        if (m.is_string()) metric_keys.push_back(m.get<std::string>());
  size_t row_no = 0;
  for (const json& row : df) {
    ++row_no;
    if (!row.is_object() || !row.contains("node") || !row["node"].is_number_integer())
      return cct::BadInput(path + ": dataframe row " + std::to_string(row_no) + " has no node id");
    auto at = index.find(row["node"].get<int64_t>());
    if (at == index.end())
      return cct::BadInput(path + ": dataframe row " + std::to_string(row_no) + " names unknown node " +
                           row["node"].dump());
    std::string location;
    for (const std::string& idx : indices) {
      if (idx == "node") continue;
      const json v = row.value(idx, json());
      // Numeric indices read "rank 0 thread 1"; a string index (a thread
      // name, as our hatchet-json export writes) is the name itself.
      location += (location.empty() ? "" : " ") + (v.is_string() ? v.get<std::string>() : idx + " " + v.dump());
    }
    HNode& h = nodes[at->second];
    if (h.dataframe_name.empty())
      if (auto n = row.find("name"); n != row.end() && n->is_string()) h.dataframe_name = n->get<std::string>();
    std::map<std::string, double>& vals = h.values[location];
    if (metric_keys.empty()) {
      std::vector<std::string> skip = indices;
      skip.push_back("nid");
      skip.push_back("line");
      ReadMetrics(row, vals, &skip);
    } else {
      for (const std::string& k : metric_keys)
        if (auto v = row.find(k); v != row.end() && v->is_number()) vals[k] += v->get<double>();
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) CCT_RETURN_IF_ERROR(ResolveFrame(nodes, i, false, path));
  return Status::Ok();
}

Result<ImportResult> ImportHatchetDocument(const std::string& path, const ImportOptions& options);

}  // namespace

Result<ImportResult> ImportHatchet(const std::string& path, const ImportOptions& options) {
  // nlohmann's typed accessors throw on unexpected types; the file is what
  // is malformed, so that is bad input, and nothing escapes this module.
  try {
    return ImportHatchetDocument(path, options);
  } catch (const json::exception& e) {
    return cct::BadInput(path + ": unexpected JSON structure (" + cct::ElideMiddle(e.what(), 200, true) + ")");
  }
}

namespace {

Result<ImportResult> ImportHatchetDocument(const std::string& path, const ImportOptions& options) {
  CCT_ASSIGN_OR_RETURN(auto buf, InputFileBuf::Open(path, PieceLimit{PieceKind::kJsonTokens, kMaxLineBytes}));
  std::istream in(buf.get());
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    CCT_RETURN_IF_ERROR(buf->status());  // a read error or an overlong token ended the stream
    if (const auto* syntax = dynamic_cast<const json::parse_error*>(&e)) return JsonSyntaxError(path, syntax->byte, e.what());
    return cct::BadInput(path + ": " + cct::ElideMiddle(e.what(), 200, true));  // a number out of range
  }
  CCT_RETURN_IF_ERROR(buf->status());
  buf.reset();  // the progress line ends with the reading
  std::vector<HNode> nodes;
  if (doc.is_array()) {
    CCT_RETURN_IF_ERROR(ParseLiteral(doc, path, nodes));
  } else if (doc.is_object() && doc.contains("graph") && doc.contains("dataframe")) {
    CCT_RETURN_IF_ERROR(ParseGraphFrame(doc, path, nodes));
  } else if (doc.is_object() && doc.contains("frame")) {
    CCT_RETURN_IF_ERROR(ParseLiteral(json::array({doc}), path, nodes));
  } else {
    return cct::BadInput(path + ": not a Hatchet literal or graph+dataframe JSON document");
  }
  if (nodes.empty()) return cct::BadInput(path + ": no nodes");

  ImportResult result;
  result.records = nodes.size();
  cct::Tree& tree = result.tree;

  // Metrics: base names, whether each has exclusive and/or inclusive values.
  std::map<std::string, std::pair<bool, bool>> seen;  // base -> (exclusive, inclusive)
  std::vector<std::string> locations;
  for (const HNode& h : nodes)
    for (const auto& [loc, vals] : h.values) {
      if (std::find(locations.begin(), locations.end(), loc) == locations.end()) locations.push_back(loc);
      for (const auto& [key, v] : vals) (IsInclusive(key) ? seen[BaseMetric(key)].second : seen[BaseMetric(key)].first) = true;
    }
  if (locations.empty()) locations.push_back("");
  std::sort(locations.begin(), locations.end());
  std::vector<std::string> bases;
  std::map<std::string, std::pair<cct::MetricId, double>> metric;  // base -> (id, scale)
  for (const auto& [base, kinds] : seen) {
    cct::Unit unit = cct::Unit::kNone;
    double scale = 1;
    const cct::MetricDesc* known = cct::FindStandardMetric(base);
    std::optional<std::string> u = base == options.metric ? options.unit : std::nullopt;
    if (!u && known && known->unit == cct::Unit::kNanoseconds) u = "s";
    if (u || known) CCT_RETURN_IF_ERROR(ResolveImportUnit(base, u, unit, scale));
    CCT_ASSIGN_OR_RETURN(cct::MetricId id, RegisterImportedMetric(tree, base, unit, "imported from Hatchet"));
    metric[base] = {id, scale};
    bases.push_back(base);
  }

  // Nodes: one copy of the graph per location (rank/thread), under a thread
  // node when there is more than the plain location.
  const bool threaded = !(locations.size() == 1 && locations[0].empty());
  // (location index, hatchet node) -> our node, and stated inclusive values.
  std::vector<std::vector<cct::NodeId>> ours(locations.size(), std::vector<cct::NodeId>(nodes.size()));
  std::vector<std::string> frames_text(nodes.size());
  for (size_t li = 0; li < locations.size(); ++li) {
    const std::string& loc = locations[li];
    cct::NodeId base = cct::kRootNode;
    if (threaded) base = tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kThread, loc));
    for (size_t i = 0; i < nodes.size(); ++i) {
      const HNode& h = nodes[i];
      const cct::NodeId parent = h.parent < 0 ? base : ours[li][static_cast<size_t>(h.parent)];
      ours[li][i] = tree.InternChild(parent, tree.InternFrame(h.kind, h.name, h.module, h.file, h.line));
    }
  }
  // Exclusive values: stated, or derived from inclusive ones.
  for (size_t li = 0; li < locations.size(); ++li) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto vit = nodes[i].values.find(locations[li]);
      if (vit == nodes[i].values.end()) continue;
      for (const auto& [key, v] : vit->second) {
        const std::string base = BaseMetric(key);
        const auto [id, scale] = metric[base];
        if (!IsInclusive(key)) {
          tree.AddValue(ours[li][i], id, v * scale);
        } else if (!seen[base].first) {
          // Inclusive only: exclusive = inclusive - children's inclusive.
          tree.AddValue(ours[li][i], id, v * scale);
          if (nodes[i].parent >= 0) tree.AddValue(ours[li][static_cast<size_t>(nodes[i].parent)], id, -v * scale);
        }
      }
    }
  }
  // Check stated inclusive values against the subtree sums. Siblings with
  // the same frame became one node above: their stated values add up first.
  cct::NodeValues values(tree);
  for (const auto& [base, kinds] : seen) {
    if (!kinds.first || !kinds.second) continue;
    const auto [id, scale] = metric[base];
    const std::vector<double>& inc = values.Inclusive(id);
    const double total = std::fabs(values.Total(id));
    std::vector<std::string> keys;  // the base's inclusive keys (one, usually)
    for (const HNode& h : nodes)
      for (const auto& [loc, vals] : h.values)
        for (const auto& [key, v] : vals)
          if (IsInclusive(key) && BaseMetric(key) == base && std::find(keys.begin(), keys.end(), key) == keys.end())
            keys.push_back(key);
    for (const std::string& key : keys) {
      std::vector<double> stated_sum(tree.size(), 0.0);
      std::vector<uint8_t> stated(tree.size(), 0);
      std::vector<cct::NodeId> stated_at;  // our nodes with a stated value, in file order
      for (size_t li = 0; li < locations.size(); ++li)
        for (size_t i = 0; i < nodes.size(); ++i) {
          auto vit = nodes[i].values.find(locations[li]);
          if (vit == nodes[i].values.end()) continue;
          auto kv = vit->second.find(key);
          if (kv == vit->second.end()) continue;
          const cct::NodeId n = ours[li][i];
          if (!stated[n]) stated[n] = 1, stated_at.push_back(n);
          stated_sum[n] += kv->second;
        }
      for (const cct::NodeId n : stated_at) {
        const double v = stated_sum[n];
        const double want = v * scale, summed = inc[n];
        if (std::fabs(want - summed) <= 1e-6 * std::max(std::fabs(want), std::fabs(summed)) + 1e-12 * total)
          continue;
        std::string where;
        for (const std::string& p : cct::PathNames(tree, n)) where += (where.empty() ? "" : "/") + p;
        const std::string msg = path + ": node '" + where + "': '" + key + "' is " + std::to_string(v) +
                                " but the exclusive '" + base + "' values below it sum to " +
                                std::to_string(summed / scale);
        if (!options.skip_bad_lines) return cct::BadInput(msg);
        if (result.skipped++ == 0) result.first_skip = msg;
      }
    }
  }
  return result;
}

}  // namespace
cct::Result<ImportReport> ImportHatchetRun(const ImportRequest& request) {
  return ImportNewRun(request, "hatchet", &ImportHatchet);
}

}  // namespace importers
