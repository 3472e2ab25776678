// SQLite, for importers of formats that are SQLite databases (Nsight
// Systems' `nsys export --type sqlite`): the only file that includes
// sqlite3.h. A thin layer: open, prepare, step, read columns, with
// cct::Status errors that name the file.
//
// Untrusted files: a database is opened read-only with SQLite's defensive
// settings (no schema-defined functions or views run as trusted code), and
// Tables() lists plain tables only, so a reader that queries only names
// from it never runs a view or a virtual table someone put in the file.
//
// Ownership: SqliteDb owns its connection, SqliteStatement its statement
// (which must not outlive the SqliteDb it came from). Neither is
// thread-safe; different objects may be used from different threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "cct/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace importers {

class SqliteStatement {
 public:
  SqliteStatement(SqliteStatement&&) noexcept;
  SqliteStatement& operator=(SqliteStatement&&) noexcept;
  ~SqliteStatement();

  // The next row: true when there is one, false at the end.
  cct::Result<bool> Step();
  // Binds an integer to the 1-based parameter `index` and rewinds.
  cct::Status Reset(int index, int64_t value);

  bool IsNull(int column) const;
  int64_t Int(int column) const;
  double Real(int column) const;
  std::string_view Text(int column) const;  // valid until the next Step

 private:
  friend class SqliteDb;
  SqliteStatement(sqlite3_stmt* stmt, const std::string* path) : stmt_(stmt), path_(path) {}
  sqlite3_stmt* stmt_ = nullptr;
  const std::string* path_ = nullptr;  // the SqliteDb's, for messages
};

class SqliteDb {
 public:
  // Opens `path` read-only. kNotFound when it does not exist, kBadInput
  // when it is not an SQLite database (SQLite finds that on first read,
  // so Open reads the schema once).
  static cct::Result<std::unique_ptr<SqliteDb>> OpenReadOnly(const std::string& path);
  // Creates (or replaces) the database at `path` from an SQL script: for
  // tests and fuzzing, which write fixtures in the documented schema.
  static cct::Status CreateFromScript(const std::string& path, const std::string& sql);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  const std::string& path() const { return path_; }
  cct::Result<SqliteStatement> Prepare(const std::string& sql);
  // The plain tables of the database (no views, no virtual tables).
  const std::set<std::string>& Tables() const { return tables_; }
  bool HasTable(const std::string& table) const { return tables_.count(table) != 0; }
  // The columns of a table, lower-cased names (SQLite's names compare
  // without case); empty when there is no such table.
  cct::Result<std::set<std::string>> Columns(const std::string& table);
  // A table's largest rowid, a cheap estimate of its rows (for progress);
  // 0 when it has none or no rowid.
  uint64_t MaxRowid(const std::string& table);

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
  std::set<std::string> tables_;
};

}  // namespace importers
