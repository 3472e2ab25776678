// Fuzz target: importers::ImportHpctoolkit on an arbitrary database
// directory. The input is experiment.xml, then for each "\n--metric-db--\n"
// separator one metric-db file (ranks 0, 1, ...), so the fuzzer mutates the
// XML (expat and our element handlers) and the binary metric-db files
// together. An accepted database gives a tree the store round-trips.
#include <filesystem>

#include "importers/importer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts = fuzz::Split(fuzz::Bytes(data, size), "\n--metric-db--\n");
  if (parts.size() > 9) return -1;  // keeps the directory small; -1: not added to the corpus
  const std::string dir = fuzz::ScratchDir() + "/hpc";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  fuzz::WriteScratch("hpc/experiment.xml", parts[0]);
  for (size_t i = 1; i < parts.size(); ++i)
    fuzz::WriteScratch("hpc/1.app-00000" + std::to_string(i - 1) + "-000-a8c00270-1604" + std::to_string(i) + "-0.metric-db",
                       parts[i]);
  auto r = importers::ImportHpctoolkit(dir, importers::ImportOptions{});
  if (r.ok()) {
    fuzz::CheckStoreRoundTrip(r->tree);
  } else {
    FUZZ_CHECK(!r.status().message().empty());
  }
  return 0;
}
