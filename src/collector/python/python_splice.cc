// SplicePython (python_frames.h): pure, so that the tests link it without
// the collector's runtime. SIGNAL-HANDLER CODE: async-signal-safe.
#include "collector/cpu/sample_trie.h"
#include "collector/python/python_frames.h"

namespace collector::python {

int SplicePython(const uint64_t* in, int n, const uint64_t* py, const int32_t* group_end, const PythonStack& stack,
                 const InterpreterCode& code, uint64_t* out, int cap, bool* mismatched) {
  auto in_range = [](uint64_t key, uintptr_t lo, uintptr_t hi) {
    if (!IsAddressKey(key)) return false;
    const uintptr_t a = KeyAddress(key);
    return a >= lo && a < hi;
  };
  auto is_eval = [&](uint64_t key) { return in_range(key, code.eval_lo, code.eval_hi); };
  int evals = 0;
  for (int i = 0; i < n; ++i) evals += is_eval(in[i]);
  const int matched = evals < stack.groups ? evals : stack.groups;
  auto copy_in = [&] {
    const int m = n < cap ? n : cap;
    for (int i = 0; i < m; ++i) out[i] = in[i];
    return m;
  };
  if (matched == 0) return copy_in();
  if (mismatched != nullptr) *mismatched = evals != stack.groups || !stack.complete;
  // Eval-loop keys are numbered from the root (e = 0 outermost); group g is
  // numbered innermost first. From the root: eval e runs group
  // groups - 1 - e, for e < matched. From the innermost end: eval e runs
  // group evals - 1 - e, for e >= evals - matched.
  const bool from_root = stack.complete && (n == 0 || in[0] != kPartialKey);
  const int first_eval = from_root ? 0 : evals - matched;
  const int last_eval = first_eval + matched - 1;
  // The innermost matched group's frames end with the line key.
  const int innermost_group = from_root ? stack.groups - matched : 0;
  const int outermost_group = innermost_group + matched - 1;
  const int frames = group_end[outermost_group] - (innermost_group == 0 ? 0 : group_end[innermost_group - 1]);
  if (n - matched + frames + 1 > cap) return copy_in();
  int k = 0, e = 0;
  for (int i = 0; i < n; ++i) {
    const int this_eval = is_eval(in[i]) ? e++ : -1;
    if (this_eval < first_eval || this_eval > last_eval) {
      // Between the outermost and the innermost Python frame, the
      // interpreter's own frames are its call machinery (vectorcall,
      // function entry; in 3.10 between every two Python frames): left
      // out, as py-spy leaves them out. An extension's frames stay, and so
      // do the interpreter's frames below the innermost Python frame (the
      // builtin a statement is running).
      const bool between = e > first_eval && e <= last_eval;
      if (!(between && in_range(in[i], code.text_lo, code.text_hi))) out[k++] = in[i];
      continue;
    }
    const int g = from_root ? stack.groups - 1 - this_eval : evals - 1 - this_eval;
    const int lo = g == 0 ? 0 : group_end[g - 1];
    const int hi = group_end[g];
    for (int j = hi - 1; j >= lo; --j) out[k++] = py[j];
    if (g == innermost_group) out[k++] = py[lo] | kPythonLineBit;
  }
  return k;
}

}  // namespace collector::python
