// MetricColumns' text cells: through a CellMemo (reused from row to row, as
// `tree` keeps one per formatting thread) they are the cells made without
// one, whatever the order of rows, columns, ASCII or not, and whichever
// MetricColumns the memo served before.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cct/node_values.h"
#include "cct/text.h"
#include "cct/tree.h"
#include "output/metric_columns.h"

namespace {

// A tree of `n` nodes whose values come from a few repeated ones (as counts
// of samples do: 1-8 µs here) and some unique ones.
cct::Tree RepeatingTree(unsigned seed, size_t n) {
  std::mt19937 rng(seed);
  cct::Tree t;
  const cct::MetricId time = t.metrics().RegisterStandard("cputime").value();
  cct::MetricDesc d;
  d.name = "calls";
  d.unit = cct::Unit::kCount;
  const cct::MetricId calls = t.metrics().Register(d).value();
  std::vector<cct::FrameId> frames;
  for (int f = 0; f < 50; ++f) frames.push_back(t.InternFrame(cct::FrameKind::kFunction, "f" + std::to_string(f)));
  while (t.size() < n) {
    const cct::NodeId c = t.InternChild(static_cast<cct::NodeId>(rng() % t.size()), frames[rng() % frames.size()]);
    const bool repeated = rng() % 4 != 0;
    t.AddValue(c, time, repeated ? 1e3 * static_cast<double>(1 + rng() % 8) : static_cast<double>(rng()));
    if (rng() % 2) t.AddValue(c, calls, repeated ? static_cast<double>(1 + rng() % 3) : 0.5 + rng() % 100000);
  }
  return t;
}

}  // namespace

TEST_CASE("MetricColumns: cells through a CellMemo are the cells made without one") {
  // Two trees with the same nodes and values, but b has one more node that
  // doubles its total: every value of a is in b, as half the share.
  const cct::Tree a = RepeatingTree(5, 3000);
  cct::NodeValues va(a);
  cct::Tree b = RepeatingTree(5, 3000);
  b.AddValue(b.InternChild(cct::kRootNode, b.InternFrame(cct::FrameKind::kFunction, "extra")), 0, va.Total(0));
  cct::NodeValues vb(b);
  const output::MetricColumns ca(va, {0, 1}), cb(vb, {0, 1});
  REQUIRE(ca.TextColumns().size() == 8);
  output::MetricColumns::CellMemo memo;
  std::mt19937 rng(9);
  std::vector<std::string> cells;
  size_t compared = 0, differ = 0;
  // One memo for both trees, both spellings (µs / us), rows in random order:
  // a memo that mixed them up would give the other tree's percentages or
  // the other spelling.
  for (int round = 0; round < 6; ++round) {
    const output::MetricColumns& cols = round % 3 == 2 ? cb : ca;
    const bool ascii = round % 2 == 1;
    for (int i = 0; i < 4000; ++i) {
      const cct::NodeId n = static_cast<cct::NodeId>(1 + rng() % (a.size() - 1));
      cols.NodeTextCells(n, ascii, cells, &memo);
      const std::vector<std::string> want = cols.NodeTextCells(n, ascii);
      differ += cells != want;
      ++compared;
    }
  }
  CHECK(compared == 24000);
  CHECK(differ == 0);
  // The two spellings and the two totals do differ somewhere, so the check
  // above could fail.
  bool spelled_apart = false, totals_apart = false;
  for (cct::NodeId n = 1; n < a.size(); ++n) {
    spelled_apart |= ca.NodeTextCells(n, true) != ca.NodeTextCells(n, false);
    // The same value in both trees, as a share of each one's total.
    const std::vector<std::string> x = ca.NodeTextCells(n, true), y = cb.NodeTextCells(n, true);
    totals_apart |= x[2] == y[2] && x[3] != y[3];
  }
  CHECK(spelled_apart);
  CHECK(totals_apart);
}

TEST_CASE("MetricColumns: no node's text cell is wider than TextCellBounds says") {
  // A streamed tree fixes its column widths from these bounds before its
  // rows are seen: a cell wider than its bound would break the alignment.
  // Values of every kind the bounds' scan must read right: negative ones
  // (the minus sign), -0 (no sign), NaN and infinities (not finite: left
  // out of the largest magnitude), subnormals, a huge one.
  cct::Tree t;
  const cct::MetricId time = t.metrics().RegisterStandard("cputime").value();
  const std::vector<double> specials = {0.0,  -0.0, 1.0, -1.0, 999.5, -999.5, 1e-320, -1e-320, 4.9e-324,
                                        1e15, -3e14, 9.9951e6, std::numeric_limits<double>::quiet_NaN(),
                                        std::numeric_limits<double>::infinity(),
                                        -std::numeric_limits<double>::infinity()};
  std::mt19937 rng(3);
  // Columns: each a subset of the special values in random order, so that
  // the largest magnitude and the only negative value sit anywhere.
  std::vector<std::vector<double>> inc, exc;
  for (int c = 0; c < 40; ++c) {
    std::vector<double> a, b;
    for (int i = 0; i < 64; ++i) {
      a.push_back(specials[rng() % specials.size()] * (c % 2 ? 1.0 : 0.001));
      b.push_back(rng() % 3 ? specials[rng() % specials.size()] : static_cast<double>(rng() % 1000));
    }
    // The root's value is the column's total, a normal number or 0 (a
    // subnormal total turns shares of large values into infinities).
    while (a[0] != 0 && !std::isnormal(a[0])) a[0] = specials[rng() % specials.size()];
    inc.push_back(a);
    exc.push_back(b);
  }
  while (t.size() < 64)
    t.InternChild(cct::kRootNode, t.InternFrame(cct::FrameKind::kFunction, "f" + std::to_string(t.size())));
  for (size_t c = 0; c < inc.size(); ++c) {
    output::MetricColumns::Source s;
    s.name = "cputime";
    s.metric = time;
    s.percent = true;
    s.inc = &inc[c];
    s.exc = &exc[c];
    const output::MetricColumns cols(t, {s}, {});
    for (bool ascii : {false, true}) {
      const std::vector<size_t> bounds = cols.TextCellBounds(ascii);
      REQUIRE(bounds.size() == cols.TextColumns().size());
      size_t over = 0;
      std::vector<std::string> cells;
      for (cct::NodeId n = 0; n < t.size(); ++n) {
        cols.NodeTextCells(n, ascii, cells);
        for (size_t k = 0; k < cells.size(); ++k) over += cct::DisplayWidth(cells[k]) > bounds[k];
      }
      CHECK_MESSAGE(over == 0, "column set " << c << ", ascii " << ascii);
    }
  }
}
