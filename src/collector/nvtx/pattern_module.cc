// libcct-pattern.so: cct::Pattern behind the C ABI of pattern_module.h.
// Exports cctdb_pattern_module_v1 only (pattern_module_exports.map).
#include <cstring>

#include "cct/pattern.h"
#include "collector/nvtx/pattern_module.h"

namespace {

void* Compile(const char* pattern, size_t size, char* error, size_t error_size) {
  auto compiled = cct::Pattern::Compile(std::string_view(pattern, size), "--iteration pattern");
  if (!compiled.ok()) {
    if (error_size > 0) {
      const std::string& m = compiled.status().message();
      const size_t n = std::min(m.size(), error_size - 1);
      std::memcpy(error, m.data(), n);
      error[n] = '\0';
    }
    return nullptr;
  }
  return new (std::nothrow) cct::Pattern(std::move(compiled).value());
}

int Search(const void* compiled, const char* text, size_t size) {
  return static_cast<const cct::Pattern*>(compiled)->Search(std::string_view(text, size)) ? 1 : 0;
}

const collector::PatternModuleAbi kAbi = {collector::kPatternModuleAbi, Compile, Search};

}  // namespace

extern "C" __attribute__((visibility("default"))) const collector::PatternModuleAbi* cctdb_pattern_module_v1() {
  return &kAbi;
}
