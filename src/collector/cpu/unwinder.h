// Unwinder: the libunwind adapter (the only file that includes libunwind.h).
//
// libunwind is loaded with dlopen(RTLD_LOCAL) rather than linked: Debian's
// libunwind.so exports the _Unwind_* exception ABI and a weak `backtrace`, and
// a preloaded collector linked against it would put those in front of
// libgcc_s's for the host program, changing how its C++ exceptions unwind.
// (Debian's libunwind.a is not position-independent, so it cannot be linked
// into the collector library either.)
//
// Thread-safety: StartUnwinder() once before any sampling; Unwind() may then
// be called concurrently from any thread.
#pragma once

#include <cstdint>
#include <string>

namespace collector {

// Starts the collector's own walker (cfi_unwinder.h): publishes the module
// set it reads. Normal context, once, before any sampling.
void StartUnwinder();
// Loads libunwind if it is not (global cache policy: its lock is held only
// with every signal blocked) and prepares the calling thread
// (PrepareUnwindThread). No unwinding here: a warm-up would make the
// thread's trace table. Returns false with `error` set when libunwind is
// unavailable. Normal context; thread-safe.
//
// libunwind is loaded only when something needs it: samples the walker
// gave up on (the fourth asks, through UnwindResult::wants_libunwind, and
// the checkpoint thread loads it), or an UnwindHere without stack bounds
// (NVTX push sites, GPU launch sites). A short process that needs neither never
// loads it: its dlopen, with liblzma's, is a few dozen page faults and
// relocations per process, most of a short process's start on a VM.
bool EnsureLibunwind(std::string* error);
bool UnwinderLoaded();

// Writes the code addresses of the interrupted thread's stack, leaf first, to
// `out`: the interrupted instruction, then return addresses. `ucontext` is the
// third argument of an SA_SIGINFO handler; `stack` the sampled thread's
// stack ({0, 0}: unknown). Returns the number of addresses (0 when nothing
// could be unwound); sets *cut when the walk stopped at `capacity` before
// the stack's root.
//
// First the collector's own walker (cfi_unwinder.h) over the published
// module set (PublishFrameModules), when the interrupted stack pointer lies
// in `stack` and no dlclose is in progress: no lock, no system call, no
// libunwind. It gives up on what it does not handle, and the sample is then
// unwound by libunwind, as follows. `out` holds `capacity` entries; the
// frames above the interrupted one (this function, the handler, the signal
// trampoline: at most kUnwindSlack) are unwound into it too, then dropped.
// `fast`: the thread may use libunwind's trace cache (unw_backtrace) — only
// on a thread whose PrepareUnwindThread ran and whose dynamic TLS needs no
// update (no library with TLS loaded or unloaded since: see sampler.cc). It
// does once it has earned its table (below). Otherwise the unwind steps from
// the signal context with libunwind's global cache, whose lock libunwind
// holds only with all signals blocked, so an interrupted thread never holds
// it. `in_loader`: the thread is inside dlopen/dlclose, where libunwind may
// need the loader's lock it holds: only the collector's walker is tried,
// and when it gives up only the interrupted instruction is returned.
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
struct StackBounds {
  uintptr_t lo = 0, hi = 0;
};
struct UnwindResult {
  int depth = 0;
  bool cut = false;      // stopped at capacity before the root
  bool partial = false;  // the walker gave up in_loader or before libunwind was loaded: only the interrupted instruction
  bool wants_libunwind = false;  // libunwind should be loaded now (EnsureLibunwind)
};
UnwindResult Unwind(void* ucontext, uintptr_t* out, int capacity, bool fast, bool in_loader, StackBounds stack);

// The calling thread's stack as the walker may read it: the whole mapping
// for a thread glibc started; for the main thread, from its top
// (__libc_stack_end) down by RLIMIT_STACK. Normal context (allocates).
StackBounds ThisThreadStack(bool main_thread);

// The module set the walker uses, built from dl_iterate_phdr. Normal
// context: at StartUnwinder, after each dlopen. Modules a program loads
// without dlopen (glibc's own NSS and iconv loads) are unknown to the
// walker until the next publication; iconv's modules, which glibc may
// dlclose internally, are never published (their frames go to libunwind).
void PublishFrameModules();
// Around dlclose: BeginUnload stops new walks over the module set and waits
// for the ones in flight (microseconds), so no walk reads a module while it
// is unmapped; EndUnload publishes the modules left and lets walks resume.
// Normal context.
void BeginUnload();
void EndUnload();
// Whether `address` lies in code without CFI where a stack begins (the
// loader's entry: CfiModuleSet::root_lo..root_hi of the published set), so
// a stack the walker ended there is complete. Normal context.
bool InStackRootCode(uintptr_t address);
// In a fork child: walks in flight in the parent's other threads are gone.
void ForkChildUnwinder();
// Samples unwound by the walker and by libunwind (diagnostics).
struct UnwindCounts {
  uint64_t walker = 0, libunwind = 0;
};
UnwindCounts UnwindCountsSoFar();

// The same for the calling thread, from its caller's frame: the return
// address into the caller first. With `walker_stack` (the calling thread's
// stack) and libunwind not loaded, by the walker (at most kMaxHereFrames);
// otherwise by libunwind, loaded first if need be (its trace cache makes
// repeated calls from one site cheaper). Normal context.
inline constexpr int kMaxHereFrames = 256;
int UnwindHere(uintptr_t* out, int max, StackBounds walker_stack = {});
// The walker alone, from its caller's frame (dropping `skip` more callers),
// over the calling thread's `stack`; 0 when it gives up. Normal context.
int WalkHere(uintptr_t* out, int max, StackBounds stack, int skip = 0);

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
