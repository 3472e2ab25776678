// Fuzz target: store::DecodeIterations (the iterations section, kind 6) on
// arbitrary bytes against a fixed 8-node tree with two additive metrics and
// a derived one (tests/fuzz/make_seeds.cc writes seeds for the same tree).
// Accepted sections re-encode, and encoding what they decode to is
// canonical: the iterations, their times and columns survive.
#include "store/iteration_codec.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/seed_trees.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cct::Tree tree = fuzz::IterationTree();
  static const std::vector<cct::NodeId> identity = [] {
    std::vector<cct::NodeId> ids(tree.size());
    for (cct::NodeId n = 0; n < ids.size(); ++n) ids[n] = n;
    return ids;
  }();
  auto it = store::DecodeIterations(fuzz::Bytes(data, size), tree.size(), tree.metrics());
  if (!it.ok()) {
    FUZZ_CHECK(!it.status().message().empty());
    return 0;
  }
  for (const store::Iteration& i : it->iterations)
    for (const store::IterationColumn& c : i.columns) {
      FUZZ_CHECK(c.nodes.size() == c.values.size());
      for (cct::NodeId n : c.nodes) FUZZ_CHECK(n < tree.size());
    }
  auto once = store::EncodeIterations(*it, tree, identity);
  FUZZ_CHECK(once.ok());
  auto back = store::DecodeIterations(once->payload, tree.size(), tree.metrics());
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->range == it->range && back->iterations.size() == it->iterations.size());
  for (size_t i = 0; i < it->iterations.size(); ++i) {
    FUZZ_CHECK(back->iterations[i].start_ns == it->iterations[i].start_ns);
    FUZZ_CHECK(back->iterations[i].duration_ns == it->iterations[i].duration_ns);
  }
  auto twice = store::EncodeIterations(*back, tree, identity);
  FUZZ_CHECK(twice.ok() && twice->payload == once->payload);
  return 0;
}
