// See spool.h.
#include "record/spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>
#include <nlohmann/json.hpp>

#include "collector/cpu/shared_rows.h"
#include "store/run_file.h"

namespace record {
namespace {

constexpr const char* kOwnerFile = "owner";
constexpr const char* kUnowned = "unowned";  // collector/core/config.h: the default spool

// Whether the process that wrote `meta` still runs: same host, and its pid
// still names the process that started at the recorded time. A process on
// another host (a shared file system) counts as running until its run is
// final.
bool ProcessAlive(const store::RunMeta& meta) {
  if (meta.pid <= 0) return false;
  if (!meta.host.empty() && meta.host != store::HostName()) return true;
  const uint64_t ticks = store::ProcessStartTicks(meta.pid);
  return ticks != 0 && (meta.pid_start_ticks == 0 || ticks == meta.pid_start_ticks);
}

// The owner file's pid and start ticks; the directory is abandoned when that
// process is gone.
bool OwnerAlive(const std::string& dir) {
  std::ifstream in(dir + "/" + kOwnerFile);
  int64_t pid = 0;
  uint64_t ticks = 0;
  if (!(in >> pid >> ticks) || pid <= 0) return false;
  const uint64_t now = store::ProcessStartTicks(pid);
  return now != 0 && now == ticks;
}

}  // namespace

std::string SpoolRoot(const std::string& db_path, const std::string& root) {
  return root.empty() ? db_path + ".spool" : root;
}

cct::Result<Spool> Spool::Create(const std::string& db_path, const std::string& session,
                                 const std::string& given_root) {
  const std::string root = SpoolRoot(db_path, given_root);
  if (!given_root.empty()) {
    // TMPDIR/cctdb-spool-UID/NAME-HASH: the levels above the root.
    const std::string user_dir = root.substr(0, root.rfind('/'));
    if (mkdir(user_dir.c_str(), 0700) != 0 && errno != EEXIST)
      return cct::IoError("cannot make " + user_dir + ": " + std::strerror(errno));
    // A shared /tmp: only a directory of ours, not another user's or a link.
    struct stat st {};
    if (lstat(user_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
      return cct::IoError(user_dir + " is not a directory of this user's; remove it or set TMPDIR");
  }
  const std::string dir = root + "/" + session;
  // Recorders into the same database start and finish side by side. The
  // directory is made under a dot name, given its owner file, then renamed:
  // another recorder gathering abandoned spools never sees it without its
  // owner (and took it, live, for abandoned). A recorder that finishes
  // removes the root when it is empty, possibly between our two mkdirs:
  // then make it again.
  const std::string staging = root + "/." + session;
  for (int attempt = 0;; ++attempt) {
    if (mkdir(root.c_str(), 0700) != 0 && errno != EEXIST)
      return cct::IoError("cannot make " + root + ": " + std::strerror(errno));
    if (mkdir(staging.c_str(), 0700) == 0 || errno == EEXIST) break;
    if (errno != ENOENT || attempt == 100) return cct::IoError("cannot make " + staging + ": " + std::strerror(errno));
  }
  {
    std::ofstream owner(staging + "/" + kOwnerFile);
    owner << getpid() << ' ' << store::ProcessStartTicks(getpid()) << '\n';
    if (!owner) return cct::IoError("cannot write " + staging + "/" + kOwnerFile);
  }
  // The root cannot go while the staging directory is in it.
  if (rename(staging.c_str(), dir.c_str()) != 0)
    return cct::IoError("cannot make " + dir + ": " + std::strerror(errno));
  Spool spool(dir);
  // Without an inbox (a path too long for a socket, no sockets allowed
  // there) the processes write files, as they did before it.
  if (auto inbox = Inbox::Open(dir); inbox.ok()) spool.inbox_ = std::move(inbox).value();
  // Without it (no memfd, no memory) each process keeps its own rows.
  if (auto rows = collector::CreateSharedRows(); rows.ok()) spool.rows_.fd = *rows;
  return spool;
}

std::string Spool::rows_path() const { return rows_.fd >= 0 ? collector::SharedRowsPath(rows_.fd) : ""; }

cct::Status Spool::LoadRows(const std::string& path) {
  if (rows_.fd < 0) return cct::NotFound("no shared row table");
  return collector::LoadSharedRows(rows_.fd, path);
}

cct::Status Spool::SaveRows(const std::string& path) const {
  if (rows_.fd < 0) return cct::NotFound("no shared row table");
  return collector::SaveSharedRows(rows_.fd, path);
}

Spool::RowsFd& Spool::RowsFd::operator=(RowsFd&& o) noexcept {
  if (this != &o) {
    if (fd >= 0) close(fd);
    fd = std::exchange(o.fd, -1);
  }
  return *this;
}

Spool::RowsFd::~RowsFd() {
  if (fd >= 0) close(fd);
}

cct::Status Spool::FindStoredKeys(store::Database& db, const std::vector<std::string>& keys) {
  std::vector<std::string> unknown;
  for (const std::string& k : keys)
    if (!k.empty() && !ids_.count(k)) unknown.push_back(k);
  if (unknown.empty()) return cct::Status::Ok();
  CCT_ASSIGN_OR_RETURN(auto found, db.FindRunKeys(unknown));
  ids_.merge(found);
  return cct::Status::Ok();
}

cct::Result<Spool::Pass> Spool::Gather(store::Database& db, std::ostream& warn) {
  Pass pass;
  DIR* d = opendir(dir_.c_str());
  if (!d) {
    if (errno == ENOENT) return pass;
    return cct::IoError("cannot read " + dir_ + ": " + std::strerror(errno));
  }
  struct Changed {
    std::string name;
    Seen seen;
    store::RunFile run;
  };
  std::vector<Changed> changed;
  std::vector<std::string> unchanged;  // as the last pass stored them
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!name.ends_with(store::kRunFileSuffix)) continue;  // owner, NAME.run.tmp, NAME.bad
    const std::string path = dir_ + "/" + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;  // replaced or removed just now
    const Seen seen{static_cast<uint64_t>(st.st_ino), int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                    static_cast<int64_t>(st.st_size)};
    auto prior = stored_.find(name);
    if (prior != stored_.end() && prior->second.seen == seen) {
      unchanged.push_back(name);
      continue;
    }
    auto run = store::ReadRunFile(path);
    if (!run.ok()) {
      if (run.status().code() == cct::ErrorCode::kIo) continue;  // replaced between stat and open
      warn << "cct-record: " << run.status().message() << "; kept as " << path << ".bad\n";
      rename(path.c_str(), (path + ".bad").c_str());
      ++pass.damaged;
      continue;
    }
    changed.push_back({name, seen, std::move(run).value()});
  }
  closedir(d);

  // Runs sent to the inbox; in a directory whose recorder is gone, those
  // its journal kept.
  const std::string journal = dir_ + "/" + std::string(store::kInboxJournalName);
  bool journal_read = false;
  if (inbox_) {
    for (std::string& m : inbox_->Take()) messages_.push_back(std::move(m));
  } else if (auto bytes = store::ReadWholeFile(journal); bytes.ok()) {
    journal_read = true;
    const store::InboxFrames frames = store::SplitInboxFrames(*bytes);
    for (std::string_view p : frames.payloads) messages_.emplace_back(p);
    if (frames.damaged) warn << "cct-record: " << journal << " is damaged after " << frames.payloads.size() << " runs\n";
  }
  // A damaged one is set aside once (not again after a pass that failed).
  std::erase_if(messages_, [&](const std::string& bytes) {
    auto run = store::DecodeRunFile(bytes);
    if (run.ok()) {
      changed.push_back({"", {}, std::move(run).value()});
      return false;
    }
    const std::string bad = dir_ + "/inbox-" + std::to_string(++bad_messages_) + ".bad";
    warn << "cct-record: a run received in the inbox: " << run.status().message() << "; kept as " << bad << '\n';
    (void)store::WriteFileAtomically(bad, bytes, bad + ".tmp");
    ++pass.damaged;
    return true;
  });
  if (!changed.empty()) {
    // Runs an earlier pass or recording stored (a file rewritten since, a
    // parent stored by the recording this one runs under): their ids.
    std::vector<std::string> keys;
    for (const Changed& c : changed) keys.insert(keys.end(), {c.run.key, c.run.parent_key, c.run.root_key});
    CCT_RETURN_IF_ERROR(FindStoredKeys(db, keys));
    // Parents start before their children: store them first, so a child
    // gathered in the same pass finds its parent's id.
    std::stable_sort(changed.begin(), changed.end(), [](const Changed& a, const Changed& b) {
      return a.run.meta.start_time_ns < b.run.meta.start_time_ns;
    });
    std::vector<store::RunFile> runs;
    runs.reserve(changed.size());
    for (Changed& c : changed) {
      auto it = ids_.find(c.run.key);
      c.run.meta.id = it == ids_.end() ? 0 : it->second;
      runs.push_back(std::move(c.run));
    }
    auto lookup = [&](const std::string& key) -> store::RunId {
      if (key.empty()) return 0;
      auto it = ids_.find(key);
      return it == ids_.end() ? 0 : it->second;
    };
    CCT_RETURN_IF_ERROR(db.PutRuns(runs, [&](store::RunFile& run) {
      ids_[run.key] = run.meta.id;
      run.meta.extra["run_key"] = run.key;
      run.meta.parent_run = lookup(run.parent_key);
      run.meta.root_run = lookup(run.root_key);
      // A root records 0, never itself (format.md), whatever a file says.
      if (run.meta.root_run == run.meta.id) run.meta.root_run = 0;
    }));
    for (size_t i = 0; i < changed.size(); ++i) {
      ++pass.stored;
      if (!changed[i].name.empty()) stored_[changed[i].name] = {changed[i].seen, runs[i].meta};
    }
  }
  messages_.clear();
  if (inbox_) inbox_->Stored();
  else if (journal_read) unlink(journal.c_str());

  // Files whose runs are stored and whose processes are done go away.
  auto done = [](const store::RunMeta& m) { return m.state != store::RunState::kRecording || !ProcessAlive(m); };
  for (size_t i = 0; i < changed.size(); ++i) {
    if (changed[i].name.empty()) continue;  // a message: no file
    if (!done(stored_[changed[i].name].meta)) {
      ++pass.left;
      continue;
    }
    const std::string path = dir_ + "/" + changed[i].name;
    // Not if it was replaced since it was read: the next pass stores that.
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_ino) == changed[i].seen.inode) {
      unlink(path.c_str());
      stored_.erase(changed[i].name);
      ++pass.removed;
    } else {
      ++pass.left;
    }
  }
  for (const std::string& name : unchanged) {
    // Stored in an earlier pass while its process ran: gone now?
    if (!done(stored_[name].meta)) {
      ++pass.left;
      continue;
    }
    unlink((dir_ + "/" + name).c_str());
    stored_.erase(name);
    ++pass.removed;
  }
  return pass;
}

