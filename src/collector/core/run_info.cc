#include "collector/core/run_info.h"

#include "cct/tree_ops.h"
#include "collector/cpu/modules.h"
#include "store/run_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <link.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cctype>
#include <thread>

namespace collector {
namespace {

std::string Upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

std::string ReadSmallFile(const std::string& path, size_t limit = SIZE_MAX) {
  auto text = store::ReadWholeFile(path, limit);
  return text.ok() ? std::move(text).value() : std::string();
}

// Each line of `text` (without its newline) until `f` returns true.
template <class F>
void ForEachLine(std::string_view text, F f) {
  size_t i = 0;
  while (i < text.size()) {
    size_t nl = text.find('\n', i);
    if (nl == std::string_view::npos) nl = text.size();
    if (f(text.substr(i, nl - i))) return;
    i = nl + 1;
  }
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
    if (name.starts_with(p) && name.size() > p.size()) return true;
  return false;
}

namespace {

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Whether `token` has the shape of a known credential: a vendor prefix
// followed by enough key characters (so "desk-tools" or "hf_cache" in a
// path are not taken for "sk-" or "hf_" keys).
bool KnownTokenFormat(std::string_view token) {
  struct Format {
    std::string_view prefix;
    size_t min_rest;  // key characters after the prefix
    bool upper;       // the rest is upper-case letters and digits (AWS key ids)
  };
  static constexpr Format kFormats[] = {
      {"ghp_", 30, false},  {"gho_", 30, false},  {"ghu_", 30, false},  {"ghs_", 30, false}, {"ghr_", 30, false},
      {"github_pat_", 40, false}, {"glpat-", 20, false}, {"xoxb-", 10, false}, {"xoxp-", 10, false},
      {"xoxa-", 10, false}, {"sk-", 20, false},   {"hf_", 30, false},   {"AIza", 30, false},
      {"AKIA", 16, true},   {"ASIA", 16, true}};
  for (const Format& f : kFormats) {
    if (!token.starts_with(f.prefix)) continue;
    const std::string_view rest = token.substr(f.prefix.size());
    size_t key = 0;
    for (char c : rest) {
      const bool ok = f.upper ? (std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)))
                              : (IsAlnum(c) || c == '_' || c == '-');
      if (!ok) break;
      ++key;
    }
    if (key >= f.min_rest && key == rest.size()) return true;
  }
  return false;
}

// Where the password of a "scheme://user:password@host" URL in `value` is:
// {offset, length}, or {npos, 0}.
std::pair<size_t, size_t> UrlPassword(std::string_view value) {
  const size_t scheme = value.find("://");
  if (scheme == std::string_view::npos) return {std::string_view::npos, 0};
  const size_t start = scheme + 3;
  const std::string_view rest = value.substr(start);
  const size_t at = rest.find('@'), colon = rest.find(':'), slash = rest.find('/');
  if (at == std::string_view::npos || colon >= at || (slash != std::string_view::npos && at > slash))
    return {std::string_view::npos, 0};
  return {start + colon + 1, at - colon - 1};
}

// Calls `f(offset, length)` for each item of `value` (split at
// ":;,/= \t") that has a known credential format.
template <class F>
void ForEachKnownToken(std::string_view value, F f) {
  size_t i = 0;
  while (i <= value.size()) {
    const size_t j = value.find_first_of(":;,/= \t", i);
    const std::string_view token = value.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    if (KnownTokenFormat(token)) f(i, token.size());
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
}

}  // namespace

bool SecretName(std::string_view name) {
  std::string n = Upper(name);
  for (char& c : n)
    if (c == '-') c = '_';
  for (std::string_view w : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "APIKEY",
                             "API_KEY", "ACCESS_KEY", "PRIVATE_KEY", "COOKIE", "SESSION"})
    if (n.find(w) != std::string::npos) return true;
  // AUTH, but not AUTHOR.
  for (size_t at = n.find("AUTH"); at != std::string::npos; at = n.find("AUTH", at + 1))
    if (n.compare(at, 6, "AUTHOR") != 0) return true;
  return n.size() >= 4 ? n.ends_with("_KEY") : n == "KEY";
}

