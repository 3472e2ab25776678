// Folded stacks ("a;b;c 123", FlameGraph's stackcollapse and inferno): the
// number is the exclusive value of that path. Lines starting with '#' are
// comments; one before the first stack may say "# metric=NAME unit=UNIT"
// (cct-query export --to folded --unit-comment writes it).
//
// Consecutive lines usually share a prefix (the tools sort them), so the
// previous line's frames and nodes are kept and only the differing suffix is
// interned: a million-node file imports in about a second.
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>

#include "cct/metric.h"
#include "cct/text.h"
#include "importers/importer.h"

namespace importers {

using cct::Result;
using cct::Status;

namespace {

// "# metric=NAME unit=UNIT" (either part may be missing): fills what the
// command line left empty. Other comments say nothing.
void ReadUnitComment(std::string_view line, std::string& metric, std::optional<std::string>& unit) {
  line.remove_prefix(1);
  size_t pos = 0;
  while (pos < line.size()) {
    const size_t start = line.find_first_not_of(" \t", pos);
    if (start == std::string_view::npos) break;
    size_t end = line.find_first_of(" \t", start);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view word = line.substr(start, end - start);
    pos = end;
    if (word.rfind("metric=", 0) == 0 && word.size() > 7 && metric.empty()) metric = word.substr(7);
    else if (word.rfind("unit=", 0) == 0 && word.size() > 5 && !unit) unit = std::string(word.substr(5));
  }
}

}  // namespace

Result<ImportResult> ImportFolded(const std::string& path, const ImportOptions& options) {
  CCT_ASSIGN_OR_RETURN(auto file, InputFileBuf::Open(path));
  ImportResult result;
  cct::Tree& tree = result.tree;
  double metric_scale = 1;
  // The metric is registered at the first stack, after a leading
  // "# metric=NAME unit=UNIT" comment (our export's --unit-comment) could
  // name it; --metric and --unit win over the comment.
  std::string metric_name = options.metric;
  std::optional<std::string> unit_name = options.unit;
  std::optional<cct::MetricId> metric;
  auto register_metric = [&]() -> Status {
    if (metric_name.empty()) metric_name = "samples";
    cct::Unit unit;
    double scale = 1;
    CCT_RETURN_IF_ERROR(ResolveImportUnit(metric_name, unit_name, unit, scale));
    CCT_ASSIGN_OR_RETURN(metric, RegisterImportedMetric(tree, metric_name, unit, "imported from folded stacks"));
    metric_scale = scale;
    return Status::Ok();
  };

  // The previous line's frames and nodes: consecutive stacks share
  // prefixes, so only the frames after the common prefix are looked up.
  std::vector<std::string> prev_frames;
  std::vector<cct::NodeId> prev_nodes;
  std::vector<std::string_view> frames;
  size_t line_no = 0;
  bool seen_stack = false;
  LineSplitter lines(path, [&](std::string_view line) -> Status {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) return Status::Ok();  // blank
    line.remove_prefix(first);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);

    if (line.front() == '#') {  // a comment
      if (!seen_stack) ReadUnitComment(line, metric_name, unit_name);
      return Status::Ok();
    }
    seen_stack = true;

    auto bad = [&](const std::string& why) -> Status {
      const std::string where = path + ":" + std::to_string(line_no);
      if (options.skip_bad_lines) {
        if (result.skipped++ == 0) result.first_skip = where + ": " + why;
        return Status::Ok();
      }
      return cct::BadInput(where + ": " + why);
    };

    const size_t sp = line.find_last_of(" \t");
    if (sp == std::string_view::npos) return bad("expected 'frame;frame;... value'");
    const std::string_view number = line.substr(sp + 1);
    double value = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || end != number.data() + number.size() || !std::isfinite(value))
      return bad("'" + cct::ElideMiddle(number, 64, true) + "' is not a number");
    std::string_view stack = line.substr(0, sp);
    while (!stack.empty() && (stack.back() == ' ' || stack.back() == '\t')) stack.remove_suffix(1);
    frames.clear();
    bool empty_frame = stack.empty();
    for (size_t start = 0; start <= stack.size();) {
      size_t semi = stack.find(';', start);
      if (semi == std::string_view::npos) semi = stack.size();
      const std::string_view f = stack.substr(start, semi - start);
      if (f.empty()) empty_frame = true;
      frames.push_back(f);
      start = semi + 1;
    }
    if (empty_frame) return bad("empty frame name in the stack");
    ++result.records;
    if (!metric) CCT_RETURN_IF_ERROR(register_metric());
    size_t common = 0;
    while (common < frames.size() && common < prev_frames.size() && frames[common] == prev_frames[common]) ++common;
    prev_frames.resize(common);
    prev_nodes.resize(common);
    cct::NodeId node = common > 0 ? prev_nodes[common - 1] : cct::kRootNode;
    for (size_t i = common; i < frames.size(); ++i) {
      node = tree.InternChild(node, tree.InternFrame(cct::FrameKind::kFunction, frames[i]));
      prev_frames.emplace_back(frames[i]);
      prev_nodes.push_back(node);
    }
    if (value != 0) tree.AddValue(node, *metric, value * metric_scale);
    return Status::Ok();
  });
  CCT_RETURN_IF_ERROR(lines.FeedAll(*file));
  if (result.records == 0 && result.skipped == 0) return cct::BadInput(path + ": no stacks in the file");
  if (!metric) CCT_RETURN_IF_ERROR(register_metric());
  return result;
}

cct::Result<ImportReport> ImportFoldedRun(const ImportRequest& request) {
  return ImportNewRun(request, "folded", &ImportFolded);
}

}  // namespace importers
