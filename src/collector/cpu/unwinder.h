// Unwinder: the libunwind adapter (the only file that includes libunwind.h).
//
// libunwind is loaded with dlopen(RTLD_LOCAL) rather than linked: Debian's
// libunwind.so exports the _Unwind_* exception ABI and a weak `backtrace`, and
// a preloaded collector linked against it would put those in front of
// libgcc_s's for the host program, changing how its C++ exceptions unwind.
// (Debian's libunwind.a is not position-independent, so it cannot be linked
// into the collector library either.)
//
// Thread-safety: Load() once before any sampling; Unwind() may then be called
// concurrently from any thread.
#pragma once

#include <cstdint>
#include <string>

namespace collector {

// Loads libunwind (global cache policy: its lock is held only with every
// signal blocked) and prepares the calling thread (PrepareUnwindThread).
// Returns false with `error` set when libunwind is unavailable. Not
// signal-safe.
bool LoadUnwinder(std::string* error);
bool UnwinderLoaded();

// Writes the code addresses of the interrupted thread's stack, leaf first, to
// `out`: the interrupted instruction, then return addresses. `ucontext` is the
// third argument of an SA_SIGINFO handler. `out` holds `capacity` entries;
// the frames above the interrupted one (this function, the handler, the
// signal trampoline: at most kUnwindSlack) are unwound into it too, then
// dropped. Returns the number of addresses (0 when nothing could be unwound);
// sets *cut when the walk stopped at `capacity` before the stack's root.
// `fast`: use libunwind's trace cache (unw_backtrace) — only on a thread
// whose PrepareUnwindThread ran and whose dynamic TLS needs no update (no
// library with TLS loaded or unloaded since: see sampler.cc). Otherwise the
// unwind steps from the signal context with libunwind's global cache, whose
// lock libunwind holds only with all signals blocked, so an interrupted
// thread never holds it.
// SIGNAL-HANDLER CODE: async-signal-safe under those conditions (no
// allocation, no TLS allocation, no lock a sampled thread can hold).
inline constexpr int kUnwindSlack = 8;
int Unwind(void* ucontext, uintptr_t* out, int capacity, bool fast, bool* cut);

// The same for the calling thread at the call site (tests, benchmarks).
// Normal context.
int UnwindHere(uintptr_t* out, int max);

// Prepares the calling thread for Unwind() in a signal handler; call it in
// normal context on each thread before its sampling timer is armed. Why:
// libunwind is dlopen'ed, so its thread-local variables (unw_backtrace's
// per-thread cache pointer) live in dynamic TLS, which glibc allocates with
// malloc on a thread's first access — inside the handler, that malloc can
// interrupt a malloc the thread is in and deadlock on its lock. This
// allocates the block now (microseconds). The cache itself is then made on
// the thread's first sample from mmap and libunwind's own pool (its lock is
// held with all signals blocked), no malloc — unless libunwind's
// pthread key is beyond glibc's first 32 (pthread_setspecific would
// calloc), in which case the cache is made here too (about a millisecond).
// A library with TLS loaded or unloaded later may make the thread's next
// TLS access update its TLS vector (malloc, free): the sampler then keeps
// the thread off the fast path until it prepares again (sampler.cc).
// Returns false when the unwinder is not loaded. Not signal-safe.
bool PrepareUnwindThread();

}  // namespace collector
