// The record library (src/record/): cct-record's behaviour without its
// option parsing. The tool itself is exercised end to end by
// tests/collector/record_test.cc.
#include <doctest/doctest.h>

#include <set>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "record/inbox.h"
#include "record/record.h"
#include "record/spool.h"
#include "store/run_file.h"
#include "store/database.h"
#include "tests/test_util.h"

namespace {

std::vector<char*> Argv(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (auto& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

}  // namespace

TEST_CASE("record: SplitArgs separates cct-record's options from the program") {
  std::vector<std::string> args = {"cct-record", "-o", "x.db", "--no-follow", "--freq", "99", "prog", "-v", "--", "a"};
  auto argv = Argv(args);
  std::vector<std::string> ours, program;
  const std::set<std::string> with_value = {"-o", "--output", "--freq", "--clock"};
  record::SplitArgs(static_cast<int>(args.size()), argv.data(), with_value, ours, program);
  CHECK(ours == std::vector<std::string>{"-o", "x.db", "--no-follow", "--freq", "99"});
  CHECK(program == std::vector<std::string>{"prog", "-v", "--", "a"});

  std::vector<std::string> args2 = {"cct-record", "--clock", "wall", "--", "-dash-prog", "x"};
  auto argv2 = Argv(args2);
  ours.clear();
  program.clear();
  record::SplitArgs(static_cast<int>(args2.size()), argv2.data(), with_value, ours, program);
  CHECK(ours == std::vector<std::string>{"--clock", "wall"});
  CHECK(program == std::vector<std::string>{"-dash-prog", "x"});
}

TEST_CASE("record: RandomSession and AbsolutePath") {
  const std::string a = record::RandomSession(), b = record::RandomSession();
  CHECK(a != b);
  REQUIRE(a.size() > 17);
  CHECK(a.find_first_not_of("0123456789abcdef") == 16);
  CHECK(a.substr(16) == "-" + std::to_string(getpid()));
  CHECK(record::AbsolutePath("/x/y") == "/x/y");
  const std::string rel = record::AbsolutePath("some/file");
  CHECK(rel.front() == '/');
  CHECK(rel.size() > std::string("/some/file").size());
  CHECK(rel.substr(rel.size() - 10) == "/some/file");
}

TEST_CASE("record: ChildEnvironment preloads the collector and drops stale recording variables") {
  std::vector<std::string> entries = {"HOME=/h", "CCT_RECORD_DB=/old.db", "NVTX_INJECTION64_PATH=/old.so",
                                      "CUDA_INJECTION64_PATH=/old.so", "LD_PRELOAD=/other.so"};
  auto environ_like = Argv(entries);
  collector::CollectorConfig config;
  config.db_path = "/tmp/r.db";
  config.gpu = collector::GpuTracing::kOff;
  const auto env = record::ChildEnvironment(environ_like.data(), "/lib/libcct-collector.so", true, config);
  CHECK(Contains(env, "HOME=/h"));
  CHECK(Contains(env, "LD_PRELOAD=/lib/libcct-collector.so:/other.so"));
  CHECK(Contains(env, "NVTX_INJECTION64_PATH=/lib/libcct-collector.so"));
  CHECK_FALSE(Contains(env, "NVTX_INJECTION64_PATH=/old.so"));
  CHECK_FALSE(Contains(env, "CCT_RECORD_DB=/old.db"));
  for (const auto& e : env) CHECK(e.rfind("CUDA_INJECTION64_PATH=", 0) != 0);  // --gpu off
  bool has_config = false;
  for (const auto& e : env) has_config |= e.rfind("CCT_RECORD_", 0) == 0 && e.find("/tmp/r.db") != std::string::npos;
  CHECK(has_config);

  config.gpu = collector::GpuTracing::kAuto;
  const auto gpu_env = record::ChildEnvironment(environ_like.data(), "/lib/c.so", false, config);
  CHECK(Contains(gpu_env, "CUDA_INJECTION64_PATH=/lib/c.so"));
  CHECK(Contains(gpu_env, "LD_PRELOAD=/lib/c.so:/other.so"));
  for (const auto& e : gpu_env) CHECK(e.rfind("NVTX_INJECTION64_PATH=", 0) != 0);
}

TEST_CASE("record: RunProgram reports exit status, signals and exec failures") {
  auto ok = record::RunProgram({"sh", "-c", "exit 3"}, {"PATH=/usr/bin:/bin"});
  REQUIRE(ok.ok());
  CHECK(ok->exec_errno == 0);
  CHECK(WIFEXITED(ok->status));
  CHECK(WEXITSTATUS(ok->status) == 3);
  CHECK(ok->start_time_ns > 1'600'000'000'000'000'000);  // a Unix time, after 2020
  CHECK(ok->duration_ns > 0);

  auto killed = record::RunProgram({"sh", "-c", "kill -KILL $$"}, {"PATH=/usr/bin:/bin"});
  REQUIRE(killed.ok());
  CHECK(WIFSIGNALED(killed->status));
  CHECK(WTERMSIG(killed->status) == SIGKILL);

  auto missing = record::RunProgram({"/nonexistent/cct-no-such-program"}, {});
  REQUIRE(missing.ok());
  CHECK(missing->exec_errno == ENOENT);
}

namespace {

// The processes whose parent is this one, from /proc: state ('Z': ended,
// not reaped) and name.
struct ChildProcess {
  pid_t pid = 0;
  char state = '?';
  std::string comm;
};
std::vector<ChildProcess> ChildrenOfThisProcess() {
  std::vector<ChildProcess> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    ChildProcess c;
    pid_t ppid = 0;
    rest >> c.state >> ppid;
    if (ppid != getpid()) continue;
    c.pid = static_cast<pid_t>(std::stol(name));
    c.comm = stat.substr(open + 1, close - open - 1);
    out.push_back(c);
  }
  return out;
}

}  // namespace

TEST_CASE("record: RunProgram reaps the program's orphans as they end and says whether any still runs") {
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
  auto alone = record::RunProgram({"/bin/true"}, env);
  REQUIRE(alone.ok());
  CHECK_FALSE(alone->descendants_left);

  // Two subshells each leave a short `true` behind, orphaned at once and
  // re-parented to this process; the shell then sleeps, and at its exit
  // leaves `sleep 30` running. With and without a tick (the wait loop, and
  // the plain wait).
  for (const double tick_s : {0.15, 0.0}) {
    CAPTURE(tick_s);
    std::vector<std::vector<ChildProcess>> at_ticks;
    std::atomic<bool> sampling{true};
    std::vector<ChildProcess> seen_meanwhile;
    std::thread watcher;
    if (tick_s == 0) {
      // No tick to look from: a thread looks at 0.3 s, when both `true`s
      // have long ended and the shell still sleeps.
      watcher = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        seen_meanwhile = ChildrenOfThisProcess();
      });
    }
    testutil::TempDir scratch;
    const std::string pid_file = scratch / "pid";
    auto left = record::RunProgram({"sh", "-c", "echo $$ > " + pid_file + "; (true &); (true &); sleep 0.6; sleep 30 & exit 0"}, env,
                                   tick_s > 0 ? std::function<void()>([&] { at_ticks.push_back(ChildrenOfThisProcess()); })
                                              : std::function<void()>(),
                                   tick_s);
    if (watcher.joinable()) {
      watcher.join();
      at_ticks.push_back(seen_meanwhile);
    }
    REQUIRE(left.ok());
    CHECK(WIFEXITED(left->status));
    REQUIRE_FALSE(at_ticks.empty());
    // Never an unreaped `true`; the shell itself may have just ended at
    // the last tick (RunProgram reaps it after).
    pid_t program = 0;
    std::ifstream(pid_file) >> program;
    REQUIRE(program > 0);
    for (const auto& children : at_ticks)
      for (const ChildProcess& c : children)
        if (c.pid != program) CHECK(c.state != 'Z');
    CHECK(left->descendants_left);
    // The shell's background job is this process's child now, and runs (as
    // `sleep`, or still as the shell's fork on a loaded machine).
    pid_t sleeper = 0;
    size_t running = 0;
    for (const ChildProcess& c : ChildrenOfThisProcess())
      if (c.state != 'Z') sleeper = c.pid, ++running;
    CHECK(running == 1);
    REQUIRE(sleeper > 0);
    kill(sleeper, SIGKILL);
    CHECK(waitpid(sleeper, nullptr, 0) == sleeper);
    // A subreaper only while RunProgram ran.
    int subreaper = -1;
    REQUIRE(prctl(PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0) == 0);
    CHECK(subreaper == 0);
  }
}

