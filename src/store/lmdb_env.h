// LmdbEnv: the one adapter over LMDB (the only file that includes lmdb.h).
//
// One environment per database file (MDB_NOSUBDIR), named sub-databases,
// short transactions. Before LMDB maps a file we check its meta pages
// ourselves: LMDB trusts them, and a truncated file would otherwise fault
// (SIGBUS) on the first read past its end. LMDB trusts its leaf nodes' key
// and data sizes too, so every key and value it hands back is checked to
// lie inside the file before a caller sees it (a damage status otherwise).
//
// Ownership: LmdbEnv owns the MDB_env; LmdbTxn owns one transaction and must
// not outlive its env. Views returned by Get/ForEach point into the memory
// map and are valid until the transaction ends. An env may be shared by
// threads; a transaction is used by one thread (MDB_NOTLS is set, so read
// transactions are not tied to threads).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cct/status.h"

struct MDB_env;
struct MDB_txn;

namespace store {

using Dbi = unsigned int;

class LmdbTxn;
class LmdbEnv;

// Write transactions that fill the map grow it and retry: callers write
// through this helper. `body` may run more than once.
cct::Status WithWriteTxn(LmdbEnv& env, const std::function<cct::Status(LmdbTxn&)>& body);

// New databases are readable by their owner only: profiles hold command
// lines, paths, host names and environment variables.
inline constexpr unsigned kDatabaseFileMode = 0600;

class LmdbEnv {
 public:
  // kReadWriteAlone: kReadWrite without LMDB's lock file (MDB_NOLOCK), for
  // a file only this process opens, on a network file system where the lock
  // file's shared memory and locks do not work (record/output.h).
  enum class Mode { kReadOnly, kReadWrite, kReadWriteAlone };
  // Opens (kReadWrite: creating if absent, with permissions `file_mode`,
  // for the data and the lock file) the environment at `path`.
  static cct::Result<std::unique_ptr<LmdbEnv>> Open(const std::string& path, Mode mode,
                                                    unsigned file_mode = kDatabaseFileMode);
  ~LmdbEnv();
  LmdbEnv(const LmdbEnv&) = delete;
  LmdbEnv& operator=(const LmdbEnv&) = delete;

  cct::Result<std::unique_ptr<LmdbTxn>> Begin(bool write);
  const std::string& path() const { return path_; }
  bool read_only() const { return mode_ == Mode::kReadOnly; }

 private:
  LmdbEnv(std::string path, Mode mode) : path_(std::move(path)), mode_(mode) {}
  cct::Status GrowMap();
  // Whether [data, data + size), a key or value LMDB returned, lies inside
  // the file when it points into LMDB's map: kCorrupt if it reaches past the
  // end. Thread-safe.
  cct::Status CheckView(const void* data, size_t size);
  // The start of LMDB's map of the file, found from a pointer into it; null
  // when `inside` is not in it (a page a write transaction dirtied lives in
  // memory LMDB allocated) or the map cannot be found.
  const char* LocateMap(const char* inside);
  std::optional<uint64_t> FileBytes() const;  // the data file's size now
  friend class LmdbTxn;
  friend cct::Status WithWriteTxn(LmdbEnv& env, const std::function<cct::Status(LmdbTxn&)>& body);

  std::string path_;
  Mode mode_;
  MDB_env* env_ = nullptr;
  size_t map_size_ = 0;

  std::mutex locate_mutex_;
  int locate_tries_ = 0;  // guarded by locate_mutex_
  std::atomic<const char*> map_base_{nullptr};
  size_t map_length_ = 0;  // written before map_base_ is published
  std::atomic<uint64_t> file_bytes_{0};  // the file's size when last looked at
};

class LmdbTxn {
 public:
  ~LmdbTxn();
  LmdbTxn(const LmdbTxn&) = delete;
  LmdbTxn& operator=(const LmdbTxn&) = delete;

  // Opens a named sub-database. nullopt when it does not exist and `create`
  // is false; kCorrupt when the name exists but is not a database.
  cct::Result<std::optional<Dbi>> OpenDb(const std::string& name, bool create);
  // Whether the unnamed main database holds any key (a foreign LMDB file).
  cct::Result<bool> MainDbEmpty();

  cct::Result<std::optional<std::string_view>> Get(Dbi dbi, std::string_view key);
  cct::Status Put(Dbi dbi, std::string_view key, std::string_view value);
  cct::Status Delete(Dbi dbi, std::string_view key);  // absent keys are fine
  // Visits keys >= `from` in order while `visit` returns true.
  cct::Status ForEach(Dbi dbi, std::string_view from,
                      const std::function<bool(std::string_view key, std::string_view value)>& visit);
  // Deletes every key starting with `prefix`.
  cct::Status DeletePrefix(Dbi dbi, std::string_view prefix);

  cct::Status Commit();
  void Abort();

 private:
  LmdbTxn(LmdbEnv* env, MDB_txn* txn) : env_(env), txn_(txn) {}
  friend class LmdbEnv;
  cct::Status Error(int rc, const char* what) const;

  LmdbEnv* env_;
  MDB_txn* txn_;
};

}  // namespace store
