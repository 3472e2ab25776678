// Reports of cct-diff: a DiffResult as text, markdown, JSON or CSV, either
// the summary (totals, regressions, improvements, new and gone subtrees) or
// the differential tree (--tree).
//
// Lives with the tools because it formats with the query library's helpers
// (values with units, JSON writer, tree glyphs), which src/diff must not
// depend on. Pure functions of their inputs; thread-compatible.
#pragma once

#include <ostream>
#include <string>

#include "diff/diff.h"

namespace cctdiff {

enum class Format { kText, kJson, kMarkdown, kCsv };
cct::Result<Format> ParseFormat(const std::string& s);

struct ReportOptions {
  Format format = Format::kText;
  size_t limit = 10;  // rows per list; 0: all
  bool tree = false;  // the differential tree instead of the summary
  int depth = -1;     // tree: levels shown (-1: all)
  double min_pct = 0;  // tree: hide nodes below this share of the base total on both sides
  bool color = false;  // text: ANSI colours (regressions red, improvements green)
  bool ascii = false;
  size_t width = 80;  // text: columns (0: no limit)
};

void WriteReport(const diff::DiffResult& result, const diff::Side& base, const diff::Side& candidate,
                 const ReportOptions& options, std::ostream& out);

}  // namespace cctdiff
