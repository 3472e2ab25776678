// Importers on hostile sizes: a 1 GiB line and deep nesting end in one line
// and exit 2 with bounded memory, never a crash (issue "Hardening").
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

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
  SUBCASE("caliper JSON: a record's path and a row's rank nested 100,000 deep") {
    // Such values become text (a rank's label); nlohmann's dump() would
    // recurse once per level. The 1001st level's '[' is refused.
    const std::string deep = std::string(kDepth, '[') + std::string(kDepth, ']');
    const std::string head = "[{\"t\": 1, \"path\": ";
    testutil::WriteFileOrDie(dir / "rec.json", head + deep + "}]");
    testutil::WriteFileOrDie(dir / "split.json", "{\"data\": [[0, " + deep +
                                                     ", 1]], \"columns\": [\"path\", \"mpi.rank\", \"t\"], "
                                                     "\"column_metadata\": [{}, {\"is_value\": true}, {\"is_value\": true}], "
                                                     "\"nodes\": [{\"label\": \"a\", \"column\": \"path\"}]}");
    // (No structured bindings: clang 14 cannot capture them in doctest's checks.)
    const std::vector<std::pair<std::string, size_t>> files = {
        {"rec.json", head.size() + 1000}, {"split.json", std::string("{\"data\": [[0, ").size() + 1000}};
    for (const auto& f : files) {
      auto r = testutil::Run({testutil::Tool("cct-import"), "-d", dir / "c.db", "--from", "caliper", dir / f.first});
      INFO(r.err);
      CHECK(r.exit_code == 2);
      CHECK(testutil::LineCount(r.err) == 1);
      CHECK(r.err.find("at byte " + std::to_string(f.second) + ": a value nested more than 1000 levels deep") !=
            std::string::npos);
    }
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

TEST_CASE("importers: a Caliper json-split file imports in memory below what a DOM of it takes") {
  // Rows first, as Caliper writes them, each [node, rank, time in usec]
  // over five path nodes and two ranks: 1 M rows in 10 MB. The cap leaves
  // 64 MiB above what importing a tiny file needs: a DOM of the file needed
  // 131 MiB more than the tiny file (the importer before it read as it
  // parsed), the streamed reader keeps 12 bytes a row (three 4-byte
  // columns) and fits in what the tiny import reserved anyway.
  testutil::TempDir dir;
  const std::string file = dir / "big.json";
  constexpr size_t kNodes = 5;  // main, main/a, main/b, main/a/c, main/b/d
  const int64_t parents[kNodes] = {-1, 0, 0, 1, 2};
  const char* labels[kNodes] = {"main", "a", "b", "c", "d"};
  int64_t expected[2][kNodes] = {};  // [rank][node]: usec
  int64_t total = 0;
  std::string text = "{\"data\":[";
  constexpr size_t kRows = 1000000;
  text.reserve(kRows * 12);
  for (size_t i = 0; i < kRows; ++i) {
    const size_t node = i % kNodes, rank = (i / kNodes) % 2, usec = i % 997;
    if (i) text += ',';
    text += '[' + std::to_string(node) + ',' + std::to_string(rank) + ',' + std::to_string(usec) + ']';
    expected[rank][node] += static_cast<int64_t>(usec);
    total += static_cast<int64_t>(usec);
  }
  text += "],\"columns\":[\"path\",\"mpi.rank\",\"sum#time.duration\"],\"column_metadata\":[{\"is_value\":false},"
          "{\"is_value\":true},{\"is_value\":true}],\"nodes\":[";
  for (size_t n = 0; n < kNodes; ++n)
    text += std::string(n ? "," : "") + "{\"label\":\"" + labels[n] + "\",\"column\":\"path\"" +
            (parents[n] < 0 ? "" : ",\"parent\":" + std::to_string(parents[n])) + "}";
  text += "],\"cluster\":\"big\"}";
  testutil::WriteFileOrDie(file, text);
  text = {};
  testutil::WriteFileOrDie(dir / "tiny.json", "[{\"path\":\"main\",\"time.duration\":1}]");

  // The least address space importing the tiny file takes (the database's
  // map among it), to 16 MiB: bisected between 2 and 10 GiB.
  long lo = long{2} << 20, hi = long{10} << 20;
  REQUIRE(ImportCapped(dir / "tiny.db", "caliper", dir / "tiny.json", "", hi).exit_code == 0);
  while (hi - lo > (16 << 10)) {
    const long mid = lo + (hi - lo) / 2;
    (ImportCapped(dir / "tiny.db", "caliper", dir / "tiny.json", "", mid).exit_code == 0 ? hi : lo) = mid;
  }
  const long floor_kib = hi;
  const std::string db = dir / "big.db";
  auto r = ImportCapped(db, "caliper", file, "", floor_kib + (64 << 10));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Each (rank, node) holds the generated sum; nothing else holds time.
  // The CSV export gives seconds to the microsecond, the input's unit, so
  // the comparison is exact in whole microseconds.
  auto csv = testutil::Run({testutil::Tool("cct-query"), "-d", db, "export", "1", "--to", "csv"});
  REQUIRE(csv.exit_code == 0);
  int64_t seen = 0;
  size_t checked = 0;
  for (const auto& row : testutil::ReadCsvRows(csv.out)) {
    const int64_t usec = std::llround(std::stod(row.at("time (exc)")) * 1e6);
    seen += usec;
    const std::string& path = row.at("path");  // "rank R;main;a;c"
    for (size_t rank = 0; rank < 2; ++rank)
      for (size_t node = 0; node < kNodes; ++node) {
        std::string want;
        for (int64_t k = static_cast<int64_t>(node); k >= 0; k = parents[k]) want = ";" + std::string(labels[k]) + want;
        if (path == "rank " + std::to_string(rank) + want) {
          CHECK(usec == expected[rank][node]);
          ++checked;
        }
      }
  }
  CHECK(checked == 2 * kNodes);
  CHECK(seen == total);
}
