// Fuzz target: query::PathQuery::Parse (cct-query --query and match, typed
// by users or pasted from scripts) on arbitrary bytes. A rejected query
// names a position inside it; an accepted one matches seed_trees.h's tree
// with consistent results: on_path is closed under parent, every end is on
// a path, the count of ends is right, and the root is on a path exactly
// when something matched. Matching errors (a metric the tree lacks, a unit
// that does not fit) are one line.
#include "query/path_query.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/seed_trees.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cct::Tree tree = [] {
    cct::Tree t = fuzz::PathQueryTree();
    t.EnsureIndexes();
    return t;
  }();
  const std::string text(fuzz::Bytes(data, size));
  size_t pos = SIZE_MAX;
  auto q = query::PathQuery::Parse(text, &pos);
  if (!q.ok()) {
    FUZZ_CHECK(pos <= text.size());
    FUZZ_CHECK(q.status().message().rfind("invalid query at position " + std::to_string(pos) + ": ", 0) == 0);
    FUZZ_CHECK(q.status().message().find('\n') == std::string::npos);
    const std::string caret = query::CaretLines(text, pos);
    FUZZ_CHECK(!caret.empty() && caret.back() == '\n');
    return 0;
  }
  auto m = query::MatchPathQuery(tree, *q);
  if (!m.ok()) {
    FUZZ_CHECK(m.status().message().find('\n') == std::string::npos);
    return 0;
  }
  FUZZ_CHECK(m->end.size() == tree.size() && m->on_path.size() == tree.size());
  size_t ends = 0;
  for (cct::NodeId n = 0; n < tree.size(); ++n) {
    if (m->end[n]) {
      ++ends;
      FUZZ_CHECK(n != cct::kRootNode);
      FUZZ_CHECK(m->on_path[n]);
    }
    if (n != cct::kRootNode && m->on_path[n]) FUZZ_CHECK(m->on_path[tree.parent(n)]);
  }
  FUZZ_CHECK(ends == m->ends);
  FUZZ_CHECK((m->on_path[cct::kRootNode] != 0) == (ends > 0));
  return 0;
}
