// Prefetch: asks for the cache line at `p` ahead of a read or write (a hint:
// no effect on results, no fault for any address).
//
// Why not __builtin_prefetch alone: GCC 12 at -O2 deletes it where it is a
// small function's only effect. Its pure/const analysis counts the builtin as
// no side effect, finds such a function (MetricColumns::Prefetch, the tree's
// name chain, the diff aligner's slot hint) pure, and drops its calls, which
// return nothing, as dead code: `cct-query` held 5 prefetch instructions of
// the 10 its sources ask for. A volatile asm statement is kept where it is
// written. Other machines get the builtin.
//
// Thread-safety: none needed (reads nothing).
#pragma once

namespace cct {

inline void Prefetch(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace cct
