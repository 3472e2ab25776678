// The exporters' registry: cct-query export's --to values (docs/cli.md)
// and lookup errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "exporters/registry.h"

TEST_CASE("the exporter registry lists cct-query export's formats") {
  // docs/cli.md: "--to FORMAT | export: json, folded, hatchet, hatchet-json, pprof, csv, json-rows, speedscope or
  // perfetto".
  const std::vector<std::string> expected = {"json", "folded", "hatchet",   "hatchet-json",
                                             "pprof", "csv",   "json-rows", "speedscope", "perfetto"};
  const std::vector<exporters::ExporterInfo>& all = exporters::Exporters();
  REQUIRE(all.size() == expected.size());
  for (size_t i = 0; i < all.size(); ++i) {
    CAPTURE(expected[i]);
    CHECK(all[i].name == expected[i]);
    CHECK(all[i].extension.front() == '.');
    CHECK(all[i].description.size() > 10);
    // Lookup finds the entry itself, not a copy.
    auto found = exporters::FindExporter(expected[i]);
    REQUIRE(found.ok());
    CHECK(*found == &all[i]);
    CHECK(static_cast<bool>(all[i].write));
    // The table formats, and only they, write several runs into one file.
    CHECK(static_cast<bool>(all[i].write_runs) == (expected[i] == "csv" || expected[i] == "json-rows"));
  }
  CHECK(exporters::ExporterNames("|", "|") == "json|folded|hatchet|hatchet-json|pprof|csv|json-rows|speedscope|perfetto");
  CHECK(exporters::ExporterNames(", ", " or ") ==
        "json, folded, hatchet, hatchet-json, pprof, csv, json-rows, speedscope or perfetto");
}

TEST_CASE("an unknown exporter is an error naming the known ones") {
  for (const char* name : {"flamegraph", "JSON", ""}) {
    CAPTURE(name);
    const cct::Status status = exporters::FindExporter(name).status();
    CHECK(status.code() == cct::ErrorCode::kInvalidArgument);
    CHECK(status.message() == "unknown export format '" + std::string(name) +
                                  "' (expected json, folded, hatchet, hatchet-json, pprof, csv, json-rows, "
                                  "speedscope or perfetto)");
  }
}
