// See record.h.
#include "record/record.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "collector/core/run_info.h"
#include "collector/cpu/task_clock.h"
#include "output/format.h"
#include "store/database.h"

namespace record {
namespace {

constexpr const char* kTool = "cct-record";
constexpr int kExitNotFound = 127;  // the child's exit when exec fails (the parent reads exec_errno)
// Summarize: up to this many runs, a line each; past it, a line for the
// program, for up to kNotableRunLines runs that crashed, were killed or
// exited non-zero, and one for the rest, naming their kCountedNames most
// frequent names.
constexpr size_t kRunLinesUpTo = 8;
constexpr size_t kNotableRunLines = 16;
constexpr size_t kCountedNames = 4;

int64_t Clock(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The program RunProgram runs now, for Forward (0: none).
volatile sig_atomic_t child_pid = 0;

// SIGNAL-HANDLER CODE (async-signal-safe: a read and kill).
void Forward(int sig, siginfo_t* info, void*) {
  const pid_t pid = child_pid;
  if (pid > 0 && info && (info->si_code == SI_USER || info->si_code == SI_QUEUE)) kill(pid, sig);
}

// SIGNAL-HANDLER CODE (async-signal-safe: does nothing). It only makes
// SIGCHLD interrupt RunProgram's poll, which then reaps ended orphans.
void OnChild(int) {}

// Reaps the ended processes re-parented to this one (RunProgram made it
// their subreaper), never `program`, whose status RunProgram keeps. A
// zombie program listed first hides the ones behind it until it is reaped.
void ReapOrphans(pid_t program) {
  for (;;) {
    siginfo_t si{};
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0 || si.si_pid == program) return;
    siginfo_t gone{};
    if (waitid(P_PID, static_cast<id_t>(si.si_pid), &gone, WEXITED | WNOHANG) != 0) return;
  }
}

}  // namespace

SamplingHooks::SamplingHooks() {
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  try {
    opener_ = std::thread([this, self] { fd_.store(collector::OpenTaskClock(self, 0)); });
  } catch (...) {
    // No thread: the first process pays the wait, as without this.
  }
}

SamplingHooks::~SamplingHooks() {
  Wait();
  if (const int fd = fd_.load(); fd >= 0) close(fd);
}

std::string CollectorLibrary() {
  if (const char* env = getenv("CCT_COLLECTOR_LIB"); env && *env) return env;
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  exe[n] = '\0';
  std::string dir(exe);
  dir = dir.substr(0, dir.rfind('/'));
  for (const std::string& candidate :
       {dir + "/../src/collector/libcct-collector.so", dir + "/../lib/x86_64-linux-gnu/libcct-collector.so",
        dir + "/../lib/libcct-collector.so", dir + "/../lib64/libcct-collector.so"}) {
    char real[PATH_MAX];
    if (realpath(candidate.c_str(), real) && access(real, R_OK) == 0) return real;
  }
  return "";
}

std::string AbsolutePath(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return path;
  return std::string(cwd) + "/" + path;
}

std::string RandomSession() {
  unsigned char b[8] = {};
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t r = read(fd, b, sizeof b);
    (void)r;
    close(fd);
  }
  char s[32];
  std::snprintf(s, sizeof s, "%02x%02x%02x%02x%02x%02x%02x%02x-%d", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                getpid());
  return s;
}

void SplitArgs(int argc, char** argv, const std::set<std::string>& with_value, std::vector<std::string>& ours,
               std::vector<std::string>& program) {
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    ours.push_back(a);
    if (with_value.count(a) && i + 1 < argc) ours.push_back(argv[++i]);
  }
  for (; i < argc; ++i) program.emplace_back(argv[i]);
}