bool Spool::RemoveIfEmpty() const {
  DIR* d = opendir(dir_.c_str());
  if (!d) return errno == ENOENT;
  bool runs_left = false;
  std::vector<std::string> others;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (name.ends_with(store::kRunFileSuffix) || name.ends_with(".bad")) runs_left = true;
    else if (name == store::kInboxJournalName && stat((dir_ + "/" + name).c_str(), &st) == 0 && st.st_size > 0)
      runs_left = true;  // runs a failed pass could not store
    else others.push_back(name);
  }
  closedir(d);
  if (runs_left) return false;
  // The owner file, and temporary files of writers that died mid-write.
  for (const std::string& name : others) unlink((dir_ + "/" + name).c_str());
  if (rmdir(dir_.c_str()) != 0) return false;
  const std::string root = dir_.substr(0, dir_.rfind('/'));
  rmdir(root.c_str());  // only when empty: other recordings may be using it
  return true;
}

cct::Status GatherAbandoned(store::Database& db, const std::string& db_path, std::ostream& out,
                            const std::string& given_root) {
  const std::string root = SpoolRoot(db_path, given_root);
  DIR* d = opendir(root.c_str());
  if (!d) return cct::Status::Ok();
  std::vector<std::string> dirs;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;  // ".", "..", a recorder's spool being made
    const std::string dir = root + "/" + name;
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (name != kUnowned && OwnerAlive(dir)) continue;
    dirs.push_back(dir);
  }
  closedir(d);
  std::sort(dirs.begin(), dirs.end());
  size_t stored = 0, left = 0;
  for (const std::string& dir : dirs) {
    Spool spool = Spool::Existing(dir);
    CCT_ASSIGN_OR_RETURN(Spool::Pass pass, spool.Gather(db, out));
    stored += pass.stored;
    left += pass.left;
    if (dir.substr(dir.rfind('/') + 1) != kUnowned || pass.left == 0) spool.RemoveIfEmpty();
  }
  if (stored > 0) {
    out << "cct-record: gathered " << stored << (stored == 1 ? " run" : " runs")
        << " left in " << root << " by processes that outlived their recording";
    if (left > 0) out << " (" << left << " still running)";
    out << '\n';
  }
  return cct::Status::Ok();
}

}  // namespace record
