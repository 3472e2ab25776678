// IterationPattern (pattern_module.h): the collector's side of the pattern
// module. Normal context only.
#include <dlfcn.h>

#include "collector/nvtx/pattern_module.h"

namespace collector {

std::string IterationPattern::Load(const std::string& module_path, std::string_view pattern) {
  void* module = dlopen(module_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    const char* e = dlerror();
    return "cannot load " + module_path + " (it matches --iteration): " + (e ? e : "unknown error");
  }
  auto entry = reinterpret_cast<PatternModuleEntry>(dlsym(module, kPatternModuleEntry));
  const PatternModuleAbi* abi = entry ? entry() : nullptr;
  if (!abi || abi->abi != kPatternModuleAbi || !abi->compile || !abi->search) {
    dlclose(module);
    return module_path + " is not a pattern module of this cctdb version";
  }
  char error[512] = {};
  void* compiled = abi->compile(pattern.data(), pattern.size(), error, sizeof error);
  if (!compiled) return error[0] ? std::string(error) : "invalid --iteration pattern";
  abi_ = abi;
  compiled_ = compiled;
  return "";
}

bool IterationPattern::Search(std::string_view text) const {
  return compiled_ && abi_->search(compiled_, text.data(), text.size()) != 0;
}

}  // namespace collector
