// The collector library's exported symbols: its constructor and the libc
// functions it interposes (LD_PRELOAD puts these in front of libc's).
//
// - pthread_create: new threads register for sampling before their start
//   routine runs.
// - exec*, fexecve, posix_spawn*: the current image's run is written before
//   it is replaced, and the child's environment carries the recording on.
// - vfork: the real one (a jump to glibc's); the child shares its parent's
//   memory, so what it reaches of ours writes and allocates nothing, and it
//   gets no run of its own (by vfork's contract it only execs or exits).
// - _exit, _Exit: the run is written (exit() is covered by on_exit).
// - dlopen, dlclose, dl_iterate_phdr: while this thread is inside the
//   loader its samples use only the handler's own walker (libunwind would
//   need the loader's locks: unwinder.h); dlclose waits for walks in flight
//   before anything is unmapped; libdw's own dlopen of its debuginfod client
//   is refused. A bare name is searched for with the
//   program's caller's search path, not the collector's (PathForCaller).
// - nanosleep, poll, select, epoll_wait, pause, sigsuspend and the other
//   calls that a signal handler always interrupts (signal(7): never
//   restarted, whatever SA_RESTART says) run with the sampling signal held
//   (HeldSamples), so the program sees every EINTR it would see without us,
//   and no other.
//
// Everything else in the library is hidden (-fvisibility=hidden). Each
// wrapper passes straight through when the collector is not active. The
// waits and pthread_create also prepare the calling thread for unwinding if
// it is not (RefreshUnwind: a thread that existed before the collector, or
// one whose TLS a loader call elsewhere may have changed); dlopen and dlclose
// do it on their way out (LeaveLoader).
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <new>
#include <vector>

#include "collector/core/runtime.h"
#include "collector/cpu/unwinder.h"

extern char** environ;

#define CCT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

template <class F>
F Real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

// glibc's vfork, for the trampoline below (set before anything can vfork).
extern "C" {
__attribute__((visibility("hidden"))) void* cct_real_vfork = nullptr;
__attribute__((visibility("hidden"))) pid_t cct_vfork_fallback() { return collector::ForkForVfork(); }
}

namespace {

__attribute__((constructor)) void CollectorInit() {
  cct_real_vfork = dlsym(RTLD_NEXT, "vfork");
  collector::Start();
}

struct StartArgs {
  void* (*fn)(void*);
  void* arg;
  std::string python_name;
};

void* ThreadTrampoline(void* p) {
  auto* start = static_cast<StartArgs*>(p);
  void* (*fn)(void*) = start->fn;
  void* arg = start->arg;
  collector::RegisterCurrentThread(std::move(start->python_name));
  delete start;
  collector::NoteThreadStart(reinterpret_cast<void*>(fn), __builtin_return_address(0));
  return fn(arg);
}

}  // namespace

CCT_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*), void* arg) {
  static auto real = Real<int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*)>("pthread_create");
  if (!collector::Active()) return real(thread, attr, fn, arg);
  collector::RefreshUnwind();  // a safe moment for the creating thread
  auto* start = new (std::nothrow) StartArgs{fn, arg, {}};
  if (!start) return real(thread, attr, fn, arg);
  start->python_name = collector::TakeNextThreadName(reinterpret_cast<const void*>(fn));
  const int rc = real(thread, attr, ThreadTrampoline, start);
  if (rc != 0) delete start;
  return rc;
}

// --- exec --------------------------------------------------------------------

namespace {
// The most a vfork child builds on its stack; a larger environment is
// passed on as the program gave it (it still has what the recording set in
// ours, but an environment the program built without it loses the
// recording).
constexpr size_t kMaxStackEnvBytes = 256 * 1024;

// Whether an exec is recorded (written first, the new image linked to it).
// A fatal signal being handled on another thread has made the collector
// inactive: the exec waits for that signal to end the process first.
bool RecordsExec() {
  collector::AwaitFatalSignal();
  return collector::Active();
}

// Runs an exec-like call with the recording's environment: the current
// image's run is written first, and sampling resumes if the call fails.
template <class Call>
int ExecWith(char* const envp[], Call call) {
  if (collector::InForeignChild()) {
    // A vfork child: it shares our heap and our locks' owners are suspended
    // or running, so it allocates nothing and writes no run (the image it
    // execs links to ours). The environment goes on this stack, which is
    // the child's own below the vfork call.
    const collector::ExecEnvSize size = collector::MeasureExecEnv(envp);
    const size_t bytes = size.slots * sizeof(char*) + size.text;
    if (bytes == 0 || bytes > kMaxStackEnvBytes) return call(envp);
    auto* slots = static_cast<const char**>(alloca(size.slots * sizeof(char*)));
    auto* text = static_cast<char*>(alloca(size.text));
    return call(collector::BuildExecEnv(envp, slots, text));
  }
  collector::BeforeExec();
  const collector::ExecEnv env = collector::ExecEnvironment(envp);
  const int rc = call(env.get());
  const int err = errno;
  collector::AfterFailedExec();
  errno = err;
  return rc;
}
}  // namespace

