// The exporters' registry: cct-query export's --to values (docs/cli.md)
// and lookup errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "exporters/registry.h"

TEST_CASE("the exporter registry lists cct-query export's formats") {
  // docs/cli.md: "--to FORMAT | export: json, folded, hatchet, hatchet-json, pprof or csv".
  const std::vector<std::string> expected = {"json", "folded", "hatchet", "hatchet-json", "pprof", "csv"};
  std::vector<std::string> names;
  for (const query::ExporterInfo& e : query::Exporters()) {
    names.emplace_back(e.name);
    CHECK(!e.description.empty());
    CHECK(!e.extension.empty());
    CHECK(static_cast<bool>(e.write));
  }
  CHECK(names == expected);
  CHECK(query::ExporterNames("|", "|") == "json|folded|hatchet|hatchet-json|pprof|csv");
  CHECK(query::ExporterNames(", ", " or ") == "json, folded, hatchet, hatchet-json, pprof or csv");
  for (const std::string& n : expected) {
    auto found = query::FindExporter(n);
    REQUIRE(found.ok());
    CHECK((*found)->name == n);
  }
}

TEST_CASE("an unknown exporter is an error naming the known ones") {
  auto found = query::FindExporter("speedscope");
  REQUIRE(!found.ok());
  CHECK(found.status().code() == cct::ErrorCode::kInvalidArgument);
  CHECK(found.status().message() ==
        "unknown export format 'speedscope' (expected json, folded, hatchet, hatchet-json, pprof or csv)");
}