std::vector<std::string> ChildEnvironment(char** environ, const std::string& lib, bool nvtx,
                                          const collector::CollectorConfig& config) {
  std::vector<std::string> env;
  std::string preload = lib;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("CCT_RECORD_", 0) == 0) continue;
    if (entry.rfind("NVTX_INJECTION64_PATH=", 0) == 0) continue;
    if (entry.rfind("CUDA_INJECTION64_PATH=", 0) == 0) continue;
    if (entry.rfind("LD_PRELOAD=", 0) == 0) {
      if (entry.size() > 11) preload += ":" + entry.substr(11);
      continue;
    }
    env.push_back(entry);
  }
  env.push_back("LD_PRELOAD=" + preload);
  if (nvtx) env.push_back("NVTX_INJECTION64_PATH=" + lib);
  // The driver loads the collector (already preloaded: the same instance)
  // inside the program's first cuInit and calls InitializeInjection.
  if (config.gpu != collector::GpuTracing::kOff) env.push_back("CUDA_INJECTION64_PATH=" + lib);
  for (const auto& [k, v] : collector::ConfigEnvironment(config)) env.push_back(k + "=" + v);
  return env;
}

void InstallSignalForwarding() {
  struct sigaction sa {};
  sa.sa_sigaction = Forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
}

cct::Result<ChildResult> RunProgram(const std::vector<std::string>& program, const std::vector<std::string>& env,
                                    const std::function<void()>& tick, double tick_s, Inbox* inbox) {
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return cct::IoError(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : program) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  // Orphans come here, not to init: RunProgram can then tell whether any
  // process the program started still runs once it has ended (and the
  // inbox need not wait for their connects, Inbox::Close).
  const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  struct sigaction on_child {}, caller_child {};
  on_child.sa_handler = OnChild;
  // SA_RESTART: a store or a message written while the program runs (tick)
  // is not cut short by an orphan's end; poll is interrupted regardless.
  on_child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  sigemptyset(&on_child.sa_mask);
  sigaction(SIGCHLD, &on_child, &caller_child);
  const int64_t start_time_ns = Clock(CLOCK_REALTIME);
  const int64_t started = Clock(CLOCK_MONOTONIC);
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(err_pipe[0]);
    close(err_pipe[1]);
    sigaction(SIGCHLD, &caller_child, nullptr);
    if (subreaper) prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    return cct::IoError(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    close(err_pipe[0]);
    // The program sees SIGCHLD as cct-record's caller left it (an ignored
    // SIGCHLD stays ignored across exec; a handler would not).
    sigaction(SIGCHLD, &caller_child, nullptr);
    // If cct-record is killed outright, the program gets SIGTERM and its
    // collector still writes the run.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &dfl, nullptr);
    execvpe(args[0], args.data(), envp.data());
    const int e = errno;
    ssize_t w = write(err_pipe[1], &e, sizeof e);
    (void)w;
    _exit(kExitNotFound);
  }
  child_pid = pid;
  close(err_pipe[1]);
  ChildResult result;
  result.pid = pid;
  result.start_time_ns = start_time_ns;
  int e = 0;
  ssize_t r;
  do r = read(err_pipe[0], &e, sizeof e);
  while (r < 0 && errno == EINTR);
  if (r == sizeof e) result.exec_errno = e;
  close(err_pipe[0]);
  bool reaped = false;
  const bool ticks = tick && tick_s > 0;
  if ((ticks || inbox) && !result.exec_errno) {
    // Wake every tick_s for `tick`, for the inbox's connections, and at
    // once when the child exits.
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    const int64_t tick_ms = ticks ? std::max<int64_t>(1, static_cast<int64_t>(tick_s * 1000 + 0.5)) : 0;
    int64_t next_tick = Clock(CLOCK_MONOTONIC) / 1000000 + tick_ms;
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      if (pidfd >= 0) fds.push_back({pidfd, POLLIN, 0});
      if (inbox) inbox->AddPollFds(fds);
      int64_t timeout_ms = ticks ? std::max<int64_t>(0, next_tick - Clock(CLOCK_MONOTONIC) / 1000000) : -1;
      if (pidfd < 0) timeout_ms = timeout_ms < 0 ? 50 : std::min<int64_t>(timeout_ms, 50);
      const int n = poll(fds.data(), fds.size(), static_cast<int>(timeout_ms));
      if (n < 0 && errno != EINTR) break;
      ReapOrphans(pid);
      if (pidfd >= 0 ? n > 0 && fds[0].revents != 0 : waitpid(pid, &result.status, WNOHANG) == pid) {
        reaped = pidfd < 0;
        break;
      }
      if (inbox) inbox->Serve();
      if ((ticks && Clock(CLOCK_MONOTONIC) / 1000000 >= next_tick) ||
          (tick && inbox && inbox->pending_bytes() > Inbox::kFlushBytes)) {
        tick();
        next_tick = Clock(CLOCK_MONOTONIC) / 1000000 + tick_ms;
      }
    }
    if (pidfd >= 0) close(pidfd);
  }
  // Waits for any child: an orphan that ends first is reaped, and the wait
  // goes on for the program.
  while (!reaped) {
    siginfo_t next{};
    if (waitid(P_ALL, 0, &next, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      result.status = 0;
      break;
    }
    if (next.si_pid != pid) {
      siginfo_t gone{};
      waitid(P_PID, static_cast<id_t>(next.si_pid), &gone, WEXITED);
      continue;
    }
    while (waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
    }
    reaped = true;
  }
  child_pid = 0;
  result.duration_ns = Clock(CLOCK_MONOTONIC) - started;
  // Every descendant is now a child of this process or of another
  // descendant: with no child left, none runs.
  ReapOrphans(0);
  siginfo_t si{};
  result.descendants_left = !subreaper || waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 || errno != ECHILD;
  sigaction(SIGCHLD, &caller_child, nullptr);
  // Those still running stay this process's children; later orphans go
  // where they went before (the caller may be a long-lived process).
  if (subreaper) prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  return result;
}

