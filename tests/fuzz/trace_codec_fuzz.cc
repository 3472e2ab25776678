// Fuzz target: store::DecodeTrace (the trace section, kind 8) on arbitrary
// bytes against seed_trees.h's 8-node tree (tests/fuzz/make_seeds.cc writes
// seeds for the same tree). What it accepts is a valid trace (ids inside the
// tree, samples in time order, ends after starts, ranges and activities in
// start order), and the encoding is canonical: encoding the decoded trace
// gives back the input's exact bytes.
#include <algorithm>

#include "store/trace_codec.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/seed_trees.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cct::Tree tree = fuzz::IterationTree();
  static const std::vector<cct::NodeId> identity = [] {
    std::vector<cct::NodeId> ids(tree.size());
    for (cct::NodeId n = 0; n < ids.size(); ++n) ids[n] = n;
    return ids;
  }();
  const std::string_view input = fuzz::Bytes(data, size);
  auto t = store::DecodeTrace(input, tree.size());
  if (!t.ok()) {
    FUZZ_CHECK(t.status().code() == cct::ErrorCode::kCorrupt && !t.status().message().empty());
    return 0;
  }
  const size_t n = tree.size();
  for (size_t i = 0; i < t->samples.size(); ++i) {
    const store::TraceSamples& s = t->samples[i];
    FUZZ_CHECK(s.thread < n && (i == 0 || s.thread > t->samples[i - 1].thread));
    FUZZ_CHECK(!s.time_ns.empty() && s.time_ns.size() == s.node.size());
    FUZZ_CHECK(std::is_sorted(s.time_ns.begin(), s.time_ns.end()));
    for (cct::NodeId id : s.node) FUZZ_CHECK(id < n);
  }
  for (size_t i = 0; i < t->ranges.size(); ++i) {
    const store::TraceRange& r = t->ranges[i];
    FUZZ_CHECK(r.thread < n && r.node < n && r.end_ns >= r.start_ns);
    FUZZ_CHECK(i == 0 || r.start_ns >= t->ranges[i - 1].start_ns);
  }
  for (size_t i = 0; i < t->gpu.size(); ++i) {
    const store::TraceGpuActivity& g = t->gpu[i];
    FUZZ_CHECK(g.node < n && g.end_ns >= g.start_ns);
    FUZZ_CHECK(i == 0 || g.start_ns >= t->gpu[i - 1].start_ns);
  }
  auto again = store::EncodeTrace(*t, tree, identity);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->payload == input);
  return 0;
}
