#include "collector/cpu/modules.h"

#include "collector/core/run_info.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstring>

namespace collector {

// A note outside every PT_LOAD is not in memory.
std::string BuildIdOf(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& note = info->dlpi_phdr[i];
    if (note.p_type != PT_NOTE) continue;
    bool mapped = false;
    for (int k = 0; k < info->dlpi_phnum && !mapped; ++k) {
      const ElfW(Phdr)& load = info->dlpi_phdr[k];
      mapped = load.p_type == PT_LOAD && note.p_vaddr >= load.p_vaddr && note.p_filesz <= load.p_filesz &&
               note.p_vaddr - load.p_vaddr <= load.p_filesz - note.p_filesz;
    }
    if (!mapped) continue;
    std::string id =
        BuildIdInNotes(reinterpret_cast<const unsigned char*>(info->dlpi_addr + note.p_vaddr), note.p_filesz);
    if (!id.empty()) return id;
  }
  return {};
}

namespace {

int AddModule(dl_phdr_info* info, size_t, void* data) {
  auto& out = *static_cast<std::vector<ModuleImage>*>(data);
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  if (std::strncmp(name, "linux-vdso", 10) == 0 || std::strncmp(name, "linux-gate", 10) == 0) return 0;
  ModuleImage m;
  m.bias = info->dlpi_addr;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    lo = std::min<uintptr_t>(lo, info->dlpi_addr + ph.p_vaddr);
    hi = std::max<uintptr_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (hi == 0) return 0;
  m.lo = lo;
  m.hi = hi;
  if (name[0] == '\0') {
    if (out.empty()) {  // the first entry with no name is the executable
      // Never destroyed: the final write at exit runs after static
      // destructors registered before it (a std::string here was read freed).
      static const std::string* const exe = new std::string(ExecutablePath());  // core/run_info.h
      m.path = *exe;
    } else {
      return 0;
    }
  } else {
    m.path = name;
  }
  m.build_id = BuildIdOf(info);
  out.push_back(std::move(m));
  return 0;
}

}  // namespace

std::string BuildIdInNotes(const unsigned char* notes, size_t size) {
  // Notes are 4-byte aligned (the name and descriptor of a note in an
  // 8-aligned segment are padded to 8, but build-id notes sit in their own
  // 4-aligned segment, and lengths that are multiples of 4 parse either way).
  size_t off = 0;
  auto align4 = [](size_t v) { return (v + 3) & ~size_t{3}; };
  while (size - off >= sizeof(ElfW(Nhdr))) {
    ElfW(Nhdr) h;
    std::memcpy(&h, notes + off, sizeof h);
    off += sizeof h;
    const size_t name = align4(h.n_namesz), desc = align4(h.n_descsz);
    if (name > size - off || desc > size - off - name) return {};
    if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 && std::memcmp(notes + off, "GNU", 4) == 0 &&
        h.n_descsz > 0 && h.n_descsz <= 64)
      return std::string(reinterpret_cast<const char*>(notes + off + name), h.n_descsz);
    off += name + desc;
  }
  return {};
}

void ExecutableSegment(uintptr_t address, uintptr_t* lo, uintptr_t* hi) {
  struct Find {
    uintptr_t address, lo = 0, hi = 0;
  } find{address};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* f = static_cast<Find*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
          const uintptr_t seg_lo = info->dlpi_addr + ph.p_vaddr, seg_hi = seg_lo + ph.p_memsz;
          if (f->address >= seg_lo && f->address < seg_hi) {
            f->lo = seg_lo;
            f->hi = seg_hi;
            return 1;
          }
        }
        return 0;
      },
      &find);
  *lo = find.lo;
  *hi = find.hi;
}

std::vector<ModuleImage> LoadedModules() {
  std::vector<ModuleImage> out;
  out.reserve(32);
  dl_iterate_phdr(AddModule, &out);
  return out;
}

std::vector<ModuleImage> Disappeared(const std::vector<ModuleImage>& before, const std::vector<ModuleImage>& after) {
  std::vector<ModuleImage> gone;
  for (const ModuleImage& b : before) {
    bool still = false;
    for (const ModuleImage& a : after)
      if (a.SameImage(b)) {
        still = true;
        break;
      }
    if (!still) gone.push_back(b);
  }
  return gone;
}

void UnloadedModules::Add(const ModuleImage& m, uint32_t epoch) {
  // The newest record over these addresses: if it is this image, no other
  // image was unloaded there in between, and extending it keeps every
  // answer of Find the same for older epochs.
  for (size_t i = list_.size(); i-- > 0;) {
    UnloadedModule& r = list_[i];
    if (r.image.hi <= m.lo || m.hi <= r.image.lo) continue;
    // (Not into the final epoch: the record's older epochs would then share
    // the final one's ambiguity.)
    if (r.image.SameImage(m) && r.image.lo == m.lo && r.image.hi == m.hi &&
        (epoch != final_epoch_ || r.last_epoch == final_epoch_)) {
      r.last_epoch = epoch;
      return;
    }
    break;
  }
  if (epoch == final_epoch_) {
    // Exhausted: one record per image is all Find can tell apart.
    for (const UnloadedModule& r : list_)
      if (r.last_epoch == epoch && r.image.SameImage(m) && r.image.lo == m.lo && r.image.hi == m.hi) return;
  }
  list_.push_back({m, epoch});
}

UnloadedModules::Match UnloadedModules::Find(uint32_t epoch, uintptr_t address, const ModuleImage* live) const {
  Match best;
  uint32_t best_epoch = UINT32_MAX;
  for (const UnloadedModule& r : list_) {
    if (r.last_epoch < epoch || !r.image.Covers(address)) continue;
    if (r.last_epoch < best_epoch) {
      best_epoch = r.last_epoch;
      best.kind = Match::kUnloaded;
      best.module = &r;
    }
  }
  if (best.kind == Match::kLive || best_epoch != final_epoch_) return best;
  // The final epoch: every image unloaded there since, and the one mapped
  // there now, may have been sampled under it.
  std::vector<const ModuleImage*> images;
  auto add = [&](const ModuleImage* m) {
    for (const ModuleImage* x : images)
      if (x->SameImage(*m)) return;
    images.push_back(m);
  };
  for (const UnloadedModule& r : list_)
    if (r.last_epoch == final_epoch_ && r.image.Covers(address)) add(&r.image);
  if (live && live->Covers(address)) add(live);
  if (images.size() > 1) {
    best.kind = Match::kAmbiguous;
    best.candidates = images.size();
  }
  return best;
}

}  // namespace collector
