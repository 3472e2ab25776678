// The "importing PATH" progress line: drawn on a terminal (through util-linux
// `script`, a pseudo-terminal), never when stderr is a file or a pipe. One
// small file of each format whose importer reads it here; the delay before
// the line appears is set to 0 so a small file draws it too.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "importers/sqlite_db.h"
#include "tests/interop_util.h"
#include "tests/test_util.h"

namespace {

struct ProgressCase {
  std::string from, file;
};

}  // namespace

TEST_CASE("importers: a progress line on a terminal, none off it, for every format read from a file") {
  const std::string script = interop::FindProgram("script");
  if (script.empty()) {
    MESSAGE("SKIPPED: `script` (util-linux) is not installed");
    return;
  }
  testutil::TempDir dir;
  const std::string src = testutil::SourceDir() + "/tests/data/";
  std::vector<ProgressCase> cases;
  testutil::WriteFileOrDie(dir / "s.folded", "main;a 1\nmain;b 2\n");
  cases.push_back({"folded", dir / "s.folded"});
  testutil::WriteFileOrDie(dir / "h.json", R"([{"frame": {"name": "main"}, "metrics": {"time": 1}}])");
  cases.push_back({"hatchet", dir / "h.json"});
  cases.push_back({"speedscope", src + "speedscope/pyspy-order.speedscope.json"});
  cases.push_back({"caliper", src + "caliper/region-profile.json"});
  testutil::WriteFileOrDie(dir / "p.txt",
                           "prog  100 41968.232382:    1000000 cpu-clock: \n"
                           "\t            11c5 work+0x5c (/tmp/prog)\n"
                           "\t            1508 main+0x38 (/tmp/prog)\n\n");
  cases.push_back({"perf", dir / "p.txt"});
  const cct::Status nsys = importers::SqliteDb::CreateFromScript(
      dir / "n.sqlite", testutil::ReadFileOrDie(src + "nsys/basic.sql"));
  REQUIRE_MESSAGE(nsys.ok(), nsys.message());
  cases.push_back({"nsys", dir / "n.sqlite"});
  // pprof: our own export of the folded run.
  const std::string db = dir / "p.db";
  REQUIRE(interop::Import(db, {"--from", "folded", dir / "s.folded"}).exit_code == 0);
  REQUIRE(interop::Query(db, {"export", "latest", "--to", "pprof", "-o", dir / "s.pb.gz"}).exit_code == 0);
  cases.push_back({"pprof", dir / "s.pb.gz"});

  for (const ProgressCase& c : cases) {
    CAPTURE(c.from);
    const std::string cmd = testutil::Tool("cct-import") + " -d " + (dir / (c.from + ".db")) + " --from " + c.from +
                            " '" + c.file + "'";
    auto tty = testutil::Run({script, "-qec", cmd, "/dev/null"}, {{"CCT_PROGRESS_DELAY_MS", "0"}});
    INFO(tty.out);
    CHECK(tty.exit_code == 0);
    CHECK(tty.out.find("importing " + c.file) != std::string::npos);
    // Off a terminal: the summary on stdout, nothing on stderr.
    auto plain = interop::Import(dir / (c.from + "-plain.db"), {"--from", c.from, c.file});
    CHECK(plain.exit_code == 0);
    CHECK(plain.err.find("importing") == std::string::npos);
  }
}
