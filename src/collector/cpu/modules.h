// Loaded modules and the ones dlclose unloaded: what an address of an older
// key epoch belonged to.
//
// At dlclose the collector records only the identity of each module that
// went away (path, GNU build id, load bias, address span) and the last key
// epoch its code could have been sampled in; symbolization happens later,
// from the file (Symbolizer::LookupImage). Nothing here reads files or DWARF.
//
// LoadedModules: normal context (dl_iterate_phdr takes the loader's lock),
// any thread. UnloadedModules: a plain value type; the collector guards its
// instance with rt->modules_mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct dl_phdr_info;

namespace collector {

// One loaded ELF image: its identity and where it is mapped.
struct ModuleImage {
  std::string path;      // as the loader names it; the executable's from /proc/self/exe
  std::string build_id;  // raw bytes of the NT_GNU_BUILD_ID note ("" if none)
  uintptr_t bias = 0;    // load bias (dlpi_addr)
  uintptr_t lo = 0, hi = 0;  // [lo, hi): the span of its PT_LOAD segments

  // Same file at the same place: its code means the same thing.
  bool SameImage(const ModuleImage& o) const { return bias == o.bias && build_id == o.build_id && path == o.path; }
  bool Covers(uintptr_t a) const { return a >= lo && a < hi; }
};

// The process's modules now, from dl_iterate_phdr; build ids are read from
// the mapped PT_NOTE segments (no file I/O). The vDSO is left out.
std::vector<ModuleImage> LoadedModules();

// The executable PT_LOAD segment of a loaded module that holds `address`,
// as [*lo, *hi); both 0 when none does. From dl_iterate_phdr; normal context.
void ExecutableSegment(uintptr_t address, uintptr_t* lo, uintptr_t* hi);

// The GNU build id (raw bytes) of a loaded module, from the PT_NOTE
// segments it has mapped; "" when none. A dl_iterate_phdr callback's
// `info`; no file I/O.
std::string BuildIdOf(const dl_phdr_info* info);

// The NT_GNU_BUILD_ID descriptor (raw bytes) in a PT_NOTE area of `size`
// bytes; "" when absent or malformed (every length is checked against
// `size`). Pure; the one note parser (run_info's hex form uses it).
std::string BuildIdInNotes(const unsigned char* notes, size_t size);

// The modules of `before` that are not in `after` (by identity).
std::vector<ModuleImage> Disappeared(const std::vector<ModuleImage>& before, const std::vector<ModuleImage>& after);

struct UnloadedModule {
  ModuleImage image;
  // The last key epoch in which its code could have been sampled: the epoch
  // current when the unload was seen (the collector moves to the next one
  // right after, unless the epochs are exhausted).
  uint32_t last_epoch = 0;
};

// The modules unloaded so far. An address `a` sampled in key epoch `e`
// belonged to the unloaded module covering `a` with the smallest last_epoch
// >= e; with none, to the module loaded there now (it was loaded at e and
// still is). Once the epochs are exhausted (last epoch == `final_epoch`),
// several modules can share the final epoch: the answer is then unambiguous
// only when all of them (and the live module there) are the same image.
class UnloadedModules {
 public:
  explicit UnloadedModules(uint32_t final_epoch) : final_epoch_(final_epoch) {}

  // Records an unload seen in `epoch`. An image unloaded again with nothing
  // else unloaded over its addresses since (a plugin loaded and unloaded in a
  // loop) extends its record instead of adding one.
  void Add(const ModuleImage& m, uint32_t epoch);

  struct Match {
    enum Kind { kLive, kUnloaded, kAmbiguous } kind = kLive;
    const UnloadedModule* module = nullptr;  // kUnloaded, kAmbiguous: one of them
    size_t candidates = 0;                   // kAmbiguous: how many different images
  };
  // `live`: the module covering the address now, or null (only consulted in
  // the final epoch).
  Match Find(uint32_t epoch, uintptr_t address, const ModuleImage* live) const;

  size_t size() const { return list_.size(); }
  bool empty() const { return list_.empty(); }
  uint32_t final_epoch() const { return final_epoch_; }

 private:
  uint32_t final_epoch_;
  std::vector<UnloadedModule> list_;  // in the order the unloads were seen
};

}  // namespace collector
