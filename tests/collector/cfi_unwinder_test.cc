// The sampling handler's own stack walker (collector/cpu/cfi_unwinder.h).
// First on CFI assembled here byte by byte, where every expected value
// follows from the made-up frames' construction; then on this process's
// real CFI, from signal handlers, against libunwind (the second tool).
#include <doctest/doctest.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <ucontext.h>
#include <unistd.h>

#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collector/cpu/cfi_unwinder.h"
#include "collector/cpu/task_clock.h"
#include "collector/cpu/unwinder.h"

using namespace collector;

namespace {

// Little-endian bytes with the DWARF encodings the assembler below needs.
struct Bytes {
  std::vector<uint8_t> b;
  void U8(uint8_t v) { b.push_back(v); }
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void Uleb(uint64_t v) {
    do {
      uint8_t c = v & 0x7f;
      v >>= 7;
      if (v) c |= 0x80;
      b.push_back(c);
    } while (v);
  }
  void Sleb(int64_t v) {
    for (;;) {
      const uint8_t c = v & 0x7f;
      v >>= 7;
      if ((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40))) {
        b.push_back(c);
        return;
      }
      b.push_back(c | 0x80);
    }
  }
  void Append(const Bytes& o) { b.insert(b.end(), o.b.begin(), o.b.end()); }
};

// DWARF CFA opcodes used below.
constexpr uint8_t kAdvanceLoc = 0x40, kOffset = 0x80;
constexpr uint8_t kDefCfa = 0x0c, kDefCfaRegister = 0x0d, kDefCfaOffset = 0x0e, kDefCfaExpression = 0x0f,
                  kExpression = 0x10, kUndefined = 0x07, kRememberState = 0x0a, kRestoreState = 0x0b;
constexpr uint8_t kOpBreg7 = 0x77, kOpBreg16 = 0x80, kOpLit0 = 0x30, kOpAnd = 0x1a, kOpGe = 0x2a, kOpShl = 0x24,
                  kOpPlus = 0x22, kOpDeref = 0x06;

// A made-up module: an .eh_frame_hdr and an .eh_frame in one buffer (its
// only readable segment), describing code at `text` that is never read.
struct FakeModule {
  struct Fde {
    uintptr_t start, size;
    Bytes instructions;
    int cie = 0;
  };
  std::vector<Bytes> cie_instructions;  // one CIE each
  std::vector<bool> cie_signal;
  std::vector<Fde> fdes;                // sorted by start
  // Allocated first, so made-up text can be placed relative to it: the
  // header's table holds 32-bit offsets from the header (and ASan's heap
  // puts blocks of different sizes gigabytes apart).
  std::vector<uint8_t> memory = std::vector<uint8_t>(1 << 16, 0);
  std::string build_id;  // the module's identity across processes (shared rows); "": none
  CfiModuleSet set;

  uintptr_t base() const { return reinterpret_cast<uintptr_t>(memory.data()); }

  int AddCie(Bytes instructions, bool signal = false) {
    cie_instructions.push_back(std::move(instructions));
    cie_signal.push_back(signal);
    return static_cast<int>(cie_instructions.size()) - 1;
  }

  // Lays the sections out in `memory` and builds the module set. FDE
  // addresses are pc-relative (DW_EH_PE_pcrel | sdata4), as GCC writes them.
  void Build(uintptr_t text_lo, uintptr_t text_hi) {
    const size_t kHdrSize = 12 + 8 * fdes.size();
    REQUIRE(kHdrSize + 4096 + 256 * (fdes.size() + cie_instructions.size()) <= memory.size());
    const auto base = reinterpret_cast<uintptr_t>(memory.data());
    size_t at = kHdrSize;
    std::vector<size_t> cie_at;
    for (size_t c = 0; c < cie_instructions.size(); ++c) {
      Bytes e;
      e.U32(0);  // the CIE id
      e.U8(1);   // version
      for (char ch : std::string(cie_signal[c] ? "zRS" : "zR")) e.U8(static_cast<uint8_t>(ch));
      e.U8(0);
      e.Uleb(1);    // code alignment
      e.Sleb(-8);   // data alignment
      e.U8(16);     // the return address column
      e.Uleb(1);    // augmentation data: the FDE pointer encoding
      e.U8(0x1b);   // pcrel | sdata4
      e.Append(cie_instructions[c]);
      cie_at.push_back(at);
      Put(at, e);
    }
    std::vector<size_t> fde_at;
    for (const Fde& f : fdes) {
      fde_at.push_back(at);
      Bytes e;
      e.U32(static_cast<uint32_t>(at + 4 - cie_at[f.cie]));  // back to the CIE
      const uintptr_t field = base + at + 4 + 4;
      e.I32(static_cast<int32_t>(static_cast<intptr_t>(f.start - field)));
      e.U32(static_cast<uint32_t>(f.size));
      e.Uleb(0);  // no augmentation data
      e.Append(f.instructions);
      Put(at, e);
    }
    Bytes h;
    h.U8(1);
    h.U8(0x1b);  // eh_frame_ptr: pcrel sdata4
    h.U8(0x03);  // fde_count: udata4
    h.U8(0x3b);  // table: datarel sdata4
    h.I32(static_cast<int32_t>(kHdrSize - 4));
    h.U32(static_cast<uint32_t>(fdes.size()));
    for (size_t i = 0; i < fdes.size(); ++i) {
      h.I32(static_cast<int32_t>(static_cast<intptr_t>(fdes[i].start - base)));
      h.I32(static_cast<int32_t>(fde_at[i]));
    }
    std::memcpy(memory.data(), h.b.data(), h.b.size());
    const CfiSegment segments[] = {{PT_LOAD, PF_R, 0, memory.size()},
                                   {PT_GNU_EH_FRAME, PF_R, 0, kHdrSize},
                                   {PT_LOAD, PF_R | PF_X, text_lo - base, text_hi - text_lo}};
    set = CfiModuleSet{};
    AddCfiModule(&set, base, segments, 3, build_id);
    FinishCfiModuleSet(&set);
  }

