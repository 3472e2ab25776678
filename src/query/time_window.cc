#include "query/time_window.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace query {

namespace {

enum class WindowClass { kSamples, kRanges, kGpu, kDerived, kDropped };

WindowClass ClassOf(const cct::MetricDesc& m) {
  if (m.kind == cct::MetricKind::kDerived) return WindowClass::kDerived;
  if (m.name == "cputime" || m.name == "realtime" || m.name == "samples") return WindowClass::kSamples;
  if (m.name == "nvtx:time" || m.name == "nvtx:count") return WindowClass::kRanges;
  for (std::string_view p : {"gker", "gxcopy", "gmset", "gmem", "gsync"})
    if (m.name.starts_with(p)) return WindowClass::kGpu;
  return WindowClass::kDropped;
}

int64_t Overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  return std::max<int64_t>(0, std::min(a1, b1) - std::max(a0, b0));
}

// The per-node shares of a column: each value times factor[node] (nodes
// without a factor lose their value: nothing of theirs is in the trace).
cct::SparseColumn Scaled(const cct::SparseColumn& column, const std::vector<double>& factor) {
  std::vector<cct::NodeId> nodes;
  std::vector<double> values;
  column.ForEach([&](cct::NodeId n, double v) {
    const double f = n < factor.size() ? factor[n] : 0.0;
    if (f == 0 || v == 0) return;
    nodes.push_back(n);
    values.push_back(v * f);
  });
  // ForEach visits a sparse column in insertion order: FromSparse wants each node once, which holds.
  return cct::SparseColumn::FromSparse(std::move(nodes), std::move(values));
}

std::string Seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fs", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

int64_t RangeEnd(const store::TraceRange& r, const store::TraceSpan& span) {
  return r.open() ? std::max(r.start_ns, span.last_ns) : r.end_ns;
}

std::vector<store::TraceRange> RangeInstances(const cct::Tree& tree, const store::RunTrace& trace,
                                              std::string_view name) {
  std::vector<store::TraceRange> out;
  for (const store::TraceRange& r : trace.ranges)
    if (r.node < tree.size() && tree.name(r.node) == name) out.push_back(r);
  auto main_first = [&](cct::NodeId thread) { return thread < tree.size() && tree.name(thread) == "main thread" ? 0 : 1; };
  std::stable_sort(out.begin(), out.end(), [&](const store::TraceRange& a, const store::TraceRange& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    const int ma = main_first(a.thread), mb = main_first(b.thread);
    if (ma != mb) return ma < mb;
    return a.thread < b.thread;
  });
  return out;
}

cct::Result<TimeWindow> ResolveWindow(const cct::Tree& tree, const store::RunTrace& trace,
                                      const store::TimeWindowSpec& spec) {
  const store::TraceSpan span = SpanOf(trace);
  if (spec.is_range()) {
    const std::vector<store::TraceRange> inst = RangeInstances(tree, trace, spec.range);
    if (spec.instance > inst.size())
      return cct::InvalidArgument("the trace has " + std::to_string(inst.size()) + " instance" +
                                  (inst.size() == 1 ? "" : "s") + " of NVTX range '" + spec.range + "', not #" +
                                  std::to_string(spec.instance));
    const store::TraceRange& r = inst[spec.instance - 1];
    return TimeWindow{r.start_ns, RangeEnd(r, span)};
  }
  if (span.empty()) return TimeWindow{0, 0};
  TimeWindow w{span.first_ns, span.last_ns + 1};
  // Relative times stay far below int64's range (ParseDuration caps them).
  if (spec.from_ns) w.from_ns = span.first_ns + *spec.from_ns;
  if (spec.to_ns) w.to_ns = span.first_ns + *spec.to_ns;
  return w;
}

std::string DescribeWindow(const TimeWindow& window, const store::RunTrace& trace) {
  const store::TraceSpan span = SpanOf(trace);
  const int64_t base = span.empty() ? window.from_ns : span.first_ns;
  return "t=" + Seconds(window.from_ns - base) + ".." + Seconds(window.to_ns - base);
}

