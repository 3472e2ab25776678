// Spool: where a recording's processes leave their runs, and how cct-record
// gathers them into the database.
//
// Each recorded process writes one run file (store/run_file.h) into the
// recording's spool directory, DB.spool/SESSION/, at its start, at each
// checkpoint and at its end; it never opens the database. cct-record
// gathers the files that changed into the database while the program runs
// (every checkpoint interval) and once more after it: one transaction per
// pass, so a build's hundred short processes cost one commit instead of two
// synchronous commits each. Run files carry keys, not run ids: gathering
// assigns the ids and turns the parent and root keys into parent_run and
// root_run, and records the key in the run's metadata (extra.run_key) so a
// later pass can still link a child to a parent stored earlier.
//
// A file is removed once its run is stored and its process is gone. A
// process that outlives cct-record (a daemon) leaves its file behind; so
// does a recording whose cct-record was killed. Directories whose owner (the
// "owner" file: pid and start time of the cct-record that made them) is
// gone are abandoned: the next cct-record into the same database gathers
// them first (GatherAbandoned). A file that cannot be read is renamed
// NAME.bad and reported, never deleted.
//
// Not thread-safe; cct-record is single-threaded.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cct/status.h"
#include "record/inbox.h"
#include "store/database.h"

namespace record {

// The directory that holds a database's spool directories: `root` when
// given (record/output.h: node-local storage for a database on a network
// file system), else DB.spool.
std::string SpoolRoot(const std::string& db_path, const std::string& root = "");

class Spool {
 public:
  // Makes DB.spool/SESSION/ with its owner file (this process), atomically:
  // made as DB.spool/.SESSION, then renamed, so no other recorder sees it
  // without its owner. Safe against recorders into the same database
  // starting and finishing (removing an empty DB.spool) at the same time. A
  // recorder killed between the two steps leaves its dot directory behind.
  // `root` replaces DB.spool when given (record/output.h: node-local
  // storage for a database on a network file system); made when missing.
  static cct::Result<Spool> Create(const std::string& db_path, const std::string& session,
                                   const std::string& root = "");
  // A spool directory someone else made (for gathering abandoned ones).
  static Spool Existing(std::string dir) { return Spool(std::move(dir)); }

  const std::string& dir() const { return dir_; }
  // The inbox Create opened (record/inbox.h), for RunProgram's wait loop;
  // nullptr when there is none (the processes write files).
  Inbox* inbox() const { return inbox_.get(); }
  // The path by which the recorded processes open the CFI row table they
  // share (collector/cpu/shared_rows.h), which Create made and this spool
  // holds; "" when there is none (each process keeps its own rows).
  std::string rows_path() const;
  // Fills that table from the rows a recording before saved at `path`, and
  // saves it there once the program has ended (collector/cpu/shared_rows.h,
  // LoadSharedRows and SaveSharedRows): a cache, so the caller may go on
  // whatever they return. NotFound when there is no table.
  cct::Status LoadRows(const std::string& path);
  cct::Status SaveRows(const std::string& path) const;
  // Stops the inbox (Inbox::Close): before the pass after the program.
  void CloseInbox(int timeout_ms, bool senders_alive = true) {
    if (inbox_) inbox_->Close(timeout_ms, senders_alive);
  }

  struct Pass {
    size_t stored = 0;     // runs created or updated
    size_t removed = 0;    // files removed (run stored, process gone)
    size_t left = 0;       // files kept: their processes still run
    size_t damaged = 0;    // files renamed .bad
  };
  // Stores every run file that changed since the last pass and the runs
  // the inbox received (or, in a directory whose recorder is gone, its
  // journal holds), in one transaction; removes the files whose processes
  // are gone. Damaged files are renamed NAME.bad, damaged messages saved as
  // inbox-N.bad, with one line each on `warn`.
  cct::Result<Pass> Gather(store::Database& db, std::ostream& warn);
  // Removes the directory when no file is left in it, and DB.spool when it
  // is empty then. Returns whether the directory is gone.
  bool RemoveIfEmpty() const;

 private:
  explicit Spool(std::string dir) : dir_(std::move(dir)) {}
  // Adds to ids_ the stored runs of those keys it does not have yet.
  cct::Status FindStoredKeys(store::Database& db, const std::vector<std::string>& keys);

  struct Seen {
    uint64_t inode = 0;
    int64_t mtime_ns = 0;
    int64_t size = 0;
    bool operator==(const Seen&) const = default;
  };
  std::string dir_;
  struct Stored {
    Seen seen;
    store::RunMeta meta;
  };
  std::map<std::string, Stored> stored_;         // file name → what the last pass stored
  std::map<std::string, store::RunId> ids_;      // run key → run id
  std::unique_ptr<Inbox> inbox_;
  // The shared row table's descriptor (close-on-exec), closed with the spool.
  struct RowsFd {
    int fd = -1;
    RowsFd() = default;
    RowsFd(RowsFd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
    RowsFd& operator=(RowsFd&& o) noexcept;
    ~RowsFd();
  } rows_;
  std::vector<std::string> messages_;  // taken from the inbox, not stored yet (a pass failed)
  size_t bad_messages_ = 0;
};

// Gathers the spool directories under DB.spool whose owner is gone (and the
// "unowned" one of processes preloaded without cct-record), one line on
// `out` when it stored anything. Directories of live recordings are left
// alone.
// `root` replaces DB.spool as in Spool::Create.
cct::Status GatherAbandoned(store::Database& db, const std::string& db_path, std::ostream& out,
                            const std::string& root = "");

}  // namespace record