 private:
  // One entry: its 32-bit length, then the body padded to 8 bytes.
  void Put(size_t& at, Bytes body) {
    while ((body.b.size() + 4) % 8) body.U8(0);  // DW_CFA_nop
    Bytes e;
    e.U32(static_cast<uint32_t>(body.b.size()));
    e.Append(body);
    std::memcpy(memory.data() + at, e.b.data(), e.b.size());
    at += e.b.size();
  }
};

// The usual CIE: CFA = rsp + 8, return address at CFA - 8.
Bytes StandardCie() {
  Bytes c;
  c.U8(kDefCfa);
  c.Uleb(7);
  c.Uleb(8);
  c.U8(kOffset | 16);
  c.Uleb(1);
  return c;
}

// The root's CFI (as _start's and clone3's): its return address is
// undefined.
Bytes RootCfi() {
  Bytes c;
  c.U8(kUndefined);
  c.Uleb(16);
  return c;
}

// A frame-pointer function's prologue: push %rbp (1 byte), then
// mov %rsp,%rbp (3 bytes); from +4 on, CFA = rbp + 16, rbp at CFA - 16.
Bytes FramePointerPrologue() {
  Bytes c;
  c.U8(kAdvanceLoc | 1);
  c.U8(kDefCfaOffset);
  c.Uleb(16);
  c.U8(kOffset | 6);  // rbp at CFA - 16
  c.Uleb(2);
  c.U8(kAdvanceLoc | 3);
  c.U8(kDefCfaRegister);
  c.Uleb(6);
  return c;
}

CfiRegisters Regs(uintptr_t pc, uintptr_t sp, uintptr_t rbp) {
  CfiRegisters r;
  for (int i = 0; i < kCfiRegisters; ++i) r.Set(i, 0x1000 + i);  // every register known, as in a signal context
  r.Set(kCfiRip, pc);
  r.Set(kCfiRsp, sp);
  r.Set(kCfiRbp, rbp);
  return r;
}

CfiSpan SpanOf(const std::vector<uint64_t>& stack) {
  const auto lo = reinterpret_cast<uintptr_t>(stack.data());
  return {lo, lo + stack.size() * 8};
}

}  // namespace

