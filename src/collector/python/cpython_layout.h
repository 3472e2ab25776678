// CPython's internal layout, as offsets: the one place that knows how an
// interpreter's thread states, frames, code objects and strings are laid out
// (x86-64, release builds: not Py_DEBUG, not free-threaded).
//
// No CPython header is included: the collector reads whichever CPython the
// profiled program runs (3.10 to 3.13), so the layouts are tables, one per
// minor version, taken from CPython's own headers at the release tags (the
// 3.11 table is checked against the installed headers by a test); a 3.13+
// interpreter describes itself in _Py_DebugOffsets at the start of
// _PyRuntime, which LayoutFromDebugOffsets reads instead.
//
// Pure data and pure functions; thread-safe; nothing here reads memory it
// was not handed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace collector::python {

// How a frame's instruction position is stored.
enum class InstrKind : uint8_t {
  kLastiIndex,     // 3.10: int f_lasti, the last instruction's index in code units
  kPrevInstr,      // 3.11, 3.12: pointer to the last instruction executed
  kInstrPtr,       // 3.13: pointer to the instruction executing (or about to)
};

// How a C-level _PyEval_EvalFrameDefault call's Python frames are delimited
// on the frame chain.
enum class EntryKind : uint8_t {
  kOnePerFrame,  // 3.10: every Python call is its own C call
  kIsEntryFlag,  // 3.11: the outermost frame of a C call has is_entry set
  kShimFrame,    // 3.12+: a frame owned by the C stack sits below them
};

struct PyLayout {
  int minor = 0;  // 3.minor
  // _PyRuntimeState
  uint32_t runtime_interpreters_head = 0;
  // _finalizing: the state of the thread running Py_FinalizeEx, 0 before.
  // From then on CPython frees the other threads' states (daemon threads,
  // still running) without clearing their PyGILState keys.
  uint32_t runtime_finalizing = 0;
  // The Py_tss_t (int initialized, pthread_key_t key) under which
  // PyGILState keeps each thread's own PyThreadState. -1: unknown (the
  // walk then searches the interpreters' thread lists).
  int32_t runtime_tss_key = -1;
  // PyInterpreterState
  uint32_t interp_next = 0;
  uint32_t interp_threads_head = 0;
  // PyThreadState
  uint32_t tstate_next = 0;
  uint32_t tstate_thread_id = 0;  // pthread_self() of the thread
  uint32_t tstate_bytes = 0;      // sizeof(PyThreadState): its root C frame (3.11, 3.12) is inside
  // 3.10: the current PyFrameObject; 3.11/3.12: the _PyCFrame, whose
  // current_frame is at cframe_current_frame; 3.13: the current frame.
  uint32_t tstate_frame = 0;
  int32_t cframe_current_frame = -1;    // -1: tstate_frame is the frame
  int32_t tstate_datastack_chunk = -1;  // -1: frames are heap objects (3.10)
  // _PyStackChunk: previous at 0, size at 8
  // Frames (_PyInterpreterFrame; PyFrameObject in 3.10)
  uint32_t frame_previous = 0;
  uint32_t frame_code = 0;
  // f_globals: the module the code runs in; with frame_code, what tells a
  // new code object at a freed one's address apart (code_ids.h).
  uint32_t frame_globals = 0;
  uint32_t frame_instr = 0;
  int32_t frame_owner = -1;     // char; -1: none (3.10)
  int32_t frame_is_entry = -1;  // bool (3.11)
  uint32_t frame_bytes = 0;     // bytes read per frame: past every field above
  uint8_t owner_cstack = 3;     // FRAME_OWNED_BY_CSTACK (3.12+)
  InstrKind instr = InstrKind::kPrevInstr;
  EntryKind entry = EntryKind::kIsEntryFlag;
  // PyCodeObject
  uint32_t code_filename = 0;
  uint32_t code_name = 0;
  int32_t code_qualname = -1;  // -1: none (3.10: the name is all there is)
  uint32_t code_firstlineno = 0;
  uint32_t code_linetable = 0;   // bytes object
  uint32_t code_instructions = 0;  // 3.11+: co_code_adaptive (inline code units)
  // 3.11+: _co_firsttraceable, the first instruction after a frame's
  // prologue; a frame before it is not yet a call CPython shows (and 3.13's
  // _Py_InitCleanup shim is never past it). -1: none (3.10).
  int32_t code_first_traceable = -1;
  // Objects
  uint32_t ob_type = 8;
  uint32_t unicode_length = 16;
  uint32_t unicode_state = 32;
  uint32_t ascii_size = 48;    // sizeof(PyASCIIObject): a compact ASCII string's characters follow
  uint32_t compact_size = 72;  // sizeof(PyCompactUnicodeObject): other compact strings' characters follow
  // Bits of PyASCIIObject.state (after the 2 interned bits in every version).
  uint32_t state_kind_shift = 2;
  uint32_t state_compact_bit = 5;
  uint32_t state_ascii_bit = 6;
  uint32_t bytes_size = 16;   // PyBytesObject ob_size
  uint32_t bytes_data = 32;   // ob_sval
};

// The table for 3.minor (10..13); nullopt for others.
std::optional<PyLayout> LayoutFor(int minor);

// A 3.13+ layout from the interpreter's own _Py_DebugOffsets (`bytes`: the
// start of _PyRuntime). nullopt when the cookie or version is not one this
// build knows, or an offset is implausible.
std::optional<PyLayout> LayoutFromDebugOffsets(std::span<const unsigned char> bytes, int minor);

// The source line of the instruction at code-unit `index`, from a code
// object's line table (`table`, co_linetable's bytes) and co_firstlineno:
// 3.10's (start delta, line delta) pairs or 3.11+'s location table. 0 when
// the instruction has no line or the table is damaged.
uint32_t LineOfInstruction(int minor, std::span<const unsigned char> table, int first_line, uint32_t index);

}  // namespace collector::python
