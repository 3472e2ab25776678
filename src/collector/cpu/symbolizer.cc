#include "collector/cpu/symbolizer.h"

#include "collector/cpu/cfi_unwinder.h"
#include "collector/cpu/plt_stubs.h"
#include "collector/cpu/symbol_cache.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace collector {
namespace {

// libdw is opened on first use, not linked: a preloaded collector linked
// against it made the loader map, relocate and initialize libdw, libelf,
// libz, liblzma and libbz2 in every process it entered (45 page faults in
// /bin/true, two milliseconds on a VM), while processes named from the
// symbol cache never call it.
#define CCT_LIBDW_FUNCTIONS(X) \
  X(dwarf_attr) \
  X(dwarf_attr_integrate) \
  X(dwarf_decl_file) \
  X(dwarf_decl_line) \
  X(dwarf_diename) \
  X(dwarf_filesrc) \
  X(dwarf_formstring) \
  X(dwarf_formudata) \
  X(dwarf_getscopes) \
  X(dwarf_getscopes_die) \
  X(dwarf_getsrcfiles) \
  X(dwarf_tag) \
  X(dwfl_addrmodule) \
  X(dwfl_begin) \
  X(dwfl_build_id_find_elf) \
  X(dwfl_end) \
  X(dwfl_getmodules) \
  X(dwfl_lineinfo) \
  X(dwfl_linux_proc_find_elf) \
  X(dwfl_linux_proc_report) \
  X(dwfl_module_addrdie) \
  X(dwfl_module_build_id) \
  X(dwfl_module_getelf) \
  X(dwfl_module_getsrc) \
  X(dwfl_module_getsym_info) \
  X(dwfl_module_getsymtab) \
  X(dwfl_module_getsymtab_first_global) \
  X(dwfl_module_info) \
  X(dwfl_offline_section_address) \
  X(dwfl_report_begin) \
  X(dwfl_report_elf) \
  X(dwfl_report_end) \
  X(dwfl_standard_find_debuginfo) \
  X(elf_getdata) \
  X(elf_getphdrnum) \
  X(elf_getscn) \
  X(elf_getshdrstrndx) \
  X(elf_nextscn) \
  X(elf_rawfile) \
  X(elf_strptr) \
  X(gelf_getehdr) \
  X(gelf_getphdr) \
  X(gelf_getrela) \
  X(gelf_getshdr) \
  X(gelf_getsym)

struct LibDw {
#define CCT_LIBDW_POINTER(f) decltype(&::f) f = nullptr;
  CCT_LIBDW_FUNCTIONS(CCT_LIBDW_POINTER)
#undef CCT_LIBDW_POINTER
};
LibDw dw;

// Why libdw is not usable ("" when it is). Written once, by LibDwLoaded's
// initializer, before libdw_tried publishes it.
std::string libdw_problem;
std::atomic<bool> libdw_tried{false};

// Whether libdw is usable (opened once; thread-safe). Symbolizers without
// it name addresses "module+0xOFFSET", like modules without symbols.
bool LibDwLoaded() {
  static const bool loaded = [] {
    void* lib = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      libdw_problem = std::string("cannot load libdw.so.1 (elfutils): ") + (why ? why : "not found");
      libdw_tried.store(true, std::memory_order_release);
      return false;
    }
    std::string missing;
#define CCT_LIBDW_RESOLVE(f) \
    dw.f = reinterpret_cast<decltype(dw.f)>(dlsym(lib, #f)); \
    if (!dw.f && missing.empty()) missing = #f;
    CCT_LIBDW_FUNCTIONS(CCT_LIBDW_RESOLVE)
#undef CCT_LIBDW_RESOLVE
    if (!missing.empty()) libdw_problem = "libdw.so.1 (elfutils) lacks " + missing;
    libdw_tried.store(true, std::memory_order_release);
    return missing.empty();
  }();
  return loaded;
}

}  // namespace

std::string Demangle(const char* name) {
  if (!name) return {};
  if (name[0] == '_' && name[1] == 'Z') {
    int status = 0;
    char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && out) {
      std::string s(out);
      std::free(out);
      return s;
    }
    std::free(out);
  }
  return name;
}

std::string SymbolDisplayName(const char* raw) {
  if (!raw) return {};
  const char* at = std::strchr(raw, '@');
  if (!at) return Demangle(raw);
  std::string name = Demangle(std::string(raw, at).c_str());
  if (std::strcmp(at, "@plt") == 0) name += at;
  return name;
}

void SymbolIndex::Finish() {
  const auto before = [](const Entry& a, const Entry& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.binding != b.binding) return a.binding > b.binding;
    return a.order < b.order;
  };
  const auto added = entries_.begin() + static_cast<std::ptrdiff_t>(std::min(sorted_, entries_.size()));
  std::sort(added, entries_.end(), before);
  std::inplace_merge(entries_.begin(), added, entries_.end(), before);
  sorted_ = entries_.size();
  max_end_.resize(entries_.size());
  last_label_.resize(entries_.size());
  uintptr_t m = 0;
  size_t label = SIZE_MAX;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].size != 0) m = std::max<uintptr_t>(m, entries_[i].start + entries_[i].size);
    // The preferred label at a start is the first one there.
    if (entries_[i].size == 0 && (label == SIZE_MAX || entries_[label].start != entries_[i].start)) label = i;
    max_end_[i] = m;
    last_label_[i] = label;
  }
}

