// PLT stubs: which function each entry of an x86-64 procedure linkage table
// (.plt, .plt.sec, .plt.got) jumps to, so that a sample in a stub is named
// "memcpy@plt" as objdump and perf name it, not "app+0x1020" (the FDE the
// linker writes covers the whole table: every stub would share one name).
//
// A stub is recognised by its instruction, not by its position in the
// table: it jumps through a GOT slot (`jmp *disp32(%rip)`, after an optional
// endbr64 and bnd prefix), and the dynamic relocation of that slot names the
// function. This covers lazy tables (.plt), IBT's split tables (.plt.sec),
// and GOT-bound stubs (.plt.got) alike; an entry that jumps through no slot
// of the list (the lazy header, IBT's lazy entries) is returned with no
// slot, and the symbolizer names it "[plt]".
//
// Pure functions on bytes the caller extracted (symbolizer.cc reads them
// with libelf): memory-safe on any input, fuzzed (tests/fuzz/plt_fuzz.cc).
// Thread-safe (no state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace collector {

// A GOT slot a dynamic relocation fills: with a symbol's address
// (R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT: `symbol`), or with what an ifunc
// resolver returns (R_X86_64_IRELATIVE: `symbol` empty, `resolver` the
// resolver's link-time address, which the ifunc's own symbol names).
struct GotSlot {
  uint64_t address = 0;  // link-time
  std::string_view symbol;
  uint64_t resolver = 0;
};

struct PltStub {
  uint64_t start = 0;  // link-time address of the entry
  uint64_t size = 0;
  const GotSlot* slot = nullptr;  // into the caller's slots; null: no slot (header, lazy entry)
};

// Sorts `slots` by address, for DecodePltStubs.
void SortGotSlots(std::vector<GotSlot>* slots);

// The entries of one PLT section at link-time `address`, `entry_size` bytes
// each (the section's sh_entsize; 0 or more than 64 reads as 16, the
// psABI's size). `slots` sorted by SortGotSlots. A trailing partial entry
// is left out.
std::vector<PltStub> DecodePltStubs(uint64_t address, std::string_view bytes, uint64_t entry_size,
                                    std::span<const GotSlot> slots);

}  // namespace collector
