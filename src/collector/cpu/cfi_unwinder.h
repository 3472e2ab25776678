// The sampling handler's own stack walker: DWARF call-frame information
// (CFI) read where the loader already mapped it — each module's
// .eh_frame_hdr search table and the .eh_frame CIEs and FDEs it points to —
// and the sampled thread's stack. Nothing else is read, and every read is
// checked against the spans the caller allows (the module's readable
// segments, the thread's stack): no allocation, no lock, no system call.
//
// Why not libunwind alone: its handler-safe mode looks every frame up under
// a global cache lock it takes with all signals blocked (two rt_sigprocmask
// calls per lookup), and its per-thread trace table keeps missing on a large
// program (cc1plus: 190,288 system calls for 7,783 samples, +22 % run
// time). Here a frame costs two binary searches and the interpretation of
// one FDE (a few loads when the row cache has it). A pc outside the
// published modules (a library whose constructors run inside dlopen, before
// the set is published again) is looked up with glibc's lock-free
// _dl_find_object where glibc has it. Whatever this walker does not handle
// — a pc outside every module or without an FDE, a CFA expression with an
// unsupported operation, a read outside the allowed spans, a stack that
// does not grow upward — ends the walk with kFailed, and the caller
// (unwinder.cc) falls back to libunwind for that sample.
//
// x86-64 only (DWARF register numbers 0-16; 16 is the return address).
//
// Thread-safety: CfiModuleSet is immutable once built; CfiUnwind and
// CfiStep only read it and may run concurrently from any thread, in a
// signal handler. Keeping the modules mapped while a walk reads them is the
// caller's job (unwinder.cc: dlclose waits for walks in flight).
// SIGNAL-HANDLER CODE: CfiUnwind, CfiStep, CfiModuleSet::Find and
// everything they call are async-signal-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace collector {

inline constexpr int kCfiRegisters = 17;  // rax..r15 (0-15) and the return address (16)
inline constexpr int kCfiRbp = 6;
inline constexpr int kCfiRsp = 7;
inline constexpr int kCfiRip = 16;

// Register values of one frame; `known` has bit r set where value[r] is.
struct CfiRegisters {
  uint64_t value[kCfiRegisters] = {};
  uint32_t known = 0;
  bool Has(int r) const { return (known >> r) & 1; }
  void Set(int r, uint64_t v) {
    value[r] = v;
    known |= 1u << r;
  }
};

// [lo, hi): memory the walker may read.
struct CfiSpan {
  uintptr_t lo = 0, hi = 0;
  bool Holds(uintptr_t a, size_t n) const { return a >= lo && a <= hi && n <= hi - a; }
};

// One executable segment of a loaded module and what its CFI lookups may
// read. `table` is the .eh_frame_hdr binary-search table (fde_count pairs of
// signed 32-bit offsets from `hdr`: initial location, FDE), already checked
// to lie inside one of `readable`.
struct CfiModule {
  static constexpr int kMaxSpans = 8;
  uintptr_t text_lo = 0, text_hi = 0;
  uintptr_t hdr = 0;     // .eh_frame_hdr; 0: the module has no usable table
  uintptr_t table = 0;
  size_t fde_count = 0;
  CfiSpan readable[kMaxSpans];  // the module's readable PT_LOAD segments
  int readable_count = 0;
  // Which file's code this is, the same in every process that maps it: a
  // hash of the module's build id and the segment's link-time address; 0
  // when the module has no build id. Keys the shared rows (UseSharedRows).
  uint64_t identity = 0;
};

// The modules of the process (one entry per executable segment), sorted by
// text_lo. Built in normal context; read-only afterwards.
// Bytes of the loader's entry code (glibc's RTLD_START on x86-64: 61).
inline constexpr uintptr_t kLoaderEntrySize = 64;

struct CfiModuleSet {
  std::vector<CfiModule> modules;
  // Distinct for every set FinishCfiModuleSet completes: the walker's cache
  // of CFI rows (cfi_unwinder.cc) is keyed by it.
  uint64_t generation = 0;
  // glibc's _dl_find_object (2.35 and later; null before, and in sets made
  // by tests): how a pc outside `modules` is looked up.
  void* find_object = nullptr;
  // Code without CFI where a stack begins: the loader's entry, from which
  // the first constructors run (LoadedCfiModules; 0, 0 in sets made by
  // tests). A return address there ends the walk at its root.
  uintptr_t root_lo = 0, root_hi = 0;
  const CfiModule* Find(uintptr_t pc) const;  // SIGNAL-HANDLER CODE
};

