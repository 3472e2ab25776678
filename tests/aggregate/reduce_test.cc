// The summary metric kind (codec, node values, merging, formulas) and the
// reducible partials of src/aggregate against query/aggregate.h's one-pass
// statistics on the same units.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>

#include "aggregate/reduce.h"
#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "query/aggregate.h"
#include "store/database.h"
#include "store/tree_codec.h"
#include "tests/interop_util.h"
#include "tests/test_util.h"

using cct::FrameKind;
using cct::NodeId;

namespace {

// A tree with one additive metric and one summary metric whose inclusive
// values are NOT the subtree sums of its exclusive ones (a max of sums).
cct::Tree AggSummaryTree(cct::MetricId* summary) {
  cct::Tree t;
  const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
  cct::MetricDesc d;
  d.name = "cputime@max";
  d.unit = cct::Unit::kNanoseconds;
  d.kind = cct::MetricKind::kSummary;
  *summary = *t.metrics().Register(d);
  const NodeId main = interop::AddPath(t, {{FrameKind::kFunction, "main"}});
  const NodeId a = interop::AddPath(t, {{FrameKind::kFunction, "main"}, {FrameKind::kFunction, "a"}});
  const NodeId b = interop::AddPath(t, {{FrameKind::kFunction, "main"}, {FrameKind::kFunction, "b"}});
  t.AddValue(a, cpu, 10);
  t.AddValue(b, cpu, 20);
  t.SetValue(a, *summary, 7);
  t.SetValue(b, *summary, 15);
  cct::SparseColumn inc;
  inc.Set(main, 16);  // not 7 + 15: the max of the units' sums
  inc.Set(a, 7);
  inc.Set(b, 15);
  t.SetInclusiveColumn(*summary, std::move(inc));
  return t;
}

NodeId ReduceFindNode(const cct::Tree& t, std::string_view name) {
  for (NodeId n = 1; n < t.size(); ++n)
    if (t.name(n) == name) return n;
  return cct::kNoNode;
}

std::map<std::string, NodeId> AggByPath(const cct::Tree& t) {
  std::map<std::string, NodeId> out;
  for (NodeId n = 1; n < t.size(); ++n) out[cct::PathIdentity(t, n)] = n;
  return out;
}

}  // namespace

TEST_CASE("summary metrics: stored inclusive values, codec round trip, no summing") {
  cct::MetricId s = 0;
  const cct::Tree t = AggSummaryTree(&s);
  cct::NodeValues v(t);
  const auto paths = AggByPath(t);
  // Inclusive values are read, not summed; exclusive as set.
  for (const auto& pn : paths) {
    if (std::string(t.name(pn.second)) == "main") {
      CHECK(v.Inclusive(s)[pn.second] == 16);
      CHECK(v.Exclusive(s)[pn.second] == 0);
    }
    if (std::string(t.name(pn.second)) == "b") CHECK(v.Inclusive(s)[pn.second] == 15);
  }
  CHECK(v.Inclusive(s)[cct::kRootNode] == 0);  // nothing stored at the root

  auto back = store::DecodeTree(store::EncodeTree(t));
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->metrics().Get(s).kind == cct::MetricKind::kSummary);
  cct::NodeValues w(*back);
  const auto back_paths = AggByPath(*back);
  for (const auto& pn : paths) {
    const NodeId k = back_paths.at(pn.first);
    CHECK(w.Inclusive(s)[k] == v.Inclusive(s)[pn.second]);
    CHECK(w.Exclusive(s)[k] == v.Exclusive(s)[pn.second]);
  }

  // Inclusive values stored for an additive metric are damage.
  std::vector<store::Section> sections = store::EncodeTree(t);
  for (store::Section& sec : sections)
    if (sec.kind == store::SectionKind::kInclusiveValues) sec.arg = 0;  // cputime: additive
  CHECK(store::DecodeTree(sections).status().code() == cct::ErrorCode::kCorrupt);

  // Merging would add statistics up: refused. Formulas cannot read them.
  cct::Tree dst;
  const cct::Status merged = cct::MergeInto(dst, t, 1.0);
  CHECK(!merged.ok());
  CHECK(merged.message().find("summary statistic") != std::string::npos);
  cct::Tree f = t;
  const auto defined = f.metrics().Define("x={cputime@max}*2");
  CHECK(!defined.ok());
  cct::MetricDesc bad;
  bad.name = "y";
  bad.kind = cct::MetricKind::kDerived;
  bad.formula = "{cputime@max} + {cputime}";
  const auto registered = f.metrics().Register(bad);
  REQUIRE(!registered.ok());
  CHECK(registered.status().message().find("summary statistic") != std::string::npos);

  // Folding keeps the values of nodes that stay, drops a folded node's.
  cct::Tree lines = t;
  const NodeId a_line =
      lines.InternChild(ReduceFindNode(lines, "a"), lines.InternFrame(FrameKind::kLine, "x.cc", "", "x.cc", 3));
  lines.SetValue(a_line, s, 99);
  const cct::Tree folded = cct::FoldKind(lines, FrameKind::kLine);
  cct::NodeValues fv(folded);
  CHECK(fv.Exclusive(s)[ReduceFindNode(folded, "b")] == 15);
  CHECK(fv.Exclusive(s)[ReduceFindNode(folded, "a")] == 7);  // the line's 99 is not added to it
  CHECK(fv.Inclusive(s)[ReduceFindNode(folded, "main")] == 16);
}

