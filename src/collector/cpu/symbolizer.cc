#include "collector/cpu/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace collector {

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

struct Symbolizer::State {
  char* debuginfo_path = nullptr;
  Dwfl_Callbacks callbacks{};
  Dwfl* dwfl = nullptr;
};

namespace {

std::string FunctionName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int a : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (dwarf_attr_integrate(die, a, &attr)) {
      if (const char* s = dwarf_formstring(&attr)) return Demangle(s);
    }
  }
  const char* n = dwarf_diename(die);
  return n ? n : "";
}

// The source file named by an inlined call's DW_AT_call_file index.
std::string CallFile(Dwarf_Die* cudie, Dwarf_Die* die) {
  Dwarf_Attribute attr;
  Dwarf_Word index = 0;
  if (!dwarf_attr(die, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &index) != 0) return {};
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0 || index >= nfiles) return {};
  const char* f = dwarf_filesrc(files, index, nullptr, nullptr);
  return f ? f : "";
}

uint32_t CallLine(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  Dwarf_Word line = 0;
  if (!dwarf_attr(die, DW_AT_call_line, &attr) || dwarf_formudata(&attr, &line) != 0) return 0;
  return static_cast<uint32_t>(line);
}

void DeclOf(Dwarf_Die* die, SymbolFrame& f) {
  if (const char* file = dwarf_decl_file(die)) f.decl_file = file;
  int line = 0;
  if (dwarf_decl_line(die, &line) == 0 && line > 0) f.decl_line = static_cast<uint32_t>(line);
}

}  // namespace

Symbolizer::Symbolizer(pid_t pid) : state_(std::make_unique<State>()), pid_(pid ? pid : getpid()) {
  state_->callbacks.find_elf = dwfl_linux_proc_find_elf;
  state_->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  state_->callbacks.debuginfo_path = &state_->debuginfo_path;
  state_->dwfl = dwfl_begin(&state_->callbacks);
  Report();
}

std::unique_ptr<Symbolizer> Symbolizer::Create(pid_t pid) {
  return std::unique_ptr<Symbolizer>(new Symbolizer(pid));
}

Symbolizer::~Symbolizer() {
  if (state_->dwfl) dwfl_end(state_->dwfl);
}

void Symbolizer::Report() {
  if (!state_->dwfl) return;
  dwfl_report_begin(state_->dwfl);
  dwfl_linux_proc_report(state_->dwfl, pid_);
  dwfl_report_end(state_->dwfl, nullptr, nullptr);
}

void Symbolizer::Refresh() {
  // Modules can be replaced at the same addresses: start from scratch.
  if (state_->dwfl) dwfl_end(state_->dwfl);
  state_->dwfl = dwfl_begin(&state_->callbacks);
  cache_.clear();
  Report();
}

const SymbolFrames& Symbolizer::Lookup(uintptr_t address, bool return_address) {
  const uintptr_t a = return_address && address > 0 ? address - 1 : address;
  auto it = cache_.find(a);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(a, Resolve(a)).first->second;
}

SymbolFrames Symbolizer::Resolve(uintptr_t address) {
  SymbolFrames frames;
  Dwfl_Module* mod = state_->dwfl ? dwfl_addrmodule(state_->dwfl, address) : nullptr;
  if (!mod && state_->dwfl) {
    // A library loaded since the last report (dlopen): read the maps again.
    Report();
    mod = dwfl_addrmodule(state_->dwfl, address);
  }
  SymbolFrame base;
  Dwarf_Addr mod_start = 0;
  if (mod) {
    const char* mainfile = nullptr;
    const char* name = dwfl_module_info(mod, nullptr, &mod_start, nullptr, nullptr, nullptr, &mainfile, nullptr);
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

  // Source line of the address itself (innermost frame).
  std::string leaf_file;
  uint32_t leaf_line = 0;
  if (Dwfl_Line* line = dwfl_module_getsrc(mod, address)) {
    int lineno = 0;
    if (const char* f = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
      leaf_file = f;
      leaf_line = lineno > 0 ? static_cast<uint32_t>(lineno) : 0;
    }
  }

  // The ELF symbol (.symtab, else .dynsym) names the out-of-line function:
  // it carries the full demangled signature, which DWARF lacks for
  // functions with internal linkage.
  std::string symbol_name;
  GElf_Sym sym;
  GElf_Off offset = 0;
  if (const char* name = dwfl_module_addrinfo(mod, address, &offset, &sym, nullptr, nullptr, nullptr)) {
    // .dynsym names may carry a symbol version ("clock_gettime@@GLIBC_2.17").
    const char* at = std::strchr(name, '@');
    symbol_name = Demangle(at ? std::string(name, at).c_str() : name);
  }

  // DWARF: the chain of inlined instances, innermost first, ending at the
  // subprogram. dwarf_getscopes continues past an inlined instance into its
  // abstract origin's scopes, so each caller is found with
  // dwarf_getscopes_die on the concrete instance instead.
  std::vector<Dwarf_Die> chain;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(mod, address, &bias);
  if (cudie) {
    Dwarf_Die* scopes = nullptr;
    const int n = dwarf_getscopes(cudie, address - bias, &scopes);
    for (int i = 0; i < n; ++i) {
      const int tag = dwarf_tag(&scopes[i]);
      if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
        chain.push_back(scopes[i]);
        break;
      }
    }
    free(scopes);
    while (!chain.empty() && dwarf_tag(&chain.back()) == DW_TAG_inlined_subroutine && chain.size() < 256) {
      Dwarf_Die* parents = nullptr;
      const int m = dwarf_getscopes_die(&chain.back(), &parents);
      bool found = false;
      for (int i = 1; i < m; ++i) {
        const int tag = dwarf_tag(&parents[i]);
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

  // No DWARF: the symbol, else module+offset. A stripped executable's entry
  // code is still known as _start, so its stacks count as complete.
  if (symbol_name.empty() && pid_ == getpid()) {
    const uintptr_t entry = getauxval(AT_ENTRY);
    if (entry && address >= entry && address < entry + 64) symbol_name = "_start";
  }
  if (!symbol_name.empty()) {
    base.function = symbol_name;
  } else {
    const char* slash = std::strrchr(base.module.c_str(), '/');
    char buf[64];
    std::snprintf(buf, sizeof buf, "+0x%lx", static_cast<unsigned long>(address - mod_start));
    base.function = std::string(slash ? slash + 1 : base.module.c_str()) + buf;
  }
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
