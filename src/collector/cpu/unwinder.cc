// SIGNAL-HANDLER CODE: Unwind() runs in the sampling signal handler.
#define UNW_LOCAL_ONLY
#include "collector/cpu/unwinder.h"

#include <dlfcn.h>
#include <pthread.h>
#include <libunwind.h>
#include <ucontext.h>

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "collector/cpu/cfi_unwinder.h"

extern "C" void* __libc_stack_end;  // ld.so: the main thread's stack top at entry

namespace collector {
namespace {

struct Api {
  int (*init_local2)(unw_cursor_t*, unw_context_t*, int) = nullptr;
  int (*step)(unw_cursor_t*) = nullptr;
  int (*get_reg)(unw_cursor_t*, unw_regnum_t, unw_word_t*) = nullptr;
  int (*backtrace)(void**, int) = nullptr;
  int (*getcontext)(unw_context_t*) = nullptr;
  int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t) = nullptr;
  unw_addr_space_t* local_addr_space = nullptr;
};
Api api;
// Set (release) once `api` is complete: signal handlers read it (acquire).
std::atomic<bool> loaded{false};
std::mutex load_mutex;       // EnsureLibunwind
bool load_tried = false;     // under load_mutex
std::string load_error;      // under load_mutex, once tried
// Walks that gave up before libunwind was loaded; the kWalkerFailuresForLibunwind-th
// asks for it (UnwindResult::wants_libunwind). Not the first: a short
// process's stray failure (a sample in code without CFI at exit, such as
// crtstuff's destructor caller) should not cost it libunwind's load, while
// code that needs libunwind (JIT code with frame pointers) fails at once and
// often.
std::atomic<uint32_t> walker_failures{0};
constexpr uint32_t kWalkerFailuresForLibunwind = 4;
// libunwind's TLS module id (0: it has no TLS).
size_t tls_modid = 0;

// Making a table calls pthread_setspecific on libunwind's key, which
// allocates for a key at index 32 or above; libunwind creates that key with
// the first table, wherever that happens. Whether the key is known to be
// below 32 (so a table may be made inside the signal handler):
enum KeyState : int { kKeyUnknown, kKeyMaking, kKeyLow, kKeyHigh };
std::atomic<int> key_state{kKeyUnknown};
// Glibc's pthread_key_create takes the lowest free index: below this, the
// key libunwind creates right after our probe is below 32 too.
constexpr pthread_key_t kProbeLimit = 24;
constexpr pthread_key_t kFirstLevelKeys = 32;  // glibc's PTHREAD_KEY_2NDLEVEL_SIZE

// The collector is preloaded, so its own thread_locals are static TLS:
// readable in the handler without allocation.
__thread bool t_has_table __attribute__((tls_model("initial-exec"))) = false;
__thread uint32_t t_slow_unwinds __attribute__((tls_model("initial-exec"))) = 0;

// The walker's module set (cfi_unwinder.h) and what keeps it safe to read:
// a walk counts itself in walks_in_flight before it loads the set, and
// dlclose raises unloads_active, then waits for the count to reach zero
// before anything is unmapped. A replaced set is freed once no walk is in
// flight (any walk that could have loaded it has then finished).
std::atomic<const CfiModuleSet*> frame_modules{nullptr};
std::atomic<int> walks_in_flight{0};
std::atomic<int> unloads_active{0};
std::mutex publish_mutex;  // publications; guards `retired`
std::vector<const CfiModuleSet*>* retired = nullptr;
std::atomic<uint64_t> walker_samples{0}, libunwind_samples{0};
std::atomic<bool> walker_started{false};  // StartUnwinder ran: publications are wanted
__thread bool t_walking __attribute__((tls_model("initial-exec"))) = false;

constexpr uintptr_t kRedZone = 128;  // the x86-64 ABI's

// The walk from a register set (a signal's context, or the caller's own:
// UnwindHere). SIGNAL-HANDLER CODE.
bool WalkFrom(const CfiRegisters& regs, uintptr_t sp, uintptr_t* out, int capacity, StackBounds stack,
              UnwindResult* result) {
  if (sp < stack.lo || sp >= stack.hi) return false;
  walks_in_flight.fetch_add(1, std::memory_order_seq_cst);
  t_walking = true;
  bool ok = false;
  const CfiModuleSet* set = nullptr;
  if (unloads_active.load(std::memory_order_seq_cst) == 0 && (set = frame_modules.load(std::memory_order_seq_cst))) {
    // From the red zone up: a function's epilogue may already have popped a
    // register whose rule still reads its slot below the stack pointer; the
    // kernel leaves the 128 bytes there intact when it delivers a signal.
    const uintptr_t lo = sp - stack.lo > kRedZone ? sp - kRedZone : stack.lo;
    const CfiWalk walk = CfiUnwind(*set, CfiSpan{lo, stack.hi}, regs, out, capacity);
    if (walk.end != CfiWalkEnd::kFailed) {
      result->depth = walk.depth;
      result->cut = walk.end == CfiWalkEnd::kCut;
      ok = true;
    }
  }
  t_walking = false;
  walks_in_flight.fetch_sub(1, std::memory_order_seq_cst);
  return ok;
}

// The walker over the interrupted context; false when it gave up (the
// caller falls back to libunwind). SIGNAL-HANDLER CODE.
bool Walk(const ucontext_t* uc, uintptr_t* out, int capacity, StackBounds stack, UnwindResult* result) {
  // Off the thread's own stack (a signal stack, a fiber's): its bounds are
  // unknown, so it is left to libunwind.
  if (uc->uc_stack.ss_flags & SS_ONSTACK) return false;
  const greg_t* g = uc->uc_mcontext.gregs;
  CfiRegisters regs;
  static constexpr int kGreg[kCfiRegisters] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                               REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                               REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
  for (int r = 0; r < kCfiRegisters; ++r) regs.Set(r, static_cast<uint64_t>(g[kGreg[r]]));
  return WalkFrom(regs, static_cast<uintptr_t>(g[REG_RSP]), out, capacity, stack, result);
}

void WaitForWalks() {
  while (walks_in_flight.load(std::memory_order_seq_cst) != 0) sched_yield();
}

// glibc's TLS accessor (ld.so): allocates the calling thread's block of a
// dlopen'ed module's TLS on first use.
struct TlsIndex {
  unsigned long module;
  unsigned long offset;
};
extern "C" void* __tls_get_addr(TlsIndex*);

template <class F>
bool Sym(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

// Makes the calling thread's trace table (a short unw_backtrace) and, the
// first time, learns where libunwind's key landed: the first-level slot that
// went from null to set. `in_handler`: only when the key is known low, or
// after a probe says it will be. SIGNAL-HANDLER CODE when in_handler:
// pthread_key_create/delete/getspecific are lock- and allocation-free in
// glibc; libunwind makes the table with mmap and its own pool.
bool MakeTable(bool in_handler) {
  int state = key_state.load(std::memory_order_acquire);
  if (state == kKeyMaking || (state == kKeyHigh && in_handler)) return false;
  const bool learn = state == kKeyUnknown;
  void* before[kFirstLevelKeys];
  if (learn) {
    if (!key_state.compare_exchange_strong(state, kKeyMaking, std::memory_order_acq_rel)) return false;
    if (in_handler) {
      pthread_key_t probe;
      const bool made = pthread_key_create(&probe, nullptr) == 0;
      if (made) pthread_key_delete(probe);
      if (!made || probe >= kProbeLimit) {
        key_state.store(kKeyHigh, std::memory_order_release);
        return false;
      }
    }
    for (pthread_key_t k = 0; k < kFirstLevelKeys; ++k) before[k] = pthread_getspecific(k);
  }
  uintptr_t tmp[4];
  api.backtrace(reinterpret_cast<void**>(tmp), 4);
  t_has_table = true;
  if (learn) {
    bool low = false;
    for (pthread_key_t k = 0; k < kFirstLevelKeys; ++k)
      if (!before[k] && pthread_getspecific(k)) low = true;
    key_state.store(low ? kKeyLow : kKeyHigh, std::memory_order_release);
  }
  return true;
}

// Whether this unwind may use the trace table, making it when it is time.
bool UseTable(bool in_handler) {
  if (t_has_table) return true;
  if (++t_slow_unwinds < kFastAfter) return false;
  return MakeTable(in_handler);
}

// Steps from a context (a signal's, or this function's own): no trace
// table, so no TLS; libunwind's global cache lock is held only with every
// signal blocked.
// `skip`: frames stepped over first (the caller's own, when the context is
// its own).
int StepUnwind(unw_context_t* context, int flags, int skip, uintptr_t* out, int capacity, bool* cut) {
  unw_cursor_t cursor;
  if (api.init_local2(&cursor, context, flags) < 0) return 0;
  for (int i = 0; i < skip; ++i)
    if (api.step(&cursor) <= 0) return 0;
  int depth = 0;
  do {
    unw_word_t ip = 0;
    if (api.get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
    if (depth == capacity) {
      *cut = true;
      break;
    }
    out[depth++] = ip;
  } while (api.step(&cursor) > 0);
  return depth;
}

}  // namespace

void StartUnwinder() {
  walker_started.store(true);
  PublishFrameModules();
}

bool EnsureLibunwind(std::string* error) {
  if (loaded.load(std::memory_order_acquire)) return PrepareUnwindThread();
  {
    std::lock_guard<std::mutex> lock(load_mutex);
    if (!load_tried) {
      load_tried = true;
      // Through the interposed dlopen, like any other load: the walker's
      // module set is published again, and threads' TLS generation moves.
      void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        const char* why = dlerror();
        load_error = std::string("cannot load libunwind.so.8: ") + (why ? why : "unknown error");
      } else if (!Sym(lib, "_ULx86_64_init_local2", api.init_local2) || !Sym(lib, "_ULx86_64_step", api.step) ||
                 !Sym(lib, "_ULx86_64_get_reg", api.get_reg) || !Sym(lib, "unw_backtrace", api.backtrace) ||
                 !Sym(lib, "_ULx86_64_set_caching_policy", api.set_caching_policy) ||
                 !Sym(lib, "_Ux86_64_getcontext", api.getcontext) ||
                 !Sym(lib, "_ULx86_64_local_addr_space", api.local_addr_space)) {
        load_error = "libunwind.so.8 lacks the local unwinding API";
      } else {
        // Debian's libunwind 1.6 is built without per-thread register-state
        // caches and turns UNW_CACHE_PER_THREAD into UNW_CACHE_GLOBAL; say
        // so. The global cache's lock is taken with every signal blocked, so
        // no sampled thread is ever interrupted while holding it.
        api.set_caching_policy(*api.local_addr_space, UNW_CACHE_GLOBAL);
        if (dlinfo(lib, RTLD_DI_TLS_MODID, &tls_modid) != 0) tls_modid = 0;
        loaded.store(true, std::memory_order_release);
      }
    }
    if (!loaded.load(std::memory_order_acquire)) {
      if (error) *error = load_error;
      return false;
    }
  }
  return PrepareUnwindThread();
}

bool PrepareUnwindThread() {
  if (!loaded.load(std::memory_order_acquire)) return false;
  if (tls_modid != 0) {
    TlsIndex index{tls_modid, 0};
    __tls_get_addr(&index);
  }
  return true;
}

bool UnwinderLoaded() { return loaded.load(std::memory_order_acquire); }

UnwindResult Unwind(void* ucontext, uintptr_t* out, int capacity, bool fast, bool in_loader, StackBounds stack) {
  UnwindResult result;
  if (capacity <= kUnwindSlack) return result;
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  const uintptr_t pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  if (Walk(uc, out, capacity, stack, &result)) {
    walker_samples.fetch_add(1, std::memory_order_relaxed);
    return result;
  }
  const bool have_libunwind = loaded.load(std::memory_order_acquire);
  if (in_loader || !have_libunwind) {
    // In the loader, libunwind may need the loader's lock, which this thread
    // may hold. Not loaded yet: the kWalkerFailuresForLibunwind-th such
    // sample asks for it.
    if (!in_loader)
      result.wants_libunwind =
          walker_failures.fetch_add(1, std::memory_order_relaxed) + 1 == kWalkerFailuresForLibunwind;
    out[0] = pc;
    result.depth = 1;
    result.partial = true;
    return result;
  }
  libunwind_samples.fetch_add(1, std::memory_order_relaxed);
  if (fast && UseTable(true)) {
    // libunwind's trace cache (unw_backtrace) from here, through the signal
    // frame, straight into `out`; then drop the frames above the
    // interrupted instruction.
    const int n = api.backtrace(reinterpret_cast<void**>(out), capacity);
    for (int skip = 0; skip < n && skip < kUnwindSlack; ++skip) {
      if (out[skip] != pc) continue;
      result.cut = n == capacity;
      for (int i = skip; i < n; ++i) out[i - skip] = out[i];
      result.depth = n - skip;
      return result;
    }
  }
  result.depth = StepUnwind(const_cast<unw_context_t*>(reinterpret_cast<const unw_context_t*>(uc)),
                            UNW_INIT_SIGNAL_FRAME, 0, out, capacity, &result.cut);
  if (result.depth == 0) {
    out[0] = pc;
    result.depth = 1;
  }
  return result;
}

StackBounds ThisThreadStack(bool main_thread) {
  StackBounds b;
  if (main_thread) {
    // glibc's pthread_getattr_np reads /proc/self/maps for the main thread
    // (a file read in every process's start); its top and the stack limit
    // say the same for the walker's purpose: a stack pointer below
    // top - limit is not on this stack.
    rlimit limit{};
    const auto top = reinterpret_cast<uintptr_t>(__libc_stack_end);
    if (!top || getrlimit(RLIMIT_STACK, &limit) != 0) return b;
    const uintptr_t size = limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > (uintptr_t{1} << 32)
                               ? uintptr_t{1} << 32
                               : static_cast<uintptr_t>(limit.rlim_cur);
    // The words just above __libc_stack_end (argc, argv, envp, auxv) are
    // mapped; the outermost frame's slots lie below it.
    b.hi = top + 64;
    b.lo = top > size ? top - size : 0;
    return b;
  }
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return b;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
    b.lo = reinterpret_cast<uintptr_t>(addr);
    b.hi = b.lo + size;
  }
  pthread_attr_destroy(&attr);
  return b;
}

