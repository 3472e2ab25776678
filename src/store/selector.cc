#include "store/selector.h"

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "cct/text.h"

namespace store {

using cct::InvalidArgument;
using cct::Result;

namespace {

bool ParseU32(std::string_view s, uint32_t& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A selector as error messages quote it: a hostile 100 KB one stays one
// readable line.
std::string Shown(const std::string& text) { return cct::CutToBytes(text, 200); }

// "@t=A..B" / "@range=NAME#K" at the end of a selector: the window, or an
// error naming the selector.
Result<TimeWindowSpec> ParseWindow(std::string_view key, std::string_view spec, const std::string& text) {
  TimeWindowSpec w;
  if (key == "range") {
    const size_t hash = spec.rfind('#');
    if (hash == std::string_view::npos || hash == 0 || !ParseU32(spec.substr(hash + 1), w.instance) ||
        w.instance == 0)
      return InvalidArgument("bad range instance '" + std::string(spec) + "' in '" + text +
                             "' (expected @range=NAME#K, K from 1)");
    w.range = std::string(spec.substr(0, hash));
    return w;
  }
  const size_t dots = spec.find("..");
  const auto bad = [&] {
    return InvalidArgument("bad time window '" + std::string(spec) + "' in '" + text +
                           "' (expected @t=A..B, A.. or ..B; times from the trace's start in s, ms, us or ns)");
  };
  if (dots == std::string_view::npos) return bad();
  const std::string_view a = spec.substr(0, dots), b = spec.substr(dots + 2);
  if (!a.empty() && !(w.from_ns = ParseDuration(a))) return bad();
  if (!b.empty() && !(w.to_ns = ParseDuration(b))) return bad();
  if (w.from_ns && w.to_ns && *w.to_ns < *w.from_ns)
    return InvalidArgument("bad time window '" + std::string(spec) + "' in '" + text + "': it ends before it starts");
  return w;
}

}  // namespace

std::optional<int64_t> ParseDuration(std::string_view text) {
  double scale = 1e9;
  for (const auto& [suffix, s] : {std::pair<std::string_view, double>{"ms", 1e6}, {"us", 1e3}, {"ns", 1.0}, {"s", 1e9}})
    if (text.ends_with(suffix)) {
      text.remove_suffix(suffix.size());
      scale = s;
      break;
    }
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text.front())) || text.front() == '.')) return {};
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return {};
  const double ns = std::round(v * scale);
  // A year of ns fits easily; beyond ~292 years int64 does not.
  if (!(ns >= 0 && ns < 9e18)) return {};
  return static_cast<int64_t>(ns);
}

