// The collector's process lifecycle: Start (from the library constructor),
// the run's metadata, the final write at exit (on_exit, _exit) and the
// accessors the GPU side uses. State: core/runtime_state.h, defined here.
// Thread-safety: Start runs once, in the constructor; Finish takes
// flush_mutex; the exit paths may run on any thread.
#include "collector/core/runtime.h"

#include <dlfcn.h>
#include <dirent.h>
#include <link.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/single_threaded.h>
#include <unistd.h>
#include <unwind.h>

#include <cstdlib>
#include <string>
#include <nlohmann/json.hpp>

#include "cctdb_config.h"
#include "collector/core/profile_builder.h"
#include "collector/core/run_info.h"
#include "collector/core/runtime_state.h"
#include "collector/core/source.h"
#include "collector/cpu/shared_rows.h"
#include "collector/gpu/gpu_runtime.h"
#include "store/run_file.h"

extern char** environ;

namespace collector {
namespace internal {

Runtime* rt = nullptr;
std::mutex registry_mutex;
__thread ThreadState* t_state __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t exit_key;

void Warn(const std::string& msg) {
  std::string line = "cctdb: " + msg + "\n";
  ssize_t w = write(STDERR_FILENO, line.data(), line.size());
  (void)w;
}

void FillMeta(store::RunMeta& m, const store::RunMeta* inherit) {
  store::RunMeta fresh;
  fresh.host = store::HostName();
  fresh.cwd = inherit ? rt->child_cwd : CurrentDirectory();  // a forked child: where it was at the fork
  if (inherit) {
    // A forked child: the same image on the same machine.
    fresh.user = inherit->user;
    fresh.executable = inherit->executable;
    fresh.executable_build_id = inherit->executable_build_id;
    fresh.compiler = inherit->compiler;
    fresh.kernel = inherit->kernel;
    fresh.os = inherit->os;
    fresh.glibc = inherit->glibc;
    fresh.modules = inherit->modules;
    fresh.cpu_model = inherit->cpu_model;
    fresh.launcher = inherit->launcher;
    fresh.git_commit = fresh.cwd == inherit->cwd ? inherit->git_commit : GitCommit(fresh.cwd);
  } else {
    if (auto facts = DecodeMachineFacts(rt->config.machine, getuid(), fresh.host)) {
      fresh.user = std::move(facts->user);
      fresh.cpu_model = std::move(facts->cpu_model);
      fresh.os = std::move(facts->os);
    } else {
      fresh.user = UserName();
      fresh.cpu_model = CpuModel();
      fresh.os = OperatingSystem();
    }
    fresh.launcher = LauncherRankFrom([](const char* n) -> const char* { return getenv(n); }, fresh.host);
    fresh.git_commit = GitCommit(fresh.cwd);
    fresh.modules = RunModules();
    if (!fresh.modules.empty()) {
      fresh.executable = fresh.modules.front().path;
      fresh.executable_build_id = fresh.modules.front().build_id;
    }
    if (fresh.executable.empty()) fresh.executable = ExecutablePath();
    // From the file the kernel mapped, not from its path (it may be replaced).
    fresh.compiler = ElfComment("/proc/self/exe");
    fresh.kernel = KernelVersion();
    fresh.glibc = GlibcVersion();
  }
  m = std::move(fresh);
  m.source = "cct-record";
  m.state = store::RunState::kRecording;
  m.start_time_ns = inherit ? rt->child_start_ns : Now(CLOCK_REALTIME);
  m.command = ProcessCommandLine();
  if (!rt->config.keep_args) MaskSecretArguments(m.command);
  m.name = RunName(rt->config.name, m.command, m.launcher);
  m.collector_version = CCTDB_VERSION;
  m.tags = rt->config.tags;
  m.env = RecordedEnvironment(environ);
  m.pid = getpid();
  m.pid_start_ticks = store::ProcessStartTicks(m.pid);
  m.process_cpu_ns = ProcessCpuNs();
  m.iteration_regex = rt->config.iteration_regex;
  *m.sampling = {{"clock", rt->config.clock == SampleClock::kWall ? "wall" : "cpu"},
                {"freq_hz", rt->config.freq_hz},
                {"checkpoint_s", rt->config.checkpoint_s},
                {"signal", "SIGRTMIN+" + std::to_string(rt->config.signal_offset)},
                {"max_depth", rt->config.max_depth},
                {"unwinder", "cfi-walker, libunwind"}};
  if (!rt->config.session.empty()) m.extra["session"] = rt->config.session;
  if (!inherit) {  // a forked child's were set at the fork
    rt->start_mono_ns = Now(CLOCK_MONOTONIC);
    rt->epoch_offset_ns = RealtimeMinusMonotonicNs();
  }
}

void EnsureChildMeta() noexcept {
  if (!rt->child_meta_pending) return;
  try {
    const store::RunMeta parent_meta = std::move(rt->meta);
    FillMeta(rt->meta, &parent_meta);
  } catch (...) {
    // Out of memory: the run keeps what could be filled.
  }
  rt->child_meta_pending = false;
}

std::string NewRunKey() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != sizeof v) {
    // No entropy source: time and pid still tell processes apart.
    v = static_cast<uint64_t>(Now(CLOCK_REALTIME)) * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(getpid());
  }
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
  return s;
}

