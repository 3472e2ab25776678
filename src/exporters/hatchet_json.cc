// Hatchet's GraphFrame.to_json layout: {"graph": [{nid: {"data": frame,
// "children": [nid, ...]}}, ...one object per root], "dataframe_indices",
// "dataframe": [row, ...], "exclusive_metrics", "inclusive_metrics"}, which
// GraphFrame.from_json reads back.
//
// What a Hatchet user does next decides the default: from_json sets the
// dataframe's index to dataframe_indices, and tree() (ConsoleRenderer) then
// looks up (node), (node, rank), (node, thread) or (node, rank, thread) with
// rank 0 and thread 0 for every graph node, reads the "name" column and, with
// no metric_column, the column "time" (GraphFrame's default_metric, which
// from_json cannot set). So by default a run whose top level is threads is
// written with the threads summed (the graph is the union of their trees, as
// `--merge-threads` gives), indexed by node only, and the first time metric
// is also written as the columns "time" and "time (inc)" when no metric has
// that name (not listed among the metrics, so nothing counts it twice).
//
// per_thread keeps the threads as Hatchet holds multi-process data: each
// (node, thread) pair is a row indexed by "rank" and/or "thread" (thread
// names "rank R", "rank R thread T" and "thread T" give numbers; other names
// are used as the thread value as they are), and every pair has a row, zeros
// where a thread lacks the node, as Hatchet's own readers write them, so that
// tree(rank=R, thread=T) finds every node.
//
// Streams: graph nodes and rows are written while walking the trees.
#include <algorithm>
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

Status WriteHatchetGraphFrame(const cct::Tree& src, const std::vector<std::string>& names, bool per_thread,
                              std::ostream& out, output::Progress* progress) {
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
  per_thread &= threaded;

  // The graph: the tree itself, or the union of the threads' trees (with
  // their values summed, which the default rows use).
  cct::Tree merged;
  std::vector<NodeId> to_graph;  // src node -> graph tree node
  if (threaded) merged = cct::Rebuild(
      src, [](cct::Tree& dst, cct::FrameId f) { return dst.frames().kind(f) == FrameKind::kThread ? cct::kFoldFrame : f; },
      false, &to_graph);
  const cct::Tree& graph = threaded ? merged : src;
  const cct::Children children = threaded ? cct::BuildChildren(graph) : src_children;
  // Hatchet node ids: preorder positions in the graph tree.
  const std::vector<NodeId> order = cct::Preorder(graph, children);  // order[0] is the root
  std::vector<uint32_t> nid(graph.size(), 0);
  for (size_t i = 1; i < order.size(); ++i) nid[order[i]] = static_cast<uint32_t>(i - 1);

  // Thread index columns (per_thread).
  std::vector<std::string> index_names{"node"};
  std::vector<ThreadIndex> thread_index;  // per top-level thread, in child order
  std::vector<std::string> thread_names;
  bool numeric = true, any_rank = false, any_thread = false;
  if (per_thread) {
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
  const size_t threads = thread_names.size();
  if (progress) progress->SetTotal(graph.size() + (per_thread ? graph.size() * threads : graph.size()));

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

  // Values: per thread from the run, or summed from the graph tree.
  const cct::Tree& valued = per_thread ? src : graph;
  cct::NodeValues values(valued);
  std::vector<const std::vector<double>*> inc, exc;
  for (MetricId m : ids) {
    inc.push_back(&values.Inclusive(m));
    exc.push_back(&values.Exclusive(m));
  }
  // tree()'s default metric "time": the first time metric, unless one is so named.
  std::optional<size_t> time_alias;
  for (size_t i = 0; i < ids.size(); ++i) {
    const cct::MetricDesc& d = src.metrics().Get(ids[i]);
    if (d.name == "time") {
      time_alias.reset();
      break;
    }
    if (!time_alias && d.unit == cct::Unit::kNanoseconds && d.kind == cct::MetricKind::kAdditive) time_alias = i;
  }
  // One row's metric columns: the values of `nodes` (of `valued`). No node:
  // a thread without the graph node, all zero. Several: a thread node nested
  // in a thread folded into its parent, so their exclusive values add up and
  // the first (the parent: ids ascend down the tree) holds them inclusively.
  auto write_metrics = [&](const NodeId* nodes, size_t count) {
    auto value = [&](size_t i, bool inclusive) {
      const cct::MetricDesc& d = src.metrics().Get(ids[i]);
      double x = 0;
      if (inclusive && count > 0) x = (*inc[i])[nodes[0]];
      for (size_t k = 0; !inclusive && k < count; ++k) x += (*exc[i])[nodes[k]];
      if (d.kind == cct::MetricKind::kDerived && x == 0) w.Null();
      else w.Number(output::ExportValue(x, d.unit));
    };
    if (time_alias) {
      w.Key("time");
      value(*time_alias, false);
      w.Key("time (inc)");
      value(*time_alias, true);
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      const cct::MetricDesc& d = src.metrics().Get(ids[i]);
      w.Key(d.name);
      value(i, false);
      w.Key(d.name + " (inc)");
      value(i, true);
    }
  };

  w.Key("dataframe").BeginArray();
  if (!per_thread) {
    for (size_t i = 1; i < order.size(); ++i) {
      const NodeId n = order[i];
      w.BeginObject().FieldInt("node", nid[n]).Field("name", graph.name(n));
      write_metrics(&n, 1);
      w.EndObject();
      if (progress) progress->Update(++done);
    }
  } else {
    // Every (graph node, thread) pair in node order: the run's nodes sorted
    // by (graph node id, thread), the gaps written as zeros.
    std::vector<std::pair<uint64_t, NodeId>> keyed;  // (nid * threads + thread, src node)
    keyed.reserve(src.size());
    std::vector<uint32_t> thread_of(src.size(), 0);
    uint32_t next = 0;
    for (NodeId n = 1; n < src.size(); ++n) {
      if (src.parent(n) == cct::kRootNode) {
        thread_of[n] = next++;
        continue;  // the thread node itself
      }
      thread_of[n] = thread_of[src.parent(n)];
      keyed.emplace_back(uint64_t{nid[to_graph[n]]} * threads + thread_of[n], n);
    }
    std::sort(keyed.begin(), keyed.end());
    size_t k = 0;
    std::vector<NodeId> group;
    for (size_t i = 1; i < order.size(); ++i) {
      const NodeId g = order[i];
      for (size_t t = 0; t < threads; ++t) {
        const uint64_t key = uint64_t{nid[g]} * threads + t;
        group.clear();
        for (; k < keyed.size() && keyed[k].first == key; ++k) group.push_back(keyed[k].second);
        w.BeginObject().FieldInt("node", nid[g]);
        const ThreadIndex& ti = thread_index[t];
        if (numeric) {
          if (ti.rank) w.FieldInt("rank", *ti.rank);
          if (ti.thread) w.FieldInt("thread", *ti.thread);
        } else {
          w.Field("thread", thread_names[t]);
        }
        w.Field("name", graph.name(g));
        write_metrics(group.data(), group.size());
        w.EndObject();
        if (progress) progress->Update(++done);
      }
    }
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
  return WriteHatchetGraphFrame(profile.tree, options.metrics, options.per_thread, out, options.progress);
}

}  // namespace exporters
