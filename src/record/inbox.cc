// See inbox.h.
#include "record/inbox.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "store/run_file.h"

namespace record {
namespace {

// Connections read at once; more wait in the listen backlog, and once that
// is full too, senders write their files.
constexpr size_t kMaxConnections = 1024;
// After the socket is removed, what Close waits for a connect that had
// found it to arrive in the backlog, before the last accepts.
constexpr int kCloseGraceMs = 20;

int64_t MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace

cct::Result<std::unique_ptr<Inbox>> Inbox::Open(const std::string& dir) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = dir + "/" + std::string(store::kInboxSocketName);
  if (path.size() >= sizeof addr.sun_path) return std::unique_ptr<Inbox>();
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return cct::IoError(std::string("cannot make the inbox socket: ") + std::strerror(errno));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, SOMAXCONN) != 0) {
    const int e = errno;
    close(fd);
    unlink(path.c_str());
    return cct::IoError("cannot listen on " + path + ": " + std::strerror(e));
  }
  return std::unique_ptr<Inbox>(new Inbox(dir, path, fd));
}

Inbox::Inbox(std::string dir, std::string socket_path, int listen_fd)
    : dir_(std::move(dir)), socket_path_(std::move(socket_path)), listen_fd_(listen_fd) {}

Inbox::~Inbox() {
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(socket_path_.c_str());
  }
  for (Connection& c : connections_) close(c.fd);
  if (journal_fd_ >= 0) close(journal_fd_);
}

void Inbox::AddPollFds(std::vector<pollfd>& fds) const {
  if (listen_fd_ >= 0 && connections_.size() < kMaxConnections) fds.push_back({listen_fd_, POLLIN, 0});
  for (const Connection& c : connections_) fds.push_back({c.fd, POLLIN, 0});
}

void Inbox::Accept() {
  while (listen_fd_ >= 0 && connections_.size() < kMaxConnections) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN: none queued
    }
    // The directory keeps other users out; root may record as anyone.
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || (cred.uid != getuid() && cred.uid != 0)) {
      close(fd);
      ++dropped_;
      continue;
    }
    connections_.push_back({fd, {}});
  }
}

bool Inbox::Read(Connection& c) {
  char buf[65536];
  for (;;) {
    const ssize_t n = read(c.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return false;
    if (n <= 0) break;  // the sender is done (or gone)
    c.bytes.append(buf, static_cast<size_t>(n));
    if (c.bytes.size() >= store::kInboxHeaderSize) {
      auto size = store::ParseInboxFrameHeader(std::string_view(c.bytes).substr(0, store::kInboxHeaderSize));
      // Not a message, or more than one: closing makes the sender write its file.
      if (!size.ok() || c.bytes.size() > store::kInboxHeaderSize + *size) {
        c.bytes.clear();
        break;
      }
    }
  }
  Finish(c);
  return true;
}

void Inbox::Finish(Connection& c) {
  close(c.fd);
  c.fd = -1;
  const store::InboxFrames frames = store::SplitInboxFrames(c.bytes);
  if (frames.payloads.size() != 1 || frames.torn || frames.damaged) {
    ++dropped_;
    return;
  }
  // Journaled before it is handed on; a journal that cannot be written
  // only loses what a killed recorder would lose anyway.
  if (journal_fd_ < 0)
    journal_fd_ = open((dir_ + "/" + std::string(store::kInboxJournalName)).c_str(),
                       O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (journal_fd_ >= 0) {
    size_t done = 0;
    while (done < c.bytes.size()) {
      const ssize_t n = write(journal_fd_, c.bytes.data() + done, c.bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }
  received_.emplace_back(frames.payloads[0]);
  pending_bytes_ += received_.back().size();
  ++received_total_;
}

void Inbox::Serve() {
  Accept();
  for (Connection& c : connections_) Read(c);
  std::erase_if(connections_, [](const Connection& c) { return c.fd < 0; });
}

void Inbox::Close(int timeout_ms, bool senders_alive) {
  if (listen_fd_ < 0) return;
  const int64_t deadline = MonotonicMs() + timeout_ms;
  unlink(socket_path_.c_str());
  // A connect that found the socket before it was removed lands in the
  // backlog within this grace; closing the socket would drop it unread.
  // A connect is made by a live process: with none left, nothing can land.
  for (int64_t until = MonotonicMs() + (senders_alive ? kCloseGraceMs : 0); MonotonicMs() < until;) {
    Serve();
    timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
  // Whatever is queued beyond the connection limit is read in turns.
  while (true) {
    Serve();
    pollfd listen{listen_fd_, POLLIN, 0};
    if (connections_.empty() && poll(&listen, 1, 0) <= 0) break;
    std::vector<pollfd> fds;
    for (const Connection& c : connections_) fds.push_back({c.fd, POLLIN, 0});
    const int64_t left = deadline - MonotonicMs();
    if (left <= 0) break;
    if (!fds.empty()) poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left, 100)));
  }
  close(listen_fd_);
  listen_fd_ = -1;
  // Senders still writing at the deadline give up and write their files.
  dropped_ += connections_.size();
  for (Connection& c : connections_) close(c.fd);
  connections_.clear();
}

std::vector<std::string> Inbox::Take() {
  std::vector<std::string> out;
  out.swap(received_);
  pending_bytes_ = 0;
  return out;
}

void Inbox::Stored() {
  if (journal_fd_ >= 0 && ftruncate(journal_fd_, 0) != 0) {
    // Left as it is: the next recording stores these runs again, under
    // the same keys (the same runs, not new ones).
  }
}

}  // namespace record
