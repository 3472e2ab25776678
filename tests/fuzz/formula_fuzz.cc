// Fuzz target: cct::Formula::Parse (derived metrics' expressions, from
// stored metric tables and --metric definitions) on arbitrary text. An
// accepted formula evaluates within its fixed stack whatever its operands
// (ASan sees an overflow of Eval's stack array), names only well-formed
// operands, and parses again from its own text to the same program. The
// same text as a -m definition over a registry holding a derived metric:
// what registers reads additive metrics only (derived operands inlined) and
// evaluates within the stack.
#include <cmath>

#include "cct/formula.h"
#include "cct/metric.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = cct::Formula::Parse(fuzz::Bytes(data, size));
  if (!f.ok()) {
    FUZZ_CHECK(!f.status().message().empty());
    return 0;
  }
  for (const std::string& name : f->operands()) FUZZ_CHECK(!name.empty());
  for (size_t i = 0; i < f->operands().size(); ++i)
    for (size_t j = i + 1; j < f->operands().size(); ++j) FUZZ_CHECK(f->operands()[i] != f->operands()[j]);
  const double ones = f->Eval([&](uint32_t i) {
    FUZZ_CHECK(i < f->operands().size());
    return 1.0;
  });
  (void)f->Eval([](uint32_t i) { return i % 2 ? 0.0 : -1.5; });
  (void)f->Eval([](uint32_t) { return std::nan(""); });
  auto again = cct::Formula::Parse(f->text());
  FUZZ_CHECK(again.ok() && again->operands() == f->operands());
  const double twice = again->Eval([](uint32_t) { return 1.0; });
  FUZZ_CHECK((std::isnan(ones) && std::isnan(twice)) || ones == twice);

  cct::MetricRegistry reg;
  FUZZ_CHECK(reg.Register({"a", cct::Unit::kNanoseconds, cct::MetricKind::kAdditive, "", ""}).ok());
  FUZZ_CHECK(reg.Register({"b", cct::Unit::kCount, cct::MetricKind::kAdditive, "", ""}).ok());
  FUZZ_CHECK(reg.Register({"d", cct::Unit::kNanoseconds, cct::MetricKind::kDerived, "", "a / b - (a + 1)"}).ok());
  auto id = reg.Define("m=" + std::string(fuzz::Bytes(data, size)));
  if (!id.ok()) return 0;
  const std::vector<cct::MetricId>& ops = reg.operand_ids(*id);
  for (cct::MetricId op : ops) FUZZ_CHECK(op < reg.size() && reg.Get(op).kind == cct::MetricKind::kAdditive);
  (void)reg.formula(*id)->Eval([&](uint32_t i) {
    FUZZ_CHECK(i < ops.size());
    return 2.0;
  });
  return 0;
}
