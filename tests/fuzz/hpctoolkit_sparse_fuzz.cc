// Fuzz target: importers::ImportHpctoolkitSparse on a database directory of
// two files. The input is meta.db's size (u32, little-endian), meta.db, then
// profile.db, so the fuzzer mutates the context tree, the metric tables and
// the profiles' sparse values together (seeds: make_seeds, from
// tests/importers/hpctoolkit_sparse_writer.h). An accepted database gives a
// tree whose nodes all lie under thread nodes (each metric's total is the sum
// of the threads' inclusive values) and which the store round-trips; a
// refused one gives one line naming the file.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cct/node_values.h"
#include "importers/importer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return -1;
  uint32_t meta_size = 0;
  std::memcpy(&meta_size, data, 4);
  if (meta_size > size - 4) return -1;
  const std::string_view bytes = fuzz::Bytes(data + 4, size - 4);
  const std::string dir = fuzz::ScratchDir() + "/hpcs";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  fuzz::WriteScratch("hpcs/meta.db", bytes.substr(0, meta_size));
  fuzz::WriteScratch("hpcs/profile.db", bytes.substr(meta_size));
  auto r = importers::ImportHpctoolkitSparse(dir, importers::ImportOptions{});
  if (!r.ok()) {
    const std::string& m = r.status().message();
    const bool one_line = m.rfind(dir + "/", 0) == 0 && m.find('\n') == std::string::npos;
    if (!one_line) std::fprintf(stderr, "message: %s\n", m.c_str());
    FUZZ_CHECK(one_line);
    return 0;
  }
  const cct::Tree& t = r->tree;
  cct::NodeValues v(t);
  for (cct::MetricId m = 0; m < t.metrics().size(); ++m) {
    if (t.metrics().Get(m).kind != cct::MetricKind::kAdditive) continue;
    double threads = 0, scale = 0;
    for (cct::NodeId n = 1; n < t.size(); ++n) {
      scale += std::fabs(t.Value(n, m));
      if (t.parent(n) == cct::kRootNode) {
        FUZZ_CHECK(t.kind(n) == cct::FrameKind::kThread);
        threads += v.Inclusive(m)[n];
      }
    }
    if (std::isfinite(scale)) FUZZ_CHECK(std::fabs(v.Total(m) - threads) <= 1e-9 * scale + 1e-300);
  }
  fuzz::CheckStoreRoundTrip(t);
  return 0;
}