const SymbolIndex::Entry* SymbolIndex::Find(uintptr_t address) const {
  struct Columns {
    const SymbolIndex& s;
    uintptr_t start(size_t i) const { return s.entries_[i].start; }
    uint64_t size(size_t i) const { return s.entries_[i].size; }
    uintptr_t max_end(size_t i) const { return s.max_end_[i]; }
    size_t last_label(size_t i) const { return s.last_label_[i]; }
  };
  const size_t i = FindIn(Columns{*this}, entries_.size(), address);
  return i == SIZE_MAX ? nullptr : &entries_[i];
}

namespace {
// The name of a frame without DWARF: its ELF symbol; else, in this process's
// executable, "_start" for its entry code (a stripped executable's stacks
// still count as complete); else "FILE+0xOFFSET" from the module's start,
// where OFFSET is the start of the nameless function holding the address
// (`function_start`, from its FDE: one frame per function, not per
// instruction) or, failing that (0), the address itself.
std::string NameWithoutDwarf(std::string symbol_name, const std::string& module, uintptr_t address,
                             uintptr_t mod_start, bool self, uintptr_t function_start = 0) {
  if (symbol_name.empty() && self) {
    const uintptr_t entry = getauxval(AT_ENTRY);
    if (entry && address >= entry && address < entry + 64) return "_start";
  }
  if (!symbol_name.empty()) return symbol_name;
  const char* slash = std::strrchr(module.c_str(), '/');
  char buf[64];
  const uintptr_t at = function_start && function_start <= address ? function_start : address;
  std::snprintf(buf, sizeof buf, "+0x%lx", static_cast<unsigned long>(at - mod_start));
  return std::string(slash ? slash + 1 : module.c_str()) + buf;
}

}  // namespace

// The offline session for one unloaded image. Outside the anonymous
// namespace: Symbolizer::State, which has external linkage, holds them.
struct OfflineImage {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  std::string problem;  // why it cannot be symbolized ("" if it can)
  std::map<uint64_t, SymbolFrames> cache;
};

struct Symbolizer::State {
  bool system_debug_info = false;  // see Symbolizer::Create
  bool tables_only = false;        // UseSymbolTablesOnly
  char* debuginfo_path = nullptr;
  Dwfl_Callbacks callbacks{};
  Dwfl_Callbacks offline_callbacks{};
  Dwfl* dwfl = nullptr;
  // Sorted symbol tables, built on first use, by module (the live session's
  // and the offline ones'); dropped with their module.
  std::unordered_map<Dwfl_Module*, std::unique_ptr<SymbolIndex>> symbols;
  // By path '\0' build id '\0' bias.
  std::unordered_map<std::string, OfflineImage> offline;
  // The symbol cache (symbol_cache.h): its directory ("" = off), the
  // process's modules as the loader lists them, their canonical paths (what
  // libdwfl names them from /proc/PID/maps), and the mapped tables by build
  // id (null: none to be had; libdw names that module).
  std::string cache_dir;
  std::vector<ModuleImage> images;
  uint64_t images_generation = UINT64_MAX;
  std::vector<std::pair<uintptr_t, uintptr_t>> exec_maps;  // InExecutableFileMapping
  uint64_t exec_maps_generation = UINT64_MAX;
  std::unordered_map<std::string, std::string> canonical;
  std::unordered_map<std::string, std::unique_ptr<SymbolCacheFile>> tables;
  std::vector<std::string> symbol_table_only;  // canonical paths (AddSymbolTableOnly)

  // Opens libdw and fills the callbacks; false when libdw is unavailable.
  bool OpenLibDw();
  const SymbolIndex& SymbolsOf(Dwfl_Module* mod);
  // Adds the FDE ranges of `mod` that no symbol covers, as nameless
  // entries (FunctionRangesOf).
  void AddFunctionRanges(Dwfl_Module* mod, SymbolIndex* index);
  // Adds the PLT stubs of `mod`, named "function@plt" (plt_stubs.h).
  void AddPltStubs(Dwfl_Module* mod, SymbolIndex* index);
  SymbolFrames ResolveIn(Dwfl_Module* mod, uintptr_t address, bool self);
  ~State() {
    for (auto& [k, o] : offline)
      if (o.dwfl) dw.dwfl_end(o.dwfl);
    if (dwfl) dw.dwfl_end(dwfl);
  }
};