CCT_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  static auto real = Real<int (*)(const char*, char* const*, char* const*)>("execve");
  if (!RecordsExec()) return real(path, argv, envp);
  return ExecWith(envp, [&](char* const* env) { return real(path, argv, env); });
}

CCT_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static auto real = Real<int (*)(const char*, char* const*, char* const*)>("execvpe");
  if (!RecordsExec()) return real(file, argv, envp);
  return ExecWith(envp, [&](char* const* env) { return real(file, argv, env); });
}

CCT_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  static auto real = Real<int (*)(int, char* const*, char* const*)>("fexecve");
  if (!RecordsExec()) return real(fd, argv, envp);
  return ExecWith(envp, [&](char* const* env) { return real(fd, argv, env); });
}

CCT_EXPORT int execv(const char* path, char* const argv[]) { return execve(path, argv, environ); }
CCT_EXPORT int execvp(const char* file, char* const argv[]) { return execvpe(file, argv, environ); }

// execl and its kin build their argument vector on the stack: a vfork
// child calls them too, and must not allocate. (glibc declares arg0
// nonnull; programs pass null anyway, so the compiler must not assume it.)
#define CCT_VARARGS(arg0, argv_name, envp_out)                                   \
  va_list ap;                                                                    \
  va_start(ap, arg0);                                                            \
  const char* first_ = arg0;                                                     \
  asm("" : "+r"(first_));                                                        \
  size_t argc_ = first_ ? 1 : 0;                                                 \
  if (first_) {                                                                  \
    va_list count;                                                               \
    va_copy(count, ap);                                                          \
    while (va_arg(count, char*)) ++argc_;                                        \
    va_end(count);                                                               \
  }                                                                              \
  char** argv_name = static_cast<char**>(alloca((argc_ + 1) * sizeof(char*)));  \
  argv_name[0] = const_cast<char*>(first_);                                      \
  for (size_t i_ = 1; i_ <= argc_; ++i_) argv_name[i_] = va_arg(ap, char*);     \
  if (envp_out) *static_cast<char* const**>(envp_out) = va_arg(ap, char* const*); \
  va_end(ap)

CCT_EXPORT int execl(const char* path, const char* arg0, ...) {
  CCT_VARARGS(arg0, argv, static_cast<void*>(nullptr));
  return execve(path, argv, environ);
}

CCT_EXPORT int execlp(const char* file, const char* arg0, ...) {
  CCT_VARARGS(arg0, argv, static_cast<void*>(nullptr));
  return execvpe(file, argv, environ);
}

CCT_EXPORT int execle(const char* path, const char* arg0, ...) {
  char* const* envp = nullptr;
  CCT_VARARGS(arg0, argv, static_cast<void*>(&envp));
  return execve(path, argv, envp);
}

CCT_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* fa,
                           const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  static auto real = Real<int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                                  char* const*, char* const*)>("posix_spawn");
  if (!collector::Active() || collector::InForeignChild()) return real(pid, path, fa, attr, argv, envp);
  const collector::ExecEnv env = collector::ExecEnvironment(envp);
  return real(pid, path, fa, attr, argv, env.get());
}

CCT_EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* fa,
                            const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  static auto real = Real<int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                                  char* const*, char* const*)>("posix_spawnp");
  if (!collector::Active() || collector::InForeignChild()) return real(pid, file, fa, attr, argv, envp);
  const collector::ExecEnv env = collector::ExecEnvironment(envp);
  return real(pid, file, fa, attr, argv, env.get());
}

