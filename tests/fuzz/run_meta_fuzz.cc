// Fuzz target: store::RunMeta::FromJson (run metadata: the runs table, run
// files, raw dump headers) on arbitrary bytes parsed as JSON. nlohmann's
// typed accessors throw on unexpected types: none may escape FromJson, and
// accepted metadata round-trips: ToJson, FromJson, ToJson is a fixed point.
#include <nlohmann/json.hpp>

#include "store/run_meta.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(fuzz::Bytes(data, size), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto meta = store::RunMeta::FromJson(j);
  if (!meta.ok()) {
    FUZZ_CHECK(!meta.status().message().empty());
    return 0;
  }
  const nlohmann::json once = meta->ToJson();
  auto back = store::RunMeta::FromJson(once);
  FUZZ_CHECK(back.ok());
  const nlohmann::json twice = back->ToJson();
  FUZZ_CHECK(twice == once);
  // What the store writes is valid JSON text (strings from the input may be
  // any bytes: dump() must not throw on invalid UTF-8).
  const std::string text = once.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  FUZZ_CHECK(!nlohmann::json::parse(text, nullptr, false).is_discarded());
  return 0;
}
