// Trace: when things happened in a run (`cct-record --trace`), beside its
// tree: every sample with its thread and time, every NVTX range instance,
// every GPU activity, each tied to the tree node its value went to.
//
// The tree holds the totals; a trace holds the events in time order, so
// readers (the Perfetto export, the timeline report, time-window selectors)
// can place them on a time line and still name them by call path. Times are
// ns since the Unix epoch, like Iteration::start_ns. Node ids are those of
// the tree passed alongside: the tree a writer passes to
// Database::CreateRun/UpdateRun (mapped to stored ids as the store renumbers
// the tree), or the tree Database::ReadTree returns. Stored layout: section
// kind 8, docs/format.md. Plain value types; thread-compatible.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "cct/frame.h"
#include "cct/tree.h"

namespace store {

// One thread's samples in time order (time_ns non-decreasing; the store
// sorts a stream that is not). `thread` is the thread's node (FrameKind
// kThread); node[i] is where sample i's value went. time_ns and node are
// parallel.
struct TraceSamples {
  cct::NodeId thread = 0;
  std::vector<int64_t> time_ns;
  std::vector<cct::NodeId> node;
};

// An NVTX range instance: `node` is its range node, `thread` the thread's
// node. A range still open when the trace was written (a checkpoint, or a
// crash after one) has end_ns == kTraceOpenEnd: readers end it where the
// trace ends (TraceSpan), never at kTraceOpenEnd itself.
inline constexpr int64_t kTraceOpenEnd = std::numeric_limits<int64_t>::max();
struct TraceRange {
  cct::NodeId thread = 0;
  cct::NodeId node = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // >= start_ns; kTraceOpenEnd while open
  bool open() const { return end_ns == kTraceOpenEnd; }
};

// A GPU activity as CUPTI reported it. `node` is the placeholder node the
// activity's values went to (<gpu kernel>, <gpu memcpy HtoD>, ...).
struct TraceGpuActivity {
  uint32_t device = 0;
  uint32_t stream = 0;
  cct::GpuOpKind kind = cct::GpuOpKind::kKernel;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // >= start_ns
  uint64_t bytes = 0;  // copies and memsets; 0 otherwise
  cct::NodeId node = 0;
};

// A run's trace. Stored and read back with each thread once (streams in
// increasing thread node order), ranges and GPU activities in start order
// (stable: equal starts keep their order).
struct RunTrace {
  std::vector<TraceSamples> samples;
  std::vector<TraceRange> ranges;
  std::vector<TraceGpuActivity> gpu;
  uint64_t limit_bytes = 0;  // the --trace-limit the recording ran with (0: none)
  uint64_t dropped = 0;      // events left out because the limit was reached (0: the trace is complete)
};

// Events of every kind in the trace.
inline uint64_t TraceEventCount(const RunTrace& t) {
  uint64_t n = t.ranges.size() + t.gpu.size();
  for (const TraceSamples& s : t.samples) n += s.time_ns.size();
  return n;
}

// The time the trace covers: the earliest start and the latest time of any
// event (open ranges count by their start). first_ns > last_ns when empty.
struct TraceSpan {
  int64_t first_ns = std::numeric_limits<int64_t>::max();
  int64_t last_ns = std::numeric_limits<int64_t>::min();
  bool empty() const { return first_ns > last_ns; }
};
inline TraceSpan SpanOf(const RunTrace& t) {
  TraceSpan s;
  auto see = [&s](int64_t a, int64_t b) {
    s.first_ns = std::min(s.first_ns, a);
    s.last_ns = std::max(s.last_ns, b);
  };
  for (const TraceSamples& x : t.samples)
    if (!x.time_ns.empty()) see(x.time_ns.front(), x.time_ns.back());
  for (const TraceRange& r : t.ranges) see(r.start_ns, r.open() ? r.start_ns : r.end_ns);
  for (const TraceGpuActivity& g : t.gpu) see(g.start_ns, g.end_ns);
  return s;
}

}  // namespace store