// The real vfork, reached by a jump: a wrapper that called it would have the
// child return through the wrapper's frame, which the suspended parent still
// uses. The child shares our memory, so what it may call of ours (exec,
// _exit, a fatal signal) checks InForeignChild and writes and allocates
// nothing. A fork (ForkForVfork) costs a build tens of milliseconds per
// compiler started: the page tables copied, every page the parent then
// writes copied again, the copy torn down by exec. Where glibc's vfork was
// not found, fork it is.
#if defined(__x86_64__)
asm(R"(
  .text
  .globl vfork
  .type vfork, @function
vfork:
  .cfi_startproc
  movq cct_real_vfork(%rip), %rax
  testq %rax, %rax
  jz cct_vfork_fallback
  jmp *%rax
  .cfi_endproc
  .size vfork, .-vfork
)");
#else
CCT_EXPORT pid_t vfork() { return collector::ForkForVfork(); }
#endif

// --- exit --------------------------------------------------------------------

CCT_EXPORT [[noreturn]] void _exit(int status) {
  static auto real = Real<void (*)(int)>("_exit");
  collector::BeforeExit(status);
  real(status);
  __builtin_unreachable();
}

CCT_EXPORT [[noreturn]] void _Exit(int status) {
  static auto real = Real<void (*)(int)>("_Exit");
  collector::BeforeExit(status);
  real(status);
  __builtin_unreachable();
}

// --- the loader ----------------------------------------------------------------

