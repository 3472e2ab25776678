#include "collector/core/run_info.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <thread>

namespace collector {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string Upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

}  // namespace

bool EnvNameAllowed(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {
      "CUDA_", "NVIDIA_", "NV_", "CUBLAS_", "CUBLASLT_", "CUDNN_", "CUFFT_", "NCCL_", "OMP_", "GOMP_", "KMP_",
      "PYTORCH_", "TORCH_", "MKL_", "OPENBLAS_", "BLIS_", "TF_", "XLA_", "JAX_", "HIP_", "ROCM_", "HSA_",
      "OMPI_MCA_", "I_MPI_", "MV2_", "UCX_", "CCT_"};
  static constexpr std::string_view kNames[] = {
      "PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHASHSEED", "VIRTUAL_ENV", "CONDA_PREFIX",
      "CONDA_DEFAULT_ENV", "LANG", "LC_ALL", "TZ", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES", "SLURM_JOB_ID",
      "SLURM_NTASKS", "SLURM_CPUS_PER_TASK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "WORLD_SIZE", "RANK",
      "LOCAL_RANK"};
  for (auto n : kNames)
    if (name == n) return true;
  for (auto p : kPrefixes)
    if (StartsWith(name, p) && name.size() > p.size()) return true;
  return false;
}

bool LooksSecret(std::string_view name, std::string_view value) {
  const std::string n = Upper(name);
  for (std::string_view w : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "APIKEY",
                             "API_KEY", "ACCESS_KEY", "PRIVATE_KEY", "AUTH", "COOKIE", "SESSION"})
    if (n.find(w) != std::string::npos) return true;
  if (n.size() >= 4 && (n.ends_with("_KEY") || n == "KEY")) return true;
  // Known credential shapes.
  for (std::string_view p : {"ghp_", "gho_", "ghu_", "ghs_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-",
                             "sk-", "AKIA", "ASIA", "AIza", "hf_", "-----BEGIN"})
    if (value.find(p) != std::string_view::npos) return true;
  // user:password@host in a URL.
  if (const size_t scheme = value.find("://"); scheme != std::string_view::npos) {
    const std::string_view rest = value.substr(scheme + 3);
    const size_t at = rest.find('@'), colon = rest.find(':'), slash = rest.find('/');
    if (at != std::string_view::npos && colon < at && (slash == std::string_view::npos || at < slash)) return true;
  }
  // A long unbroken run of letters and digits reads as a random key (base64,
  // hex); paths, lists, UUIDs and version strings are broken up by / , : - .
  size_t run = 0, best = 0;
  bool letter = false, digit = false, letter_run = false, digit_run = false;
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '+' || c == '=') {
      if (run == 0) letter_run = digit_run = false;
      ++run;
      letter_run |= std::isalpha(u) != 0;
      digit_run |= std::isdigit(u) != 0;
      if (run > best) {
        best = run;
        letter = letter_run;
        digit = digit_run;
      }
    } else {
      run = 0;
    }
  }
  return best >= 32 && letter && digit;
}

std::map<std::string, std::string> RecordedEnvironment(const char* const* envp) {
  std::map<std::string, std::string> out;
  if (!envp) return out;
  for (; *envp; ++envp) {
    const std::string_view entry(*envp);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq), value = entry.substr(eq + 1);
    if (EnvNameAllowed(name) && !LooksSecret(name, value)) out.emplace(name, value);
  }
  return out;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model;
  while (std::getline(in, line)) {
    if (StartsWith(line, "model name")) {
      model = Trim(line.substr(line.find(':') + 1));
      break;
    }
  }
  const unsigned cpus = std::thread::hardware_concurrency();
  if (cpus) model += (model.empty() ? "" : " ") + std::string("(") + std::to_string(cpus) + " CPUs)";
  return model;
}

std::string GitCommit(const std::string& start) {
  std::string dir = start;
  while (!dir.empty()) {
    std::string git = dir + "/.git";
    if (access(git.c_str(), F_OK) == 0) {
      // A worktree or submodule has a file "gitdir: PATH".
      std::string content = ReadSmallFile(git);
      if (StartsWith(content, "gitdir:")) {
        std::string p = Trim(content.substr(7));
        git = p.starts_with('/') ? p : dir + "/" + p;
      }
      std::string head = Trim(ReadSmallFile(git + "/HEAD"));
      if (!StartsWith(head, "ref:")) return head.size() == 40 ? head : "";
      const std::string ref = Trim(head.substr(4));
      // The ref may live in the common dir of a worktree.
      std::string common = git;
      if (std::string c = Trim(ReadSmallFile(git + "/commondir")); !c.empty())
        common = c.starts_with('/') ? c : git + "/" + c;
      for (const std::string& base : {git, common}) {
        std::string sha = Trim(ReadSmallFile(base + "/" + ref));
        if (sha.size() == 40) return sha;
        std::ifstream packed(base + "/packed-refs");
        std::string line;
        while (std::getline(packed, line))
          if (line.size() > 41 && line.compare(41, std::string::npos, ref) == 0) return line.substr(0, 40);
      }
      return "";
    }
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos || dir == "/") break;
    dir = slash == 0 ? (dir == "/" ? "" : "/") : dir.substr(0, slash);
    if (dir == "/" && access("/.git", F_OK) != 0) break;
  }
  return "";
}

std::vector<std::string> ProcessCommandLine() {
  const std::string raw = ReadSmallFile("/proc/self/cmdline");
  std::vector<std::string> out;
  size_t i = 0;
  while (i < raw.size()) {
    const size_t z = raw.find('\0', i);
    out.push_back(raw.substr(i, z == std::string::npos ? std::string::npos : z - i));
    if (z == std::string::npos) break;
    i = z + 1;
  }
  return out;
}

std::string CurrentDirectory() {
  char buf[4096];
  return getcwd(buf, sizeof buf) ? buf : "";
}

}  // namespace collector
