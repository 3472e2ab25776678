// Linux perf: the text of `perf script` (its default layout and the -F
// comm,tid,pid,time,period,event,ip,sym,dso,srcline variants), or a
// perf.data file, which is handed to `perf script` in a child process whose
// output is parsed as it arrives.
//
// The text is line oriented (perf's builtin-script.c prints it):
//   HEADER      comm [pid/]tid [cpu] [time:] [period] event: [ip sym (dso)]
//   FRAME       \t addr sym[+off] (dso)          one per callchain entry, leaf first
//   SRCLINE     <spaces>file:line or dso[addr]    under a frame, with -F +srcline
//   (blank)                                      ends a sample
// A sample recorded without -g carries its one frame on the header line.
//
// Nothing is held but the sample being read and the tree: a 10 GB script
// costs what its tree costs plus one line (kMaxLineBytes at most).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>

#include "cct/metric.h"
#include "cct/tree_ops.h"
#include "importers/importer.h"
#include "output/progress.h"

extern char** environ;

namespace importers {

using cct::Result;
using cct::Status;

namespace {

bool IsPerfHex(std::string_view s) {
  if (s.empty() || s.size() > 16) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  return true;
}

bool IsPerfDigits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// "41968.231382:" (perf prints seconds.microseconds, or nanoseconds with --ns).
bool IsPerfTime(std::string_view s) {
  if (s.size() < 2 || s.back() != ':') return false;
  s.remove_suffix(1);
  const size_t dot = s.find('.');
  return dot != std::string_view::npos && IsPerfDigits(s.substr(0, dot)) && IsPerfDigits(s.substr(dot + 1));
}

// "8257" or "8257/8259" (pid/tid).
bool IsPerfTid(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos) return IsPerfDigits(s);
  return IsPerfDigits(s.substr(0, slash)) && IsPerfDigits(s.substr(slash + 1));
}

std::string_view TrimPerf(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e + 1 - b);
}

void SplitPerfTokens(std::string_view s, std::vector<std::string_view>& out) {
  out.clear();
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    if (i == s.size()) break;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
}

// The event without perf's modifiers ("cycles:u" -> "cycles"; a tracepoint's
// "sched:sched_switch" keeps its colon: its tail is not modifier letters).
std::string_view PerfEventBase(std::string_view event) {
  const size_t colon = event.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == event.size()) return event;
  if (event.substr(colon + 1).find_first_not_of("ukhIGHpPSDWeb") != std::string_view::npos) return event;
  return event.substr(0, colon);
}

// One callchain entry: "addr sym+0xoff (dso)" (sym and dso optional).
struct PerfFrame {
  std::string name;
  std::string module;
  std::string file;
  uint32_t line = 0;
  std::string addr;
  bool inlined = false;  // perf's "(inlined)" in place of the dso (DWARF callchains, --inline)
};

// Reads `perf script` text line by line into a tree. Not thread-safe; one
// per input.
class PerfScriptParser {
 public:
  PerfScriptParser(std::string name, const ImportOptions& options) : name_(std::move(name)), options_(options) {}

  Status Start() {
    CCT_ASSIGN_OR_RETURN(samples_, result_.tree.metrics().RegisterStandard("samples"));
    return Status::Ok();
  }

  Status Line(std::string_view line) {
    ++line_no_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string_view t = TrimPerf(line);
    if (t.empty()) return EndSample();
    if (line[0] == '\t') {
      if (state_ == State::kSkipping) return Status::Ok();
      if (state_ == State::kNone) return Bad("a callchain line outside a sample (expected a sample's header first)");
      PerfFrame f;
      CCT_RETURN_IF_ERROR(ParseFrame(t, f));
      if (state_ == State::kSkipping) return Status::Ok();
      frames_.push_back(std::move(f));
      last_was_frame_ = true;
      srcline_seen_ = false;
      return Status::Ok();
    }
    // A frame's srcline; perf may add one per inlined level: the first counts.
    if (last_was_frame_ && line[0] == ' ' && LooksLikeSrcline(t)) {
      if (state_ == State::kSample && !frames_.empty() && !srcline_seen_) ApplySrcline(t, frames_.back());
      srcline_seen_ = true;
      return Status::Ok();
    }
    if (state_ == State::kSkipping && line[0] == ' ' && LooksLikeSrcline(t)) return Status::Ok();
    return Header(t);
  }

