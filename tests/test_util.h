// Helpers for tests: temporary directories, running the built tools as
// subprocesses, golden files.
//
// Golden files live in tests/golden/; run the suite with CCT_UPDATE_GOLDEN=1
// to rewrite them, then review the change as a diff before committing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace testutil {

std::string BuildDir();   // $CCT_BUILD_DIR (set by meson test)
std::string SourceDir();  // $CCT_SOURCE_DIR
std::string Tool(const std::string& name);  // path of a built tool, e.g. "cct-query"
std::string SharedData(const std::string& rel);  // ../shared/data/<rel> beside the checkout

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out, err;
  bool timed_out = false;
};

// Runs argv[0] with args; extra environment entries override the inherited
// ones (an empty value unsets). COLUMNS, NO_COLOR and the locale variables
// are not inherited: LC_ALL is C.UTF-8 unless `env` says otherwise. Kills
// the process after `timeout_s`.
RunResult Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
              double timeout_s = 120, const std::string& cwd = "");

// Runs `cct-query -d DB ARGS...`: its stdout; its exit status in *rc and,
// when err is given, its stderr.
std::string Query(const std::string& db, std::vector<std::string> args, int* rc, std::string* err = nullptr);

// The format version a database file is stamped with (its "meta" table;
// 0 when it cannot be read), and stamping another one: what the tests of
// version upgrades and of refusing newer files do to a file.
uint32_t StoredFormatVersion(const std::string& db_path);
bool StampFormatVersion(const std::string& db_path, uint32_t version);

// Number of lines in s (a final line without '\n' counts).
size_t LineCount(const std::string& s);
// A CSV document (RFC 4180 quoting) as rows, each header -> field.
std::vector<std::map<std::string, std::string>> ReadCsvRows(const std::string& text);

// A workload's own measurements: the "MEASURED NAME VALUE" lines of its
// output (the test programs print them), by name.
std::map<std::string, double> Measured(const std::string& out);

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ReadFileOrDie(const std::string& path);
void WriteFileOrDie(const std::string& path, const std::string& data);

// Compares `actual` with tests/golden/<name>; rewrites it under
// CCT_UPDATE_GOLDEN=1. Returns an empty string when equal, else a diff-like
// description for the assertion message.
std::string CheckGolden(const std::string& name, const std::string& actual);

}  // namespace testutil
