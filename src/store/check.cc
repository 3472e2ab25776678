#include "store/check.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <unordered_set>

#include "store/database.h"
#include "store/fault_guard.h"

namespace store {

size_t DatabaseCheck::damaged() const {
  size_t n = 0;
  for (const RunCheck& r : runs) n += !r.problem.empty();
  return n;
}

namespace {

// Children report on a pipe, one record a line: a kind letter, a tab, the
// fields. Names and messages are made single-line first.
std::string OneLine(std::string_view s, size_t max_bytes = 512) {
  std::string out;
  for (char c : s.substr(0, max_bytes)) out += (c == '\n' || c == '\t' || c == '\r') ? ' ' : c;
  return out;
}

void Emit(int fd, const std::string& line) {
  std::string l = line + "\n";
  for (size_t off = 0; off < l.size();) {
    const ssize_t n = ::write(fd, l.data() + off, l.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(3);
    off += static_cast<size_t>(n);
  }
}

// What a tree must satisfy beyond what decoding checks (parents before
// children, frames and strings in range): no two children of a node with
// one frame (paths identify nodes), a node count that matches the run
// record, finite values.
std::string TreeProblem(const cct::Tree& tree, const RunMeta& meta) {
  if (meta.node_count != 0 && meta.node_count != tree.size())
    return "the run record says " + std::to_string(meta.node_count) + " nodes, its tree has " +
           std::to_string(tree.size());
  std::unordered_set<uint64_t> seen;
  seen.reserve(tree.size());
  for (cct::NodeId n = 1; n < tree.size(); ++n)
    if (!seen.insert(uint64_t{tree.parent(n)} << 32 | tree.frame_id(n)).second)
      return "node " + std::to_string(n) + " repeats a sibling's frame";
  for (cct::MetricId m = 0; m < tree.metrics().size(); ++m)
    for (cct::NodeId n = 0; n < tree.size(); ++n)
      if (!std::isfinite(tree.Value(n, m)))
        return "metric '" + tree.metrics().Get(m).name + "' has a value that is not finite at node " +
               std::to_string(n);
  return "";
}

// The report names the database and the run once; the store's messages
// repeat them ("P is damaged: run N: X", "P is damaged (X); cct-query check
// P lists what can still be read", "P: X"): X is what is left.
std::string Unframed(std::string m, const std::string& path, RunId id) {
  // DamageMessage around an empty detail splits into what comes before and after it.
  const std::string frame = DamageMessage(path, ""), damaged = frame.substr(0, frame.find("()", path.size()) + 1),
                    advice = frame.substr(frame.find("()", path.size()) + 1);
  if (m.compare(0, damaged.size(), damaged) == 0 && m.size() >= damaged.size() + advice.size() &&
      m.compare(m.size() - advice.size(), advice.size(), advice) == 0)
    return m.substr(damaged.size(), m.size() - damaged.size() - advice.size());
  for (const std::string& prefix : {path + " is damaged: run " + std::to_string(id) + ": ", path + ": "})
    if (m.compare(0, prefix.size(), prefix) == 0) return m.substr(prefix.size());
  return m;
}

// Child: opens the database, "O" once open; "X code message" and exit when
// it cannot. The open has the tools' deadline (fault_guard.h OpenDeadline):
// SIGALRM's default action ends the child, which the parent reports.
std::unique_ptr<Database> OpenInChild(const std::string& path, int fd) {
  ::alarm(kOpenDeadlineSeconds);
  auto db = Database::Open(path, Database::Mode::kRead);
  ::alarm(0);
  if (!db.ok()) {
    Emit(fd, "X\t" + std::to_string(static_cast<int>(db.status().code())) + "\t" + OneLine(db.status().message()));
    ::_exit(0);
  }
  Emit(fd, "O");
  return std::move(*db);
}

// Child: the run table. "L id name" per run, then "D"; or "F message" when
// the walk fails, then "N next_run_id" when the counter can be read.
[[noreturn]] void ListWorker(const std::string& path, int fd) {
  auto db = OpenInChild(path, fd);
  auto runs = db->ListRuns();
  if (runs.ok()) {
    for (const RunMeta& r : *runs) Emit(fd, "L\t" + std::to_string(r.id) + "\t" + OneLine(r.name, 200));
    Emit(fd, "D");
    ::_exit(0);
  }
  Emit(fd, "F\t" + OneLine(runs.status().message()));
  auto next = db->NextRunId();
  if (next.ok()) Emit(fd, "N\t" + std::to_string(*next));
  ::_exit(0);
}

// Child: the runs ids[from..], each as "B id" before reading it and
// "E id problem name" after ("-" as the problem of an id that has no run).
[[noreturn]] void RunWorker(const std::string& path, const std::vector<RunId>& ids, size_t from, int fd) {
  auto db = OpenInChild(path, fd);
  for (size_t i = from; i < ids.size(); ++i) {
    const RunId id = ids[i];
    Emit(fd, "B\t" + std::to_string(id));
    std::string problem, name;
    auto meta = db->GetRun(id);
    if (!meta.ok()) {
      problem = meta.status().code() == cct::ErrorCode::kNotFound ? "-" : meta.status().message();
    } else {
      name = meta->name;
      // The record read with the tree: a recorder may rewrite the run
      // between GetRun and ReadTree.
      RunMeta record;
      auto tree = db->ReadTree(id, &record);
      if (!tree.ok()) {
        problem = tree.status().message();
      } else {
        problem = TreeProblem(*tree, record);
        if (problem.empty()) {
          auto its = db->ReadIterations(id);
          if (!its.ok()) problem = its.status().message();
        }
        if (problem.empty()) {
          auto trace = db->ReadTrace(id);
          if (!trace.ok()) problem = trace.status().message();
        }
      }
    }
    problem = Unframed(problem, path, id);
    Emit(fd, "E\t" + std::to_string(id) + "\t" + OneLine(problem) + "\t" + OneLine(name, 200));
  }
  Emit(fd, "D");
  ::_exit(0);
}

struct ChildResult {
  std::vector<std::vector<std::string>> records;  // each line split at tabs
  std::string death;  // "" when it exited normally; else what stopped it
  std::string said;   // the last line it wrote that is not a record
};

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> f;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    f.push_back(line.substr(start, tab - start));
    if (tab == std::string::npos) return f;
    start = tab + 1;
  }
}

// Runs `work` in a child and collects its lines. A child silent for
// `timeout_s` is killed.
template <class Work>
cct::Result<ChildResult> InChild(Work work, double timeout_s) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return cct::IoError(std::string("pipe: ") + strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return cct::IoError(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // LMDB's assert must abort here (the parent reports it), not exit as a
    // tool's FaultGuard would make it; what LMDB prints on the way comes
    // through the pipe as a line of its own.
    ReleaseFaultGuards();  // (SIGSEGV and SIGBUS back to their default)
    for (int sig : {SIGABRT, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);  // not a host's crash reporter
    ::dup2(fds[1], STDERR_FILENO);
    work(fds[1]);
  }
  ::close(fds[1]);
  ChildResult result;
  std::string buffer;
  bool timed_out = false;
  char chunk[4096];
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(timeout_s * 1000));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos; buffer.erase(0, nl + 1)) {
      std::vector<std::string> record = SplitTabs(buffer.substr(0, nl));
      if (record[0].size() == 1)
        result.records.push_back(std::move(record));
      else
        result.said = OneLine(buffer.substr(0, nl), 200);  // LMDB's own words before it aborted
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    result.death = "reading it did not finish in " + std::to_string(static_cast<int>(timeout_s)) + " s";
  else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    result.death = "opening it did not finish in " + std::to_string(kOpenDeadlineSeconds) +
                   " s: LMDB is looping on a damaged page";
  else if (WIFSIGNALED(status)) {
    const char* abbrev = sigabbrev_np(WTERMSIG(status));
    result.death = "LMDB stopped reading it (" +
                   (abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(WTERMSIG(status))) +
                   (result.said.empty() ? std::string("): a page it cannot follow") : "): " + LmdbAssertionText(result.said));
  }
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    result.death = "the checking process failed (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  return result;
}

cct::Status OpenError(const std::vector<std::string>& x) {
  const auto code = x.size() > 1 ? static_cast<cct::ErrorCode>(std::atoi(x[1].c_str())) : cct::ErrorCode::kCorrupt;
  return cct::Status(code, x.size() > 2 ? x[2] : "cannot open the database");
}

}  // namespace

