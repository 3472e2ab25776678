// Symbolizer: code addresses of this process → functions, modules, source
// lines and inlined frames. The libdw (elfutils) adapter: the only file that
// includes elfutils headers.
//
// Lookup order for a function name: DWARF (linkage name demangled, else the
// DIE name), then the ELF symbol tables (.symtab, then .dynsym), then
// "module+0xOFFSET". Results are cached per address; Refresh() re-reads the
// process's mappings after a library is loaded or unloaded.
//
// Not signal-safe (allocates, takes elfutils' internal locks). Not
// thread-safe: the collector serializes its use with a mutex.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

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
  static std::unique_ptr<Symbolizer> Create(pid_t pid = 0);
  ~Symbolizer();

  // `return_address`: the address follows a call instruction (every frame
  // but the leaf); the call itself is looked up (address - 1).
  const SymbolFrames& Lookup(uintptr_t address, bool return_address);

  // Re-reads the process's mappings and forgets cached results.
  void Refresh();

  // True when the function is where a thread's stack begins (_start,
  // clone/clone3, start_thread): a stack whose outermost frame is not one of
  // these was not fully unwound.
  static bool IsThreadStart(const std::string& function);

  size_t cached() const { return cache_.size(); }

 private:
  explicit Symbolizer(pid_t pid);
  SymbolFrames Resolve(uintptr_t address);
  void Report();

  struct State;
  std::unique_ptr<State> state_;
  pid_t pid_;
  std::unordered_map<uint64_t, SymbolFrames> cache_;
};

// Demangles a C++ symbol; returns the input when it is not a mangled name.
std::string Demangle(const char* name);

}  // namespace collector
