// SIGNAL-HANDLER CODE: everything reachable from CfiUnwind and CfiStep runs
// in the sampling signal handler (see cfi_unwinder.h); the module set's
// builders (AddCfiModule, FinishCfiModuleSet, LoadedCfiModules) run in
// normal context.
#include "collector/cpu/cfi_unwinder.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "collector/cpu/modules.h"

namespace collector {
namespace {

// DW_EH_PE_* pointer encodings (LSB's .eh_frame, DWARF 4 section 7.x).
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeFormat = 0x0f;
constexpr uint8_t kPeApplication = 0x70;
constexpr uint8_t kPeAbsptr = 0x00, kPeUleb128 = 0x01, kPeUdata2 = 0x02, kPeUdata4 = 0x03, kPeUdata8 = 0x04,
                  kPeSleb128 = 0x09, kPeSdata2 = 0x0a, kPeSdata4 = 0x0b, kPeSdata8 = 0x0c;
constexpr uint8_t kPePcrel = 0x10, kPeDatarel = 0x30;
constexpr uint8_t kTableEncoding = kPeDatarel | kPeSdata4;  // the only one binary search is defined for

// Bounds of what one walk does, so damaged CFI cannot make it spin.
constexpr int kMaxExpressionOps = 256;  // DWARF expression operations per evaluation
constexpr int kExpressionStack = 16;
constexpr int kStateStack = 8;  // DW_CFA_remember_state depth

// A bounded little-endian cursor over [p, end). Any read past the end
// clears ok and yields 0; callers check ok once after a group of reads.
struct Reader {
  uintptr_t p = 0, end = 0;
  bool ok = true;

  bool Take(size_t n) {
    if (!ok || end < p || end - p < n) {
      ok = false;
      return false;
    }
    return true;
  }
  template <class T>
  T Fixed() {
    T v{};
    if (!Take(sizeof v)) return v;
    std::memcpy(&v, reinterpret_cast<const void*>(p), sizeof v);
    p += sizeof v;
    return v;
  }
  uint8_t U8() { return Fixed<uint8_t>(); }
  // The next n bytes as a reader of their own, stepped over here.
  Reader Sub(uint64_t n) {
    if (!Take(n)) return Reader{0, 0, false};
    const Reader sub{p, p + n};
    p += n;
    return sub;
  }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const uint8_t b = U8();
      if (!ok) return 0;
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
      if (shift > 70) {  // no meaningful LEB128 is this long
        ok = false;
        return 0;
      }
    }
  }
  int64_t Sleb() {
    uint64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    do {
      b = U8();
      if (!ok) return 0;
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      shift += 7;
      if (shift > 77) {
        ok = false;
        return 0;
      }
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(v);
  }
  // A value of the encoding's format, no application (pc_range).
  uint64_t Format(uint8_t enc) {
    switch (enc & kPeFormat) {
      case kPeAbsptr: return Fixed<uint64_t>();
      case kPeUleb128: return Uleb();
      case kPeUdata2: return Fixed<uint16_t>();
      case kPeUdata4: return Fixed<uint32_t>();
      case kPeUdata8: return Fixed<uint64_t>();
      case kPeSleb128: return static_cast<uint64_t>(Sleb());
      case kPeSdata2: return static_cast<uint64_t>(int64_t{Fixed<int16_t>()});
      case kPeSdata4: return static_cast<uint64_t>(int64_t{Fixed<int32_t>()});
      case kPeSdata8: return Fixed<uint64_t>();
      default: ok = false; return 0;
    }
  }
  // An encoded pointer; only absolute and pc-relative application occur in
  // .eh_frame on x86-64 (datarel is .eh_frame_hdr's own, handled there).
  // The indirect bit is ignored: only the personality routine uses it, and
  // its value is skipped.
  uintptr_t Pointer(uint8_t enc) {
    const uintptr_t at = p;
    const uint64_t v = Format(enc);
    switch (enc & kPeApplication) {
      case 0: return v;
      case kPePcrel: return at + v;
      default: ok = false; return 0;
    }
  }
};

// A register's rule in one row of the CFI table. 16 bytes, and neither it
// nor Row initializes its members by default: RunInstructions keeps
// kStateStack rows for DW_CFA_remember_state on the sampled thread's stack,
// and zeroing them for every frame cost more than the walk itself.
struct Rule {
  enum Kind : uint8_t { kSame, kUndefined, kOffset, kValOffset, kRegister, kExpression, kValExpression };
  Kind kind;
  uint8_t reg;        // kRegister
  uint32_t expr_len;  // kExpression, kValExpression
  int64_t value;      // kOffset, kValOffset: the offset; the expressions: the block's address

  static Rule Of(Kind k, int64_t value) { return {k, 0, 0, value}; }
  static Rule Expression(Kind k, uintptr_t block, uint32_t len) { return {k, 0, len, static_cast<int64_t>(block)}; }
  uintptr_t expr() const { return static_cast<uintptr_t>(value); }
};

struct Row {
  // CFA = register + offset, or an expression.
  bool cfa_is_expr;
  uint8_t cfa_reg;
  int64_t cfa_offset;
  uintptr_t cfa_expr;
  uint32_t cfa_expr_len;
  Rule rules[kCfiRegisters];

