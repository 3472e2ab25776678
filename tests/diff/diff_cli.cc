#include "tests/diff/diff_cli.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <regex>

namespace difftest {

std::string Folded(const std::vector<Stack>& stacks) {
  std::string out;
  char buf[64];
  for (const Stack& s : stacks) {
    std::snprintf(buf, sizeof buf, " %.17g\n", s.value);
    out += s.path + buf;
  }
  return out;
}

std::vector<Stack> WithNoise(std::vector<Stack> stacks, double amplitude, uint64_t seed) {
  uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (Stack& s : stacks) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG (Knuth's MMIX constants)
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0 * 2 - 1;
    s.value *= 1 + amplitude * u;
  }
  return stacks;
}

double Inclusive(const std::vector<Stack>& stacks, const std::string& path) {
  double sum = 0;
  for (const Stack& s : stacks)
    if (s.path == path || s.path.compare(0, path.size() + 1, path + ";") == 0) sum += s.value;
  return sum;
}

DiffDb::DiffDb() : db_(dir_ / "diff.db") {}

uint32_t DiffDb::AddFolded(const std::vector<Stack>& stacks, const std::string& name,
                           const std::vector<std::string>& tags, const std::string& metric, const std::string& unit,
                           const std::string& db) {
  const std::string file = dir_ / ("run" + std::to_string(++files_) + ".folded");
  testutil::WriteFileOrDie(file, Folded(stacks));
  std::vector<std::string> argv{testutil::Tool("cct-import"), "-d", db.empty() ? db_ : db, "--from", "folded", file,
                                "--name", name, "--metric", metric, "--unit", unit};
  for (const std::string& t : tags) {
    argv.push_back("--tag");
    argv.push_back(t);
  }
  const testutil::RunResult r = testutil::Run(argv);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex(R"(as run (\d+) )")));
  return static_cast<uint32_t>(std::stoul(m[1].str()));
}

testutil::RunResult DiffDb::Diff(const std::vector<std::string>& args,
                                 const std::map<std::string, std::string>& env) const {
  std::vector<std::string> argv{testutil::Tool("cct-diff")};
  if (args.empty() || args[0] != "-d") argv.insert(argv.end(), {"-d", db_});
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> e{{"NO_COLOR", ""}, {"CCT_DB", ""}, {"COLUMNS", ""}};
  for (const auto& [k, v] : env) e[k] = v;
  return testutil::Run(argv, e);
}

std::string DiffDb::Normalize(const std::string& s) const {
  std::string out = s;
  for (size_t at = out.find(dir_.path()); at != std::string::npos; at = out.find(dir_.path(), at))
    out.replace(at, dir_.path().size(), "<tmp>");
  return out;
}

std::set<std::vector<std::string>> Paths(const nlohmann::json& entries) {
  std::set<std::vector<std::string>> out;
  for (const auto& e : entries) out.insert(e["path"].get<std::vector<std::string>>());
  return out;
}

}  // namespace difftest
