// SIGNAL-HANDLER CODE: Unwind() runs in the sampling signal handler.
#define UNW_LOCAL_ONLY
#include "collector/cpu/unwinder.h"

#include <dlfcn.h>
#include <pthread.h>
#include <libunwind.h>
#include <ucontext.h>

#include <atomic>

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
bool loaded = false;
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

bool LoadUnwinder(std::string* error) {
  if (loaded) return true;
  void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    *error = std::string("cannot load libunwind.so.8: ") + dlerror();
    return false;
  }
  if (!Sym(lib, "_ULx86_64_init_local2", api.init_local2) || !Sym(lib, "_ULx86_64_step", api.step) ||
      !Sym(lib, "_ULx86_64_get_reg", api.get_reg) || !Sym(lib, "unw_backtrace", api.backtrace) ||
      !Sym(lib, "_ULx86_64_set_caching_policy", api.set_caching_policy) ||
      !Sym(lib, "_Ux86_64_getcontext", api.getcontext) ||
      !Sym(lib, "_ULx86_64_local_addr_space", api.local_addr_space)) {
    *error = "libunwind.so.8 lacks the local unwinding API";
    return false;
  }
  // Debian's libunwind 1.6 is built without per-thread register-state
  // caches and turns UNW_CACHE_PER_THREAD into UNW_CACHE_GLOBAL; say so.
  // The global cache's lock is taken with every signal blocked, so no
  // sampled thread is ever interrupted while holding it.
  api.set_caching_policy(*api.local_addr_space, UNW_CACHE_GLOBAL);
  if (dlinfo(lib, RTLD_DI_TLS_MODID, &tls_modid) != 0) tls_modid = 0;
  loaded = true;
  return PrepareUnwindThread();
}

bool PrepareUnwindThread() {
  if (!loaded) return false;
  if (tls_modid != 0) {
    TlsIndex index{tls_modid, 0};
    __tls_get_addr(&index);
  }
  return true;
}

bool UnwinderLoaded() { return loaded; }

int Unwind(void* ucontext, uintptr_t* out, int capacity, bool fast, bool* cut) {
  *cut = false;
  if (!loaded || capacity <= kUnwindSlack) return 0;
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  const uintptr_t pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  if (fast && UseTable(true)) {
    // libunwind's trace cache (unw_backtrace) from here, through the signal
    // frame, straight into `out`; then drop the frames above the
    // interrupted instruction.
    const int n = api.backtrace(reinterpret_cast<void**>(out), capacity);
    for (int skip = 0; skip < n && skip < kUnwindSlack; ++skip) {
      if (out[skip] != pc) continue;
      *cut = n == capacity;
      for (int i = skip; i < n; ++i) out[i - skip] = out[i];
      return n - skip;
    }
  }
  const int depth = StepUnwind(const_cast<unw_context_t*>(reinterpret_cast<const unw_context_t*>(uc)),
                               UNW_INIT_SIGNAL_FRAME, 0, out, capacity, cut);
  if (depth == 0) {
    out[0] = pc;
    return 1;
  }
  return depth;
}

int UnwindHere(uintptr_t* out, int max) {
  if (!loaded || max <= 0) return 0;
  // Both ways start at this function's caller, as unw_backtrace does.
  if (UseTable(false)) return api.backtrace(reinterpret_cast<void**>(out), max);
  unw_context_t context;
  if (api.getcontext(&context) != 0) return 0;
  bool cut = false;
  return StepUnwind(&context, 0, 1, out, max, &cut);
}

}  // namespace collector
