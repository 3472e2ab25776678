// Fuzz target: the store's tree sections (store/tree_codec.h). Stored
// sections carry a CRC, so the input is the sections' payloads without it:
// records of kind u8, arg u16, length u16 (little-endian) and the payload
// (tests/fuzz/section_input.h), fed to DecodeTree; the whole input is also
// given to UnframeSection and DecodeMetricTable. Whatever DecodeTree
// accepts is a tree the store round-trips canonically.
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/section_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = fuzz::Bytes(data, size);
  if (auto s = store::UnframeSection(bytes); s.ok()) {
    FUZZ_CHECK(s->payload.size() + store::kSectionHeaderSize == bytes.size());
    auto again = store::UnframeSection(store::FrameSection(*s));
    FUZZ_CHECK(again.ok() && again->kind == s->kind && again->arg == s->arg && again->payload == s->payload);
  }
  cct::MetricRegistry metrics;
  (void)store::DecodeMetricTable(bytes, metrics);

  const std::vector<store::Section> sections = fuzz::ParseSectionInput(bytes);
  auto tree = store::DecodeTree(sections);
  if (tree.ok()) {
    fuzz::CheckStoreRoundTrip(*tree);
    // Accepted trees are well formed: every parent precedes its child.
    for (cct::NodeId n = 1; n < tree->size(); ++n) FUZZ_CHECK(tree->parent(n) < n);
  } else {
    FUZZ_CHECK(!tree.status().message().empty());
  }
  return 0;
}
