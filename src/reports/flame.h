// Flame graphs: a calling-context tree as a self-contained, interactive SVG.
//
// A frame's width is its inclusive value of one additive metric, siblings
// ordered by name (so two graphs of similar runs line up). Frames stack from
// the root ("all") up (a flame graph) or hang from it down (an icicle); by
// default a graph with more levels than fit a first screen
// (kFirstScreenLevels) is drawn as an icicle, so the root and the hot path
// are what a browser shows first. In a browser the graph takes the window's
// width and follows it when the window is resized (the file's own width,
// FlameOptions::width, is what viewers without scripts show); hovering shows
// the frame's full name and values, clicking zooms into it ("Reset zoom" or
// Escape goes back), the search box (or Ctrl-F) highlights frames whose names
// match a regular expression and shows their share of the drawn width.
// Colours say what a frame is: warm for CPU functions, purple for NVTX
// ranges, green for GPU operations and kernels, grey for threads and unknown
// frames.
//
// Differential mode (WriteDiffFlameGraph): the union tree of a cct-diff
// comparison, coloured by cct-diff's own verdict on each frame's inclusive
// value (diff::MetricDiff::verdict): red steps for regressions, blue steps
// for improvements, neutral grey for every frame without a verdict (inside
// the noise band: below --threshold or --min-abs, or not significant). Frames
// only the base has ("gone") are drawn at their base value, hatched; frames
// only the candidate has ("new") are outlined. Other frames are as wide as
// their candidate value plus the base value of the gone frames below them,
// so a removed subtree keeps the room it took.
//
// For tests and automation the SVG reads its URL fragment on load, actions
// separated by '&': `zoom=NAME` zooms into the first frame with that exact
// name, `search=REGEX` types REGEX into the search box, `unzoom` clicks
// "Reset zoom".
//
// Pure functions of their inputs; the output is streamed (frames narrower
// than FlameOptions::min_width_px at FlameOptions::width are not drawn, so a
// million-node tree gives a bounded SVG).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "diff/diff.h"

namespace output {
class Progress;
}  // namespace output

namespace reports {

// Which way frames stack: kFlame, root at the bottom; kIcicle, root on top;
// kAuto, an icicle when more than kFirstScreenLevels levels are drawn.
enum class FlameOrientation { kAuto, kFlame, kIcicle };

// 50 levels of 16 px and the header and footer fit a 900 px tall window.
inline constexpr uint32_t kFirstScreenLevels = 50;

// --orientation's values: "auto", "flame" or "icicle"; kInvalidArgument else.
cct::Result<FlameOrientation> ParseFlameOrientation(const std::string& text);

struct FlameOptions {
  std::string metric;                // additive metric for widths; empty: the tree's first additive metric
  std::vector<std::string> details;  // further metrics shown on hover
  std::string title;                 // default "Flame graph"
  std::string subtitle;              // e.g. the run label; ": <metric> <total> total" is appended
  size_t width = 1200;               // image width in pixels without a script; a browser uses the window's
  double min_width_px = 0.1;         // narrower frames (and their subtrees) are not drawn
  FlameOrientation orientation = FlameOrientation::kAuto;
  output::Progress* progress = nullptr;
};

cct::Status WriteFlameGraph(const cct::Tree& tree, const FlameOptions& options, std::ostream& out);

// The differential flame graph of metric `metric` (an index into
// result.metrics(); the metric must be additive) of a comparison.
// FlameOptions::metric and details are not used.
cct::Status WriteDiffFlameGraph(const diff::DiffResult& result, size_t metric, const FlameOptions& options,
                                std::ostream& out);

}  // namespace reports
