// RunInfo: the facts about a process that go into its run's metadata —
// allow-listed environment (with secrets left out), CPU model, git commit of
// a working directory, command line. Pure functions over files and strings.
// Thread-safe (no shared state). Not signal-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace collector {

// Whether an environment variable's name is recorded (docs/cli.md lists the
// allow-list): CUDA_*, NVIDIA_*, OMP_*, NCCL_*, PYTORCH_*, TORCH_*, MKL_*,
// OPENBLAS_*, ... and PATH, LD_LIBRARY_PATH, ...
bool EnvNameAllowed(std::string_view name);
// Whether a name or value looks like a credential (tokens, keys, passwords,
// URLs with a password, long random strings): such variables are never kept.
bool LooksSecret(std::string_view name, std::string_view value);
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

}  // namespace collector
