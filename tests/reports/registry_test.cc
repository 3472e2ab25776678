// The reports' registry: cct-query's commands and the options each takes
// (docs/cli.md's table), and lookup errors.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include "reports/registry.h"

TEST_CASE("the report registry lists cct-query's reports and their options") {
  // docs/cli.md, "command | positional | options" (export is the exporters').
  const std::map<std::string, std::set<std::string>> expected = {
      {"runs", {}},
      {"show", {"merge-threads"}},
      {"metrics", {"merge-threads"}},
      {"tree", {"metric", "depth", "min", "focus", "query", "lines", "merge-threads"}},
      {"top", {"metric", "n", "by", "inclusive", "exclusive", "query", "merge-threads"}},
      {"callers", {"metric", "depth", "min", "lines", "merge-threads"}},
      {"match", {"metric", "n", "inclusive", "exclusive", "lines", "merge-threads"}},
      {"iterations", {"metric", "range"}},
      {"timeline", {"thread", "from", "to", "bucket", "by"}},
      {"flame", {"output", "metric", "title", "min-width", "image-width", "orientation", "lines",
                 "merge-threads"}},
      {"kernels", {"metric", "n"}},
      {"table", {"by", "metric", "nodes", "confidence", "baseline"}},
      {"stats", {"metric", "depth", "min", "focus", "n", "by", "exclusive", "percentiles", "merge-threads", "lines"}},
      {"derive", {"drop", "query", "keep-min", "merge-threads", "normalize", "metric", "name", "tag", "replace"}},
      {"check", {}},
  };
  std::map<std::string, std::set<std::string>> listed;
  for (const reports::ReportInfo& r : reports::Reports()) {
    listed[std::string(r.name)] = std::set<std::string>(r.options.begin(), r.options.end());
    CHECK(!r.description.empty());
    CHECK(r.min_args <= r.max_args);
    CHECK(static_cast<bool>(r.run));
    CHECK(r.writes_output == (listed[std::string(r.name)].count("output") > 0));
    CHECK(r.writes_database == (r.name == "derive"));  // the one command that writes runs
  }
  CHECK(listed == expected);
  CHECK((*reports::FindReport("callers"))->min_args == 2);
  CHECK((*reports::FindReport("match"))->min_args == 2);
  CHECK((*reports::FindReport("match"))->max_args == 2);
  CHECK((*reports::FindReport("runs"))->min_args == 0);
}

TEST_CASE("an unknown report is an error") {
  auto found = reports::FindReport("export");  // the exporters' command, not a report
  REQUIRE(!found.ok());
  CHECK(found.status().code() == cct::ErrorCode::kInvalidArgument);
  CHECK(found.status().message() == "unknown command 'export' (see cct-query --help)");
}
