#include "collector/python/cpython_layout.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace collector::python {
namespace {

// Each table: offsetof() in CPython's headers at the release (pyenv builds
// of 3.10.13, 3.11.7, 3.12.1 and 3.13.0 compiled with Py_BUILD_CORE); the
// structs did not change within a minor version. tests/collector/
// python_frames_test.cc checks each against the interpreter it finds.

PyLayout Layout310() {
  PyLayout l;
  l.minor = 10;
  l.runtime_tss_key = 584;
  l.runtime_finalizing = 16;
  l.tstate_bytes = 280;
  l.runtime_interpreters_head = 32;
  l.interp_next = 0;
  l.interp_threads_head = 8;  // tstate_head
  l.tstate_next = 8;
  l.tstate_thread_id = 176;
  l.tstate_frame = 24;  // frame: the current PyFrameObject
  l.frame_previous = 24;  // f_back
  l.frame_code = 32;
  l.frame_globals = 48;
  l.frame_instr = 96;  // int f_lasti, in code units
  l.frame_bytes = 104;
  l.instr = InstrKind::kLastiIndex;
  l.entry = EntryKind::kOnePerFrame;
  l.code_firstlineno = 40;
  l.code_filename = 104;
  l.code_name = 112;
  l.code_linetable = 120;
  l.ascii_size = 48;
  l.compact_size = 72;
  return l;
}

PyLayout Layout311() {
  PyLayout l;
  l.minor = 11;
  l.runtime_tss_key = 592;
  l.runtime_finalizing = 24;
  l.tstate_bytes = 360;
  l.runtime_interpreters_head = 40;
  l.interp_next = 0;
  l.interp_threads_head = 16;
  l.tstate_next = 8;
  l.tstate_thread_id = 152;
  l.tstate_frame = 56;  // cframe
  l.cframe_current_frame = 8;
  l.tstate_datastack_chunk = 296;
  l.frame_code = 32;
  l.frame_globals = 8;
  l.frame_previous = 48;
  l.frame_instr = 56;  // prev_instr
  l.frame_is_entry = 68;
  l.frame_owner = 69;
  l.frame_bytes = 72;
  l.instr = InstrKind::kPrevInstr;
  l.entry = EntryKind::kIsEntryFlag;
  l.code_firstlineno = 72;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_linetable = 136;
  l.code_first_traceable = 168;
  l.code_instructions = 184;
  l.ascii_size = 48;
  l.compact_size = 72;
  return l;
}

PyLayout Layout312() {
  PyLayout l;
  l.minor = 12;
  l.runtime_tss_key = 1544;
  l.runtime_finalizing = 24;
  l.tstate_bytes = 288;
  l.runtime_interpreters_head = 40;
  l.interp_next = 0;
  l.interp_threads_head = 72;
  l.tstate_next = 8;
  l.tstate_thread_id = 136;
  l.tstate_frame = 56;  // cframe
  l.cframe_current_frame = 0;
  l.tstate_datastack_chunk = 232;
  l.frame_code = 0;
  l.frame_previous = 8;
  l.frame_globals = 24;
  l.frame_instr = 56;  // prev_instr
  l.frame_owner = 70;
  l.frame_bytes = 72;
  l.owner_cstack = 3;
  l.instr = InstrKind::kPrevInstr;
  l.entry = EntryKind::kShimFrame;
  l.code_firstlineno = 68;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_linetable = 136;
  l.code_first_traceable = 176;
  l.code_instructions = 192;
  l.ascii_size = 40;  // wstr is gone
  l.compact_size = 56;
  return l;
}

PyLayout Layout313() {
  PyLayout l;
  l.minor = 13;
  l.runtime_tss_key = 2160;
  l.runtime_finalizing = 608;
  l.tstate_bytes = 304;
  l.runtime_interpreters_head = 632;
  l.interp_next = 7264;
  l.interp_threads_head = 7344;
  l.tstate_next = 8;
  l.tstate_thread_id = 152;
  l.tstate_frame = 72;  // current_frame (no C frame any more)
  l.tstate_datastack_chunk = 232;
  l.frame_code = 0;  // f_executable
  l.frame_previous = 8;
  l.frame_globals = 24;
  l.frame_instr = 56;  // instr_ptr
  l.frame_owner = 70;
  l.frame_bytes = 72;
  l.owner_cstack = 3;
  l.instr = InstrKind::kInstrPtr;
  l.entry = EntryKind::kShimFrame;
  l.code_firstlineno = 68;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_linetable = 136;
  l.code_first_traceable = 184;
  l.code_instructions = 200;
  l.ascii_size = 40;
  l.compact_size = 56;
  return l;
}

uint64_t Load64(std::span<const unsigned char> b, size_t at) {
  uint64_t v = 0;
  if (at + 8 <= b.size()) std::memcpy(&v, b.data() + at, 8);
  return v;
}

// 3.11+ location table (Objects/locations.md): a varint is 6-bit groups,
// least significant first, bit 6 set on every group but the last.
struct Reader {
  std::span<const unsigned char> t;
  size_t at = 0;
  bool ok = true;
  unsigned Byte() {
    if (at >= t.size()) {
      ok = false;
      return 0;
    }
    return t[at++];
  }
  uint32_t Varint() {
    uint32_t v = 0;
    for (int shift = 0; ok && shift < 32; shift += 6) {
      const unsigned b = Byte();
      v |= (b & 63u) << shift;
      if ((b & 64u) == 0) return v;
    }
    ok = false;
    return v;
  }
  int32_t Svarint() {
    const uint32_t u = Varint();
    return (u & 1) ? -static_cast<int32_t>(u >> 1) : static_cast<int32_t>(u >> 1);
  }
};

uint32_t LineFromLocations(std::span<const unsigned char> table, int first_line, uint32_t index) {
  Reader r{table};
  int64_t line = first_line;
  uint64_t start = 0;
  while (r.ok && r.at < table.size()) {
    const unsigned head = r.Byte();
    if ((head & 0x80u) == 0) return 0;  // every entry starts with its top bit set
    const unsigned code = (head >> 3) & 15u;
    const uint64_t end = start + (head & 7u) + 1;
    bool has_line = true;
    if (code == 15) {
      has_line = false;  // no location
    } else if (code == 14) {  // long form
      line += r.Svarint();
      r.Varint();  // end line delta
      r.Varint();  // column + 1
      r.Varint();  // end column + 1
    } else if (code == 13) {  // no column
      line += r.Svarint();
    } else if (code >= 10) {  // one line, two column bytes
      line += code - 10;
      r.Byte();
      r.Byte();
    } else {  // short form: same line, one column byte
      r.Byte();
    }
    if (!r.ok) return 0;
    if (index >= start && index < end) return has_line && line > 0 && line < (int64_t{1} << 31) ? static_cast<uint32_t>(line) : 0;
    start = end;
  }
  return 0;
}

// 3.10 (Objects/lnotab_notes.txt at v3.10): pairs of an unsigned byte
// offset delta and a signed line delta, -128 for "no line"; offsets in
// bytes (two per code unit).
uint32_t LineFrom310(std::span<const unsigned char> table, int first_line, uint32_t index) {
  const uint64_t offset = uint64_t{index} * 2;
  int64_t line = first_line;
  uint64_t start = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    const uint64_t end = start + table[i];
    const int delta = static_cast<int8_t>(table[i + 1]);
    const bool has_line = delta != -128;
    if (has_line) line += delta;
    if (offset >= start && offset < end) return has_line && line > 0 && line < (int64_t{1} << 31) ? static_cast<uint32_t>(line) : 0;
    start = end;
  }
  return 0;
}

}  // namespace

