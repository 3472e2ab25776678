// Fuzz target: importers::ImportCaliper (Caliper's json-split, json records
// or json(object)) on arbitrary bytes: no exception escapes,
// an error is one line, and an accepted document gives a tree the store
// round-trips.
#include "importers/importer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::WriteScratch("in.json", fuzz::Bytes(data, size));
  auto r = importers::ImportCaliper(path, importers::ImportOptions{});
  if (r.ok()) {
    fuzz::CheckStoreRoundTrip(r->tree);
  } else {
    FUZZ_CHECK(!r.status().message().empty());
    FUZZ_CHECK(r.status().message().find('\n') == std::string::npos);
  }
  return 0;
}
