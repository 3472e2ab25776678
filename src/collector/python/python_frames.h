// Python frames in sampled stacks: the Python source (kPythonSource).
//
// When the profiled program is CPython (3.10 to 3.13), each sample's native
// stack has _PyEval_EvalFrameDefault frames where Python code runs. The
// sampling handler reads the sampled thread's own Python frame chain
// (PyThreadState → current frame → previous …) and SplicePython puts the
// Python frames in place of the eval-loop frames that run them, the way
// py-spy's --native merges them: one C-level eval call runs one Python
// frame in 3.10 and a run of them since 3.11 (delimited by is_entry or by
// a shim frame, cpython_layout.h). The innermost Python frame also gets a
// line key, so a Python statement is a line node like a native one.
//
// Reading the interpreter's memory from a signal handler: the thread reads
// its own chain while it is stopped in the handler, so the chain is
// consistent but for the instructions that link or unlink a frame. The
// thread's state comes from PyGILState's thread-specific key (a state
// registered to the thread is alive; the key is trusted once it matched
// the interpreters' thread lists) — except once the interpreter finalizes:
// Py_FinalizeEx frees the other threads' states under their keys, so from
// then on (_PyRuntime._finalizing set) only the finalizing thread's frames
// are read. A frame is read directly when it lies in
// a data-stack chunk the state lists (mapped until the state unlists it) or
// on the thread's own stack (3.12+'s shim frames); 3.10's heap frames,
// owned along the chain, directly too. Anything else — a generator's
// frame, a frame being popped from a chunk just freed, the thread lists —
// is read with process_vm_readv on our own pid, which fails with EFAULT
// instead of faulting. A failed read ends the walk; the sample then keeps
// its native eval-loop frames for the part that could not be matched. The
// direct reads run under the collector's fault guard (t_fault_guard,
// runtime_state.h): should what they rest on break where no check sees it
// (an embedder freeing a running thread's state), the fault ends that walk
// alone.
//
// Keys (sample_trie.h, MakePythonKey) hold a code object's id (code_ids.h:
// one per code address and module globals, so a code object the
// interpreter frees and the next one at its address get different keys)
// and the instruction index. The resolver thread reads each new id's code
// object as soon as the handler hands the id out — name, file, first line,
// line table, checked against the fingerprint the handler took — and keys
// are named from those facts at checkpoints. An id whose object was gone
// (or another by then) is named "<python code 0x…>", never after another
// function.
//
// SIGNAL-HANDLER CODE: WalkPythonFrames and SplicePython are
// async-signal-safe (no allocation, no locks; system calls only
// process_vm_readv). The rest runs in normal context.
#pragma once

#include <cstdint>
#include <string>

#include "collector/cpu/symbolizer.h"
#include "collector/python/cpython_layout.h"

namespace collector::internal {
struct ThreadState;
}

namespace collector::python {

// Where the interpreter's code is: its eval loop, and the executable
// segment of the module that holds it (libpython, or a statically linked
// python binary).
struct InterpreterCode {
  uintptr_t eval_lo = 0, eval_hi = 0;
  uintptr_t text_lo = 0, text_hi = 0;
};

// What Attach found (read by the handler; written before sampling starts).
// Constant-initialized: Attach runs from the collector's constructor,
// possibly before this file's dynamic initializers would.
struct PythonProcess {
  bool enabled = false;
  PyLayout layout;
  uintptr_t runtime = 0;    // &_PyRuntime
  uintptr_t code_type = 0;  // &PyCode_Type
  InterpreterCode code;
  int pid = 0;              // ours (a fork child updates it)
  char version[16] = {};    // "3.11.7"
};
const PythonProcess& Process();

// One sample's Python frames, innermost first, and the C-level eval calls
// they belong to: group_end[g] is one past the last frame of group g
// (groups innermost first).
struct PythonStack {
  int count = 0;
  int groups = 0;
  bool complete = false;  // reached the outermost frame
};

// Reads the calling thread's Python frames into `keys` (at most `max`) and
// `group_end` (at most `max`). SIGNAL-HANDLER CODE.
PythonStack WalkPythonFrames(internal::ThreadState* t, uint64_t* keys, int32_t* group_end, int max);

// How SplicePython treats what surrounds the Python frames.
struct SpliceOptions {
  // The innermost Python frame is followed by its line key (sample paths;
  // not a range's own path, whose range node must sit where samples put it).
  bool line_key = true;
  // Nothing after the innermost Python frame (and the ranges placed with
  // it): a range's own path, where what follows is the push call itself.
  bool cut_after_innermost = false;
  // The open NVTX ranges in push order (the range keys of `in`, in order):
  // how many Python frames were active at each push (-1: unknown).
  const int32_t* range_py_depth = nullptr;
  int ranges = 0;
};

// Splices Python frames into a sample path: `in` (root first, `n` keys)
// into `out` (capacity `cap`), each eval-loop address key replaced by its
// group's frames, outermost first, and the innermost frame followed by its
// line key; the interpreter's own frames between the outermost and the
// innermost Python frame are left out, and an NVTX range anchored at an
// eval-loop key moves to just after the Python frame that pushed it.
// Groups are matched to eval-loop keys from the root when both the native
// path (no leading kPartialKey) and the Python walk are complete, from the
// innermost end otherwise; unmatched eval-loop keys stay as they are,
// unmatched groups are left out. Returns the key count; `in` is copied as
// it is when nothing matched or the result would not fit. `mismatched`
// (optional): set when not every group and eval-loop key was matched.
// SIGNAL-HANDLER CODE.
int SplicePython(const uint64_t* in, int n, const uint64_t* py, const int32_t* group_end, const PythonStack& stack,
                 const InterpreterCode& code, uint64_t* out, int cap, const SpliceOptions& options = {},
                 bool* mismatched = nullptr);

// Counts for the run's diagnostics (SIGNAL-HANDLER CODE: relaxed atomics).
void CountSplice(bool mismatched);

// The profile's frames for a Python key (cached; thread-safe; the
// reference stays valid): one function frame whose module and file are the
// .py path, or none for a hidden frame.
const SymbolFrames& PythonSymbolFrames(uint64_t key);

// Reads the code objects of the ids handed out since the last call, while
// they live: the resolver thread (not sampled) calls this as soon as new
// ids appear and every kResolveIntervalMs. Thread-safe (the names have
// their own mutex).
inline constexpr int kResolveIntervalMs = 50;
void ResolveNewCodeIds();

}  // namespace collector::python
