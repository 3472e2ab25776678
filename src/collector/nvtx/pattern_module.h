// The --iteration pattern inside the profiled program, through a module
// loaded only when the pattern is given.
//
// Every user pattern runs on RE2 (cct/pattern.h), but RE2 cannot be linked
// into the preloaded collector: Debian's libre2.a is built with local-exec
// TLS, which no shared object can hold, and linking libre2.so would load it
// and libstdc++ into every profiled process, --iteration or not. So
// libcct-pattern.so (beside the collector, like the CUPTI adapter) wraps
// cct::Pattern in a C ABI, and the collector dlopens it at start when
// --iteration is set.
//
// IterationPattern: loaded and compiled once at start (normal context),
// then read-only; Search is thread-safe (RE2 is) and allocates, so never
// call it from a signal handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace collector {

inline constexpr uint32_t kPatternModuleAbi = 1;
inline constexpr const char* kPatternModuleEntry = "cctdb_pattern_module_v1";
inline constexpr const char* kPatternModuleName = "libcct-pattern.so";

// What the module's entry point returns. compile: a compiled pattern, or
// null with a one-line reason in `error` (NUL-terminated, truncated to
// error_size). search: 1 when the pattern matches somewhere in the text.
struct PatternModuleAbi {
  uint32_t abi;
  void* (*compile)(const char* pattern, size_t size, char* error, size_t error_size);
  int (*search)(const void* compiled, const char* text, size_t size);
};
using PatternModuleEntry = const PatternModuleAbi* (*)();

class IterationPattern {
 public:
  // Loads `module_path` and compiles `pattern` ("--iteration pattern" in
  // messages). Returns "" or the one-line reason the pattern cannot be used.
  std::string Load(const std::string& module_path, std::string_view pattern);
  bool loaded() const { return compiled_ != nullptr; }
  bool Search(std::string_view text) const;

 private:
  const PatternModuleAbi* abi_ = nullptr;
  void* compiled_ = nullptr;  // lives as long as the process (the module is never closed)
};

}  // namespace collector
