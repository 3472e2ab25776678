// The record library (src/record/): cct-record's behaviour without its
// option parsing. The tool itself is exercised end to end by
// tests/collector/record_test.cc.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <string>
#include <vector>

#include "record/record.h"
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
  record::SplitArgs(static_cast<int>(args.size()), argv.data(), ours, program);
  CHECK(ours == std::vector<std::string>{"-o", "x.db", "--no-follow", "--freq", "99"});
  CHECK(program == std::vector<std::string>{"prog", "-v", "--", "a"});

  std::vector<std::string> args2 = {"cct-record", "--clock", "wall", "--", "-dash-prog", "x"};
  auto argv2 = Argv(args2);
  ours.clear();
  program.clear();
  record::SplitArgs(static_cast<int>(args2.size()), argv2.data(), ours, program);
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

  auto killed = record::RunProgram({"sh", "-c", "kill -KILL $$"}, {"PATH=/usr/bin:/bin"});
  REQUIRE(killed.ok());
  CHECK(WIFSIGNALED(killed->status));
  CHECK(WTERMSIG(killed->status) == SIGKILL);

  auto missing = record::RunProgram({"/nonexistent/cct-no-such-program"}, {});
  REQUIRE(missing.ok());
  CHECK(missing->exec_errno == ENOENT);
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
  record::Summarize(db_path, "s1", 4242, SIGKILL, reported, out);
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
  record::Summarize(db_path, "s1", 4242, SIGKILL, reported, again);
  CHECK(again.str().empty());
}