cct::Result<WindowResult> ApplyTimeWindow(cct::Tree& tree, const store::RunTrace& trace, const TimeWindow& w) {
  const size_t n = tree.size();
  const auto in = [&](int64_t t) { return t >= w.from_ns && t < w.to_ns; };

  // Samples: per node, in the window / in the run.
  std::vector<double> sample_factor(n, 0.0);
  {
    std::vector<uint32_t> all(n, 0), inside(n, 0);
    for (const store::TraceSamples& s : trace.samples) {
      if (s.node.size() != s.time_ns.size()) return cct::Corrupt("a trace's sample columns differ in length");
      for (size_t i = 0; i < s.node.size(); ++i) {
        const cct::NodeId node = s.node[i];
        if (node >= n) return cct::Corrupt("the trace has a sample on node " + std::to_string(node) + " beyond the tree");
        ++all[node];
        if (in(s.time_ns[i])) ++inside[node];
      }
    }
    for (size_t i = 0; i < n; ++i)
      if (all[i]) sample_factor[i] = static_cast<double>(inside[i]) / all[i];
  }

  // Ranges: clipped inclusive time and count per range node, then exclusive
  // time: less what the instances nested in it (the range nodes whose nearest
  // range ancestor it is) spent in the window.
  std::vector<double> range_time(n, 0.0), range_count(n, 0.0);
  bool any_range = false;
  {
    const store::TraceSpan span = SpanOf(trace);
    for (const store::TraceRange& r : trace.ranges) {
      if (r.node >= n) return cct::Corrupt("the trace has a range on node " + std::to_string(r.node) + " beyond the tree");
      const int64_t end = RangeEnd(r, span);
      const bool overlaps = end > r.start_ns ? (r.start_ns < w.to_ns && end > w.from_ns) : in(r.start_ns);
      if (!overlaps) continue;
      range_time[r.node] += static_cast<double>(Overlap(r.start_ns, end, w.from_ns, w.to_ns));
      range_count[r.node] += 1;
      any_range = true;
    }
    if (any_range) {
      std::vector<double> inclusive = range_time;
      for (cct::NodeId node = 1; node < n; ++node) {
        if (inclusive[node] == 0 || tree.kind(node) != cct::FrameKind::kNvtx) continue;
        for (cct::NodeId a = tree.parent(node); a != cct::kRootNode; a = tree.parent(a))
          if (tree.kind(a) == cct::FrameKind::kNvtx) {
            range_time[a] -= inclusive[node];
            break;
          }
      }
      for (double& t : range_time) t = std::max(0.0, t);
    }
  }

  // GPU activities starting in the window: per node, the shares by clipped
  // time, by bytes and by number.
  std::vector<double> gpu_time(n, 0.0), gpu_bytes(n, 0.0), gpu_count(n, 0.0);
  {
    std::vector<double> all_time(n, 0.0), all_bytes(n, 0.0), all_count(n, 0.0);
    for (const store::TraceGpuActivity& g : trace.gpu) {
      if (g.node >= n) return cct::Corrupt("the trace has a GPU activity on node " + std::to_string(g.node) + " beyond the tree");
      const double dur = static_cast<double>(g.end_ns - g.start_ns);
      all_time[g.node] += dur;
      all_bytes[g.node] += static_cast<double>(g.bytes);
      all_count[g.node] += 1;
      if (!in(g.start_ns)) continue;
      gpu_time[g.node] += static_cast<double>(std::min(g.end_ns, w.to_ns) - g.start_ns);
      gpu_bytes[g.node] += static_cast<double>(g.bytes);
      gpu_count[g.node] += 1;
    }
    for (size_t i = 0; i < n; ++i) {
      const double count_share = all_count[i] ? gpu_count[i] / all_count[i] : 0.0;
      gpu_count[i] = count_share;
      gpu_time[i] = all_time[i] ? gpu_time[i] / all_time[i] : count_share;
      gpu_bytes[i] = all_bytes[i] ? gpu_bytes[i] / all_bytes[i] : count_share;
    }
  }

  WindowResult result;
  cct::MetricRegistry& reg = tree.metrics();
  for (cct::MetricId m = 0; m < reg.size(); ++m) {
    const cct::MetricDesc& desc = reg.Get(m);
    switch (ClassOf(desc)) {
      case WindowClass::kDerived:
        break;
      case WindowClass::kSamples:
        tree.SetColumn(m, Scaled(tree.column(m), sample_factor));
        break;
      case WindowClass::kRanges: {
        const std::vector<double>& v = desc.name == "nvtx:time" ? range_time : range_count;
        std::vector<cct::NodeId> nodes;
        std::vector<double> values;
        for (cct::NodeId i = 0; i < n; ++i)
          if (v[i] != 0) {
            nodes.push_back(i);
            values.push_back(v[i]);
          }
        tree.SetColumn(m, cct::SparseColumn::FromSparse(std::move(nodes), std::move(values)));
        break;
      }
      case WindowClass::kGpu: {
        const std::vector<double>& f = desc.unit == cct::Unit::kNanoseconds ? gpu_time
                                       : desc.unit == cct::Unit::kBytes     ? gpu_bytes
                                                                            : gpu_count;
        tree.SetColumn(m, Scaled(tree.column(m), f));
        break;
      }
      case WindowClass::kDropped:
        if (!tree.column(m).empty()) result.dropped.push_back(desc.name);
        tree.SetColumn(m, cct::SparseColumn());
        break;
    }
  }
  return result;
}

