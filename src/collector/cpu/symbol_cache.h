// SymbolCache: sorted symbol tables of modules, one file per build id,
// shared by every process on the machine.
//
// A build of a C project runs a hundred short processes; each used to read
// libc's symbol table (from its separate debug file: tens of thousands of
// symbols), sort it and throw it away to name a handful of frames. The
// first process that needs a module's table now writes it here, sorted and
// with names demangled; every later one maps the file and binary-searches
// it (SymbolIndex::FindIn), touching a few pages. Keyed by build id, so a
// rebuilt or upgraded library gets its own file; modules without a build id
// are not cached.
//
// Used for the symbol tables alone: modules whose DWARF is read (source
// lines, inlined frames) go through libdw as before (Symbolizer). Layout of
// a file: docs/format.md ("Symbol cache files"). Opening checks the header
// and sizes; lookups check every offset against the file: a damaged or
// foreign file is refused or yields no name, never a crash.
//
// A SymbolCacheFile owns its mapping. Not thread-safe (the collector
// serializes symbolization). Not signal-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cct/status.h"
#include "collector/cpu/symbolizer.h"

namespace collector {

inline constexpr std::string_view kSymbolCacheMagic = "cctdb-symcache\n";  // 15 bytes + NUL
// 2: nameless entries for the functions only an FDE describes (stripped
// code); version 1 files lack them and are written again.
// 3: PLT stubs, named "function@plt" (plt_stubs.h); version 2 files named
// them from the FDE over the whole table, and are written again.
inline constexpr uint32_t kSymbolCacheVersion = 3;

// The default directory: $XDG_CACHE_HOME/cctdb/symbols, else
// $HOME/.cache/cctdb/symbols; "" when neither is set.
std::string DefaultSymbolCacheDir();

// The file for a build id (raw bytes) in `dir`: DIR/HEX.sym.
std::string SymbolCachePath(const std::string& dir, const std::string& build_id);

// A table's cache file bytes: `index` (addresses relative to the module's
// load bias) with names as `name_of` gives them (demangled).
std::string EncodeSymbolCache(const std::string& build_id, const SymbolIndex& index,
                              std::string (*name_of)(const char* raw));

class SymbolCacheFile {
 public:
  // Maps and checks a cache file. kNotFound when there is none; kCorrupt
  // when it is damaged, foreign, or for another build id.
  static cct::Result<std::unique_ptr<SymbolCacheFile>> Open(const std::string& path, const std::string& build_id);
  // The same checks over bytes in memory (tests, the fuzz target); the
  // bytes must outlive the result.
  static cct::Result<std::unique_ptr<SymbolCacheFile>> FromBytes(std::string_view bytes, const std::string& build_id);
  ~SymbolCacheFile();
  SymbolCacheFile(const SymbolCacheFile&) = delete;
  SymbolCacheFile& operator=(const SymbolCacheFile&) = delete;

  // The name of the symbol containing `address` (relative to the load
  // bias), as SymbolIndex::Find would choose it; "" when none, or when the
  // entry is a nameless function's range (an FDE's). `start`, when given,
  // receives the entry's start (relative to the bias) when there is one.
  std::string_view Find(uintptr_t address, uintptr_t* start = nullptr) const;
  size_t size() const { return count_; }

  // Column accessors for SymbolIndex::FindIn.
  uintptr_t start(size_t i) const;
  uint64_t size(size_t i) const;
  uintptr_t max_end(size_t i) const;
  size_t last_label(size_t i) const;

 private:
  SymbolCacheFile() = default;
  const unsigned char* entries_ = nullptr;
  const char* names_ = nullptr;
  size_t count_ = 0, names_size_ = 0;
  void* map_ = nullptr;
  size_t map_size_ = 0;
};

// Writes bytes to `path` atomically (a temporary file, then rename), making
// the directory if needed. Concurrent writers of the same build id write the
// same bytes; the last rename wins.
cct::Status WriteSymbolCache(const std::string& path, const std::string& bytes);

}  // namespace collector