  // Before the CIE's instructions: every register keeps its value. (Only
  // the kinds: a kSame rule's other fields are never read.)
  void Clear() {
    cfa_is_expr = false;
    cfa_reg = kCfiRsp;
    cfa_offset = 0;
    for (Rule& r : rules) r.kind = Rule::kSame;
  }
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = 0;
  uint64_t ra_reg = kCfiRip;
  uint8_t fde_encoding = kPeAbsptr;
  bool signal_frame = false;
  bool has_augmentation_data = false;
  uintptr_t instructions = 0, end = 0;
};

// The span of `m` that holds `a`, as a reader from a to the span's end.
bool ReaderAt(const CfiModule& m, uintptr_t a, Reader* r) {
  for (int i = 0; i < m.readable_count; ++i)
    if (m.readable[i].Holds(a, 1)) {
      *r = Reader{a, m.readable[i].hi};
      return true;
    }
  return false;
}

// The CIE or FDE at `at` in `m`: a reader over its body, after its length
// (64-bit DWARF lengths are taken too).
bool EntryAt(const CfiModule& m, uintptr_t at, Reader* entry) {
  Reader r;
  if (!ReaderAt(m, at, &r)) return false;
  uint64_t length = r.Fixed<uint32_t>();
  if (length == 0xffffffffu) length = r.Fixed<uint64_t>();
  if (!r.ok || length == 0) return false;
  *entry = r.Sub(length);
  return entry->ok;
}

bool ParseCie(const CfiModule& m, uintptr_t at, Cie* cie) {
  Reader r;
  if (!EntryAt(m, at, &r)) return false;
  if (r.Fixed<uint32_t>() != 0) return false;  // a CIE's id is 0 in .eh_frame
  const uint8_t version = r.U8();
  if (version != 1 && version != 3) return false;
  char aug[8];
  int n = 0;
  for (;;) {
    const uint8_t c = r.U8();
    if (!r.ok || n == static_cast<int>(sizeof aug)) return false;
    if (c == 0) break;
    aug[n++] = static_cast<char>(c);
  }
  cie->code_align = r.Uleb();
  cie->data_align = r.Sleb();
  cie->ra_reg = version == 1 ? r.U8() : r.Uleb();
  if (!r.ok || cie->ra_reg >= kCfiRegisters) return false;
  if (n > 0 && aug[0] == 'z') {
    cie->has_augmentation_data = true;
    Reader data = r.Sub(r.Uleb());
    for (int i = 1; i < n; ++i) {
      switch (aug[i]) {
        case 'R': cie->fde_encoding = data.U8(); break;
        case 'L': data.U8(); break;  // the LSDA's encoding; the LSDA is not needed
        case 'P': {
          const uint8_t enc = data.U8();
          data.Format(enc);
          break;
        }
        case 'S': cie->signal_frame = true; break;
        default: i = n; break;  // unknown: the rest of the data is skipped by its length
      }
    }
    if (!data.ok) return false;
  } else if (n > 0) {
    return false;  // "eh" and other pre-'z' augmentations
  }
  cie->instructions = r.p;
  cie->end = r.end;
  return r.ok;
}

// Entry i's field k (0: initial location, 1: FDE) of m's .eh_frame_hdr
// table, as an address. The table follows variable-length encodings, so it
// need not be aligned.
uintptr_t TableField(const CfiModule& m, size_t i, int k) {
  int32_t v;
  std::memcpy(&v, reinterpret_cast<const void*>(m.table + 8 * i + 4 * static_cast<size_t>(k)), sizeof v);
  return m.hdr + static_cast<intptr_t>(v);
}

// The FDE covering `pc` in `m`, through .eh_frame_hdr's sorted table.
bool FindFde(const CfiModule& m, uintptr_t pc, Cie* cie, uintptr_t* fde_instructions, uintptr_t* fde_end,
             uintptr_t* fde_start) {
  if (!m.hdr || m.fde_count == 0) return false;
  auto field = [&m](size_t i, int k) { return TableField(m, i, k); };
  // The last entry whose initial location is <= pc.
  size_t lo = 0, hi = m.fde_count;
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    if (field(mid, 0) <= pc)
      lo = mid;
    else
      hi = mid;
  }
  if (field(lo, 0) > pc) return false;
  Reader r;
  if (!EntryAt(m, field(lo, 1), &r)) return false;
  const uintptr_t cie_field = r.p;
  const uint32_t cie_offset = r.Fixed<uint32_t>();
  if (!r.ok || cie_offset == 0 || cie_offset > cie_field) return false;  // 0 would make it a CIE
  if (!ParseCie(m, cie_field - cie_offset, cie)) return false;
  const uintptr_t start = r.Pointer(cie->fde_encoding);
  const uint64_t range = r.Format(cie->fde_encoding);
  if (!r.ok || pc < start || pc - start >= range) return false;
  if (cie->has_augmentation_data) r.Sub(r.Uleb());
  *fde_instructions = r.p;
  *fde_end = r.end;
  *fde_start = start;
  return r.ok;
}

// Validates the .eh_frame_hdr at `hdr` against m's readable spans and
// takes its table: version, eh_frame_ptr encoding, fde_count encoding,
// table encoding; then eh_frame_ptr and fde_count; then the table.
// SIGNAL-HANDLER CODE (FoundModule) as well as normal context.
void TakeHeader(CfiModule* m, uintptr_t hdr) {
  Reader r;
  if (!hdr || !ReaderAt(*m, hdr, &r)) return;
  const uint8_t version = r.U8(), ptr_enc = r.U8(), count_enc = r.U8(), table_enc = r.U8();
  if (ptr_enc != kPeOmit) r.Pointer(ptr_enc);
  const uint64_t fde_count = count_enc == kPeOmit ? 0 : r.Format(count_enc);
  if (r.ok && version == 1 && table_enc == kTableEncoding && (count_enc & kPeApplication) == 0 && fde_count > 0 &&
      fde_count <= (r.end - r.p) / 8) {
    m->hdr = hdr;
    m->table = r.p;
    m->fde_count = fde_count;
  }
}

// glibc unloads iconv's modules itself (__libc_dlclose, not the wrapper
// that keeps walks off a module being unmapped): the walker never reads
// them; their frames are left to libunwind.
bool UnloadedByGlibc(const char* path) { return path && std::strstr(path, "/gconv/"); }