std::string RunName(const std::string& configured, const std::vector<std::string>& command,
                    const std::optional<store::LauncherRank>& launcher) {
  std::string name = !configured.empty() || command.empty() ? configured : std::string(cct::BaseName(command.front()));
  if (!name.empty() && launcher && launcher->rank >= 0) name += ".r" + std::to_string(launcher->rank);
  return name;
}

size_t MaskSecretArguments(std::vector<std::string>& argv) {
  size_t masked = 0;
  auto mask = [&](std::string& s, size_t at, size_t len) {
    if (len == 0) return;
    s.replace(at, len, kMasked);
    ++masked;
  };
  // argv[0] is the program: named, never masked.
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string& a = argv[i];
    const size_t eq = a.find('=');
    const size_t dashes = a.find_first_not_of('-');
    // NAME=VALUE, --NAME=VALUE, -NAME=VALUE with a name that says "secret".
    if (eq != std::string::npos && dashes != std::string::npos && dashes < eq &&
        SecretName(std::string_view(a).substr(dashes, eq - dashes)) &&
        a.find_first_of(" /:", dashes) > eq) {
      mask(a, eq + 1, a.size() - eq - 1);
      continue;
    }
    // --password VALUE: the next argument, unless it is an option itself.
    if (eq == std::string::npos && dashes != std::string::npos && dashes > 0 && dashes <= 2 &&
        SecretName(std::string_view(a).substr(dashes)) && i + 1 < argv.size() && !argv[i + 1].starts_with("-")) {
      mask(argv[i + 1], 0, argv[i + 1].size());
      ++i;
      continue;
    }
    // A password inside a URL, known token formats anywhere (right to left,
    // so offsets stay valid).
    std::vector<std::pair<size_t, size_t>> spans;
    if (auto [at, len] = UrlPassword(a); at != std::string::npos) spans.emplace_back(at, len);
    ForEachKnownToken(a, [&](size_t at, size_t len) { spans.emplace_back(at, len); });
    std::sort(spans.begin(), spans.end());
    for (size_t k = spans.size(); k-- > 0;)
      if (k + 1 == spans.size() || spans[k].first + spans[k].second <= spans[k + 1].first)
        mask(a, spans[k].first, spans[k].second);
  }
  return masked;
}

