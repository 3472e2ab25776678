#include "store/fault_guard.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

namespace store {

namespace {

std::atomic<int> g_depth{0};
char g_message[1024];
size_t g_message_len = 0;
char g_open_message[1024];
size_t g_open_message_len = 0;
std::string* g_tool = nullptr;  // the outermost guard's, for ReportLmdbAssert
std::string* g_path = nullptr;
int g_exit_status = 2;  // the outermost guard's

// Async-signal-safe: reads preformatted bytes, write(2), _exit.
void OnFault(int sig) {
  if (g_depth.load(std::memory_order_relaxed) > 0) {
    ssize_t ignored = ::write(STDERR_FILENO, g_message, g_message_len);
    (void)ignored;
    ::_exit(g_exit_status);
  }
  // Not ours: restore the default action; returning re-executes the faulting
  // instruction, which now kills the process as it would have.
  ::signal(sig, SIG_DFL);
}

// Async-signal-safe: the preformatted message, write(2), _exit.
void OnOpenDeadline(int) {
  ssize_t ignored = ::write(STDERR_FILENO, g_open_message, g_open_message_len);
  (void)ignored;
  ::_exit(g_exit_status);
}

void Install() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  struct sigaction sa {};
  sa.sa_handler = OnFault;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NODEFER | SA_RESETHAND;
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace

FaultGuard::FaultGuard(const std::string& tool, const std::string& db_path, int exit_status) {
  if (g_depth.load() == 0) {
    g_exit_status = exit_status;
    const std::string msg = tool + ": " + db_path + " is damaged (memory fault while reading it)\n";
    g_message_len = std::min(msg.size(), sizeof g_message);
    std::memcpy(g_message, msg.data(), g_message_len);
    std::string open_msg = tool;  // (appended, not operator+: GCC 12 warns falsely on the chain)
    open_msg += ": ";
    open_msg += db_path;
    open_msg += " is damaged (opening it did not finish in ";
    open_msg += std::to_string(kOpenDeadlineSeconds);
    open_msg += " s: LMDB is looping on a damaged page)\n";
    g_open_message_len = std::min(open_msg.size(), sizeof g_open_message);
    std::memcpy(g_open_message, open_msg.data(), g_open_message_len);
    delete g_tool;
    delete g_path;
    g_tool = new std::string(tool);
    g_path = new std::string(db_path);
  }
  Install();
  g_depth.fetch_add(1);
}

FaultGuard::~FaultGuard() { g_depth.fetch_sub(1); }

std::string DamageMessage(const std::string& path, std::string_view detail) {
  return path + " is damaged (" + std::string(detail) + "); cct-query check " + path + " lists what can still be read";
}

std::string LmdbAssertionText(std::string_view message) {
  std::string d(message);
  if (const size_t at = d.find(": Assertion "); at != std::string::npos) d = d.substr(at + 2);
  while (!d.empty() && (d.back() == '\n' || d.back() == '.')) d.pop_back();
  return d;
}

OpenDeadline::OpenDeadline() {
  if (g_depth.load() == 0) return;
  struct sigaction sa {};
  sa.sa_handler = OnOpenDeadline;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, nullptr);
  ::alarm(kOpenDeadlineSeconds);
  armed_ = true;
}

OpenDeadline::~OpenDeadline() {
  if (!armed_) return;
  ::alarm(0);
  ::signal(SIGALRM, SIG_DFL);
}

void ReleaseFaultGuards() {
  g_depth.store(0);
  ::alarm(0);
  ::signal(SIGSEGV, SIG_DFL);
  ::signal(SIGBUS, SIG_DFL);
}

void ReportLmdbAssert(const char* detail) {
  if (g_depth.load() == 0 || !g_tool) return;
  const std::string line =
      *g_tool + ": " + DamageMessage(*g_path, "LMDB: " + LmdbAssertionText(detail ? detail : "assertion failed")) + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
  ::_exit(g_exit_status);
}

}  // namespace store
