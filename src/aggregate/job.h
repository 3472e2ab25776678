// AggregateRuns: the aggregate run of a job (or any group of runs), computed
// by a parallel reduction and stored as one run (cct-aggregate).
//
// Units: when every selected run has a launcher rank (store::LauncherRank),
// one per rank ("rank R", in rank order, a rank's runs merged), as
// query::ProfileUnits forms a group of ranked runs; else one per run ("run 3
// 'name'"), in selection order. Each unit's tree is read with source-line and thread nodes
// folded (what `tree` shows by default). The transport's ranks each take a
// contiguous share of the units, reduce it with threads (each thread a
// contiguous share, then partials combined pairwise in unit order), then
// the ranks combine pairwise in a binary tree; rank 0 stores the run.
//
// Stateless; the transport is the caller's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "aggregate/transport.h"
#include "cct/status.h"
#include "store/run_meta.h"

namespace aggregate {

struct AggregateRequest {
  std::vector<std::string> selectors;  // RUN selectors; PATH:SEL reads another database
  std::string default_db;              // where selectors without PATH: look
  std::string out_db;                  // where the run goes; "" = default_db
  std::string name;                    // the run's name; "" = "aggregate of SEL ..."
  std::map<std::string, std::string> tags;
  unsigned threads = 0;   // per process; 0: the machine's hardware threads
  bool dry_run = false;   // compute and describe, store nothing
};

struct AggregateResult {
  store::RunId id = 0;  // the stored run (rank 0; 0 when dry_run)
  size_t units = 0;
  size_t nodes = 0;
  double read_reduce_s = 0;  // reading and reducing, this process's share and the combination
  double total_s = 0;        // from selection to the stored run
  std::string summary;       // one paragraph (rank 0)
};

// Errors in selecting the runs are every rank's (the same on each); an error
// in reading or reducing a rank's own share sets *own_failure on that rank
// (the others then return kInternal "another rank failed").
cct::Result<AggregateResult> AggregateRuns(const AggregateRequest& request, Transport& transport,
                                           bool* own_failure = nullptr);

}  // namespace aggregate