bool LooksSecret(std::string_view name, std::string_view value) {
  if (SecretName(name)) return true;
  if (value.find("-----BEGIN") != std::string_view::npos) return true;  // a PEM key
  if (UrlPassword(value).first != std::string_view::npos) return true;  // user:password@host
  // Known credential formats, as whole tokens of the value (a list's items,
  // a path's components, KEY=VALUE pairs).
  bool known = false;
  ForEachKnownToken(value, [&](size_t, size_t) { known = true; });
  if (known) return true;
  // A value that is one long unbroken run of letters and digits reads as a
  // random key (base64, hex). Only for values without a '/': directory names
  // carry such hashes without being secrets (every Spack and Nix install
  // path, conda package caches), and a path is not a credential.
  if (value.find('/') != std::string_view::npos) return false;
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
  // The first processor's entry is at the start: a many-core machine's
  // whole file is hundreds of kilobytes the kernel would format for nothing.
  const std::string text = ReadSmallFile("/proc/cpuinfo", 16384);
  std::string model;
  ForEachLine(text, [&](std::string_view line) {
    if (!line.starts_with("model name") || line.find(':') == std::string_view::npos) return false;
    model = Trim(std::string(line.substr(line.find(':') + 1)));
    return true;
  });
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
      if (content.starts_with("gitdir:")) {
        std::string p = Trim(content.substr(7));
        git = p.starts_with('/') ? p : dir + "/" + p;
      }
      std::string head = Trim(ReadSmallFile(git + "/HEAD"));
      if (!head.starts_with("ref:")) return head.size() == 40 ? head : "";
      const std::string ref = Trim(head.substr(4));
      // The ref may live in the common dir of a worktree.
      std::string common = git;
      if (std::string c = Trim(ReadSmallFile(git + "/commondir")); !c.empty())
        common = c.starts_with('/') ? c : git + "/" + c;
      for (const std::string& base : {git, common}) {
        std::string sha = Trim(ReadSmallFile(base + "/" + ref));
        if (sha.size() == 40) return sha;
        std::string found;
        ForEachLine(ReadSmallFile(base + "/packed-refs"), [&](std::string_view line) {
          if (line.size() > 41 && line.substr(41) == ref) found = std::string(line.substr(0, 40));
          return !found.empty();
        });
        if (!found.empty()) return found;
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

std::string UserName() {
  const uid_t uid = getuid();
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found && found->pw_name) return found->pw_name;
  if (const char* u = getenv("USER"); u && *u) return u;
  return "uid " + std::to_string(uid);
}

std::string ExecutablePath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::string BuildIdHex(const std::string& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

std::string BuildIdFromNotes(const unsigned char* notes, size_t size) {
  return BuildIdHex(BuildIdInNotes(notes, size));
}

std::vector<store::ModuleInfo> RunModules() {
  std::vector<store::ModuleInfo> out;
  for (const ModuleImage& m : LoadedModules()) {
    // Unnamed entries are not files anyone can look up.
    if (m.path.find('/') == std::string::npos) continue;
    out.push_back(store::ModuleInfo{m.path, BuildIdHex(m.build_id)});
  }
  return out;
}

void MergeModules(std::vector<store::ModuleInfo>& known, const std::vector<store::ModuleInfo>& now) {
  for (const store::ModuleInfo& m : now) {
    const bool have = std::any_of(known.begin(), known.end(), [&](const store::ModuleInfo& k) { return k.path == m.path; });
    if (!have) known.push_back(m);
  }
}

std::vector<std::string> ElfComment(const std::string& path) {
  std::vector<std::string> out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return out;
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  // Reads [off, off+len) of the file, or fails when it is not all there.
  auto read_at = [&](uint64_t off, void* dst, size_t len) {
    if (off > file_size || len > file_size - off) return false;
    size_t done = 0;
    while (done < len) {
      const ssize_t n = pread(fd, static_cast<char*>(dst) + done, len - done, static_cast<off_t>(off + done));
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  };
  Elf64_Ehdr eh;
  if (!read_at(0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shoff == 0)
    return out;
  // Extended numbering: counts that do not fit the header live in section 0.
  Elf64_Shdr zero;
  if (!read_at(eh.e_shoff, &zero, sizeof zero)) return out;
  const uint64_t count = eh.e_shnum ? eh.e_shnum : zero.sh_size;
  const uint64_t strndx = eh.e_shstrndx == SHN_XINDEX ? zero.sh_link : eh.e_shstrndx;
  if (count == 0 || count > 65536 || strndx >= count) return out;
  std::vector<Elf64_Shdr> sh(count);
  if (count > (file_size - std::min(file_size, eh.e_shoff)) / sizeof(Elf64_Shdr) ||
      !read_at(eh.e_shoff, sh.data(), count * sizeof(Elf64_Shdr)))
    return out;
  const Elf64_Shdr& names = sh[strndx];
  if (names.sh_type != SHT_STRTAB || names.sh_size > (1u << 20)) return out;
  std::string strtab(names.sh_size, '\0');
  if (!read_at(names.sh_offset, strtab.data(), strtab.size())) return out;
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_name >= strtab.size() || s.sh_type != SHT_PROGBITS) continue;
    const char* name = strtab.data() + s.sh_name;
    if (std::string_view(name, strnlen(name, strtab.size() - s.sh_name)) != ".comment") continue;
    if (s.sh_size > (1u << 16)) return out;
    std::string data(s.sh_size, '\0');
    if (!read_at(s.sh_offset, data.data(), data.size())) return out;
    size_t i = 0;
    while (i < data.size()) {
      size_t z = data.find('\0', i);
      if (z == std::string::npos) z = data.size();
      std::string one = data.substr(i, z - i);
      if (!one.empty() && std::find(out.begin(), out.end(), one) == out.end()) out.push_back(std::move(one));
      i = z + 1;
    }
    break;
  }
  return out;
}

std::string EncodeMachineFacts(uint32_t uid, std::string_view host, const MachineFacts& facts) {
  for (std::string_view field : {host, std::string_view(facts.user), std::string_view(facts.cpu_model),
                                 std::string_view(facts.os)})
    if (field.find_first_of("\t\n") != std::string_view::npos) return "";
  std::string out = std::to_string(uid);
  for (std::string_view field : {host, std::string_view(facts.user), std::string_view(facts.cpu_model),
                                 std::string_view(facts.os)}) {
    out += '\t';
    out += field;
  }
  return out;
}

std::optional<MachineFacts> DecodeMachineFacts(std::string_view text, uint32_t uid, std::string_view host) {
  std::string_view fields[5];
  for (int i = 0; i < 5; ++i) {
    const size_t tab = text.find('\t');
    if ((tab == std::string_view::npos) != (i == 4)) return std::nullopt;
    fields[i] = text.substr(0, tab);
    text = tab == std::string_view::npos ? std::string_view() : text.substr(tab + 1);
  }
  uint32_t u = 0;
  const auto [end, ec] = std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), u);
  if (ec != std::errc() || end != fields[0].data() + fields[0].size() || fields[0].empty()) return std::nullopt;
  if (u != uid || fields[1] != host || fields[2].empty()) return std::nullopt;
  return MachineFacts{std::string(fields[2]), std::string(fields[3]), std::string(fields[4])};
}

