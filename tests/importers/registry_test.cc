// The importers' registry: cct-import's --from values (docs/cli.md) and
// lookup errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "importers/registry.h"

TEST_CASE("the importer registry lists cct-import's formats") {
  // docs/cli.md, cct-import's "Formats:".
  const std::vector<std::string> expected = {"folded", "hatchet", "hpctoolkit", "caliper", "perf",
                                             "pprof",  "speedscope", "nsys", "ncu-csv", "cupti-raw"};
  std::vector<std::string> names;
  for (const importers::ImporterInfo& i : importers::Importers()) {
    names.emplace_back(i.name);
    CHECK(!i.description.empty());
    CHECK(!i.help.empty());
    CHECK(static_cast<bool>(i.flow));
    // Only ncu-csv attaches to an existing run, and only it takes --run.
    const bool attaches = i.produces == importers::ImportProduces::kAttachToRun;
    CHECK(attaches == (i.name == "ncu-csv"));
    CHECK(attaches == (std::find(i.options.begin(), i.options.end(), "run") != i.options.end()));
  }
  CHECK(names == expected);
  CHECK(importers::ImporterNames() ==
        "folded, hatchet, hpctoolkit, caliper, perf, pprof, speedscope, nsys, ncu-csv or cupti-raw");
  for (const std::string& n : expected) {
    auto found = importers::FindImporter(n);
    REQUIRE(found.ok());
    CHECK((*found)->name == n);
  }
}

TEST_CASE("an unknown importer is an error naming the known ones") {
  auto found = importers::FindImporter("tau");
  REQUIRE(!found.ok());
  CHECK(found.status().code() == cct::ErrorCode::kInvalidArgument);
  CHECK(found.status().message() ==
        "unknown format 'tau' (expected folded, hatchet, hpctoolkit, caliper, perf, pprof, speedscope, nsys, "
        "ncu-csv or cupti-raw)");
}