TEST_CASE("cfi walker: a frame-pointer function, a leaf and the root, from CFI assembled here") {
  std::vector<uint64_t> stack(64, 0);
  const auto s = reinterpret_cast<uintptr_t>(stack.data());
  FakeModule m;
  const int cie = m.AddCie(StandardCie());
  // Text: three made-up functions, laid out 32 MiB above the module.
  const uintptr_t text = m.base() + (32 << 20);
  const uintptr_t f = text, g = text + 0x100, root = text + 0x200;
  // f: push %rbp (1 byte); mov %rsp,%rbp (3 bytes); body; at +0x40 an
  // epilogue that restores CFA = rsp + 8 (remember/restore around it).
  Bytes fi = FramePointerPrologue();
  fi.U8(kAdvanceLoc | 0x3c);  // to +0x40
  fi.U8(kRememberState);
  fi.U8(kDefCfa);
  fi.Uleb(7);
  fi.Uleb(8);
  fi.U8(kAdvanceLoc | 1);
  fi.U8(kRestoreState);
  m.fdes.push_back({f, 0x80, fi, cie});
  // g: sub $24,%rsp after 4 bytes: CFA = rsp + 32.
  Bytes gi;
  gi.U8(kAdvanceLoc | 4);
  gi.U8(kDefCfaOffset);
  gi.Uleb(32);
  m.fdes.push_back({g, 0x80, gi, cie});
  m.fdes.push_back({root, 0x80, RootCfi(), cie});
  m.Build(text, text + 0x1000);
  REQUIRE(m.set.modules.size() == 1);
  REQUIRE(m.set.modules[0].hdr != 0);
  REQUIRE(m.set.modules[0].fde_count == 3);

  // The stack, from the construction: f's frame at slots 0-1 (saved rbp,
  // return into g), g's 32-byte frame at slots 2-5 (return into root at
  // slot 5), root's slot 6 unused.
  const uintptr_t f_rbp = s + 0;              // f's rbp after mov %rsp,%rbp
  stack[0] = 0xdeadbeef;                      // g's rbp, saved by f
  stack[1] = g + 0x20;                        // return address into g
  stack[5] = root + 0x10;                     // g's return address into root
  uintptr_t out[8];

  SUBCASE("in f's body: CFA from rbp") {
    const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(f + 0x10, s - 16, f_rbp), out, 8);
    REQUIRE(w.end == CfiWalkEnd::kRoot);
    REQUIRE(w.depth == 3);
    CHECK(out[0] == f + 0x10);
    CHECK(out[1] == g + 0x20);
    CHECK(out[2] == root + 0x10);
  }
  SUBCASE("in f's epilogue (after remember_state): CFA from rsp, rbp already popped") {
    // At +0x40 rsp points at the return address (rbp popped).
    const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(f + 0x40, s + 8, 0x77), out, 8);
    REQUIRE(w.end == CfiWalkEnd::kRoot);
    CHECK(w.depth == 3);
    CHECK(out[1] == g + 0x20);
  }
  SUBCASE("after restore_state: the body's rule is back (CFA from rbp)") {
    const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(f + 0x41, s - 64, f_rbp), out, 8);
    REQUIRE(w.end == CfiWalkEnd::kRoot);
    CHECK(out[1] == g + 0x20);
  }
  SUBCASE("one step restores rbp from its slot and sets rsp to the CFA") {
    CfiRegisters r = Regs(f + 0x10, s - 16, f_rbp);
    bool signal = true;
    REQUIRE(CfiStep(m.set, SpanOf(stack), true, &r, &signal) == CfiStepResult::kStepped);
    CHECK_FALSE(signal);
    CHECK(r.value[kCfiRip] == g + 0x20);
    CHECK(r.value[kCfiRsp] == s + 16);
    CHECK(r.value[kCfiRbp] == 0xdeadbeef);
    CHECK(r.value[3] == 0x1003);  // rbx: no rule, kept
  }
  SUBCASE("capacity reached first: cut") {
    const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(f + 0x10, s - 16, f_rbp), out, 2);
    CHECK(w.end == CfiWalkEnd::kCut);
    CHECK(w.depth == 2);
  }
  SUBCASE("a return address just past a function's end belongs to that function") {
    // A call that was f's last instruction: its return address is f + 0x80,
    // the first byte after f (a gap); the lookup must use the call (pc - 1)
    // and find f again. This second f frame has its rbp at slot 2, so CFA =
    // slot 4 and its return address into root at slot 3.
    stack[1] = f + 0x80;
    stack[0] = s + 16;  // the rbp f's second frame sees
    stack[3] = root + 0x10;
    const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(f + 0x10, s - 16, f_rbp), out, 8);
    REQUIRE(w.end == CfiWalkEnd::kRoot);
    REQUIRE(w.depth == 3);
    CHECK(out[1] == f + 0x80);
    CHECK(out[2] == root + 0x10);
  }
  SUBCASE("a pc outside every module, or in a gap between FDEs, fails") {
    CHECK(CfiUnwind(m.set, SpanOf(stack), Regs(text + 0x5000, s, f_rbp), out, 8).end == CfiWalkEnd::kFailed);
    CHECK(CfiUnwind(m.set, SpanOf(stack), Regs(f + 0x90, s, f_rbp), out, 8).end == CfiWalkEnd::kFailed);
    CHECK(CfiUnwind(m.set, SpanOf(stack), Regs(text - 1, s, f_rbp), out, 8).end == CfiWalkEnd::kFailed);
  }
  SUBCASE("a return address slot outside the allowed stack fails") {
    CfiSpan narrow = SpanOf(stack);
    narrow.hi = narrow.lo + 8;  // slot 1 (f's return address) not allowed
    CHECK(CfiUnwind(m.set, narrow, Regs(f + 0x10, s - 16, f_rbp), out, 8).end == CfiWalkEnd::kFailed);
  }
  SUBCASE("a frame with its return address in a register and no stack of its own (glibc's vfork)") {
    // v at text + 0x300: after `pop %rdi`, CFA = rsp + 0 and the return
    // address is in rdi (DW_CFA_register 16, 5), as in glibc's __vfork
    // around its system call. Its caller is g, whose frame starts at the
    // same stack pointer.
    FakeModule vm;
    const int vcie = vm.AddCie(StandardCie());
    const uintptr_t vtext = vm.base() + (32 << 20);
    const uintptr_t v = vtext + 0x300, vg = vtext + 0x100, vroot = vtext + 0x200;
    Bytes vi;
    vi.U8(kAdvanceLoc | 1);
    vi.U8(kDefCfaOffset);
    vi.Uleb(0);
    vi.U8(0x09);  // DW_CFA_register: the return address (16) is in rdi (5)
    vi.Uleb(16);
    vi.Uleb(5);
    vm.fdes.push_back({vg, 0x80, gi, vcie});
    vm.fdes.push_back({vroot, 0x80, RootCfi(), vcie});
    vm.fdes.push_back({v, 0x20, vi, vcie});
    vm.Build(vtext, vtext + 0x1000);
    // g's 32-byte frame at slots 2-5 as above; v runs with rsp at slot 2.
    stack[5] = vroot + 0x10;
    CfiRegisters r = Regs(v + 8, s + 16, 0);
    r.Set(5, vg + 0x20);  // rdi: the return address into g
    const CfiWalk w = CfiUnwind(vm.set, SpanOf(stack), r, out, 8);
    REQUIRE(w.end == CfiWalkEnd::kRoot);
    REQUIRE(w.depth == 3);
    CHECK(out[1] == vg + 0x20);
    CHECK(out[2] == vroot + 0x10);
    // The same register rule pointing back at itself, with the stack
    // pointer unmoved, is a loop.
    r.Set(5, v + 8);
    CHECK(CfiUnwind(vm.set, SpanOf(stack), r, out, 8).end == CfiWalkEnd::kFailed);
  }
  SUBCASE("a frame whose caller's stack pointer does not move up fails (a loop)") {
    stack[1] = f + 0x10;  // f "returns" into f with the same rbp: the same CFA again
    stack[0] = f_rbp;
    const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(f + 0x10, s - 16, f_rbp), out, 8);
    CHECK(w.end == CfiWalkEnd::kFailed);
  }
}