std::string ParentKeyForChildren() { return rt->run_created ? rt->run_key : rt->config.parent_key; }

std::string RootKeyForChildren() {
  if (!rt->config.root_key.empty()) return rt->config.root_key;
  // No root above us: we are the root once our run exists; a forked child
  // without a run of its own passes on its parent's link (the parent is the
  // root then).
  if (rt->run_created) return rt->run_key;
  return rt->config.parent_key;
}

void PublishRunKeys() {
  setenv("CCT_RECORD_PARENT_KEY", ParentKeyForChildren().c_str(), 1);
  if (const std::string root = RootKeyForChildren(); !root.empty()) setenv("CCT_RECORD_ROOT_KEY", root.c_str(), 1);
  PublishExecOverlay();
}

// The last write of this process's run.
void Finish(store::RunState state, std::optional<int> exit_code, std::optional<int> term_signal) {
  {
    std::lock_guard<std::mutex> lock(rt->flush_mutex);
    if (rt->finished) return;
    rt->finished = true;
    EnsureChildMeta();
    rt->meta.exit_code = exit_code;
    rt->meta.term_signal = term_signal;
    rt->meta.diagnostics["final_flush"] = 1;
    WriteRun(state);
  }
  RaiseDeferredFatal();  // a SIGTERM that came during the write: as without us, it ends the process
}

void OnProcessExit(int status, void*) { BeforeExit(status); }

std::string OwnModule() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&OwnModule), &info) && info.dli_fname) return info.dli_fname;
  return "";
}

}  // namespace internal

using namespace internal;

bool Active() { return rt && rt->active.load(std::memory_order_relaxed); }

namespace {
// The collector links libgcc's unwinder in (-static-libgcc: libgcc_s.so.1
// as a dependency costs every recorded C program 6-7 page faults). When a
// program's exception or a thread's cancellation (pthread_cancel,
// pthread_exit: CPython's daemon threads at exit), unwound by the process's
// own libgcc_s, crosses a frame of ours with a cleanup — an interposed
// blocking call's HeldSamples, the dl_iterate_phdr guard — libstdc++'s
// personality linked in here installs that cleanup with our copy's
// _Unwind_SetGR, which aborts until our copy has made its register-size
// table on a first unwind of its own. One backtrace of one frame makes it
// (no page fault measured). The two copies then share the context layout
// of GCC's unwind-dw2, unchanged (and versioned) since GCC 4.
_Unwind_Reason_Code StopAtOnce(_Unwind_Context*, void*) { return _URC_END_OF_STACK; }
void PrepareOwnUnwinder() { _Unwind_Backtrace(StopAtOnce, nullptr); }
}  // namespace