const SymbolIndex& Symbolizer::State::SymbolsOf(Dwfl_Module* mod) {
  auto& slot = symbols[mod];
  if (slot) return *slot;
  slot = std::make_unique<SymbolIndex>();
  // The same symbols dwfl_module_addrsym considers, in its preference:
  // globals before locals.
  const int n = dw.dwfl_module_getsymtab(mod);
  const int first_global = std::max(dw.dwfl_module_getsymtab_first_global(mod), 0);
  for (int i = 1; i < n; ++i) {
    GElf_Sym sym;
    GElf_Addr value = 0;
    GElf_Word shndx = 0;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    const char* name = dw.dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, &elf, &bias);
    if (!name || !name[0] || sym.st_shndx == SHN_UNDEF) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    if (type == STT_SECTION || type == STT_FILE || type == STT_TLS) continue;
    const int bind = GELF_ST_BIND(sym.st_info);
    SymbolIndex::Entry e;
    e.start = value;
    e.size = sym.st_size;
    e.binding = bind == STB_GLOBAL ? 3 : bind == STB_WEAK ? 2 : bind == STB_LOCAL ? 1 : 0;
    e.order = static_cast<uint32_t>(i >= first_global ? i - first_global : n + i);
    e.name = name;
    slot->Add(e);
  }
  slot->Finish();
  AddPltStubs(mod, slot.get());
  AddFunctionRanges(mod, slot.get());
  return *slot;
}

namespace {
// The module's FDE ranges (link-time addresses), read from its file as
// libelf holds it: the bytes of the PT_LOAD segment that holds
// .eh_frame_hdr stand in for the mapped segment (cfi_unwinder.h
// CfiFunctionRanges); segments placed at another file-to-address distance
// are left out, so a lookup that would need them fails instead of reading
// the wrong bytes. Read from the file, not from memory: the module may be
// unloaded (LookupImage), or be unloaded while we read.
std::vector<CfiRange> FunctionRangesOf(Elf* elf) {
  std::vector<CfiRange> out;
  size_t file_size = 0;
  char* file = elf ? dw.elf_rawfile(elf, &file_size) : nullptr;
  size_t phnum = 0;
  if (!file || dw.elf_getphdrnum(elf, &phnum) != 0) return out;
  std::vector<GElf_Phdr> loads;
  GElf_Phdr eh{};
  bool have_eh = false;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!dw.gelf_getphdr(elf, static_cast<int>(i), &ph)) continue;
    if (ph.p_type == PT_LOAD && ph.p_filesz > 0 && ph.p_offset <= file_size && ph.p_filesz <= file_size - ph.p_offset)
      loads.push_back(ph);
    if (ph.p_type == PT_GNU_EH_FRAME) {
      eh = ph;
      have_eh = true;
    }
  }
  if (!have_eh) return out;
  const auto image = reinterpret_cast<uintptr_t>(file);
  const GElf_Phdr* home = nullptr;
  for (const GElf_Phdr& ph : loads)
    if (eh.p_vaddr >= ph.p_vaddr && eh.p_vaddr - ph.p_vaddr < ph.p_filesz) home = &ph;
  if (!home) return out;
  // Image address of link-time address a: a + delta.
  const uintptr_t delta = image + home->p_offset - home->p_vaddr;
  CfiModule m;
  for (const GElf_Phdr& ph : loads)
    if (image + ph.p_offset - ph.p_vaddr == delta && m.readable_count < CfiModule::kMaxSpans)
      m.readable[m.readable_count++] = {image + ph.p_offset, image + ph.p_offset + ph.p_filesz};
  CfiFunctionRanges(m, eh.p_vaddr + delta, delta, &out);
  return out;
}

// The section's bytes as libelf holds them ("" for NOBITS: a debug file's
// copy of the section).
std::string_view SectionBytes(Elf_Scn* scn) {
  Elf_Data* d = dw.elf_getdata(scn, nullptr);
  return d && d->d_buf ? std::string_view(static_cast<const char*>(d->d_buf), d->d_size) : std::string_view();
}