ChildRun DescribeChild(const collector::CollectorConfig& config, const std::vector<std::string>& program,
                       const ChildResult& result, const std::optional<store::LauncherRank>& launcher) {
  ChildRun what;
  what.command = program;
  if (!config.keep_args) collector::MaskSecretArguments(what.command);
  what.name = collector::RunName(config.name, what.command, launcher);
  what.tags = config.tags;
  what.start_time_ns = result.start_time_ns;
  what.duration_ns = result.duration_ns;
  return what;
}

std::optional<store::LauncherRank> LaunchIdentity(std::string& launch_entry) {
  launch_entry.clear();
  const auto env = [](const char* n) -> const char* {
    // An outer recording's fallback is not this launch's.
    return std::string_view(n) == collector::kLaunchVariable ? nullptr : getenv(n);
  };
  const std::string host = store::HostName();
  std::optional<store::LauncherRank> launcher = collector::LauncherRankFrom(env, host);
  if (!launcher || !launcher->job_id.empty()) return launcher;
  const std::string id = collector::LaunchProcessId(host, collector::ProcessAncestors());
  if (id.empty()) return launcher;
  launch_entry = std::string(collector::kLaunchVariable) + "=" + id;
  launcher->job_id = id;
  launcher->job_source = collector::kLaunchJobSource;
  return launcher;
}

void Summarize(const std::string& db_path, const std::string& session, pid_t child, int status, const ChildRun& what,
               std::set<store::RunId>& reported, std::ostream& out, store::RunId first) {
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  if (!db.ok()) {
    out << kTool << ": cannot read back the runs: " << db.status().message() << '\n';
    return;
  }
  Summarize(**db, session, child, status, what, reported, out, first);
}

