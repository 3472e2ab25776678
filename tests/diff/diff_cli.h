// Helpers for command-line tests of cct-diff, meant for reuse (e.g. by
// end-to-end tests that record real programs with cct-record into db()).
//
// A DiffDb is a temporary directory holding a database; runs come in through
// cct-import (folded stacks, AddFolded) or any tool the caller runs against
// db(); Diff() runs cct-diff with "-d db()" and returns its exit status and
// output. Not thread-safe; one per test.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace difftest {

struct Stack {
  std::string path;  // "main;compute;slow"
  double value;      // exclusive value of the path
};

// Folded-stack text ("main;compute 20\n").
std::string Folded(const std::vector<Stack>& stacks);

// Each value times (1 + amplitude * u), u uniform in [-1, 1] from `seed`:
// the small, reproducible noise of repeated runs.
std::vector<Stack> WithNoise(std::vector<Stack> stacks, double amplitude, uint64_t seed);

// Inclusive value of `path` (a stack prefix) in stacks: the sum over every
// stack equal to it or below it.
double Inclusive(const std::vector<Stack>& stacks, const std::string& path);

class DiffDb {
 public:
  DiffDb();
  const std::string& db() const { return db_; }
  std::string Path(const std::string& name) const { return dir_ / name; }

  // Imports the stacks as one run named `name` with --tag for each K=V;
  // values are `unit` of `metric`. Into `db` (default db()). Returns the run
  // id; fails the test when the import fails.
  uint32_t AddFolded(const std::vector<Stack>& stacks, const std::string& name,
                     const std::vector<std::string>& tags = {}, const std::string& metric = "cputime",
                     const std::string& unit = "ms", const std::string& db = "");

  // cct-diff -d db() ARGS (no colour, no terminal); ARGS starting with -d
  // name another database instead.
  testutil::RunResult Diff(const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& env = {}) const;

  // Replaces the temporary directory with "<tmp>" (for golden files).
  std::string Normalize(const std::string& s) const;

 private:
  testutil::TempDir dir_;
  std::string db_;
  int files_ = 0;
};

// The "path" of each entry of a cct-diff JSON list (regressions, ...).
std::set<std::vector<std::string>> Paths(const nlohmann::json& entries);

}  // namespace difftest