// The GOT slots the module's dynamic relocations fill, with the symbol
// each is filled with (plt_stubs.h): those of the PLT's own relocation
// section (.rela.plt, which names the slot table it fills: SHF_INFO_LINK),
// and with `all`, the other dynamic relocations too (.rela.dyn: the
// GLOB_DAT slots .plt.got's stubs jump through). .rela.dyn is most of a
// large library's relocations (libLLVM: 381,000, 9 MB), so it is read
// only for a .plt.got. ELF64 (the caller checks). Names point into
// libelf's string tables, alive as long as `elf`.
std::vector<GotSlot> GotSlotsOf(Elf* elf, bool all) {
  std::vector<GotSlot> slots;
  for (Elf_Scn* scn = dw.elf_nextscn(elf, nullptr); scn; scn = dw.elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!dw.gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || (!all && !(sh.sh_flags & SHF_INFO_LINK))) continue;
    Elf_Data* relas = dw.elf_getdata(scn, nullptr);
    if (!relas || !relas->d_buf || relas->d_type != ELF_T_RELA) continue;
    // The symbols: only a dynamic symbol table (a static binary's
    // .rela.plt has none, and holds only IRELATIVE slots).
    Elf_Data* syms = nullptr;
    size_t names = 0;
    GElf_Shdr symsh;
    if (Elf_Scn* s = sh.sh_link ? dw.elf_getscn(elf, sh.sh_link) : nullptr;
        s && dw.gelf_getshdr(s, &symsh) && symsh.sh_type == SHT_DYNSYM) {
      syms = dw.elf_getdata(s, nullptr);
      names = symsh.sh_link;
    }
    // In memory as Elf64_Rela (libelf has converted them): read in place,
    // not one gelf_getrela call each.
    const auto* rela = static_cast<const Elf64_Rela*>(relas->d_buf);
    const size_t count = relas->d_size / sizeof(Elf64_Rela);
    for (size_t i = 0; i < count; ++i) {
      const Elf64_Rela& r = rela[i];
      const auto type = ELF64_R_TYPE(r.r_info);
      GotSlot slot;
      slot.address = r.r_offset;
      if (type == R_X86_64_IRELATIVE) {
        slot.resolver = static_cast<uint64_t>(r.r_addend);
      } else if (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT) {
        GElf_Sym sym;
        const auto index = static_cast<int>(ELF64_R_SYM(r.r_info));
        const char* name =
            syms && index > 0 && dw.gelf_getsym(syms, index, &sym) ? dw.elf_strptr(elf, names, sym.st_name) : nullptr;
        if (!name || !name[0]) continue;
        slot.symbol = name;
      } else {
        continue;
      }
      slots.push_back(slot);
    }
  }
  SortGotSlots(&slots);
  return slots;
}
}  // namespace

// x86-64 only (plt_stubs.h decodes its instructions): on other machines a
// stub keeps its FDE's nameless entry.
void Symbolizer::State::AddPltStubs(Dwfl_Module* mod, SymbolIndex* index) {
  GElf_Addr bias = 0;
  Elf* elf = dw.dwfl_module_getelf(mod, &bias);
  GElf_Ehdr eh;
  size_t shstrndx = 0;
  if (!elf || !dw.gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      dw.elf_getshdrstrndx(elf, &shstrndx) != 0)
    return;
  std::vector<std::pair<Elf_Scn*, GElf_Shdr>> tables;  // .plt, .plt.sec, .plt.got
  bool got_stubs = false;
  for (Elf_Scn* scn = dw.elf_nextscn(elf, nullptr); scn; scn = dw.elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!dw.gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR)) continue;
    const char* name = dw.elf_strptr(elf, shstrndx, sh.sh_name);
    if (!name || (std::strcmp(name, ".plt") != 0 && std::strcmp(name, ".plt.sec") != 0 &&
                  std::strcmp(name, ".plt.got") != 0))
      continue;
    got_stubs |= std::strcmp(name, ".plt.got") == 0;
    tables.emplace_back(scn, sh);
  }
  if (tables.empty()) return;
  const std::vector<GotSlot> slots = GotSlotsOf(elf, got_stubs);
  std::vector<SymbolIndex::Entry> stubs;
  for (const auto& [scn, sh] : tables) {
    for (const PltStub& stub : DecodePltStubs(sh.sh_addr, SectionBytes(scn), sh.sh_entsize, slots)) {
      std::string_view function;
      if (stub.slot && !stub.slot->symbol.empty()) {
        function = stub.slot->symbol;
      } else if (stub.slot) {
        // An ifunc's slot: its resolver's symbol is the ifunc's name.
        if (const SymbolIndex::Entry* e = index->Find(stub.slot->resolver + bias); e && e->name[0])
          function = e->name;
      }
      SymbolIndex::Entry e;
      e.start = stub.start + bias;
      e.size = stub.size;
      e.binding = 3;
      e.order = 0;
      e.name = function.empty() ? kPltHeaderName
                                : index->Own(std::string(function.substr(0, function.find('@'))) + "@plt");
      stubs.push_back(e);
    }
  }
  if (stubs.empty()) return;
  for (const SymbolIndex::Entry& e : stubs) index->Add(e);
  index->Finish();
}

void Symbolizer::State::AddFunctionRanges(Dwfl_Module* mod, SymbolIndex* index) {
  GElf_Addr bias = 0;
  Elf* elf = dw.dwfl_module_getelf(mod, &bias);
  std::vector<SymbolIndex::Entry> anonymous;
  for (const CfiRange& r : FunctionRangesOf(elf)) {
    // Only code no symbol names: a symbol keeps its name, and an FDE
    // inside a symbol's range (hand-written assembly, split functions)
    // does not cut it up.
    if (index->Find(r.start + bias)) continue;
    SymbolIndex::Entry e;
    e.start = r.start + bias;
    e.size = r.end - r.start;
    e.binding = 0;
    e.order = UINT32_MAX;
    e.name = "";
    anonymous.push_back(e);
  }
  if (anonymous.empty()) return;
  for (const SymbolIndex::Entry& e : anonymous) index->Add(e);
  index->Finish();
}