TEST_CASE("cfi walker: the PLT's CFA expression and a signal frame's register expressions") {
  std::vector<uint64_t> stack(128, 0);
  const auto s = reinterpret_cast<uintptr_t>(stack.data());
  FakeModule m;
  const int cie = m.AddCie(StandardCie());
  // The signal trampoline's CIE: "zRS"; its FDE starts one byte before the
  // trampoline, as glibc's __restore_rt's does.
  const int sig_cie = m.AddCie(Bytes{}, true);
  const uintptr_t text = m.base() + (48 << 20);
  const uintptr_t plt = text, tramp = text + 0x100, interrupted = text + 0x200, root = text + 0x300;
  // PLT: CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0), binutils' expression.
  Bytes pi;
  pi.U8(kDefCfaExpression);
  Bytes e;
  e.U8(kOpBreg7);
  e.Sleb(8);
  e.U8(kOpBreg16);
  e.Sleb(0);
  e.U8(kOpLit0 + 15);
  e.U8(kOpAnd);
  e.U8(kOpLit0 + 11);
  e.U8(kOpGe);
  e.U8(kOpLit0 + 3);
  e.U8(kOpShl);
  e.U8(kOpPlus);
  pi.Uleb(e.b.size());
  pi.Append(e);
  m.fdes.push_back({plt, 0x40, pi, cie});
  // The trampoline: the interrupted context's saved registers lie at fixed
  // offsets from rsp (a made-up ucontext: rsp at +40, rip at +48, rbp at
  // +56); CFA = the saved rsp (breg7 40; deref).
  Bytes ti;
  ti.U8(kDefCfaExpression);
  Bytes c;
  c.U8(kOpBreg7);
  c.Sleb(40);
  c.U8(kOpDeref);
  ti.Uleb(c.b.size());
  ti.Append(c);
  auto saved_at = [&](int reg, int offset) {
    ti.U8(kExpression);
    ti.Uleb(reg);
    Bytes x;
    x.U8(kOpBreg7);
    x.Sleb(offset);
    ti.Uleb(x.b.size());
    ti.Append(x);
  };
  saved_at(7, 40);
  saved_at(16, 48);
  saved_at(6, 56);
  m.fdes.push_back({tramp - 1, 0x20, ti, sig_cie});
  // The interrupted function starts exactly where the signal hit it:
  // only an exact lookup (no pc - 1) finds it.
  m.fdes.push_back({interrupted, 0x40, Bytes{}, cie});
  m.fdes.push_back({root, 0x40, RootCfi(), cie});
  m.Build(text, text + 0x1000);
  uintptr_t out[8];

  SUBCASE("PLT entry, first 11 bytes: CFA = rsp + 8") {
    stack[0] = root + 4;
    const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(plt + 0x10 + 6, s, 0), out, 8);
    REQUIRE(w.end == CfiWalkEnd::kRoot);
    REQUIRE(w.depth == 2);
    CHECK(out[1] == root + 4);
  }
  SUBCASE("PLT entry, after its push: CFA = rsp + 16") {
    stack[1] = root + 4;
    stack[0] = 0x5555;  // what the PLT pushed
    const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(plt + 0x10 + 12, s, 0), out, 8);
    REQUIRE(w.end == CfiWalkEnd::kRoot);
    CHECK(out[1] == root + 4);
  }
  SUBCASE("through a signal frame: registers from the saved context, the caller's pc exact") {
    // The handler returned into the trampoline: its frame's rsp points at
    // the saved context (slots 0-7); the interrupted code's stack is higher
    // up (slot 32), its return address into root at slot 32.
    const uintptr_t interrupted_sp = s + 32 * 8;
    stack[5] = interrupted_sp;  // +40: rsp
    stack[6] = interrupted;     // +48: rip, the first byte of its function
    stack[7] = 0x4242;          // +56: rbp
    stack[32] = root + 8;
    const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(tramp, s, 0), out, 8);
    REQUIRE(w.end == CfiWalkEnd::kRoot);
    REQUIRE(w.depth == 3);
    CHECK(out[0] == tramp);
    CHECK(out[1] == interrupted);
    CHECK(out[2] == root + 8);
    CfiRegisters r = Regs(tramp, s, 0);
    bool signal = false;
    REQUIRE(CfiStep(m.set, SpanOf(stack), true, &r, &signal) == CfiStepResult::kStepped);
    CHECK(signal);
    CHECK(r.value[kCfiRbp] == 0x4242);
    CHECK(r.value[kCfiRsp] == interrupted_sp);
  }
  SUBCASE("a signal frame whose saved stack pointer lies outside the stack fails") {
    stack[5] = 0x10;
    stack[6] = interrupted;
    CHECK(CfiUnwind(m.set, SpanOf(stack), Regs(tramp, s, 0), out, 8).end == CfiWalkEnd::kFailed);
  }
}

TEST_CASE("cfi walker: module sets refuse unusable headers and keep lookups inside their spans") {
  FakeModule m;
  const int cie = m.AddCie(StandardCie());
  std::vector<uint64_t> stack(16, 0);
  const uintptr_t text = m.base() + (64 << 20);
  m.fdes.push_back({text, 0x40, Bytes{}, cie});
  m.Build(text, text + 0x100);
  const CfiModule& good = m.set.modules[0];
  REQUIRE(good.hdr != 0);
  const auto base = reinterpret_cast<uintptr_t>(m.memory.data());
  const CfiSegment load_r{PT_LOAD, PF_R, 0, m.memory.size()};
  const CfiSegment text_seg{PT_LOAD, PF_R | PF_X, text - base, 0x100};

  SUBCASE("a table encoding other than datarel sdata4: no table, the text still known") {
    m.memory[3] = 0x1b;
    CfiModuleSet set;
    const CfiSegment segs[] = {load_r, {PT_GNU_EH_FRAME, PF_R, 0, 16}, text_seg};
    AddCfiModule(&set, base, segs, 3);
    FinishCfiModuleSet(&set);
    REQUIRE(set.modules.size() == 1);
    CHECK(set.modules[0].hdr == 0);
    CHECK(set.Find(text + 4) == &set.modules[0]);
  }
  SUBCASE("an FDE count larger than the segment holds: refused") {
    const uint32_t huge = 1u << 28;
    std::memcpy(m.memory.data() + 8, &huge, 4);
    CfiModuleSet set;
    const CfiSegment segs[] = {load_r, {PT_GNU_EH_FRAME, PF_R, 0, 16}, text_seg};
    AddCfiModule(&set, base, segs, 3);
    CHECK(set.modules[0].hdr == 0);
  }
  SUBCASE("a header outside every readable segment: refused") {
    CfiModuleSet set;
    const CfiSegment segs[] = {{PT_LOAD, PF_R, 0, 8}, {PT_GNU_EH_FRAME, PF_R, 16, 16}, text_seg};
    AddCfiModule(&set, base, segs, 3);
    CHECK(set.modules[0].hdr == 0);
  }
  SUBCASE("an FDE whose CIE pointer leaves the segment fails the step") {
    // The FDE's CIE offset (right after its length) made to point before
    // the buffer.
    const int32_t fde_rel = [&] {
      int32_t v;
      std::memcpy(&v, m.memory.data() + 16, 4);
      return v;
    }();
    const uint32_t far = 1u << 30;
    std::memcpy(m.memory.data() + fde_rel + 4, &far, 4);
    uintptr_t out[4];
    CfiRegisters r = Regs(text + 4, reinterpret_cast<uintptr_t>(stack.data()), 0);
    CHECK(CfiUnwind(m.set, SpanOf(stack), r, out, 4).end == CfiWalkEnd::kFailed);
  }
  SUBCASE("modules are found by their executable segments, sorted") {
    CfiModuleSet set;
    const CfiSegment a[] = {{PT_LOAD, PF_R | PF_X, 0x5000, 0x1000}};
    const CfiSegment b[] = {{PT_LOAD, PF_R | PF_X, 0x1000, 0x1000}, {PT_LOAD, PF_R | PF_W, 0x2000, 0x1000}};
    AddCfiModule(&set, 0x100000, a, 1);
    AddCfiModule(&set, 0x100000, b, 2);
    FinishCfiModuleSet(&set);
    REQUIRE(set.modules.size() == 2);
    CHECK(set.Find(0x101000) == &set.modules[0]);
    CHECK(set.Find(0x101fff) == &set.modules[0]);
    CHECK(set.Find(0x102000) == nullptr);  // the writable segment is not text
    CHECK(set.Find(0x105800) == &set.modules[1]);
    CHECK(set.Find(0x106000) == nullptr);
    CHECK(set.Find(0xfff) == nullptr);
  }
}