Result<RunSelector> ParseSelector(std::string_view text, const std::string& default_db) {
  RunSelector sel;
  sel.text = std::string(text);
  sel.db_path = default_db;
  if (text.empty()) return InvalidArgument("empty run selector");

  for (const std::string_view key : {"t", "range"}) {
    const std::string marker = "@" + std::string(key) + "=";
    const size_t at = text.rfind(marker);
    if (at == std::string_view::npos) continue;
    if (sel.window)
      return InvalidArgument("bad selector '" + sel.text + "': one of @t= and @range=, not both");
    CCT_ASSIGN_OR_RETURN(sel.window, ParseWindow(key, text.substr(at + marker.size()), sel.text));
    text = text.substr(0, at);
    if (text.empty()) return InvalidArgument("selector '" + sel.text + "' names no run before " + marker);
  }
  if (sel.window && text.find("@iter=") != std::string_view::npos)
    return InvalidArgument("bad selector '" + sel.text + "': @iter= and a time window (@t=, @range=) exclude each other");

  if (const size_t at = text.rfind("@iter="); at != std::string_view::npos) {
    const std::string_view spec = text.substr(at + 6);
    text = text.substr(0, at);
    IterationSpec it;
    if (spec == "median") {
      it.median = true;
    } else if (const size_t dots = spec.find(".."); dots != std::string_view::npos) {
      if (!ParseU32(spec.substr(0, dots), it.first) || !ParseU32(spec.substr(dots + 2), it.last) || it.first == 0 ||
          it.last < it.first)
        return InvalidArgument("bad iteration range '" + std::string(spec) + "' in '" + sel.text +
                               "' (expected @iter=K, @iter=K..J with 1 <= K <= J, or @iter=median)");
    } else {
      if (!ParseU32(spec, it.first) || it.first == 0)
        return InvalidArgument("bad iteration '" + std::string(spec) + "' in '" + sel.text +
                               "' (iterations are numbered from 1)");
      it.last = it.first;
    }
    sel.iteration = it;
    if (text.empty()) return InvalidArgument("selector '" + sel.text + "' names no run before @iter=");
  }

  if (text.substr(0, 4) != "tag:" && text.substr(0, 4) != "job:") {
    if (const size_t colon = text.find(':'); colon != std::string_view::npos && colon > 0) {
      const std::string prefix(text.substr(0, colon));
      if (IsFile(prefix) || prefix.ends_with(".db")) {
        sel.db_path = prefix;
        text = text.substr(colon + 1);
        if (text.empty()) return InvalidArgument("selector '" + sel.text + "' names a database but no run");
      }
    }
  }

  if (text.size() >= 4 && text.substr(text.size() - 4) == "/all") {
    text = text.substr(0, text.size() - 4);
    sel.all_processes = true;
    if (text.empty()) return InvalidArgument("selector '" + sel.text + "' names no run before /all");
    if (text.substr(0, 4) == "tag:")
      return InvalidArgument("bad selector '" + Shown(sel.text) +
                             "': /all follows one run (ID, latest, latest~N or NAME) or a job, not a tag group");
    if (sel.iteration)
      return InvalidArgument("bad selector '" + sel.text +
                             "': @iter= selects iterations of one run, not of every process of an invocation");
  }

  if (text.substr(0, 4) == "job:" || text == "latest-job" || text.substr(0, 11) == "latest-job/") {
    sel.kind = RunSelector::Kind::kJob;
    if (const size_t r = text.rfind("/r="); r != std::string_view::npos) {
      uint32_t rank = 0;
      if (!ParseU32(text.substr(r + 3), rank))
        return InvalidArgument("bad rank '" + Shown(std::string(text.substr(r + 3))) + "' in '" + Shown(sel.text) +
                               "' (expected job:ID/r=N, N a rank from 0)");
      sel.rank = rank;
      text = text.substr(0, r);
    }
    if (text == "latest-job") return sel;
    if (text.substr(0, 4) != "job:")
      return InvalidArgument("bad selector '" + Shown(sel.text) + "' (expected latest-job, latest-job/r=N or latest-job/all)");
    sel.job = std::string(text.substr(4));
    if (sel.job.empty())
      return InvalidArgument("bad selector '" + Shown(sel.text) + "': job: names no job (expected job:ID, e.g. job:1234)");
    if (sel.job.size() > kMaxJobIdBytes)
      return InvalidArgument("bad selector: its job id is " + std::to_string(sel.job.size()) + " bytes long (at most " +
                             std::to_string(kMaxJobIdBytes) + ")");
    return sel;
  }
  if (text.substr(0, 4) == "tag:") {
    const std::string_view kv = text.substr(4);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return InvalidArgument("bad tag selector '" + sel.text + "' (expected tag:KEY=VALUE)");
    sel.kind = RunSelector::Kind::kTag;
    sel.tag_key = std::string(kv.substr(0, eq));
    sel.tag_value = std::string(kv.substr(eq + 1));
  } else if (text == "latest") {
    sel.kind = RunSelector::Kind::kLatest;
  } else if (text.substr(0, 7) == "latest~") {
    sel.kind = RunSelector::Kind::kLatest;
    if (!ParseU32(text.substr(7), sel.back))
      return InvalidArgument("bad selector '" + sel.text + "' (expected latest~N)");
  } else if (uint32_t id = 0; ParseU32(text, id)) {
    sel.kind = RunSelector::Kind::kId;
    sel.id = id;
  } else {
    sel.kind = RunSelector::Kind::kName;
    sel.name = std::string(text);
  }
  return sel;
}

std::string DescribeRuns(const std::vector<RunMeta>& runs, size_t max) {
  if (runs.empty()) return "the database holds no runs";
  std::string out;
  const size_t start = runs.size() > max ? runs.size() - max : 0;
  if (start > 0) out = "... ";
  for (size_t i = start; i < runs.size(); ++i) {
    if (i > start) out += ", ";
    out += std::to_string(runs[i].id);
    if (!runs[i].name.empty()) out += " '" + runs[i].name + "'";
    out += " (" + std::string(RunStateName(EffectiveState(runs[i]))) + ")";
  }
  return out;
}

