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

// Loads libunwind and sets its per-thread caching policy (so unwinding needs
// no locks). Returns false with `error` set when libunwind is unavailable.
// Not signal-safe.
bool LoadUnwinder(std::string* error);
bool UnwinderLoaded();

// Makes the calling thread's libunwind state ready for Unwind(..., fast):
// libunwind's per-thread trace cache (unw_backtrace's) lives in a `__thread`
// variable of a dlopen'ed library, i.e. in dynamic TLS, which glibc
// allocates with malloc (under the loader's TLS lock) on the thread's first
// access; creating the cache also uses pthread_setspecific (which may
// calloc). None of that may happen in a signal handler that interrupted
// malloc. Normal context only, on the thread itself, before its sampling
// timer is armed. Returns false when libunwind is not loaded.
bool PrepareUnwindThread();

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

}  // namespace collector