cct::Result<DatabaseCheck> CheckDatabase(const std::string& path, double timeout_s) {
  DatabaseCheck check;
  check.path = path;
  std::vector<RunId> ids;
  std::map<RunId, std::string> names;  // from the run table, as far as it could be walked
  {
    CCT_ASSIGN_OR_RETURN(ChildResult listed, InChild([&](int fd) { ListWorker(path, fd); }, timeout_s));
    bool done = false, opened = false;
    std::optional<RunId> next;
    for (const auto& r : listed.records) {
      opened |= r[0] == "O";
      if (r[0] == "X") return OpenError(r);
      if (r[0] == "L" && r.size() >= 3) {
        ids.push_back(static_cast<RunId>(std::stoul(r[1])));
        names[ids.back()] = r[2];
      }
      if (r[0] == "D") done = true;
      if (r[0] == "F" && r.size() >= 2) check.listing_problem = Unframed(r[1], path, 0);
      if (r[0] == "N" && r.size() >= 2) next = static_cast<RunId>(std::stoul(r[1]));
    }
    if (!opened)
      return cct::Corrupt(path + " is damaged (" + (listed.death.empty() ? "it could not be opened" : listed.death) +
                          ")");
    if (!done) {
      if (check.listing_problem.empty()) check.listing_problem = "walking the run table: " + listed.death;
      if (!next) {
        // The walk died before the counter was read: read it alone.
        CCT_ASSIGN_OR_RETURN(ChildResult counter, InChild([&](int fd) {
                               if (auto n = OpenInChild(path, fd)->NextRunId(); n.ok())
                                 Emit(fd, "N\t" + std::to_string(*n));
                               ::_exit(0);
                             }, timeout_s));
        for (const auto& r : counter.records)
          if (r[0] == "N" && r.size() >= 2) next = static_cast<RunId>(std::stoul(r[1]));
      }
      if (!next)
        return cct::Corrupt(path + " is damaged: neither its run table nor its run counter can be read (" +
                            check.listing_problem + ")");
      ids.clear();
      for (RunId id = 1; id < *next; ++id) ids.push_back(id);
    }
  }

  const bool probing = !check.listing_problem.empty();
  size_t from = 0;
  while (from < ids.size()) {
    const size_t started = from;
    CCT_ASSIGN_OR_RETURN(ChildResult read, InChild([&](int fd) { RunWorker(path, ids, from, fd); }, timeout_s));
    RunId open = 0;  // begun, not ended (run ids start at 1)
    bool done = false;
    for (const auto& r : read.records) {
      if (r[0] == "X") return OpenError(r);
      if (r[0] == "B" && r.size() >= 2) open = static_cast<RunId>(std::stoul(r[1]));
      if (r[0] == "D") done = true;
      if (r[0] != "E" || r.size() < 4) continue;
      open = 0;
      ++from;
      if (r[2] == "-") {
        // No run under this id: deleted, or never stored (probing); a run
        // the table listed and that is not there is damage.
        if (probing) continue;
        check.runs.push_back({static_cast<RunId>(std::stoul(r[1])), "", "listed in the run table but its record is missing"});
        continue;
      }
      check.runs.push_back({static_cast<RunId>(std::stoul(r[1])), r[3], r[2]});
    }
    if (done) break;
    if (open != 0) {
      const auto name = names.find(open);
      check.runs.push_back({open, name == names.end() ? "" : name->second,
                            read.death.empty() ? "reading it stopped the checking process" : read.death});
      ++from;
    } else if (from == started) {
      // Died before its first run: another try would do the same.
      return cct::IoError("checking " + path + ": " + (read.death.empty() ? "the checking process ended early" : read.death));
    }
  }
  return check;
}

}  // namespace store
