// `cct-query tree`: the calling-context tree, top-down.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>

#include "cct/beside.h"
#include "cct/pattern.h"
#include "cct/shallow_tree.h"
#include "cct/tree_ops.h"
#include "output/format.h"
#include "output/tree_json.h"
#include "reports/aggregate_view.h"
#include "reports/reports.h"

namespace reports {

using cct::NodeId;
using cct::Status;
using output::CsvField;
using output::MetricColumns;
using output::VisibleTree;

namespace {

// Each name of a --focus heading keeps at most this many columns.
constexpr size_t kHeadingNameColumns = 60;
// A tree with more rows than this is printed as it is walked (the first line
// within a second for any size); a smaller one is laid out from all of its
// rows, with columns no wider than its cells.
constexpr size_t kStreamAfterRows = 4096;

// Text rows are formatted by up to this many threads, this many rows each
// per round (a round's rows and their text are held at once: ~2 MB each).
constexpr size_t kMaxFormatThreads = 4;
constexpr size_t kRowsPerThreadRound = 16384;

// Marks a query's match ends in the text tree, before the name (a name may
// end in any character).
constexpr std::string_view kEndMark = "◆", kEndMarkAscii = "*";

void WriteText(const cct::Tree& tree, const VisibleTree& vis, const MetricColumns& cols, const ReportOptions& opt,
               NodeId top, const std::vector<char>* ends, std::ostream& out) {
  output::TextTable table(cols.TextColumns(), "calling context");
  // The deepest row's prefix: three columns a level below `top`, bounded by
  // --depth and by the tree's depth.
  const size_t max_prefix = 3 * cct::LevelsBelow(tree, top, opt.depth >= 0 ? static_cast<size_t>(opt.depth) : SIZE_MAX);
  table.Stream(out, opt.width, opt.ascii, kStreamAfterRows, cols.TextCellBounds(opt.ascii), max_prefix);
  const output::TreeGlyphs& g = output::Glyphs(opt.ascii);
  const std::string_view end_mark = opt.ascii ? kEndMarkAscii : kEndMark;

  // The walk (ordering each node's children) fixes the rows and their
  // prefixes; formatting them (names, cells, the line) is most of the time
  // for a large tree. Rows go in rounds: while threads format one round,
  // each part into its own buffer, the walk fills the next; a round is
  // written, in order, when the next one is full.
  struct Row {
    NodeId node;
    uint32_t prefix_at, prefix_size;  // in the round's `prefixes`
  };
  struct Part {
    std::vector<std::string> cells;
    std::string name, lines;
    MetricColumns::CellMemo memo;  // kept from round to round: values repeat
  };
  struct Round {
    std::vector<Row> rows;
    std::string prefixes;
    std::vector<Part> parts;
    std::vector<std::jthread> threads;  // joined on the way out, whatever happens here
  };
  const size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, kMaxFormatThreads);
  const size_t round_rows = kRowsPerThreadRound * workers;
  auto format_rows = [&](const Round& round, size_t from, size_t to, Part& s) {
    const std::vector<Row>& rows = round.rows;
    for (size_t i = from; i < to; ++i) {
      // Rows are far apart in a large tree's arrays: their values and the
      // chain of loads to a name (node, frame, offsets, text) fetched ahead.
      if (i + 16 < to) cols.Prefetch(rows[i + 16].node);
      tree.PrefetchNamesAhead(i, to, [&rows](size_t k) { return rows[k].node; });
      const Row& r = rows[i];
      s.name.clear();
      if (ends && (*ends)[r.node]) (s.name += end_mark) += ' ';
      output::AppendDisplayName(tree, r.node, s.name);
      cols.NodeTextCells(r.node, opt.ascii, s.cells, &s.memo);
      const std::string_view prefix(round.prefixes.data() + r.prefix_at, r.prefix_size);
      if (table.LayoutFixed()) table.FormatRow(s.cells, prefix, s.name, s.lines);
      else table.AddRowView(s.cells, prefix, s.name);
    }
  };
  // Starts formatting `round`: the rows before the layout is fixed here,
  // in order, through the table; the rest in parts on threads.
  auto start = [&](Round& round) {
    round.parts.resize(workers);
    size_t i = 0;
    while (i < round.rows.size() && !table.LayoutFixed()) format_rows(round, i, i + 1, round.parts[0]), ++i;
    const size_t left = round.rows.size() - i;
    const size_t parts = left >= 4096 ? workers : 1;
    for (size_t p = 0; p < parts && left > 0; ++p) {
      const size_t from = i + left * p / parts, to = i + left * (p + 1) / parts;
      try {
        round.threads.emplace_back([&format_rows, &round, from, to, p] { format_rows(round, from, to, round.parts[p]); });
      } catch (const std::system_error&) {
        format_rows(round, from, to, round.parts[p]);  // no thread to be had: here
      }
    }
  };
  auto finish = [&](Round& round) {
    for (std::jthread& t : round.threads) t.join();
    round.threads.clear();
    for (Part& p : round.parts) {
      out.write(p.lines.data(), static_cast<std::streamsize>(p.lines.size()));
      p.lines.clear();
    }
    round.rows.clear();
    round.prefixes.clear();
  };
  Round rounds[2];
  int filling = 0;  // the round the walk fills; the other may be formatting
  auto next_round = [&] {
    Round& full = rounds[filling];
    filling ^= 1;
    finish(rounds[filling]);  // the round before it, if any
    start(full);
  };

