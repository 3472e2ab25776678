// RunInfo: the facts about a process that go into its run's metadata —
// allow-listed environment (with secrets left out), CPU model, git commit of
// a working directory, command line, user, executable with its build id and
// compiler, loaded modules with theirs, kernel/OS/glibc, process CPU time,
// launcher rank. Functions over files, strings and the process's own
// mappings. Thread-safe (no shared state). Not signal-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/run_meta.h"

namespace collector {

// Whether an environment variable's name is recorded (docs/cli.md lists the
// allow-list): CUDA_*, NVIDIA_*, OMP_*, NCCL_*, PYTORCH_*, TORCH_*, MKL_*,
// OPENBLAS_*, ... and PATH, LD_LIBRARY_PATH, ...
bool EnvNameAllowed(std::string_view name);
// Whether a name or value looks like a credential: a name that says so
// (TOKEN, SECRET, PASSWORD, *_KEY, ...), a known token format as a whole
// item of the value (ghp_..., AKIA..., sk-..., hf_..., PEM keys), a URL with
// a password, or a value without '/' that is a long random-looking string.
// Hashes in directory names (Spack, Nix) are not secrets. Such variables are
// never kept.
bool LooksSecret(std::string_view name, std::string_view value);
// Whether a variable or option name says it holds a credential: TOKEN,
// SECRET, PASSWORD, AUTH (not AUTHOR), COOKIE, *_KEY, ... ('-' read as '_').
bool SecretName(std::string_view name);

// What a masked credential is replaced with in a stored command line.
inline constexpr std::string_view kMasked = "***";
// Masks the credentials in a command line (argv[0] is kept): the value of
// NAME=VALUE / --NAME=VALUE and the argument after --NAME when SecretName;
// the password of a scheme://user:password@host URL; known token formats
// (ghp_..., AKIA..., sk-..., hf_...) anywhere. Unlike LooksSecret, a long
// random-looking value is kept: commit hashes and checksums on command
// lines are what makes a run reproducible. Returns how many were masked.
size_t MaskSecretArguments(std::vector<std::string>& argv);
// A run's name: `configured` (--name), else the command's base name; with a
// launcher rank R, followed by ".rR" (app.r0, app.r1, ...).
std::string RunName(const std::string& configured, const std::vector<std::string>& command,
                    const std::optional<store::LauncherRank>& launcher = std::nullopt);
// The allow-listed, non-secret subset of `environ`-style "NAME=VALUE" entries.
std::map<std::string, std::string> RecordedEnvironment(const char* const* envp);

// "model name" from /proc/cpuinfo, with the logical CPU count: "… (16 CPUs)".
std::string CpuModel();
// The commit checked out in the git working tree containing `dir` (reads .git
// files; runs no program), or "" outside a repository. A tree with uncommitted
// changes is not detected (that would need the index); documented.
std::string GitCommit(const std::string& dir);

// This process's command line, from /proc/self/cmdline.
std::vector<std::string> ProcessCommandLine();
std::string CurrentDirectory();

// The user running the process: the real uid's name (getpwuid_r), else
// $USER, else "uid N".
std::string UserName();
// /proc/self/exe, resolved ("" when unreadable).
std::string ExecutablePath();

// A build id's bytes as lowercase hex.
std::string BuildIdHex(const std::string& bytes);
// The NT_GNU_BUILD_ID in a PT_NOTE area of `size` bytes, lowercase hex; ""
// when absent or malformed (cpu/modules.h BuildIdInNotes, hex).
std::string BuildIdFromNotes(const unsigned char* notes, size_t size);
// The modules mapped now for the run's metadata (cpu/modules.h
// LoadedModules: the executable first, build ids from their notes in
// memory, no vDSO), as path and hex build id. Normal context only (takes the
// loader's lock).
std::vector<store::ModuleInfo> RunModules();
// Adds to `known` the modules in `now` it does not hold (by path), keeping
// the order first seen: a library dlopen'ed and closed between writes stays
// listed.
void MergeModules(std::vector<store::ModuleInfo>& known, const std::vector<store::ModuleInfo>& now);

// The distinct NUL-terminated strings of the ELF file's .comment section (the
// compilers and linkers that built it), in file order; empty when the file is
// not a 64-bit little-endian ELF file, has no such section, or is malformed
// (every offset and size is checked against the file).
std::vector<std::string> ElfComment(const std::string& path);

// The facts about the machine and the user that cost a process most to
// learn (the user's name through NSS, /proc/cpuinfo, os-release): measured
// by the first process of a recording and handed down to the processes it
// starts (CCT_RECORD_MACHINE), which take them when they run as the same
// uid on the same host.
struct MachineFacts {
  std::string user, cpu_model, os;
};
// "uid<TAB>host<TAB>user<TAB>cpu model<TAB>os"; "" when a field holds a tab
// or a newline (the process then measures for itself).
std::string EncodeMachineFacts(uint32_t uid, std::string_view host, const MachineFacts& facts);
// The facts `text` holds, when it is well-formed and names `uid` and `host`.
std::optional<MachineFacts> DecodeMachineFacts(std::string_view text, uint32_t uid, std::string_view host);

// uname: "Linux 6.1.0-18-amd64 #1 SMP ... x86_64".
std::string KernelVersion();
// PRETTY_NAME of an os-release text (quotes removed), else NAME VERSION_ID.
std::string OsPrettyName(std::string_view os_release);
// OsPrettyName of /etc/os-release (else /usr/lib/os-release).
std::string OperatingSystem();
// gnu_get_libc_version(): "2.36".
std::string GlibcVersion();

// User + system CPU time of the whole process so far (getrusage
// RUSAGE_SELF): every thread, the collector's checkpoint thread included.
int64_t ProcessCpuNs();

// The rank a parallel launcher gave this process, from its variables, the
// first set in this order: PMIX_RANK, PMI_RANK, OMPI_COMM_WORLD_RANK,
// MV2_COMM_WORLD_RANK, PALS_RANKID, FLUX_TASK_RANK, SLURM_PROCID, RANK
// (torchrun). Size and local rank come from the same launcher's variables
// (e.g. SLURM_NTASKS, SLURM_LOCALID). nullopt when none is set to a number.
//
// With a rank, the job (one launch; docs/cli.md "Parallel jobs"), the first
// set in this order: SLURM_JOB_ID (with SLURM_STEP_ID as the step),
// FLUX_JOB_ID, PALS_APID, PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid,
// MPIRUN_ID (MVAPICH mpirun_rsh), PBS_JOBID, LSB_JOBID, then
// kLaunchVariable (cct-record's fallback for launchers that name no job,
// MPICH Hydra: see LaunchProcessId). The node: SLURMD_NODENAME else `host`;
// its index from SLURM_NODEID or PALS_NODEID.
std::optional<store::LauncherRank> LauncherRankFrom(const std::function<const char*(const char*)>& env,
                                                    const std::string& host = store::HostName());

// The variable through which cct-record hands the collector a job id for
// launchers that set none (LaunchProcessId).
inline constexpr const char* kLaunchVariable = "CCT_RECORD_LAUNCH";
// The job_source of a job id that came from it.
inline constexpr const char* kLaunchJobSource = "launcher process";
// A job id for a launch whose launcher names none: the launcher process that
// started cct-record ("launch-HOST-PID-STARTTICKS"). `ancestors` are the
// process's ancestors, its parent first. The launcher
// is the nearest one named like an MPI process manager (hydra_pmi_proxy,
// mpiexec*, mpirun*, orted, prted), else the parent. All ranks that one
// proxy started share it, so it is one job per node with MPICH Hydra (one
// proxy per node) and one per launch on a single node.
struct ProcessAncestor {
  int64_t pid = 0;
  uint64_t start_ticks = 0;  // /proc/PID/stat starttime
  std::string name;          // /proc/PID/stat comm
};
std::string LaunchProcessId(const std::string& host, const std::vector<ProcessAncestor>& ancestors);
// This process's ancestors for LaunchProcessId, from /proc, parent first (at
// most `max`, ending before pid 1).
std::vector<ProcessAncestor> ProcessAncestors(size_t max = 16);

}  // namespace collector