namespace {

std::string FunctionName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int a : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (dw.dwarf_attr_integrate(die, a, &attr)) {
      if (const char* s = dw.dwarf_formstring(&attr)) return Demangle(s);
    }
  }
  const char* n = dw.dwarf_diename(die);
  return n ? n : "";
}

// The source file named by an inlined call's DW_AT_call_file index.
std::string CallFile(Dwarf_Die* cudie, Dwarf_Die* die) {
  Dwarf_Attribute attr;
  Dwarf_Word index = 0;
  if (!dw.dwarf_attr(die, DW_AT_call_file, &attr) || dw.dwarf_formudata(&attr, &index) != 0) return {};
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dw.dwarf_getsrcfiles(cudie, &files, &nfiles) != 0 || index >= nfiles) return {};
  const char* f = dw.dwarf_filesrc(files, index, nullptr, nullptr);
  return f ? f : "";
}

uint32_t CallLine(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  Dwarf_Word line = 0;
  if (!dw.dwarf_attr(die, DW_AT_call_line, &attr) || dw.dwarf_formudata(&attr, &line) != 0) return 0;
  return static_cast<uint32_t>(line);
}

void DeclOf(Dwarf_Die* die, SymbolFrame& f) {
  if (const char* file = dw.dwarf_decl_file(die)) f.decl_file = file;
  int line = 0;
  if (dw.dwarf_decl_line(die, &line) == 0 && line > 0) f.decl_line = static_cast<uint32_t>(line);
}

}  // namespace

Symbolizer::Symbolizer(pid_t pid) : state_(std::make_unique<State>()), pid_(pid ? pid : getpid()) {}

bool Symbolizer::State::OpenLibDw() {
  if (!LibDwLoaded()) return false;
  if (callbacks.find_elf) return true;
  callbacks.find_elf = dw.dwfl_linux_proc_find_elf;
  callbacks.find_debuginfo = dw.dwfl_standard_find_debuginfo;
  callbacks.debuginfo_path = &debuginfo_path;
  offline_callbacks.find_elf = dw.dwfl_build_id_find_elf;
  offline_callbacks.find_debuginfo = dw.dwfl_standard_find_debuginfo;
  offline_callbacks.section_address = dw.dwfl_offline_section_address;
  offline_callbacks.debuginfo_path = &debuginfo_path;
  return true;
}

std::unique_ptr<Symbolizer> Symbolizer::Create(pid_t pid, bool system_debug_info, std::string symbol_cache_dir) {
  auto s = std::unique_ptr<Symbolizer>(new Symbolizer(pid));
  s->state_->system_debug_info = system_debug_info;
  // Only for the calling process: the loader's module list is its own.
  if (s->pid_ == getpid()) s->state_->cache_dir = std::move(symbol_cache_dir);
  else s->EnsureDwfl();
  return s;
}

void Symbolizer::UseSymbolTablesOnly() { state_->tables_only = true; }

void Symbolizer::AddSymbolTableOnly(const std::string& path) {
  char real[PATH_MAX];
  state_->symbol_table_only.push_back(realpath(path.c_str(), real) ? real : path);
}

void Symbolizer::EnsureDwfl() {
  if (state_->dwfl || !state_->OpenLibDw()) return;
  state_->dwfl = dw.dwfl_begin(&state_->callbacks);
  Report();
}

namespace {
// The executable, file-backed mappings of this process, from
// /proc/self/maps; one covering everything if it cannot be read (then
// nothing is ruled out).
std::vector<std::pair<uintptr_t, uintptr_t>> ExecutableFileMappings() {
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (!f) return {{0, UINTPTR_MAX}};
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0, inode = 0;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %lu %n", &lo, &hi, perms, &inode, &path_at) < 4) continue;
    if (perms[2] == 'x' && inode != 0 && line[path_at] == '/') out.emplace_back(lo, hi);
  }
  std::fclose(f);
  return out;
}
}  // namespace

bool Symbolizer::InExecutableFileMapping(uintptr_t address) {
  State& s = *state_;
  if (const uint64_t g = LoaderGeneration(); g != s.exec_maps_generation) {
    s.exec_maps = ExecutableFileMappings();
    s.exec_maps_generation = g;
    ++mapping_reads_;
  }
  for (const auto& [lo, hi] : s.exec_maps)
    if (address >= lo && address < hi) return true;
  return false;
}

bool Symbolizer::IsSystemPath(std::string_view path) {
  static constexpr std::string_view kSystem[] = {"/lib/", "/lib64/", "/lib32/", "/usr/lib/", "/usr/lib64/",
                                                 "/usr/lib32/", "/usr/libexec/", "/bin/", "/sbin/", "/usr/bin/",
                                                 "/usr/sbin/"};
  for (std::string_view p : kSystem)
    if (path.starts_with(p)) return true;
  return false;
}

Symbolizer::~Symbolizer() = default;

