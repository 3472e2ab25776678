// Fuzz target: importers::ImportHatchet (Hatchet's literal JSON and
// GraphFrame.to_json's graph+dataframe) on arbitrary bytes. nlohmann's
// typed accessors throw on unexpected types: none may escape the importer,
// and an accepted document gives a tree the store round-trips.
#include "importers/importer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::WriteScratch("in.json", fuzz::Bytes(data, size));
  auto r = importers::ImportHatchet(path, importers::ImportOptions{});
  if (r.ok()) {
    fuzz::CheckStoreRoundTrip(r->tree);
    FUZZ_CHECK(r->records > 0);
  } else {
    FUZZ_CHECK(!r.status().message().empty());
  }
  return 0;
}
