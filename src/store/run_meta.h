// RunMeta: what is known about one run besides its tree.
//
// Stored as a JSON object under the run's id (docs/format.md lists every
// field). Unknown fields written by newer collectors are kept in `extra` and
// written back unchanged. Plain value type.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cct/status.h"

namespace store {

using RunId = uint32_t;

// One JSON value a RunMeta carries (`sampling`, `extra`), held by pointer
// so that this header needs only nlohmann/json_fwd.hpp: the full header
// cost seconds of compile time in each of the ~70 files that include this
// one, and few of them touch these fields. Reach the value with * and ->;
// code that does includes <nlohmann/json.hpp>. Starts as an empty object;
// copies are deep. Not thread-safe (a plain value).
class JsonField {
 public:
  JsonField();
  JsonField(const JsonField& other);
  JsonField(JsonField&& other) noexcept;
  JsonField& operator=(const JsonField& other);
  JsonField& operator=(JsonField&& other) noexcept;
  ~JsonField();

  nlohmann::json& operator*();
  const nlohmann::json& operator*() const;
  nlohmann::json* operator->() { return &**this; }
  const nlohmann::json* operator->() const { return &**this; }
  // (*field)[key], the common use: the member, created null when missing.
  nlohmann::json& operator[](const std::string& key);
  const nlohmann::json& operator[](const std::string& key) const;  // the key must be there

 private:
  // Null until written (reads see a shared empty object): a RunMeta that
  // never touches the field allocates nothing for it.
  std::unique_ptr<nlohmann::json> value_;
};

enum class RunState { kRecording, kComplete, kCrashed };

// A module (the executable or a shared library) mapped into the process.
struct ModuleInfo {
  std::string path;
  std::string build_id;  // NT_GNU_BUILD_ID in lowercase hex; "" when it has none
  bool operator==(const ModuleInfo&) const = default;
};

// The rank a parallel launcher (MPI, Slurm, Flux, PALS, torchrun) gave the
// process, and the job (one launch) it belongs to, from its environment
// variables (collector/core/run_info.h LauncherRankFrom lists them). -1 and
// "": not set; runs stored before these fields existed read as unset.
struct LauncherRank {
  int64_t rank = -1;
  int64_t size = -1;
  int64_t local_rank = -1;
  std::string source;      // the variable the rank came from: "PMIX_RANK", "SLURM_PROCID", ...
  std::string job_id;      // the launch's job: "1234" (Slurm), a PMIx namespace, ...; "" unknown
  std::string step;        // the Slurm step inside job_id ("0"); "" when the launcher has none
  std::string job_source;  // the variable job_id came from ("SLURM_JOB_ID", ...), or "launcher process"
  std::string node_name;   // the node as the launcher names it (SLURMD_NODENAME), else the host name
  int64_t node_index = -1; // the node's index in the job (SLURM_NODEID, PALS_NODEID)
  bool operator==(const LauncherRank&) const = default;
  // What `job:ID` matches: job_id, with ".STEP" when there is a step; "" without a job.
  std::string JobKey() const;
};
// The longest job id, step, node name or source a run record keeps (longer
// ones are cut, see CutToLimits) and a job:ID selector accepts.
inline constexpr size_t kMaxJobIdBytes = 1024;
std::string_view RunStateName(RunState s);  // "recording", "complete", "crashed"

struct RunMeta {
  RunId id = 0;
  std::string name;
  RunState state = RunState::kRecording;
  std::string source;  // "cct-record", "import:folded", ...
  int64_t start_time_ns = 0;  // Unix epoch
  int64_t duration_ns = 0;
  std::optional<int> exit_code;    // set when the program exited
  std::optional<int> term_signal;  // set when a signal killed it
  std::vector<std::string> command;
  std::string cwd, host, cpu_model, gpu_model, driver_version, cuda_version;
  std::string collector_version, git_commit;
  std::map<std::string, std::string> tags;
  std::map<std::string, std::string> env;  // allow-listed variables only
  JsonField sampling;                          // an object: clock, freq_hz, checkpoint_s, ...
  std::map<std::string, int64_t> diagnostics;  // counted anomalies, by name
  int64_t pid = 0;
  uint64_t pid_start_ticks = 0;  // /proc/PID/stat starttime, to tell a reused pid
  RunId parent_run = 0;          // the run of the process that forked this one (0: none)
  // The run of the invocation's root process (the one cct-record started).
  // 0: this run is a root, or it was written before format version 2 (then
  // the parent_run chain leads to the root; see store/selector.h).
  RunId root_run = 0;
  std::string user;                      // who ran it
  std::string executable;                // /proc/self/exe, resolved
  std::string executable_build_id;       // its NT_GNU_BUILD_ID, lowercase hex
  std::vector<std::string> compiler;     // the executable's .comment strings ("GCC: (Debian 12.2.0-14) 12.2.0")
  std::string kernel, os, glibc;         // uname, /etc/os-release PRETTY_NAME, gnu_get_libc_version()
  std::vector<ModuleInfo> modules;       // every module seen mapped, the executable first
  int64_t process_cpu_ns = 0;            // user + system CPU time of the whole process at the last write
  std::optional<LauncherRank> launcher;  // rank variables of a parallel launcher
  std::string iteration_regex;
  uint64_t node_count = 0;
  uint64_t checkpoints = 0;
  int64_t updated_ns = 0;  // last checkpoint
  JsonField extra;  // an object: the other fields (session, run_key, gpu, ncu...) and those of newer versions

  nlohmann::json ToJson() const;
  static cct::Result<RunMeta> FromJson(const nlohmann::json& j);
};

// What a run record stores at most (docs/format.md); Database writes every
// record through CutToLimits, so a hostile or damaged input (a 10 MB run
// name, a million arguments) costs bounded space and every report line
// stays readable. Longer values are cut in the middle with a marker
// (cct::CutToBytes: "head…[N bytes cut]…tail").
inline constexpr size_t kMaxRunNameBytes = 1024;    // the run's name
inline constexpr size_t kMaxTagBytes = 4096;        // each tag's key and value
inline constexpr size_t kMaxValueBytes = 64 * 1024; // each other string: argument, path, variable, ...
inline constexpr size_t kMaxArguments = 4096;       // command-line arguments kept (then "…[N more arguments]")
// Cuts `m`'s fields to the limits above; returns how many were cut.
size_t CutToLimits(RunMeta& m);

// The state a reader should report: a run still marked `recording` whose
// process is gone from this host is `crashed`.
RunState EffectiveState(const RunMeta& meta);

// The key of the run file the run was gathered from (extra.run_key; the
// collector's unique key per run), "" when it has none.
std::string RunKeyOf(const RunMeta& meta);

// This machine's host name, and the start time of a process (0 if unknown).
std::string HostName();
uint64_t ProcessStartTicks(int64_t pid);
// What /proc/PID/stat says of a process: its parent, command name (comm)
// and start time; nullopt when it is gone or the file is malformed.
struct ProcessStat {
  int64_t ppid = 0;
  std::string name;
  uint64_t start_ticks = 0;
};
std::optional<ProcessStat> ReadProcessStat(int64_t pid);

}  // namespace store
