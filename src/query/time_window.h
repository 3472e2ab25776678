// Time windows over a run's trace (store/trace.h): the values a run's tree
// would hold had it been recorded only between two times, for the selectors
// RUN@t=A..B and RUN@range=NAME#K (store/selector.h) and the timeline report.
//
// How each metric is windowed (docs/cli.md "Time windows"):
//   cputime, realtime, samples (what samples carry): a node's value times the
//     share of its trace samples that fall in the window — exact when every
//     sample carries one value, as the collector's do;
//   nvtx:time, nvtx:count: from the range instances overlapping the window,
//     their time clipped to it (exclusive time less that of the instances
//     nested in them, as the collector counts it);
//   GPU metrics (gker*, gxcopy*, gmset*, gmem*, gsync*): a node's value times
//     the share of its activities starting in the window, by clipped duration
//     for times, by bytes for byte counts, by number for the rest;
//   derived metrics: their formulas over the windowed values;
//   anything else (nvtx:marks, gins*, imported metrics): dropped — its values
//     cleared and its name listed in WindowResult::dropped.
// Pure functions; thread-compatible (each call works on its own tree).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "store/iterations.h"
#include "store/selector.h"
#include "store/trace.h"

namespace query {

// A window in the trace's own time (ns since the Unix epoch): [from_ns, to_ns).
struct TimeWindow {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
};

// The end a reader gives an open range: where the trace ends.
int64_t RangeEnd(const store::TraceRange& r, const store::TraceSpan& span);

// The window a selector's @t= or @range= names in `trace`, whose ranges are
// named by `tree`. kInvalidArgument with a one-line reason when the range has
// fewer instances than asked. Open ends extend to the trace's span (the end
// one ns past its last event, so that event is in).
cct::Result<TimeWindow> ResolveWindow(const cct::Tree& tree, const store::RunTrace& trace,
                                      const store::TimeWindowSpec& spec);

// The instances of the NVTX range named `name`, in start order (equal
// starts: the main thread's first, then by thread node).
std::vector<store::TraceRange> RangeInstances(const cct::Tree& tree, const store::RunTrace& trace,
                                              std::string_view name);

struct WindowResult {
  std::vector<std::string> dropped;  // metrics that cannot be windowed (values cleared)
};

// Replaces the values of `tree` (the run's tree as ReadTree returns it, the
// one `trace` refers to) with those of the window. kCorrupt when the trace
// names nodes the tree lacks.
cct::Result<WindowResult> ApplyTimeWindow(cct::Tree& tree, const store::RunTrace& trace, const TimeWindow& window);

// The instances of NVTX range `name` in `trace` as iterations (start order,
// as @range=NAME#K counts them), each with the window's exclusive values of
// every additive metric that can be windowed, so `iterations --range` lists
// them as it lists --iteration's. kCorrupt as ApplyTimeWindow.
cct::Result<store::RunIterations> IterationsFromRange(const cct::Tree& tree, const store::RunTrace& trace,
                                                      std::string_view name);

// The part of `trace` in `window`: samples inside it, ranges and GPU
// activities that overlap it, cut to it (a range still open ends at the
// window's end). For exports of a window (--to perfetto).
store::RunTrace TraceInWindow(const store::RunTrace& trace, const TimeWindow& window);

// "t=0.300s..0.500s" for labels (relative to the trace's start).
std::string DescribeWindow(const TimeWindow& window, const store::RunTrace& trace);

}  // namespace query
