// The table of CFI rows the processes of one recording share
// (cfi_unwinder.h, UseSharedRows): made by cct-record, mapped by each
// recorded process before it samples.
//
// The table is an anonymous memory file (memfd) sealed against shrinking
// and growing: no process can cut pages from under another's mapping,
// which would make a read in the sampling handler a SIGBUS. cct-record
// keeps the only descriptor (close-on-exec: the program never sees it) and
// hands the recorded processes a path to it, /proc/<its pid>/fd/<n>
// (CCT_RECORD_ROWS). A process that cannot open it — cct-record gone, a
// process in another pid namespace or with other credentials — keeps its
// own row cache only, as does one handed anything that is not such a table.
//
// Layout: a 64-byte header (kSharedRowsMagic, NUL-padded to 16 bytes; the
// version and the entry count, 32-bit little-endian), then `entries`
// entries of four 64-bit words. Saved between recordings in the symbol
// cache (below), so kSharedRowsVersion changes with anything that changes
// what an entry means: the words a row caches, its key, its tag. (An entry
// whose tag does not match is a miss, so a mix-up costs rows, not stacks.)
//
// Normal context; thread-compatible (called once per process, in Start).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cct/status.h"

namespace collector {

inline constexpr std::string_view kSharedRowsMagic = "cctdb-cfi-rows\n";
inline constexpr uint32_t kSharedRowsVersion = 1;
inline constexpr size_t kSharedRowsHeader = 64;
// 256 KiB. A collision only costs a recomputed row, while every page of
// the table a process touches first is a fault (~3.4 µs on the CI VM, and
// MADV_POPULATE_READ was no cheaper in a fresh process): in a recorded
// `make -j2` of 31 files this size kept the hits of 512 KiB, whose faults
// made a single program's early samples dear enough to throttle twice as
// many at 10 kHz (docs/performance.md).
inline constexpr size_t kSharedRowsEntries = size_t{1} << 13;
inline constexpr size_t kSharedRowsMaxEntries = size_t{1} << 22;

inline constexpr size_t SharedRowsBytes(size_t entries) { return kSharedRowsHeader + entries * 4 * sizeof(uint64_t); }

// The header of a table of `entries` entries (kSharedRowsHeader bytes).
std::string EncodeSharedRowsHeader(size_t entries);
// The entry count the header at the start of `bytes` states, checked
// against the file's size: an error (saying why, for a path to follow) for
// a file shorter than a header, another magic or version, a count that is
// not a power of two up to kSharedRowsMaxEntries, or a size that is not
// its entries'. Pure.
cct::Result<size_t> DecodeSharedRowsHeader(std::string_view bytes, uint64_t file_size);

// A new table, sealed; the descriptor is close-on-exec and the caller's.
cct::Result<int> CreateSharedRows(size_t entries = kSharedRowsEntries);

// The path the recorded processes open `fd` of this process by.
std::string SharedRowsPath(int fd);

// Across recordings: cct-record fills a new table from the rows a recording
// before it saved in the symbol cache directory (the rows are keyed by
// build id and offset, valid wherever that binary runs), and saves the
// table there when its program has ended. A cache: a missing, damaged or
// foreign file only means rows are computed again. It is written in place:
// two recordings saving at once, or one loading meanwhile, may mix entries
// of both tables, and a torn entry's tag makes it a miss.

// The file in cache directory `dir` that holds the saved rows.
std::string SharedRowsCachePath(const std::string& dir);
// Copies the entries of the table saved at `path` into the table `fd` (one
// CreateSharedRows made, not yet handed out). NotFound when there is no
// such file; Corrupt when it is not a table (DecodeSharedRowsHeader) or
// holds another entry count; `fd`'s table is then as it was.
cct::Status LoadSharedRows(int fd, const std::string& path);
// Saves the table `fd` at `path` (its directory made when missing).
cct::Status SaveSharedRows(int fd, const std::string& path);

// Maps the table at `path` and hands it to the walker (UseSharedRows). An
// error, and no table, when `path` cannot be opened or is not a table this
// build made: not sealed against shrinking, another size, magic or version.
// The mapping stays for the life of the process (and its fork children,
// which share it).
cct::Status AttachSharedRows(const std::string& path);

}  // namespace collector
