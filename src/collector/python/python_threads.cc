// Python thread names: a thread started by Python's `threading` is named in
// the profile by its Thread's name ("Thread-3 (worker)", "ThreadPoolExecutor-0_1",
// or the name the program gave it), where a native thread is "thread N".
//
// The name lives in the Thread object's instance dictionary, whose memory
// layout differs in every CPython version (split tables, managed and inline
// values), so instead of reading it like the frames, a thread of ours asks
// the interpreter through its C API, as any C extension's own thread may:
// it takes the GIL (PyGILState_Ensure), reads threading's _active and _limbo
// maps (Thread objects, their _native_id and _name), and lets go. It does
// so shortly after a thread registers (its native id is set when its Python
// code starts) and then every kRenamePollMs, for names changed later; a
// process with no thread but the main one is never asked. Why not the main
// thread's pending calls (Py_AddPendingCall): they run only while the main
// thread runs Python code, and a main thread waiting in join() would name
// no worker until the workers had ended. Since 3.12 CPython also raises an
// audit event as threading starts a Thread: a hook added at attach time
// (PySys_AddAuditHook, kept across the interpreter's initialization) reads
// the name there and the collector's pthread_create wrapper hands it to the
// new thread, so even a thread living a few milliseconds is named. Having a
// hook makes CPython build every audit event's arguments (open, import,
// exec, ...): the hook itself returns at once for all but the two thread
// events (the cost in docs/performance.md).
//
// Guards: the interpreter is asked only while it is initialized and not
// finalizing. A thread that waits for the GIL while finalization begins is
// ended by CPython (PyThread_exit_thread, a forced unwind): the namer holds
// no lock of ours there (EnterInterpreter), so it just ends, and names
// already given stay. The main thread and threads Python did not start
// (_DummyThread) keep their names.
//
// CPython's functions are found with dlsym in the running interpreter (the
// collector links no libpython); `PyObject*` is an opaque pointer here.
//
// Thread-safety: one namer thread per process (restarted in a fork child);
// names are stored with NameThreads (registry_mutex), never while holding
// the GIL, so no lock order involves it.
#include <dlfcn.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "collector/core/runtime.h"
#include "collector/core/runtime_state.h"
#include "collector/python/python_threads.h"