  Result<ImportResult> Finish() {
    CCT_RETURN_IF_ERROR(EndSample());
    if (result_.records == 0 && result_.skipped == 0) return cct::BadInput(name_ + ": no perf samples in the input");
    return std::move(result_);
  }

 private:
  enum class State { kNone, kSample, kSkipping };

  // A malformed line: an error, or (--skip-bad-lines) the sample it is in
  // dropped whole.
  Status Bad(const std::string& why) {
    const std::string where = name_ + ":" + std::to_string(line_no_);
    if (!options_.skip_bad_lines) return cct::BadInput(where + ": " + why);
    if (result_.skipped++ == 0) result_.first_skip = where + ": " + why;
    state_ = State::kSkipping;
    frames_.clear();
    last_was_frame_ = false;
    return Status::Ok();
  }

  // "file:line", "??:0", or "dso[addr]" (perf's srcline when it has no line).
  static bool LooksLikeSrcline(std::string_view t) {
    if (t.size() > 2 && t.back() == ']') {
      const size_t open = t.rfind('[');
      return open != std::string_view::npos && open > 0 && IsPerfHex(t.substr(open + 1, t.size() - open - 2));
    }
    const size_t colon = t.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    const std::string_view n = t.substr(colon + 1);
    return n == "?" || IsPerfDigits(n);
  }

