// MergeDatabases: copies every run of input databases into one (cct-merge),
// e.g. the per-rank or per-node files of a job recorded where one shared
// file could not be.
//
// Each run keeps everything stored for it (metadata, tree, iterations,
// trace); run ids are renumbered in OUT, and parent_run/root_run rewritten
// to the new ids. A run already in OUT is stored once: the same run key
// (meta.extra["run_key"], the collector's unique key per run), or, for runs
// without one (imports, derived runs), the same content digest (metadata
// but ids, and the stored sections). So merging the same inputs twice
// changes nothing. One write transaction per input: a damaged input leaves
// OUT as the inputs before it made it.
//
// Stateless; opens and closes the databases it names.
#pragma once

#include <string>
#include <vector>

#include "cct/status.h"
#include "store/run_meta.h"

namespace aggregate {

struct MergeRequest {
  std::string out_db;
  std::vector<std::string> inputs;
  bool dry_run = false;  // list what would be merged; write nothing
};

struct MergeInputReport {
  std::string path;
  std::vector<std::pair<store::RunId, store::RunId>> added;    // input id -> OUT id (0 on a dry run)
  std::vector<std::pair<store::RunId, store::RunId>> present;  // input id -> the OUT run it already is
};

// Merges input by input; on an error, the reports of the inputs merged
// before it are in `done` (when given).
cct::Result<std::vector<MergeInputReport>> MergeDatabases(const MergeRequest& request,
                                                          std::vector<MergeInputReport>* done = nullptr);

// One line per input: "IN: 4 runs added (ids 5-8), 0 already in OUT".
std::string DescribeMerge(const MergeRequest& request, const std::vector<MergeInputReport>& reports);

// The digest that tells runs without a run key apart: 64 bits over the
// metadata (but id, parent_run, root_run) and the stored sections.
uint64_t RunDigest(const store::RunMeta& meta, const std::vector<std::string>& framed_sections);

}  // namespace aggregate
