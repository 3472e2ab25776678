// docs/cli.md's and docs/query.md's examples, run as written: every ```console block is a
// session of commands (lines starting "$ ") each followed by what it prints
// (stderr, then stdout), run in a fresh directory that holds the fixtures
// the pages' introductions name (docs.db, runs.db, gpu.db, fig3.db and the
// folded files, diff.db as docs/diff.md's script builds it, and
// docs/query.md's mpi.db). A changed
// report that leaves the page stale fails here.
// Timestamps (YYYY-MM-DD HH:MM:SS) and the `host` line are the only parts
// compared loosely (they differ between the machine that wrote the page and
// the one running the test), and trailing blank lines are not compared.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;

struct DocCommand {
  size_t line;  // in docs/cli.md, for the failure message
  std::string text;
  std::string expected;
};

// The ```console blocks' commands, in page order, one vector per block.
std::vector<std::vector<DocCommand>> ConsoleBlocks(const std::string& page, const std::string& page_name) {
  std::vector<std::vector<DocCommand>> blocks;
  std::istringstream in(page);
  bool inside = false;
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!inside) {
      if (line == "```console") {
        inside = true;
        blocks.emplace_back();
      }
      continue;
    }
    if (line == "```") {
      inside = false;
      continue;
    }
    if (line.rfind("$ ", 0) == 0) {
      blocks.back().push_back({number, line.substr(2), ""});
    } else {
      REQUIRE_MESSAGE(!blocks.back().empty(), page_name << ":" << number << ": output before any command");
      blocks.back().back().expected += line + "\n";
    }
  }
  // A blank line separates one command's output from the next command.
  for (auto& block : blocks)
    for (DocCommand& c : block) {
      while (c.expected.size() >= 2 && c.expected.compare(c.expected.size() - 2, 2, "\n\n") == 0) c.expected.pop_back();
      if (c.expected == "\n") c.expected.clear();  // a command that prints nothing
    }
  return blocks;
}

// Words of a command as a POSIX shell splits them (quotes, no expansions).
std::vector<std::string> DocWords(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool have = false;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote) quote = 0;
      else word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      have = true;
    } else if (c == ' ') {
      if (have) words.push_back(word);
      word.clear();
      have = false;
    } else {
      word += c;
      have = true;
    }
  }
  if (have) words.push_back(word);
  return words;
}

std::string DocNormalize(std::string s) {
  // Trailing blank lines (--help ends with one) cannot be told from the
  // blank line that separates commands on the page.
  while (s.size() >= 2 && s.compare(s.size() - 2, 2, "\n\n") == 0) s.pop_back();
  s = std::regex_replace(s, std::regex(R"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\dZ?)"), "<time>");
  s = std::regex_replace(s, std::regex(R"((^|\n)host( +)\S+)"), "$1host$2<host>");
  return s;
}

void DocRun(const fs::path& dir, const std::vector<std::string>& argv) {
  auto r = testutil::Run(argv, {{"TZ", "UTC"}}, 120, dir.string());
  REQUIRE_MESSAGE(r.exit_code == 0, argv[0] << ": " << r.err);
}

