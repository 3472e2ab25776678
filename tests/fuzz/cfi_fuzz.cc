// Fuzz target: the sampling handler's CFI walker (collector/cpu/cfi_unwinder.h)
// on arbitrary call-frame information and an arbitrary stack. Input: a 4-byte
// pc offset (from the header), a byte each for rsp's and rbp's slot, 2
// bytes of build id (0, 0: none), 256 bytes of stack, then the module's memory: an
// .eh_frame_hdr at its start and whatever follows it (.eh_frame). The
// stack and the memory are exact-size heap copies, so a read outside the
// spans the walker was given is an ASan report; the properties: the walk
// stays within its capacity, starts at the given pc, and is deterministic.
// A module with a build id also goes through the shared rows (a table the
// target keeps across inputs, as a recording's processes share theirs):
// a row an earlier input stored under the same build id and offset may
// answer, and the walk must stay as safe; the second walk, the same.
#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "collector/cpu/cfi_unwinder.h"

namespace {
void Property(bool ok, const char* what) {
  if (!ok) {
    __builtin_printf("property failed: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace collector;
  constexpr size_t kHead = 8, kStack = 256;
  if (size < kHead + kStack + 4) return 0;
  int32_t pc_offset = 0;
  std::memcpy(&pc_offset, data, 4);
  const size_t mem_size = size - kHead - kStack;
  auto stack = std::make_unique<uint64_t[]>(kStack / 8);
  std::memcpy(stack.get(), data + kHead, kStack);
  auto memory = std::make_unique<uint8_t[]>(mem_size);
  std::memcpy(memory.get(), data + kHead + kStack, mem_size);

  const auto base = reinterpret_cast<uintptr_t>(memory.get());
  // Text 16 MiB below the memory up to its end, execute-only: looked up,
  // never read (a readable segment would be a span the walker may read).
  const uintptr_t text_below = uintptr_t{1} << 24;
  const CfiSegment segments[] = {{PT_LOAD, PF_R, 0, mem_size},
                                 {PT_GNU_EH_FRAME, PF_R, 0, mem_size},
                                 {PT_LOAD, PF_X, static_cast<uintptr_t>(0) - text_below, text_below + mem_size}};
  static uint64_t shared_rows[4 * 256];
  UseSharedRows(shared_rows, 256);
  const char id[2] = {static_cast<char>(data[6]), static_cast<char>(data[7])};
  CfiModuleSet set;
  AddCfiModule(&set, base, segments, 3, data[6] || data[7] ? std::string_view(id, 2) : std::string_view());
  FinishCfiModuleSet(&set);

  const auto s = reinterpret_cast<uintptr_t>(stack.get());
  CfiRegisters regs;
  for (int r = 0; r < kCfiRegisters; ++r) regs.Set(r, stack[r % (kStack / 8)]);
  regs.Set(kCfiRip, base + static_cast<uintptr_t>(static_cast<intptr_t>(pc_offset)));
  regs.Set(kCfiRsp, s + (data[4] % (kStack / 8)) * 8);
  regs.Set(kCfiRbp, s + (data[5] % (kStack / 8)) * 8);
  const CfiSpan span{s, s + kStack};
  uintptr_t out[64], again[64];
  const CfiWalk w = CfiUnwind(set, span, regs, out, 64);
  Property(w.depth >= 0 && w.depth <= 64, "depth within capacity");
  Property(w.depth == 0 || out[0] == regs.value[kCfiRip], "the first frame is the given pc");
  Property(w.end != CfiWalkEnd::kCut || w.depth == 64, "cut only at capacity");
  const CfiWalk w2 = CfiUnwind(set, span, regs, again, 64);
  // With shared rows only when the first walk could not have been served
  // by a row another input stored (its build id none): such a row may
  // differ from what this input's CFI says.
  if (!data[6] && !data[7])
    Property(w2.depth == w.depth && w2.end == w.end && std::memcmp(out, again, sizeof(uintptr_t) * w.depth) == 0,
             "deterministic");
  return 0;
}