void PublishFrameModules() {
  if (!walker_started.load()) return;
  auto* set = new (std::nothrow) CfiModuleSet;
  if (!set) return;
  try {
    *set = LoadedCfiModules();
  } catch (...) {
    delete set;
    return;
  }
  std::lock_guard<std::mutex> lock(publish_mutex);
  const CfiModuleSet* old = frame_modules.exchange(set, std::memory_order_seq_cst);
  if (!old) return;
  try {
    if (!retired) retired = new std::vector<const CfiModuleSet*>;
    retired->push_back(old);
  } catch (...) {
    return;  // kept, never freed: safe
  }
  if (walks_in_flight.load(std::memory_order_seq_cst) != 0) return;  // freed at a later publication
  for (const CfiModuleSet* s : *retired) delete s;
  retired->clear();
}

bool InStackRootCode(uintptr_t address) {
  const CfiModuleSet* set = frame_modules.load(std::memory_order_seq_cst);
  return set && address >= set->root_lo && address < set->root_hi;
}

void BeginUnload() {
  unloads_active.fetch_add(1, std::memory_order_seq_cst);
  // A dlclose from a handler that interrupted this thread's own walk (not
  // async-signal-safe, but possible) would wait for itself.
  if (!t_walking) WaitForWalks();
}

void EndUnload() {
  PublishFrameModules();
  unloads_active.fetch_sub(1, std::memory_order_seq_cst);
}

