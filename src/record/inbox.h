// Inbox: where cct-record receives the final runs of processes that have no
// run file in the spool (store/run_file.h: most of a build's processes end
// before their first file would be written).
//
// A Unix stream socket, SPOOL/inbox, inside the spool directory (0700: only
// its owner, and root, can connect). Each connection carries one framed
// run file; cct-record's wait loop (RunProgram) polls the listening socket
// and the open connections and calls Serve. A message is complete when its
// announced length has arrived and the sender closed; one cut short (its
// sender timed out and wrote the file instead, or died) is dropped. Each
// complete message is appended to SPOOL/inbox.journal before it is handed
// to the spool's next pass (Take), and the journal is emptied once that
// pass stored it (Stored): a recorder killed in between leaves the journal,
// which the next recording gathers with the directory's run files.
//
// Ownership: owns its sockets and the journal's descriptor. Not
// thread-safe; cct-record is single-threaded.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "cct/status.h"

namespace record {

class Inbox {
 public:
  // Listens on DIR/inbox. nullptr (not an error) when the path does not
  // fit a socket address: the processes write files then.
  static cct::Result<std::unique_ptr<Inbox>> Open(const std::string& dir);
  ~Inbox();
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // The descriptors to poll for input: the listening socket while open,
  // and the connections being read.
  void AddPollFds(std::vector<pollfd>& fds) const;
  // Accepts and reads what is there (never blocks).
  void Serve();
  // Stops taking messages: removes the socket (a process that ends from
  // now on writes its file), then reads the connections already made or
  // queued, for up to `timeout_ms` in all. `senders_alive`: processes that
  // may send are still running, so a connect that found the socket before
  // it was removed may still be on its way into the backlog; Close waits a
  // short grace for it. When none can be running (RunProgram knows: it
  // reaps every descendant, ChildResult::descendants_left), there is no
  // such connect, and Close does not wait.
  void Close(int timeout_ms, bool senders_alive = true);

  // The run files received since the last Take, in arrival order; each is
  // in the journal too.
  std::vector<std::string> Take();
  // What Take returned is stored: the journal is emptied.
  void Stored();

  // Bytes received and not yet taken: RunProgram has them stored early
  // when they pass kFlushBytes (a long build recorded with --checkpoint 0
  // would hold every short process's run until the end).
  size_t pending_bytes() const { return pending_bytes_; }
  static constexpr size_t kFlushBytes = size_t{64} << 20;

  size_t received() const { return received_total_; }  // messages so far
  size_t dropped() const { return dropped_; }           // cut short, oversized, other users'

 private:
  Inbox(std::string dir, std::string socket_path, int listen_fd);
  struct Connection {
    int fd = -1;
    std::string bytes;
  };
  void Accept();
  // Reads what is there; true when the connection is finished (closed here).
  bool Read(Connection& c);
  void Finish(Connection& c);

  std::string dir_;
  std::string socket_path_;  // DIR/inbox
  int listen_fd_ = -1;
  int journal_fd_ = -1;
  std::vector<Connection> connections_;
  std::vector<std::string> received_;
  size_t received_total_ = 0;
  size_t pending_bytes_ = 0;
  size_t dropped_ = 0;
};

}  // namespace record