// A program header as the loader reports it (dl_phdr_info), reduced to
// what the module set needs; the builder is pure so tests can feed it
// made-up images.
struct CfiSegment {
  uint32_t type = 0;   // PT_LOAD, PT_GNU_EH_FRAME
  uint32_t flags = 0;  // PF_R, PF_X
  uintptr_t vaddr = 0, memsz = 0;
};
// Adds `bias`'s module with `segments` to `set` (unsorted; Finish sorts).
// The .eh_frame_hdr is validated here (version, encodings, the table inside
// a readable segment); a module whose header is unusable still gets its
// executable segments, with hdr 0, so lookups in it fail fast. `build_id`
// (the raw bytes; empty: none) gives each segment its identity.
void AddCfiModule(CfiModuleSet* set, uintptr_t bias, const CfiSegment* segments, size_t count,
                  std::string_view build_id = {});
void FinishCfiModuleSet(CfiModuleSet* set);
// The process's loaded modules (dl_iterate_phdr; the vDSO included; not
// glibc's iconv modules, which glibc may unload without dlclose). Normal
// context: takes the loader's lock and allocates.
CfiModuleSet LoadedCfiModules();

// A function's code range as its FDE gives it: [start, end).
struct CfiRange {
  uintptr_t start = 0, end = 0;
};
// Every FDE range of the .eh_frame_hdr at `hdr`, in its table's order (by
// start), reading only inside `m`'s readable spans (its other fields are
// not used). `image_delta` is subtracted from pc-relative pointers: 0 for a
// module where the loader mapped it; for a module read from its file, where
// the file's bytes sit minus where the loader would put them (absolute
// pointers are left as they are: they are already link-time addresses).
// Entries that do not parse are skipped. For naming code that no symbol
// names (symbolizer.cc): a stripped binary's function is one frame, not one
// per instruction. Normal context (allocates).
void CfiFunctionRanges(CfiModule m, uintptr_t hdr, uintptr_t image_delta, std::vector<CfiRange>* out);

enum class CfiStepResult {
  kStepped,  // `regs` now hold the caller's frame
  kRoot,     // the frame's return address is undefined: the stack's root
  kFailed,   // cannot tell (see the header comment)
};
// One frame up. `exact_pc`: regs.value[kCfiRip] is the interrupted
// instruction itself (frame 0, or the frame a signal interrupted) rather
// than a return address, whose call may have been the function's last
// instruction. On kStepped, *signal_frame tells whether the frame just left
// was a signal trampoline (its caller's pc is then exact too).
CfiStepResult CfiStep(const CfiModuleSet& modules, CfiSpan stack, bool exact_pc, CfiRegisters* regs,
                      bool* signal_frame);

// Rows shared by the processes of a recording (shared_rows.h makes and
// maps the table). A step that misses this process's own row cache looks
// the row up here, by the module's identity and the pc's offset in it,
// before it reads any CFI; a row it computes is stored here too. A build's
// hundredth cc1 then starts with the rows the earlier ones found instead of
// searching and interpreting cc1's CFI again (and faulting its pages in).
// `words`: `entries` entries of 4 words (tag, the two row words, unused),
// `entries` a power of two; null: none. Entries are read and written as
// the row cache's are (relaxed atomics, a tag that hashes the key and both
// words), so a torn or foreign entry misses; a row that passes is only ever
// a CFA rule and stack slots, whose reads stay inside the stack.
// Normal context, before sampling starts (or with no walk in flight).
void UseSharedRows(uint64_t* words, size_t entries);
// Steps this process took from a shared row, and from rows it computed
// from the CFI (diagnostics). Reset in a fork child (ResetCfiRowCounts).
struct CfiRowCounts {
  uint64_t shared = 0, computed = 0;
};
CfiRowCounts CfiRowCountsSoFar();
void ResetCfiRowCounts();

enum class CfiWalkEnd { kRoot, kCut, kFailed };
struct CfiWalk {
  int depth = 0;
  CfiWalkEnd end = CfiWalkEnd::kFailed;
};
// Writes the pc of each frame, leaf first, starting from `start` (the
// interrupted context: every register known), into `out` (capacity
// entries). kRoot: the walk reached a frame whose return address is
// undefined (or 0); kCut: `capacity` frames were written first.
CfiWalk CfiUnwind(const CfiModuleSet& modules, CfiSpan stack, const CfiRegisters& start, uintptr_t* out,
                  int capacity);

}  // namespace collector