TEST_CASE("record: RunProgram's program inherits an ignored SIGCHLD as ignored") {
  testutil::TempDir dir;
  const std::string out = dir / "sigign";
  struct sigaction ign {}, before {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  REQUIRE(sigaction(SIGCHLD, &ign, &before) == 0);
  // awk reads its own status (a shell would reset SIGCHLD for itself).
  auto r = record::RunProgram({"awk", "/^SigIgn:/ { print > \"" + out + "\" }", "/proc/self/status"},
                              {"PATH=/usr/bin:/bin"});
  struct sigaction after {};
  sigaction(SIGCHLD, &before, &after);
  REQUIRE(r.ok());
  CHECK(WIFEXITED(r->status));
  // And RunProgram left the caller's disposition as it found it.
  CHECK(reinterpret_cast<void*>(after.sa_handler) == reinterpret_cast<void*>(SIG_IGN));
  std::ifstream in(out);
  std::string label, mask;
  in >> label >> mask;
  REQUIRE(label == "SigIgn:");
  CHECK(((std::stoull(mask, nullptr, 16) >> (SIGCHLD - 1)) & 1) == 1);
}

TEST_CASE("record: Summarize marks a run killed by SIGKILL as crashed and prints its line") {
  testutil::TempDir dir;
  const std::string db_path = dir / "r.db";
  store::RunMeta m;
  m.name = "victim";
  m.pid = 4242;
  m.state = store::RunState::kRecording;
  m.extra["session"] = "s1";
  m.diagnostics["samples"] = 10;
  m.diagnostics["partial_samples"] = 1;
  m.diagnostics["threads"] = 1;
  {
    auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    REQUIRE((*db)->CreateRun(m).ok());
  }
  std::set<store::RunId> reported;
  std::ostringstream out;
  // waitpid status of a process killed by SIGKILL.
  record::Summarize(db_path, "s1", 4242, SIGKILL, record::ChildRun{}, reported, out);
  CHECK(reported.size() == 1);
  CHECK(out.str().rfind("cct-record: run ", 0) == 0);
  CHECK(out.str().find("'victim'") != std::string::npos);
  CHECK(out.str().find("1 thread, 10 samples (10.0% partial), crashed, killed by signal 9 -> " + db_path + "\n") !=
        std::string::npos);
  auto db = store::Database::Open(db_path, store::Database::Mode::kRead);
  REQUIRE(db.ok());
  auto runs = (*db)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  CHECK(runs->front().state == store::RunState::kCrashed);
  REQUIRE(runs->front().term_signal.has_value());
  CHECK(*runs->front().term_signal == SIGKILL);

  // Reported once: a second call prints nothing.
  std::ostringstream again;
  record::Summarize(db_path, "s1", 4242, SIGKILL, record::ChildRun{}, reported, again);
  CHECK(again.str().empty());

  // From an id on: a session's runs created before it are not read.
  m.name = "second";
  m.pid = 4343;
  {
    auto w = store::Database::Open(db_path, store::Database::Mode::kWrite);
    REQUIRE(w.ok());
    REQUIRE((*w)->CreateRun(m).ok());
    REQUIRE((*w)->CreateRun(m).ok());
  }
  std::set<store::RunId> fresh;
  std::ostringstream from_three;
  record::Summarize(db_path, "s1", 4343, 0, record::ChildRun{}, fresh, from_three, 3);
  CHECK(fresh == std::set<store::RunId>{3});
  CHECK(from_three.str().rfind("cct-record: run 3 'second' ", 0) == 0);
}

TEST_CASE("record: Summarize gives a build's many runs one line, keeping the program's and the failed ones") {
  testutil::TempDir dir;
  const std::string db_path = dir / "b.db";
  // The program (pid 100), 30 compiler runs of which 3 exited 1, one run
  // killed by SIGSEGV, 12 assemblers: 44 runs, each with 2 samples.
  {
    auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    auto add = [&](const std::string& name, pid_t pid, int exit_code, int signal) {
      store::RunMeta m;
      m.name = name;
      m.pid = pid;
      m.state = signal ? store::RunState::kCrashed : store::RunState::kComplete;
      if (signal) m.term_signal = signal;
      else m.exit_code = exit_code;
      m.extra["session"] = "build";
      m.diagnostics["samples"] = 2;
      m.diagnostics["threads"] = 1;
      REQUIRE((*db)->CreateRun(m).ok());
    };
    add("make", 100, 0, 0);
    for (int i = 0; i < 30; ++i) add("cc1", 200 + i, i < 3 ? 1 : 0, 0);
    add("cc1", 300, 0, SIGSEGV);
    for (int i = 0; i < 12; ++i) add("as", 400 + i, 0, 0);
  }
  std::set<store::RunId> reported;
  std::ostringstream out;
  record::Summarize(db_path, "build", 100, 0, record::ChildRun{}, reported, out);
  CHECK(reported.size() == 44);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  // The program, the three failed compilers, the crashed one, and the rest
  // counted: 27 + 12 = 39, their names most frequent first.
  REQUIRE(lines.size() == 6);
  CHECK(lines[0].rfind("cct-record: run 1 'make' ", 0) == 0);
  for (int i = 1; i <= 3; ++i) CHECK(lines[i].find("'cc1'") != std::string::npos);
  for (int i = 1; i <= 3; ++i) CHECK(lines[i].find(", exit 1 -> ") != std::string::npos);
  CHECK(lines[4].find("killed by signal 11") != std::string::npos);
  CHECK(lines[5] == "cct-record: 39 more runs ('cc1' \u00d727, 'as' \u00d712), 78 samples, all complete -> " + db_path +
                        " (cct-query runs 1/all lists the recording's runs)");

  // Past 16 failed runs, the rest are counted as failed.
  {
    auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    for (int i = 0; i < 20; ++i) {
      store::RunMeta m;
      m.name = "ld";
      m.pid = 500 + i;
      m.state = store::RunState::kComplete;
      m.exit_code = 2;
      m.extra["session"] = "link";
      REQUIRE((*db)->CreateRun(m).ok());
    }
  }
  std::ostringstream link;
  record::Summarize(db_path, "link", 1, 0, record::ChildRun{}, reported, link, 45);
  const std::string text = link.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 17);
  CHECK(text.find("cct-record: 4 more runs ('ld' \u00d74), 0 samples, all complete, 4 failed -> ") != std::string::npos);
}