std::optional<PyLayout> LayoutFor(int minor) {
  switch (minor) {
    case 10:
      return Layout310();
    case 11:
      return Layout311();
    case 12:
      return Layout312();
    case 13:
      return Layout313();
    default:
      return std::nullopt;
  }
}

std::optional<PyLayout> LayoutFromDebugOffsets(std::span<const unsigned char> bytes, int minor) {
  // _Py_DebugOffsets as 3.13 defines it (Include/internal/pycore_runtime.h):
  // "xdebugpy", the version (PY_VERSION_HEX), then uint64_t offsets in
  // groups. 3.14 inserted fields and changed frames (tagged f_executable,
  // another owner numbering): not read here.
  if (minor != 13 || bytes.size() < 584 || std::memcmp(bytes.data(), "xdebugpy", 8) != 0) return std::nullopt;
  const uint64_t version = Load64(bytes, 8);
  if (((version >> 24) & 0xff) != 3 || ((version >> 16) & 0xff) != 13) return std::nullopt;
  PyLayout l = Layout313();
  bool plausible = true;
  auto take = [&](size_t at, uint32_t limit, auto* field) {
    const uint64_t v = Load64(bytes, at);
    if (v >= limit) plausible = false;
    *field = static_cast<std::remove_pointer_t<decltype(field)>>(v);
  };
  constexpr uint32_t kObject = 4096, kLarge = 1u << 20;
  take(32, kLarge, &l.runtime_finalizing);
  take(40, kLarge, &l.runtime_interpreters_head);
  take(64, kLarge, &l.interp_next);
  take(72, kLarge, &l.interp_threads_head);
  take(152, kObject, &l.tstate_bytes);
  take(168, kObject, &l.tstate_next);
  take(184, kObject, &l.tstate_frame);
  take(192, kObject, &l.tstate_thread_id);
  take(208, kObject, &l.tstate_datastack_chunk);
  take(232, kObject, &l.frame_previous);
  take(240, kObject, &l.frame_code);
  take(248, kObject, &l.frame_instr);
  take(264, kObject, &l.frame_owner);
  take(280, kObject, &l.code_filename);
  take(288, kObject, &l.code_name);
  take(296, kObject, &l.code_qualname);
  take(304, kObject, &l.code_linetable);
  take(312, kObject, &l.code_firstlineno);
  take(344, kObject, &l.code_instructions);
  take(360, kObject, &l.ob_type);
  take(520, kObject, &l.bytes_size);
  take(528, kObject, &l.bytes_data);
  take(544, kObject, &l.unicode_state);
  take(552, kObject, &l.unicode_length);
  take(560, kObject, &l.ascii_size);
  if (!plausible) return std::nullopt;
  // Not in the debug offsets: the compact header follows the ASCII one by
  // the same 16 bytes (utf8_length, utf8) in every version, and
  // _co_firsttraceable and a frame's f_globals keep their 3.13.0 places.
  l.compact_size = l.ascii_size + 16;
  const uint32_t last = std::max({l.frame_previous, l.frame_code, l.frame_globals, l.frame_instr,
                                  static_cast<uint32_t>(l.frame_owner)});
  l.frame_bytes = (last + 8 + 7) & ~7u;
  return l;
}

uint32_t LineOfInstruction(int minor, std::span<const unsigned char> table, int first_line, uint32_t index) {
  if (minor == 10) return LineFrom310(table, first_line, index);
  return LineFromLocations(table, first_line, index);
}

}  // namespace collector::python