namespace {
int CountLoads(dl_phdr_info* info, size_t, void* data) {
  *static_cast<uint64_t*>(data) = info->dlpi_adds + info->dlpi_subs;
  return 1;  // the counters are the same in every entry
}

struct ModuleSpan {
  Dwfl_Module* mod;
  Dwarf_Addr lo, hi;
};
int CollectModule(Dwfl_Module* mod, void**, const char*, Dwarf_Addr lo, void* arg) {
  Dwarf_Addr hi = 0;
  dw.dwfl_module_info(mod, nullptr, nullptr, &hi, nullptr, nullptr, nullptr, nullptr);
  static_cast<std::vector<ModuleSpan>*>(arg)->push_back({mod, lo, hi});
  return DWARF_CB_OK;
}
std::vector<ModuleSpan> ModulesOf(Dwfl* dwfl) {
  std::vector<ModuleSpan> out;
  if (dwfl) dw.dwfl_getmodules(dwfl, CollectModule, &out, 0);
  return out;
}
}  // namespace

uint64_t Symbolizer::LoaderGeneration() const {
  uint64_t g = 0;
  if (pid_ == getpid()) dl_iterate_phdr(CountLoads, &g);
  return g;
}

void Symbolizer::Report() {
  if (!state_->dwfl) return;
  ++reports_;
  if (pid_ == getpid()) generation_ = LoaderGeneration();
  const std::vector<ModuleSpan> before = ModulesOf(state_->dwfl);
  // libdwfl keeps a module reported again with the same name and range
  // (with what it has read: symbol tables, DWARF); the others are freed by
  // dwfl_report_end.
  dw.dwfl_report_begin(state_->dwfl);
  dw.dwfl_linux_proc_report(state_->dwfl, pid_);
  dw.dwfl_report_end(state_->dwfl, nullptr, nullptr);
  const std::vector<ModuleSpan> after = ModulesOf(state_->dwfl);
  for (const ModuleSpan& b : before) {
    bool kept = false;
    for (const ModuleSpan& a : after) kept |= a.mod == b.mod && a.lo == b.lo && a.hi == b.hi;
    if (kept) continue;
    state_->symbols.erase(b.mod);
    // Results cached for its addresses described it (return addresses are
    // cached at address - 1, inside the same range).
    cache_.erase(cache_.lower_bound(b.lo), cache_.lower_bound(b.hi));
  }
  // Addresses that were in no module ("0x…") may be in one now.
  for (auto it = cache_.begin(); it != cache_.end();)
    it = it->second.size() == 1 && it->second[0].module.empty() ? cache_.erase(it) : std::next(it);
}

void Symbolizer::Sync() {
  if (pid_ != getpid()) return;
  const uint64_t g = LoaderGeneration();
  if (g != state_->images_generation && state_->images_generation != UINT64_MAX) {
    // Modules went away or came: results cached for addresses no module
    // still covers are dropped (the loader reuses address ranges).
    std::vector<ModuleImage> now = LoadedModules();
    for (const ModuleImage& b : state_->images) {
      bool kept = false;
      for (const ModuleImage& a : now) kept |= a.SameImage(b);
      if (!kept) cache_.erase(cache_.lower_bound(b.lo), cache_.lower_bound(b.hi));
    }
    state_->images = std::move(now);
    state_->images_generation = g;
  }
  if (state_->dwfl && g != generation_) Report();
}

const SymbolFrames& Symbolizer::Lookup(uintptr_t address, bool return_address) {
  const uintptr_t a = return_address && address > 0 ? address - 1 : address;
  auto it = cache_.find(a);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(a, Resolve(a)).first->second;
}

const ModuleImage* Symbolizer::LoadedImageOf(uintptr_t address) {
  State& s = *state_;
  auto covering = [&]() -> const ModuleImage* {
    const ModuleImage* found = nullptr;
    for (const ModuleImage& m : s.images)
      if (m.Covers(address)) found = &m;
    return found;
  };
  // The loader's list is read again only for an address no module covers
  // (a library loaded since), and only if the loader's counters moved, as
  // the libdw path re-reports; unloads reach us through Sync.
  const ModuleImage* image = covering();
  if (!image) {
    if (const uint64_t g = LoaderGeneration(); g != s.images_generation) {
      s.images = LoadedModules();
      s.images_generation = g;
      image = covering();
    }
  }
  return image;
}