// A module that is not in the set (loaded since its publication: a
// library's constructors run inside dlopen, before it; or loaded by glibc
// itself), from glibc's lock-free _dl_find_object. Its whole mapping is
// taken as readable: the object's own CFI points only into its read-only
// segment. SIGNAL-HANDLER CODE: _dl_find_object is async-signal-safe.
bool FoundModule(const CfiModuleSet& set, uintptr_t pc, CfiModule* m) {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
  if (!set.find_object) return false;
  dl_find_object found{};
  if (reinterpret_cast<int (*)(void*, dl_find_object*)>(set.find_object)(reinterpret_cast<void*>(pc), &found) != 0)
    return false;
  if (!found.dlfo_eh_frame || (found.dlfo_link_map && UnloadedByGlibc(found.dlfo_link_map->l_name)))
    return false;
  *m = CfiModule{};
  m->text_lo = reinterpret_cast<uintptr_t>(found.dlfo_map_start);
  m->text_hi = reinterpret_cast<uintptr_t>(found.dlfo_map_end);
  m->readable[0] = {m->text_lo, m->text_hi};
  m->readable_count = 1;
  TakeHeader(m, reinterpret_cast<uintptr_t>(found.dlfo_eh_frame));
  return m->hdr != 0;
#else
  (void)set, (void)pc, (void)m;
  return false;
#endif
}

// v * factor, wrapping as the hardware does: damaged CFI may overflow, and
// the result is only ever an offset whose reads are bounds-checked.
int64_t Scaled(uint64_t v, int64_t factor) { return static_cast<int64_t>(v * static_cast<uint64_t>(factor)); }

// Interprets CFA instructions in [r.p, r.end) into `row` while the location
// is <= pc. `initial`: the CIE's row, for DW_CFA_restore (null while the CIE
// itself runs). Returns false on anything malformed or unsupported.
bool RunInstructions(Reader r, const Cie& cie, uintptr_t loc, uintptr_t pc, const Row* initial, Row* row) {
  Row saved[kStateStack];
  int saved_count = 0;
  // No backward jumps: each instruction takes at least a byte of the
  // entry, so its length bounds the work.
  while (r.p < r.end) {
    const uint8_t op = r.U8();
    const uint8_t low = op & 0x3f;
    uint64_t reg = 0;
    uint64_t advance = 0;
    bool advances = false;
    switch (op >> 6) {
      case 1:  // DW_CFA_advance_loc
        advance = low * cie.code_align;
        advances = true;
        break;
      case 2:  // DW_CFA_offset
        reg = low;
        if (reg < kCfiRegisters) row->rules[reg] = Rule::Of(Rule::kOffset, Scaled(r.Uleb(), cie.data_align));
        else r.Uleb();
        break;
      case 3:  // DW_CFA_restore
        if (!initial) return false;
        if (low < kCfiRegisters) row->rules[low] = initial->rules[low];
        break;
      default:
        switch (op) {
          case 0x00: break;  // nop
          case 0x01: {       // set_loc
            const uintptr_t to = r.Pointer(cie.fde_encoding);
            if (!r.ok) return false;
            if (to > pc) return true;
            loc = to;
            break;
          }
          case 0x02: advance = r.U8() * cie.code_align; advances = true; break;
          case 0x03: advance = r.Fixed<uint16_t>() * cie.code_align; advances = true; break;
          case 0x04: advance = r.Fixed<uint32_t>() * cie.code_align; advances = true; break;
          case 0x05:  // offset_extended
          case 0x11:  // offset_extended_sf
          case 0x14:  // val_offset
          case 0x15:  // val_offset_sf
          case 0x2f: {  // GNU_negative_offset_extended
            reg = r.Uleb();
            int64_t off = 0;
            if (op == 0x11 || op == 0x15) off = Scaled(static_cast<uint64_t>(r.Sleb()), cie.data_align);
            else if (op == 0x2f) off = Scaled(0 - r.Uleb(), cie.data_align);
            else off = Scaled(r.Uleb(), cie.data_align);
            const auto kind = op == 0x14 || op == 0x15 ? Rule::kValOffset : Rule::kOffset;
            if (reg < kCfiRegisters) row->rules[reg] = Rule::Of(kind, off);
            break;
          }
          case 0x06:  // restore_extended
            reg = r.Uleb();
            if (!initial) return false;
            if (reg < kCfiRegisters) row->rules[reg] = initial->rules[reg];
            break;
          case 0x07:  // undefined
          case 0x08:  // same_value
            reg = r.Uleb();
            if (reg < kCfiRegisters) row->rules[reg] = Rule::Of(op == 0x07 ? Rule::kUndefined : Rule::kSame, 0);
            break;
          case 0x09: {  // register
            reg = r.Uleb();
            const uint64_t from = r.Uleb();
            if (reg < kCfiRegisters) {
              if (from >= kCfiRegisters) return false;
              row->rules[reg] = {Rule::kRegister, static_cast<uint8_t>(from), 0, 0};
            }
            break;
          }
          case 0x0a:  // remember_state
            if (saved_count == kStateStack) return false;
            saved[saved_count++] = *row;
            break;
          case 0x0b:  // restore_state
            if (saved_count == 0) return false;
            *row = saved[--saved_count];
            break;
          case 0x0c:  // def_cfa
          case 0x12: {  // def_cfa_sf
            reg = r.Uleb();
            const int64_t off = op == 0x0c ? static_cast<int64_t>(r.Uleb()) : Scaled(static_cast<uint64_t>(r.Sleb()), cie.data_align);
            if (reg >= kCfiRegisters) return false;
            row->cfa_is_expr = false;
            row->cfa_reg = static_cast<uint8_t>(reg);
            row->cfa_offset = off;
            break;
          }
          case 0x0d:  // def_cfa_register
            reg = r.Uleb();
            if (reg >= kCfiRegisters) return false;
            row->cfa_is_expr = false;
            row->cfa_reg = static_cast<uint8_t>(reg);
            break;
          case 0x0e:  // def_cfa_offset
            row->cfa_offset = static_cast<int64_t>(r.Uleb());
            break;
          case 0x13:  // def_cfa_offset_sf
            row->cfa_offset = Scaled(static_cast<uint64_t>(r.Sleb()), cie.data_align);
            break;
          case 0x0f: {  // def_cfa_expression
            const Reader block = r.Sub(r.Uleb());
            if (!r.ok || block.end - block.p > UINT32_MAX) return false;
            row->cfa_is_expr = true;
            row->cfa_expr = block.p;
            row->cfa_expr_len = static_cast<uint32_t>(block.end - block.p);
            break;
          }
          case 0x10:    // expression
          case 0x16: {  // val_expression
            reg = r.Uleb();
            const Reader block = r.Sub(r.Uleb());
            if (!r.ok || block.end - block.p > UINT32_MAX) return false;
            if (reg < kCfiRegisters)
              row->rules[reg] = Rule::Expression(op == 0x10 ? Rule::kExpression : Rule::kValExpression, block.p,
                                                 static_cast<uint32_t>(block.end - block.p));
            break;
          }
          case 0x2e:  // GNU_args_size
            r.Uleb();
            break;
          default:
            return false;
        }
    }
    if (!r.ok) return false;
    if (advances) {
      if (loc + advance > pc) return true;  // pc lies in the row built so far
      loc += advance;
    }
  }
  return true;
}

