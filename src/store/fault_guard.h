// FaultGuard: turns a memory fault while reading a database into one error
// line and exit status 2.
//
// LMDB trusts the pages it maps; we check the file header before mapping and
// checksum our own sections, but a corrupted B-tree page inside an otherwise
// valid file can still make LMDB follow a wild pointer. Command-line tools
// hold a FaultGuard around database reads; a SIGSEGV/SIGBUS inside prints
// "<tool>: <path> is damaged (memory fault while reading it)" and exits 2.
// Faults outside a guard keep their default behaviour.
//
// The signal handler is async-signal-safe (write(2) and _exit only).
// Not for the collector: it runs inside the host program. Guards nest;
// process-wide (one handler), not thread-specific.
#pragma once

#include <string>

namespace store {

class FaultGuard {
 public:
  FaultGuard(const std::string& tool, const std::string& db_path);
  ~FaultGuard();
  FaultGuard(const FaultGuard&) = delete;
  FaultGuard& operator=(const FaultGuard&) = delete;
};

}  // namespace store