void Summarize(store::Database& db, const std::string& session, pid_t child, int status, const ChildRun& what,
               std::set<store::RunId>& reported, std::ostream& out, store::RunId first) {
  const std::string& db_path = db.path();
  auto runs = db.ListRuns(first);
  if (!runs.ok()) {
    out << kTool << ": cannot read back the runs: " << runs.status().message() << '\n';
    return;
  }
  bool child_seen = false;
  std::vector<store::RunMeta> fresh;  // the session's runs not reported yet, fixed up
  for (store::RunMeta m : *runs) {
    auto it = m.extra->find("session");
    if (it == m.extra->end() || !it->is_string() || it->get<std::string>() != session) continue;
    if (m.pid == child) child_seen = true;
    if (reported.count(m.id)) continue;
    reported.insert(m.id);
    bool changed = false;
    const bool exec_replaced = m.extra->contains("exec");
    if (m.pid == child && !exec_replaced && m.state != store::RunState::kCrashed) {
      // The direct child: its status is known here even when it could not
      // record it (return from main records it; SIGKILL does not).
      if (WIFEXITED(status) && !m.exit_code) m.exit_code = WEXITSTATUS(status), changed = true;
      if (WIFSIGNALED(status) && !m.term_signal) {
        m.term_signal = WTERMSIG(status);
        m.state = store::RunState::kCrashed;
        changed = true;
      }
    }
    if (m.state == store::RunState::kRecording && store::EffectiveState(m) == store::RunState::kCrashed) {
      m.state = store::RunState::kCrashed;
      changed = true;
    }
    if (changed) {
      if (auto st = db.UpdateMeta(m); !st.ok())
        out << kTool << ": cannot update run " << m.id << ": " << st.message() << '\n';
    }
    fresh.push_back(std::move(m));
  }
  const auto line = [&](const store::RunMeta& m) {
    const bool exec_replaced = m.extra->contains("exec");
    const auto d = [&](const char* k) {
      auto f = m.diagnostics.find(k);
      return f == m.diagnostics.end() ? int64_t{0} : f->second;
    };
    const int64_t samples = d("samples"), partial = d("partial_samples");
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%", samples ? 100.0 * static_cast<double>(partial) / samples : 0.0);
    // The threads' time the samples did not see (cpu/thread_time.cc); only
    // in runs of collectors that measure it.
    const int64_t sampled_ns = d("sampled_ns"), unsampled_ns = d("unsampled_ns");
    const double unsampled_share = sampled_ns + unsampled_ns > 0
                                       ? 100.0 * static_cast<double>(unsampled_ns) / static_cast<double>(sampled_ns + unsampled_ns)
                                       : 0.0;
    char unsampled[48] = "";
    if (m.diagnostics.count("unsampled_ns")) std::snprintf(unsampled, sizeof unsampled, ", %.1f%% unsampled", unsampled_share);
    std::string how;
    if (m.term_signal) {
      how = ", killed by signal " + std::to_string(*m.term_signal);
      if (m.sampling->contains("crash_site") && m.sampling->at("crash_site").is_string())
        how += " in " + m.sampling->at("crash_site").get<std::string>();
    } else if (m.exit_code && *m.exit_code != 0) {
      how = ", exit " + std::to_string(*m.exit_code);
    }
    if (exec_replaced) how += ", replaced by exec";
    std::string gpu;
    if (m.diagnostics.count("gpu_launches"))
      gpu = ", " + std::to_string(d("gpu_launches")) + " GPU launches (" + std::to_string(d("gpu_dropped_records")) +
            " records dropped)";
    out << kTool << ": run " << m.id << " '" << m.name << "' " << output::FormatValue(static_cast<double>(m.duration_ns), cct::Unit::kNanoseconds) << ", "
              << d("threads") << (d("threads") == 1 ? " thread, " : " threads, ") << samples << " samples ("
              << share << " partial" << unsampled << ")" << gpu << ", " << store::RunStateName(m.state) << how << " -> " << db_path << '\n';
    // Worth a line when it is a real share of a run that is not tiny: ten
    // sampling periods or more (a /bin/true has a millisecond, all unsampled).
    const double freq = m.sampling->contains("freq_hz") && m.sampling->at("freq_hz").is_number()
                            ? m.sampling->at("freq_hz").get<double>()
                            : 1000.0;
    if (unsampled_share >= 10.0 && static_cast<double>(unsampled_ns) >= 10 * 1e9 / freq &&
        !m.diagnostics.count("accounted_unsampled_ns")) {
      out << kTool << ": note: run " << m.id << ": " << output::FormatValue(static_cast<double>(unsampled_ns), cct::Unit::kNanoseconds)
          << " of its threads' time fell after their last sample (threads shorter than the sampling period are not in "
             "the tree); --account-short-threads adds it to their start routines, a higher --freq samples them\n";
    }
  };
  // A build's hundreds of processes would bury the program's line: past a
  // few runs, only the program and the runs worth a look get one, and the
  // rest are counted in one.
  std::vector<const store::RunMeta*> counted;
  size_t notable_lines = 0;
  for (const store::RunMeta& m : fresh) {
    const bool notable = m.state == store::RunState::kCrashed || m.term_signal || (m.exit_code && *m.exit_code != 0);
    if (fresh.size() <= kRunLinesUpTo || m.pid == child || (notable && notable_lines < kNotableRunLines)) {
      notable_lines += notable && m.pid != child;
      line(m);
    } else {
      counted.push_back(&m);
    }
  }
  if (!counted.empty()) {
    std::map<std::string, size_t> by_name;
    std::map<store::RunState, size_t> by_state;
    int64_t samples = 0;
    size_t failed = 0;  // past the notable lines: exited non-zero or killed
    for (const store::RunMeta* m : counted) {
      ++by_name[m->name];
      ++by_state[m->state];
      failed += m->term_signal || (m->exit_code && *m->exit_code != 0);
      auto f = m->diagnostics.find("samples");
      if (f != m->diagnostics.end()) samples += f->second;
    }
    // Any run of the invocation selects all of it; the program's is the one
    // the user knows.
    store::RunId listing_id = counted.front()->id;
    for (const store::RunMeta& m : fresh)
      if (m.pid == child) listing_id = m.id;
    std::vector<std::pair<std::string, size_t>> names(by_name.begin(), by_name.end());
    std::stable_sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string listed;
    for (size_t i = 0; i < names.size() && i < kCountedNames; ++i)
      listed += (i ? ", '" : "'") + names[i].first + "' \u00d7" + std::to_string(names[i].second);
    if (names.size() > kCountedNames) listed += ", \u2026";
    std::string states;
    if (by_state.size() == 1) {
      states = std::string(counted.size() == 1 ? "" : "all ") + std::string(store::RunStateName(by_state.begin()->first));
    } else {
      for (const auto& [state, n] : by_state)
        states += (states.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(store::RunStateName(state));
    }
    if (failed) states += ", " + std::to_string(failed) + " failed";
    out << kTool << ": " << counted.size() << " more run" << (counted.size() == 1 ? "" : "s") << " (" << listed
        << "), " << samples << " samples, " << states << " -> " << db_path << " (cct-query runs " << listing_id
        << "/all lists the recording's runs)\n";
  }
  // Only a program a signal ended: one that ended by itself without a run
  // had its collector decline to write and say why (--gpu on could not
  // start, a full disk); a second line and an empty run would add nothing.
  if (child > 0 && !child_seen && WIFSIGNALED(status)) {
    store::RunMeta m;
    m.name = what.name;
    m.source = "cct-record";
    m.tags = what.tags;
    m.command = what.command;
    m.start_time_ns = what.start_time_ns;
    m.duration_ns = what.duration_ns;
    m.pid = child;
    m.extra["session"] = session;
    m.diagnostics["no_profile"] = 1;
    m.term_signal = WTERMSIG(status);
    m.state = store::RunState::kCrashed;
    const std::string how = "was killed by signal " + std::to_string(*m.term_signal);
    cct::Tree empty;
    if (auto st = db.CreateRun(m, &empty); !st.ok()) {
      out << kTool << ": the program " << how << " without a profile, and storing its run failed: " << st.message()
          << '\n';
      return;
    }
    reported.insert(m.id);
    out << kTool << ": run " << m.id << " '" << m.name << "': the program " << how
        << " before its collector wrote a profile; stored without one -> " << db_path << '\n';
  }
}

}  // namespace record
