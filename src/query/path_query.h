// PathQuery: the call-path query language of docs/query.md.
//
// A query is a sequence of steps matched against the path from a top-level
// node (a child of the root) down to some node; each step is a node
// predicate with a quantifier (one node, `*` zero or more, `+` one or more,
// `?`, `{n}` exactly n, `{n,m}`, `{n,}`). A node where the whole sequence has
// been matched is a match *end*; the nodes on a matching path are the ends
// and their ancestors, the root included when anything matched (what
// Hatchet's query returns). Predicates read a node's name,
// kind, module, file, line and metric values (inclusive or exclusive,
// absolute or % of the run's total), combined with and/or/not.
//
// Patterns are RE2 (cct::Pattern): matching is linear in the name. Parsing
// errors carry the 0-based byte position of the offending token, so a front
// end can print the query with a caret under it. Queries are bounded (64 KiB,
// 63 steps after expanding repetitions, nesting 32, 256 comparisons): a
// hostile one is an error, never a slow parse or a deep recursion. Matching
// is one pass over the nodes, O(nodes x steps) at worst.
//
// A parsed PathQuery is immutable and safe to share between threads;
// MatchPathQuery reads the tree (and computes the metric values the query
// needs) and may be called concurrently on distinct trees.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cct/node_values.h"
#include "cct/status.h"
#include "cct/tree.h"

namespace query {

struct PathQueryProgram;  // path_query.cc

class PathQuery {
 public:
  // Parses `text`. On error, kInvalidArgument with the message
  // "invalid query at position N: REASON" and *error_pos (when not null) set to N.
  static cct::Result<PathQuery> Parse(std::string_view text, size_t* error_pos = nullptr);

  const std::string& text() const { return text_; }
  // Metric names the predicates read (resolved against the tree when matching).
  std::vector<std::string> MetricNames() const;

 private:
  friend struct PathQueryMatcher;
  std::string text_;
  std::shared_ptr<const PathQueryProgram> program_;
};

struct PathQueryMatch {
  std::vector<char> end;      // per node: a matching path ends here
  std::vector<char> on_path;  // per node: on some matching path (an end or an ancestor of one)
  size_t ends = 0;            // how many nodes are ends
};

// Matches `query` against every path of `tree`. kInvalidArgument when the
// query names a metric the tree lacks (the message lists the tree's metrics).
cct::Result<PathQueryMatch> MatchPathQuery(const cct::Tree& tree, const PathQuery& query);
// The same, reading metric values from `values` (of `tree`), so a report
// that has them computes them once.
cct::Result<PathQueryMatch> MatchPathQuery(const cct::Tree& tree, const PathQuery& query, cct::NodeValues& values);

// "QUERY\n      ^" lines for an error at `pos`: the query (elided around the
// position when long) and a caret under the offending byte.
std::string CaretLines(std::string_view query, size_t pos);

}  // namespace query