struct Frame {
  const CfiRegisters* regs;
  CfiSpan stack;
};

bool ReadStack(const Frame& f, uint64_t address, uint64_t* value) {
  if (!f.stack.Holds(address, sizeof *value) || address % alignof(uint64_t) != 0) return false;
  *value = *reinterpret_cast<const uint64_t*>(address);
  return true;
}

// A DWARF expression's value. `push`: a value pushed first (the CFA, for
// register rules), or none. `m`: the module the expression is in.
bool Evaluate(const CfiModule* m, const Frame& f, uintptr_t expr, uint32_t len, const uint64_t* push,
              uint64_t* result) {
  Reader whole;
  if (!m || !ReaderAt(*m, expr, &whole)) return false;
  Reader r = whole.Sub(len);
  if (!r.ok) return false;
  uint64_t stack[kExpressionStack];
  int n = 0;
  if (push) stack[n++] = *push;
  auto need = [&](int k) { return n >= k; };
  auto push_value = [&](uint64_t v) {
    if (n == kExpressionStack) return false;
    stack[n++] = v;
    return true;
  };
  for (int ops = 0; r.p < r.end; ++ops) {
    if (ops == kMaxExpressionOps) return false;
    const uint8_t op = r.U8();
    bool ok = true;
    if (op >= 0x30 && op <= 0x4f) {  // lit0..lit31
      ok = push_value(op - 0x30);
    } else if (op >= 0x50 && op <= 0x6f) {  // reg0..reg31: the register's value
      const int reg = op - 0x50;
      ok = reg < kCfiRegisters && f.regs->Has(reg) && push_value(f.regs->value[reg]);
    } else if (op >= 0x70 && op <= 0x8f) {  // breg0..breg31
      const int reg = op - 0x70;
      const int64_t off = r.Sleb();
      ok = reg < kCfiRegisters && f.regs->Has(reg) && push_value(f.regs->value[reg] + static_cast<uint64_t>(off));
    } else {
      switch (op) {
        case 0x03: ok = push_value(r.Fixed<uint64_t>()); break;  // addr
        case 0x06: {  // deref: the stack is the only memory an expression may read
          uint64_t v = 0;
          ok = need(1) && ReadStack(f, stack[n - 1], &v);
          if (ok) stack[n - 1] = v;
          break;
        }
        case 0x08: ok = push_value(r.U8()); break;
        case 0x09: ok = push_value(static_cast<uint64_t>(int64_t{r.Fixed<int8_t>()})); break;
        case 0x0a: ok = push_value(r.Fixed<uint16_t>()); break;
        case 0x0b: ok = push_value(static_cast<uint64_t>(int64_t{r.Fixed<int16_t>()})); break;
        case 0x0c: ok = push_value(r.Fixed<uint32_t>()); break;
        case 0x0d: ok = push_value(static_cast<uint64_t>(int64_t{r.Fixed<int32_t>()})); break;
        case 0x0e:
        case 0x0f: ok = push_value(r.Fixed<uint64_t>()); break;
        case 0x10: ok = push_value(r.Uleb()); break;
        case 0x11: ok = push_value(static_cast<uint64_t>(r.Sleb())); break;
        case 0x12: ok = need(1) && push_value(stack[n - 1]); break;  // dup
        case 0x13: ok = need(1); n -= ok; break;                      // drop
        case 0x14: ok = need(2) && push_value(stack[n - 2]); break;  // over
        case 0x15: {                                                  // pick
          const uint8_t i = r.U8();
          ok = need(i + 1) && push_value(stack[n - 1 - i]);
          break;
        }
        case 0x16: ok = need(2); if (ok) std::swap(stack[n - 1], stack[n - 2]); break;  // swap
        case 0x17:  // rot
          ok = need(3);
          if (ok) {
            const uint64_t top = stack[n - 1];
            stack[n - 1] = stack[n - 2];
            stack[n - 2] = stack[n - 3];
            stack[n - 3] = top;
          }
          break;
        case 0x19: ok = need(1); if (ok && static_cast<int64_t>(stack[n - 1]) < 0) stack[n - 1] = -stack[n - 1]; break;
        case 0x1f: ok = need(1); if (ok) stack[n - 1] = -stack[n - 1]; break;  // neg
        case 0x20: ok = need(1); if (ok) stack[n - 1] = ~stack[n - 1]; break;  // not
        case 0x23: ok = need(1); if (ok) stack[n - 1] += r.Uleb(); break;      // plus_uconst
        case 0x1a: case 0x1b: case 0x1c: case 0x1d: case 0x1e: case 0x21: case 0x22: case 0x24: case 0x25:
        case 0x26: case 0x27: case 0x29: case 0x2a: case 0x2b: case 0x2c: case 0x2d: case 0x2e: {
          ok = need(2);
          if (!ok) break;
          const uint64_t b = stack[--n];
          const uint64_t a = stack[n - 1];
          const auto sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
          uint64_t v = 0;
          switch (op) {
            case 0x1a: v = a & b; break;
            case 0x1b: ok = sb != 0 && !(sa == INT64_MIN && sb == -1); if (ok) v = static_cast<uint64_t>(sa / sb); break;
            case 0x1c: v = a - b; break;
            case 0x1d: ok = b != 0; if (ok) v = a % b; break;
            case 0x1e: v = a * b; break;
            case 0x21: v = a | b; break;
            case 0x22: v = a + b; break;
            case 0x24: v = b >= 64 ? 0 : a << b; break;
            case 0x25: v = b >= 64 ? 0 : a >> b; break;
            case 0x26: v = static_cast<uint64_t>(b >= 64 ? (sa < 0 ? -1 : 0) : sa >> b); break;
            case 0x27: v = a ^ b; break;
            case 0x29: v = sa == sb; break;
            case 0x2a: v = sa >= sb; break;
            case 0x2b: v = sa > sb; break;
            case 0x2c: v = sa <= sb; break;
            case 0x2d: v = sa < sb; break;
            case 0x2e: v = sa != sb; break;
          }
          stack[n - 1] = v;
          break;
        }
        case 0x2f:    // skip
        case 0x28: {  // bra
          const int16_t off = r.Fixed<int16_t>();
          bool jump = true;
          if (op == 0x28) {
            ok = need(1);
            jump = ok && stack[--n] != 0;
          }
          if (ok && jump) {
            const uintptr_t to = r.p + static_cast<intptr_t>(off);
            ok = to >= expr && to <= r.end;
            r.p = to;
          }
          break;
        }
        case 0x96: break;  // nop
        default: ok = false; break;
      }
    }
    if (!ok || !r.ok) return false;
  }
  if (n == 0) return false;
  *result = stack[n - 1];
  return true;
}