TEST_CASE("aggregate partials combined in any split equal query's one-pass statistics") {
  // Seven units over overlapping paths, each missing some (0 there); values
  // are whole nanoseconds, so sums are exact in any order.
  std::mt19937 rng(7);
  const std::vector<std::vector<std::string>> kPaths = {
      {"main"}, {"main", "solve"}, {"main", "solve", "dgemm"}, {"main", "io"}, {"main", "solve", "halo"}, {"init"}};
  std::vector<cct::Tree> trees(7);
  for (size_t u = 0; u < trees.size(); ++u) {
    cct::Tree& t = trees[u];
    const cct::MetricId cpu = *t.metrics().RegisterStandard("cputime");
    for (size_t p = 0; p < kPaths.size(); ++p) {
      if ((u + p) % 3 == 0 && p > 0) continue;  // some units lack some paths
      std::vector<std::pair<FrameKind, std::string>> frames;
      for (const std::string& n : kPaths[p]) frames.emplace_back(FrameKind::kFunction, n);
      t.AddValue(interop::AddPath(t, frames), cpu, static_cast<double>(1 + rng() % 1000) * 1000);
    }
    if (u == 4) {  // a tie with unit 1 at main/io: the max goes to the first
      std::vector<std::pair<FrameKind, std::string>> io{{FrameKind::kFunction, "main"}, {FrameKind::kFunction, "io"}};
      t.SetValue(interop::AddPath(t, io), cpu, trees[1].Value(interop::AddPath(trees[1], io), cpu));
    }
  }
  std::vector<const cct::Tree*> ptrs;
  std::vector<query::Unit> units;
  for (size_t u = 0; u < trees.size(); ++u) {
    ptrs.push_back(&trees[u]);
    units.push_back(query::Unit{query::Unit::Kind::kRank, std::to_string(u)});
  }
  auto ref_units = query::TreeUnits(units, ptrs, true);
  REQUIRE(ref_units.ok());
  const cct::MetricId rcpu = ref_units->merged.metrics().Find("cputime");
  const std::vector<query::UnitAggregate> ref = query::AggregateUnits(*ref_units, {{rcpu, false}, {rcpu, true}});
  const auto ref_paths = AggByPath(ref_units->merged);

  for (const std::vector<size_t>& split : std::vector<std::vector<size_t>>{{7}, {1, 6}, {3, 4}, {2, 2, 3}, {1, 1, 1, 1, 1, 1, 1}}) {
    std::vector<aggregate::Partial> parts;
    size_t first = 0;
    for (size_t n : split) {
      aggregate::Partial p(first);
      for (size_t u = first; u < first + n; ++u) REQUIRE(p.AddUnit(trees[u]).ok());
      // Through the wire format, as an MPI rank sends it.
      auto wire = aggregate::Partial::Deserialize(p.Serialize());
      REQUIRE_MESSAGE(wire.ok(), wire.status().message());
      parts.push_back(std::move(*wire));
      first += n;
    }
    for (size_t i = 1; i < parts.size(); ++i) REQUIRE(parts[0].Combine(parts[i]).ok());
    const aggregate::Partial& all = parts[0];
    REQUIRE(all.units() == trees.size());
    const cct::MetricId cpu = all.merged().metrics().Find("cputime");
    const auto paths = AggByPath(all.merged());
    REQUIRE(paths.size() == ref_paths.size());
    for (const auto& pn : paths) {
      const NodeId r = ref_paths.at(pn.first);
      for (int inc = 0; inc < 2; ++inc) {
        const aggregate::NodeStats& s = inc ? all.inclusive(cpu) : all.exclusive(cpu);
        CAPTURE(pn.first);
        CAPTURE(inc);
        CHECK(s.sum[pn.second] == ref[inc].sum[r]);
        CHECK(s.min[pn.second] == ref[inc].min[r]);
        CHECK(s.max[pn.second] == ref[inc].max[r]);
        CHECK(s.argmax[pn.second] == ref[inc].argmax[r]);
      }
    }
    // The finished tree: the sum as the additive metric, statistics stored.
    auto agg = all.Finish();
    REQUIRE(agg.ok());
    cct::NodeValues v(*agg);
    const cct::MetricId mean = agg->metrics().Find("cputime@mean"), imb = agg->metrics().Find("cputime@imbalance");
    REQUIRE(mean != cct::kNoMetric);
    REQUIRE(imb != cct::kNoMetric);
    for (const auto& pn : AggByPath(*agg)) {
      const NodeId r = ref_paths.at(pn.first);
      CHECK(v.Inclusive(agg->metrics().Find("cputime"))[pn.second] == ref[1].sum[r]);
      CHECK(v.Inclusive(mean)[pn.second] == doctest::Approx(ref[1].mean(r)));
      if (!std::isnan(ref[0].imbalance(r))) CHECK(v.Exclusive(imb)[pn.second] == doctest::Approx(ref[0].imbalance(r)));
    }
  }
  // A damaged partial is an error, not a crash.
  aggregate::Partial p(0);
  REQUIRE(p.AddUnit(trees[0]).ok());
  std::string bytes = p.Serialize();
  for (size_t cut : {size_t{0}, size_t{10}, bytes.size() / 2, bytes.size() - 1})
    CHECK(!aggregate::Partial::Deserialize(std::string_view(bytes).substr(0, cut)).ok());
  // An aggregate run is no input.
  auto agg = p.Finish();
  REQUIRE(agg.ok());
  aggregate::Partial q(0);
  CHECK(!q.AddUnit(*agg).ok());
}

