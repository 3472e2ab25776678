// FaultGuard: turns a memory fault while reading a database into one error
// line and the tool's error exit status (2; cct-record's is 125).
//
// LMDB trusts the pages it maps; we check the file header before mapping and
// checksum our own sections, but a corrupted B-tree page inside an otherwise
// valid file can still make LMDB follow a wild pointer. Command-line tools
// hold a FaultGuard around database reads; a SIGSEGV/SIGBUS inside prints
// "<tool>: <path> is damaged (memory fault while reading it)" and exits 2.
// Faults outside a guard keep their default behaviour.
//
// LMDB also asserts on pages it cannot follow (a zeroed branch page makes
// mdb_cursor_next fail 'IS_LEAF(mp)' and abort). lmdb_env.cc installs
// ReportLmdbAssert as every environment's assert callback: inside a guard
// it prints "<tool>: <path> is damaged (LMDB: <assertion>); cct-query check
// <path> lists what can still be read" and exits with the guard's status.
//
// The signal handler is async-signal-safe (write(2) and _exit only).
// Not for the collector: it runs inside the host program. Guards nest;
// process-wide (one handler), not thread-specific.
#pragma once

#include <string>
#include <string_view>

namespace store {

class FaultGuard {
 public:
  // exit_status: what the process ends with on damage; the outermost
  // guard's counts.
  FaultGuard(const std::string& tool, const std::string& db_path, int exit_status = 2);
  ~FaultGuard();
  FaultGuard(const FaultGuard&) = delete;
  FaultGuard& operator=(const FaultGuard&) = delete;
};

// Inside a guard, bounds the opening of a database: a damaged B-tree page
// can make LMDB loop forever (a page that points back up its own path), and
// opening reads a handful of pages, so one that takes kOpenDeadlineSeconds
// is damage: "<tool>: <path> is damaged (opening it did not finish in 10 s)"
// and the guard's exit status (SIGALRM; the tools use no other alarm). Outside a guard,
// nothing. Database::Open holds one.
inline constexpr unsigned kOpenDeadlineSeconds = 10;
class OpenDeadline {
 public:
  OpenDeadline();
  ~OpenDeadline();
  OpenDeadline(const OpenDeadline&) = delete;
  OpenDeadline& operator=(const OpenDeadline&) = delete;

 private:
  bool armed_ = false;
};

// In a forked child that must die of what it meets, so that its parent can
// tell (CheckDatabase's readers): no guard is active in it any more.
void ReleaseFaultGuards();

// "P is damaged (DETAIL); cct-query check P lists what can still be read":
// how the store reports a damaged page, whoever finds it (LMDB's return
// codes, its assertions). CheckDatabase reads DETAIL back out of it.
std::string DamageMessage(const std::string& path, std::string_view detail);

// LMDB's assertion message ("mdb.c:5921: Assertion 'IS_LEAF(mp)' failed in
// mdb_cursor_next()") without the source position, which means nothing to
// a user, and without a trailing newline or period.
std::string LmdbAssertionText(std::string_view message);

// LMDB's assertion `detail` fired: inside a guard, one line and the guard's
// exit status;
// outside, returns (LMDB aborts as it would have). Normal context.
void ReportLmdbAssert(const char* detail);

}  // namespace store