// The databases and files the page's introduction describes.
void BuildDocFixtures(const fs::path& dir) {
  const std::string src = testutil::SourceDir();
  const std::string imp = testutil::Tool("cct-import");
  fs::create_directories(dir / "examples");
  fs::copy_file(src + "/examples/sample-profile.json", dir / "examples/sample-profile.json");
  DocRun(dir, {imp, "-d", "docs.db", "--from", "hatchet", "examples/sample-profile.json"});
  fs::copy_file(src + "/examples/mpi-profile.json", dir / "examples/mpi-profile.json");
  DocRun(dir, {imp, "-d", "mpi.db", "--from", "hatchet", "examples/mpi-profile.json"});

  testutil::WriteFileOrDie(dir / "a.folded", "main;solve;dgemm 30\nmain;solve;dtrsm 10\nmain;io 5\n");
  testutil::WriteFileOrDie(dir / "b.folded", "main;solve;dgemm 34\nmain;solve;dtrsm 9\nmain;io 8\n");
  testutil::WriteFileOrDie(dir / "bad.folded", "main;solve 3\nmain;solve;dgemm x\n");
  fs::create_directories(dir / "fixture");
  for (const char* f : {"a.folded", "b.folded", "bad.folded"}) fs::copy_file(dir / f, dir / "fixture" / f);
  const fs::path fixture = dir / "fixture";
  DocRun(fixture, {imp, "-d", "runs.db", "--from", "folded", "a.folded", "--name", "base", "--tag", "commit=abc"});
  DocRun(fixture, {imp, "-d", "runs.db", "--from", "folded", "b.folded", "--name", "base", "--tag", "commit=abc"});
  DocRun(fixture, {imp, "-d", "runs.db", "--from", "folded", "b.folded", "--metric", "cputime", "--unit", "ms",
                   "--tag", "commit=def"});
  DocRun(fixture, {imp, "-d", "runs.db", "--from", "folded", "bad.folded", "--skip-bad-lines"});
  fs::rename(fixture / "runs.db", dir / "runs.db");
  fs::rename(fixture / "runs.db-lock", dir / "runs.db-lock");
  fs::remove_all(fixture);

  // diff.db: what docs/diff.md's "Reproducing the examples" script builds
  // (seeded noise, so the same bytes everywhere), run as the page shows it,
  // bar its first line (the directory it makes).
  {
    const std::string diff_page = testutil::ReadFileOrDie(src + "/docs/diff.md");
    const size_t at = diff_page.find("## Reproducing the examples");
    REQUIRE(at != std::string::npos);
    const size_t open = diff_page.find("```sh\n", at), close = diff_page.find("\n```", open + 6);
    REQUIRE(open != std::string::npos);
    REQUIRE(close != std::string::npos);
    std::string script = diff_page.substr(open + 6, close - open - 6);
    REQUIRE(script.starts_with("cd "));
    script = script.substr(script.find('\n') + 1);
    fs::create_directories(dir / "diffdocs");
    testutil::WriteFileOrDie(dir / "diffdocs/make.sh", script + "\n");
    const std::string tools = fs::path(testutil::Tool("cct-import")).parent_path().string();
    auto r = testutil::Run({"/bin/bash", "-e", "make.sh"}, {{"PATH", tools + ":/usr/bin:/bin"}}, 120,
                           (dir / "diffdocs").string());
    REQUIRE_MESSAGE(r.exit_code == 0, "diff.md's script: " << r.err);
    fs::rename(dir / "diffdocs/diff.db", dir / "diff.db");
    fs::rename(dir / "diffdocs/diff.db-lock", dir / "diff.db-lock");
    fs::remove_all(dir / "diffdocs");
  }

  for (const char* f : {"gpu-run.json", "raw.csv"}) fs::copy_file(src + "/tests/data/ncu/" + f, dir / f);
  DocRun(dir, {imp, "-d", "gpu.db", "--from", "hatchet", "gpu-run.json"});
  DocRun(dir, {imp, "-d", "gpu.db", "--from", "ncu-csv", "raw.csv", "--run", "latest"});

  // fig3.db: solve takes N ms and other 1 ms per run.
  int i = 0;
  for (const auto& [variant, ms] : std::vector<std::pair<std::string, std::string>>{
           {"base", "10"}, {"base", "12"}, {"base", "11"}, {"base", "13"}, {"base", "9"},
           {"fused", "8.0"}, {"fused", "8.2"}, {"fused", "8.1"}, {"fused", "8.3"}}) {
    const std::string file = (dir / ("fig3-" + std::to_string(i++) + ".folded")).string();
    testutil::WriteFileOrDie(file, "main;solve " + ms + "\nmain;other 1\n");
    DocRun(dir, {imp, "-d", "fig3.db", "--from", "folded", file, "--metric", "cputime", "--unit", "ms", "--tag",
                 "exp=fig3", "--tag", "variant=" + variant});
    fs::remove(file);
  }
}

}  // namespace

TEST_CASE("docs/cli.md and docs/query.md: every console example prints what the page shows") {
  testutil::TempDir tmp;
  const fs::path fixtures = fs::path(tmp.path()) / "fixtures";
  BuildDocFixtures(fixtures);
  size_t commands = 0, block_count = 0;
  for (const std::string page_name : {"docs/cli.md", "docs/query.md"}) {
    const std::string page = testutil::ReadFileOrDie(testutil::SourceDir() + "/" + page_name);
    const auto blocks = ConsoleBlocks(page, page_name);
    REQUIRE(blocks.size() >= (page_name == "docs/cli.md" ? 10 : 3));
    for (size_t b = 0; b < blocks.size(); ++b) {
      // Each block starts from the fixtures as the introduction describes them.
      const fs::path dir = fs::path(tmp.path()) / ("block" + std::to_string(block_count++));
      fs::copy(fixtures, dir, fs::copy_options::recursive);
      for (const DocCommand& c : blocks[b]) {
        // Two shell endings the page uses, done here (no shell runs):
        // "| head -N" keeps the first N lines of stdout, and
        // '; echo "exit $?"' prints the exit status after the output.
        std::string text = c.text;
        size_t head = 0;
        bool echo_status = false;
        static const std::regex kHead(R"(^(.*) \| head -(\d+)$)");
        static constexpr std::string_view kEchoStatus = "; echo \"exit $?\"";
        std::smatch m;
        if (std::regex_match(text, m, kHead)) {
          head = std::stoul(m[2].str());
          text = m[1].str();
        } else if (text.ends_with(kEchoStatus)) {
          echo_status = true;
          text.resize(text.size() - kEchoStatus.size());
        }
        std::vector<std::string> argv = DocWords(text);
        REQUIRE(!argv.empty());
        const std::string tool = argv[0];
        CAPTURE(c.line);
        CAPTURE(c.text);
        REQUIRE_MESSAGE((tool == "cct-query" || tool == "cct-import" || tool == "cct-diff" || tool == "cat"),
                        page_name << ":" << c.line << ": a console example runs cct-query, cct-import, cct-diff or cat");
        argv[0] = tool == "cat" ? "/bin/cat" : testutil::Tool(tool);
        auto r = testutil::Run(argv, {{"TZ", "UTC"}}, 120, dir.string());
        if (head > 0) {
          size_t end = 0;
          for (size_t n = 0; n < head && end != std::string::npos; ++n) {
            end = r.out.find('\n', end);
            if (end != std::string::npos) ++end;
          }
          if (end != std::string::npos) r.out.resize(end);
        }
        if (echo_status) r.out += "exit " + std::to_string(r.exit_code) + "\n";
        const std::string actual = DocNormalize(r.err + r.out), expected = DocNormalize(c.expected);
        CHECK_MESSAGE(actual == expected, page_name << ":" << c.line << ": $ " << c.text << "\n--- the page shows:\n"
                                                        << expected << "--- the tool prints:\n" << actual);
        ++commands;
      }
    }
  }
  MESSAGE(commands << " documented commands in " << block_count << " blocks");
}
