// Runtime: the collector's life inside the profiled process.
//
// Lifecycle: Start() (from the library constructor) reads the configuration,
// creates the run, registers the main thread and any threads that already
// exist, arms their sampling timers and starts the checkpoint thread. Threads
// created later register themselves (interpose.cc wraps pthread_create).
// Fork: the child starts its own run (linked to the parent's) or, with
// --no-follow, goes quiet. Exec: the run is finished before the image is
// replaced; the new image starts its own run. Exit, _exit and fatal signals
// write the final state.
//
// Thread-safety: every entry point may be called from any thread; the ones
// marked SIGNAL-HANDLER CODE are async-signal-safe. The runtime's state is
// process-global and deliberately never destroyed (host code may run after
// static destructors): core/runtime_state.h.
//
// Where the entry points live: Start, BeforeExit, Active in
// core/lifecycle.cc; RegisterCurrentThread in core/threads.cc;
// NoteThreadStart in cpu/thread_time.cc; exec in
// core/exec_fork.cc; the loader hooks in cpu/loader_events.cc;
// HeldSamples in cpu/sampler.cc. NVTX's entry points are in
// nvtx/nvtx_ranges.h.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace collector {

void Start();

// Thread registration, from the pthread_create wrapper's start routine
// (`python_name`: the name Python's threading gave the thread, or empty).
void RegisterCurrentThread(std::string python_name = {});

// A name for the thread the calling thread is about to start (Python's
// threading, as it starts a Thread: python/python_threads.cc): the calling
// thread's next pthread_create whose start routine lies in [lo, hi) passes
// it on (TakeNextThreadName). Normal context.
void NameNextThread(std::string_view name, uintptr_t lo, uintptr_t hi);
// The pthread_create wrapper's part: the pending name if `start_routine` is
// in its range, else empty; the pending name is dropped either way.
std::string TakeNextThreadName(const void* start_routine);
// Then, on the same thread: its start routine and the return address into
// the thread-start code that called the wrapper (cpu/thread_time.cc).
void NoteThreadStart(void* start_routine, void* start_return_address);

// Brings the calling thread's unwind state up to date after loader activity
// (runtime_state.h, loader_generation), so its samples take the fast path
// again. Normal context; cheap when nothing changed.
void RefreshUnwind();

// Interposer hooks.
bool Active();
void BeforeExec();      // final write of this image's run; stops sampling
void AfterFailedExec();  // exec failed: sampling resumes
// The environment for an exec'd or spawned image: `envp` plus what carries
// the recording on (or, with --no-follow, minus the collector). Built into
// storage the caller provides, allocating nothing, so that a vfork child
// (which shares its parent's heap) can build it on its own stack: first
// MeasureExecEnv, then BuildExecEnv into `slots` pointers and `text` bytes.
// Without a recording the result is `envp` itself.
struct ExecEnvSize {
  size_t slots = 0;  // pointers, the terminating null included
  size_t text = 0;   // bytes of the rebuilt LD_PRELOAD entry
};
ExecEnvSize MeasureExecEnv(const char* const* envp);
char* const* BuildExecEnv(const char* const* envp, const char** slots, char* text);
// The same in heap storage, for callers in normal context.
struct ExecEnv {
  std::vector<const char*> slots;
  std::vector<char> text;  // not a string: a short one would move its bytes
  char* const* env = nullptr;
  char* const* get() const { return env; }
};
ExecEnv ExecEnvironment(const char* const* envp);
// A child that shares or copied this process's memory without a run of its
// own (its pid is not Runtime::pid): a vfork child, mostly, also a fork
// under --no-follow or a raw clone. It must write and allocate nothing
// (interpose.cc, the exit and fatal-signal paths). Async-signal-safe.
bool InForeignChild();
void BeforeExit(int status);  // _exit/_Exit
// Called by a thread about to exit or exec: when a fatal signal is being
// handled on another thread, the process is as good as dead (it would be,
// without us) and that handler has the run written, then lets it die; this
// thread sleeps through that, past the handler's deadline at most, instead
// of ending or replacing the process in the middle of the write (the run
// lost, the program's exit status 0). Normal context (fatal.cc).
void AwaitFatalSignal();
// vfork where the real one cannot be used (interpose.cc): a fork whose child,
// by vfork's contract, only execs or exits: it is not sampled and writes no
// run; what it execs links to this process's run. A child that breaks the
// contract runs on unprofiled.
pid_t ForkForVfork();
void EnterLoader();           // dlopen/dlclose in progress on this thread
void LeaveLoader();
// dl_iterate_phdr in progress on this thread (the program's, a library's or
// ours): it holds the loader's list lock, which libunwind in this thread's
// sampling handler would take again (a self-deadlock when the signal lands
// inside the lock's acquisition), so the handler keeps to its own walker.
// EnterLoaderList's token goes to LeaveLoaderList.
void* EnterLoaderList();
void LeaveLoaderList(void* token);
// dlclose: BeforeUnload notes the loaded modules (null when not recording);
// AfterUnload, given that, records the ones that went away and frees it.
void* BeforeUnload();
void AfterUnload(void* token);

// Holds the calling thread's sampling signal for the length of one blocking
// call that a signal handler always interrupts (signal(7): nanosleep, poll,
// select, epoll_wait, pause, sigsuspend, ...), so no tick can interrupt it
// and every EINTR the program sees comes from its own signals. (Restarting
// the call when the sampler had interrupted it could not tell a program
// signal that arrived with a tick from the tick, and swallowed it: make -j
// waiting in pselect for SIGCHLD hung.) The tick held meanwhile is taken as
// the call returns, with the whole wait's time, on the stack the program sees:
// `caller`, then `call` (the wrapper, named as the program called it).
// Calls that take a signal mask get the sampling signal added to it (mask());
// the others block it on the thread for the call. Normal context; nests (a
// program's handler may wait too); the state it leaves for the sampling
// handler is this thread's alone (cpu/sampler.cc).
class HeldSamples {
 public:
  HeldSamples(void* call, void* caller, const sigset_t* call_mask = nullptr);
  ~HeldSamples();
  HeldSamples(const HeldSamples&) = delete;
  HeldSamples& operator=(const HeldSamples&) = delete;
  // The call's own mask with the sampling signal added (null when it had none).
  const sigset_t* mask() const { return has_call_mask_ ? &call_mask_ : nullptr; }

 private:
  sigset_t call_mask_;
  sigset_t old_mask_;
  bool has_call_mask_ = false;
  bool blocked_ = false;
  uintptr_t outer_call_ = 0, outer_caller_ = 0;
};

}  // namespace collector