  // A row's prefix is its ancestors' continuation glyphs ("│  " or "   ")
  // and its own branch: the continuations live in one string, cut back to a
  // row's depth when it is reached, instead of two strings per pushed child
  // (a --depth 4 tree of 10^7 nodes has 7.7·10^5 rows).
  struct Item {
    NodeId node;
    int depth;
    bool last;  // the last of its siblings shown
  };
  std::string trail;                 // continuations of the current row's ancestors
  std::vector<size_t> trail_at{0};   // per depth: trail's length for rows at that depth
  std::vector<Item> stack{{top, 0, false}};
  std::vector<NodeId> kids;
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    trail.resize(trail_at[static_cast<size_t>(it.depth)]);
    std::string& prefixes = rounds[filling].prefixes;
    const size_t prefix_at = prefixes.size();
    if (it.depth > 0) (prefixes += trail) += it.last ? g.last : g.branch;
    rounds[filling].rows.push_back(
        {it.node, static_cast<uint32_t>(prefix_at), static_cast<uint32_t>(prefixes.size() - prefix_at)});
    vis.Children(it.node, it.depth, kids);
    if (!kids.empty()) {
      if (it.depth > 0) trail += it.last ? g.space : g.pipe;
      const size_t child_depth = static_cast<size_t>(it.depth) + 1;
      if (trail_at.size() <= child_depth) trail_at.resize(child_depth + 1);
      trail_at[child_depth] = trail.size();
      for (size_t i = kids.size(); i-- > 0;) stack.push_back({kids[i], it.depth + 1, i + 1 == kids.size()});
    }
    // A round's prefixes stay below 4 GiB (offsets are 32 bits) however deep.
    if (rounds[filling].rows.size() >= round_rows || prefixes.size() >= (size_t{1} << 30)) next_round();
  }
  next_round();
  finish(rounds[filling ^ 1]);  // the last one
  table.Finish();
}

void WriteCsv(const cct::Tree& tree, const VisibleTree& vis, const MetricColumns& cols, NodeId top, bool header,
              const std::vector<char>* ends, std::ostream& out) {
  if (header) out << "depth,name,kind,module,file,line," << cols.CsvHeader() << ",path" << (ends ? ",match" : "") << '\n';
  vis.Preorder(top, [&](NodeId n, int depth) {
    const cct::Frame f = tree.frame(n);
    std::string path;
    for (const std::string& p : cct::PathNames(tree, n)) path += (path.empty() ? "" : ";") + p;
    out << depth << ',' << CsvField(tree.str(f.name)) << ',' << cct::FrameKindName(f.kind) << ','
        << CsvField(tree.str(f.module)) << ',' << CsvField(tree.str(f.file)) << ',' << f.line << ','
        << cols.NodeCsvCells(n) << ',' << CsvField(path);
    if (ends) out << ',' << ((*ends)[n] ? 1 : 0);
    out << '\n';
  });
}

}  // namespace

