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
// signal blocked) and prepares the calling thread (PrepareUnwindThread). No
// unwinding here: a warm-up would make the thread's trace table.
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
// `fast`: the thread may use libunwind's trace cache (unw_backtrace) — only
// on a thread whose PrepareUnwindThread ran and whose dynamic TLS needs no
// update (no library with TLS loaded or unloaded since: see sampler.cc). It
// does once it has earned its table (below). Otherwise the unwind steps from
// the signal context with libunwind's global cache, whose lock libunwind
// holds only with all signals blocked, so an interrupted thread never holds
// it.
//
// The trace table is 256 KiB per thread that libunwind fills entry by entry
// when it makes it (64 page faults, milliseconds on a VM: more than a short
// process's whole run), so a thread steps (about 35 us for 16 frames, against
// 2 us from the table) until it has been unwound kFastAfter times, then gets
// its table, in the handler. Making it calls pthread_setspecific on
// libunwind's key, which allocates for a key at glibc index 32 or above: the
// first table made learns (outside a handler), or a probe key predicts
// (inside one), where the key is; when it is high, tables are never made in
// a handler and those threads keep stepping.
// SIGNAL-HANDLER CODE: async-signal-safe under those conditions (no
// allocation, no TLS allocation, no lock a sampled thread can hold).
inline constexpr int kUnwindSlack = 8;
inline constexpr uint32_t kFastAfter = 8;  // unwinds of a thread before its trace table
int Unwind(void* ucontext, uintptr_t* out, int capacity, bool fast, bool* cut);

// The same for the calling thread, from its caller's frame: the return
// address into the caller first (tests, benchmarks). Normal context.
int UnwindHere(uintptr_t* out, int max);

// Prepares the calling thread for Unwind() in a signal handler; call it in
// normal context on each thread before its sampling timer is armed. Why:
// libunwind is dlopen'ed, so its thread-local variables live in dynamic TLS,
// which glibc allocates with malloc on a thread's first access — inside the
// handler, that malloc can interrupt a malloc the thread is in and deadlock
// on its lock. This allocates the block now (microseconds); the trace table
// comes later (Unwind, above) from mmap and libunwind's own pool, no malloc.
// A library with TLS loaded or unloaded later may make the thread's next
// TLS access update its TLS vector (malloc, free): the sampler then keeps
// the thread off the fast path until it prepares again (sampler.cc).
// Returns false when the unwinder is not loaded. Not signal-safe.
bool PrepareUnwindThread();

}  // namespace collector
