// Flame graphs: a calling-context tree as a self-contained, interactive SVG.
//
// Frames are stacked from the root (bottom, "all") up; a frame's width is
// its inclusive value of one additive metric, siblings ordered by name (so
// two graphs of similar runs line up). In a browser: hovering shows the
// frame's full name and values, clicking zooms into it (click "Reset zoom"
// or press Escape to go back), "Search" (or Ctrl-F) highlights frames whose
// names match a regular expression and shows their share. Colours say what a
// frame is: warm for CPU functions, purple for NVTX ranges, green for GPU
// operations and kernels, grey for threads and unknown frames.
//
// Differential mode (FlameOptions::baseline): widths are still the drawn
// tree's (the candidate's); each frame is coloured by the change of its own
// (exclusive) value against the baseline: red where the candidate spends
// more (slower), blue where it spends less (faster), white where nothing
// changed, intensity growing with the size of the change relative to the
// largest change drawn. Hover text shows both values and the inclusive and
// exclusive change. Frames only the baseline has cannot be drawn at the
// candidate's widths; their time shows in their parents' change.
//
// For tests and automation the SVG reads its URL fragment on load:
// `#zoom=NAME` zooms into the first frame with that exact name,
// `#search=REGEX` runs a search.
//
// Pure functions of their inputs; the output is streamed (frames narrower
// than FlameOptions::min_width_px are not drawn, so a million-node tree gives
// a bounded SVG).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"

namespace output {
class Progress;
}  // namespace output

namespace reports {

// The baseline of a differential flame graph, per node of the drawn tree:
// the baseline's inclusive and exclusive value of the width metric at the
// node with the same path identity (0 where the baseline has no such node),
// in stored units (ns for times).
struct FlameBaseline {
  std::vector<double> inclusive;
  std::vector<double> exclusive;
};

struct FlameOptions {
  std::string metric;                // additive metric for widths; empty: the tree's first additive metric
  std::vector<std::string> details;  // further metrics shown on hover
  std::string title;                 // default "Flame graph"
  std::string subtitle;              // e.g. the run label; ": <metric> <total> total" is appended
  size_t width = 1200;               // image width in pixels
  double min_width_px = 0.1;         // narrower frames (and their subtrees) are not drawn
  const FlameBaseline* baseline = nullptr;  // set: a differential flame graph
  output::Progress* progress = nullptr;
};

cct::Status WriteFlameGraph(const cct::Tree& tree, const FlameOptions& options, std::ostream& out);

// Matches `cand`'s nodes to `base`'s by path identity (cct::PathIdentity)
// and returns the baseline values of `metric` for WriteFlameGraph. The
// metric must be additive and exist in `cand`; a baseline without it counts
// as zero everywhere.
cct::Result<FlameBaseline> MatchFlameBaseline(const cct::Tree& base, const cct::Tree& cand, const std::string& metric);

// Both steps: a differential flame graph of `cand` against `base`.
cct::Status WriteDiffFlameGraph(const cct::Tree& base, const cct::Tree& cand, const FlameOptions& options,
                                std::ostream& out);

}  // namespace reports