TEST_CASE("record: DescribeChild names and masks the program as its collector would") {
  collector::CollectorConfig config;
  config.tags = {{"k", "v"}};
  record::ChildResult res;
  res.start_time_ns = 11;
  res.duration_ns = 22;
  const std::vector<std::string> program{"/opt/bin/train", "--password=hunter2", "--steps", "3"};
  const record::ChildRun plain = record::DescribeChild(config, program, res);
  CHECK(plain.name == "train");
  CHECK(plain.command[1] != "--password=hunter2");
  CHECK(plain.command[3] == "3");
  CHECK(plain.tags == config.tags);
  CHECK(plain.start_time_ns == 11);
  CHECK(plain.duration_ns == 22);
  config.name = "mine";
  config.keep_args = true;
  const record::ChildRun kept = record::DescribeChild(config, program, res);
  CHECK(kept.name == "mine");
  CHECK(kept.command == program);
}

TEST_CASE("record: a program that left no run (killed before its collector wrote) gets one without a profile") {
  testutil::TempDir dir;
  const std::string db_path = dir / "n.db";
  record::ChildRun what;
  what.name = "early";
  what.tags = {{"case", "kill"}};
  what.command = {"prog", "--token=***"};
  what.start_time_ns = 1'700'000'000'000'000'000;
  what.duration_ns = 25'000'000;
  std::set<store::RunId> reported;
  std::ostringstream out;
  record::Summarize(db_path, "s2", 5151, SIGKILL, what, reported, out);  // waitpid status: killed by SIGKILL
  CHECK(out.str().find("run 1 'early': the program was killed by signal 9 before its collector wrote a profile") !=
        std::string::npos);
  // One that ended by itself without writing: its collector declined and
  // said why (--gpu on could not start, a full disk); nothing is added.
  std::ostringstream declined;
  record::Summarize(db_path, "s3", 5152, 3 << 8, what, reported, declined);  // exit status 3
  CHECK(declined.str().empty());  // exit status 3
  auto db = store::Database::Open(db_path, store::Database::Mode::kRead);
  REQUIRE(db.ok());
  auto runs = (*db)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  const store::RunMeta& killed = (*runs)[0];
  CHECK(killed.name == "early");
  CHECK(killed.state == store::RunState::kCrashed);
  CHECK(killed.term_signal == SIGKILL);
  CHECK(killed.pid == 5151);
  CHECK(killed.tags == what.tags);
  CHECK(killed.command == what.command);
  CHECK(killed.duration_ns == what.duration_ns);
  CHECK(killed.diagnostics.at("no_profile") == 1);
  CHECK((*db)->ReadTree(killed.id).ok());  // a tree of its root alone: every report works on it
  // Its run is the child's now: a second pass adds nothing.
  std::ostringstream none;
  record::Summarize(db_path, "s2", 5151, SIGKILL, what, reported, none);
  CHECK(none.str().empty());
  REQUIRE((*db)->ListRuns().ok());
  CHECK((*db)->ListRuns()->size() == 1);
}