cct::Result<store::RunIterations> IterationsFromRange(const cct::Tree& tree, const store::RunTrace& trace,
                                                      std::string_view name) {
  store::RunIterations out;
  out.range = std::string(name);
  const store::TraceSpan span = SpanOf(trace);
  for (const store::TraceRange& r : RangeInstances(tree, trace, name)) {
    cct::Tree window = tree;
    CCT_ASSIGN_OR_RETURN(WindowResult applied, ApplyTimeWindow(window, trace, {r.start_ns, RangeEnd(r, span)}));
    (void)applied;
    store::Iteration it;
    it.index = static_cast<uint32_t>(out.iterations.size());
    it.start_ns = r.start_ns;
    it.duration_ns = RangeEnd(r, span) - r.start_ns;
    const cct::MetricRegistry& reg = window.metrics();
    for (cct::MetricId m = 0; m < reg.size(); ++m) {
      if (reg.Get(m).kind != cct::MetricKind::kAdditive) continue;
      store::IterationColumn c;
      c.metric = m;
      window.column(m).ForEach([&](cct::NodeId n, double v) {
        c.nodes.push_back(n);
        c.values.push_back(v);
      });
      if (!c.nodes.empty()) it.columns.push_back(std::move(c));
    }
    out.iterations.push_back(std::move(it));
  }
  return out;
}

store::RunTrace TraceInWindow(const store::RunTrace& trace, const TimeWindow& window) {
  store::RunTrace out;
  out.limit_bytes = trace.limit_bytes;
  out.dropped = trace.dropped;
  const store::TraceSpan span = store::SpanOf(trace);
  for (const store::TraceSamples& s : trace.samples) {
    store::TraceSamples kept;
    kept.thread = s.thread;
    for (size_t i = 0; i < s.time_ns.size(); ++i)
      if (s.time_ns[i] >= window.from_ns && s.time_ns[i] < window.to_ns) {
        kept.time_ns.push_back(s.time_ns[i]);
        kept.node.push_back(s.node[i]);
      }
    if (!kept.time_ns.empty()) out.samples.push_back(std::move(kept));
  }
  for (const store::TraceRange& r : trace.ranges) {
    const int64_t end = RangeEnd(r, span);
    if (end <= window.from_ns || r.start_ns >= window.to_ns) continue;
    out.ranges.push_back({r.thread, r.node, std::max(r.start_ns, window.from_ns), std::min(end, window.to_ns)});
  }
  for (const store::TraceGpuActivity& g : trace.gpu) {
    if (g.end_ns <= window.from_ns || g.start_ns >= window.to_ns) {
      // An instant (alloc, free) at the window's start is in it.
      if (!(g.start_ns == g.end_ns && g.start_ns >= window.from_ns && g.start_ns < window.to_ns)) continue;
    }
    store::TraceGpuActivity cut = g;
    cut.start_ns = std::max(g.start_ns, window.from_ns);
    cut.end_ns = std::max(cut.start_ns, std::min(g.end_ns, window.to_ns));
    out.gpu.push_back(cut);
  }
  return out;
}

}  // namespace query