void Start() {
  const int64_t entered = Now(CLOCK_MONOTONIC);
  auto parsed = ParseConfig([](const char* n) -> const char* { return getenv(n); });
  if (!parsed.ok()) {
    Warn(parsed.status().message() + "; not profiling this process");
    return;
  }
  if (!parsed->has_value()) return;
  PrepareOwnUnwinder();
  rt = new (std::nothrow) Runtime;
  if (!rt) return;
  rt->pid = getpid();
  if (!rt->threads.ok()) {
    Warn("cannot map the thread registry; not profiling this process");
    delete rt;
    rt = nullptr;
    return;
  }
  rt->config = std::move(**parsed);
  rt->run_key = NewRunKey();
  rt->own_module = OwnModule();
  FindOwnText();
  SourcesStart(rt->config);  // NVTX compiles --iteration here
  if (!rt->config.follow) StripPreload(rt->own_module);

  // Before the first sample; a table that cannot be used leaves the walker
  // its own cache only (shared_rows.h says when).
  if (!rt->config.rows_path.empty()) (void)AttachSharedRows(rt->config.rows_path);
  StartUnwinder();
  rt->signo = SIGRTMIN + rt->config.signal_offset;
  rt->clock = rt->config.clock == SampleClock::kWall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
  rt->trace_budget.Reset(rt->config.trace_limit_bytes);
  rt->period_ns = static_cast<int64_t>(1e9 / rt->config.freq_hz);
  if (pthread_key_create(&exit_key, OnThreadExit) != 0) return;
  if (pipe2(rt->request_pipe, O_CLOEXEC) != 0 || pipe2(rt->ack_pipe, O_CLOEXEC) != 0) return;

  // The CPU sampler installs its signal handler; the GPU attaches (--gpu on
  // must fail before anything is written; auto may attach now).
  if (!SourcesAttach()) return;

  FillMeta(rt->meta);
  // What this process measured about the machine, for the ones it starts
  // (exec'd images through ExecEnvironment; system() and the like through
  // the environment).
  if (std::string facts = EncodeMachineFacts(getuid(), rt->meta.host, {rt->meta.user, rt->meta.cpu_model, rt->meta.os});
      facts != rt->config.machine) {
    rt->config.machine = std::move(facts);
    if (rt->config.machine.empty()) unsetenv("CCT_RECORD_MACHINE");
    else setenv("CCT_RECORD_MACHINE", rt->config.machine.c_str(), 1);
  }
  {
    std::lock_guard<std::mutex> lock(rt->flush_mutex);
    // The run exists from the start (state recording), so a process killed
    // before its first checkpoint still leaves one, and children can link
    // to it. The checkpoint thread writes it after kStartWriteDelayNs
    // (checkpoint_schedule.h): a short process writes once, at its end.
    // Whether the spool takes files is known now, as before.
    if (cct::Status st = SpoolWritable(); !st.ok()) {
      Warn("cannot record into " + rt->config.db_path + ": " + st.message() + "; not profiling");
      return;
    }
    rt->run_created = true;
    rt->start_write_pending = true;
    PublishRunKeys();
  }

  pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  on_exit(OnProcessExit, nullptr);
  InstallFatalHandlers();
  InstallAltStack();

  rt->active.store(true);
  RegisterThread(Tid(), true);
  // Threads started before us (by other libraries' constructors); glibc
  // knows when there are none, which spares most processes the directory
  // read (a handful of system calls, each costly on a VM).
  if (DIR* d = __libc_single_threaded ? nullptr : opendir("/proc/self/task")) {
    const pid_t self = Tid();
    while (dirent* e = readdir(d)) {
      const pid_t tid = static_cast<pid_t>(atoi(e->d_name));
      if (tid > 0 && tid != self && !FindThread(tid)) RegisterThread(tid, false);
    }
    closedir(d);
  }
  StartFlusher();
  rt->start_cost_ns.store(Now(CLOCK_MONOTONIC) - entered, std::memory_order_relaxed);
  if (!rt->flusher_running) {  // no thread to defer it to
    std::lock_guard<std::mutex> lock(rt->flush_mutex);
    WriteStartRun();
  }
}

void BeforeExit(int status) {
  AwaitFatalSignal();
  if (!rt || rt->finished || InForeignChild()) return;
  rt->final_writer.store(Tid());  // until Finish's RaiseDeferredFatal
  SourcesBeforeCheckpoint(/*final=*/true);  // the GPU delivers its last activity
  SourcesStop();
  Finish(store::RunState::kComplete, status, std::nullopt);
}

const std::string& CollectorModule() {
  static const std::string empty;
  return rt ? rt->own_module : empty;
}

std::string CollectorDirectory() {
  const std::string& path = CollectorModule();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

void RuntimeWarn(const std::string& message) { Warn(message); }

}  // namespace collector