  static void ApplySrcline(std::string_view t, PerfFrame& f) {
    const size_t colon = t.rfind(':');
    if (colon == std::string_view::npos) return;  // dso[addr]
    const std::string_view file = t.substr(0, colon);
    uint32_t line = 0;
    const std::string_view n = t.substr(colon + 1);
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), line);
    if (ec != std::errc() || end != n.data() + n.size() || line == 0 || file == "??") return;  // perf knew none
    f.file = std::string(file);
    f.line = line;
  }

  // "addr sym+0xoff (dso)": the symbol's name (perf's "[unknown]" becomes
  // "dso+0xaddr", as the collector names code without symbols), the dso as
  // the module. Kernel frames keep perf's "[kernel.kallsyms]" module.
  Status ParseFrame(std::string_view t, PerfFrame& f) {
    size_t sp = t.find_first_of(" \t");
    const std::string_view addr = t.substr(0, sp);
    if (!IsPerfHex(addr))
      return Bad("'" + std::string(addr.substr(0, 40)) + "' is not a callchain address (expected 'addr symbol (dso)')");
    std::string_view rest = sp == std::string_view::npos ? std::string_view() : TrimPerf(t.substr(sp));
    std::string_view dso;
    if (!rest.empty() && rest.back() == ')') {
      int depth = 0;
      size_t open = std::string_view::npos;
      for (size_t i = rest.size(); i-- > 0;) {
        if (rest[i] == ')') ++depth;
        else if (rest[i] == '(' && --depth == 0) {
          open = i;
          break;
        }
      }
      if (open == std::string_view::npos) return Bad("unbalanced parentheses around the dso");
      dso = rest.substr(open + 1, rest.size() - open - 2);
      rest = TrimPerf(rest.substr(0, open));
    }
    std::string_view sym = rest;
    // symoff: "+0x64"
    if (const size_t plus = sym.rfind("+0x"); plus != std::string_view::npos && plus > 0 && IsPerfHex(sym.substr(plus + 3)))
      sym = sym.substr(0, plus);
    f.addr = std::string(addr);
    f.inlined = dso == "inlined";
    f.module = f.inlined ? std::string() : std::string(dso);
    if (sym.empty() || sym == "[unknown]") {
      const std::string_view base = dso.empty() ? std::string_view("[unknown]") : cct::BaseName(dso);
      std::string_view a = addr;
      while (a.size() > 1 && a[0] == '0') a.remove_prefix(1);
      f.name = std::string(base) + "+0x" + std::string(a);
    } else {
      f.name = std::string(sym);
    }
    return Status::Ok();
  }

  Status Header(std::string_view t) {
    CCT_RETURN_IF_ERROR(EndSample());
    SplitPerfTokens(t, tokens_);
    // perf's other records (--show-task-events, --show-mmap-events, ...):
    // "comm tid time: PERF_RECORD_MMAP2 ...", not samples.
    for (const std::string_view tok : tokens_) {
      if (tok.starts_with("PERF_RECORD_")) {
        state_ = State::kSkipping;
        return Status::Ok();
      }
      if (tok.size() > 1 && tok.back() == ':' && !IsPerfTime(tok)) break;
    }
    size_t e = 0;
    for (; e < tokens_.size(); ++e) {
      const std::string_view tok = tokens_[e];
      if (tok.size() > 1 && tok.back() == ':' && !IsPerfTime(tok)) break;
    }
    if (e == tokens_.size())
      return Bad("expected a sample's header 'comm [pid/]tid [time:] [period] event:' or a callchain line");
    const std::string_view event = tokens_[e].substr(0, tokens_[e].size() - 1);
    // Backwards from the event: [period] [time:] [[cpu]] tid, then comm.
    size_t j = e;
    std::optional<uint64_t> period;
    auto take_period = [&]() -> Status {
      const std::string_view p = tokens_[j - 1];
      uint64_t v = 0;
      const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
      if (ec != std::errc() || end != p.data() + p.size()) return Bad("period '" + std::string(p.substr(0, 40)) + "' is out of range");
      period = v;
      --j;
      return Status::Ok();
    };
    if (j >= 2 && IsPerfDigits(tokens_[j - 1]) && (IsPerfTime(tokens_[j - 2]) || IsPerfTid(tokens_[j - 2]))) {
      CCT_RETURN_IF_ERROR(take_period());
      if (state_ == State::kSkipping) return Status::Ok();
    }
    if (j >= 1 && IsPerfTime(tokens_[j - 1])) --j;
    if (j >= 1 && tokens_[j - 1].size() >= 3 && tokens_[j - 1].front() == '[' && tokens_[j - 1].back() == ']' &&
        IsPerfDigits(tokens_[j - 1].substr(1, tokens_[j - 1].size() - 2)))
      --j;
    if (j == 0 || !IsPerfTid(tokens_[j - 1]))
      return Bad("no thread id before the event '" + std::string(event.substr(0, 80)) +
                 "' (perf script needs the tid field)");
    const std::string_view tid = tokens_[--j];
    std::string comm;
    for (size_t k = 0; k < j; ++k) {
      if (k) comm += ' ';
      comm += tokens_[k];
    }
    auto metric = EventMetric(event, period.has_value());
    if (!metric.ok()) return Bad(metric.status().message());
    metric_ = *metric;
    thread_ = ThreadNode(comm, tid);
    period_ = period.value_or(0);
    state_ = State::kSample;
    frames_.clear();
    last_was_frame_ = false;
    // Without -g (or with -G) the sample's one frame follows the event.
    if (e + 1 < tokens_.size() && IsPerfHex(tokens_[e + 1])) {
      const size_t at = static_cast<size_t>(tokens_[e + 1].data() - t.data());
      PerfFrame f;
      CCT_RETURN_IF_ERROR(ParseFrame(t.substr(at), f));
      if (state_ == State::kSkipping) return Status::Ok();
      frames_.push_back(std::move(f));
      last_was_frame_ = true;
      srcline_seen_ = false;
    }
    return Status::Ok();
  }

  // Threads by (pid/tid, comm): named by comm, the second thread with a
  // comm already used "comm (thread 2)" and so on, in order of appearance
  // (no tids in names: a node's path identity carries no ids).
  cct::NodeId ThreadNode(const std::string& comm, std::string_view tid) {
    std::string key(tid);
    key += '\x1f';
    key += comm;
    auto it = threads_.find(key);
    if (it != threads_.end()) return it->second;
    const std::string shown = comm.empty() ? "<unknown thread>" : comm;
    const int n = ++comm_uses_[shown];
    const std::string name = n == 1 ? shown : shown + " (thread " + std::to_string(n) + ")";
    cct::Tree& tree = result_.tree;
    const cct::NodeId node = tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kThread, name));
    threads_.emplace(std::move(key), node);
    return node;
  }

  // cpu-clock and task-clock periods are nanoseconds of the thread's CPU
  // time: the collector's "cputime" (the first of them seen; the other keeps
  // its own name, in ns, rather than being added twice). Other events are
  // counts named after the event. Without a period only "samples" counts.
  Result<cct::MetricId> EventMetric(std::string_view event, bool has_period) {
    if (!has_period) return cct::kNoMetric;
    const std::string base(PerfEventBase(event));
    auto it = event_metrics_.find(base);
    if (it != event_metrics_.end()) return it->second;
    cct::MetricRegistry& reg = result_.tree.metrics();
    cct::MetricId id = cct::kNoMetric;
    const bool clock = base == "cpu-clock" || base == "task-clock";
    if (clock && !cputime_taken_) {
      CCT_ASSIGN_OR_RETURN(id, reg.RegisterStandard("cputime"));
      cputime_taken_ = true;
    } else {
      cct::MetricDesc desc;
      // A catalog name ("samples", "cputime", ...) means something else
      // there: an event called so is kept apart.
      desc.name = cct::FindStandardMetric(base) || reg.Find(base) != cct::kNoMetric ? "perf:" + base : base;
      desc.unit = clock ? cct::Unit::kNanoseconds : cct::Unit::kCount;
      desc.kind = cct::MetricKind::kAdditive;
      desc.description = "perf event " + base + (clock ? " (period in ns)" : " (sum of sample periods)");
      auto r = reg.Register(desc);
      if (!r.ok()) return cct::BadInput("event '" + base.substr(0, 80) + "': " + r.status().message());
      id = *r;
    }
    event_metrics_.emplace(base, id);
    return id;
  }

  // Callchains are leaf first: the path is built from the last frame.
  Status EndSample() {
    const State s = state_;
    state_ = State::kNone;
    last_was_frame_ = false;
    if (s != State::kSample) {
      frames_.clear();
      return Status::Ok();
    }
    cct::Tree& tree = result_.tree;
    // An inlined frame is listed just inside the function it was inlined
    // into, at the same address: it takes that function's module.
    for (size_t i = frames_.size(); i-- > 0;)
      if (frames_[i].inlined && i + 1 < frames_.size() && frames_[i + 1].addr == frames_[i].addr)
        frames_[i].module = frames_[i + 1].module;
    cct::NodeId node = thread_;
    for (size_t i = frames_.size(); i-- > 0;)
      node = tree.InternChild(node, tree.InternFrame(cct::FrameKind::kFunction, frames_[i].name, frames_[i].module,
                                                     {}, 0, frames_[i].inlined ? cct::kFrameInlined : 0));
    if (!frames_.empty() && frames_.front().line != 0) {
      const PerfFrame& leaf = frames_.front();
      node = tree.InternChild(node, tree.InternFrame(cct::FrameKind::kLine, cct::LineName(leaf.file, leaf.line),
                                                     leaf.module, leaf.file, leaf.line));
    }
    tree.AddValue(node, samples_, 1);
    if (metric_ != cct::kNoMetric && period_ != 0) tree.AddValue(node, metric_, static_cast<double>(period_));
    ++result_.records;
    frames_.clear();
    return Status::Ok();
  }

  std::string name_;
  const ImportOptions& options_;
  ImportResult result_;
  cct::MetricId samples_ = cct::kNoMetric;
  std::map<std::string, cct::MetricId> event_metrics_;
  bool cputime_taken_ = false;
  std::unordered_map<std::string, cct::NodeId> threads_;
  std::map<std::string, int> comm_uses_;
  size_t line_no_ = 0;
  State state_ = State::kNone;
  bool last_was_frame_ = false;  // the previous line was a frame or its srcline
  bool srcline_seen_ = false;    // ... and that frame's srcline was read
  cct::NodeId thread_ = cct::kRootNode;
  cct::MetricId metric_ = cct::kNoMetric;
  uint64_t period_ = 0;
  std::vector<PerfFrame> frames_;
  std::vector<std::string_view> tokens_;
};

