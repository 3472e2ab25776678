// Fuzz target: query::ParseDeriveOp (cct-query derive's operations, as
// typed) and ApplyDerive on seed_trees.h's tree, then DescribeOperation and
// DescribeEffect on the record it made and on the input itself read as JSON
// (a stored run's `derived_from`, which `show` reads). Byte 0 picks the
// option, byte 1 the -m metric, the rest is the option's value. An accepted
// operation either fails with a message or keeps its promises: the squash
// operations and --merge-threads sum keep every additive total, no operation
// adds nodes, and the record describes the option that made it.
#include <cmath>
#include <nlohmann/json.hpp>

#include "query/derive.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/seed_trees.h"

namespace {

double DeriveFuzzSum(const cct::Tree& t, cct::MetricId m) {
  double s = 0;
  t.column(m).ForEach([&](cct::NodeId, double v) { s += v; });
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const char* const kOptions[] = {"drop", "query", "keep-min", "merge-threads", "normalize", "other"};
  static const char* const kMetrics[] = {"", "samples", "rate", "nosuch"};
  const std::string option = kOptions[data[0] % 6];
  const std::string metric = kMetrics[data[1] % 4];
  const std::string value(fuzz::Bytes(data + 2, size - 2));

  // The input as a stored record: whatever it holds, describing it is safe.
  const nlohmann::json record = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!record.is_discarded()) {
    (void)query::DescribeOperation(record);
    (void)query::DescribeEffect(record);
  }

  auto op = query::ParseDeriveOp(option, value, metric);
  if (!op.ok()) {
    FUZZ_CHECK(op.status().code() == cct::ErrorCode::kInvalidArgument && !op.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(option != "other");
  const cct::Tree src = fuzz::IterationTree();
  query::DeriveSource source;
  source.iterations = 3;
  source.threads = 1;
  auto r = query::ApplyDerive(src, {*op}, source);
  if (!r.ok()) {
    FUZZ_CHECK(!r.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(r->tree.size() <= src.size());
  FUZZ_CHECK(r->operations.size() == 1);
  const std::string described = query::DescribeOperation(r->operations[0]);
  FUZZ_CHECK(described.rfind("--" + option + " ", 0) == 0);
  (void)query::DescribeEffect(r->operations[0]);
  const bool keeps_totals = op->kind == query::DeriveOpKind::kDrop || op->kind == query::DeriveOpKind::kQuery ||
                            op->kind == query::DeriveOpKind::kKeepMin ||
                            (op->kind == query::DeriveOpKind::kMergeThreads && op->stat == query::ThreadStat::kSum);
  for (cct::MetricId m = 0; m < src.metrics().size(); ++m) {
    if (src.metrics().Get(m).kind != cct::MetricKind::kAdditive) continue;
    const double before = DeriveFuzzSum(src, m), after = DeriveFuzzSum(r->tree, m);
    if (keeps_totals) FUZZ_CHECK(after == before);
    // (Extreme divisors overflow or underflow the values, as they would anywhere.)
    if (op->kind == query::DeriveOpKind::kNormalize && op->by == query::NormalizeBy::kNumber && op->number >= 1e-6 &&
        op->number <= 1e6)
      FUZZ_CHECK(std::fabs(after * op->number - before) <= 1e-9 * before);
  }
  // A normalization by a number is recorded as a number that reads back the same.
  if (op->kind == query::DeriveOpKind::kNormalize && op->by == query::NormalizeBy::kNumber) {
    auto again = query::ParseDeriveOp("normalize", described.substr(std::string("--normalize ").size()), metric);
    FUZZ_CHECK(again.ok() && again->number == op->number);
  }
  return 0;
}