// Rows of frames seen recently, shared by every thread: a direct-mapped
// table of 1,024 entries keyed by lookup address and module-set generation
// (a new set — a dlopen, a dlclose — makes every older entry miss). Only
// plain rows are kept: CFA = register + offset, no expressions, no signal
// frame, and the return address, rbx, rbp and r12-r15 each the same,
// undefined or saved at CFA + a multiple of 8 (the others the same): w0
// holds the CFA rule, w1 a byte per kept register, in an entry of three
// words (EntryFind, EntryPut). A hit skips the FDE search and the CFA
// program, and StepCached
// applies the two words directly: a stack sampled again costs a few loads
// per frame (bench/handler_bench.cc: ~60 ns a frame, against ~165 when a
// hit still went through the general step).
constexpr size_t kCacheEntries = 1024;
constexpr int kCachedRegisters = 7;
constexpr uint8_t kCachedRegister[kCachedRegisters] = {3, 6, 12, 13, 14, 15, kCfiRip};
constexpr int8_t kCachedSame = 0, kCachedUndefined = -128;
alignas(64) uint64_t row_cache[3 * kCacheEntries];  // tag, w0, w1 per entry
std::atomic<uint64_t> set_generations{0};

uint64_t CacheTag(uintptr_t key, uint64_t generation, uint64_t w0, uint64_t w1) {
  uint64_t h = (key ^ generation * 0x9e3779b97f4a7c15ull) * 0xc2b2ae3d27d4eb4full;
  h ^= (w0 + 0x165667b19e3779f9ull) * 0x27d4eb2f165667c5ull;
  h ^= (w1 + 0x85ebca77c2b2ae63ull) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 31);
}
// One entry of the row cache or of the shared rows: three words (tag, w0,
// w1) read and written without a lock. The tag hashes the key (with the
// generation) and both words, so a reader that sees a mix of two writes,
// or a never-written entry (all zeros), misses. Plain 64-bit atomics
// (std::atomic_ref): lock-free, and the same in every process that maps a
// shared table.
bool EntryFind(uint64_t* e, uint64_t key, uint64_t generation, uint64_t* w0, uint64_t* w1) {
  const uint64_t tag = std::atomic_ref<uint64_t>(e[0]).load(std::memory_order_relaxed);
  *w0 = std::atomic_ref<uint64_t>(e[1]).load(std::memory_order_relaxed);
  *w1 = std::atomic_ref<uint64_t>(e[2]).load(std::memory_order_relaxed);
  return tag != 0 && tag == CacheTag(key, generation, *w0, *w1);
}

