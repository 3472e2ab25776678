// Symbolizer: code addresses of this process → functions, modules, source
// lines and inlined frames. The libdw (elfutils) adapter: the only file that
// includes elfutils headers.
//
// Lookup order for a function name: DWARF (linkage name demangled, else the
// DIE name), then the ELF symbol tables (.symtab, then .dynsym), then
// "module+0xOFFSET". ELF symbols are found by binary search in a table
// sorted once per module (libdwfl's dwfl_module_addrsym scans the whole
// symbol table on every call). Results are cached per address for as long as
// the module that holds the address stays loaded: Sync() re-reads the
// process's mappings only when the loader's counters say something changed,
// and forgets only what was cached for modules that went away.
//
// Modules that were unloaded are symbolized from their files
// (LookupImage), at the bias they had, once their build id is checked.
//
// Not signal-safe (allocates, takes elfutils' internal locks). Not
// thread-safe: the collector serializes its use with a mutex.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collector/cpu/modules.h"

namespace collector {

struct SymbolFrame {
  std::string function;  // demangled
  std::string module;    // path of the shared object or executable
  std::string file;      // source file of the statement at the address ("" if unknown)
  uint32_t line = 0;     // its line (0 if unknown)
  std::string decl_file; // where the function is defined ("" if unknown)
  uint32_t decl_line = 0;
  bool inlined = false;  // an inlined instance inside the frame before it
};

// Frames for one address, outermost first: the real function, then each
// function inlined into it, the innermost last. `file`/`line` of a frame are
// where control is inside that frame (for all but the last: the inlined call
// site).
using SymbolFrames = std::vector<SymbolFrame>;

class Symbolizer {
 public:
  // For the calling process (or `pid`, for tests and tools).
  // `system_debug_info`: also read DWARF (source lines, inlined frames) of
  // the distribution's own binaries (IsSystemPath). Off by default: their
  // DWARF lives in separate, compressed debug files (libc6-dbg's is tens of
  // megabytes), and inflating it cost every short process of a build ~50 ms
  // for a handful of libc frames; their symbols still come from the symbol
  // tables, separate debug files' included.
  //
  // `symbol_cache_dir`: where the symbol tables of modules read without
  // DWARF are cached across processes (symbol_cache.h; "" = no cache). With
  // it, such modules are named from the cache and libdw is not started at
  // all unless a module needs it (DWARF, no build id, no cache file yet).
  static std::unique_ptr<Symbolizer> Create(pid_t pid = 0, bool system_debug_info = false,
                                            std::string symbol_cache_dir = "");
  // A module named from its symbol table alone, like the distribution's
  // (the collector's own library: its frames are hidden or named by
  // function, and its DWARF is large).
  void AddSymbolTableOnly(const std::string& path);
  // Every module named from its symbol table alone: no DWARF (no source
  // lines, no inlined frames), the cache used for every module with a
  // build id. For trimming stacks at a launch or an NVTX push, where only
  // the outermost function's name matters and the program is waiting.
  void UseSymbolTablesOnly();

  // Whether a path belongs to the distribution (/usr/lib, /lib, /usr/bin,
  // ...), not to the user (/usr/local, /opt, /home, Spack, Nix, a build
  // tree).
  static bool IsSystemPath(std::string_view path);
  // Why libdw (elfutils) could not be used, "" when it could or was not
  // needed yet (nothing here loads it). Without it frames are named
  // "module+0xOFFSET". Thread-safe.
  static const std::string& LibDwProblem();
  ~Symbolizer();

  // `return_address`: the address follows a call instruction (every frame
  // but the leaf); the call itself is looked up (address - 1).
  const SymbolFrames& Lookup(uintptr_t address, bool return_address);

  // Catches up with dlopen/dlclose since the last call: re-reads the
  // mappings if the loader's counters moved, and forgets the cached results
  // of modules that are gone. Cheap when nothing changed.
  void Sync();

  // An address in a module that is no longer loaded, from its file at the
  // recorded bias. When the file is gone or its build id differs, one frame
  // says so ("<unloaded code 0x… in PATH (…)>").
  const SymbolFrames& LookupImage(const ModuleImage& image, uintptr_t address, bool return_address);

  // True when the function is where a thread's stack begins (_start,
  // clone/clone3, start_thread): a stack whose outermost frame is not one of
  // these was not fully unwound.
  static bool IsThreadStart(const std::string& function);

  size_t cached() const { return cache_.size(); }
  // How many times the mappings were read (tests: no re-read storms): by
  // libdw, and for addresses outside every module (InExecutableFileMapping).
  size_t reports() const { return reports_; }
  size_t mapping_reads() const { return mapping_reads_; }