// --- the spool (record/spool.h) ---------------------------------------------

namespace {

store::RunFile SpoolRun(const std::string& key, const std::string& parent, const std::string& root, int64_t pid,
                        store::RunState state, int64_t start_ns) {
  store::RunFile run;
  run.meta.name = "p" + key.substr(14);
  run.meta.source = "cct-record";
  run.meta.pid = pid;
  run.meta.pid_start_ticks = store::ProcessStartTicks(pid);
  run.meta.host = store::HostName();
  run.meta.state = state;
  run.meta.start_time_ns = start_ns;
  run.key = key;
  run.parent_key = parent;
  run.root_key = root;
  return run;
}

// A pid that named a process which is gone now.
pid_t GonePid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

}  // namespace

TEST_CASE("spool: a pass stores changed run files in one batch, links keys, removes the finished ones") {
  testutil::TempDir dir;
  const std::string db_path = dir / "s.db";
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  auto spool = record::Spool::Create(db_path, "sess-1");
  REQUIRE(spool.ok());
  CHECK(spool->dir() == db_path + ".spool/sess-1");
  const pid_t gone = GonePid();
  // Written in child-first order: the pass orders by start time.
  REQUIRE(store::WriteRunFile(spool->dir() + "/000000000000000b.run",
                              SpoolRun("000000000000000b", "000000000000000a", "000000000000000a", gone,
                                       store::RunState::kComplete, 2000)).ok());
  REQUIRE(store::WriteRunFile(spool->dir() + "/000000000000000a.run",
                              SpoolRun("000000000000000a", "", "", gone, store::RunState::kComplete, 1000)).ok());
  // Still running (this test process), state recording: stored, kept.
  REQUIRE(store::WriteRunFile(spool->dir() + "/000000000000000c.run",
                              SpoolRun("000000000000000c", "000000000000000a", "000000000000000a", getpid(),
                                       store::RunState::kRecording, 3000)).ok());
  // Recording, but its process died without a last write (SIGKILL).
  REQUIRE(store::WriteRunFile(spool->dir() + "/000000000000000d.run",
                              SpoolRun("000000000000000d", "000000000000000a", "000000000000000a", gone,
                                       store::RunState::kRecording, 4000)).ok());
  {
    std::ofstream bad(spool->dir() + "/000000000000000e.run");
    bad << "not a run file";
  }
  std::ostringstream warn;
  auto pass = spool->Gather(**db, warn);
  REQUIRE(pass.ok());
  CHECK(pass->stored == 4);
  CHECK(pass->removed == 3);
  CHECK(pass->left == 1);
  CHECK(pass->damaged == 1);
  CHECK(warn.str().find("000000000000000e.run") != std::string::npos);
  CHECK(std::filesystem::exists(spool->dir() + "/000000000000000e.run.bad"));
  CHECK(std::filesystem::exists(spool->dir() + "/000000000000000c.run"));
  CHECK_FALSE(std::filesystem::exists(spool->dir() + "/000000000000000a.run"));

  auto runs = (*db)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 4);
  std::map<std::string, store::RunMeta> by_key;
  for (const auto& m : *runs) by_key[m.extra->at("run_key").get<std::string>()] = m;
  const store::RunId a = by_key.at("000000000000000a").id;
  CHECK(a == 1);  // the parent first, though its file was written second
  CHECK(by_key.at("000000000000000a").parent_run == 0);
  CHECK(by_key.at("000000000000000a").root_run == 0);
  for (const char* k : {"000000000000000b", "000000000000000c", "000000000000000d"}) {
    CHECK(by_key.at(k).parent_run == a);
    CHECK(by_key.at(k).root_run == a);
  }

  // Nothing changed: nothing stored again; the live one stays.
  pass = spool->Gather(**db, warn);
  REQUIRE(pass.ok());
  CHECK(pass->stored == 0);
  CHECK(pass->left == 1);
  // It writes again (a checkpoint, then its end): its run is replaced, not added.
  store::RunFile c = SpoolRun("000000000000000c", "000000000000000a", "000000000000000a", getpid(),
                              store::RunState::kComplete, 3000);
  c.meta.name = "c-final";
  REQUIRE(store::WriteRunFile(spool->dir() + "/000000000000000c.run", c).ok());
  pass = spool->Gather(**db, warn);
  REQUIRE(pass.ok());
  CHECK(pass->stored == 1);
  CHECK(pass->removed == 1);
  CHECK((*db)->ListRuns()->size() == 4);
  CHECK((*db)->GetRun(by_key.at("000000000000000c").id)->name == "c-final");
  // The damaged file is still there: the directory stays.
  CHECK_FALSE(spool->RemoveIfEmpty());
  std::filesystem::remove(spool->dir() + "/000000000000000e.run.bad");
  CHECK(spool->RemoveIfEmpty());
  CHECK_FALSE(std::filesystem::exists(db_path + ".spool"));
}