void EntryPut(uint64_t* e, uint64_t key, uint64_t generation, uint64_t w0, uint64_t w1) {
  std::atomic_ref<uint64_t>(e[1]).store(w0, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(e[2]).store(w1, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(e[0]).store(CacheTag(key, generation, w0, w1), std::memory_order_relaxed);
}

uint64_t* CacheSlot(uintptr_t key) { return row_cache + 3 * ((key ^ (key >> 10)) % kCacheEntries); }

bool CacheFind(uintptr_t key, uint64_t generation, uint64_t* w0, uint64_t* w1) {
  return EntryFind(CacheSlot(key), key, generation, w0, w1);
}

// One step by a cached row, with the outcome the general path below gives
// for the same row (CacheWords makes words only of rows it can say this of). Most
// steps of a sample take this path; the general one builds a Row, a Cie and
// the caller's register set, and zeroing those cost more than the step.
CfiStepResult StepCached(uint64_t w0, uint64_t w1, CfiSpan stack, CfiRegisters* regs) {
  const int cfa_reg = static_cast<int>(w0 & 0xff);
  if (cfa_reg >= kCfiRegisters || !regs->Has(cfa_reg)) return CfiStepResult::kFailed;
  const uint64_t cfa = regs->value[cfa_reg] + static_cast<uint64_t>(int64_t{static_cast<int32_t>(w0 >> 32)});
  if (static_cast<int8_t>((w1 >> (8 * (kCachedRegisters - 1))) & 0xff) == kCachedUndefined)
    return CfiStepResult::kRoot;  // the return address's rule (the last kept register)
  // Every read first, so that a failed step leaves `regs` as they were.
  uint64_t saved[kCachedRegisters];
  uint32_t undefined = 0, read = 0;
  for (int i = 0; i < kCachedRegisters; ++i) {
    const auto slot = static_cast<int8_t>((w1 >> (8 * i)) & 0xff);
    if (slot == kCachedSame) continue;
    if (slot == kCachedUndefined) {
      undefined |= 1u << kCachedRegister[i];
      continue;
    }
    const uint64_t at = cfa + static_cast<uint64_t>(int64_t{slot} * 8);
    if (!stack.Holds(at, sizeof(uint64_t)) || at % alignof(uint64_t) != 0) return CfiStepResult::kFailed;
    saved[i] = *reinterpret_cast<const uint64_t*>(at);
    read |= 1u << i;
  }
  // The return address: read from the stack, or kept (a rule the same).
  const bool ra_read = (read >> (kCachedRegisters - 1)) & 1;
  if (!ra_read && !regs->Has(kCfiRip)) return CfiStepResult::kFailed;
  // The caller's frame lies above its callee's (see the general path).
  if (cfa <= regs->value[kCfiRsp]) return CfiStepResult::kFailed;
  regs->known &= ~undefined;
  for (int i = 0; i < kCachedRegisters; ++i)
    if ((read >> i) & 1) regs->Set(kCachedRegister[i], saved[i]);
  regs->Set(kCfiRsp, cfa);
  return CfiStepResult::kStepped;
}

// The two cache words of a row, when it is a plain one (above).
bool CacheWords(const Row& row, const Cie& cie, uint64_t* w0_out, uint64_t* w1_out) {
  if (row.cfa_is_expr || row.cfa_reg >= 16 || cie.signal_frame || cie.ra_reg != kCfiRip ||
      row.cfa_offset != static_cast<int32_t>(row.cfa_offset))
    return false;
  uint64_t w0 = row.cfa_reg | uint64_t{static_cast<uint32_t>(static_cast<int32_t>(row.cfa_offset))} << 32, w1 = 0;
  int cached = 0;
  for (int reg = 0; reg < kCfiRegisters; ++reg) {
    const Rule& rule = row.rules[reg];
    const bool kept = cached < kCachedRegisters && kCachedRegister[cached] == reg;
    if (!kept) {
      if (rule.kind != Rule::kSame) return false;
      continue;
    }
    int8_t slot = kCachedSame;
    if (rule.kind == Rule::kUndefined) {
      slot = kCachedUndefined;
    } else if (rule.kind == Rule::kOffset) {
      if (rule.value % 8 != 0 || rule.value == 0 || rule.value / 8 < -127 || rule.value / 8 > 127) return false;
      slot = static_cast<int8_t>(rule.value / 8);
    } else if (rule.kind != Rule::kSame) {
      return false;
    }
    w1 |= uint64_t{static_cast<uint8_t>(slot)} << (8 * cached);
    ++cached;
  }
  *w0_out = w0;
  *w1_out = w1;
  return true;
}

void CachePut(uintptr_t key, uint64_t generation, uint64_t w0, uint64_t w1) {
  EntryPut(CacheSlot(key), key, generation, w0, w1);
}

// The shared rows (cfi_unwinder.h, UseSharedRows): entries as the row
// cache's (a fourth word unused), keyed by module identity and offset
// instead of address and set generation, in memory other processes write
// too.
std::atomic<uint64_t*> shared_words{nullptr};
std::atomic<size_t> shared_mask{0};
std::atomic<uint64_t> rows_shared{0}, rows_computed{0};

uint64_t SharedKey(uint64_t identity, uintptr_t offset) {
  return (identity ^ (offset * 0x9e3779b97f4a7c15ull)) * 0xc2b2ae3d27d4eb4full + offset;
}
uint64_t* SharedEntry(uint64_t* words, size_t mask, uint64_t key) { return words + 4 * ((key ^ (key >> 29)) & mask); }


}  // namespace

const CfiModule* CfiModuleSet::Find(uintptr_t pc) const {
  // The last module starting at or below pc.
  const auto after = std::upper_bound(modules.begin(), modules.end(), pc,
                                      [](uintptr_t a, const CfiModule& m) { return a < m.text_lo; });
  if (after == modules.begin()) return nullptr;
  const CfiModule& m = *(after - 1);
  return pc < m.text_hi ? &m : nullptr;
}

CfiStepResult CfiStep(const CfiModuleSet& modules, CfiSpan stack, bool exact_pc, CfiRegisters* regs,
                      bool* signal_frame) {
  *signal_frame = false;
  if (!regs->Has(kCfiRip) || !regs->Has(kCfiRsp)) return CfiStepResult::kFailed;
  const uintptr_t pc = regs->value[kCfiRip];
  // A return address may follow a call that was its function's last
  // instruction (a noreturn callee): the call itself is what belongs there.
  const uintptr_t lookup = exact_pc ? pc : pc - 1;
  // A cached row needs no module: it was found in this set's generation,
  // and it reads nothing but the stack.
  if (uint64_t w0 = 0, w1 = 0; CacheFind(lookup, modules.generation, &w0, &w1))
    return StepCached(w0, w1, stack, regs);
  Cie cie;
  Row row;
  const CfiModule* m = modules.Find(lookup);
  CfiModule found;
  if (!m && FoundModule(modules, lookup, &found)) m = &found;
  // Another process of the recording may have found this row already.
  uint64_t* const shared = m && m->identity ? shared_words.load(std::memory_order_acquire) : nullptr;
  const size_t mask = shared ? shared_mask.load(std::memory_order_relaxed) : 0;
  const uint64_t shared_key = shared ? SharedKey(m->identity, lookup - m->text_lo) : 0;
  if (uint64_t w0 = 0, w1 = 0; shared && EntryFind(SharedEntry(shared, mask, shared_key), shared_key, 0, &w0, &w1)) {
    CachePut(lookup, modules.generation, w0, w1);
    rows_shared.fetch_add(1, std::memory_order_relaxed);
    return StepCached(w0, w1, stack, regs);
  }
  uintptr_t instructions = 0, end = 0, start = 0;
  if (!m || !FindFde(*m, lookup, &cie, &instructions, &end, &start)) {
    // No CFI: where the loader's entry code called the first
    // constructors, the stack begins; anywhere else the walk gives up.
    if (lookup >= modules.root_lo && lookup < modules.root_hi) return CfiStepResult::kRoot;
    return CfiStepResult::kFailed;
  }
  Row initial;
  initial.Clear();
  if (!RunInstructions(Reader{cie.instructions, cie.end}, cie, start, UINTPTR_MAX, nullptr, &initial))
    return CfiStepResult::kFailed;
  row = initial;
  if (!RunInstructions(Reader{instructions, end}, cie, start, lookup, &initial, &row)) return CfiStepResult::kFailed;
  rows_computed.fetch_add(1, std::memory_order_relaxed);
  if (uint64_t w0 = 0, w1 = 0; CacheWords(row, cie, &w0, &w1)) {
    CachePut(lookup, modules.generation, w0, w1);
    if (shared) EntryPut(SharedEntry(shared, mask, shared_key), shared_key, 0, w0, w1);
  }

  const Frame f{regs, stack};
  uint64_t cfa = 0;
  if (row.cfa_is_expr) {
    if (!Evaluate(m, f, row.cfa_expr, row.cfa_expr_len, nullptr, &cfa)) return CfiStepResult::kFailed;
  } else {
    if (!regs->Has(row.cfa_reg)) return CfiStepResult::kFailed;
    cfa = regs->value[row.cfa_reg] + static_cast<uint64_t>(row.cfa_offset);
  }
  if (row.rules[cie.ra_reg].kind == Rule::kUndefined) return CfiStepResult::kRoot;

  CfiRegisters next;
  for (int reg = 0; reg < kCfiRegisters; ++reg) {
    const Rule& rule = row.rules[reg];
    uint64_t v = 0;
    switch (rule.kind) {
      case Rule::kSame:
        if (regs->Has(reg)) next.Set(reg, regs->value[reg]);
        continue;
      case Rule::kUndefined: continue;
      case Rule::kOffset:
        if (!ReadStack(f, cfa + static_cast<uint64_t>(rule.value), &v)) return CfiStepResult::kFailed;
        break;
      case Rule::kValOffset: v = cfa + static_cast<uint64_t>(rule.value); break;
      case Rule::kRegister:
        if (!regs->Has(rule.reg)) continue;
        v = regs->value[rule.reg];
        break;
      case Rule::kExpression: {
        uint64_t address = 0;
        if (!Evaluate(m, f, rule.expr(), rule.expr_len, &cfa, &address) || !ReadStack(f, address, &v))
          return CfiStepResult::kFailed;
        break;
      }
      case Rule::kValExpression:
        if (!Evaluate(m, f, rule.expr(), rule.expr_len, &cfa, &v)) return CfiStepResult::kFailed;
        break;
    }
    next.Set(reg, v);
  }
  // The caller's stack pointer is the CFA unless a rule says otherwise
  // (a signal frame restores the interrupted one).
  if (row.rules[kCfiRsp].kind == Rule::kSame) next.Set(kCfiRsp, cfa);
  // The return address column becomes the caller's pc.
  if (!next.Has(static_cast<int>(cie.ra_reg))) return CfiStepResult::kFailed;
  next.Set(kCfiRip, next.value[cie.ra_reg]);
  // A stack grows down, so a caller's frame lies above its callee's; a
  // walk that does not move up is looping. Only a signal frame may jump
  // (to the interrupted context, which this thread's stack must hold). A
  // frame that keeps its return address in a register may occupy no stack
  // at all (glibc's vfork pops it into rdi around the system call, CFA =
  // rsp): the stack pointer stays, the pc moves; a walk that keeps doing
  // that ends at its capacity.
  const uint64_t sp = regs->value[kCfiRsp];
  const bool ra_in_register = row.rules[cie.ra_reg].kind == Rule::kRegister;
  if (!cie.signal_frame &&
      (next.value[kCfiRsp] < sp || (next.value[kCfiRsp] == sp && (!ra_in_register || next.value[kCfiRip] == regs->value[kCfiRip]))))
    return CfiStepResult::kFailed;
  *signal_frame = cie.signal_frame;
  *regs = next;
  return CfiStepResult::kStepped;
}

CfiWalk CfiUnwind(const CfiModuleSet& modules, CfiSpan stack, const CfiRegisters& start, uintptr_t* out,
                  int capacity) {
  CfiWalk walk;
  CfiRegisters regs = start;
  bool exact = true;
  while (true) {
    const uint64_t pc = regs.value[kCfiRip];
    if (pc == 0) {  // as libunwind: a zero return address ends the stack
      walk.end = walk.depth > 0 ? CfiWalkEnd::kRoot : CfiWalkEnd::kFailed;
      return walk;
    }
    if (walk.depth == capacity) {
      walk.end = CfiWalkEnd::kCut;
      return walk;
    }
    out[walk.depth++] = pc;
    bool signal_frame = false;
    switch (CfiStep(modules, stack, exact, &regs, &signal_frame)) {
      case CfiStepResult::kStepped: break;
      case CfiStepResult::kRoot: walk.end = CfiWalkEnd::kRoot; return walk;
      case CfiStepResult::kFailed: walk.end = CfiWalkEnd::kFailed; return walk;
    }
    exact = signal_frame;
  }
}

void UseSharedRows(uint64_t* words, size_t entries) {
  shared_words.store(nullptr, std::memory_order_release);
  if (!words || entries == 0 || (entries & (entries - 1)) != 0) return;
  shared_mask.store(entries - 1, std::memory_order_relaxed);
  shared_words.store(words, std::memory_order_release);
}

CfiRowCounts CfiRowCountsSoFar() {
  return {rows_shared.load(std::memory_order_relaxed), rows_computed.load(std::memory_order_relaxed)};
}

void ResetCfiRowCounts() {
  rows_shared.store(0);
  rows_computed.store(0);
}

void AddCfiModule(CfiModuleSet* set, uintptr_t bias, const CfiSegment* segments, size_t count,
                  std::string_view build_id) {
  // FNV-1a of the build id: any hash would do, the same in every process.
  uint64_t id_hash = 0;
  if (!build_id.empty()) {
    id_hash = 0xcbf29ce484222325ull;
    for (const char c : build_id) id_hash = (id_hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  }
  CfiModule proto;
  uintptr_t hdr = 0;
  for (size_t i = 0; i < count; ++i) {
    const CfiSegment& s = segments[i];
    if (s.type == PT_LOAD && (s.flags & PF_R) && s.memsz > 0 && proto.readable_count < CfiModule::kMaxSpans)
      proto.readable[proto.readable_count++] = {bias + s.vaddr, bias + s.vaddr + s.memsz};
    if (s.type == PT_GNU_EH_FRAME) hdr = bias + s.vaddr;
  }
  TakeHeader(&proto, hdr);
  for (size_t i = 0; i < count; ++i) {
    const CfiSegment& s = segments[i];
    if (s.type != PT_LOAD || !(s.flags & PF_X) || s.memsz == 0) continue;
    CfiModule m = proto;
    m.text_lo = bias + s.vaddr;
    m.text_hi = m.text_lo + s.memsz;
    // Per segment: an offset from text_lo means the same byte of the file
    // only within one segment.
    if (id_hash != 0) m.identity = (id_hash ^ s.vaddr) * 0x9e3779b97f4a7c15ull | 1;
    set->modules.push_back(m);
  }
}

void FinishCfiModuleSet(CfiModuleSet* set) {
  set->generation = set_generations.fetch_add(1, std::memory_order_relaxed) + 1;
  std::sort(set->modules.begin(), set->modules.end(),
            [](const CfiModule& a, const CfiModule& b) { return a.text_lo < b.text_lo; });
}

void CfiFunctionRanges(CfiModule m, uintptr_t hdr, uintptr_t image_delta, std::vector<CfiRange>* out) {
  m.hdr = 0;
  m.fde_count = 0;
  TakeHeader(&m, hdr);
  if (!m.hdr || m.fde_count == 0) return;
  Cie cie;
  uintptr_t cie_at = 0;
  bool cie_ok = false;
  out->reserve(out->size() + m.fde_count);
  for (size_t i = 0; i < m.fde_count; ++i) {
    Reader r;
    if (!EntryAt(m, TableField(m, i, 1), &r)) continue;
    const uintptr_t cie_field = r.p;
    const uint32_t cie_offset = r.Fixed<uint32_t>();
    if (!r.ok || cie_offset == 0 || cie_offset > cie_field) continue;
    // FDEs share a handful of CIEs, usually one: parse each change only.
    if (cie_field - cie_offset != cie_at) {
      cie_at = cie_field - cie_offset;
      cie = Cie{};
      cie_ok = ParseCie(m, cie_at, &cie);
    }
    if (!cie_ok) continue;
    uintptr_t start = r.Pointer(cie.fde_encoding);
    const uint64_t range = r.Format(cie.fde_encoding);
    if (!r.ok || range == 0) continue;
    if ((cie.fde_encoding & kPeApplication) == kPePcrel) start -= image_delta;
    out->push_back({start, start + range});
  }
}

CfiModuleSet LoadedCfiModules() {
  CfiModuleSet set;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* p) {
        if (UnloadedByGlibc(info->dlpi_name)) return 0;
        CfiSegment segments[32];
        size_t n = 0;
        for (size_t i = 0; i < info->dlpi_phnum && n < 32; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD || ph.p_type == PT_GNU_EH_FRAME)
            segments[n++] = {ph.p_type, ph.p_flags, static_cast<uintptr_t>(ph.p_vaddr),
                             static_cast<uintptr_t>(ph.p_memsz)};
        }
        AddCfiModule(static_cast<CfiModuleSet*>(p), info->dlpi_addr, segments, n, BuildIdOf(info));
        return 0;
      },
      &set);
  // Resolved at run time: the collector may run on a glibc older than the
  // one it was built with.
  static void* const find_object = dlsym(RTLD_DEFAULT, "_dl_find_object");
  set.find_object = find_object;
  // The loader's entry (glibc's RTLD_START: _start, then _dl_start_user,
  // which calls _dl_init for the first constructors, ours among them) has
  // no CFI; its ELF header is mapped at the loader's base.
  if (const uintptr_t base = getauxval(AT_BASE)) {
    const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(base);
    if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0) {
      set.root_lo = base + eh->e_entry;
      set.root_hi = set.root_lo + kLoaderEntrySize;
    }
  }
  FinishCfiModuleSet(&set);
  return set;
}

}  // namespace collector