TEST_CASE("format version 3: a version 2 file reads as it is, a writer stamps it 3, summary runs round trip") {
  testutil::TempDir dir;
  const std::string path = dir / "v2.db";
  cct::MetricId s = 0;
  {
    auto db = store::Database::Open(path, store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    store::RunMeta m;
    m.name = "plain";
    cct::Tree t;
    t.AddValue(interop::AddPath(t, {{FrameKind::kFunction, "f"}}), *t.metrics().RegisterStandard("cputime"), 5);
    REQUIRE((*db)->CreateRun(m, &t).ok());
  }
  auto version = [&]() { return testutil::StoredFormatVersion(path); };
  REQUIRE(testutil::StampFormatVersion(path, 2));
  REQUIRE(version() == 2);
  {
    auto db = store::Database::Open(path, store::Database::Mode::kRead);
    REQUIRE(db.ok());
    auto t = (*db)->ReadTree(1);
    REQUIRE(t.ok());
    CHECK(t->metrics().Get(0).kind == cct::MetricKind::kAdditive);
  }
  CHECK(version() == 2);  // readers change nothing
  {
    auto db = store::Database::Open(path, store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    store::RunMeta m;
    m.name = "summary";
    const cct::Tree t = AggSummaryTree(&s);
    REQUIRE((*db)->CreateRun(m, &t).ok());
    auto back = (*db)->ReadTree(m.id);
    REQUIRE(back.ok());
    cct::NodeValues v(*back);
    CHECK(v.Inclusive(s)[ReduceFindNode(*back, "main")] == 16);
  }
  CHECK(version() == 3);
}