namespace {

using IdIndex = std::unordered_map<RunId, size_t>;

IdIndex IndexById(const std::vector<RunMeta>& runs) {
  IdIndex at;
  at.reserve(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) at.emplace(runs[i].id, i);
  return at;
}

// A run's invocation root: its root_run where that run exists, else up its
// parents to the first without one. `find(id)`: the run, or null when
// there is none. At most `max_steps` steps up: a damaged record's
// parent_run cycle must not hang a reader; *bounded (when given) tells
// whether the walk stopped there.
template <class Find>
RunId RootVia(const RunMeta& run, Find find, size_t max_steps, bool* bounded = nullptr) {
  const RunMeta* cur = &run;
  for (size_t steps = 0; steps <= max_steps; ++steps) {
    if (cur->root_run != 0 && cur->root_run != cur->id && find(cur->root_run)) return cur->root_run;
    if (cur->parent_run == 0 || cur->parent_run == cur->id) return cur->id;
    const RunMeta* parent = find(cur->parent_run);
    if (!parent) return cur->id;
    cur = parent;
  }
  if (bounded) *bounded = true;
  return cur->id;
}

// Run records read one at a time, each once: the runs a chain leads to
// outside what a caller listed. A record that does not read (not one that
// is missing) sets failed(): the caller leaves the answer to the full
// listing, which says what is damaged.
class RecordReader {
 public:
  explicit RecordReader(Database& db) : db_(db) {}
  const RunMeta* Find(RunId id) {
    auto [it, fresh] = read_.try_emplace(id);
    if (fresh) {
      auto run = db_.GetRun(id);
      if (run.ok()) it->second = std::move(run).value();
      else if (run.status().code() != cct::ErrorCode::kNotFound) failed_ = true;
    }
    return it->second ? &*it->second : nullptr;
  }
  bool failed() const { return failed_; }
  size_t size() const { return read_.size(); }

 private:
  Database& db_;
  std::unordered_map<RunId, std::optional<RunMeta>> read_;  // nullopt: no such run
  bool failed_ = false;
};

RunId RootIn(const RunMeta& run, const std::vector<RunMeta>& runs, const IdIndex& at) {
  return RootVia(
      run,
      [&](RunId id) -> const RunMeta* {
        auto it = at.find(id);
        return it == at.end() ? nullptr : &runs[it->second];
      },
      runs.size());
}

// The process tree of a database's runs: each run's invocation root, and
// whether the run is the root process itself (the root's run, or the run of
// an image the root process exec'd: same pid and host, linked to a run that
// ended in exec).
struct Invocations {
  std::vector<RunId> root;
  std::vector<char> root_process;
};

// Whether `run` is the image its parent's process exec'd (same pid and
// host, the parent's run ended in exec), not a process of its own.
bool ContinuesImage(const RunMeta& run, const RunMeta& parent) {
  return run.pid != 0 && run.pid == parent.pid && run.host == parent.host && parent.extra->contains("exec");
}

// Which of `runs` (in id order, `at` their index, `root` each one's
// invocation root) are a root process: the root's run, or that of an image
// a root process exec'd.
std::vector<char> RootProcessFlags(const std::vector<RunMeta>& runs, const IdIndex& at, const std::vector<RunId>& root) {
  std::vector<char> flags(runs.size(), 0);
  // Only a parent with a smaller id counts, so one pass in id order sees a
  // parent's flag before its child's.
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunMeta& r = runs[i];
    if (root[i] == r.id) {
      flags[i] = 1;
      continue;
    }
    auto p = at.find(r.parent_run);
    if (p == at.end() || p->second >= i) continue;
    flags[i] = flags[p->second] && ContinuesImage(r, runs[p->second]);
  }
  return flags;
}

Invocations Analyze(const std::vector<RunMeta>& runs) {
  const IdIndex at = IndexById(runs);
  Invocations inv;
  inv.root.resize(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) inv.root[i] = RootIn(runs[i], runs, at);
  inv.root_process = RootProcessFlags(runs, at, inv.root);
  return inv;
}

// The newest runs of a database, read a slice at a time from the top: the
// window holds every run from from() up, in id order, each with its
// invocation root (root()); the records a chain leads to below it are read
// one by one. failed(): a slice or a record did not read, or a parent chain
// did not end (a cycle): what only the full listing can judge, and report.
class NewestRuns {
 public:
  explicit NewestRuns(Database& db) : db_(db), below_(db) {
    const auto next = db.NextRunId();
    if (next.ok()) from_ = *next;
    else failed_ = true;
  }
  RunId from() const { return from_; }
  bool failed() const { return failed_ || below_.failed(); }
  const std::vector<RunMeta>& runs() const { return window_; }
  const std::vector<RunId>& root() const { return root_; }
  const IdIndex& at() const { return at_; }
  std::vector<RunMeta> TakeRuns() { return std::move(window_); }

