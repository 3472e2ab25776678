// Fuzz target: importers::ImportPprofBytes (cct-import --from pprof) on
// arbitrary bytes, gzipped or not, under a 4 MiB decompression limit. An
// accepted profile gives a tree the store round-trips; exported again with
// cct-query's pprof export and imported back, every metric keeps its unit
// and its total (values below 2^50, which int64 samples and doubles both
// hold exactly); --skip-bad-lines never rejects what the strict read
// accepts.
#include <cmath>
#include <map>
#include <sstream>

#include "exporters/exporter.h"
#include "importers/importer.h"
#include "query/profile.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr size_t kPprofFuzzLimit = size_t{4} << 20;

struct PprofFuzzTotal {
  cct::Unit unit;
  double total = 0, largest = 0;
};

std::map<std::string, PprofFuzzTotal> PprofFuzzTotals(const cct::Tree& t) {
  std::map<std::string, PprofFuzzTotal> out;
  for (cct::MetricId m = 0; m < t.metrics().size(); ++m) {
    PprofFuzzTotal& e = out[t.metrics().Get(m).name];
    e.unit = t.metrics().Get(m).unit;
    t.column(m).ForEach([&](cct::NodeId, double v) {
      e.total += v;
      e.largest = std::max(e.largest, std::fabs(v));
    });
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = fuzz::Bytes(data, size);
  auto r = importers::ImportPprofBytes(bytes, "in.pb", {}, kPprofFuzzLimit);
  importers::ImportOptions lenient;
  lenient.skip_bad_lines = true;
  auto l = importers::ImportPprofBytes(bytes, "in.pb", lenient, kPprofFuzzLimit);
  if (!r.ok()) {
    FUZZ_CHECK(!r.status().message().empty() && r.status().message().find('\n') == std::string::npos);
    return 0;
  }
  FUZZ_CHECK(l.ok() && l->skipped == 0 && l->tree.size() == r->tree.size());
  fuzz::CheckStoreRoundTrip(r->tree);

  const auto before = PprofFuzzTotals(r->tree);
  bool exact = true;
  for (const auto& [name, t] : before) exact &= t.largest < 0x1p50 && std::fabs(t.total) < 0x1p50;
  query::Profile profile;
  profile.tree = std::move(r->tree);
  std::ostringstream out;
  const cct::Status exported = exporters::WritePprof(profile, {}, out, nullptr);
  FUZZ_CHECK(exported.ok());
  auto again = importers::ImportPprofBytes(out.str(), "again.pb.gz", {}, size_t{1} << 30);
  FUZZ_CHECK(again.ok());
  const auto after = PprofFuzzTotals(again->tree);
  FUZZ_CHECK(after.size() == before.size());
  for (const auto& [name, t] : before) {
    auto it = after.find(name);
    FUZZ_CHECK(it != after.end() && it->second.unit == t.unit);
    if (exact) FUZZ_CHECK(it->second.total == t.total);
  }
  return 0;
}
