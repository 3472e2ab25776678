#include "tests/test_util.h"

#include "store/lmdb_env.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace testutil {

namespace {
std::string EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
double Now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

std::string BuildDir() { return std::filesystem::absolute(EnvOr("CCT_BUILD_DIR", "build")).lexically_normal().string(); }
std::string SourceDir() { return std::filesystem::absolute(EnvOr("CCT_SOURCE_DIR", ".")).lexically_normal().string(); }
std::string Tool(const std::string& name) { return BuildDir() + "/tools/" + name; }
std::string SharedData(const std::string& rel) {
  return std::filesystem::weakly_canonical(SourceDir() + "/../shared/data/" + rel).string();
}

std::string Query(const std::string& db, std::vector<std::string> args, int* rc, std::string* err) {
  std::vector<std::string> argv{Tool("cct-query"), "-d", db};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = Run(argv);
  *rc = r.exit_code;
  if (err) *err = r.err;
  return r.out;
}

RunResult Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, double timeout_s,
              const std::string& cwd) {
  RunResult r;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  // Build the environment before forking (no allocation after fork).
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) merged[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  // The tools follow the terminal's conventions (COLUMNS, the locale's
  // character set, NO_COLOR): every test starts from the same ones, whatever
  // the shell running the suite has, and sets others through `env`.
  for (const char* var : {"COLUMNS", "LC_ALL", "LC_CTYPE", "LANG", "NO_COLOR"}) merged.erase(var);
  merged["LC_ALL"] = "C.UTF-8";
  for (const auto& [k, v] : env) {
    if (v.empty()) merged.erase(k);
    else merged[k] = v;
  }
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork");
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    setpgid(0, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execve(args[0], args.data(), envp.data());
    _exit(errno == ENOENT ? 127 : 126);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  const double deadline = Now() + timeout_s;
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const double left = deadline - Now();
    if (left <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    const int n = poll(fds, 2, static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(got));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

std::map<std::string, double> Measured(const std::string& out) {
  std::map<std::string, double> m;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string tag, name;
    double v = 0;
    if (fields >> tag >> name >> v && tag == "MEASURED") m[name] = v;
  }
  return m;
}

std::vector<std::map<std::string, std::string>> ReadCsvRows(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field.push_back('"'), ++i;
      else if (c == '"') quoted = false;
      else field.push_back(c);
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
    } else if (c == '\n') {
      fields.push_back(field);
      field.clear();
      records.push_back(fields);
      fields.clear();
    } else if (c != '\r') {
      field.push_back(c);
    }
  }
  std::vector<std::map<std::string, std::string>> rows;
  for (size_t r = 1; r < records.size(); ++r) {
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < records[0].size() && i < records[r].size(); ++i) row[records[0][i]] = records[r][i];
    rows.push_back(row);
  }
  return rows;
}

size_t LineCount(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  if (!s.empty() && s.back() != '\n') ++n;
  return n;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "cctdb-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
  path_ = tmpl;
}
TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFileOrDie(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string CheckGolden(const std::string& name, const std::string& actual) {
  const std::string path = SourceDir() + "/tests/golden/" + name;
  if (std::getenv("CCT_UPDATE_GOLDEN")) {
    WriteFileOrDie(path, actual);
    return "";
  }
  std::string expected;
  try {
    expected = ReadFileOrDie(path);
  } catch (const std::exception&) {
    return "golden file " + path + " is missing (run with CCT_UPDATE_GOLDEN=1 and review the diff)";
  }
  if (expected == actual) return "";
  // First differing line, for the assertion message.
  std::istringstream e(expected), a(actual);
  std::string le, la;
  for (int line = 1;; ++line) {
    const bool ge = static_cast<bool>(std::getline(e, le)), ga = static_cast<bool>(std::getline(a, la));
    if (!ge && !ga) break;
    if (le != la || ge != ga)
      return "golden " + name + " differs at line " + std::to_string(line) + ":\n  expected: " + (ge ? le : "<end>") +
             "\n  actual:   " + (ga ? la : "<end>");
  }
  return "golden " + name + " differs (line endings)";
}

uint32_t StoredFormatVersion(const std::string& db_path) {
  auto env = store::LmdbEnv::Open(db_path, store::LmdbEnv::Mode::kReadOnly);
  if (!env.ok()) return 0;
  auto txn = (*env)->Begin(false);
  if (!txn.ok()) return 0;
  auto dbi = (*txn)->OpenDb("meta", false);
  if (!dbi.ok() || !dbi->has_value()) return 0;
  auto v = (*txn)->Get(**dbi, "format_version");
  if (!v.ok() || !v->has_value() || (*v)->size() != 4) return 0;
  uint32_t version = 0;
  std::memcpy(&version, (*v)->data(), 4);
  return version;
}

bool StampFormatVersion(const std::string& db_path, uint32_t version) {
  auto env = store::LmdbEnv::Open(db_path, store::LmdbEnv::Mode::kReadWrite);
  if (!env.ok()) return false;
  return store::WithWriteTxn(**env, [version](store::LmdbTxn& txn) {
           auto dbi = txn.OpenDb("meta", false);
           if (!dbi.ok()) return dbi.status();
           return txn.Put(**dbi, "format_version", std::string(reinterpret_cast<const char*>(&version), 4));
         }).ok();
}

}  // namespace testutil
