// CheckDatabase: what `cct-query check DB` reports — every run of a
// database read back whole (tree, iterations, trace), its sections'
// checksums and its tree's invariants verified, and the damaged runs named.
//
// LMDB trusts its pages: a damaged branch page can make it assert (abort)
// or follow a wild pointer. So the reading is done in child processes: one
// walks the run table, another reads the runs one after another; when a
// child dies or stalls on a run, that run is recorded as damaged and a new
// child goes on with the next. The check itself therefore finishes on any
// file and names everything that can still be read.
//
// Not for the collector (it forks). Call from one thread at a time; the
// children are waited for before it returns.
#pragma once

#include <string>
#include <vector>

#include "cct/status.h"
#include "store/run_meta.h"

namespace store {

struct RunCheck {
  RunId id = 0;
  std::string name;     // "" when the run record is unreadable
  std::string problem;  // "" when the run is intact
};

struct DatabaseCheck {
  std::string path;
  std::vector<RunCheck> runs;   // in id order
  // Set when the run table could not be walked to its end: the runs were
  // then found by trying every id below the database's run counter.
  std::string listing_problem;
  size_t damaged() const;
};

// kNotFound / kCorrupt / kIo when the file cannot be opened as a cctdb
// database at all (missing, foreign, damaged header, unreadable run counter
// and run table); every other damage is in the result. `timeout_s` bounds
// the reading of one run.
cct::Result<DatabaseCheck> CheckDatabase(const std::string& path, double timeout_s = 60);

}  // namespace store
