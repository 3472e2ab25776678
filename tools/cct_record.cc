// cct-record: runs a program with the collector preloaded and stores one run
// per process it starts (docs/cli.md). Exits with the program's status;
// 125 for its own errors, 126/127 when the program cannot be run. Option
// parsing here; running and summarizing in src/record/.
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>

#include "cct/pattern.h"
#include "cct/text.h"
#include "collector/core/config.h"
#include "collector/cpu/shared_rows.h"
#include "collector/cpu/symbol_cache.h"
#include "collector/gpu/gpu_probe.h"
#include "record/output.h"
#include "record/record.h"
#include "record/spool.h"
#include "store/database.h"
#include "store/fault_guard.h"
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

}  // namespace

int main(int argc, char** argv) {
  cli::ExitOnOutOfMemory(kTool, kExitOwnError);
  po::options_description visible(kUsage);
  visible.add_options()
      ("help,h", "show this help")
      ("version", "show the version")
      ("output,o", po::value<std::string>(), "database file (default: $CCT_DB, else ./cct.db); DIR/ (a trailing "
                                             "slash, or an existing directory): DIR/HOST.db, one per node")
      ("name", po::value<std::string>(), "run name (default: the program's file name)")
      ("tag", po::value<std::vector<std::string>>(), "KEY=VALUE tag on every run (repeatable)")
      ("clock", po::value<std::string>()->default_value("cpu"), "cpu: thread CPU time (metric cputime); "
                                                              "wall: elapsed time (metric realtime)")
      ("freq", po::value<double>()->default_value(1000), "samples per second of each thread's clock")
      ("checkpoint", po::value<double>()->default_value(1), "seconds between checkpoint writes (0: only at exit)")
      ("repeat", po::value<int>()->default_value(1), "run the program N times, one run each")
      ("max-depth", po::value<std::string>()->default_value(std::to_string(collector::kDefaultMaxDepth)),
       "frames kept per sampled stack; a deeper stack keeps its outermost ones (under a <truncated stack> leaf)")
      ("no-follow", "record only the first process, not its forked or exec'd children")
      ("system-debug-info", "also read source lines and inlined frames of the distribution's own binaries "
                            "(/usr/lib, /usr/bin, ...) from their separate debug files; slower to symbolize")
      ("symbol-cache", po::value<std::string>(), "directory where the symbol tables of the distribution's "
                                                "binaries are kept across processes and runs, or off (default: "
                                                "$XDG_CACHE_HOME/cctdb/symbols, else ~/.cache/cctdb/symbols)")
      ("db-mode", po::value<std::string>(), "permissions of a database this creates, in octal (default 600: "
                                            "profiles hold command lines, paths and host names)")
      ("keep-args", "store the command line as given (by default passwords, tokens and URL credentials in "
                    "it are stored as ***)")
      ("account-short-threads", "add each thread's time after its last sample (threads shorter than a "
                                "sampling period have nothing else) to its start routine")
      ("nvtx", po::value<std::string>()->default_value("on"), "on: NVTX ranges in the tree (NVTX3 injection); off")
      ("nvtx-mode", po::value<std::string>()->default_value("interleaved"),
       "interleaved: a range sits at the CPU frame that pushed it; prefix: the thread's ranges first")
      ("nvtx-inherit", po::value<std::string>()->default_value("off"),
       "main: GPU work launched by a thread with no open NVTX range goes under the ranges open on the main "
       "thread at that moment (PyTorch's backward pass runs on its autograd thread); off")
      ("iteration", po::value<std::string>(), "NVTX range name pattern (RE2 regular expression) whose instances "
                                              "are iterations (cct-query iterations, RUN@iter=K)")
      ("trace", "also keep when things happened: each sample, NVTX range and GPU activity with its time and "
                "tree node (cct-query timeline, export --to perfetto, RUN@t=S..S)")
      ("trace-limit", po::value<std::string>(), "with --trace: at most SIZE of events in each process's memory "
                                                "(e.g. 64M, 1G; default 256M); events past it are counted, not kept")
      ("python", po::value<std::string>()->default_value("auto"),
       "auto: when the program is CPython 3.10 to 3.13, its Python functions, files and lines take the "
       "place of the interpreter's eval-loop frames; off: native frames only")
      ("gpu", po::value<std::string>()->default_value("auto"),
       "auto: trace GPU work (CUPTI) when a driver and a GPU are present; on: required (exit 125 when "
       "tracing cannot start); off: never touch CUDA")
      ("gpu-pc-sampling", "also sample kernels' program counters with stall reasons (gins, gins:stl_*); "
                          "kernels run one at a time while sampling")
      ("gpu-pc-period", po::value<int>(),
       "with --gpu-pc-sampling: one sample every 2^N GPU cycles per SM, N from 5 to 31 (default 15; "
       "smaller N: more samples, more slowdown)")
      ("gpu-raw", po::value<std::string>(), "also dump the raw GPU records each process received into DIR "
                                            "(replay: cct-import --from cupti-raw FILE)");
  cli::AddTerminalOptions(visible, /*text=*/false);
  // Which options take a value, as the command line spells them.
  std::set<std::string> with_value;
  for (const auto& option : visible.options()) {
    if (option->semantic()->max_tokens() == 0) continue;
    with_value.insert("--" + option->long_name());
    const std::string shown = option->canonical_display_name(po::command_line_style::allow_dash_for_short);
    if (shown.size() == 2 && shown[0] == '-') with_value.insert(shown);
  }
  std::vector<std::string> ours, program;
  record::SplitArgs(argc, argv, with_value, ours, program);

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
    cli::PrintVersion(kTool);
    return 0;
  }
  // Nothing it prints is coloured; a bad --color is still an error.
  cli::ReadTerminalOptions(kTool, vm, kExitOwnError);
  if (program.empty()) cli::Fail(kTool, "no program given (usage: cct-record [OPTIONS] -- PROGRAM [ARGS...])", kExitOwnError);

  collector::CollectorConfig config;
  const std::string clock = vm["clock"].as<std::string>();
  if (clock != "cpu" && clock != "wall") cli::Fail(kTool, "--clock must be cpu or wall, not '" + clock + "'", kExitOwnError);
  config.clock = clock == "wall" ? collector::SampleClock::kWall : collector::SampleClock::kCpu;
  // The collector samples the CPU clock with a perf event per thread.
  std::optional<record::SamplingHooks> hooks;
  if (config.clock == collector::SampleClock::kCpu) hooks.emplace();
  config.freq_hz = vm["freq"].as<double>();
  if (!std::isfinite(config.freq_hz) || config.freq_hz < 1 || config.freq_hz > 100000)
    cli::Fail(kTool, "--freq must be between 1 and 100000 Hz", kExitOwnError);
  config.symbol_cache_dir = collector::DefaultSymbolCacheDir();
  if (vm.count("symbol-cache")) {
    const std::string s = vm["symbol-cache"].as<std::string>();
    if (s == "off") config.symbol_cache_dir.clear();
    else if (s.empty()) cli::Fail(kTool, "--symbol-cache needs a directory or off", kExitOwnError);
    else config.symbol_cache_dir = record::AbsolutePath(s);
  }
  config.checkpoint_s = vm["checkpoint"].as<double>();
  if (!std::isfinite(config.checkpoint_s) || config.checkpoint_s < 0 || config.checkpoint_s > 86400)
    cli::Fail(kTool, "--checkpoint must be between 0 and 86400 seconds", kExitOwnError);
  {
    // Parsed here rather than as an int so that "abc", "12x" and overflow
    // all get the same one-line message.
    const std::string s = vm["max-depth"].as<std::string>();
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || v < collector::kMinMaxDepth || v > collector::kMaxMaxDepth)
      cli::Fail(kTool, "--max-depth must be a frame count between " + std::to_string(collector::kMinMaxDepth) + " and " +
                           std::to_string(collector::kMaxMaxDepth) + ", not '" + s + "'",
                kExitOwnError);
    config.max_depth = static_cast<int>(v);
  }
  const int repeat = vm["repeat"].as<int>();
  if (repeat < 1 || repeat > 100000) cli::Fail(kTool, "--repeat must be at least 1", kExitOwnError);
  if (vm.count("name")) config.name = vm["name"].as<std::string>();
  if (vm.count("tag")) {
    auto tags = cli::ParseTags(vm["tag"].as<std::vector<std::string>>());
    if (!tags.ok()) cli::Fail(kTool, tags.status(), kExitOwnError);
    config.tags = *tags;
  }
  config.follow = !vm.count("no-follow");
  config.account_short_threads = vm.count("account-short-threads") > 0;
  config.system_debug_info = vm.count("system-debug-info") > 0;
  config.keep_args = vm.count("keep-args") > 0;
  const std::string nvtx = vm["nvtx"].as<std::string>();
  if (nvtx != "on" && nvtx != "off") cli::Fail(kTool, "--nvtx must be on or off, not '" + nvtx + "'", kExitOwnError);
  const std::string mode = vm["nvtx-mode"].as<std::string>();
  if (mode != "interleaved" && mode != "prefix")
    cli::Fail(kTool, "--nvtx-mode must be interleaved or prefix, not '" + mode + "'", kExitOwnError);
  config.nvtx_placement = mode == "prefix" ? collector::NvtxPlacement::kPrefix : collector::NvtxPlacement::kInterleaved;
  const std::string inherit = vm["nvtx-inherit"].as<std::string>();
  if (inherit != "main" && inherit != "off")
    cli::Fail(kTool, "--nvtx-inherit must be main or off, not '" + inherit + "'", kExitOwnError);
  config.nvtx_inherit_main = inherit == "main";
  const std::string python = vm["python"].as<std::string>();
  if (python != "auto" && python != "off")
    cli::Fail(kTool, "--python must be auto or off, not '" + python + "'", kExitOwnError);
  config.python = python == "off" ? collector::PythonMode::kOff : collector::PythonMode::kAuto;
  if (vm.count("iteration")) {
    config.iteration_regex = vm["iteration"].as<std::string>();
    if (auto pattern = cct::Pattern::Compile(config.iteration_regex, "--iteration pattern"); !pattern.ok())
      cli::Fail(kTool, pattern.status().message(), kExitOwnError);
  }

  config.trace = vm.count("trace") > 0;
  if (vm.count("trace-limit")) {
    const std::string s = vm["trace-limit"].as<std::string>();
    if (!config.trace) cli::Fail(kTool, "--trace-limit needs --trace", kExitOwnError);
    const std::optional<uint64_t> limit = cct::ParseByteSize(s);
    if (!limit || *limit == 0)
      cli::Fail(kTool, "--trace-limit must be a size such as 64M or 1G, not '" + s + "'", kExitOwnError);
    config.trace_limit_bytes = *limit;
  }

  const std::string gpu = vm["gpu"].as<std::string>();
  if (gpu != "auto" && gpu != "on" && gpu != "off")
    cli::Fail(kTool, "--gpu must be auto, on or off, not '" + gpu + "'", kExitOwnError);
  config.gpu = gpu == "on" ? collector::GpuTracing::kOn : gpu == "off" ? collector::GpuTracing::kOff
                                                                       : collector::GpuTracing::kAuto;
  config.gpu_pc_sampling = vm.count("gpu-pc-sampling") > 0;
  if (config.gpu_pc_sampling && config.gpu == collector::GpuTracing::kOff)
    cli::Fail(kTool, "--gpu-pc-sampling needs GPU tracing (not --gpu off)", kExitOwnError);
  if (vm.count("gpu-pc-period")) {
    const int n = vm["gpu-pc-period"].as<int>();
    if (!config.gpu_pc_sampling) cli::Fail(kTool, "--gpu-pc-period needs --gpu-pc-sampling", kExitOwnError);
    if (n < static_cast<int>(collector::CollectorConfig::kMinPcPeriod) ||
        n > static_cast<int>(collector::CollectorConfig::kMaxPcPeriod))
      cli::Fail(kTool, "--gpu-pc-period must be 5 to 31 (2^N cycles), not " + std::to_string(n), kExitOwnError);
    config.gpu_pc_period = static_cast<uint32_t>(n);
  }
  if (vm.count("gpu-raw")) {
    config.gpu_raw_dir = record::AbsolutePath(vm["gpu-raw"].as<std::string>());
    if (config.gpu == collector::GpuTracing::kOff) cli::Fail(kTool, "--gpu-raw needs GPU tracing (not --gpu off)", kExitOwnError);
    struct stat st {};
    if (stat(config.gpu_raw_dir.c_str(), &st) != 0 ? mkdir(config.gpu_raw_dir.c_str(), 0777) != 0 : !S_ISDIR(st.st_mode))
      cli::Fail(kTool, "--gpu-raw " + config.gpu_raw_dir + ": not a directory we can create", kExitOwnError);
  }
  // Another GPU adapter (tests, CCT_GPU_ADAPTER): it decides for itself
  // whether there is something to trace.
  if (const char* adapter = getenv("CCT_GPU_ADAPTER"); adapter && *adapter) config.gpu_adapter = record::AbsolutePath(adapter);
  const std::string lib = record::CollectorLibrary();
  if (lib.empty())
    cli::Fail(kTool, "cannot find libcct-collector.so next to cct-record (set CCT_COLLECTOR_LIB)", kExitOwnError);
  unsigned db_mode = store::kDatabaseFileMode;
  if (vm.count("db-mode")) {
    auto mode = cli::ParseFileMode(vm["db-mode"].as<std::string>());
    if (!mode.ok()) cli::Fail(kTool, mode.status(), kExitOwnError);
    db_mode = *mode;
  }
  // Where the runs go (record/output.h), decided once the options are
  // known good: -o DIR/ makes DIR.
  std::string launch_entry;  // CCT_RECORD_LAUNCH=ID when the launcher names no job
  const std::optional<store::LauncherRank> launcher = record::LaunchIdentity(launch_entry);
  // A trailing slash says "directory": AbsolutePath keeps it.
  const std::string output =
      record::AbsolutePath(store::DefaultDatabasePath(vm.count("output") ? vm["output"].as<std::string>() : ""));
  auto plan = record::PlanOutput(output, launcher, store::HostName(), [](const std::string& dir) {
    return record::NetworkFsOf(dir, [](const char* n) -> const char* { return getenv(n); });
  });
  if (!plan.ok()) cli::Fail(kTool, plan.status(), kExitOwnError);
  config.db_path = plan->db_path;
  // A damaged page LMDB asserts on, or faults on, while storing: one line
  // and cct-record's own status, not an abort. A program still running gets
  // its PDEATHSIG; its run files stay in the spool for the next cct-record.
  store::FaultGuard guard(kTool, config.db_path, kExitOwnError);
  auto db = store::Database::Open(config.db_path, plan->alone ? store::Database::Mode::kWriteAlone : store::Database::Mode::kWrite,
                                  db_mode);
  if (!db.ok()) cli::Fail(kTool, db.status(), kExitOwnError);
  // One line per job, not one per rank.
  if (!plan->notice.empty() && (!launcher || launcher->rank == 0)) std::cerr << kTool << ": note: " << plan->notice << '\n';
  // Runs of processes that outlived an earlier recording into this file.
  if (auto st = record::GatherAbandoned(**db, config.db_path, std::cerr, plan->spool_root); !st.ok())
    std::cerr << kTool << ": cannot gather earlier runs: " << st.message() << '\n';
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

  record::InstallSignalForwarding();
  if (hooks) hooks->Wait();  // its wait before the program's time, not in it

  // The rows earlier recordings computed (a cache beside the symbol tables).
  const std::string rows_cache =
      config.symbol_cache_dir.empty() ? "" : collector::SharedRowsCachePath(config.symbol_cache_dir);
  std::set<store::RunId> reported;
  int exit_status = 0;
  for (int r = 0; r < repeat; ++r) {
    config.session = record::RandomSession();
    // This recording's runs get ids from here on: its summary reads only those.
    const auto first_id = (*db)->NextRunId();
    auto spool = record::Spool::Create(config.db_path, config.session, plan->spool_root);
    if (!spool.ok()) cli::Fail(kTool, spool.status(), kExitOwnError);
    config.spool_dir = spool->dir();
    config.inbox = spool->inbox() != nullptr;
    config.rows_path = spool->rows_path();
    if (!rows_cache.empty()) (void)spool->LoadRows(rows_cache);
    std::vector<std::string> env = record::ChildEnvironment(environ, lib, nvtx == "on", config);
    if (!launch_entry.empty()) env.push_back(launch_entry);

    // The processes write run files; they reach the database here, every
    // checkpoint interval while the program runs and once after it.
    bool gather_failed = false;
    auto gather = [&]() -> record::Spool::Pass {
      auto pass = spool->Gather(**db, std::cerr);
      if (!pass.ok()) {
        if (!gather_failed) std::cerr << kTool << ": cannot store the runs: " << pass.status().message() << '\n';
        gather_failed = true;
        return {};
      }
      return *pass;
    };
    auto ran = record::RunProgram(program, env, [&] { gather(); }, config.checkpoint_s, spool->inbox());
    if (!ran.ok()) cli::Fail(kTool, ran.status().message(), kExitOwnError);
    const record::ChildResult& res = *ran;
    // Processes that end from now on write files (left for the next
    // recording when they outlive this one).
    spool->CloseInbox(2000, res.descendants_left);
    const record::Spool::Pass last = gather();
    if (!rows_cache.empty()) (void)spool->SaveRows(rows_cache);
    if (!spool->RemoveIfEmpty() && last.left > 0) {
      std::cerr << kTool << ": note: " << last.left << (last.left == 1 ? " recorded process is" : " recorded processes are")
                << " still running after the program; the next cct-record into " << config.db_path
                << " stores what " << (last.left == 1 ? "it writes" : "they write") << " (their run files are in "
                << spool->dir() << ")\n";
    }
    if (res.exec_errno) {
      const bool not_found = res.exec_errno == ENOENT;
      cli::Fail(kTool, program[0] + ": " + (not_found ? "command not found" : std::strerror(res.exec_errno)),
                not_found ? kExitNotFound : kExitCannotExecute);
    }
    record::Summarize(**db, config.session, res.pid, res.status, record::DescribeChild(config, program, res, launcher),
                      reported, std::cerr, first_id.ok() ? *first_id : 1);
    if (WIFEXITED(res.status)) exit_status = WEXITSTATUS(res.status);
    else if (WIFSIGNALED(res.status)) exit_status = 128 + WTERMSIG(res.status);
    if (exit_status != 0) break;
  }
  return exit_status;
}