namespace collector::python {
namespace {

using Object = void*;

// The C API calls the namer makes (all in CPython's stable ABI).
struct Api {
  int (*is_initialized)() = nullptr;
  int (*is_finalizing)() = nullptr;  // _Py_IsFinalizing (3.10-3.12), Py_IsFinalizing (3.13)
  int (*gil_ensure)() = nullptr;     // PyGILState_STATE is an int-sized enum
  void (*gil_release)(int) = nullptr;
  Object (*sys_get_object)(const char*) = nullptr;             // borrowed
  Object (*dict_get_item_string)(Object, const char*) = nullptr;  // borrowed
  Object (*get_attr_string)(Object, const char*) = nullptr;     // new
  Object (*dict_values)(Object) = nullptr;                      // new list
  ssize_t (*list_size)(Object) = nullptr;
  Object (*list_get_item)(Object, ssize_t) = nullptr;  // borrowed
  long (*long_as_long)(Object) = nullptr;
  const char* (*unicode_as_utf8_and_size)(Object, ssize_t*) = nullptr;
  void (*err_clear)() = nullptr;
  void (*dec_ref)(Object) = nullptr;
  Object (*tuple_get_item)(Object, ssize_t) = nullptr;  // borrowed
};
constinit Api g_api{};
constinit bool g_api_found = false;  // FindApi succeeded (a fork child keeps it)
constinit std::atomic<uint64_t> g_registered{0};  // threads registered so far, but the main one

template <class F>
bool Find(F* f, const char* name) {
  *f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return *f != nullptr;
}

bool FindApi(Api* a) {
  if (!Find(&a->is_finalizing, "Py_IsFinalizing") && !Find(&a->is_finalizing, "_Py_IsFinalizing")) return false;
  return Find(&a->is_initialized, "Py_IsInitialized") && Find(&a->gil_ensure, "PyGILState_Ensure") &&
         Find(&a->gil_release, "PyGILState_Release") && Find(&a->sys_get_object, "PySys_GetObject") &&
         Find(&a->dict_get_item_string, "PyDict_GetItemString") && Find(&a->get_attr_string, "PyObject_GetAttrString") &&
         Find(&a->dict_values, "PyDict_Values") && Find(&a->list_size, "PyList_Size") &&
         Find(&a->list_get_item, "PyList_GetItem") && Find(&a->long_as_long, "PyLong_AsLong") &&
         Find(&a->unicode_as_utf8_and_size, "PyUnicode_AsUTF8AndSize") && Find(&a->err_clear, "PyErr_Clear") &&
         Find(&a->dec_ref, "Py_DecRef") && Find(&a->tuple_get_item, "PyTuple_GetItem");
}

// A new reference, or null with the error cleared.
Object Attr(Object o, const char* name) {
  Object v = g_api.get_attr_string(o, name);
  if (v == nullptr) g_api.err_clear();
  return v;
}

// A str attribute's UTF-8 text; false when missing or not a str.
bool TextAttr(Object o, const char* name, std::string* out) {
  Object v = Attr(o, name);
  if (v == nullptr) return false;
  ssize_t size = 0;
  const char* text = g_api.unicode_as_utf8_and_size(v, &size);
  if (text == nullptr) g_api.err_clear();
  else out->assign(text, static_cast<size_t>(size));
  g_api.dec_ref(v);
  return text != nullptr;
}

// Adds (native id, name) of the threads in one of threading's maps.
void ReadThreads(Object threading, const char* map, pid_t main_tid, std::vector<std::pair<pid_t, std::string>>* out) {
  Object dict = Attr(threading, map);
  if (dict == nullptr) return;
  Object threads = g_api.dict_values(dict);
  g_api.dec_ref(dict);
  if (threads == nullptr) return g_api.err_clear();
  const ssize_t n = g_api.list_size(threads);
  for (ssize_t i = 0; i < n; ++i) {
    Object thread = g_api.list_get_item(threads, i);
    if (thread == nullptr) break;
    Object type = Attr(thread, "__class__");
    std::string type_name;
    const bool typed = type != nullptr && TextAttr(type, "__name__", &type_name);
    if (type != nullptr) g_api.dec_ref(type);
    if (!typed || type_name == "_DummyThread" || type_name == "_MainThread") continue;
    Object id = Attr(thread, "_native_id");  // None until the thread's Python code starts
    if (id == nullptr) continue;
    const long tid = g_api.long_as_long(id);
    g_api.dec_ref(id);
    if (tid <= 0) {
      g_api.err_clear();
      continue;
    }
    std::string name;
    if (tid != main_tid && TextAttr(thread, "_name", &name) && !name.empty())
      out->emplace_back(static_cast<pid_t>(tid), std::move(name));
  }
  g_api.dec_ref(threads);
}

// Takes the GIL for this thread. CPython ends a thread that waits for it
// while finalization begins (pthread_exit, a forced unwind the process's
// libgcc_s runs through our frames: lifecycle.cc, PrepareOwnUnwinder).
bool EnterInterpreter(int* gil) {
  if (!g_api.is_initialized() || g_api.is_finalizing()) return false;
  *gil = g_api.gil_ensure();
  return true;
}

// Reads the names with the GIL held, and lets it go.
std::vector<std::pair<pid_t, std::string>> AskInterpreter(int gil) {
  std::vector<std::pair<pid_t, std::string>> names;
  // Unwinding past here with the GIL held would stop the program: an
  // allocation failure ends the reading, not the thread.
  try {
    names.reserve(64);
    Object modules = g_api.sys_get_object("modules");
    Object threading = modules ? g_api.dict_get_item_string(modules, "threading") : nullptr;
    if (threading != nullptr) {
      const pid_t main_tid = getpid();
      ReadThreads(threading, "_limbo", main_tid, &names);
      ReadThreads(threading, "_active", main_tid, &names);  // after _limbo: a thread in both is named by _active
    }
  } catch (const std::exception&) {
  }
  g_api.err_clear();
  g_api.gil_release(gil);
  return names;
}

void Store(std::vector<std::pair<pid_t, std::string>> names) {
  // The last entry per id wins (see AskInterpreter's order).
  std::stable_sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<pid_t, std::string>> unique;
  for (auto& e : names) {
    if (!unique.empty() && unique.back().first == e.first) unique.back() = std::move(e);
    else unique.push_back(std::move(e));
  }
  internal::NameThreads(unique, &internal::ThreadState::python_name);
}

constexpr int kTickMs = 20;
constexpr int kFreshTicks = 5;     // ask this many ticks after a thread registers
constexpr int kRenamePollMs = 500;

void* NamerMain(void*) {
  uint64_t seen = 0;
  int fresh = 0, idle = 0;
  for (;;) {
    ::usleep(kTickMs * 1000);
    const uint64_t registered = g_registered.load(std::memory_order_acquire);
    if (registered != seen) {
      seen = registered;
      fresh = kFreshTicks;
    }
    if (registered == 0) continue;  // the main thread alone: nothing to name
    const bool due = fresh > 0 || (idle += kTickMs) >= kRenamePollMs;
    if (!due) continue;
    if (fresh > 0) --fresh;
    idle = 0;
    int gil = 0;
    if (!EnterInterpreter(&gil)) continue;
    std::vector<std::pair<pid_t, std::string>> names = AskInterpreter(gil);
    if (names.empty()) continue;
    try {
      Store(std::move(names));
    } catch (const std::exception&) {  // a name is lost, not the program
    }
  }
  return nullptr;
}

// 3.12+: the audit event CPython raises as threading starts a Thread
// (_thread.start_new_thread, or start_joinable_thread since 3.13; its first
// argument is the bound method Thread._bootstrap). Runs in the starting
// thread with the GIL held; the name goes to that thread's next
// pthread_create of interpreter code, so a thread is named from its first
// sample however short its life. Returns 0 always (never vetoes the event)
// and leaves no error set.
constinit uintptr_t g_text_lo = 0, g_text_hi = 0;

int OnAuditEvent(const char* event, Object args, void*) {
  if (event[0] != '_' || (std::strcmp(event, "_thread.start_new_thread") != 0 &&
                          std::strcmp(event, "_thread.start_joinable_thread") != 0))
    return 0;
  Object function = g_api.tuple_get_item(args, 0);
  if (function == nullptr) {
    g_api.err_clear();
    return 0;
  }
  try {
    std::string qualname, name;
    if (!TextAttr(function, "__qualname__", &qualname) || qualname != "Thread._bootstrap") return 0;
    Object thread = Attr(function, "__self__");
    if (thread == nullptr) return 0;
    const bool named = TextAttr(thread, "_name", &name);
    g_api.dec_ref(thread);
    if (named && !name.empty()) NameNextThread(name, g_text_lo, g_text_hi);
  } catch (const std::exception&) {  // the thread is named by the namer instead
  }
  return 0;
}

}  // namespace

bool StartThreadNamer(int minor, uintptr_t text_lo, uintptr_t text_hi) {
  if (!g_api_found) g_api_found = FindApi(&g_api);
  if (!g_api_found) return false;
  if (minor >= 12 && g_text_hi == 0) {
    // Once per process (a fork child keeps the parent's hook). Safe before
    // the interpreter initializes: CPython keeps hooks added then.
    using AddHook = int (*)(int (*)(const char*, Object, void*), void*);
    if (auto add = reinterpret_cast<AddHook>(dlsym(RTLD_DEFAULT, "PySys_AddAuditHook"))) {
      g_text_lo = text_lo;
      g_text_hi = text_hi;
      add(OnAuditEvent, nullptr);
    }
  }
  return internal::StartOwnThread(NamerMain);
}

void NoteThreadRegistered(const internal::ThreadState& t) {
  if (t.index != 0) g_registered.fetch_add(1, std::memory_order_release);
}

void ForgetThreadNames() { g_registered.store(0); }

int64_t NamedThreads() {
  std::lock_guard<std::mutex> lock(internal::registry_mutex);
  int64_t named = 0;
  const size_t n = internal::rt->thread_count.load();
  for (size_t i = 0; i < n; ++i) {
    const internal::ThreadState* t = internal::rt->threads[i].load();
    if (t != nullptr && !t->python_name.empty()) ++named;
  }
  return named;
}

}  // namespace collector::python
