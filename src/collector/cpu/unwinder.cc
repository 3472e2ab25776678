// SIGNAL-HANDLER CODE: Unwind() runs in the sampling signal handler.
#define UNW_LOCAL_ONLY
#include "collector/cpu/unwinder.h"

#include <dlfcn.h>
#include <pthread.h>
#include <libunwind.h>
#include <ucontext.h>

namespace collector {
namespace {

struct Api {
  int (*init_local2)(unw_cursor_t*, unw_context_t*, int) = nullptr;
  int (*step)(unw_cursor_t*) = nullptr;
  int (*get_reg)(unw_cursor_t*, unw_regnum_t, unw_word_t*) = nullptr;
  int (*backtrace)(void**, int) = nullptr;
  int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t) = nullptr;
  unw_addr_space_t* local_addr_space = nullptr;
};
Api api;
bool loaded = false;
// libunwind's TLS module id (0: it has no TLS), and whether each thread's
// trace cache must be made at preparation (see PrepareUnwindThread).
size_t tls_modid = 0;
bool make_cache_at_prepare = false;

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
  // The first unwind on this thread makes libunwind create its pthread key
  // for the per-thread caches; a key created right after it gets the next
  // index. Below glibc's first-level block of 32, pthread_setspecific never
  // allocates, so a thread's cache may be made inside the handler.
  uintptr_t warm[64];
  UnwindHere(warm, 64);
  pthread_key_t probe;
  if (pthread_key_create(&probe, nullptr) == 0) {
    make_cache_at_prepare = probe >= 32;
    pthread_key_delete(probe);
  } else {
    make_cache_at_prepare = true;
  }
  return true;
}

bool PrepareUnwindThread() {
  if (!loaded) return false;
  if (make_cache_at_prepare) {
    uintptr_t warm[8];
    UnwindHere(warm, 8);
  } else if (tls_modid != 0) {
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
  if (fast) {
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
  // Step from the signal context itself: no trace cache, so no TLS.
  unw_cursor_t cursor;
  if (api.init_local2(&cursor, const_cast<unw_context_t*>(reinterpret_cast<const unw_context_t*>(uc)),
                      UNW_INIT_SIGNAL_FRAME) < 0) {
    out[0] = pc;
    return 1;
  }
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

int UnwindHere(uintptr_t* out, int max) {
  if (!loaded) return 0;
  return api.backtrace(reinterpret_cast<void**>(out), max);
}

}  // namespace collector