TEST_CASE("spool: recorders starting and finishing side by side all get their directory") {
  // Four threads, each making spool directories and removing them once
  // empty (which removes DB.spool too when nothing else is in it) as fast
  // as they can: a Create between another's rmdir of the root and its own
  // mkdir used to fail with "No such file or directory".
  testutil::TempDir dir;
  const std::string db_path = dir / "race.db";
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        auto spool = record::Spool::Create(db_path, "s" + std::to_string(t) + "-" + std::to_string(i));
        if (!spool.ok() || !std::filesystem::exists(spool->dir() + "/owner")) {
          ++failures;
          continue;
        }
        spool->RemoveIfEmpty();
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
}

TEST_CASE("spool: directories of recorders that are gone are gathered by the next recording, live ones are not") {
  testutil::TempDir dir;
  const std::string db_path = dir / "g.db";
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  const pid_t gone = GonePid();
  const std::string root = record::SpoolRoot(db_path);
  std::filesystem::create_directories(root + "/dead");
  {
    std::ofstream owner(root + "/dead/owner");
    owner << gone << " 12345\n";
  }
  REQUIRE(store::WriteRunFile(root + "/dead/00000000000000a1.run",
                              SpoolRun("00000000000000a1", "", "", gone, store::RunState::kCrashed, 1)).ok());
  auto live = record::Spool::Create(db_path, "live");  // owned by this process
  REQUIRE(live.ok());
  REQUIRE(store::WriteRunFile(live->dir() + "/00000000000000b1.run",
                              SpoolRun("00000000000000b1", "", "", gone, store::RunState::kComplete, 2)).ok());
  // Preloaded by hand (no cct-record): the default spool.
  std::filesystem::create_directories(root + "/unowned");
  REQUIRE(store::WriteRunFile(root + "/unowned/00000000000000c1.run",
                              SpoolRun("00000000000000c1", "", "", gone, store::RunState::kComplete, 3)).ok());

  std::ostringstream out;
  REQUIRE(record::GatherAbandoned(**db, db_path, out).ok());
  CHECK(out.str().find("gathered 2 runs") != std::string::npos);
  auto runs = (*db)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 2);
  CHECK((*runs)[0].extra->at("run_key") == "00000000000000a1");
  CHECK((*runs)[1].extra->at("run_key") == "00000000000000c1");
  CHECK_FALSE(std::filesystem::exists(root + "/dead"));
  CHECK(std::filesystem::exists(live->dir() + "/00000000000000b1.run"));
  std::ostringstream quiet;
  REQUIRE(record::GatherAbandoned(**db, db_path, quiet).ok());
  CHECK(quiet.str().empty());
}