  // Widens the window one step: down to the newest root a run in it names
  // below it — a recording's root is often stored before its processes, so
  // the window then holds exactly that recording — else by 64 ids the
  // first time and twice as many each time after. The runs it adds go to
  // the front of runs() (added() of them). False at the bottom, or when
  // they did not read.
  bool Widen() {
    added_ = 0;
    if (from_ <= 1 || failed()) return false;
    RunId lower = 0;
    for (const RunId r : root_)
      if (r < from_) lower = std::max(lower, r);
    span_ = span_ == 0 ? 64 : 2 * span_;
    if (lower == 0) lower = from_ > span_ ? from_ - span_ : 1;
    auto added = db_.ListRuns(lower, from_);
    if (!added.ok()) {
      failed_ = true;
      return false;
    }
    from_ = lower;
    const size_t n = added_ = added->size();
    window_.insert(window_.begin(), std::make_move_iterator(added->begin()), std::make_move_iterator(added->end()));
    at_ = IndexById(window_);
    // The roots of the runs above do not change: what their chains read
    // below the window then is what it now holds.
    std::vector<RunId> roots(n);
    for (size_t i = 0; i < n; ++i) roots[i] = Root(window_[i]);
    root_.insert(root_.begin(), roots.begin(), roots.end());
    return !failed();
  }
  size_t added() const { return added_; }
  // RootProcessFlags' answer for one run of the window, from its chain.
  bool IsRootProcess(size_t i) {
    const RunMeta* cur = &window_[i];
    for (size_t steps = 0; steps <= Bound(); ++steps) {
      if (Root(*cur) == cur->id) return true;
      const RunMeta* parent = cur->parent_run < cur->id ? Find(cur->parent_run) : nullptr;
      if (!parent || !ContinuesImage(*cur, *parent)) return false;
      cur = parent;
    }
    failed_ = true;
    return false;
  }

 private:
  size_t Bound() const { return window_.size() + below_.size() + 64; }
  const RunMeta* Find(RunId id) {
    if (auto it = at_.find(id); it != at_.end()) return &window_[it->second];
    if (id >= from_) return nullptr;  // the window holds every run from from_ up
    return below_.Find(id);
  }
  // RootVia over the database; a chain that does not end fails.
  RunId Root(const RunMeta& run) {
    bool bounded = false;
    const RunId root = RootVia(run, [&](RunId id) { return Find(id); }, Bound(), &bounded);
    if (bounded) failed_ = true;
    return root;
  }

  Database& db_;
  RecordReader below_;
  std::vector<RunMeta> window_;
  std::vector<RunId> root_;
  IdIndex at_;
  RunId from_ = 1, span_ = 0;
  size_t added_ = 0;
  bool failed_ = false;
};

// latest~N without reading a long history: the newest runs, in a window
// that widens until N + 1 invocation roots are among them. The answer is
// Analyze's over the whole database: every run newer than the root chosen
// is in the window, and a run's root-process flag comes from parents with
// smaller ids only (Analyze's rule), which for that root's invocation lie
// in the window too. nullopt where there is no such root, or the window
// failed(): the caller lists every run and says what it found.
std::optional<RunMeta> LatestInWindow(Database& db, size_t back) {
  NewestRuns w(db);
  while (w.Widen()) {
    const std::vector<RunMeta>& window = w.runs();
    // The invocation roots in the window, newest first.
    std::vector<size_t> roots;
    for (size_t i = window.size(); i-- > 0;)
      if (w.root()[i] == window[i].id) roots.push_back(i);
    if (back >= roots.size()) continue;
    const RunId chosen = window[roots[back]].id;
    const std::vector<char> root_process = RootProcessFlags(window, w.at(), w.root());
    for (size_t i = window.size(); i-- > 0;)
      if (root_process[i] && w.root()[i] == chosen) return window[i];
    return std::nullopt;  // not reached: the chosen root is a root process
  }
  return std::nullopt;
}

