// Fatal signals: the collector's handler asks the checkpoint thread for the
// final write (state crashed), waits for it with a deadline, then lets the
// process die exactly as it would have without us.
// SIGNAL-HANDLER CODE: the functions marked so run in signal handlers and
// are async-signal-safe (no allocation, no locks, only async-signal-safe
// calls); keep them so.
// OnFatal, InterruptedPc and KernelFault are SIGNAL-HANDLER CODE;
// InstallFatalHandlers, InstallAltStack, RemoveAltStack and AwaitFatalSignal
// run in normal context (Start, thread registration, thread exit, exit and
// exec).
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <time.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "collector/core/runtime.h"
#include "collector/core/runtime_state.h"

namespace collector::internal {

__thread jmp_buf* t_fault_guard __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP};

// The interrupted instruction's address, from the signal's context.
uint64_t InterruptedPc(const void* context) {  // SIGNAL-HANDLER CODE
  if (context == nullptr) return 0;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uint64_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

bool KernelFault(int sig, const siginfo_t* info) {  // SIGNAL-HANDLER CODE
  return (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && info && info->si_code > 0;
}

void OnFatal(int sig, siginfo_t* info, void* context) {  // SIGNAL-HANDLER CODE
  const int saved_errno = errno;
  // A guarded read touched memory that was gone: back to its _setjmp. Only
  // a fault at an instruction of ours: a program's signal handler that
  // interrupted the guarded read and faults in its own code is the
  // program's crash. The jump skips the sigreturn that would unblock this
  // signal, so the mask of the interrupted code is put back first.
  const uint64_t pc = InterruptedPc(context);
  if (jmp_buf* guard = t_fault_guard; guard != nullptr && (sig == SIGSEGV || sig == SIGBUS) && KernelFault(sig, info) &&
                                      pc >= own_text_lo && pc < own_text_hi) {
    t_fault_guard = nullptr;
    if (context != nullptr) pthread_sigmask(SIG_SETMASK, &static_cast<const ucontext_t*>(context)->uc_sigmask, nullptr);
    errno = saved_errno;
    _longjmp(*guard, 1);
  }
  // The first fault's site, for the crashed run (a user asks where first).
  if (rt && !InForeignChild() && KernelFault(sig, info)) {
    pid_t none = 0;
    if (rt->fatal_tid.compare_exchange_strong(none, Tid())) {
      rt->fatal_pc.store(pc);
      rt->fatal_address.store(reinterpret_cast<uint64_t>(info->si_addr));
    }
  }
  // This thread was writing (its run at exit or exec) or forking: the
  // checkpoint thread would wait for the mutex this thread holds, and this
  // handler for it, until the deadline. A termination signal waits for the
  // write to end instead (RaiseDeferredFatal); a fault dies at once. The
  // same for a termination signal while the thread stops the sources before
  // that write (Runtime::final_writer): they hold registry_mutex.
  const bool holds_flush = rt && !InForeignChild() && HoldsFlushMutex();
  const bool final_writer = rt && !InForeignChild() && rt->final_writer.load() == Tid();
  if ((holds_flush || final_writer) && (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)) {
    int none = 0;
    rt->deferred_fatal.compare_exchange_strong(none, sig);
    errno = saved_errno;
    return;
  }
  // A vfork child shares our memory: its fault must not stop the parent's
  // sampling or write the parent's run.
  if (rt && !InForeignChild() && !holds_flush && !rt->fatal_once.exchange(true)) {
    rt->active.store(false, std::memory_order_release);
    if (rt->flusher_running && Tid() != rt->flusher_tid.load()) {
      rt->fatal_signal.store(sig);
      const char req = 'F';
      if (write(rt->request_pipe[1], &req, 1) == 1) {
        // Wait for the final write, but not forever: the thread that crashed
        // may hold a lock the writer needs (malloc's, for instance). Another
        // signal (a sampling tick already on its way, the program's own)
        // interrupts poll; giving up then would let the process die before
        // the write, losing the whole run, so wait out the deadline.
        const int64_t deadline = Now(CLOCK_MONOTONIC) + kFatalWriteDeadlineNs;
        for (;;) {
          const int64_t left_ms = (deadline - Now(CLOCK_MONOTONIC)) / 1000000;
          if (left_ms <= 0) break;
          pollfd pfd{rt->ack_pipe[0], POLLIN, 0};
          const int r = poll(&pfd, 1, static_cast<int>(left_ms));
          if (r > 0) {
            char c;
            ssize_t n = read(rt->ack_pipe[0], &c, 1);
            (void)n;
            break;
          }
          if (r == 0 || errno != EINTR) break;
        }
      }
    }
  }
  // Die exactly as without us: default action, same signal. A fault raised
  // by the kernel recurs when the instruction is retried; anything else is
  // raised again (it is blocked until this handler returns).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  if (!KernelFault(sig, info)) raise(sig);
  errno = saved_errno;
}

}  // namespace

bool HoldsFlushMutex() {  // SIGNAL-HANDLER CODE
  // glibc's pthread_mutex_t keeps the owner's thread id while it is locked.
  return rt->flush_mutex.native_handle()->__data.__owner == Tid();
}

void RaiseDeferredFatal() {
  if (!rt) return;
  rt->final_writer.store(0);  // done writing: a signal from now on is handled as any other
  if (const int sig = rt->deferred_fatal.exchange(0)) raise(sig);
}

void InstallFatalHandlers() {
  for (int sig : kFatalSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    // Only where the program has not chosen a disposition (an ignored
    // SIGHUP under nohup stays ignored; a program's handler stays its own).
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL) continue;
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) continue;
    struct sigaction sa {};
    sa.sa_sigaction = OnFatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    // No sampling tick inside the handler: it would only interrupt the wait.
    sigaddset(&sa.sa_mask, rt->signo);
    sigaction(sig, &sa, nullptr);
  }
}

