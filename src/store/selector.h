// RUN selectors: how users name runs on every command line.
//
//   ID            a run id                    3
//   latest        the newest run              latest, latest~2 (two before it)
//   NAME          the newest run with a name  baseline
//   tag:K=V       every run with that tag     tag:commit=abc123 (a group)
//   PATH:SEL      SEL in another database     old.db:latest, ../a.db:tag:k=v
//   SEL@iter=K    one iteration of a run      latest@iter=3, 5@iter=2..4, 5@iter=median
//
// PATH is recognised when the text before the first ':' names an existing
// file or ends in ".db". Parsing is pure; SelectRuns reads run metadata.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"
#include "store/database.h"

namespace store {

struct IterationSpec {
  uint32_t first = 0;  // 1-based, inclusive
  uint32_t last = 0;
  bool median = false;  // the run's median iteration (by the chosen metric)
};

struct RunSelector {
  enum class Kind { kId, kLatest, kName, kTag };
  std::string text;     // as the user wrote it
  std::string db_path;  // the database it refers to
  Kind kind = Kind::kLatest;
  RunId id = 0;
  uint32_t back = 0;  // latest~back
  std::string name, tag_key, tag_value;
  std::optional<IterationSpec> iteration;

  bool is_group() const { return kind == Kind::kTag; }
};

cct::Result<RunSelector> ParseSelector(std::string_view text, const std::string& default_db);

// The runs a selector names, oldest first; kNotFound (with the runs that are
// there, in one line) when it names none.
cct::Result<std::vector<RunMeta>> SelectRuns(Database& db, const RunSelector& selector);

// "3 'name' (complete), 4 (crashed), ..." for error messages; the newest `max`.
std::string DescribeRuns(const std::vector<RunMeta>& runs, size_t max = 12);

}  // namespace store
