// Fuzz target: importers::AttachNcuMetrics (Nsight Compute CSV, the raw and
// the details layout) on arbitrary bytes, attached to the kernel nodes of
// tests/data/ncu/gpu-run.json (the tree the ncu unit tests use). The counts
// it reports stay within the file and the tree, and the tree it changed
// still round-trips through the store.
#include <cstdlib>

#include "importers/importer.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const cct::Tree& BaseTree() {
  static const cct::Tree tree = [] {
    auto r = importers::ImportHatchet(CCT_FUZZ_DATA "/ncu/gpu-run.json", importers::ImportOptions{});
    if (!r.ok()) {
      std::fprintf(stderr, "ncu_csv_fuzz: %s\n", r.status().message().c_str());
      std::abort();
    }
    return std::move(r->tree);
  }();
  return tree;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::WriteScratch("in.csv", fuzz::Bytes(data, size));
  cct::Tree tree = BaseTree();
  const size_t nodes = tree.size();
  auto r = importers::AttachNcuMetrics(path, tree, importers::NcuAttachOptions{});
  if (r.ok()) {
    FUZZ_CHECK(r->matched <= r->launches);
    FUZZ_CHECK(r->kernel_nodes <= r->matched && r->kernel_nodes <= nodes);
    FUZZ_CHECK(tree.size() == nodes);  // attaching adds metrics, never nodes
    fuzz::CheckStoreRoundTrip(tree);
  } else {
    FUZZ_CHECK(!r.status().message().empty());
  }
  return 0;
}