// NAME without reading a long history: the runs from the newest down, the
// window widening as for latest, until a root process with the name turns
// up; its flag is Analyze's (RootProcessFlags), read from its chain. The
// newest run with the name when the whole database holds no root process
// with it. nullopt when no run has the name, or the window failed(); *all
// then holds every run when they were all read (the caller's listing).
std::optional<RunMeta> NamedInWindow(Database& db, const std::string& name, std::vector<RunMeta>* all) {
  NewestRuns w(db);
  std::optional<RunMeta> newest_named;
  while (w.Widen()) {
    for (size_t i = w.added(); i-- > 0;) {
      const RunMeta& run = w.runs()[i];
      if (run.name != name) continue;
      if (!newest_named) newest_named = run;
      if (w.IsRootProcess(i) && !w.failed()) return run;
    }
  }
  if (w.failed()) return std::nullopt;
  if (newest_named) return newest_named;
  *all = w.TakeRuns();
  return std::nullopt;
}

// Each invocation's root process run (the newest image the root process
// exec'd), oldest invocation first.
std::vector<size_t> InvocationRootRuns(const std::vector<RunMeta>& runs, const Invocations& inv) {
  std::unordered_map<RunId, size_t> newest;  // invocation root → index of its root-process run
  for (size_t i = 0; i < runs.size(); ++i)
    if (inv.root_process[i]) newest[inv.root[i]] = i;
  std::vector<size_t> out;
  for (size_t i = 0; i < runs.size(); ++i)
    if (inv.root[i] == runs[i].id) {
      auto it = newest.find(runs[i].id);
      if (it != newest.end()) out.push_back(it->second);
    }
  return out;
}

// "1234.0 (4 ranks), 77 (2 ranks)": the jobs among `roots`, newest last.
std::string DescribeJobs(const std::vector<RunMeta>& runs, const std::vector<size_t>& roots) {
  std::vector<std::pair<std::string, std::set<int64_t>>> jobs;  // in order of first appearance
  std::unordered_map<std::string, size_t> at;
  for (size_t i : roots) {
    const std::string key = runs[i].launcher ? runs[i].launcher->JobKey() : "";
    if (key.empty()) continue;
    auto [it, fresh] = at.emplace(key, jobs.size());
    if (fresh) jobs.emplace_back(key, std::set<int64_t>{});
    jobs[it->second].second.insert(runs[i].launcher->rank);
  }
  if (jobs.empty()) return "the database holds no runs of a parallel job";
  std::string out = "jobs: ";
  const size_t start = jobs.size() > 12 ? jobs.size() - 12 : 0;
  for (size_t j = start; j < jobs.size(); ++j)
    out += (j > start ? ", " : "") + cct::CutToBytes(jobs[j].first, 80) + " (" + std::to_string(jobs[j].second.size()) +
           (jobs[j].second.size() == 1 ? " rank)" : " ranks)");
  return out;
}

// job:ID, latest-job and their /r=N: the root-process run of each rank's
// invocation (the newest one per rank), ordered by rank.
Result<std::vector<RunMeta>> SelectJob(const std::vector<RunMeta>& runs, const Invocations& inv, const RunSelector& sel,
                                       const std::string& db_path) {
  const std::vector<size_t> roots = InvocationRootRuns(runs, inv);
  auto key_of = [&](size_t i) { return runs[i].launcher ? runs[i].launcher->JobKey() : std::string(); };
  // The job: the newest one matching (job:1234 may name several steps).
  std::string key;
  for (size_t k = roots.size(); k-- > 0 && key.empty();) {
    const std::string have = key_of(roots[k]);
    if (!have.empty() && (sel.job.empty() || have == sel.job || runs[roots[k]].launcher->job_id == sel.job)) key = have;
  }
  const std::string what = sel.job.empty() ? std::string("latest-job") : "job " + Shown(sel.job);
  if (key.empty())
    return cct::NotFound("no run of " + what + " in " + db_path + "; " + DescribeJobs(runs, roots));
  std::map<int64_t, size_t> by_rank;  // rank → its newest invocation's run
  for (size_t i : roots)
    if (key_of(i) == key) by_rank[runs[i].launcher->rank] = i;
  std::vector<RunMeta> out;
  for (const auto& [rank, i] : by_rank)
    if (!sel.rank || rank == *sel.rank) out.push_back(runs[i]);
  if (out.empty()) {
    std::string ranks;
    if (by_rank.size() > 16) {
      ranks = std::to_string(by_rank.size()) + " from " + std::to_string(by_rank.begin()->first) + " to " +
              std::to_string(by_rank.rbegin()->first);
    } else {
      for (const auto& [rank, i] : by_rank) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    }
    return cct::NotFound("job " + Shown(key) + " in " + db_path + " has no rank " +
                         std::to_string(*sel.rank) + " (its ranks: " + ranks + ")");
  }
  return out;
}

}  // namespace