TEST_CASE("spool: recorders gathering the same abandoned run file at once store it once") {
  testutil::TempDir dir;
  const std::string db_path = dir / "twice.db";
  const pid_t gone = GonePid();
  // Two gatherers that listed the stored runs before either stored this
  // one (the race the soak test found): both believe it is new.
  store::RunFile a = SpoolRun("00000000000000d1", "", "", gone, store::RunState::kCrashed, 1);
  store::RunFile b = a;
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  std::vector<store::RunFile> first{a}, second{b};
  REQUIRE((*db)->PutRuns(first).ok());
  REQUIRE((*db)->PutRuns(second).ok());
  CHECK(second[0].meta.id == first[0].meta.id);  // found by its key inside the transaction
  auto runs = (*db)->ListRuns();
  REQUIRE(runs.ok());
  CHECK(runs->size() == 1);
  // Deleting the run frees its key: the file stored again is a new run.
  REQUIRE((*db)->DeleteRun(first[0].meta.id).ok());
  std::vector<store::RunFile> third{a};
  REQUIRE((*db)->PutRuns(third).ok());
  CHECK(third[0].meta.id != first[0].meta.id);
}

// --- the inbox (record/inbox.h) ---------------------------------------------

namespace {

// A client written here, not the collector's: what the inbox must take from
// any sender. Connects, writes `bytes` whole, closes.
bool SendRaw(const std::string& dir, const std::string& bytes) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = dir + "/inbox";
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  for (size_t done = 0; ok && done < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  close(fd);
  return ok;
}

std::string Frame(const std::string& payload) {
  // magic, u64 length (little-endian), payload: built by hand from the
  // format's description in store/run_file.h.
  std::string f = "cctinbx1";
  for (int i = 0; i < 8; ++i) f.push_back(static_cast<char>((payload.size() >> (8 * i)) & 0xff));
  return f + payload;
}

// Serves until `done` holds (the messages were read) or 5 s passed.
void ServeUntil(record::Inbox& inbox, const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) {
    std::vector<pollfd> fds;
    inbox.AddPollFds(fds);
    poll(fds.data(), fds.size(), 10);
    inbox.Serve();
  }
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// An inbox listening in the spool directory `spool`, made here.
std::unique_ptr<record::Inbox> OpenInboxIn(const std::string& spool) {
  std::filesystem::create_directories(spool);
  auto opened = record::Inbox::Open(spool);
  REQUIRE(opened.ok());
  REQUIRE(*opened != nullptr);
  return std::move(opened).value();
}

}  // namespace