std::string KernelVersion() {
  utsname u{};
  if (uname(&u) != 0) return "";
  return std::string(u.sysname) + " " + u.release + " " + u.version + " " + u.machine;
}

std::string OsPrettyName(std::string_view text) {
  std::map<std::string, std::string> kv;
  ForEachLine(text, [&](std::string_view line) {
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return false;
    std::string v = Trim(std::string(line.substr(eq + 1)));
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
    kv[Trim(std::string(line.substr(0, eq)))] = v;
    return false;
  });
  if (!kv["PRETTY_NAME"].empty()) return kv["PRETTY_NAME"];
  return Trim(kv["NAME"] + " " + kv["VERSION_ID"]);
}

std::string OperatingSystem() {
  std::string text = ReadSmallFile("/etc/os-release");
  if (text.empty()) text = ReadSmallFile("/usr/lib/os-release");
  return OsPrettyName(text);
}

std::string GlibcVersion() { return gnu_get_libc_version(); }

int64_t ProcessCpuNs() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  auto ns = [](const timeval& tv) { return int64_t{tv.tv_sec} * 1000000000 + int64_t{tv.tv_usec} * 1000; };
  return ns(ru.ru_utime) + ns(ru.ru_stime);
}

std::optional<store::LauncherRank> LauncherRankFrom(const std::function<const char*(const char*)>& env,
                                                    const std::string& host) {
  struct Launcher {
    const char* rank;
    std::vector<const char*> size, local;
  };
  static const Launcher kLaunchers[] = {
      {"PMIX_RANK", {"PMIX_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"},
       {"PMIX_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_NODE_RANK", "MPI_LOCALRANKID",
        "SLURM_LOCALID"}},
      {"PMI_RANK", {"PMI_SIZE", "SLURM_NTASKS"}, {"MPI_LOCALRANKID", "PMI_LOCAL_RANK", "PALS_LOCAL_RANKID", "SLURM_LOCALID"}},
      {"OMPI_COMM_WORLD_RANK", {"OMPI_COMM_WORLD_SIZE"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_NODE_RANK"}},
      {"MV2_COMM_WORLD_RANK", {"MV2_COMM_WORLD_SIZE"}, {"MV2_COMM_WORLD_LOCAL_RANK"}},
      {"PALS_RANKID", {"PALS_SIZE", "PMI_SIZE"}, {"PALS_LOCAL_RANKID"}},
      {"FLUX_TASK_RANK", {"FLUX_JOB_SIZE"}, {"FLUX_TASK_LOCAL_ID"}},
      {"SLURM_PROCID", {"SLURM_NTASKS", "SLURM_NPROCS"}, {"SLURM_LOCALID"}},
      {"RANK", {"WORLD_SIZE"}, {"LOCAL_RANK"}},
  };
  // The job, most specific launcher first: a resource manager's job (with
  // Slurm's step, one srun) or an MPI launcher's own id names one launch; a
  // batch job's id (PBS, LSF) is shared by every launch inside the batch
  // job, so it comes after them.
  static const char* const kJobVariables[] = {"SLURM_JOB_ID", "FLUX_JOB_ID", "PALS_APID", "PMIX_NAMESPACE",
                                              "OMPI_MCA_ess_base_jobid", "MPIRUN_ID", "PBS_JOBID", "LSB_JOBID",
                                              kLaunchVariable};
  auto text = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? std::string(v) : std::string();
  };
  auto number = [&](const char* name) -> int64_t {
    const char* v = env(name);
    if (!v || !*v) return -1;
    int64_t out = -1;
    const char* end = v + std::strlen(v);
    const auto [p, ec] = std::from_chars(v, end, out);
    return ec == std::errc() && p == end && out >= 0 ? out : -1;
  };
  for (const Launcher& l : kLaunchers) {
    store::LauncherRank r;
    r.rank = number(l.rank);
    if (r.rank < 0) continue;
    r.source = l.rank;
    for (const char* n : l.size)
      if ((r.size = number(n)) >= 0) break;
    for (const char* n : l.local)
      if ((r.local_rank = number(n)) >= 0) break;
    for (const char* n : kJobVariables) {
      r.job_id = text(n);
      if (r.job_id.empty()) continue;
      r.job_source = std::string_view(n) == kLaunchVariable ? kLaunchJobSource : n;
      // Only Slurm's numeric steps: the batch script's own step has none
      // worth naming.
      if (std::string_view(n) == "SLURM_JOB_ID" && number("SLURM_STEP_ID") >= 0) r.step = text("SLURM_STEP_ID");
      break;
    }
    r.node_name = text("SLURMD_NODENAME");
    if (r.node_name.empty()) r.node_name = host;
    for (const char* n : {"SLURM_NODEID", "PALS_NODEID"})
      if ((r.node_index = number(n)) >= 0) break;
    return r;
  }
  return std::nullopt;
}

std::vector<ProcessAncestor> ProcessAncestors(size_t max) {
  std::vector<ProcessAncestor> out;
  int64_t pid = getppid();
  while (pid > 1 && out.size() < max) {
    std::optional<store::ProcessStat> st = store::ReadProcessStat(pid);
    if (!st) break;
    out.push_back(ProcessAncestor{pid, st->start_ticks, std::move(st->name)});
    pid = st->ppid;
  }
  return out;
}

std::string LaunchProcessId(const std::string& host, const std::vector<ProcessAncestor>& ancestors) {
  if (ancestors.empty()) return "";
  const ProcessAncestor* launcher = &ancestors.front();
  for (const ProcessAncestor& a : ancestors) {
    const std::string_view n = a.name;
    if (n == "hydra_pmi_proxy" || n == "orted" || n == "prted" || n.starts_with("mpiexec") || n.starts_with("mpirun")) {
      launcher = &a;
      break;
    }
  }
  return "launch-" + host + "-" + std::to_string(launcher->pid) + "-" + std::to_string(launcher->start_ticks);
}

}  // namespace collector