// --- the real thing: this process's CFI, from signal handlers --------------

namespace {

struct Comparison {
  std::vector<uintptr_t> walker, libunwind;
  uint64_t walker_samples = 0;
};
Comparison* comparing = nullptr;
StackBounds compare_stack;

// Unwinds the interrupted context both ways. SIGNAL HANDLER (test only:
// the vectors were reserved beforehand, so nothing here allocates).
void CompareHandler(int, siginfo_t*, void* uc) {
  uintptr_t a[512], b[512];
  const uint64_t before = UnwindCountsSoFar().walker;
  const UnwindResult w = Unwind(uc, a, 512, false, false, compare_stack);
  comparing->walker_samples = UnwindCountsSoFar().walker - before;
  const UnwindResult l = Unwind(uc, b, 512, false, false, StackBounds{});
  comparing->walker.assign(a, a + w.depth);
  comparing->libunwind.assign(b, b + l.depth);
}

extern "C" __attribute__((noinline)) int cfi_test_descend(int depth, int sig) {
  static int (*volatile next)(int, int) = cfi_test_descend;
  if (depth > 0) return next(depth - 1, sig) + 1;
  raise(sig);
  return 0;
}

int QsortCompare(const void* x, const void* y) {
  static int fired = 0;
  if (!fired++) raise(SIGRTMIN + 7);  // inside libc's qsort, once
  return *static_cast<const int*>(x) - *static_cast<const int*>(y);
}

Comparison CompareAt(const std::function<void(int)>& trigger, StackBounds stack) {
  Comparison c;
  c.walker.reserve(512);
  c.libunwind.reserve(512);
  comparing = &c;
  compare_stack = stack;
  struct sigaction sa {};
  sa.sa_sigaction = CompareHandler;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGRTMIN + 7, &sa, nullptr);
  trigger(SIGRTMIN + 7);
  comparing = nullptr;
  return c;
}

void CheckSame(const Comparison& c, size_t min_depth) {
  INFO("walker " << c.walker.size() << " frames, libunwind " << c.libunwind.size());
  CHECK(c.walker_samples == 1);  // the walker did it, no fallback
  CHECK(c.walker.size() >= min_depth);
  CHECK(c.walker == c.libunwind);
}

}  // namespace

TEST_CASE("cfi walker: the same stacks as libunwind on this process's own code, libc and threads") {
  std::string error;
  StartUnwinder();
  REQUIRE(EnsureLibunwind(&error));
  PublishFrameModules();
  const StackBounds main_stack = ThisThreadStack(gettid() == getpid());
  SUBCASE("nested calls of every depth up to 200") {
    for (int depth : {0, 1, 2, 7, 30, 200}) {
      CAPTURE(depth);
      CheckSame(CompareAt([&](int sig) { cfi_test_descend(depth, sig); }, main_stack), depth + 3);
    }
  }
  SUBCASE("from a callback inside libc's qsort") {
    CheckSame(CompareAt(
                  [](int) {
                    int v[64];
                    for (int i = 0; i < 64; ++i) v[i] = (i * 37) % 64;
                    qsort(v, 64, sizeof v[0], QsortCompare);
                  },
                  main_stack),
              4);
  }
  SUBCASE("on a thread glibc started: to clone3, the stack's root") {
    Comparison c;
    std::thread([&] {
      c = CompareAt([](int sig) { cfi_test_descend(12, sig); }, ThisThreadStack(false));
    }).join();
    CheckSame(c, 15);
  }
  SUBCASE("through the program's own signal handler: across the signal frame") {
    static StackBounds bounds;
    bounds = main_stack;
    static Comparison inner;
    struct sigaction usr {};
    usr.sa_sigaction = [](int, siginfo_t*, void*) { inner = CompareAt([](int sig) { cfi_test_descend(3, sig); }, bounds); };
    usr.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &usr, nullptr);
    cfi_test_descend(5, SIGUSR1);
    signal(SIGUSR1, SIG_DFL);
    // The handler's 3 nested calls, the trampoline, then the 5 nested
    // calls around the first raise: both walkers crossed the signal frame.
    CheckSame(inner, 12);
  }
  SUBCASE("a stack pointer outside the thread's stack is left to libunwind") {
    const Comparison c = CompareAt([](int sig) { cfi_test_descend(2, sig); }, StackBounds{1, 2});
    CHECK(c.walker_samples == 0);
    CHECK(c.walker == c.libunwind);
  }
}

namespace {
std::vector<uintptr_t> here_walker, here_libunwind;
extern "C" __attribute__((noinline)) int cfi_test_descend_here(int depth, StackBounds stack) {
  static int (*volatile next)(int, StackBounds) = cfi_test_descend_here;
  if (depth > 0) return next(depth - 1, stack) + 1;
  uintptr_t a[512], b[512];
  const int w = WalkHere(a, 512, stack);
  const int l = UnwindHere(b, 512);  // libunwind: loaded, and no bounds given
  here_walker.assign(a, a + w);
  here_libunwind.assign(b, b + l);
  return 0;
}
}  // namespace