TEST_CASE("inbox: a message sent whole is received and journaled; cut short, malformed or doubled ones are dropped") {
  testutil::TempDir dir;
  const std::string spool = dir / "s";
  const std::unique_ptr<record::Inbox> opened = OpenInboxIn(spool);
  record::Inbox& inbox = *opened;
  CHECK(std::filesystem::is_socket(spool + "/inbox"));

  const std::string payload = "run file bytes, as the inbox sees them";
  REQUIRE(SendRaw(spool, Frame(payload)));
  ServeUntil(inbox, [&] { return inbox.received() == 1; });
  CHECK(inbox.received() == 1);
  CHECK(inbox.dropped() == 0);
  CHECK(inbox.Take() == std::vector<std::string>{payload});
  CHECK(inbox.Take().empty());
  CHECK(FileBytes(spool + "/inbox.journal") == Frame(payload));

  // Announces 1000 bytes, sends 10: its sender gave up (it writes a file).
  REQUIRE(SendRaw(spool, Frame(std::string(1000, 'x')).substr(0, 26)));
  REQUIRE(SendRaw(spool, "XXXXXXXX" + Frame(payload).substr(8)));  // not our magic
  REQUIRE(SendRaw(spool, Frame(payload) + Frame(payload)));        // one message per connection
  ServeUntil(inbox, [&] { return inbox.dropped() == 3; });
  CHECK(inbox.dropped() == 3);
  CHECK(inbox.received() == 1);
  CHECK(inbox.Take().empty());

  inbox.Stored();  // what was taken is in the database now
  CHECK(std::filesystem::file_size(spool + "/inbox.journal") == 0);

  // Sent, never served: Close reads it, and takes no more after.
  const std::string last = "the last one";
  REQUIRE(SendRaw(spool, Frame(last)));
  inbox.Close(2000);
  CHECK(inbox.Take() == std::vector<std::string>{last});
  CHECK_FALSE(std::filesystem::exists(spool + "/inbox"));
  CHECK_FALSE(SendRaw(spool, Frame(last)));
}

