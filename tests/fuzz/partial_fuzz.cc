// Fuzz target: aggregate::Partial::Deserialize, the partial aggregates MPI
// ranks send each other (src/aggregate/reduce.h), on arbitrary bytes.
// Accepted bytes re-serialize canonically, finish into an aggregate tree,
// and combine with a partial of the units that follow.
#include "aggregate/reduce.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto p = aggregate::Partial::Deserialize(fuzz::Bytes(data, size));
  if (!p.ok()) {
    FUZZ_CHECK(!p.status().message().empty());
    return 0;
  }
  const std::string once = p->Serialize();
  auto back = aggregate::Partial::Deserialize(once);
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->Serialize() == once);
  (void)p->Finish();  // may refuse (a metric name taken), never crash
  aggregate::Partial next(p->first_unit() + p->units());
  cct::Tree t;
  t.AddValue(t.InternChild(cct::kRootNode, t.InternFrame(cct::FrameKind::kFunction, "f")),
             *t.metrics().RegisterStandard("cputime"), 1);
  if (next.AddUnit(t).ok()) (void)p->Combine(next);
  return 0;
}
