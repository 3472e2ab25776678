// What naming stripped code by its FDE costs (issue 20): for a shared
// library, the time of the symbolizer's first lookup in it — reporting the
// process's modules, reading and sorting the library's symbol table, and
// now its FDE ranges — against the FDE ranges alone (reading .eh_frame_hdr's
// table and each FDE), measured in the same invocation. The ranges are
// read once per module per process (or per machine, with the symbol cache).
//
//   build/bench/symbolize-bench /usr/lib/x86_64-linux-gnu/libLLVM-15.so.1 LLVMContextCreate
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "collector/cpu/cfi_unwinder.h"
#include "collector/cpu/symbolizer.h"

namespace {
double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: symbolize-bench LIBRARY SYMBOL\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  void* sym = lib ? dlsym(lib, argv[2]) : nullptr;
  if (!sym) {
    std::fprintf(stderr, "symbolize-bench: cannot load %s from %s\n", argv[2], argv[1]);
    return 2;
  }
  const auto address = reinterpret_cast<uintptr_t>(sym) + 1;

  auto t0 = std::chrono::steady_clock::now();
  auto symbolizer = collector::Symbolizer::Create(0, false, "");
  const collector::SymbolFrames& frames = symbolizer->Lookup(address, false);
  const double lookup_ms = MsSince(t0);

  const collector::CfiModuleSet set = collector::LoadedCfiModules();
  const collector::CfiModule* m = set.Find(address);
  if (!m) {
    std::fprintf(stderr, "symbolize-bench: %s has no executable segment here\n", argv[1]);
    return 2;
  }
  std::vector<collector::CfiRange> ranges;
  t0 = std::chrono::steady_clock::now();
  collector::CfiFunctionRanges(*m, m->hdr, 0, &ranges);
  const double ranges_ms = MsSince(t0);

  std::printf("module      %s\n", argv[1]);
  std::printf("named       %s\n", frames.empty() ? "?" : frames.front().function.c_str());
  std::printf("first lookup (symbol table and FDE ranges)  %8.1f ms\n", lookup_ms);
  std::printf("FDE ranges alone (%zu functions)        %8.1f ms  (%.0f%% of the first lookup)\n", ranges.size(),
              ranges_ms, 100 * ranges_ms / lookup_ms);
  return 0;
}