bool Symbolizer::ResolveCached(uintptr_t address, SymbolFrames& out) {
  State& s = *state_;
  const ModuleImage* image = LoadedImageOf(address);
  if (!image || image->build_id.empty()) return false;
  auto [cit, fresh_path] = s.canonical.try_emplace(image->path);
  if (fresh_path) {
    char real[PATH_MAX];
    cit->second = realpath(image->path.c_str(), real) ? real : image->path;
  }
  const std::string& path = cit->second;
  const bool table_only = s.tables_only || std::find(s.symbol_table_only.begin(), s.symbol_table_only.end(),
                                                     path) != s.symbol_table_only.end();
  if (!table_only && (s.system_debug_info || !IsSystemPath(path))) return false;  // its DWARF is read: libdw
  auto [tit, fresh] = s.tables.try_emplace(image->build_id);
  if (fresh) {
    const std::string file = SymbolCachePath(s.cache_dir, image->build_id);
    auto opened = SymbolCacheFile::Open(file, image->build_id);
    if (!opened.ok()) {
      // The first process to need this module's table writes it.
      EnsureDwfl();
      if (Dwfl_Module* mod = s.dwfl ? dw.dwfl_addrmodule(s.dwfl, address) : nullptr) {
        const SymbolIndex& live = s.SymbolsOf(mod);
        SymbolIndex relative;
        for (size_t i = 0; i < live.size(); ++i) {
          SymbolIndex::Entry e = live.entry(i);
          e.start -= image->bias;
          relative.Add(e);
        }
        relative.Finish();
        if (WriteSymbolCache(file, EncodeSymbolCache(image->build_id, relative, SymbolDisplayName)).ok())
          opened = SymbolCacheFile::Open(file, image->build_id);
      }
    }
    if (opened.ok()) tit->second = std::move(opened).value();
  }
  if (!tit->second) return false;
  SymbolFrame f;
  f.module = path;
  // libdwfl's module start is its first mapping's page.
  uintptr_t function_start = 0;
  const std::string_view symbol = tit->second->Find(address - image->bias, &function_start);
  f.function = NameWithoutDwarf(std::string(symbol), path, address, image->lo & ~uintptr_t{4095}, /*self=*/true,
                                symbol.empty() && function_start ? function_start + image->bias : 0);
  out.push_back(std::move(f));
  return true;
}

SymbolFrames Symbolizer::Resolve(uintptr_t address) {
  if (!state_->cache_dir.empty()) {
    SymbolFrames frames;
    if (ResolveCached(address, frames)) return frames;
  }
  // An address in no module the loader knows and in no file mapped
  // executable (a stack or heap address a broken frame chain produced, JIT
  // code): libdw could not name it either, and starting it costs a short
  // process more than the rest of its symbolization.
  if (pid_ == getpid() && !state_->dwfl && !LoadedImageOf(address) && !InExecutableFileMapping(address))
    return state_->ResolveIn(nullptr, address, true);
  EnsureDwfl();
  Dwfl_Module* mod = state_->dwfl ? dw.dwfl_addrmodule(state_->dwfl, address) : nullptr;
  // A library loaded since the last report (dlopen): read the maps again,
  // but only if the loader says something changed (for another process: no
  // way to tell, read them).
  if (!mod && state_->dwfl && (pid_ != getpid() || LoaderGeneration() != generation_)) {
    Report();
    mod = dw.dwfl_addrmodule(state_->dwfl, address);
  }
  if (!state_->dwfl && pid_ == getpid()) {
    // No libdw (LibDwProblem says why): still name the module, as
    // "module+0xOFFSET", from the loader's own list.
    if (const ModuleImage* image = LoadedImageOf(address)) {
      SymbolFrames frames(1);
      frames[0].module = image->path;
      frames[0].function = NameWithoutDwarf("", image->path, address, image->lo & ~uintptr_t{4095}, /*self=*/true);
      return frames;
    }
  }
  return state_->ResolveIn(mod, address, pid_ == getpid());
}

const std::string& Symbolizer::LibDwProblem() {
  static const std::string none;
  return libdw_tried.load(std::memory_order_acquire) ? libdw_problem : none;
}

const SymbolFrames& Symbolizer::LookupImage(const ModuleImage& image, uintptr_t address, bool return_address) {
  const uintptr_t a = return_address && address > 0 ? address - 1 : address;
  std::string key = image.path;
  key.push_back('\0');
  key += image.build_id;
  key.push_back('\0');
  key += std::to_string(image.bias);
  auto [oit, fresh] = state_->offline.try_emplace(key);
  OfflineImage& o = oit->second;
  if (fresh) {
    o.dwfl = state_->OpenLibDw() ? dw.dwfl_begin(&state_->offline_callbacks) : nullptr;
    if (o.dwfl) {
      dw.dwfl_report_begin(o.dwfl);
      // add_p_vaddr: `image.bias` is the load bias, as dl_iterate_phdr gives it.
      o.module = dw.dwfl_report_elf(o.dwfl, image.path.c_str(), image.path.c_str(), -1, image.bias, true);
      dw.dwfl_report_end(o.dwfl, nullptr, nullptr);
    }
    if (!o.module) {
      o.problem = "file unreadable";
    } else if (!image.build_id.empty()) {
      const unsigned char* bits = nullptr;
      GElf_Addr vaddr = 0;
      const int n = dw.dwfl_module_build_id(o.module, &bits, &vaddr);
      if (n <= 0 || static_cast<size_t>(n) != image.build_id.size() ||
          std::memcmp(bits, image.build_id.data(), image.build_id.size()) != 0)
        o.problem = "file changed since";
    }
  }
  auto it = o.cache.find(a);
  if (it != o.cache.end()) return it->second;
  SymbolFrames frames;
  if (o.problem.empty()) {
    frames = state_->ResolveIn(o.module, a, false);
    for (SymbolFrame& f : frames) f.module = image.path;
  } else {
    SymbolFrame f;
    char buf[64];
    std::snprintf(buf, sizeof buf, "<unloaded code 0x%lx in ", static_cast<unsigned long>(a));
    f.function = buf + image.path + " (" + o.problem + ")>";
    f.module = image.path;
    frames.push_back(std::move(f));
  }
  return o.cache.emplace(a, std::move(frames)).first->second;
}