TEST_CASE("inbox: closed with no sender left, it still reads what was queued, and takes nothing after") {
  testutil::TempDir dir;
  const std::string spool = dir / "s";
  const std::unique_ptr<record::Inbox> opened = OpenInboxIn(spool);
  record::Inbox& inbox = *opened;
  const std::string first = "queued, never served", second = "queued too";
  REQUIRE(SendRaw(spool, Frame(first)));
  REQUIRE(SendRaw(spool, Frame(second)));
  inbox.Close(2000, false);
  CHECK(inbox.Take() == std::vector<std::string>{first, second});
  CHECK(inbox.dropped() == 0);
  CHECK_FALSE(std::filesystem::exists(spool + "/inbox"));
  CHECK_FALSE(SendRaw(spool, Frame(first)));
}

TEST_CASE("inbox: a socket path too long for sockaddr_un means no inbox (files), not an error") {
  testutil::TempDir dir;
  const std::string deep = dir / std::string(120, 'd');
  std::filesystem::create_directories(deep);
  auto opened = record::Inbox::Open(deep);
  REQUIRE(opened.ok());
  CHECK(*opened == nullptr);
}

TEST_CASE("spool: runs sent to the inbox are stored by the next pass; a dead recorder's journal by the next recording") {
  testutil::TempDir dir;
  const std::string db_path = dir / "inbox.db";
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  const pid_t gone = GonePid();
  auto spool = record::Spool::Create(db_path, "sess-i");
  REQUIRE(spool.ok());
  REQUIRE(spool->inbox() != nullptr);
  const store::RunFile parent = SpoolRun("00000000000000f1", "", "", gone, store::RunState::kComplete, 1);
  const store::RunFile child = SpoolRun("00000000000000f2", "00000000000000f1", "00000000000000f1", gone,
                                        store::RunState::kComplete, 2);
  REQUIRE(store::WriteRunFile(spool->dir() + "/00000000000000f1.run", parent).ok());
  REQUIRE(SendRaw(spool->dir(), Frame(store::EncodeRunFile(child))));
  REQUIRE(SendRaw(spool->dir(), Frame("not a run file")));
  ServeUntil(*spool->inbox(), [&] { return spool->inbox()->received() == 2; });
  std::ostringstream warn;
  auto pass = spool->Gather(**db, warn);
  REQUIRE(pass.ok());
  CHECK(pass->stored == 2);
  CHECK(pass->damaged == 1);
  CHECK(warn.str().find("inbox-1.bad") != std::string::npos);
  CHECK(FileBytes(spool->dir() + "/inbox-1.bad") == "not a run file");
  CHECK(std::filesystem::file_size(spool->dir() + "/inbox.journal") == 0);
  auto runs = (*db)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 2);
  CHECK((*runs)[1].extra->at("run_key") == "00000000000000f2");
  CHECK((*runs)[1].parent_run == (*runs)[0].id);  // the message's keys linked like a file's
  spool->CloseInbox(1000);

  // A recorder killed after it journaled two runs (the second cut short by
  // its own death while appending): the next recording stores the whole one.
  const std::string root = record::SpoolRoot(db_path);
  std::filesystem::create_directories(root + "/dead");
  {
    std::ofstream owner(root + "/dead/owner");
    owner << gone << " 12345\n";
    std::ofstream journal(root + "/dead/inbox.journal", std::ios::binary);
    const std::string torn = Frame(store::EncodeRunFile(SpoolRun("00000000000000f4", "", "", gone,
                                                                 store::RunState::kComplete, 4)));
    journal << Frame(store::EncodeRunFile(SpoolRun("00000000000000f3", "", "", gone, store::RunState::kCrashed, 3)))
            << torn.substr(0, torn.size() / 2);
  }
  std::ostringstream out;
  REQUIRE(record::GatherAbandoned(**db, db_path, out).ok());
  CHECK(out.str().find("gathered 1 run ") != std::string::npos);
  runs = (*db)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 3);
  CHECK((*runs)[2].extra->at("run_key") == "00000000000000f3");
  CHECK((*runs)[2].state == store::RunState::kCrashed);
  CHECK_FALSE(std::filesystem::exists(root + "/dead"));
}