// An alternate stack so a stack overflow's SIGSEGV can still be handled.
namespace {
// The alternate stack this thread got from InstallAltStack (not one the
// program installed), freed when the thread exits: a program that starts
// threads by the thousand must not leak one per thread.
__thread void* t_alt_stack __attribute__((tls_model("initial-exec"))) = nullptr;
constexpr size_t kAltStackSize = 64 * 1024;
}  // namespace

void InstallAltStack() {
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE)) return;
  void* mem = malloc(kAltStackSize);
  if (!mem) return;
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = kAltStackSize;
  if (sigaltstack(&ss, nullptr) != 0) free(mem);
  else t_alt_stack = mem;
}

void RemoveAltStack() {
  void* mem = t_alt_stack;
  if (!mem) return;
  stack_t current{};
  // Only ours, and never while a handler runs on it.
  if (sigaltstack(nullptr, &current) != 0 || current.ss_sp != mem || (current.ss_flags & SS_ONSTACK)) return;
  stack_t off{};
  off.ss_flags = SS_DISABLE;
  if (sigaltstack(&off, nullptr) != 0) return;
  t_alt_stack = nullptr;
  free(mem);
}

}  // namespace collector::internal

namespace collector {

void AwaitFatalSignal() {
  using internal::rt;
  if (!rt || InForeignChild() || !rt->fatal_once.load()) return;
  // The process ends as the handler returns (the kernel raises the fault
  // again; a raised signal is delivered). Still here past the handler's
  // deadline and a second more, something kept it alive (a program's own
  // handler taking over): go on.
  const int64_t deadline = internal::Now(CLOCK_MONOTONIC) + internal::kFatalWriteDeadlineNs + int64_t{1000} * 1000000;
  while (internal::Now(CLOCK_MONOTONIC) < deadline) {
    timespec pause{0, 10 * 1000000};
    nanosleep(&pause, nullptr);
  }
}

}  // namespace collector
