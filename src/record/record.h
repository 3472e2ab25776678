// What cct-record does beyond parsing its options: finding the collector,
// splitting its command line from the program's, the program's environment,
// running the program (fork/exec with signal forwarding) and, after it,
// fixing up and summarizing the runs it recorded. tools/cct_record.cc is
// option parsing over these.
//
// Thread-safety: cct-record is single-threaded but for SamplingHooks'
// helper thread (one system call); RunProgram and InstallSignalForwarding
// share one process-global child pid (the forwarding handler reads it), so
// one program runs at a time.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cct/status.h"
#include "collector/core/config.h"
#include "record/inbox.h"
#include "store/run_meta.h"

namespace store {
class Database;
}

namespace record {

// Keeps the kernel's hooks for per-task perf events switched on while it
// lives, by holding one such event (the task clock of the calling thread,
// disabled): the collector samples each thread with one. Linux switches
// the hooks on at the first such event in the system and off a second
// after the last one closes, and switching them on waits for an RCU grace
// period: the first recorded process after an idle second took 15 ms in
// perf_event_open on the CI VM (docs/performance.md), inside the program's
// time. The event is opened on a helper thread, so the wait overlaps
// cct-record's own start; Wait (before the program starts) lets it end
// there. Nothing happens where perf events are not allowed.
class SamplingHooks {
 public:
  SamplingHooks();
  ~SamplingHooks();
  void Wait() {
    if (opener_.joinable()) opener_.join();
  }
  SamplingHooks(const SamplingHooks&) = delete;
  SamplingHooks& operator=(const SamplingHooks&) = delete;

 private:
  std::thread opener_;
  std::atomic<int> fd_{-1};
};

// The collector library to preload: $CCT_COLLECTOR_LIB, else beside this
// executable in the build tree or an install prefix; "" when not found.
std::string CollectorLibrary();

// `path` made absolute against the working directory (unchanged if it
// cannot be read).
std::string AbsolutePath(const std::string& path);

// A recording's session id: 16 random hex digits and our pid.
std::string RandomSession();

// Splits argv into cct-record's options and the program: the program starts
// after "--" or at the first argument that is neither an option nor an
// option's value. `with_value` names the options that take a value as
// they are spelled ("-o", "--output"): the tool derives it from its option
// table (a list kept by hand here went stale).
void SplitArgs(int argc, char** argv, const std::set<std::string>& with_value, std::vector<std::string>& ours,
               std::vector<std::string>& program);

// The program's environment: `environ` without cct-record's own variables
// and injection paths, the collector `lib` preloaded first, NVTX (`nvtx`)
// and CUDA injection pointing at it, and `config` in its variables.
std::vector<std::string> ChildEnvironment(char** environ, const std::string& lib, bool nvtx,
                                          const collector::CollectorConfig& config);

// Signals sent to cct-record alone (kill, a supervisor) go on to the program
// RunProgram is running, whose collector writes its run and dies of them;
// Ctrl-C from the terminal already reaches the whole process group, so it is
// not sent twice. For SIGINT, SIGTERM, SIGHUP and SIGQUIT.
void InstallSignalForwarding();

struct ChildResult {
  pid_t pid = 0;
  int status = 0;  // waitpid status
  int exec_errno = 0;  // nonzero: the program could not be executed
  int64_t start_time_ns = 0;  // Unix epoch, at the fork
  int64_t duration_ns = 0;    // fork to wait
  // After the program: some of its descendants still run (a daemon, a
  // process a shell left in the background), or cct-record could not be
  // their subreaper and cannot tell. false: every process the program
  // started has ended and been reaped, so none can still send a run.
  bool descendants_left = true;
};

// Runs `program` (argv, looked up in PATH) with environment `env` and waits
// for it. The child gets SIGTERM if cct-record dies. An error status when
// the pipe or the fork fails.
// While it runs, the calling process is a child subreaper
// (PR_SET_CHILD_SUBREAPER): the program's orphaned descendants are
// re-parented to it rather than to init, and reaped here as they end (a
// SIGCHLD handler wakes the wait), so that when the program ends,
// RunProgram knows whether any of them still run (descendants_left); those
// stay the caller's children. The caller must have no children of its own
// (RunProgram reaps every child that ends while it waits). The program
// inherits SIGCHLD's disposition as the caller had it. Not thread-safe
// (process-wide dispositions).
// While it waits, `tick` runs every `tick_s` seconds (cct-record gathers
// the spool there; 0: never) and `inbox` is served (record/inbox.h), woken
// at once when the child exits through a pidfd (Linux 5.3+; without one it
// looks every 50 ms).
cct::Result<ChildResult> RunProgram(const std::vector<std::string>& program, const std::vector<std::string>& env,
                                    const std::function<void()>& tick = nullptr, double tick_s = 0,
                                    Inbox* inbox = nullptr);

// What cct-record knows of the program it started, for a run it stores
// itself when the program left none.
struct ChildRun {
  std::string name;
  std::map<std::string, std::string> tags;
  std::vector<std::string> command;  // secrets already masked (unless --keep-args)
  int64_t start_time_ns = 0;         // Unix epoch, at the fork
  int64_t duration_ns = 0;           // fork to wait
};
// The program as its collector would have named and described it: `config`'s
// name (else the program's base name) and tags, its command line masked
// unless keep_args, and the times RunProgram measured.
// With a launcher rank R, the name ends in ".rR" as the collector's does.
ChildRun DescribeChild(const collector::CollectorConfig& config, const std::vector<std::string>& program,
                       const ChildResult& result,
                       const std::optional<store::LauncherRank>& launcher = std::nullopt);

// cct-record's place in a parallel launch: collector::LauncherRankFrom over
// its environment, nullopt outside one. When the launcher names no job
// (MPICH Hydra), the job id is the launcher process's
// (collector::LaunchProcessId) and `launch_entry` receives
// "CCT_RECORD_LAUNCH=ID" for the program's environment, so its collector
// records the same; else "".
std::optional<store::LauncherRank> LaunchIdentity(std::string& launch_entry);

// The recording's runs (those of `session` not yet in `reported`), fixed up
// where a process could not write its own end (killed with SIGKILL; `child`
// and its waitpid `status` give the direct child's), one summary line each
// on `out`, prefixed "cct-record: ". Adds the runs to `reported`. When a
// signal ended the direct child before its collector wrote anything, stores
// a run from `what`, `crashed` with the signal and no profile (diagnostic
// no_profile), so every program killed is in the database. (One that ended
// by itself without a run had its collector decline and say why.)
// `first`: the database's NextRunId before the recording began; every run
// of the session has an id at or above it, so a database's older runs are
// not read.
void Summarize(const std::string& db_path, const std::string& session, pid_t child, int status, const ChildRun& what,
               std::set<store::RunId>& reported, std::ostream& out, store::RunId first = 1);
// The same on a database cct-record holds open (one opened without LMDB's
// lock file must not be opened twice).
void Summarize(store::Database& db, const std::string& session, pid_t child, int status, const ChildRun& what,
               std::set<store::RunId>& reported, std::ostream& out, store::RunId first = 1);

}  // namespace record