// Reads perf's output to its end into the splitter.
Status PumpPerfText(int fd, const std::string& path, LineSplitter& lines, output::Progress& progress) {
  std::string buf(size_t{1} << 20, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return cct::IoError(path + ": " + std::strerror(errno));
    if (n == 0) break;
    CCT_RETURN_IF_ERROR(lines.Feed(std::string_view(buf.data(), static_cast<size_t>(n))));
    progress.AddBytes(static_cast<uint64_t>(n));
    progress.Tick();
  }
  return lines.End();
}

// `perf script` on a perf.data file, its stdout parsed as it comes. perf's
// stderr goes to an unlinked temporary file: its first line is the error
// when perf fails (a pipe would need polling both).
Status RunPerfScript(const std::string& path, LineSplitter& lines) {
  FILE* err = std::tmpfile();
  if (!err) return cct::IoError(path + ": cannot create a temporary file for perf's messages: " + std::strerror(errno));
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    std::fclose(err);
    return cct::IoError(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<std::string> args = {"perf", "--no-pager", "script", "-i", path,
                                   "-F", "comm,pid,tid,time,period,event,ip,sym,dso"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view v(*e);
    if (v.starts_with("LC_ALL=") || v.starts_with("PAGER=") || v.starts_with("PERF_PAGER=")) continue;
    env_store.emplace_back(v);
  }
  env_store.push_back("LC_ALL=C");
  env_store.push_back("PERF_PAGER=cat");
  std::vector<char*> envp;
  for (std::string& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, fileno(err), STDERR_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, "perf", &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    std::fclose(err);
    if (rc == ENOENT)
      return cct::InvalidArgument(path + ": a perf.data file; reading it needs perf (Debian: linux-perf), which is "
                                  "not on PATH (or import the text of `perf script`)");
    return cct::IoError(path + ": cannot run perf: " + std::strerror(rc));
  }
  // perf's output has no size to measure against: the line shows bytes read.
  output::Progress progress = output::Progress::ForStderr("importing " + path);
  Status parsed = PumpPerfText(out[0], path, lines, progress);
  progress.Finish();
  if (!parsed.ok()) ::kill(pid, SIGTERM);  // stop it rather than read what is left
  ::close(out[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  std::string first_err;
  std::rewind(err);
  char line[512];
  while (std::fgets(line, sizeof line, err)) {
    std::string_view l = TrimPerf(std::string_view(line).substr(0, std::strcspn(line, "\n")));
    if (!l.empty()) {
      first_err = std::string(l);
      break;
    }
  }
  std::fclose(err);
  if (!parsed.ok()) return parsed;
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127 && first_err.empty())
    return cct::InvalidArgument(path + ": a perf.data file; reading it needs perf (Debian: linux-perf)");
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    const std::string how = WIFEXITED(wstatus) ? "exit status " + std::to_string(WEXITSTATUS(wstatus))
                                               : "signal " + std::to_string(WTERMSIG(wstatus));
    return cct::BadInput(path + ": perf script failed (" + how + ")" + (first_err.empty() ? "" : ": " + first_err));
  }
  return Status::Ok();
}

}  // namespace