SymbolFrames Symbolizer::State::ResolveIn(Dwfl_Module* mod, uintptr_t address, bool self) {
  SymbolFrames frames;
  SymbolFrame base;
  Dwarf_Addr mod_start = 0;
  if (mod) {
    const char* mainfile = nullptr;
    const char* name = dw.dwfl_module_info(mod, nullptr, &mod_start, nullptr, nullptr, nullptr, &mainfile, nullptr);
    base.module = mainfile ? mainfile : (name ? name : "");
    // libdwfl names the vDSO "[vdso: PID]": keep module identity stable across runs.
    if (base.module.starts_with("[vdso")) base.module = "[vdso]";
  }
  if (!mod) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(address));
    base.function = buf;
    frames.push_back(base);
    return frames;
  }

  const bool dwarf = !tables_only && (system_debug_info || !Symbolizer::IsSystemPath(base.module));
  // Source line of the address itself (innermost frame).
  std::string leaf_file;
  uint32_t leaf_line = 0;
  if (Dwfl_Line* line = dwarf ? dw.dwfl_module_getsrc(mod, address) : nullptr) {
    int lineno = 0;
    if (const char* f = dw.dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
      leaf_file = f;
      leaf_line = lineno > 0 ? static_cast<uint32_t>(lineno) : 0;
    }
  }

  // The ELF symbol (.symtab, else .dynsym) names the out-of-line function:
  // it carries the full demangled signature, which DWARF lacks for
  // functions with internal linkage.
  std::string symbol_name;
  uintptr_t function_start = 0;  // of a nameless function (an FDE's range)
  if (const SymbolIndex::Entry* e = SymbolsOf(mod).Find(address)) {
    if (e->name[0]) symbol_name = SymbolDisplayName(e->name);
    else function_start = e->start;
  }

  // DWARF: the chain of inlined instances, innermost first, ending at the
  // subprogram. dwarf_getscopes continues past an inlined instance into its
  // abstract origin's scopes, so each caller is found with
  // dwarf_getscopes_die on the concrete instance instead.
  std::vector<Dwarf_Die> chain;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cudie = dwarf ? dw.dwfl_module_addrdie(mod, address, &bias) : nullptr;
  if (cudie) {
    Dwarf_Die* scopes = nullptr;
    const int n = dw.dwarf_getscopes(cudie, address - bias, &scopes);
    for (int i = 0; i < n; ++i) {
      const int tag = dw.dwarf_tag(&scopes[i]);
      if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
        chain.push_back(scopes[i]);
        break;
      }
    }
    free(scopes);
    while (!chain.empty() && dw.dwarf_tag(&chain.back()) == DW_TAG_inlined_subroutine && chain.size() < 256) {
      Dwarf_Die* parents = nullptr;
      const int m = dw.dwarf_getscopes_die(&chain.back(), &parents);
      bool found = false;
      for (int i = 1; i < m; ++i) {
        const int tag = dw.dwarf_tag(&parents[i]);
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
          chain.push_back(parents[i]);
          found = true;
          break;
        }
      }
      free(parents);
      if (!found) break;
    }
  }
  // chain: innermost .. outermost. Control in frame k is at the call site of
  // frame k-1 (its inlined instance); in the innermost, at the line table's
  // statement.
  for (size_t k = chain.size(); k-- > 0;) {
    SymbolFrame f = base;
    const bool outermost = k + 1 == chain.size();
    f.inlined = !outermost;
    f.function = outermost && !symbol_name.empty() ? symbol_name : FunctionName(&chain[k]);
    DeclOf(&chain[k], f);
    if (k == 0) {
      f.file = leaf_file;
      f.line = leaf_line;
    } else {
      f.file = CallFile(cudie, &chain[k - 1]);
      f.line = CallLine(&chain[k - 1]);
    }
    if (f.function.empty()) f.function = "<unnamed>";
    frames.push_back(std::move(f));
  }
  if (!frames.empty()) return frames;

  base.function = NameWithoutDwarf(std::move(symbol_name), base.module, address, mod_start, self, function_start);
  base.file = leaf_file;
  base.line = leaf_line;
  frames.push_back(std::move(base));
  return frames;
}

bool Symbolizer::IsThreadStart(const std::string& function) {
  static constexpr std::string_view kStarts[] = {
      "_start", "clone", "clone3", "__clone", "__clone3", "__clone_internal", "start_thread",
      "__libc_start_main", "__libc_start_main_impl", "__libc_start_main_alias_2", "__libc_start_call_main"};
  for (std::string_view s : kStarts)
    if (function == s) return true;
  return false;
}

}  // namespace collector
