// Importers on hostile sizes: a 1 GiB line and deep nesting end in one line
// and exit 2 with bounded memory, never a crash (issue "Hardening").
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "test_util.h"

namespace {

// cct-import under an address-space limit (KiB) below the input's size: a
// reader that took the whole line would fail to allocate it.
testutil::RunResult ImportCapped(const std::string& db, const std::string& from, const std::string& file,
                                 const std::string& extra = "", long cap_kib = 786432) {
  const std::string cmd = "ulimit -v " + std::to_string(cap_kib) + "; exec '" + testutil::Tool("cct-import") +
                          "' -d '" + db + "' --from " + from + " " + extra + " '" + file + "'";
  return testutil::Run({"/bin/sh", "-c", cmd});
}

// A sparse file of `bytes` NUL bytes after `head`: no newline after it.
void SparseFile(const std::string& path, const std::string& head, off_t bytes) {
  testutil::WriteFileOrDie(path, head);
  const int fd = ::open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, static_cast<off_t>(head.size()) + bytes) == 0);
  ::close(fd);
}

// One short line on stderr that says `what` (never the overlong piece
// itself), and exit 2.
void CheckRefused(const testutil::RunResult& r, const std::string& what) {
  INFO(r.err.substr(0, 2000));
  CHECK(r.exit_code == 2);
  CHECK(testutil::LineCount(r.err) == 1);
  CHECK(r.err.size() < 1000);
  CHECK(r.err.find(what) != std::string::npos);
}

}  // namespace

TEST_CASE("importers: a line of 1 GiB or more is one line and exit 2, read no further than the limit") {
  testutil::TempDir dir;
  const std::string db = dir / "l.db";
  SUBCASE("folded, the first line") {
    const std::string file = dir / "one.folded";
    SparseFile(file, "", off_t{1} << 30);
    auto r = ImportCapped(db, "folded", file);
    CheckRefused(r, "line 1 is longer than 16 MiB");
  }
  SUBCASE("folded, after three good lines") {
    const std::string file = dir / "four.folded";
    SparseFile(file, "main;a 1\nmain;b 2\nmain;c 3\n", off_t{1} << 30);
    auto r = ImportCapped(db, "folded", file);
    CheckRefused(r, "line 4 is longer than 16 MiB");
  }
  SUBCASE("ncu CSV") {
    // The run whose kernels it would annotate.
    testutil::WriteFileOrDie(dir / "k.folded", "main;kernel 1\n");
    REQUIRE(testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "folded", "--name", "k", dir / "k.folded"})
                .exit_code == 0);
    // Opening the database reserves 4 GiB of address space (its map), so
    // the cap is 6 GiB and the line 8 GiB.
    const std::string file = dir / "big.csv";
    SparseFile(file, "\"ID\",\"Kernel Name\"\n", off_t{8} << 30);
    auto r = ImportCapped(db, "ncu-csv", file, "--run k", 6L << 20);
    CheckRefused(r, "line 2 is longer than 16 MiB");
  }
  // Nothing was stored by the refused imports.
  auto runs = testutil::Run({testutil::Tool("cct-query"), "-d", db, "runs"});
  CHECK(runs.out.find("one") == std::string::npos);
  CHECK(runs.out.find("four") == std::string::npos);
}

TEST_CASE("importers: 100,000-deep nesting is imported or refused in one line, never a crash") {
  testutil::TempDir dir;
  constexpr int kDepth = 100000;
  SUBCASE("folded: a 100,000-frame stack") {
    std::string line = "f0";
    for (int i = 1; i < kDepth; ++i) line += ";f" + std::to_string(i);
    const std::string file = dir / "deep.folded";
    testutil::WriteFileOrDie(file, line + " 7\n");
    auto r = testutil::Run({testutil::Tool("cct-import"), "-d", dir / "d.db", "--from", "folded", file});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    // Every frame is a node: the root, the thread-less path of 100,000.
    auto q = testutil::Run({testutil::Tool("cct-query"), "-d", dir / "d.db", "show", "latest"});
    CHECK(q.exit_code == 0);
  }
  SUBCASE("hatchet JSON: children 100,000 levels deep") {
    std::string json;
    for (int i = 0; i < kDepth; ++i)
      json += "{\"frame\":{\"name\":\"f" + std::to_string(i) + "\",\"type\":\"function\"},\"metrics\":{\"time\":1},"
              "\"children\":[";
    for (int i = 0; i < kDepth; ++i) json += "]}";
    json = "[" + json + "]";
    const std::string file = dir / "deep.json";
    testutil::WriteFileOrDie(file, json);
    auto r = testutil::Run({testutil::Tool("cct-import"), "-d", dir / "h.db", "--from", "hatchet", file});
    INFO(r.err);
    CHECK((r.exit_code == 0 || (r.exit_code == 2 && testutil::LineCount(r.err) == 1)));
  }
}