TEST_CASE("cfi walker: the loader's entry code, which has no CFI and calls the first constructors, is a stack's root") {
  const CfiModuleSet set = LoadedCfiModules();
  // From the ELF header at the loader's base: its entry point.
  const uintptr_t base = getauxval(AT_BASE);
  REQUIRE(base != 0);
  const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(base);
  CHECK(set.root_lo == base + eh->e_entry);
  CHECK(set.root_hi == set.root_lo + kLoaderEntrySize);
  // glibc's _dl_start_user returns from _dl_init 0x30 bytes in (x86-64):
  // a return address there ends the walk instead of failing it.
  std::vector<uint64_t> stack(8, 0);
  CfiRegisters r;
  r.Set(kCfiRip, set.root_lo + 0x30);
  r.Set(kCfiRsp, reinterpret_cast<uintptr_t>(stack.data()));
  bool signal = false;
  CHECK(CfiStep(set, SpanOf(stack), false, &r, &signal) == CfiStepResult::kRoot);
  // And the profile counts a stack that ends there as complete.
  StartUnwinder();
  PublishFrameModules();
  CHECK(InStackRootCode(set.root_lo + 0x30));
  CHECK_FALSE(InStackRootCode(set.root_hi));
  CHECK_FALSE(InStackRootCode(set.root_lo - 1));
}

TEST_CASE("cfi walker: from its caller's own frame (no signal), the same stack as libunwind") {
  std::string error;
  StartUnwinder();
  REQUIRE(EnsureLibunwind(&error));
  PublishFrameModules();
  const StackBounds main_stack = ThisThreadStack(gettid() == getpid());
  for (int depth : {0, 3, 40}) {
    CAPTURE(depth);
    cfi_test_descend_here(depth, main_stack);
    INFO("walker " << here_walker.size() << " frames, libunwind " << here_libunwind.size());
    REQUIRE(here_walker.size() >= static_cast<size_t>(depth) + 3);
    // The two calls return to different places in the innermost caller;
    // from there outward the stacks are the same.
    CHECK(here_walker.size() == here_libunwind.size());
    CHECK(std::equal(here_walker.begin() + 1, here_walker.end(), here_libunwind.begin() + 1));
    CHECK(here_walker[0] != here_libunwind[0]);
  }
  // Off its own stack: it gives up.
  uintptr_t out[16];
  CHECK(WalkHere(out, 16, StackBounds{1, 2}) == 0);
}

TEST_CASE("cfi walker: its row cache never answers for an older module set at the same addresses") {
  // A library unloaded and another loaded at the same place: the same pc,
  // other CFI. The first walk fills the cache; the second, over a set built
  // after the change, must follow the new CFI (CFA rsp + 16, not + 8).
  std::vector<uint64_t> stack(16, 0);
  const auto s = reinterpret_cast<uintptr_t>(stack.data());
  FakeModule m;
  const int cie = m.AddCie(StandardCie());
  const uintptr_t text = m.base() + (40 << 20);
  const uintptr_t f = text, root = text + 0x100;
  m.fdes.push_back({f, 0x40, Bytes{}, cie});  // CFA = rsp + 8 (the CIE's)
  m.fdes.push_back({root, 0x40, RootCfi(), cie});
  m.Build(text, text + 0x1000);
  stack[0] = root + 1;
  stack[1] = root + 2;
  uintptr_t out[4];
  for (int i = 0; i < 2; ++i) {  // the second walk is served by the cache
    const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(f + 4, s, 0), out, 4);
    REQUIRE(w.end == CfiWalkEnd::kRoot);
    CHECK(out[1] == root + 1);
  }
  Bytes fi;
  fi.U8(kDefCfaOffset);
  fi.Uleb(16);
  m.fdes[0].instructions = fi;
  m.Build(text, text + 0x1000);
  const CfiWalk w = CfiUnwind(m.set, SpanOf(stack), Regs(f + 4, s, 0), out, 4);
  REQUIRE(w.end == CfiWalkEnd::kRoot);
  CHECK(out[1] == root + 2);
}

