// cct-record: runs a program with the collector preloaded and stores one run
// per process it starts (docs/cli.md). Exits with the program's status;
// 125 for its own errors, 126/127 when the program cannot be run.
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <regex>
#include <set>

#include "cctdb_config.h"
#include "collector/core/config.h"
#include "collector/gpu/gpu_probe.h"
#include "query/format.h"
#include "store/database.h"
#include "tools/cli.h"

namespace po = boost::program_options;
extern char** environ;

namespace {

constexpr const char* kTool = "cct-record";
constexpr int kExitOwnError = 125;
constexpr int kExitCannotExecute = 126;
constexpr int kExitNotFound = 127;

constexpr const char* kUsage = R"(usage: cct-record [OPTIONS] [--] PROGRAM [ARGS...]

Runs PROGRAM with the cctdb collector and stores one run per process (forked
and exec'd children included) in the database. Exits with the program's
status (128+N if signal N killed it); 125 for cct-record's own errors, 126
when the program cannot be executed, 127 when it is not found.

Options)";

volatile sig_atomic_t child_pid = 0;

// Signals sent to cct-record alone (kill, a supervisor) go on to the program,
// whose collector writes its run and dies of them; Ctrl-C from the terminal
// already reaches the whole process group, so it is not sent twice.
void Forward(int sig, siginfo_t* info, void*) {
  const pid_t pid = child_pid;
  if (pid > 0 && info && (info->si_code == SI_USER || info->si_code == SI_QUEUE)) kill(pid, sig);
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

// Splits argv into cct-record's options and the program: the program starts
// after "--" or at the first argument that is neither an option nor an
// option's value.
void SplitArgs(int argc, char** argv, std::vector<std::string>& ours, std::vector<std::string>& program) {
  static const std::set<std::string> kWithValue = {"-o", "--output", "--name", "--tag", "--clock", "--freq",
                                                   "--checkpoint", "--repeat", "--nvtx", "--nvtx-mode",
                                                   "--iteration", "--gpu", "--gpu-raw"};
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    ours.push_back(a);
    if (kWithValue.count(a) && i + 1 < argc) ours.push_back(argv[++i]);
  }
  for (; i < argc; ++i) program.emplace_back(argv[i]);
}

struct ChildResult {
  pid_t pid = 0;
  int status = 0;   // waitpid status
  int exec_errno = 0;
};

ChildResult RunProgram(const std::vector<std::string>& program, const std::vector<std::string>& env) {
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) cli::Fail(kTool, std::string("pipe: ") + std::strerror(errno), kExitOwnError);
  std::vector<char*> args;
  for (const auto& a : program) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) cli::Fail(kTool, std::string("fork: ") + std::strerror(errno), kExitOwnError);
  if (pid == 0) {
    close(err_pipe[0]);
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
  int e = 0;
  ssize_t r;
  do r = read(err_pipe[0], &e, sizeof e);
  while (r < 0 && errno == EINTR);
  if (r == sizeof e) result.exec_errno = e;
  close(err_pipe[0]);
  while (waitpid(pid, &result.status, 0) < 0) {
    if (errno != EINTR) {
      result.status = 0;
      break;
    }
  }
  child_pid = 0;
  return result;
}