Result<ImportResult> ParsePerfScript(std::string_view text, const std::string& name, const ImportOptions& options) {
  PerfScriptParser parser(name, options);
  CCT_RETURN_IF_ERROR(parser.Start());
  LineSplitter lines(name, [&parser](std::string_view line) { return parser.Line(line); });
  CCT_RETURN_IF_ERROR(lines.Feed(text));
  CCT_RETURN_IF_ERROR(lines.End());
  return parser.Finish();
}

Result<ImportResult> ImportPerf(const std::string& path, const ImportOptions& options) {
  CCT_ASSIGN_OR_RETURN(auto file, InputFileBuf::Open(path));
  CCT_ASSIGN_OR_RETURN(const std::string_view first, file->Next());
  PerfScriptParser parser(path, options);
  CCT_RETURN_IF_ERROR(parser.Start());
  LineSplitter lines(path, [&parser](std::string_view line) { return parser.Line(line); });
  // The magic decides: perf.data (PERFILE2; PERFFILE for version 1) goes
  // through perf, anything else is read as perf script's text.
  const std::string_view magic = first.substr(0, 8);
  if (magic == "PERFILE2" || magic == "PERFFILE") {
    file.reset();
    CCT_RETURN_IF_ERROR(RunPerfScript(path, lines));
  } else {
    CCT_RETURN_IF_ERROR(lines.Feed(first));
    CCT_RETURN_IF_ERROR(lines.FeedAll(*file));
  }
  return parser.Finish();
}

Result<ImportReport> ImportPerfRun(const ImportRequest& request) {
  CCT_RETURN_IF_ERROR(RejectOptions(request, {"metric", "unit"}, "perf"));
  return ImportNewRun(request, "perf", &ImportPerf);
}

}  // namespace importers
