// Fuzz target: importers::ParsePerfScript (`perf script` text; the perf.data
// path only runs perf and feeds this parser) on arbitrary bytes. Properties:
// every accepted sample counts once in "samples"; skipping bad lines never
// rejects an accepted input nor changes what it gives; and a known sample
// appended after the input adds exactly one sample and its period to its own
// event's metric, leaving the input's metrics as they were.
#include <map>

#include "importers/importer.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

std::map<std::string, double> PerfFuzzTotals(const cct::Tree& tree) {
  std::map<std::string, double> out;
  for (cct::MetricId m = 0; m < tree.metrics().size(); ++m) {
    double sum = 0;
    tree.column(m).ForEach([&](cct::NodeId, double v) { sum += v; });
    out[tree.metrics().Get(m).name] = sum;
  }
  return out;
}

constexpr const char* kProbe = "\n\nfuzz probe 4242/4242 9.5: 7 fuzz-probe-event:\n\t1 probe_fn (/probe)\n\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::Bytes(data, size);
  importers::ImportOptions strict;
  importers::ImportOptions lenient;
  lenient.skip_bad_lines = true;
  auto r = importers::ParsePerfScript(text, "in.txt", strict);
  auto l = importers::ParsePerfScript(text, "in.txt", lenient);
  if (r.ok()) {
    fuzz::CheckStoreRoundTrip(r->tree);
    FUZZ_CHECK(r->records > 0 && r->skipped == 0);
    const auto totals = PerfFuzzTotals(r->tree);
    FUZZ_CHECK(totals.at("samples") == static_cast<double>(r->records));
    FUZZ_CHECK(l.ok() && l->records == r->records && l->skipped == 0 && l->tree.size() == r->tree.size());
    auto p = importers::ParsePerfScript(std::string(text) + kProbe, "in.txt", strict);
    FUZZ_CHECK(p.ok() && p->records == r->records + 1);
    auto ptotals = PerfFuzzTotals(p->tree);
    const double probe_before = totals.count("fuzz-probe-event") ? totals.at("fuzz-probe-event") : 0;
    FUZZ_CHECK(ptotals["fuzz-probe-event"] == probe_before + 7);
    ptotals["fuzz-probe-event"] = probe_before;
    ptotals["samples"] -= 1;
    if (!totals.count("fuzz-probe-event")) ptotals.erase("fuzz-probe-event");
    FUZZ_CHECK(ptotals == totals);
  } else {
    FUZZ_CHECK(!r.status().message().empty());
    FUZZ_CHECK(r.status().message().find('\n') == std::string::npos);
  }
  if (l.ok()) fuzz::CheckStoreRoundTrip(l->tree);
  return 0;
}
