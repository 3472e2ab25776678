// Fuzz target: importers::ImportSpeedscope (speedscope's JSON, sampled and evented
// profiles, read with nlohmann's SAX parser) on arbitrary bytes: no exception escapes,
// an error is one line, and an accepted document gives a tree the store
// round-trips.
#include "importers/importer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::WriteScratch("in.json", fuzz::Bytes(data, size));
  auto r = importers::ImportSpeedscope(path, importers::ImportOptions{});
  if (r.ok()) {
    fuzz::CheckStoreRoundTrip(r->tree);
  } else {
    FUZZ_CHECK(!r.status().message().empty());
    FUZZ_CHECK(r.status().message().find('\n') == std::string::npos);
  }
  return 0;
}