namespace {
// libdw (elfutils 0.188) dlopens its debuginfod client when it is loaded —
// with the collector, in every profiled process: libcurl, GnuTLS, Kerberos
// and their relocations (a third of a short compiler process's start-up),
// and a symbolizer that may fetch debug files over the network at exit. The
// collector's libdw gets no client; the program's own dlopen of it is
// untouched.
bool IsDebuginfodForLibdw(const char* file, const void* caller) {
  if (!file) return false;
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  if (std::strncmp(base, "libdebuginfod", 13) != 0) return false;
  Dl_info info{};
  if (!dladdr(caller, &info) || !info.dli_fname) return false;
  const char* lib = std::strrchr(info.dli_fname, '/');
  lib = lib ? lib + 1 : info.dli_fname;
  return std::strncmp(lib, "libdw", 5) == 0;
}

// The directories the loader searches for a bare name dlopen'ed by the
// object at `map` (dlinfo RTLD_DI_SERINFO: its DT_RPATH chain or its
// DT_RUNPATH with $ORIGIN expanded, LD_LIBRARY_PATH, the default
// directories; not ld.so.cache).
std::vector<std::string> SearchDirs(void* map) {
  std::vector<std::string> dirs;
  Dl_serinfo size{};
  if (dlinfo(map, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size < sizeof(Dl_serinfo)) return dirs;
  std::vector<Dl_serinfo> buf(size.dls_size / sizeof(Dl_serinfo) + 1);
  Dl_serinfo* info = buf.data();
  info->dls_size = size.dls_size;
  info->dls_cnt = size.dls_cnt;
  if (dlinfo(map, RTLD_DI_SERINFO, info) != 0) return dirs;
  for (unsigned i = 0; i < info->dls_cnt; ++i) dirs.emplace_back(info->dls_serpath[i].dls_name);
  return dirs;
}

// The loader resolves a bare library name with the *calling* object's
// search path, and through this wrapper the caller is the collector: a
// program (PyTorch, cuDNN) that dlopens a library found only through its
// own DT_RUNPATH ($ORIGIN/...) would not find it. This returns the path the
// loader would have opened for the real caller, when it lies in a directory
// only the caller's search path has; "" when the collector's own dlopen
// finds the same (a name already loaded, LD_LIBRARY_PATH, ld.so.cache and
// the default directories come out the same for both) or nothing.
std::string PathForCaller(const char* file, const void* caller, void* (*real)(const char*, int),
                          int (*real_close)(void*)) {
  if (!file || !*file || std::strchr(file, '/')) return "";
  Dl_info info{};
  void* caller_map = nullptr;
  if (!dladdr1(caller, &info, &caller_map, RTLD_DL_LINKMAP) || !caller_map) return "";
  static const std::vector<std::string> own = [] {
    Dl_info self{};
    void* map = nullptr;
    if (!dladdr1(reinterpret_cast<void*>(&SearchDirs), &self, &map, RTLD_DL_LINKMAP) || !map) return std::vector<std::string>{};
    return SearchDirs(map);
  }();
  for (const std::string& dir : SearchDirs(caller_map)) {
    std::string path = dir + "/" + file;
    if (access(path.c_str(), F_OK) != 0) continue;
    if (std::find(own.begin(), own.end(), dir) != own.end()) return "";  // found the same way from here
    // A loaded object of that name is taken before any search.
    if (void* loaded = real(file, RTLD_LAZY | RTLD_NOLOAD)) {
      real_close(loaded);
      return "";
    }
    return path;
  }
  return "";
}
}  // namespace

CCT_EXPORT void* dlopen(const char* file, int mode) {
  static auto real = Real<void* (*)(const char*, int)>("dlopen");
  static auto real_close = Real<int (*)(void*)>("dlclose");
  const void* caller = __builtin_return_address(0);
  if (IsDebuginfodForLibdw(file, caller)) return nullptr;
  collector::EnterLoader();
  const std::string path = PathForCaller(file, caller, real, real_close);
  void* h = real(path.empty() ? file : path.c_str(), mode);
  if (h) collector::PublishFrameModules();
  collector::LeaveLoader();
  return h;
}

CCT_EXPORT int dlclose(void* handle) {
  static auto real = Real<int (*)(void*)>("dlclose");
  // All of it inside the loader window: BeforeUnload and AfterUnload walk
  // the loader's list too.
  collector::EnterLoader();
  void* modules = collector::BeforeUnload();
  collector::BeginUnload();
  const int rc = real(handle);
  collector::EndUnload();
  collector::AfterUnload(modules);
  collector::LeaveLoader();
  return rc;
}

CCT_EXPORT int dl_iterate_phdr(int (*callback)(dl_phdr_info*, size_t, void*), void* data) {
  static auto real = Real<int (*)(int (*)(dl_phdr_info*, size_t, void*), void*)>("dl_iterate_phdr");
  struct Leave {
    void* token = collector::EnterLoaderList();
    ~Leave() { collector::LeaveLoaderList(token); }
  } leave;  // a callback may throw through us
  return real(callback, data);
}

// --- calls a signal handler always interrupts --------------------------------
// signal(7): never restarted, whatever SA_RESTART says. The sampling signal
// is held for the call (HeldSamples), so none of them returns early because
// of the collector, and a program's own signal interrupts it as it would
// without us.

#define CCT_HELD(call) collector::HeldSamples held(reinterpret_cast<void*>(&call), __builtin_return_address(0))
#define CCT_HELD_MASK(call, mask) \
  collector::HeldSamples held(reinterpret_cast<void*>(&call), __builtin_return_address(0), mask)

CCT_EXPORT int nanosleep(const timespec* req, timespec* rem) {
  static auto real = Real<int (*)(const timespec*, timespec*)>("nanosleep");
  if (!collector::Active()) return real(req, rem);
  collector::RefreshUnwind();
  CCT_HELD(nanosleep);
  return real(req, rem);
}

CCT_EXPORT int clock_nanosleep(clockid_t clock, int flags, const timespec* req, timespec* rem) {
  static auto real = Real<int (*)(clockid_t, int, const timespec*, timespec*)>("clock_nanosleep");
  if (!collector::Active()) return real(clock, flags, req, rem);
  collector::RefreshUnwind();
  CCT_HELD(clock_nanosleep);
  return real(clock, flags, req, rem);
}

// libc's usleep and sleep call its own nanosleep, not ours: they go through
// ours here, so the wait is held and shown under the name the program called.
CCT_EXPORT int usleep(useconds_t usec) {
  timespec req{static_cast<time_t>(usec / 1000000), static_cast<long>(usec % 1000000) * 1000};
  return nanosleep(&req, nullptr);
}

CCT_EXPORT unsigned int sleep(unsigned int seconds) {
  timespec req{static_cast<time_t>(seconds), 0}, rem{};
  if (nanosleep(&req, &rem) == 0) return 0;
  return static_cast<unsigned>(rem.tv_sec + (rem.tv_nsec > 0 ? 1 : 0));
}

CCT_EXPORT int poll(pollfd* fds, nfds_t n, int timeout) {
  static auto real = Real<int (*)(pollfd*, nfds_t, int)>("poll");
  if (!collector::Active()) return real(fds, n, timeout);
  collector::RefreshUnwind();
  CCT_HELD(poll);
  return real(fds, n, timeout);
}

CCT_EXPORT int ppoll(pollfd* fds, nfds_t n, const timespec* ts, const sigset_t* mask) {
  static auto real = Real<int (*)(pollfd*, nfds_t, const timespec*, const sigset_t*)>("ppoll");
  if (!collector::Active()) return real(fds, n, ts, mask);
  collector::RefreshUnwind();
  CCT_HELD_MASK(ppoll, mask);
  return real(fds, n, ts, held.mask());
}

CCT_EXPORT int select(int nfds, fd_set* r, fd_set* w, fd_set* e, timeval* tv) {
  static auto real = Real<int (*)(int, fd_set*, fd_set*, fd_set*, timeval*)>("select");
  if (!collector::Active()) return real(nfds, r, w, e, tv);
  collector::RefreshUnwind();
  CCT_HELD(select);
  return real(nfds, r, w, e, tv);
}

CCT_EXPORT int pselect(int nfds, fd_set* r, fd_set* w, fd_set* e, const timespec* ts, const sigset_t* mask) {
  static auto real = Real<int (*)(int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*)>("pselect");
  if (!collector::Active()) return real(nfds, r, w, e, ts, mask);
  collector::RefreshUnwind();
  CCT_HELD_MASK(pselect, mask);
  return real(nfds, r, w, e, ts, held.mask());
}

CCT_EXPORT int epoll_wait(int epfd, epoll_event* events, int max, int timeout) {
  static auto real = Real<int (*)(int, epoll_event*, int, int)>("epoll_wait");
  if (!collector::Active()) return real(epfd, events, max, timeout);
  collector::RefreshUnwind();
  CCT_HELD(epoll_wait);
  return real(epfd, events, max, timeout);
}

CCT_EXPORT int epoll_pwait(int epfd, epoll_event* events, int max, int timeout, const sigset_t* mask) {
  static auto real = Real<int (*)(int, epoll_event*, int, int, const sigset_t*)>("epoll_pwait");
  if (!collector::Active()) return real(epfd, events, max, timeout, mask);
  collector::RefreshUnwind();
  CCT_HELD_MASK(epoll_pwait, mask);
  return real(epfd, events, max, timeout, held.mask());
}

CCT_EXPORT int epoll_pwait2(int epfd, epoll_event* events, int max, const timespec* ts, const sigset_t* mask) {
  static auto real = Real<int (*)(int, epoll_event*, int, const timespec*, const sigset_t*)>("epoll_pwait2");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  if (!collector::Active()) return real(epfd, events, max, ts, mask);
  collector::RefreshUnwind();
  CCT_HELD_MASK(epoll_pwait2, mask);
  return real(epfd, events, max, ts, held.mask());
}

// The waits for a signal: a tick must not end them either.
CCT_EXPORT int pause() {
  static auto real = Real<int (*)()>("pause");
  if (!collector::Active()) return real();
  collector::RefreshUnwind();
  CCT_HELD(pause);
  return real();
}

CCT_EXPORT int sigsuspend(const sigset_t* mask) {
  static auto real = Real<int (*)(const sigset_t*)>("sigsuspend");
  if (!collector::Active()) return real(mask);
  collector::RefreshUnwind();
  CCT_HELD_MASK(sigsuspend, mask);
  return real(held.mask());
}

CCT_EXPORT int sigtimedwait(const sigset_t* set, siginfo_t* info, const timespec* ts) {
  static auto real = Real<int (*)(const sigset_t*, siginfo_t*, const timespec*)>("sigtimedwait");
  if (!collector::Active()) return real(set, info, ts);
  collector::RefreshUnwind();
  CCT_HELD(sigtimedwait);
  return real(set, info, ts);
}

CCT_EXPORT int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  static auto real = Real<int (*)(const sigset_t*, siginfo_t*)>("sigwaitinfo");
  if (!collector::Active()) return real(set, info);
  collector::RefreshUnwind();
  CCT_HELD(sigwaitinfo);
  return real(set, info);
}