// The recording's runs, fixed up where a process could not write its own
// end (killed with SIGKILL), and summarized on stderr.
void Summarize(const std::string& db_path, const std::string& session, pid_t child, int status,
               std::set<store::RunId>& reported) {
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  if (!db.ok()) {
    std::cerr << kTool << ": cannot read back the runs: " << db.status().message() << '\n';
    return;
  }
  auto runs = (*db)->ListRuns();
  if (!runs.ok()) {
    std::cerr << kTool << ": cannot read back the runs: " << runs.status().message() << '\n';
    return;
  }
  for (store::RunMeta m : *runs) {
    auto it = m.extra.find("session");
    if (it == m.extra.end() || !it->is_string() || it->get<std::string>() != session) continue;
    if (reported.count(m.id)) continue;
    reported.insert(m.id);
    bool changed = false;
    const bool exec_replaced = m.extra.contains("exec");
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
      if (auto st = (*db)->UpdateMeta(m); !st.ok())
        std::cerr << kTool << ": cannot update run " << m.id << ": " << st.message() << '\n';
    }
    const auto d = [&](const char* k) {
      auto f = m.diagnostics.find(k);
      return f == m.diagnostics.end() ? int64_t{0} : f->second;
    };
    const int64_t samples = d("samples"), partial = d("partial_samples");
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%", samples ? 100.0 * static_cast<double>(partial) / samples : 0.0);
    std::string how;
    if (m.term_signal) how = ", killed by signal " + std::to_string(*m.term_signal);
    else if (m.exit_code && *m.exit_code != 0) how = ", exit " + std::to_string(*m.exit_code);
    if (exec_replaced) how += ", replaced by exec";
    std::string gpu;
    if (m.diagnostics.count("gpu_launches"))
      gpu = ", " + std::to_string(d("gpu_launches")) + " GPU launches (" + std::to_string(d("gpu_dropped_records")) +
            " records dropped)";
    std::cerr << kTool << ": run " << m.id << " '" << m.name << "' " << query::FormatValue(static_cast<double>(m.duration_ns), cct::Unit::kNanoseconds) << ", "
              << d("threads") << (d("threads") == 1 ? " thread, " : " threads, ") << samples << " samples ("
              << share << " partial)" << gpu << ", " << store::RunStateName(m.state) << how << " -> " << db_path << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> ours, program;
  SplitArgs(argc, argv, ours, program);

  po::options_description visible(kUsage);
  visible.add_options()
      ("help,h", "show this help")
      ("version", "show the version")
      ("output,o", po::value<std::string>(), "database file (default: $CCT_DB, else ./cct.db)")
      ("name", po::value<std::string>(), "run name (default: the program's file name)")
      ("tag", po::value<std::vector<std::string>>(), "KEY=VALUE tag on every run (repeatable)")
      ("clock", po::value<std::string>()->default_value("cpu"), "cpu: thread CPU time (metric cputime); "
                                                              "wall: elapsed time (metric realtime)")
      ("freq", po::value<double>()->default_value(1000), "samples per second of each thread's clock")
      ("checkpoint", po::value<double>()->default_value(1), "seconds between checkpoint writes (0: only at exit)")
      ("repeat", po::value<int>()->default_value(1), "run the program N times, one run each")
      ("no-follow", "record only the first process, not its forked or exec'd children")
      ("nvtx", po::value<std::string>()->default_value("on"), "on: NVTX ranges in the tree (NVTX3 injection); off")
      ("nvtx-mode", po::value<std::string>()->default_value("interleaved"),
       "interleaved: a range sits at the CPU frame that pushed it; prefix: the thread's ranges first")
      ("iteration", po::value<std::string>(), "NVTX range name pattern (ECMAScript regex) whose instances "
                                              "are iterations (cct-query iterations, RUN@iter=K)")
      ("gpu", po::value<std::string>()->default_value("auto"),
       "auto: trace GPU work (CUPTI) when a driver and a GPU are present; on: required (exit 125 when "
       "tracing cannot start); off: never touch CUDA")
      ("gpu-pc-sampling", "also sample kernels' program counters with stall reasons (gins, gins:stl_*); "
                          "kernels run one at a time while sampling")
      ("gpu-raw", po::value<std::string>(), "also dump the raw GPU records each process received into DIR "
                                            "(replay: cct-import --from cupti-raw FILE)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(ours).options(visible).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    cli::Fail(kTool, std::string(e.what()) + " (see cct-record --help)", kExitOwnError);
  }
  if (vm.count("help")) {
    std::cout << visible << '\n';
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "cct-record " << CCTDB_VERSION << '\n';
    return 0;
  }
  if (program.empty()) cli::Fail(kTool, "no program given (usage: cct-record [OPTIONS] -- PROGRAM [ARGS...])", kExitOwnError);

  collector::CollectorConfig config;
  config.db_path = AbsolutePath(store::DefaultDatabasePath(vm.count("output") ? vm["output"].as<std::string>() : ""));
  const std::string clock = vm["clock"].as<std::string>();
  if (clock != "cpu" && clock != "wall") cli::Fail(kTool, "--clock must be cpu or wall, not '" + clock + "'", kExitOwnError);
  config.clock = clock == "wall" ? collector::SampleClock::kWall : collector::SampleClock::kCpu;
  config.freq_hz = vm["freq"].as<double>();
  if (!std::isfinite(config.freq_hz) || config.freq_hz < 1 || config.freq_hz > 100000)
    cli::Fail(kTool, "--freq must be between 1 and 100000 Hz", kExitOwnError);
  config.checkpoint_s = vm["checkpoint"].as<double>();
  if (!std::isfinite(config.checkpoint_s) || config.checkpoint_s < 0 || config.checkpoint_s > 86400)
    cli::Fail(kTool, "--checkpoint must be between 0 and 86400 seconds", kExitOwnError);
  const int repeat = vm["repeat"].as<int>();
  if (repeat < 1 || repeat > 100000) cli::Fail(kTool, "--repeat must be at least 1", kExitOwnError);
  if (vm.count("name")) config.name = vm["name"].as<std::string>();
  if (vm.count("tag")) {
    auto tags = cli::ParseTags(vm["tag"].as<std::vector<std::string>>());
    if (!tags.ok()) cli::Fail(kTool, tags.status(), kExitOwnError);
    config.tags = *tags;
  }
  config.follow = !vm.count("no-follow");
  const std::string nvtx = vm["nvtx"].as<std::string>();
  if (nvtx != "on" && nvtx != "off") cli::Fail(kTool, "--nvtx must be on or off, not '" + nvtx + "'", kExitOwnError);
  const std::string mode = vm["nvtx-mode"].as<std::string>();
  if (mode != "interleaved" && mode != "prefix")
    cli::Fail(kTool, "--nvtx-mode must be interleaved or prefix, not '" + mode + "'", kExitOwnError);
  config.nvtx_placement = mode == "prefix" ? collector::NvtxPlacement::kPrefix : collector::NvtxPlacement::kInterleaved;
  if (vm.count("iteration")) {
    config.iteration_regex = vm["iteration"].as<std::string>();
    try {
      std::regex check(config.iteration_regex, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      cli::Fail(kTool, "--iteration '" + config.iteration_regex + "' is not a valid regular expression", kExitOwnError);
    }
  }

  const std::string gpu = vm["gpu"].as<std::string>();
  if (gpu != "auto" && gpu != "on" && gpu != "off")
    cli::Fail(kTool, "--gpu must be auto, on or off, not '" + gpu + "'", kExitOwnError);
  config.gpu = gpu == "on" ? collector::GpuTracing::kOn : gpu == "off" ? collector::GpuTracing::kOff
                                                                       : collector::GpuTracing::kAuto;
  config.gpu_pc_sampling = vm.count("gpu-pc-sampling") > 0;
  if (config.gpu_pc_sampling && config.gpu == collector::GpuTracing::kOff)
    cli::Fail(kTool, "--gpu-pc-sampling needs GPU tracing (not --gpu off)", kExitOwnError);
  if (vm.count("gpu-raw")) {
    config.gpu_raw_dir = AbsolutePath(vm["gpu-raw"].as<std::string>());
    if (config.gpu == collector::GpuTracing::kOff) cli::Fail(kTool, "--gpu-raw needs GPU tracing (not --gpu off)", kExitOwnError);
    struct stat st {};
    if (stat(config.gpu_raw_dir.c_str(), &st) != 0 ? mkdir(config.gpu_raw_dir.c_str(), 0777) != 0 : !S_ISDIR(st.st_mode))
      cli::Fail(kTool, "--gpu-raw " + config.gpu_raw_dir + ": not a directory we can create", kExitOwnError);
  }
  // Another GPU adapter (tests, CCT_GPU_ADAPTER): it decides for itself
  // whether there is something to trace.
  if (const char* adapter = getenv("CCT_GPU_ADAPTER"); adapter && *adapter) config.gpu_adapter = AbsolutePath(adapter);
  const std::string lib = CollectorLibrary();
  if (lib.empty())
    cli::Fail(kTool, "cannot find libcct-collector.so next to cct-record (set CCT_COLLECTOR_LIB)", kExitOwnError);
  {
    auto db = store::Database::Open(config.db_path, store::Database::Mode::kWrite);
    if (!db.ok()) cli::Fail(kTool, db.status(), kExitOwnError);
  }
  if (config.gpu != collector::GpuTracing::kOff && config.gpu_adapter.empty()) {
    // One line here rather than one per process: is there a driver and a GPU?
    const cct::Status probe = collector::ProbeGpu(/*need_device=*/true);
    if (!probe.ok()) {
      if (config.gpu == collector::GpuTracing::kOn)
        cli::Fail(kTool, "GPU tracing cannot start: " + probe.message(), kExitOwnError);
      std::cerr << kTool << ": GPU tracing off: " << probe.message() << '\n';
      config.gpu = collector::GpuTracing::kOff;
    }
  }


  struct sigaction sa {};
  sa.sa_sigaction = Forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);

  std::set<store::RunId> reported;
  int exit_status = 0;
  for (int r = 0; r < repeat; ++r) {
    config.session = RandomSession();
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
    if (nvtx == "on") env.push_back("NVTX_INJECTION64_PATH=" + lib);
    // The driver loads the collector (already preloaded: the same instance)
    // inside the program's first cuInit and calls InitializeInjection.
    if (config.gpu != collector::GpuTracing::kOff) env.push_back("CUDA_INJECTION64_PATH=" + lib);
    for (const auto& [k, v] : collector::ConfigEnvironment(config)) env.push_back(k + "=" + v);

    const ChildResult res = RunProgram(program, env);
    if (res.exec_errno) {
      const bool not_found = res.exec_errno == ENOENT;
      cli::Fail(kTool, program[0] + ": " + (not_found ? "command not found" : std::strerror(res.exec_errno)),
                not_found ? kExitNotFound : kExitCannotExecute);
    }
    Summarize(config.db_path, config.session, res.pid, res.status, reported);
    if (WIFEXITED(res.status)) exit_status = WEXITSTATUS(res.status);
    else if (WIFSIGNALED(res.status)) exit_status = 128 + WTERMSIG(res.status);
    if (exit_status != 0) break;
  }
  return exit_status;
}
