// Inputs of a comparison: a RUN selector resolved into a Side.
//
//   RUN, RUN@iter=K, RUN@iter=median   one member, loaded as written
//   tag:K=V                            every run with the tag, one member each
//   RUN@iter=K..J                      iterations K to J, one member each
//   tag:K=V@iter=K                     iteration K of every run with the tag
//   PATH:SELECTOR                      any of these in another database
//
// Trees are loaded through a TreeLoader, so the tool can route every load
// through the reader the reports use (query::LoadProfile, which folds source
// lines and knows iterations) while this library depends on the store only.
// Group members are loaded by run id (and iteration), never by re-resolving
// the selector, so a run recorded meanwhile cannot slip into a group.
//
// Pure functions apart from reading the database; thread-compatible.
#pragma once

#include <functional>
#include <string>

#include "cct/status.h"
#include "diff/diff.h"

namespace diff {

// Loads one run (or one iteration: "12@iter=3") from the database at
// `db_path`.
using TreeLoader = std::function<cct::Result<RunTree>(const std::string& selector, const std::string& db_path)>;

cct::Result<Side> LoadSide(const std::string& selector, const std::string& default_db, const TreeLoader& loader);

// A loader that reads trees straight from the store: no line folding, and
// iterations are refused (for tests and tools without the query library).
TreeLoader StoreLoader();

}  // namespace diff
