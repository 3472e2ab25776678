#include "importers/sqlite_db.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace importers {

namespace {

cct::Status SqliteStatusOf(const std::string& path, sqlite3* db, int rc) {
  const char* what = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const int primary = rc & 0xff;
  if (primary == SQLITE_NOTADB) return cct::BadInput(path + ": not an SQLite database (" + what + ")");
  if (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN || primary == SQLITE_FULL)
    return cct::IoError(path + ": " + what);
  return cct::BadInput(path + ": SQLite: " + what);
}

// An identifier as SQL quotes it ("a""b").
std::string SqliteQuoted(const std::string& name) {
  std::string quoted = "\"";
  for (char c : name) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + '"';
}

std::string SqliteLowerCase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

SqliteStatement::SqliteStatement(SqliteStatement&& o) noexcept : stmt_(o.stmt_), path_(o.path_) {
  o.stmt_ = nullptr;
}

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(stmt_);
    stmt_ = o.stmt_;
    path_ = o.path_;
    o.stmt_ = nullptr;
  }
  return *this;
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

cct::Result<bool> SqliteStatement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteStatusOf(*path_, sqlite3_db_handle(stmt_), rc);
}

cct::Status SqliteStatement::Reset(int index, int64_t value) {
  sqlite3_reset(stmt_);
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) return SqliteStatusOf(*path_, sqlite3_db_handle(stmt_), rc);
  return cct::Status::Ok();
}

bool SqliteStatement::IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
int64_t SqliteStatement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }
double SqliteStatement::Real(int column) const { return sqlite3_column_double(stmt_, column); }

std::string_view SqliteStatement::Text(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  if (p == nullptr) return {};
  return {reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
}

cct::Result<std::unique_ptr<SqliteDb>> SqliteDb::OpenReadOnly(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT) return cct::NotFound(path + ": no such file");
    return cct::IoError(path + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) return cct::IoError(path + ": not a regular file");
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path));
  if (rc != SQLITE_OK) return SqliteStatusOf(path, raw, rc);
  // The file is someone else's: its schema may not run code as trusted
  // (functions in views, triggers, generated columns), nor may statements
  // change it.
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
#endif
  CCT_ASSIGN_OR_RETURN(SqliteStatement list,
                       db->Prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table'"));
  for (;;) {
    CCT_ASSIGN_OR_RETURN(bool row, list.Step());
    if (!row) break;
    const std::string sql = SqliteLowerCase(list.Text(1).substr(0, 64));
    if (sql.rfind("create virtual", 0) == 0) continue;
    db->tables_.insert(std::string(list.Text(0)));
  }
  return db;
}

cct::Status SqliteDb::CreateFromScript(const std::string& path, const std::string& sql) {
  ::unlink(path.c_str());
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path));
  if (rc != SQLITE_OK) return SqliteStatusOf(path, raw, rc);
  // A fixture: no journal and no fsync per statement (tens of ms each).
  rc = sqlite3_exec(raw, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;", nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteStatusOf(path, raw, rc);
  return cct::Status::Ok();
}

SqliteDb::~SqliteDb() { sqlite3_close_v2(db_); }

cct::Result<SqliteStatement> SqliteDb::Prepare(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteStatusOf(path_, db_, rc);
  }
  return SqliteStatement(stmt, &path_);
}

cct::Result<std::set<std::string>> SqliteDb::Columns(const std::string& table) {
  std::set<std::string> out;
  if (!HasTable(table)) return out;
  CCT_ASSIGN_OR_RETURN(SqliteStatement info, Prepare("PRAGMA table_info(" + SqliteQuoted(table) + ")"));
  for (;;) {
    CCT_ASSIGN_OR_RETURN(bool row, info.Step());
    if (!row) break;
    out.insert(SqliteLowerCase(info.Text(1)));
  }
  return out;
}

uint64_t SqliteDb::MaxRowid(const std::string& table) {
  if (!HasTable(table)) return 0;
  auto q = Prepare("SELECT MAX(rowid) FROM " + SqliteQuoted(table));
  if (!q.ok()) return 0;  // a WITHOUT ROWID table
  auto row = q->Step();
  if (!row.ok() || !*row || q->IsNull(0) || q->Int(0) < 0) return 0;
  return static_cast<uint64_t>(q->Int(0));
}

}  // namespace importers
