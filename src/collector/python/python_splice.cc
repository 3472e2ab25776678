// SplicePython (python_frames.h): pure, so that the tests link it without
// the collector's runtime. SIGNAL-HANDLER CODE: async-signal-safe.
#include "collector/cpu/sample_trie.h"
#include "collector/python/python_frames.h"

namespace collector::python {

int SplicePython(const uint64_t* in, int n, const uint64_t* py, const int32_t* group_end, const PythonStack& stack,
                 const InterpreterCode& code, uint64_t* out, int cap, const SpliceOptions& options, bool* mismatched) {
  auto in_range = [](uint64_t key, uintptr_t lo, uintptr_t hi) {
    if (!IsAddressKey(key)) return false;
    const uintptr_t a = KeyAddress(key);
    return a >= lo && a < hi;
  };
  auto is_eval = [&](uint64_t key) { return in_range(key, code.eval_lo, code.eval_hi); };
  auto is_range = [](uint64_t key) { return IsRangeKey(key) && !IsMarkKey(key); };
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
  auto group_of = [&](int eval) { return from_root ? stack.groups - 1 - eval : evals - 1 - eval; };
  auto group_lo = [&](int g) { return g == 0 ? 0 : group_end[g - 1]; };

  // NVTX ranges: PathKeys puts a range after the native frames its push and
  // the sample share, which is just before or just after the eval-loop key
  // that ran the pushing Python code (the eval loop's own call sites
  // differ). Such a range goes after the Python frame that was innermost at
  // its push (options.range_py_depth: how many were active), when depths
  // count from the same outermost frame (a complete stack).
  const bool relocate = from_root && options.range_py_depth != nullptr;
  constexpr int kMaxMoving = 256;
  int moving_at[kMaxMoving];  // positions in `in` of the ranges being moved into the next group
  int moving = 0;
  int ranges_seen = 0;  // range keys before in[i], in push order
  auto depth_at = [&](int range_index) {
    return range_index < options.ranges ? options.range_py_depth[range_index] : -1;
  };
  int range_index_of[kMaxMoving];

  int k = 0, e = 0;
  bool done = false;  // options.cut_after_innermost: past the innermost Python frame
  for (int i = 0; i < n && !done; ++i) {
    if (relocate && is_range(in[i])) {
      // A run of ranges: those that belong inside the group of the eval key
      // right after the run move with it.
      int j = i;
      while (j < n && is_range(in[j])) ++j;
      const int next_eval = j < n && is_eval(in[j]) ? e : -1;
      const bool into_group = next_eval >= first_eval && next_eval <= last_eval;
      const int x0 = into_group ? stack.count - group_end[group_of(next_eval)] : 0;  // the group's outermost frame
      for (int r = i; r < j; ++r, ++ranges_seen) {
        const int d = depth_at(ranges_seen);
        if (into_group && d > x0 && moving < kMaxMoving) {
          range_index_of[moving] = ranges_seen;
          moving_at[moving++] = r;
        } else {
          out[k++] = in[r];
        }
      }
      i = j - 1;
      continue;
    }
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
      if (is_range(in[i])) ++ranges_seen;
      continue;
    }
    const int g = group_of(this_eval);
    const int lo = group_lo(g), hi = group_end[g];
    // The ranges right after this key join those carried from before it.
    if (relocate) {
      int j = i + 1;
      for (; j < n && is_range(in[j]) && moving < kMaxMoving; ++j, ++ranges_seen) {
        range_index_of[moving] = ranges_seen;
        moving_at[moving++] = j;
      }
      i = j - 1;
    }
    bool placed[kMaxMoving];
    for (int m = 0; m < moving; ++m) placed[m] = false;
    for (int f = hi - 1; f >= lo; --f) {
      const int x = stack.count - 1 - f;  // this frame's place from the outermost, 0-based
      for (int m = 0; m < moving; ++m) {
        const int d = depth_at(range_index_of[m]);
        if (placed[m] || d < 0 || d > x) continue;
        out[k++] = in[moving_at[m]];  // pushed while x frames were active: before frame x
        placed[m] = true;
      }
      out[k++] = py[f];
    }
    for (int m = 0; m < moving; ++m)
      if (!placed[m]) out[k++] = in[moving_at[m]];  // pushed by the innermost frame, or depth unknown
    moving = 0;
    if (g == innermost_group) {
      if (options.line_key) out[k++] = py[lo] | kPythonLineBit;
      done = options.cut_after_innermost;
    }
  }
  return k;
}

}  // namespace collector::python