TEST_CASE("cfi walker: a step its row cache serves ends where the step from the CFI did") {
  // Each step is taken twice in one module set: the first from the CFI
  // (which fills the cache), the second after the module's CFI has been
  // wiped, so that only the cache can serve it. Both must give the
  // registers the construction gives.
  std::vector<uint64_t> stack(32, 0);
  const auto s = reinterpret_cast<uintptr_t>(stack.data());
  FakeModule m;
  const int cie = m.AddCie(StandardCie());
  const uintptr_t text = m.base() + (48 << 20);
  const uintptr_t f = text, h = text + 0x100, root = text + 0x200;
  m.fdes.push_back({f, 0x80, FramePointerPrologue(), cie});  // f: CFA = rbp + 16 in its body
  // h: pushes rbx and r12 (CFA = rsp + 24, rbx at CFA - 16, r12 at
  // CFA - 24) and says r13 does not survive it.
  Bytes hi;
  hi.U8(kAdvanceLoc | 2);
  hi.U8(kDefCfaOffset);
  hi.Uleb(24);
  hi.U8(kOffset | 3);
  hi.Uleb(2);
  hi.U8(kOffset | 12);
  hi.Uleb(3);
  hi.U8(kUndefined);
  hi.Uleb(13);
  m.fdes.push_back({h, 0x80, hi, cie});
  m.fdes.push_back({root, 0x80, RootCfi(), cie});
  m.Build(text, text + 0x1000);

  // h's frame at slots 0-2 (r12, rbx, the return address into f); f's at
  // slots 3-4 (the saved rbp, the return address into root).
  stack[0] = 0xc12;
  stack[1] = 0xb3;
  stack[2] = f + 0x20;
  stack[3] = 0xbb;
  stack[4] = root + 0x10;
  struct Case {
    const char* what;
    CfiRegisters start;
    CfiSpan span;
    CfiStepResult result;
  };
  CfiSpan without_ra = SpanOf(stack);
  without_ra.hi = s + 16;  // h's return address slot not allowed
  const Case cases[] = {
      {"h: rbx and r12 from the stack, r13 gone", Regs(h + 8, s, 0x77), SpanOf(stack), CfiStepResult::kStepped},
      {"f: CFA from rbp, rbp from its slot", Regs(f + 0x10, s + 16, s + 24), SpanOf(stack), CfiStepResult::kStepped},
      {"root: undefined return address", Regs(root + 4, s + 40, 0), SpanOf(stack), CfiStepResult::kRoot},
      {"h: its return address outside the stack", Regs(h + 9, s, 0x77), without_ra, CfiStepResult::kFailed},
      {"f: an rbp below the stack pointer (a loop)", Regs(f + 0x11, s + 64, s + 16), SpanOf(stack),
       CfiStepResult::kFailed},
      {"f: a CFA at the stack pointer itself (a loop)", Regs(f + 0x12, s + 64, s + 48), SpanOf(stack),
       CfiStepResult::kFailed},
  };
  CfiRegisters first[std::size(cases)];
  for (size_t i = 0; i < std::size(cases); ++i) {
    CAPTURE(cases[i].what);
    first[i] = cases[i].start;
    bool signal = true;
    REQUIRE(CfiStep(m.set, cases[i].span, true, &first[i], &signal) == cases[i].result);
    CHECK_FALSE(signal);
  }
  // From the construction.
  CHECK(first[0].value[kCfiRip] == f + 0x20);
  CHECK(first[0].value[kCfiRsp] == s + 24);
  CHECK(first[0].value[3] == 0xb3);
  CHECK(first[0].value[12] == 0xc12);
  CHECK_FALSE(first[0].Has(13));
  CHECK(first[0].value[kCfiRbp] == 0x77);  // kept
  CHECK(first[0].value[1] == 0x1001);      // rdx: no rule, kept
  CHECK(first[1].value[kCfiRip] == root + 0x10);
  CHECK(first[1].value[kCfiRsp] == s + 40);
  CHECK(first[1].value[kCfiRbp] == 0xbb);
  for (size_t i = 2; i < std::size(cases); ++i) {  // not stepped: as they were
    CHECK(first[i].known == cases[i].start.known);
    CHECK(std::memcmp(first[i].value, cases[i].start.value, sizeof first[i].value) == 0);
  }

  std::fill(m.memory.begin(), m.memory.end(), 0);  // no CFI left: only the cache can answer
  CfiRegisters probe = Regs(h + 0x40, s, 0);  // an address no step above looked up
  bool signal = false;
  REQUIRE(CfiStep(m.set, SpanOf(stack), true, &probe, &signal) == CfiStepResult::kFailed);
  for (size_t i = 0; i < std::size(cases); ++i) {
    CAPTURE(cases[i].what);
    CfiRegisters again = cases[i].start;
    REQUIRE(CfiStep(m.set, cases[i].span, true, &again, &signal) == cases[i].result);
    CHECK_FALSE(signal);
    CHECK(again.known == first[i].known);
    for (int r = 0; r < kCfiRegisters; ++r)
      if (again.Has(r)) CHECK(again.value[r] == first[i].value[r]);
  }
}

TEST_CASE("cfi walker: a row one process computed serves another process's copy of the same file (shared rows)") {
  // Copies of one module at different places stand for the same file in
  // two processes; each copy's CFI is wiped before its step, so only the
  // shared table can answer. g: CFA = rsp + 32 after 4 bytes, its return
  // address at CFA - 8 (the CIE's rule).
  std::vector<uint64_t> table(4 * 64, 0);
  UseSharedRows(table.data(), 64);
  struct Detach {
    ~Detach() { UseSharedRows(nullptr, 0); }
  } detach;
  std::vector<uint64_t> stack(8, 0);
  const auto s = reinterpret_cast<uintptr_t>(stack.data());
  const std::string id_a("\x5a\x01\x02\x03\x04\x05\x06\x07", 8), id_b("\x5b\x01\x02\x03\x04\x05\x06\x07", 8);
  auto copy = [](FakeModule& m, const std::string& build_id) {
    const int cie = m.AddCie(StandardCie());
    const uintptr_t text = m.base() + (56 << 20);
    Bytes gi;
    gi.U8(kAdvanceLoc | 4);
    gi.U8(kDefCfaOffset);
    gi.Uleb(32);
    m.fdes.push_back({text, 0x80, gi, cie});
    m.fdes.push_back({text + 0x100, 0x80, RootCfi(), cie});
    m.build_id = build_id;
    m.Build(text, text + 0x1000);
    return text;
  };
  stack[3] = 0x4242;  // g's return address, at CFA - 8 = rsp + 24
  // Steps at g + 8 of `m` (text at `g`): the result, and the registers.
  auto step = [&](FakeModule& m, uintptr_t g, CfiRegisters* r) {
    *r = Regs(g + 8, s, 0x77);
    bool signal = false;
    return CfiStep(m.set, SpanOf(stack), true, r, &signal);
  };
  const CfiRowCounts before = CfiRowCountsSoFar();
  FakeModule first;
  const uintptr_t g1 = copy(first, id_a);
  CfiRegisters r1;
  REQUIRE(step(first, g1, &r1) == CfiStepResult::kStepped);  // from the CFI
  CHECK(r1.value[kCfiRip] == 0x4242);
  CHECK(r1.value[kCfiRsp] == s + 32);
  CHECK(CfiRowCountsSoFar().computed == before.computed + 1);

  FakeModule second;
  const uintptr_t g2 = copy(second, id_a);
  REQUIRE(g2 != g1);  // another address: the process's own cache cannot answer
  std::fill(second.memory.begin(), second.memory.end(), 0);
  CfiRegisters r2;
  REQUIRE(step(second, g2, &r2) == CfiStepResult::kStepped);
  CHECK(r2.value[kCfiRip] == 0x4242);
  CHECK(r2.value[kCfiRsp] == s + 32);
  CHECK(r2.value[kCfiRbp] == 0x77);
  CHECK(CfiRowCountsSoFar().shared == before.shared + 1);

  SUBCASE("another file (another build id) is not answered") {
    FakeModule other;
    const uintptr_t g3 = copy(other, id_b);
    std::fill(other.memory.begin(), other.memory.end(), 0);
    CfiRegisters r3;
    CHECK(step(other, g3, &r3) == CfiStepResult::kFailed);
  }
  SUBCASE("a module without a build id is not answered") {
    FakeModule anonymous;
    const uintptr_t g3 = copy(anonymous, "");
    std::fill(anonymous.memory.begin(), anonymous.memory.end(), 0);
    CfiRegisters r3;
    CHECK(step(anonymous, g3, &r3) == CfiStepResult::kFailed);
  }
  SUBCASE("an entry another process tore (one word changed) is not answered") {
    bool torn = false;
    for (size_t e = 0; e < 64; ++e)
      if (table[4 * e] != 0) {
        table[4 * e + 1] ^= 8;  // the CFA offset, 8 more
        torn = true;
      }
    REQUIRE(torn);
    FakeModule third;
    const uintptr_t g3 = copy(third, id_a);
    std::fill(third.memory.begin(), third.memory.end(), 0);
    CfiRegisters r3;
    CHECK(step(third, g3, &r3) == CfiStepResult::kFailed);
  }
}

