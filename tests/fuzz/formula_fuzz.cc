// Fuzz target: cct::Formula::Parse (derived metrics' expressions, from
// stored metric tables and --metric definitions) on arbitrary text. An
// accepted formula evaluates within its fixed stack whatever its operands
// (ASan sees an overflow of Eval's stack array), names only well-formed
// operands, and parses again from its own text to the same program.
#include <cmath>

#include "cct/formula.h"
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
  return 0;
}