TEST_CASE("importers: a JSON value or XML tag over 16 MiB is one line and exit 2; a file beyond the memory limit too") {
  testutil::TempDir dir;
  const std::string db = dir / "l.db";
  // JSON documents are often one line, so the limit is on one value. The
  // parser reads as the bytes arrive: a 20 MiB value is refused at 16 MiB,
  // and a 1 GiB sparse tail of NUL bytes at its first byte (NUL is not
  // JSON); the capped memory shows neither is read whole.
  SUBCASE("hatchet: a 20 MiB string") {
    const std::string file = dir / "string.json";
    testutil::WriteFileOrDie(file, "[{\"frame\": {\"name\": \"" + std::string(size_t{20} << 20, 'x') + "\"}}]");
    auto r = ImportCapped(db, "hatchet", file);
    CheckRefused(r, "a JSON string at line 1 is longer than 16 MiB");
  }
  SUBCASE("hatchet: a 20 MiB number, after a first line") {
    const std::string file = dir / "number.json";
    testutil::WriteFileOrDie(file, "[{\"frame\": {\"name\": \"main\"},\n \"metrics\": {\"time\": 1" +
                                       std::string(size_t{20} << 20, '0') + "}}]");
    auto r = ImportCapped(db, "hatchet", file);
    CheckRefused(r, "a JSON number or literal at line 2 is longer than 16 MiB");
  }
  SUBCASE("hatchet: a 1 GiB string of NUL bytes") {
    const std::string file = dir / "nul.json";
    SparseFile(file, "[{\"frame\": {\"name\": \"", off_t{1} << 30);
    auto r = ImportCapped(db, "hatchet", file);
    CheckRefused(r, "not valid JSON at byte 22");
  }
  SUBCASE("hatchet: structure alone may be long") {
    // 40 MiB of a document whose every value is short imports: the limit
    // is on a value, not on the document or its line.
    std::string json = "[";
    for (int i = 0; json.size() < (size_t{40} << 20); ++i) {
      if (i) json += ",";
      json += "{\"frame\": {\"name\": \"f" + std::to_string(i % 1000) + "\"}, \"metrics\": {\"time\": 1.5}}";
    }
    json += "]";
    const std::string file = dir / "long.json";
    testutil::WriteFileOrDie(file, json);
    auto r = testutil::Run({testutil::Tool("cct-import"), "-d", db, "--from", "hatchet", file});
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  SUBCASE("hpctoolkit: a 20 MiB attribute in experiment.xml") {
    // Real bytes, not a sparse tail: expat stops at the first NUL by itself.
    const std::string hpc = dir / "hpctoolkit-database";
    std::filesystem::create_directories(hpc);
    testutil::WriteFileOrDie(hpc + "/experiment.xml",
                             "<?xml version=\"1.0\"?>\n<HPCToolkitExperiment version=\"2.2\">\n<Header n=\"" +
                                 std::string(size_t{20} << 20, 'a'));
    auto r = ImportCapped(db, "hpctoolkit", hpc);
    CheckRefused(r, "a tag or text at line 3 is longer than 16 MiB");
  }
  SUBCASE("hpctoolkit: a metric-db file bigger than the memory limit") {
    // A binary file is read whole (its size is its data); one beyond what
    // the process may allocate is one line and exit 2, not an abort.
    const std::string src = testutil::SharedData("hatchet/hpctoolkit-cpi-database");
    if (!std::filesystem::exists(src + "/experiment.xml")) {
      MESSAGE("SKIPPED: " << src << " is not there");
      return;
    }
    const std::string hpc = dir / "big-metric-db";
    std::filesystem::create_directories(hpc);
    bool replaced = false;
    for (const auto& e : std::filesystem::directory_iterator(src)) {
      if (!e.is_regular_file()) continue;
      const std::string to = hpc + "/" + e.path().filename().string();
      if (!replaced && e.path().extension() == ".metric-db") {
        SparseFile(to, testutil::ReadFileOrDie(e.path().string()).substr(0, 32), off_t{1} << 30);
        replaced = true;
      } else {
        std::filesystem::copy_file(e.path(), to);
      }
    }
    REQUIRE(replaced);
    auto r = ImportCapped(db, "hpctoolkit", hpc);
    INFO(r.err);
    CHECK(r.signal == 0);
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
    CHECK(r.err == "cct-import: out of memory (the input needs more than this process may allocate)\n");
  }
}