Status WriteTreeReport(query::Profile& profile, const ReportOptions& opt, std::ostream& out) {
  CCT_ASSIGN_OR_RETURN(const std::vector<MetricSpec> specs, ParseMetricSpecs(opt.metrics));
  // METRIC@AGG columns: the thread-merged tree, values across its units.
  std::unique_ptr<AggregateView> view;
  std::optional<cct::NodeValues> own_values;
  std::optional<MetricColumns> own_cols;
  std::optional<cct::Children> built_children;
  std::unique_ptr<cct::ShallowTree> shallow;
  if (AnyAggregation(specs)) {
    CCT_ASSIGN_OR_RETURN(view, AggregateView::Make(profile, specs));
  } else {
    CCT_ASSIGN_OR_RETURN(std::vector<cct::MetricId> ids, query::ResolveMetrics(profile.tree, opt.metrics));
    // Under --depth only the top levels are shown: their own tree, when it
    // is the smaller part (a --focus, a query or an iteration shows nodes
    // at any depth). The values stay those of the whole tree.
    if (opt.depth >= 0 && opt.focus.empty() && opt.query.empty() && !profile.selector.selects_part())
      shallow = cct::ShallowTree::Make(profile.tree, static_cast<size_t>(opt.depth), ids, profile.tree.size() / 2);
    if (shallow) {
      built_children = cct::BuildChildren(shallow->tree());
      own_cols.emplace(shallow->values(), ids);
    } else {
      // The children index and the values only read the tree: made side by
      // side (a 10^7-node tree: 0.1-0.2 s each).
      cct::RunBeside(
          profile.tree.size() >= cct::kParallelNodes, [&] { built_children = cct::BuildChildren(profile.tree); },
          [&] {
            own_values.emplace(profile.tree);
            own_cols.emplace(*own_values, ids);
          });
    }
  }
  const cct::Tree& tree = view ? view->tree() : shallow ? shallow->tree() : profile.tree;
  const MetricColumns& cols = view ? view->columns() : *own_cols;
  const std::string label = view ? profile.label + view->Across() : profile.label;
  const cct::Children children = built_children ? std::move(*built_children) : cct::BuildChildren(tree);
  // Order and --min follow the first column; an imbalance (a ratio, NaN
  // where nothing ran) by its metric's total over the units instead.
  const std::vector<double>& key = cols.ratio(0) ? view->values().Inclusive(cols.first()) : cols.inclusive(0);
  const double threshold = opt.min_pct > 0 ? std::fabs(key[cct::kRootNode]) * opt.min_pct / 100.0 : 0.0;
  // An iteration keeps the run's whole tree; show only what it touched.
  std::vector<char> shown = profile.selector.selects_part() ? cct::NodesWithValues(tree) : std::vector<char>();
  // A path query shows the nodes on its matching paths (metric predicates
  // read the tree shown: the thread-merged one under METRIC@AGG columns).
  query::PathQueryMatch match;
  const bool queried = !opt.query.empty();
  if (queried) {
    CCT_ASSIGN_OR_RETURN(match, MatchReportQuery(tree, view ? view->values() : *own_values, opt.query,
                                                 /*require_match=*/true));
    if (shown.empty()) shown = match.on_path;
    else
      for (size_t n = 0; n < shown.size(); ++n) shown[n] = shown[n] && match.on_path[n];
  }
  const std::vector<char>* ends = queried ? &match.end : nullptr;
  VisibleTree vis(tree, children, key, threshold, opt.depth, shown.empty() ? nullptr : &shown);

  std::vector<NodeId> tops{cct::kRootNode};
  if (!opt.focus.empty()) {
    CCT_ASSIGN_OR_RETURN(const cct::Pattern focus, cct::Pattern::Compile(opt.focus, "--focus pattern"));
    tops = cct::OutermostMatches(tree, focus);
    if (queried) std::erase_if(tops, [&](NodeId t) { return !match.on_path[t]; });
    if (tops.empty())
      return cct::NotFound("no frame matches --focus '" + cct::ElideMiddle(opt.focus, 80) + "'" +
                           (queried ? " on the query's paths" : ""));
  }

  switch (opt.format) {
    case OutputFormat::kText: {
      out << label << ": " << cols.TotalsLine(opt.ascii) << '\n';
      if (queried) {
        // The query on one line (a newline in it is whitespace to the parser).
        std::string shown_query = opt.query;
        std::replace_if(shown_query.begin(), shown_query.end(), [](char c) { return c >= 0 && c < 0x20; }, ' ');
        if (opt.width) shown_query = output::ElideMiddle(shown_query, opt.width > 40 ? opt.width - 30 : 10, opt.ascii);
        out << "query: " << shown_query << "; " << match.ends << (match.ends == 1 ? " end" : " ends") << " marked "
            << (opt.ascii ? kEndMarkAscii : kEndMark) << '\n';
      }
      for (NodeId top : tops) {
        if (!opt.focus.empty()) {
          // Each name cut to a bounded width (a 30,000-character template
          // name is ordinary); the path itself stays whole.
          const std::vector<std::string> path = cct::PathNames(tree, top);
          out << '\n' << "focus: ";
          for (size_t i = 0; i < path.size(); ++i)
            out << (i ? (opt.ascii ? " > " : " › ") : "")
                << (opt.width ? output::ElideMiddle(path[i], kHeadingNameColumns, opt.ascii) : path[i]);
          out << '\n';
        }
        WriteText(tree, vis, cols, opt, top, ends, out);
      }
      break;
    }
    case OutputFormat::kJson: {
      output::JsonWriter w(out);
      if (opt.focus.empty()) {
        output::WriteTreeJson(tree, vis, cols, cct::kRootNode, w, false, ends);
      } else {
        w.BeginArray();
        for (NodeId top : tops) output::WriteTreeJson(tree, vis, cols, top, w, true, ends);
        w.EndArray();
      }
      out << '\n';
      break;
    }
    case OutputFormat::kCsv: {
      bool header = true;
      for (NodeId top : tops) {
        WriteCsv(tree, vis, cols, top, header, ends, out);
        header = false;
      }
      break;
    }
  }
  return Status::Ok();
}

}  // namespace reports