RunId InvocationRoot(const RunMeta& run, const std::vector<RunMeta>& runs) {
  return RootIn(run, runs, IndexById(runs));
}

Result<RunId> InvocationRoot(Database& db, const RunMeta& run) {
  // Up the chain record by record; a chain longer than any real process
  // tree (a parent_run cycle) or a record that does not read is the
  // listing's to judge.
  constexpr size_t kMaxSteps = 4096;
  RecordReader records(db);
  bool bounded = false;
  const RunId root = RootVia(run, [&](RunId id) { return records.Find(id); }, kMaxSteps, &bounded);
  if (!bounded && !records.failed()) return root;
  CCT_ASSIGN_OR_RETURN(std::vector<RunMeta> runs, db.ListRuns());
  return InvocationRoot(run, runs);
}

Result<std::vector<RunMeta>> SelectRuns(Database& db, const RunSelector& sel) {
  if (sel.kind == RunSelector::Kind::kId && !sel.all_processes) {
    // One record, not a long history's: the run itself, or the error below
    // that lists what there is.
    auto run = db.GetRun(sel.id);
    if (run.ok()) return std::vector<RunMeta>{std::move(run).value()};
    if (run.status().code() != cct::ErrorCode::kNotFound) return run.status();
  }
  if (sel.kind == RunSelector::Kind::kLatest && !sel.all_processes) {
    if (std::optional<RunMeta> latest = LatestInWindow(db, sel.back)) return std::vector<RunMeta>{std::move(*latest)};
  }
  std::vector<RunMeta> runs;
  if (sel.kind == RunSelector::Kind::kName && !sel.all_processes) {
    if (std::optional<RunMeta> named = NamedInWindow(db, sel.name, &runs)) return std::vector<RunMeta>{std::move(*named)};
  }
  if (runs.empty()) {
    CCT_ASSIGN_OR_RETURN(runs, db.ListRuns());
  }
  std::vector<RunMeta> out;
  const Invocations inv = sel.kind == RunSelector::Kind::kTag ? Invocations{} : Analyze(runs);
  switch (sel.kind) {
    case RunSelector::Kind::kId:
      for (const RunMeta& r : runs)
        if (r.id == sel.id) out.push_back(r);
      break;
    case RunSelector::Kind::kLatest: {
      // The invocations, newest first; each one's root process in its last
      // exec'd image (the newest run flagged root_process with that root).
      std::vector<RunId> roots;
      for (size_t i = runs.size(); i-- > 0;)
        if (inv.root[i] == runs[i].id) roots.push_back(runs[i].id);
      if (sel.back >= roots.size()) break;
      const RunId root = roots[sel.back];
      for (size_t i = runs.size(); i-- > 0;)
        if (inv.root_process[i] && inv.root[i] == root) {
          out.push_back(runs[i]);
          break;
        }
      break;
    }
    case RunSelector::Kind::kName: {
      // The newest root process with the name; else the newest run with it.
      for (int pass = 0; pass < 2 && out.empty(); ++pass)
        for (size_t i = runs.size(); i-- > 0;)
          if (runs[i].name == sel.name && (pass == 1 || inv.root_process[i])) {
            out.push_back(runs[i]);
            break;
          }
      break;
    }
    case RunSelector::Kind::kTag:
      for (const RunMeta& r : runs) {
        auto t = r.tags.find(sel.tag_key);
        if (t != r.tags.end() && t->second == sel.tag_value) out.push_back(r);
      }
      break;
    case RunSelector::Kind::kJob: {
      CCT_ASSIGN_OR_RETURN(out, SelectJob(runs, inv, sel, db.path()));
      break;
    }
  }
  if (out.empty())
    return cct::NotFound("no run matches '" + Shown(sel.text) + "' in " + db.path() +
                         "; runs: " + DescribeRuns(runs));
  if (sel.all_processes) {
    // Every run whose invocation root is that of a selected run.
    std::unordered_map<RunId, char> selected, roots;
    for (const RunMeta& r : out) selected.emplace(r.id, 1);
    for (size_t i = 0; i < runs.size(); ++i)
      if (selected.count(runs[i].id)) roots.emplace(inv.root[i], 1);
    out.clear();
    for (size_t i = 0; i < runs.size(); ++i)
      if (roots.count(inv.root[i])) out.push_back(runs[i]);
  }
  return out;
}

}  // namespace store
