#include "store/lmdb_env.h"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "store/fault_guard.h"

namespace store {

using cct::Corrupt;
using cct::ErrorCode;
using cct::IoError;
using cct::Result;
using cct::Status;

namespace {

constexpr size_t kInitialMapSize = size_t{1} << 32;  // address space, not disk
constexpr unsigned kMaxDbs = 8;
// A pointer that is not in the map (a write transaction's own pages) makes
// LocateMap read /proc/self/maps; after this many misses it stops trying,
// and views go unchecked (the tools' FaultGuard still catches a fault).
constexpr int kMaxLocateTries = 8;

// LMDB's on-disk meta page (data format 1, unchanged since 0.9.0; see
// MDB_meta in mdb.c): page header (16 bytes), then magic, version, address,
// mapsize, two 48-byte MDB_db records (the first's md_pad is the page size),
// last page number, transaction id.
constexpr uint32_t kLmdbMagic = 0xBEEFC0DE;
constexpr size_t kPageHeader = 16;
constexpr size_t kMetaMagic = kPageHeader + 0;
constexpr size_t kMetaVersion = kPageHeader + 4;
constexpr size_t kMetaPageSize = kPageHeader + 24;  // mm_dbs[0].md_pad
// Each MDB_db: pad, flags, depth, three page counts, entries, then the root
// page (P_INVALID, all ones, for an empty table).
constexpr size_t kMetaDbs = kPageHeader + 24;
constexpr size_t kDbSize = 48;
constexpr size_t kDbRoot = 40;
constexpr uint64_t kNoPage = ~uint64_t{0};
// A table's root as LMDB may follow it: none (empty), or a data page of the
// file (LMDB asserts, and aborts, on a meta page).
bool ValidRoot(uint64_t root, uint64_t last_page) { return root == kNoPage || (root >= 2 && root <= last_page); }
constexpr size_t kMetaLastPage = kPageHeader + 24 + 2 * 48;
bool ValidPageSize(uint32_t psize) { return psize >= 512 && psize <= 65536 && (psize & (psize - 1)) == 0; }
constexpr size_t kMetaTxnId = kMetaLastPage + 8;
constexpr size_t kMetaEnd = kMetaTxnId + 8;

template <class T>
T Load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Whether a process holds a lock on the database's lock file. A writer
// creating the database makes DB-lock first (LMDB's MDB_NOSUBDIR naming),
// then the data file, which stays empty until LMDB writes its first pages;
// it holds a lock on DB-lock all along.
bool LockHeld(const std::string& path) {
  const int fd = ::open((path + "-lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  const bool held = ::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

// An empty data file that a process is creating: waits (up to 2 s) for its
// first pages. True when they came.
bool AwaitCreation(const std::string& path) {
  for (int i = 0; i < 200 && LockHeld(path); ++i) {
    ::usleep(10000);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && st.st_size > 0) return true;
  }
  return false;
}

// Validates the file before LMDB maps it. Returns kNotFound for a missing file.
Status CheckFile(const std::string& path, bool allow_empty) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return cct::NotFound(path + ": no such database file");
    return IoError(path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return IoError(path + ": " + std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Corrupt(path + " is a directory, not a cctdb database file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    if (allow_empty) return Status::Ok();
    // A reader that arrives while a writer creates the database waits for
    // it rather than calling it damaged.
    if (AwaitCreation(path)) return CheckFile(path, allow_empty);
    return Corrupt(path + " is an empty file, not a cctdb database");
  }
  unsigned char head[kMetaEnd];
  const ssize_t got = ::pread(fd, head, sizeof head, 0);
  if (got != static_cast<ssize_t>(sizeof head) || Load<uint32_t>(head + kMetaMagic) != kLmdbMagic) {
    ::close(fd);
    return Corrupt(path + " is not a cctdb database (not an LMDB file)");
  }
  if (Load<uint32_t>(head + kMetaVersion) != 1) {
    ::close(fd);
    return Corrupt(path + " is an LMDB file of an unsupported LMDB data version");
  }
  const uint32_t psize = Load<uint32_t>(head + kMetaPageSize);
  if (!ValidPageSize(psize)) {
    ::close(fd);
    return Corrupt(path + " is damaged: invalid page size in its header");
  }
  // Both meta pages; LMDB uses the one with the larger transaction id.
  uint64_t last_page = Load<uint64_t>(head + kMetaLastPage);
  uint64_t txnid = Load<uint64_t>(head + kMetaTxnId);
  unsigned char second[kMetaEnd];
  if (size < 2 * static_cast<uint64_t>(psize) ||
      ::pread(fd, second, sizeof second, psize) != static_cast<ssize_t>(sizeof second)) {
    ::close(fd);
    return Corrupt(path + " is damaged: the file is truncated (" + std::to_string(size) + " bytes)");
  }
  // The size again, after the meta pages: a writer that committed since the
  // first fstat grew the file before writing the meta page we may have just
  // read (LMDB writes a transaction's pages, then its meta page), so only a
  // size taken after the read can be compared with it.
  struct stat after {};
  const uint64_t final_size = ::fstat(fd, &after) == 0 ? static_cast<uint64_t>(after.st_size) : size;
  ::close(fd);
  const unsigned char* meta = head;
  if (Load<uint32_t>(second + kMetaMagic) == kLmdbMagic && Load<uint64_t>(second + kMetaTxnId) > txnid) {
    meta = second;
    last_page = Load<uint64_t>(second + kMetaLastPage);
    txnid = Load<uint64_t>(second + kMetaTxnId);
  }
  // LMDB takes the page size from the header it uses and divides by it: a
  // second header with a newer transaction and a page size of 0 made
  // mdb_env_open die of SIGFPE (found by database_fuzz). One file has one
  // page size; a second header that disagrees is damage.
  if (Load<uint32_t>(meta + kMetaPageSize) != psize)
    return Corrupt(path + " is damaged: its two headers name different page sizes (" + std::to_string(psize) +
                   " and " + std::to_string(Load<uint32_t>(meta + kMetaPageSize)) + ")");
  // The free-page and main tables' roots: LMDB asserts (aborts) on a root
  // that is one of the two meta pages, and reads wherever any other points.
  for (size_t db = 0; db < 2; ++db) {
    const uint64_t root = Load<uint64_t>(meta + kMetaDbs + db * kDbSize + kDbRoot);
    if (!ValidRoot(root, last_page))
      return Corrupt(path + " is damaged: its header names page " + std::to_string(root) + " as the root of a table (" +
                     std::to_string(last_page + 1) + " pages)");
  }
  if (last_page > (uint64_t{1} << 40) || (last_page + 1) * psize > final_size)
    return Corrupt(path + " is damaged: the file is truncated (" + std::to_string(final_size) + " bytes, its header expects " +
                   std::to_string((last_page + 1) * psize) + ")");
  return Status::Ok();
}

// LMDB asserts on pages it cannot trust; a tool reading a damaged file
// reports it instead of aborting (fault_guard.h).
void OnLmdbAssert(MDB_env*, const char* message) { ReportLmdbAssert(message); }

}  // namespace

Result<std::unique_ptr<LmdbEnv>> LmdbEnv::Open(const std::string& path, Mode mode, unsigned file_mode) {
  const bool writable = mode != Mode::kReadOnly;
  Status check = CheckFile(path, /*allow_empty=*/writable);
  if (!check.ok() && !(writable && check.code() == ErrorCode::kNotFound)) return check;

  std::unique_ptr<LmdbEnv> env(new LmdbEnv(path, mode));
  int rc = mdb_env_create(&env->env_);
  if (rc != 0) return IoError(std::string("cannot create LMDB environment: ") + mdb_strerror(rc));
  mdb_env_set_assert(env->env_, OnLmdbAssert);
  mdb_env_set_maxdbs(env->env_, kMaxDbs);
  mdb_env_set_maxreaders(env->env_, 510);
  env->map_size_ = kInitialMapSize;
  mdb_env_set_mapsize(env->env_, env->map_size_);
  unsigned flags = MDB_NOSUBDIR | MDB_NOTLS;
  if (!writable) flags |= MDB_RDONLY;
  if (mode == Mode::kReadWriteAlone) flags |= MDB_NOLOCK;
  rc = mdb_env_open(env->env_, path.c_str(), flags, static_cast<mdb_mode_t>(file_mode));
  if (rc == EACCES && !writable) {
    // A read-only directory has no room for the lock file: read without one.
    mdb_env_close(env->env_);
    env->env_ = nullptr;
    mdb_env_create(&env->env_);
    mdb_env_set_assert(env->env_, OnLmdbAssert);
    mdb_env_set_maxdbs(env->env_, kMaxDbs);
    mdb_env_set_mapsize(env->env_, env->map_size_);
    rc = mdb_env_open(env->env_, path.c_str(), flags | MDB_NOLOCK, static_cast<mdb_mode_t>(file_mode));
  }
  if (rc != 0) {
    mdb_env_close(env->env_);
    env->env_ = nullptr;
    if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH || rc == MDB_CORRUPTED)
      return Corrupt(path + " is not a cctdb database (" + mdb_strerror(rc) + ")");
    return IoError(path + ": " + mdb_strerror(rc));
  }
  MDB_envinfo info;
  if (mdb_env_info(env->env_, &info) == 0) env->map_size_ = std::max(env->map_size_, info.me_mapsize);
  return env;
}

LmdbEnv::~LmdbEnv() {
  if (env_) mdb_env_close(env_);
}

Status LmdbEnv::GrowMap() {
  const size_t next = map_size_ * 2;
  const int rc = mdb_env_set_mapsize(env_, next);
  if (rc != 0) return IoError(path_ + ": cannot grow the database map: " + mdb_strerror(rc));
  map_size_ = next;
  return Status::Ok();
}

std::optional<uint64_t> LmdbEnv::FileBytes() const {
  mdb_filehandle_t fd = -1;
  struct stat st {};
  if (mdb_env_get_fd(env_, &fd) != 0 || ::fstat(fd, &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

const char* LmdbEnv::LocateMap(const char* inside) {
  const std::lock_guard<std::mutex> lock(locate_mutex_);
  if (const char* base = map_base_.load(std::memory_order_acquire)) return base;
  if (locate_tries_ >= kMaxLocateTries) return nullptr;
  ++locate_tries_;
  const std::optional<uint64_t> file_bytes = FileBytes();
  if (!file_bytes) return nullptr;
  // LMDB maps the data file shared from offset 0; a key or value it returns
  // lies in that map or in its private heap. Device and inode are not
  // compared: on overlay file systems /proc shows the lower file's.
  std::ifstream maps("/proc/self/maps");
  const uintptr_t p = reinterpret_cast<uintptr_t>(inside);
  std::string line;
  while (std::getline(maps, line)) {
    uintptr_t lo = 0, hi = 0;
    unsigned long long offset = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %7s %llx", &lo, &hi, perms, &offset) != 4) continue;
    if (p < lo || p >= hi) continue;
    if (perms[3] != 's' || offset != 0) return nullptr;
    map_length_ = hi - lo;
    file_bytes_.store(*file_bytes, std::memory_order_relaxed);
    map_base_.store(reinterpret_cast<const char*>(lo), std::memory_order_release);
    return reinterpret_cast<const char*>(lo);
  }
  return nullptr;
}

Status LmdbEnv::CheckView(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  const char* base = map_base_.load(std::memory_order_acquire);
  if (base == nullptr && (base = LocateMap(p)) == nullptr) return Status::Ok();
  const uintptr_t at = reinterpret_cast<uintptr_t>(p), lo = reinterpret_cast<uintptr_t>(base);
  if (at < lo || at - lo >= map_length_) return Status::Ok();
  const uint64_t offset = at - lo;
  const auto inside = [&](uint64_t file_bytes) { return offset <= file_bytes && size <= file_bytes - offset; };
  if (inside(file_bytes_.load(std::memory_order_relaxed))) return Status::Ok();
  // Another writer may have grown the file since we last looked.
  if (const std::optional<uint64_t> now = FileBytes()) {
    file_bytes_.store(*now, std::memory_order_relaxed);
    if (inside(*now)) return Status::Ok();
  }
  return Corrupt(DamageMessage(path_, "a record reaches past the end of the file"));
}

Result<std::unique_ptr<LmdbTxn>> LmdbEnv::Begin(bool write) {
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env_, nullptr, write ? 0 : MDB_RDONLY, &txn);
  if (rc == MDB_MAP_RESIZED) {
    // Another process grew the map: adopt its size.
    mdb_env_set_mapsize(env_, 0);
    MDB_envinfo info;
    if (mdb_env_info(env_, &info) == 0) map_size_ = info.me_mapsize;
    rc = mdb_txn_begin(env_, nullptr, write ? 0 : MDB_RDONLY, &txn);
  }
  if (rc != 0) return IoError(path_ + ": cannot begin transaction: " + mdb_strerror(rc));
  return std::unique_ptr<LmdbTxn>(new LmdbTxn(this, txn));
}

LmdbTxn::~LmdbTxn() { Abort(); }

Status LmdbTxn::Error(int rc, const char* what) const {
  const std::string msg = env_->path() + ": " + what + ": " + mdb_strerror(rc);
  if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INCOMPATIBLE || rc == MDB_BAD_VALSIZE)
    return Corrupt(DamageMessage(env_->path(), std::string(what) + ": " + mdb_strerror(rc)));
  if (rc == MDB_MAP_FULL) return Status(ErrorCode::kUnavailable, msg);  // WithWriteTxn grows and retries
  return IoError(msg);
}

Result<std::optional<Dbi>> LmdbTxn::OpenDb(const std::string& name, bool create) {
  // The table's record in the main table (an MDB_db, its root page at
  // kDbRoot): LMDB asserts (aborts) on a root that is a meta page and
  // follows any other, so it is checked first, as CheckFile checks the
  // header's. The main table is opened by name NULL first: that sets its
  // key comparison, without which mdb_get on it crashes.
  MDB_dbi main = 0;
  if (mdb_dbi_open(txn_, nullptr, 0, &main) == 0) {
    MDB_val k{name.size(), const_cast<char*>(name.data())};
    MDB_val v;
    const int got = mdb_get(txn_, main, &k, &v);
    // A failed read leaves the transaction unusable: report it as opening
    // the table would have.
    if (got != 0 && got != MDB_NOTFOUND) return Error(got, "cannot open table");
    if (got == 0 && v.mv_size == kDbSize) {
      CCT_RETURN_IF_ERROR(env_->CheckView(v.mv_data, v.mv_size));
      const uint64_t root = Load<uint64_t>(static_cast<const unsigned char*>(v.mv_data) + kDbRoot);
      MDB_envinfo info;
      const uint64_t last_page = mdb_env_info(env_->env_, &info) == 0 ? info.me_last_pgno : kNoPage - 1;
      if (!ValidRoot(root, last_page))
        return Corrupt(DamageMessage(env_->path(), "table '" + name + "' names page " + std::to_string(root) +
                                                       " as its root"));
    }
  }
  MDB_dbi dbi = 0;
  const int rc = mdb_dbi_open(txn_, name.c_str(), create ? MDB_CREATE : 0, &dbi);
  if (rc == MDB_NOTFOUND) return std::optional<Dbi>();
  if (rc == MDB_INCOMPATIBLE) return Corrupt(env_->path() + " is not a cctdb database (key '" + name + "' is not a table)");
  if (rc != 0) return Error(rc, "cannot open table");
  return std::optional<Dbi>(dbi);
}

Result<bool> LmdbTxn::MainDbEmpty() {
  MDB_stat st;
  const int rc = mdb_stat(txn_, 1 /* MAIN_DBI */, &st);
  if (rc != 0) return Error(rc, "cannot read the main table");
  return st.ms_entries == 0;
}

Result<std::optional<std::string_view>> LmdbTxn::Get(Dbi dbi, std::string_view key) {
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v;
  const int rc = mdb_get(txn_, dbi, &k, &v);
  if (rc == MDB_NOTFOUND) return std::optional<std::string_view>();
  if (rc != 0) return Error(rc, "read failed");
  CCT_RETURN_IF_ERROR(env_->CheckView(v.mv_data, v.mv_size));
  return std::optional<std::string_view>(std::string_view(static_cast<const char*>(v.mv_data), v.mv_size));
}

Status LmdbTxn::Put(Dbi dbi, std::string_view key, std::string_view value) {
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{value.size(), const_cast<char*>(value.data())};
  const int rc = mdb_put(txn_, dbi, &k, &v, 0);
  return rc == 0 ? Status::Ok() : Error(rc, "write failed");
}

Status LmdbTxn::Delete(Dbi dbi, std::string_view key) {
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  const int rc = mdb_del(txn_, dbi, &k, nullptr);
  return (rc == 0 || rc == MDB_NOTFOUND) ? Status::Ok() : Error(rc, "delete failed");
}

Status LmdbTxn::ForEach(Dbi dbi, std::string_view from,
                        const std::function<bool(std::string_view, std::string_view)>& visit) {
  MDB_cursor* cur = nullptr;
  int rc = mdb_cursor_open(txn_, dbi, &cur);
  if (rc != 0) return Error(rc, "cannot open cursor");
  MDB_val k{from.size(), const_cast<char*>(from.data())};
  MDB_val v;
  rc = mdb_cursor_get(cur, &k, &v, from.empty() ? MDB_FIRST : MDB_SET_RANGE);
  while (rc == 0) {
    Status inside = env_->CheckView(k.mv_data, k.mv_size);
    if (inside.ok()) inside = env_->CheckView(v.mv_data, v.mv_size);
    if (!inside.ok()) {
      mdb_cursor_close(cur);
      return inside;
    }
    if (!visit(std::string_view(static_cast<const char*>(k.mv_data), k.mv_size),
               std::string_view(static_cast<const char*>(v.mv_data), v.mv_size)))
      break;
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  }
  mdb_cursor_close(cur);
  return (rc == 0 || rc == MDB_NOTFOUND) ? Status::Ok() : Error(rc, "cursor read failed");
}

Status LmdbTxn::DeletePrefix(Dbi dbi, std::string_view prefix) {
  MDB_cursor* cur = nullptr;
  int rc = mdb_cursor_open(txn_, dbi, &cur);
  if (rc != 0) return Error(rc, "cannot open cursor");
  MDB_val k{prefix.size(), const_cast<char*>(prefix.data())};
  MDB_val v;
  rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  while (rc == 0) {
    if (Status inside = env_->CheckView(k.mv_data, k.mv_size); !inside.ok()) {
      mdb_cursor_close(cur);
      return inside;
    }
    const std::string_view key(static_cast<const char*>(k.mv_data), k.mv_size);
    if (key.substr(0, prefix.size()) != prefix) break;
    rc = mdb_cursor_del(cur, 0);
    if (rc != 0) break;
    // Re-seek rather than rely on the cursor's position after a delete.
    k = MDB_val{prefix.size(), const_cast<char*>(prefix.data())};
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  }
  mdb_cursor_close(cur);
  return (rc == 0 || rc == MDB_NOTFOUND) ? Status::Ok() : Error(rc, "delete failed");
}

Status LmdbTxn::Commit() {
  if (!txn_) return IoError("transaction already finished");
  const int rc = mdb_txn_commit(txn_);
  txn_ = nullptr;
  return rc == 0 ? Status::Ok() : Error(rc, "commit failed");
}

void LmdbTxn::Abort() {
  if (txn_) mdb_txn_abort(txn_);
  txn_ = nullptr;
}

Status WithWriteTxn(LmdbEnv& env, const std::function<Status(LmdbTxn&)>& body) {
  for (int attempt = 0; attempt < 12; ++attempt) {
    CCT_ASSIGN_OR_RETURN(std::unique_ptr<LmdbTxn> txn, env.Begin(true));
    Status s = body(*txn);
    if (s.ok()) s = txn->Commit();
    else txn->Abort();
    if (s.code() != ErrorCode::kUnavailable || s.message().find("MDB_MAP_FULL") == std::string::npos) return s;
    CCT_RETURN_IF_ERROR(env.GrowMap());
  }
  return IoError(env.path() + ": the database map cannot grow further");
}

}  // namespace store