void ForkChildUnwinder() {
  walks_in_flight.store(0);
  walker_samples.store(0);  // the child's run counts its own samples
  ResetCfiRowCounts();
  libunwind_samples.store(0);
  walker_failures.store(0);
  t_walking = false;
  // The parent's publication and load locks may have been held by another
  // thread.
  new (&publish_mutex) std::mutex;
  new (&load_mutex) std::mutex;
  // A load another thread had in progress never finishes here: the child
  // may try again.
  if (!loaded.load(std::memory_order_acquire)) {
    load_tried = false;
    load_error.clear();
  }
  // A dlclose in progress on another thread has no end in the child: the
  // modules are taken as they are now.
  if (unloads_active.exchange(0) != 0) PublishFrameModules();
}

UnwindCounts UnwindCountsSoFar() {
  return {walker_samples.load(std::memory_order_relaxed), libunwind_samples.load(std::memory_order_relaxed)};
}

__attribute__((noinline)) int WalkHere(uintptr_t* out, int max, StackBounds stack, int skip) {
  if (max <= 0 || skip < 0) return 0;
  // This function's own registers: every one a CFA or register rule may
  // name (the callee-saved ones, the stack and frame pointers) and the pc.
  uint64_t r[kCfiRegisters] = {};
  static_assert(kCfiRegisters == 17, "DWARF numbering: rbx 3, rbp 6, rsp 7, r12-r15 12-15, rip 16");
  asm volatile(
      "lea 0(%%rip), %%rax\n\t"
      "mov %%rax, 128(%0)\n\t"
      "mov %%rbx, 24(%0)\n\t"
      "mov %%rbp, 48(%0)\n\t"
      "mov %%rsp, 56(%0)\n\t"
      "mov %%r12, 96(%0)\n\t"
      "mov %%r13, 104(%0)\n\t"
      "mov %%r14, 112(%0)\n\t"
      "mov %%r15, 120(%0)\n\t"
      :
      : "r"(r)
      : "rax", "memory");
  // Only those: the others are the caller's to clobber, unknown to a rule.
  CfiRegisters regs;
  for (int i : {3, 6, 7, 12, 13, 14, 15, 16}) regs.Set(i, r[i]);
  // This frame and `skip` more are dropped.
  uintptr_t frames[kMaxHereFrames + 8];
  const int drop = 1 + (skip > 7 ? 7 : skip);
  const int capacity = max < kMaxHereFrames ? max + drop : kMaxHereFrames + drop;
  UnwindResult result;
  if (!WalkFrom(regs, r[7], frames, capacity, stack, &result) || result.depth <= drop) return 0;
  for (int i = drop; i < result.depth; ++i) out[i - drop] = frames[i];
  return result.depth - drop;
}

__attribute__((noinline)) int UnwindHere(uintptr_t* out, int max, StackBounds walker_stack) {
  if (max <= 0) return 0;
  if (!loaded.load(std::memory_order_acquire) && walker_stack.hi != 0) {
    const int n = WalkHere(out, max, walker_stack, 1);  // without this frame
    asm volatile("" ::: "memory");  // not a tail call: this frame must exist
    return n;
  }
  // Loaded already: no preparation per call (this is normal context, where
  // libunwind may make the thread's TLS itself).
  if (!loaded.load(std::memory_order_acquire) && !EnsureLibunwind(nullptr)) return 0;
  // Both ways start at this function's caller, as unw_backtrace does.
  if (UseTable(false)) return api.backtrace(reinterpret_cast<void**>(out), max);
  unw_context_t context;
  if (api.getcontext(&context) != 0) return 0;
  bool cut = false;
  return StepUnwind(&context, 0, 1, out, max, &cut);
}

}  // namespace collector
