// Fuzz target: importers::ImportFolded (folded stacks) on arbitrary bytes,
// with and without --skip-bad-lines. An accepted file gives a tree the store
// round-trips; skipping bad lines never turns an accepted file into a
// rejected one, nor changes what a clean file gives.
#include "importers/importer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::WriteScratch("in.folded", fuzz::Bytes(data, size));
  importers::ImportOptions strict;
  auto r = importers::ImportFolded(path, strict);
  importers::ImportOptions lenient;
  lenient.skip_bad_lines = true;
  auto l = importers::ImportFolded(path, lenient);
  if (r.ok()) {
    fuzz::CheckStoreRoundTrip(r->tree);
    FUZZ_CHECK(r->records > 0 && r->skipped == 0);
    FUZZ_CHECK(l.ok() && l->records == r->records && l->skipped == 0 && l->tree.size() == r->tree.size());
  } else {
    FUZZ_CHECK(!r.status().message().empty());
  }
  if (l.ok()) fuzz::CheckStoreRoundTrip(l->tree);
  return 0;
}
