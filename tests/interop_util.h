// Helpers shared by the interoperability tests (exports, flame graphs,
// imports of other tools' data, paper tables): running the tools, finding
// optional external programs, writing hand-built trees into a database.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cct/tree.h"
#include "store/database.h"
#include "tests/test_util.h"

namespace interop {

inline testutil::RunResult Tool(const std::string& tool, const std::string& db, std::vector<std::string> args,
                                const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv{testutil::Tool(tool), "-d", db};
  argv.insert(argv.end(), args.begin(), args.end());
  return testutil::Run(argv, env);
}
inline testutil::RunResult Query(const std::string& db, std::vector<std::string> args) {
  return Tool("cct-query", db, std::move(args));
}
inline testutil::RunResult Import(const std::string& db, std::vector<std::string> args) {
  return Tool("cct-import", db, std::move(args));
}

// The full path of an executable on $PATH, or "" when there is none.
inline std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t colon = p.find(':', start);
    if (colon == std::string::npos) colon = p.size();
    const std::string candidate = p.substr(start, colon - start) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return "";
}

// Stores `tree` as a complete run with the given tags; returns its id.
inline store::RunId StoreRun(const std::string& db_path, const cct::Tree& tree, const std::string& name,
                             const std::map<std::string, std::string>& tags = {}) {
  auto db = store::Database::Open(db_path, store::Database::Mode::kWrite);
  if (!db.ok()) throw std::runtime_error(db.status().message());
  store::RunMeta meta;
  meta.name = name;
  meta.state = store::RunState::kComplete;
  meta.source = "test";
  meta.tags = tags;
  cct::Status s = (*db)->CreateRun(meta, &tree);
  if (!s.ok()) throw std::runtime_error(s.message());
  return meta.id;
}

inline cct::Tree ReadRun(const std::string& db_path, store::RunId id) {
  auto db = store::Database::Open(db_path, store::Database::Mode::kRead);
  if (!db.ok()) throw std::runtime_error(db.status().message());
  auto t = (*db)->ReadTree(id);
  if (!t.ok()) throw std::runtime_error(t.status().message());
  return std::move(t).value();
}

// Appends a path of (kind, name) frames under the root and returns the leaf.
inline cct::NodeId AddPath(cct::Tree& t, const std::vector<std::pair<cct::FrameKind, std::string>>& frames,
                           uint8_t last_flags = 0) {
  cct::NodeId n = cct::kRootNode;
  for (size_t i = 0; i < frames.size(); ++i)
    n = t.InternChild(n, t.InternFrame(frames[i].first, frames[i].second, "", "", 0,
                                       i + 1 == frames.size() ? last_flags : 0));
  return n;
}

// The environment `go` runs in from a test: its caches under `dir` (no
// network, no HOME outside the test), the installed toolchain only.
inline std::map<std::string, std::string> GoEnv(const std::string& dir) {
  return {{"HOME", dir}, {"GOCACHE", dir + "/gocache"}, {"GOFLAGS", "-mod=mod"}, {"GOTOOLCHAIN", "local"}};
}

// One row of `go tool pprof -top`: flat and cum in the unit -unit= asked
// for (the suffix, "ns" or "B", is dropped).
struct PprofRow {
  double flat = 0, cum = 0;
};

// `go tool pprof -top` rows by name, and the "of N total" figure. Rows
// pprof marks " (inline)" (functions that only appear inlined) are keyed
// without the mark.
inline std::map<std::string, PprofRow> ParsePprofTop(const std::string& text, double* total) {
  std::map<std::string, PprofRow> rows;
  std::istringstream in(text);
  static const std::regex kRow(R"(^\s*([0-9.e+]+)([a-zA-Z]*)\s+\S+%\s+\S+%\s+([0-9.e+]+)([a-zA-Z]*)\s+\S+%\s+(.+)$)");
  static const std::regex kTotal(R"(of ([0-9.e+]+)([a-zA-Z]*) total)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kTotal)) *total = std::stod(m[1].str());
    if (!std::regex_match(line, m, kRow)) continue;
    std::string name = m[5].str();
    if (name.size() > 9 && name.compare(name.size() - 9, 9, " (inline)") == 0) name.resize(name.size() - 9);
    rows[name] = {std::stod(m[1].str()), std::stod(m[3].str())};
  }
  return rows;
}

}  // namespace interop