// --- many interruption points: whatever the timer hits ---------------------

namespace {

struct Tally {
  std::atomic<int> compared{0}, same{0}, walker_only{0}, fallback{0};
  std::atomic<int> first_mismatch_depth{-1};
};
Tally* tally = nullptr;
StackBounds tally_stack;
int tally_fd = -1;  // the task-clock event that interrupts (or -1: an itimer)

// Both unwinds of whatever instruction the timer interrupted. SIGNAL
// HANDLER (test only): fixed buffers, atomics.
void TallyOne(void* uc) {
  if (!tally) return;
  uintptr_t a[256], b[256 + kUnwindSlack];
  const uint64_t before = UnwindCountsSoFar().walker;
  const UnwindResult w = Unwind(uc, a, 256, false, false, tally_stack);
  if (UnwindCountsSoFar().walker == before) {
    tally->fallback.fetch_add(1);
    return;
  }
  const UnwindResult l = Unwind(uc, b, 256 + kUnwindSlack, false, false, StackBounds{});
  tally->compared.fetch_add(1);
  if (w.depth == l.depth && std::memcmp(a, b, sizeof(uintptr_t) * static_cast<size_t>(w.depth)) == 0) {
    tally->same.fetch_add(1);
  } else if (tally->first_mismatch_depth.load() < 0) {
    int d = 0;
    while (d < w.depth && d < l.depth && a[d] == b[d]) ++d;
    tally->first_mismatch_depth.store(d);
  }
}

void TallyHandler(int, siginfo_t*, void* uc) {
  TallyOne(uc);
  // The next interruption counts from here, as the sampler's does: a
  // handler slower than the period (both unwinds, under ASan) would
  // otherwise never let the program run.
  if (tally_fd >= 0) ioctl(tally_fd, PERF_EVENT_IOC_REFRESH, 1);
}

int CompareInts(const void* x, const void* y) {
  const int a = *static_cast<const int*>(x), b = *static_cast<const int*>(y);
  return (a > b) - (a < b);
}

// Work through many kinds of code: libc's string and memory functions
// (hand-written assembly with CFI), qsort's callbacks, malloc, printf, the
// C++ library's sort and maps, math.
extern "C" __attribute__((noinline)) double cfi_test_busy(int rounds) {
  double acc = 0;
  std::vector<int> v(4096);
  std::vector<char> text(1 << 16, 'x');
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>((i * 2654435761u + r) % 100003);
    qsort(v.data(), v.size(), sizeof v[0], CompareInts);
    std::sort(v.begin(), v.end(), [](int a, int b) { return a > b; });
    text[(r * 7919) % text.size()] = 0;
    acc += static_cast<double>(std::strlen(text.data()));
    text[(r * 7919) % text.size()] = 'x';
    std::vector<char> copy(text);
    acc += static_cast<double>(std::memchr(copy.data(), 'y', copy.size()) == nullptr);
    std::map<int, std::string> m;
    for (int i = 0; i < 200; ++i) m[v[static_cast<size_t>(i)]] = std::to_string(i);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%d %f", r, acc);
    acc += std::sin(acc) + static_cast<double>(m.size()) + buf[0];
    void* p = std::malloc(static_cast<size_t>(1000 + r % 5000));
    std::free(p);
  }
  return acc;
}

}  // namespace

TEST_CASE("cfi walker: at thousands of timer interruptions in libc, libstdc++ and this binary, the same stacks as libunwind") {
  std::string error;
  StartUnwinder();
  REQUIRE(EnsureLibunwind(&error));
  PublishFrameModules();
  Tally t;
  tally_stack = ThisThreadStack(gettid() == getpid());
  tally = &t;
  struct sigaction sa {};
  sa.sa_sigaction = TallyHandler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  // An interruption per 100 us of this thread's CPU time: the task-clock
  // event, as the sampler uses it; where the kernel refuses it, the
  // process's profiling timer (at the kernel's tick: fewer points).
  tally_fd = collector::OpenTaskClock(0, 100000);
  f_owner_ex owner{F_OWNER_TID, static_cast<pid_t>(gettid())};
  if (tally_fd >= 0 && (fcntl(tally_fd, F_SETFL, O_ASYNC) != 0 || fcntl(tally_fd, F_SETSIG, SIGPROF) != 0 ||
                        fcntl(tally_fd, F_SETOWN_EX, &owner) != 0 || ioctl(tally_fd, PERF_EVENT_IOC_REFRESH, 1) != 0)) {
    close(tally_fd);
    tally_fd = -1;
  }
  const int wanted = tally_fd >= 0 ? 3000 : 150;
  itimerval every{{0, 200}, {0, 200}};
  if (tally_fd < 0) setitimer(ITIMER_PROF, &every, nullptr);
  double sink = 0;
  for (int i = 0; i < 400 && t.compared.load() + t.fallback.load() < wanted; ++i) sink += cfi_test_busy(5);
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  tally = nullptr;
  if (tally_fd >= 0) {
    const int fd = tally_fd;
    tally_fd = -1;
    close(fd);
  }
  signal(SIGPROF, SIG_DFL);
  INFO("compared " << t.compared.load() << ", same " << t.same.load() << ", left to libunwind " << t.fallback.load()
                   << ", first mismatch at frame " << t.first_mismatch_depth.load() << " (sink " << sink << ")");
  REQUIRE(t.compared.load() + t.fallback.load() >= wanted);
  CHECK(t.same.load() == t.compared.load());
  CHECK(t.fallback.load() <= t.compared.load() / 100);
}
