// `tree --depth D` of a stored (preorder) tree is drawn from a ShallowTree
// cut at D; of the same tree in creation order, from the whole tree. Both
// must print the same report, in every format.
#include <doctest/doctest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cct/shallow_tree.h"
#include "cct/tree_ops.h"
#include "query/profile.h"
#include "reports/reports.h"
#include "store/tree_codec.h"

using namespace cct;

namespace {

// A random tree in creation order, with non-integer cputime values on most
// nodes (ties broken by name need equal sums: some values repeat) and
// sample counts on a few.
Tree RandomTree(uint32_t seed, size_t nodes) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const MetricId samples = t.metrics().Register({"samples", Unit::kCount, MetricKind::kAdditive, "", ""}).value();
  std::vector<FrameId> frames;
  for (int f = 0; f < 30; ++f) {
    frames.push_back(t.InternFrame(f % 5 == 0 ? FrameKind::kNvtx : FrameKind::kFunction, "fn" + std::to_string(f)));
  }
  std::vector<NodeId> all{kRootNode};
  while (all.size() < nodes) {
    const NodeId parent =
        unit(rng) < 0.6 ? all[all.size() - 1 - std::min<size_t>(all.size() - 1, rng() % 3)] : all[rng() % all.size()];
    const size_t before = t.size();
    const NodeId n = t.InternChild(parent, frames[rng() % frames.size()]);
    if (t.size() == before) continue;
    all.push_back(n);
    const double r = unit(rng);
    if (r < 0.3) t.AddValue(n, cpu, 1e6);  // ties
    else if (r < 0.85) t.AddValue(n, cpu, unit(rng) * 3.7e7);
    if (unit(rng) < 0.05) t.AddValue(n, samples, 1 + (rng() % 4));
  }
  return t;
}

std::string Report(Tree tree, const reports::ReportOptions& opt) {
  query::Profile profile;
  profile.label = "run 1 'random'";
  profile.tree = std::move(tree);
  std::ostringstream out;
  const Status s = reports::WriteTreeReport(profile, opt, out);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return out.str();
}

}  // namespace

TEST_CASE("tree --depth: a stored tree's report, cut at the depth, is the whole tree's") {
  for (uint32_t seed : {11u, 12u, 13u}) {
    const Tree built = RandomTree(seed, 2500);
    auto stored = store::DecodeTree(store::EncodeTree(built));
    REQUIRE(stored.ok());
    const MetricId cpu = built.metrics().Find("cputime");
    // The premise: the stored tree is cut, the built one is not.
    REQUIRE(ShallowTree::Make(*stored, 3, {cpu}, stored->size() / 2) != nullptr);
    REQUIRE(ShallowTree::Make(built, 3, {cpu}, built.size() / 2) == nullptr);
    for (int depth : {0, 1, 2, 3}) {
      for (reports::OutputFormat format :
           {reports::OutputFormat::kText, reports::OutputFormat::kJson, reports::OutputFormat::kCsv}) {
        for (const std::vector<std::string>& metrics :
             std::vector<std::vector<std::string>>{{}, {"cputime", "samples"}, {"per=cputime/samples"}}) {
          for (double min_pct : {0.0, 2.0}) {
            reports::ReportOptions opt;
            opt.depth = depth;
            opt.format = format;
            opt.metrics = metrics;
            opt.min_pct = min_pct;
            CAPTURE(seed);
            CAPTURE(depth);
            CAPTURE(static_cast<int>(format));
            CAPTURE(metrics.size());
            CAPTURE(min_pct);
            Tree whole = built, cut = *stored;
            if (!metrics.empty() && MetricRegistry::IsDefinition(metrics.back())) {
              REQUIRE(query::DefineMetrics(whole, metrics).ok());
              REQUIRE(query::DefineMetrics(cut, metrics).ok());
            }
            const std::string expected = Report(std::move(whole), opt);
            if (depth > 0) CHECK(expected.find("fn") != std::string::npos);
            CHECK(Report(std::move(cut), opt) == expected);
          }
        }
      }
    }
  }
}
