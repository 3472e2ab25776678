// Fuzz target: opening a damaged database. The input is written as the
// database file (LMDB's data.mdb, MDB_NOSUBDIR) and opened read-only the way
// cct-query does: list the runs, read each one's metadata, tree, iterations
// and section sizes, and select `latest`. A damaged file must give a
// cct::Status, never an abort or a hang; a tree read back is one the store
// round-trips.
//
// LMDB trusts the pages it maps: a damaged B-tree page can make it read
// outside the mapping. The tools hold a store::FaultGuard around database
// reads, which turns that SIGSEGV/SIGBUS into one error line and exit 2
// (store/fault_guard.h); here a fault whose instruction is inside liblmdb
// ends the input the same way (back to the target, the database dropped),
// and a fault anywhere else (our decoders) is a finding. LMDB's own
// assertions (mdb_assert, SIGABRT) are findings too: damaged databases must
// never abort (issue 23).
//
// A damaged B-tree page can also make LMDB loop forever while a database is
// opened (open-findings/, README.md). The tools bound opening with
// store::OpenDeadline; here opening gets kOpenSeconds (a timer on its own
// signal: libFuzzer's -timeout owns SIGALRM), then the input ends the same
// way as a fault inside LMDB. A hang anywhere else stays a finding.
#include <dirent.h>
#include <dlfcn.h>
#include <time.h>
#include <sanitizer/lsan_interface.h>
#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <filesystem>

#include "store/database.h"
#include "store/selector.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

sigjmp_buf jump;
volatile sig_atomic_t armed = 0;
volatile sig_atomic_t opening = 0;
constexpr int kOpenSeconds = 3;
const int kOpenSignal = SIGRTMIN + 3;
timer_t open_timer;
const void* lmdb_base = nullptr;
struct sigaction previous[2];

void OnFault(int sig, siginfo_t* info, void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  Dl_info where{};
  const void* pc = reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]);
  if (armed && dladdr(pc, &where) != 0 && where.dli_fbase == lmdb_base) {
    armed = 0;
    siglongjmp(jump, 1);
  }
  // Not LMDB's: let the sanitizer's or libFuzzer's handler report it.
  sigaction(sig, &previous[sig == SIGBUS ? 1 : 0], nullptr);
  (void)info;
}

void OnOpenDeadline(int) {
  if (armed && opening) {
    armed = 0;
    opening = 0;
    siglongjmp(jump, 1);
  }
}

void ArmOpenDeadline(int seconds) {
  itimerspec when{};
  when.it_value.tv_sec = seconds;
  timer_settime(open_timer, 0, &when, nullptr);
}

std::unique_ptr<store::Database>* current = nullptr;

// After a fault: the environment LMDB was in cannot be closed (it may be
// mid-transaction); its mapping is left, its files are closed so that many
// faults do not run out of descriptors.
void CloseFilesOf(const std::string& path) {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return;
  std::vector<int> fds;
  while (const dirent* e = ::readdir(d)) {
    const int fd = std::atoi(e->d_name);
    char target[4096];
    const ssize_t n = ::readlink(("/proc/self/fd/" + std::string(e->d_name)).c_str(), target, sizeof target);
    if (n > 0 && fd != ::dirfd(d) && std::string_view(target, n).substr(0, path.size()) == path) fds.push_back(fd);
  }
  ::closedir(d);
  for (int fd : fds) ::close(fd);
}

void ReadEverything(const std::string& path) {
  opening = 1;
  ArmOpenDeadline(kOpenSeconds);
  auto db = store::Database::Open(path, store::Database::Mode::kRead);
  ArmOpenDeadline(0);
  opening = 0;
  if (!db.ok()) {
    FUZZ_CHECK(!db.status().message().empty());
    return;
  }
  current = &*db;
  auto runs = (*db)->ListRuns();
  if (runs.ok()) {
    size_t read = 0;
    for (const store::RunMeta& run : *runs) {
      if (++read > 64) break;
      (void)(*db)->GetRun(run.id);
      (void)(*db)->SectionSizes(run.id);
      auto tree = (*db)->ReadTree(run.id);
      if (tree.ok()) fuzz::CheckStoreRoundTrip(*tree);
      (void)(*db)->ReadIterations(run.id);
      (void)(*db)->ReadTrace(run.id);
    }
    auto sel = store::ParseSelector("latest", path);
    FUZZ_CHECK(sel.ok());
    (void)store::SelectRuns(**db, *sel);
  }
  current = nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // LMDB's code, found without including lmdb.h (src/store/lmdb_env.cc is its only includer).
  void* lmdb = dlopen("liblmdb.so.0", RTLD_NOW | RTLD_NOLOAD);
  void* open = lmdb != nullptr ? dlsym(lmdb, "mdb_env_open") : nullptr;
  Dl_info where{};
  if (open == nullptr || dladdr(open, &where) == 0) std::abort();
  lmdb_base = where.dli_fbase;
  struct sigaction sa {};
  sa.sa_sigaction = OnFault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, &previous[0]);
  sigaction(SIGBUS, &sa, &previous[1]);
  struct sigaction deadline {};
  deadline.sa_handler = OnOpenDeadline;
  deadline.sa_flags = SA_NODEFER;
  sigaction(kOpenSignal, &deadline, nullptr);
  sigevent ev{};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = kOpenSignal;
  if (timer_create(CLOCK_MONOTONIC, &ev, &open_timer) != 0) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::WriteScratch("in.db", fuzz::Bytes(data, size));
  std::error_code ec;
  std::filesystem::remove(path + "-lock", ec);
  // A fault inside LMDB jumps over the destructors of its transaction: what
  // they would have freed is not a leak of ours.
  __lsan_disable();
  if (sigsetjmp(jump, 1) == 0) {
    armed = 1;
    ReadEverything(path);
    armed = 0;
  } else {
    if (current != nullptr) (void)current->release();
    current = nullptr;
    CloseFilesOf(path);
  }
  __lsan_enable();
  return 0;
}
