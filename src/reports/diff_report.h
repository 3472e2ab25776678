// Reports of cct-diff: a DiffResult as text, markdown, JSON or CSV, either
// the summary (totals, regressions, improvements, new and gone subtrees) or
// the differential tree (--tree); and the differential flame graph of a
// comparison. The files: diff_report.cc (shared formatting, dispatch),
// diff_text.cc, diff_markdown.cc, diff_json.cc, diff_csv.cc, diff_tree.cc,
// diff_flame.cc; diff_report_internal.h is what they share.
//
// Pure functions of their inputs (but WriteDiffFlame, which writes a file);
// thread-compatible. --color is output::UseColor (output/terminal.h).
#pragma once

#include <ostream>
#include <string>

#include "diff/diff.h"
#include "diff/inputs.h"
#include "query/profile.h"
#include "reports/flame.h"

namespace reports {

enum class DiffFormat { kText, kJson, kMarkdown, kCsv };
cct::Result<DiffFormat> ParseDiffFormat(const std::string& s);

struct DiffReportOptions {
  DiffFormat format = DiffFormat::kText;
  size_t limit = 10;  // rows per list; 0: all
  bool tree = false;  // the differential tree instead of the summary
  int depth = -1;     // tree: levels shown (-1: all)
  double min_pct = 0;  // tree: hide nodes below this share of the base total on both sides
  bool color = false;  // text: ANSI colours (regressions red, improvements green)
  bool ascii = false;
  size_t width = 80;  // text: columns (0: no limit)
  // markdown: lines before the collapsed details, where rows past it go
  // (0: no limit). About what a pull-request comment shows unfolded.
  size_t max_lines = 40;
};

void WriteDiffReport(const diff::DiffResult& result, const diff::Side& base, const diff::Side& candidate,
                     const DiffReportOptions& options, std::ostream& out);

// The differential flame graph of the comparison (reports/flame.h: the
// union tree, coloured by the verdicts) for the first additive metric
// compared, written to `path` whole or not at all (diff_flame.cc).
// `options` gives the orientation and the like; its metric and subtitle are
// set here.
cct::Status WriteDiffFlame(const diff::DiffResult& result, const diff::Side& base, const diff::Side& candidate,
                           const FlameOptions& options, const std::string& path);

// The loader cct-diff compares through: every tree goes through the reader
// the reports use (LoadProfile), so source lines fold the same way and
// iterations work wherever LoadProfile knows them.
diff::TreeLoader ProfileTreeLoader(const query::LoadOptions& load);

}  // namespace reports
