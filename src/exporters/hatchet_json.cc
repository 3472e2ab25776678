// Hatchet's GraphFrame.to_json layout: {"graph": [{nid: {"data": frame,
// "children": [nid, ...]}}, ...one object per root], "dataframe_indices",
// "dataframe": [row, ...], "exclusive_metrics", "inclusive_metrics"}, which
// GraphFrame.from_json reads back.
//
// A run whose top level is threads is written the way Hatchet holds
// multi-process data: the graph is the union of the threads' trees (one node
// per path), and each (node, thread) pair is a dataframe row indexed by
// "rank" and/or "thread". Thread names "rank R", "rank R thread T" and
// "thread T" give numeric indices; other names are used as the thread value
// as they are. Rows exist only where a thread has the node (Hatchet's own
// readers write every pair; ours stays proportional to the run).
//
// Streams: graph nodes and rows are written while walking the trees.
#include <charconv>
#include <optional>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "exporters/exporter.h"
#include "output/format.h"
#include "output/json_writer.h"
#include "output/progress.h"

namespace exporters {

using cct::FrameKind;
using cct::MetricId;
using cct::NodeId;
using cct::Status;

namespace {

std::string_view TypeName(FrameKind k) {
  switch (k) {
    case FrameKind::kFunction: return "function";
    case FrameKind::kLine: return "statement";
    case FrameKind::kLoop: return "loop";
    default: return cct::FrameKindName(k);
  }
}

std::optional<long long> ParseInt(std::string_view s) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// "rank 3" -> (3, -), "rank 3 thread 1" -> (3, 1), "thread 2" -> (-, 2).
struct ThreadIndex {
  std::optional<long long> rank, thread;
};
std::optional<ThreadIndex> ParseThreadName(std::string_view name) {
  ThreadIndex t;
  if (name.substr(0, 5) == "rank ") {
    name.remove_prefix(5);
    const size_t sp = name.find(' ');
    t.rank = ParseInt(name.substr(0, sp));
    if (!t.rank) return std::nullopt;
    if (sp == std::string_view::npos) return t;
    name.remove_prefix(sp + 1);
  }
  if (name.substr(0, 7) == "thread ") {
    t.thread = ParseInt(name.substr(7));
    if (!t.thread) return std::nullopt;
    return t;
  }
  return t.rank ? std::optional<ThreadIndex>(t) : std::nullopt;
}

void WriteFrame(output::JsonWriter& w, const cct::Tree& tree, NodeId n) {
  const cct::Frame f = tree.frame(n);
  w.BeginObject().Field("name", tree.str(f.name)).Field("type", TypeName(f.kind));
  if (f.module) w.Field("module", tree.str(f.module));
  if (f.file) w.Field("file", tree.str(f.file));
  if (f.line) w.FieldInt("line", f.line);
  w.EndObject();
}

}  // namespace

Status WriteHatchetGraphFrame(const cct::Tree& src, const std::vector<std::string>& names, std::ostream& out,
                              output::Progress* progress) {
  std::vector<MetricId> ids;
  if (names.empty()) {
    for (MetricId m = 0; m < src.metrics().size(); ++m)
      if (src.metrics().Get(m).kind == cct::MetricKind::kAdditive) ids.push_back(m);
    if (ids.empty()) return cct::NotFound("the run has no metrics to export");
  } else {
    CCT_ASSIGN_OR_RETURN(ids, query::ResolveMetrics(src, names));
  }

  const cct::Children src_children = cct::BuildChildren(src);
  bool threaded = src_children.count(cct::kRootNode) > 0;
  for (const NodeId* c = src_children.begin(cct::kRootNode); c != src_children.end(cct::kRootNode); ++c)
    threaded &= src.kind(*c) == FrameKind::kThread;

  // The graph: the tree itself, or the union of the threads' trees.
  cct::Tree merged;
  std::vector<NodeId> to_graph;  // src node -> graph tree node
  if (threaded) merged = cct::Rebuild(
      src, [](cct::Tree& dst, cct::FrameId f) { return dst.frames().kind(f) == FrameKind::kThread ? cct::kFoldFrame : f; },
      false, &to_graph);
  const cct::Tree& graph = threaded ? merged : src;
  const cct::Children children = threaded ? cct::BuildChildren(graph) : src_children;
  // Hatchet node ids: preorder positions in the graph tree.
  std::vector<uint32_t> nid(graph.size(), 0);
  {
    const std::vector<NodeId> order = cct::Preorder(graph, children);
    for (size_t i = 1; i < order.size(); ++i) nid[order[i]] = static_cast<uint32_t>(i - 1);
  }

  // Thread index columns.
  std::vector<std::string> index_names{"node"};
  std::vector<ThreadIndex> thread_index;  // per top-level thread, in child order
  std::vector<std::string> thread_names;
  bool numeric = true, any_rank = false, any_thread = false;
  if (threaded) {
    for (const NodeId* c = src_children.begin(cct::kRootNode); c != src_children.end(cct::kRootNode); ++c) {
      thread_names.emplace_back(src.name(*c));
      auto t = ParseThreadName(src.name(*c));
      numeric &= t.has_value();
      thread_index.push_back(t.value_or(ThreadIndex{}));
      if (t) any_rank |= t->rank.has_value(), any_thread |= t->thread.has_value();
    }
    if (numeric) {
      // Every name must carry the same index kinds.
      for (const ThreadIndex& t : thread_index)
        numeric &= t.rank.has_value() == any_rank && t.thread.has_value() == any_thread;
    }
    if (numeric && any_rank) index_names.push_back("rank");
    if (!numeric || any_thread) index_names.push_back("thread");
  }
  if (progress) progress->SetTotal(graph.size() + src.size());

  output::JsonWriter w(out);
  w.BeginObject().Key("graph").BeginArray();
  uint64_t done = 0;
  for (const NodeId* r = children.begin(cct::kRootNode); r != children.end(cct::kRootNode); ++r) {
    w.BeginObject();
    std::vector<NodeId> stack{*r};
    while (!stack.empty()) {
      const NodeId n = stack.back();
      stack.pop_back();
      w.Key(std::to_string(nid[n])).BeginObject().Key("data");
      WriteFrame(w, graph, n);
      w.Key("children").BeginArray();
      for (const NodeId* c = children.begin(n); c != children.end(n); ++c) w.Int(nid[*c]);
      w.EndArray().EndObject();
      for (const NodeId* c = children.end(n); c != children.begin(n);) stack.push_back(*--c);
      if (progress) progress->Update(++done);
    }
    w.EndObject();
  }
  w.EndArray();

  w.Key("dataframe_indices").BeginArray();
  for (const std::string& i : index_names) w.String(i);
  w.EndArray();

  cct::NodeValues values(src);
  std::vector<const std::vector<double>*> inc, exc;
  for (MetricId m : ids) {
    inc.push_back(&values.Inclusive(m));
    exc.push_back(&values.Exclusive(m));
  }
  // Which top-level thread each src node is under (-1: none).
  std::vector<int32_t> thread_of(threaded ? src.size() : 0, -1);
  if (threaded) {
    int32_t next = 0;
    for (NodeId n = 1; n < src.size(); ++n)
      thread_of[n] = src.parent(n) == cct::kRootNode ? next++ : thread_of[src.parent(n)];
  }
  w.Key("dataframe").BeginArray();
  for (NodeId n = 1; n < src.size(); ++n) {
    if (progress) progress->Update(++done);
    if (threaded && src.parent(n) == cct::kRootNode) continue;  // the thread node itself
    w.BeginObject().FieldInt("node", nid[threaded ? to_graph[n] : n]);
    if (threaded) {
      const ThreadIndex& t = thread_index[static_cast<size_t>(thread_of[n])];
      if (numeric) {
        if (t.rank) w.FieldInt("rank", *t.rank);
        if (t.thread) w.FieldInt("thread", *t.thread);
      } else {
        w.Field("thread", thread_names[static_cast<size_t>(thread_of[n])]);
      }
    }
    w.Field("name", src.name(n));
    for (size_t i = 0; i < ids.size(); ++i) {
      const cct::MetricDesc& d = src.metrics().Get(ids[i]);
      const bool derived = d.kind == cct::MetricKind::kDerived;
      w.Key(d.name);
      if (derived && (*exc[i])[n] == 0) w.Null();
      else w.Number(output::ExportValue((*exc[i])[n], d.unit));
      w.Key(d.name + " (inc)");
      if (derived && (*inc[i])[n] == 0) w.Null();
      else w.Number(output::ExportValue((*inc[i])[n], d.unit));
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("exclusive_metrics").BeginArray();
  for (MetricId m : ids) w.String(src.metrics().Get(m).name);
  w.EndArray().Key("inclusive_metrics").BeginArray();
  for (MetricId m : ids) w.String(src.metrics().Get(m).name + " (inc)");
  w.EndArray().EndObject();
  out << '\n';
  return Status::Ok();
}

Status ExportHatchetJson(const query::Profile& profile, const ExportOptions& options, std::ostream& out) {
  return WriteHatchetGraphFrame(profile.tree, options.metrics, out, options.progress);
}

}  // namespace exporters