 private:
  explicit Symbolizer(pid_t pid);
  SymbolFrames Resolve(uintptr_t address);
  bool ResolveCached(uintptr_t address, SymbolFrames& out);
  // The loaded module covering an address (the loader's list, read again
  // when it changed), or null.
  const ModuleImage* LoadedImageOf(uintptr_t address);
  // Whether /proc/self/maps maps `address` executable from a file (a module
  // mapped other than by the loader, which libdw would still name). Read
  // again only when the loader's counters moved.
  bool InExecutableFileMapping(uintptr_t address);
  void EnsureDwfl();
  void Report();
  uint64_t LoaderGeneration() const;

  struct State;
  std::unique_ptr<State> state_;
  pid_t pid_;
  std::map<uint64_t, SymbolFrames> cache_;  // ordered: a module's range is erased at once
  uint64_t generation_ = 0;  // the loader's adds + subs at the last Report
  size_t reports_ = 0;
  size_t mapping_reads_ = 0;
};

// Function symbols sorted by address, for the lookup that
// dwfl_module_addrsym does by a linear scan. Pure data: names point into
// storage the caller keeps alive (libelf's string tables), or into the
// index's own (Own: the names it makes up, PLT stubs').
class SymbolIndex {
 public:
  struct Entry {
    uintptr_t start = 0;
    uint64_t size = 0;  // 0: a sizeless label
    int binding = 0;    // higher is preferred: global 3, weak 2, local 1
    uint32_t order = 0; // lower is preferred among equals
    const char* name = nullptr;
  };
  void Add(const Entry& e) { entries_.push_back(e); }
  // Keeps `name` as long as the index (and its copies' entries point to it:
  // a copy must not outlive the original); returns the pointer for Entry.
  const char* Own(std::string name) { return owned_.emplace_back(std::move(name)).c_str(); }
  // Sorts, and fills the columns Find reads; call after the last Add. Adds
  // after a Finish (PLT stubs, FDE ranges) need another: it sorts only
  // those and merges them in.
  void Finish();
  // The symbol containing `address` (the closest start, then the strongest
  // binding, then the lowest order); else the closest sizeless label not
  // covered by a sized symbol in between; else null.
  const Entry* Find(uintptr_t address) const;
  size_t size() const { return entries_.size(); }
  const Entry& entry(size_t i) const { return entries_[i]; }

  // The search Find does, over any table sorted the same way with the same
  // columns: t.start(i), t.size(i), t.max_end(i) and t.last_label(i)
  // (SIZE_MAX: none). The symbol cache's mapped files (symbol_cache.h) use
  // it too. The index of the entry, or SIZE_MAX. Memory-safe on any column
  // values (a damaged cache file): every index it reads is below n.
  template <class Table>
  static size_t FindIn(const Table& t, size_t n, uintptr_t address);
  // Finish's columns for entry i, for writers of such tables.
  uintptr_t max_end(size_t i) const { return max_end_[i]; }
  size_t last_label(size_t i) const { return last_label_[i]; }

 private:
  std::vector<Entry> entries_;
  size_t sorted_ = 0;  // entries_[0, sorted_) are in order (the last Finish's)
  std::deque<std::string> owned_;  // deque: emplace_back keeps earlier names in place
  std::vector<uintptr_t> max_end_;    // max end of the sized entries_[0..i]
  std::vector<size_t> last_label_;   // the preferred sizeless entry at or before i (SIZE_MAX: none)
};

template <class Table>
size_t SymbolIndex::FindIn(const Table& t, size_t n, uintptr_t address) {
  size_t lo = 0, hi = n;  // the first entry starting after the address
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (address < t.start(mid)) hi = mid;
    else lo = mid + 1;
  }
  if (lo == 0) return SIZE_MAX;
  const size_t last = lo - 1;
  // Sized symbols containing the address: walk down from the closest start;
  // max_end says when nothing further down reaches the address. At one
  // start the sort put the preferred symbol first.
  for (size_t i = last + 1; i-- > 0;) {
    if (t.max_end(i) <= address) break;
    if (t.size(i) != 0 && address - t.start(i) < t.size(i)) {
      size_t j = i;
      while (j > 0 && t.start(j - 1) == t.start(i)) --j;
      while (j < i && (t.size(j) == 0 || address - t.start(j) >= t.size(j))) ++j;
      return j;
    }
  }
  // The closest sizeless label (assembly), unless a sized symbol after it
  // ends between it and the address (as dwfl_module_addrsym decides).
  const size_t k = t.last_label(last);
  if (k < n && t.max_end(last) <= t.start(k)) return k;
  return SIZE_MAX;
}

// Demangles a C++ symbol; returns the input when it is not a mangled name.
std::string Demangle(const char* name);
// An ELF symbol's name as frames show it: without its symbol version
// ("clock_gettime@@GLIBC_2.17"), demangled. A PLT stub's name keeps its
// "@plt" ("_ZNSo3putEc@plt" shows as "std::ostream::put(char)@plt").
std::string SymbolDisplayName(const char* raw);
// The name of a PLT entry that jumps to no named function: the lazy
// binding header, IBT's lazy entries (plt_stubs.h).
inline constexpr const char* kPltHeaderName = "[plt]";

}  // namespace collector
