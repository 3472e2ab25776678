// SIGNAL-HANDLER CODE: Unwind() runs in the sampling signal handler.
#define UNW_LOCAL_ONLY
#include "collector/cpu/unwinder.h"

#include <dlfcn.h>
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
  loaded = true;
  return true;
}

bool UnwinderLoaded() { return loaded; }

bool PrepareUnwindThread() {
  if (!loaded) return false;
  uintptr_t buf[16];
  api.backtrace(reinterpret_cast<void**>(buf), 16);
  return true;
}

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
