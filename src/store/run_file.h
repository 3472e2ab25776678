// RunFile: one process's run as a single file, outside the database.
//
// The collector writes its run here instead of into the LMDB file: a
// process then pays for neither LMDB's synchronous commits (two per process,
// about 10 ms each on a virtualized disk) nor the writer lock that parallel
// processes queue on, and loads no LMDB at all. cct-record gathers the files
// of its recording (a spool directory beside the database, see
// record/spool.h) into the database in one transaction per pass.
//
// A file holds the run's metadata, the keys that link it to the process
// that started it, and its tree, iterations and trace in the store's own
// section encoding (tree_codec.h), each section with its CRC-32. Layout: docs/format.md
// ("Run files"). Reading validates every length and checksum and decodes the
// tree: a damaged or foreign file is kCorrupt, never a crash.
//
// Writing replaces the file atomically (a temporary file, then rename), so a
// reader sees the previous checkpoint or the new one, never half of one.
// Pure functions over files; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"
#include "store/iterations.h"
#include "store/run_meta.h"
#include "store/trace.h"
#include "store/tree_codec.h"

namespace store {

inline constexpr std::string_view kRunFileMagic = "cctdb-run-file\n";  // 15 bytes + NUL
// Version 2: a run file may hold a trace (kind 8). A file without one is
// written as version 1, which readers from before traces take as well.
inline constexpr uint32_t kRunFileVersion = 2;
inline constexpr std::string_view kRunFileSuffix = ".run";

// A run as a file holds it, encoded: what the database stores, plus the
// keys of the recording's process tree. Keys are the collector's own (a
// random 64-bit value in hex per process image); the database's run ids
// are assigned when the run is stored.
struct RunFile {
  RunMeta meta;            // meta.id is 0: not stored yet
  std::string key;         // this run's key
  std::string parent_key;  // the run of the process that started this one ("": none recorded)
  std::string root_key;    // the invocation's root run ("": this run is the root)
  std::vector<Section> sections;  // the tree's, iterations' and trace's (EncodeRun), CRCs checked
};

// The sections a run stores: its tree, and its iterations and trace mapped
// to the stored node ids. Sets meta.node_count (and an empty
// iteration_regex). Iterations or a trace without a tree are
// kInvalidArgument.
cct::Result<std::vector<Section>> EncodeRun(RunMeta& meta, const cct::Tree* tree, const RunIterations* iterations,
                                            const RunTrace* trace = nullptr);

// Encodes a run file's bytes.
std::string EncodeRunFile(const RunFile& run);
// Decodes and validates (lengths, checksums, the tree, iterations and trace
// decode) a run file's bytes.
cct::Result<RunFile> DecodeRunFile(std::string_view bytes);

// Writes `bytes` to `tmp`, then renames it to `path`: a reader sees the old
// file or the new one, never part of one. No fsync: the file outlives the
// process, not the machine. kIo (and no `tmp` left) when it cannot.
cct::Status WriteFileAtomically(const std::string& path, std::string_view bytes, const std::string& tmp);

// Reads a file whole, or its first `limit` bytes, with plain reads (no
// iostreams: in the collector their locale set-up alone costs a profiled
// process more than the reading). kIo when it cannot be opened or read.
cct::Result<std::string> ReadWholeFile(const std::string& path, size_t limit = SIZE_MAX);

// Writes `run` to `path` atomically (WriteFileAtomically through path + ".tmp").
cct::Status WriteRunFile(const std::string& path, const RunFile& run);
// The same with the run already encoded (EncodeRunFile).
cct::Status WriteRunFile(const std::string& path, std::string_view encoded);
// Reads and decodes a run file (errors name the path).
cct::Result<RunFile> ReadRunFile(const std::string& path);

// --- cct-record's inbox (record/inbox.h) ---
// A process whose run has no file in the spool yet (one that ends within
// the start write's delay: most of a build's) sends its final write to
// cct-record over the Unix stream socket SPOOL/inbox instead of creating a
// file: creating, renaming and later removing a file per process cost it
// a quarter of its recording overhead (docs/performance.md). A message is
// one frame: kInboxMagic, the payload's length (u64, little-endian), then
// the run file's bytes (EncodeRunFile). cct-record appends each message it
// receives to SPOOL/inbox.journal, the same frames back to back, until the
// runs are stored: a recorder killed in between leaves them to the next.
inline constexpr std::string_view kInboxSocketName = "inbox";
inline constexpr std::string_view kInboxJournalName = "inbox.journal";
inline constexpr std::string_view kInboxMagic = "cctinbx1";
inline constexpr size_t kInboxHeaderSize = 16;
// A run without a file is a short process's (or one whose file could not
// be written): far below this. Larger ones are written as files.
inline constexpr uint64_t kInboxMaxPayload = uint64_t{16} << 20;

std::string InboxFrameHeader(uint64_t payload_size);
// The payload length the kInboxHeaderSize bytes of `header` announce;
// kCorrupt for a wrong magic or a length over kInboxMaxPayload.
cct::Result<uint64_t> ParseInboxFrameHeader(std::string_view header);

struct InboxFrames {
  std::vector<std::string_view> payloads;  // views into the bytes split
  bool torn = false;     // the bytes end inside a frame (its writer stopped)
  bool damaged = false;  // a header is not one: what follows it is not read
};
// Splits back-to-back frames (a journal).
InboxFrames SplitInboxFrames(std::string_view bytes);

}  // namespace store
