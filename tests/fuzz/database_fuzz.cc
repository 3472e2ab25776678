// Fuzz target: opening a damaged database. The input is written as the
// database file (LMDB's data.mdb, MDB_NOSUBDIR) and opened read-only the way
// cct-query does: list the runs, read each one's metadata, tree, iterations
// and section sizes, and select `latest`. A damaged file must give a
// cct::Status, never an abort or a hang (docs/architecture.md, Robustness);
// a tree read back is one the store round-trips.
#include <filesystem>

#include "store/database.h"
#include "store/selector.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::WriteScratch("in.db", fuzz::Bytes(data, size));
  std::error_code ec;
  std::filesystem::remove(path + "-lock", ec);
  auto db = store::Database::Open(path, store::Database::Mode::kRead);
  if (!db.ok()) {
    FUZZ_CHECK(!db.status().message().empty());
    return 0;
  }
  auto runs = (*db)->ListRuns();
  if (!runs.ok()) return 0;
  size_t read = 0;
  for (const store::RunMeta& run : *runs) {
    if (++read > 64) break;
    (void)(*db)->GetRun(run.id);
    (void)(*db)->SectionSizes(run.id);
    auto tree = (*db)->ReadTree(run.id);
    if (tree.ok()) fuzz::CheckStoreRoundTrip(*tree);
    (void)(*db)->ReadIterations(run.id);
  }
  auto sel = store::ParseSelector("latest", path);
  FUZZ_CHECK(sel.ok());
  (void)store::SelectRuns(**db, *sel);
  return 0;
}
