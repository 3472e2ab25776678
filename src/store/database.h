// Database: a cctdb file holding many runs (metadata + tree + values).
//
// Opening checks LMDB's header, then our magic and format version; a
// damaged, foreign or newer file yields a Status (kCorrupt / kVersion), never
// a crash. Writers take LMDB's single-writer lock for one short transaction
// at a time, so many processes may record into one file at once.
//
// Ownership: a Database owns its LMDB environment. Thread-safety: methods may
// be called from several threads (each call runs its own transaction).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "store/iterations.h"
#include "store/lmdb_env.h"
#include "store/run_file.h"
#include "store/run_meta.h"
#include "store/trace.h"
#include "store/tree_codec.h"

namespace store {

// Version 2 (docs/format.md): run records name their invocation's root run
// (root_run), and `latest`/NAME select invocation roots. Version 3: summary
// metrics (kind "summary", aggregate runs) with their inclusive values in
// sections of kind 9, which a version 2 reader would sum as additive.
// Older files are read as they are and upgraded when opened for writing
// (every version 1 or 2 file is a valid version 3 file).
inline constexpr uint32_t kFormatVersion = 3;
inline constexpr std::string_view kMagic = "cctdb-profile-database";

// The database path to use: the explicit one, else $CCT_DB, else ./cct.db.
std::string DefaultDatabasePath(const std::string& explicit_path = "");

class Database {
 public:
  // kWriteAlone: kWrite for a file no other process opens meanwhile, without
  // LMDB's lock file (a network file system, where it cannot work).
  enum class Mode { kRead, kWrite, kWriteAlone };
  // kWrite creates the file when absent, with permissions `file_mode`.
  static cct::Result<std::unique_ptr<Database>> Open(const std::string& path, Mode mode,
                                                     unsigned file_mode = kDatabaseFileMode);

  const std::string& path() const { return env_->path(); }

  // All runs' metadata, in id (creation) order; with `from`, only the runs
  // whose ids are `from` or above (those created since NextRunId said
  // `from`: a recording's own, without reading a long history's); with
  // `to` (not 0), only those below it.
  cct::Result<std::vector<RunMeta>> ListRuns(RunId from = 1, RunId to = 0);
  // The runs stored from the run files with these keys (format.md,
  // `run_key:KEY`), for the keys stored runs have: key → id. Reads the
  // index only; it holds every run's key in a file any writer of this
  // version has opened (Open indexes older runs once).
  cct::Result<std::map<std::string, RunId>> FindRunKeys(const std::vector<std::string>& keys);
  cct::Result<RunMeta> GetRun(RunId id);
  // The id the next new run gets: every run id so far is below it.
  cct::Result<RunId> NextRunId();

  // Assigns meta.id and stores the metadata (and the tree, when given, and
  // its iterations and trace, when given) in one transaction. Iterations and
  // traces need the tree: their node ids are `tree`'s, mapped to stored ids
  // as the tree is renumbered. With iterations, an empty meta.iteration_regex
  // is set to iterations->range. Bad iterations (see EncodeIterations) or a
  // bad trace (EncodeTrace) are kInvalidArgument and nothing is written.
  cct::Status CreateRun(RunMeta& meta, const cct::Tree* tree = nullptr, const RunIterations* iterations = nullptr,
                        const RunTrace* trace = nullptr);
  // Replaces the run's metadata, and its tree when given, in one transaction.
  // A tree replaces the iterations and the trace too: each given is written
  // beside it, each not given is removed (its node ids would name the old
  // tree's nodes).
  cct::Status UpdateRun(const RunMeta& meta, const cct::Tree* tree = nullptr,
                        const RunIterations* iterations = nullptr, const RunTrace* trace = nullptr);
  // Replaces only the run's metadata (e.g. to mark it crashed).
  cct::Status UpdateMeta(const RunMeta& meta) { return UpdateRun(meta, nullptr); }
  // Stores many runs (read from run files) in one transaction: one commit,
  // one sync, however many processes a recording had. A run whose meta.id is
  // 0 gets the next id; one with an id replaces that run's metadata, and its
  // tree and iterations when it has sections. `link` sees each run once its
  // id is known, before its record is written (cct-record turns the run
  // files' keys into parent and root run ids there). A run with sections
  // replaces all of the stored ones (tree, iterations, trace). A failure
  // stores none.
  cct::Status PutRuns(std::vector<RunFile>& runs, const std::function<void(RunFile&)>& link = nullptr);
  cct::Status DeleteRun(RunId id);

  // The run's tree (without iterations or trace: a damaged iteration or
  // trace section does not make the tree unreadable, only ReadIterations or
  // ReadTrace fails on it).
  // `record`, when given, receives the run record read in the same
  // transaction: another process may replace the run between two reads,
  // and a tree compared with a record read apart from it may not match.
  cct::Result<cct::Tree> ReadTree(RunId id, RunMeta* record = nullptr);
  // The run's iterations, nullopt when it has none stored. Node ids are those
  // of the tree ReadTree returns. kCorrupt when the section is damaged or
  // does not fit the stored tree.
  cct::Result<std::optional<RunIterations>> ReadIterations(RunId id);
  // The run's trace, nullopt when it has none stored (recorded without
  // --trace). Node ids are those of the tree ReadTree returns. kCorrupt when
  // the section is damaged or does not fit the stored tree.
  cct::Result<std::optional<RunTrace>> ReadTrace(RunId id);
  // Extra sections beside the tree (e.g. per-iteration values).
  cct::Status WriteSection(RunId id, const Section& section);
  cct::Result<std::optional<Section>> ReadSection(RunId id, SectionKind kind, uint16_t arg = 0);

  // Bytes of the run's stored sections, by kind (for `show` and benchmarks).
  cct::Result<std::vector<std::pair<SectionKind, uint64_t>>> SectionSizes(RunId id);

 private:
  explicit Database(std::unique_ptr<LmdbEnv> env) : env_(std::move(env)) {}
  cct::Status Init(Mode mode);
  cct::Result<RunId> ReadRunCounter(LmdbTxn& txn);  // meta "next_run_id"
  cct::Status CompleteRunKeyIndex(LmdbTxn& txn);    // Init, for a writer
  cct::Status PutSections(LmdbTxn& txn, RunId id, const std::vector<Section>& sections);
  // The tree's sections of the run (kinds 1-5; no iterations, no trace),
  // viewed in place in the map (valid while `txn` is open), checksums
  // verified.
  cct::Result<std::vector<SectionPieces>> GetTreePieces(LmdbTxn& txn, RunId id);
  // The stored tree's node count, from its nodes section's first chunk (its
  // checksum is ReadTree's to verify): what iteration and trace node ids
  // are checked against.
  cct::Result<uint32_t> StoredNodeCount(LmdbTxn& txn, RunId id, const char* what);
  // One section, its chunks joined and checked; nullopt when absent.
  cct::Result<std::optional<Section>> GetSection(LmdbTxn& txn, RunId id, SectionKind kind, uint16_t arg);

  std::unique_ptr<LmdbEnv> env_;
  Dbi meta_ = 0, runs_ = 0, blobs_ = 0;
};

// Chunks of one stored section: values of at most this many bytes.
inline constexpr size_t kChunkBytes = 1 << 20;

}  // namespace store
