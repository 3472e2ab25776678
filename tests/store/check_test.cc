// cct-query check and damaged databases: the damaged run named, LMDB's own
// assertions (a zeroed branch page) reported as one line and exit 2, and a
// corpus of damaged copies none of which may abort or hang a command.
#include <doctest/doctest.h>

#include <filesystem>
#include <future>
#include <random>
#include <set>

#include "store/check.h"
#include "store/database.h"
#include "store/lmdb_env.h"
#include "store/run_file.h"
#include "tests/test_util.h"

namespace {

constexpr int kRuns = 60;

// Run k's tree holds "marker-k-…" (its own bytes in the file) and enough
// nodes that 60 runs fill several LMDB pages of records and sections:
// branch pages, which LMDB asserts on when they are damaged.
std::string MarkerOf(int k) { return "marker-" + std::to_string(k) + "-" + std::string(24, static_cast<char>('a' + k % 26)); }

void MakeDatabase(const std::string& path) {
  auto db = store::Database::Open(path, store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  for (int k = 1; k <= kRuns; ++k) {
    cct::Tree t;
    const cct::MetricId cpu = t.metrics().RegisterStandard("cputime").value();
    cct::NodeId at = t.InternChild(cct::kRootNode, t.InternFrame(cct::FrameKind::kFunction, "main"));
    t.AddValue(t.InternChild(at, t.InternFrame(cct::FrameKind::kFunction, MarkerOf(k))), cpu, 1000.0 * k);
    for (int i = 0; i < 40; ++i) {
      at = t.InternChild(at, t.InternFrame(cct::FrameKind::kFunction, "f" + std::to_string(i)));
      t.AddValue(at, cpu, i + 0.5);
    }
    store::RunMeta m;
    m.name = "r" + std::to_string(k);
    m.state = store::RunState::kComplete;
    m.source = "test";
    m.tags = {{"k", std::to_string(k)}};
    REQUIRE((*db)->CreateRun(m, &t).ok());
    REQUIRE(m.id == static_cast<store::RunId>(k));
  }
}

testutil::RunResult Query(const std::string& db, std::vector<std::string> args) {
  std::vector<std::string> argv{testutil::Tool("cct-query"), "-d", db};
  argv.insert(argv.end(), args.begin(), args.end());
  return testutil::Run(argv, {{"CCT_NO_MALLOC_TUNING", "1"}}, 60);
}

void Remove(const std::string& path) {
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-lock");
}

}  // namespace

TEST_CASE("check: intact, one damaged section, a zeroed page LMDB asserts on") {
  testutil::TempDir dir;
  const std::string good = dir / "good.db";
  MakeDatabase(good);
  auto intact = store::CheckDatabase(good);
  REQUIRE_MESSAGE(intact.ok(), intact.status().message());
  CHECK(intact->runs.size() == kRuns);
  CHECK(intact->damaged() == 0);
  CHECK(intact->listing_problem.empty());
  auto ok = Query(good, {"check"});
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find(std::to_string(kRuns) + " runs, " + std::to_string(kRuns) + " intact, 0 damaged") !=
        std::string::npos);

  // One byte of run 7's string table flipped: run 7, and only it, is damaged
  // (its section's checksum), and check says so with exit 1.
  const std::string data = testutil::ReadFileOrDie(good);
  {
    std::string bytes = data;
    const size_t at = bytes.find(MarkerOf(7));
    REQUIRE(at != std::string::npos);
    bytes[at + 3] ^= 0x20;
    const std::string flipped = dir / "flipped.db";
    testutil::WriteFileOrDie(flipped, bytes);
    auto c = store::CheckDatabase(flipped);
    REQUIRE(c.ok());
    REQUIRE(c->runs.size() == kRuns);
    std::vector<store::RunId> damaged;
    for (const auto& r : c->runs)
      if (!r.problem.empty()) damaged.push_back(r.id);
    CHECK(damaged == std::vector<store::RunId>{7});
    auto q = Query(flipped, {"check"});
    CHECK(q.exit_code == 1);
    CHECK(q.out.find("damaged: run 7 'r7': ") != std::string::npos);
    CHECK(q.out.find("checksum") != std::string::npos);
    CHECK(q.err == "cct-query: 1 of 60 runs are damaged\n");
    // The other runs still read.
    CHECK(Query(flipped, {"tree", "8", "--depth", "2"}).exit_code == 0);
    auto bad = Query(flipped, {"tree", "7"});
    CHECK(bad.exit_code == 2);
    CHECK(testutil::LineCount(bad.err) == 1);
  }

  // Every 4 KiB page zeroed in turn. LMDB asserts on some (a zeroed branch
  // page: 'IS_LEAF(mp)' in mdb_cursor_next); each must end as one line and
  // exit 2, and check must still finish and account for what it could read.
  const size_t pages = data.size() / 4096;
  REQUIRE(pages > 10);
  size_t lmdb_asserts = 0, checks_with_damage = 0;
  const std::string zeroed = dir / "zeroed.db";
  for (size_t page = 2; page < pages; ++page) {  // pages 0 and 1 are LMDB's headers (checked before mapping)
    std::string bytes = data;
    std::fill(bytes.begin() + static_cast<long>(page * 4096), bytes.begin() + static_cast<long>((page + 1) * 4096), '\0');
    Remove(zeroed);
    testutil::WriteFileOrDie(zeroed, bytes);
    CAPTURE(page);
    for (const std::vector<std::string>& args : {std::vector<std::string>{"runs"}, {"top", "30"}}) {
      auto r = Query(zeroed, args);
      CHECK(r.signal == 0);
      CHECK(!r.timed_out);
      CHECK((r.exit_code == 0 || r.exit_code == 2));
      if (r.exit_code == 2) {
        CHECK(testutil::LineCount(r.err) == 1);
        CHECK_MESSAGE(r.err.find("damaged") != std::string::npos, r.err);
        lmdb_asserts += r.err.find("LMDB: Assertion") != std::string::npos;
      }
    }
    auto c = store::CheckDatabase(zeroed);
    if (!c.ok()) {
      CHECK_MESSAGE(c.status().message().find("damaged") != std::string::npos, c.status().message());
      continue;
    }
    // Ids are found (listed or probed) once each, within the counter.
    std::set<store::RunId> ids;
    for (const auto& r : c->runs) {
      CHECK(r.id >= 1);
      CHECK(r.id <= static_cast<store::RunId>(kRuns));
      CHECK(ids.insert(r.id).second);
    }
    checks_with_damage += c->damaged() > 0 || !c->listing_problem.empty();
  }
  // The database is big enough that some zeroed pages are branch pages.
  CHECK(lmdb_asserts > 0);
  CHECK(checks_with_damage > 0);
}

TEST_CASE("damaged database corpus: bit flips, truncations, zeroed pages, overwrites never abort or hang") {
  testutil::TempDir dir;
  const std::string good = dir / "good.db";
  MakeDatabase(good);
  const std::string data = testutil::ReadFileOrDie(good);
  std::mt19937_64 rng(20261126);
  const std::vector<std::vector<std::string>> commands = {
      {"runs"}, {"show", "latest"}, {"top", "30"}, {"tree", "1", "--depth", "3"}, {"check"}};
  std::map<std::string, int> outcomes;
  const std::string path = dir / "damaged.db";
  for (int copy = 0; copy < 60; ++copy) {
    std::string b = data;
    const int kind = copy % 4;
    if (kind == 0) {  // bit flips
      for (int k = 0, n = 1 + static_cast<int>(rng() % 8); k < n; ++k) b[rng() % b.size()] ^= static_cast<char>(1u << (rng() % 8));
    } else if (kind == 1) {  // truncation
      b.resize(rng() % b.size());
    } else if (kind == 2) {  // a zeroed page beyond the headers
      const size_t page = 2 + rng() % (b.size() / 4096 - 2);
      std::fill(b.begin() + static_cast<long>(page * 4096), b.begin() + static_cast<long>((page + 1) * 4096), '\0');
    } else {  // random bytes over a stretch
      const size_t at = rng() % b.size();
      for (size_t i = at; i < std::min(b.size(), at + 1 + rng() % 512); ++i) b[i] = static_cast<char>(rng());
    }
    Remove(path);
    testutil::WriteFileOrDie(path, b);
    for (const auto& args : commands) {
      auto r = Query(path, args);
      CAPTURE(copy);
      CAPTURE(args[0]);
      CHECK(r.signal == 0);
      CHECK(!r.timed_out);
      const bool check = args[0] == "check";
      CHECK((r.exit_code == 0 || r.exit_code == 2 || (check && r.exit_code == 1)));
      if (r.exit_code != 0) CHECK_MESSAGE(testutil::LineCount(r.err) == 1, r.err);
      if (r.exit_code == 2) CHECK(r.out.empty());
      ++outcomes[r.exit_code == 0 ? "ok" : r.exit_code == 1 ? "findings" : "clean error"];
    }
  }
  MESSAGE("outcomes: ok " << outcomes["ok"] << ", findings " << outcomes["findings"] << ", clean errors "
                          << outcomes["clean error"]);
  CHECK(outcomes["clean error"] > 0);
}

TEST_CASE("run records: every field is stored within its size limit") {
  testutil::TempDir dir;
  auto db = store::Database::Open(dir / "l.db", store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  store::RunMeta m;
  m.name = std::string(10 << 20, 'n');  // 10 MB
  m.state = store::RunState::kComplete;
  m.tags = {{std::string(10000, 'k'), std::string(100000, 'v')}, {"small", "kept"}};
  for (int i = 0; i < 20000; ++i) m.command.push_back("arg" + std::to_string(i));
  m.command[5] = std::string(1 << 20, 'a');
  m.cwd = std::string(200000, 'c');
  m.env = {{"PATH", std::string(300000, 'p')}};
  cct::Tree t;
  t.InternChild(cct::kRootNode, t.InternFrame(cct::FrameKind::kFunction, "main"));
  REQUIRE((*db)->CreateRun(m, &t).ok());
  auto got = (*db)->GetRun(m.id);
  REQUIRE(got.ok());
  CHECK(got->name.size() <= store::kMaxRunNameBytes);
  CHECK(got->name.find("bytes cut") != std::string::npos);
  CHECK(got->tags.size() == 2);
  CHECK(got->tags.at("small") == "kept");
  for (const auto& [k, v] : got->tags) {
    CHECK(k.size() <= store::kMaxTagBytes);
    CHECK(v.size() <= store::kMaxTagBytes);
  }
  REQUIRE(got->command.size() == store::kMaxArguments);
  CHECK(got->command.back() == "…[" + std::to_string(20000 - store::kMaxArguments + 1) + " more arguments]");
  CHECK(got->command[4] == "arg4");
  CHECK(got->command[5].size() <= store::kMaxValueBytes);
  CHECK(got->cwd.size() <= store::kMaxValueBytes);
  CHECK(got->env.at("PATH").size() <= store::kMaxValueBytes);
  // The whole record is bounded: well under the 10 MB name alone.
  CHECK(got->ToJson().dump().size() < 1 << 20);
  // And a report's heading stays one short line.
  auto show = Query(dir / "l.db", {"runs"});
  CHECK(show.exit_code == 0);
}

TEST_CASE("a database LMDB loops forever on while opening: one line and exit 2 within the open deadline") {
  // Found by tests/fuzz/database_fuzz (tests/fuzz/README.md, open findings):
  // a damaged page makes mdb_get loop. The tools bound the opening.
  const std::string file = testutil::SourceDir() + "/tests/fuzz/open-findings/lmdb-hang-in-mdb_get.mdb";
  testutil::TempDir dir;
  const std::string copy = dir / "hang.db";
  testutil::WriteFileOrDie(copy, testutil::ReadFileOrDie(file));
  // The three at once: each waits out the 10 s deadline.
  auto runs = std::async(std::launch::async, [&] { return Query(copy, {"runs"}); });
  auto top = std::async(std::launch::async, [&] { return Query(copy, {"top", "1"}); });
  auto checked = std::async(std::launch::async, [&] { return Query(copy, {"check"}); });
  for (auto* f : {&runs, &top}) {
    auto r = f->get();
    CHECK(!r.timed_out);
    CHECK(r.exit_code == 2);
    CHECK(testutil::LineCount(r.err) == 1);
    CHECK(r.err.find("is damaged (opening it did not finish in") != std::string::npos);
  }
  // check reads in children with their own deadline: it reports, never hangs.
  auto c = checked.get();
  CHECK(!c.timed_out);
  CHECK(c.exit_code != 0);
  CHECK(testutil::LineCount(c.err) == 1);
}

TEST_CASE("cct-record into a damaged database: one line and its own status 125, never an abort; the run is kept") {
  // cct-record opens the database before the program runs and stores while
  // it runs and after it; a page LMDB asserts on must end it as cleanly as
  // it ends cct-query. A program that ran keeps its run: when storing
  // failed, its run file is left in the spool for the next cct-record.
  testutil::TempDir dir;
  const std::string good = dir / "good.db";
  MakeDatabase(good);
  // The same file as it was before the run key index: its first writer
  // reads every record to index it (format.md, run_key_index), so zeroed
  // pages are met while opening. With the index, a recording reads only
  // its own runs, and meets few of them.
  const std::string legacy = dir / "legacy.db";
  testutil::WriteFileOrDie(legacy, testutil::ReadFileOrDie(good));
  {
    auto env = store::LmdbEnv::Open(legacy, store::LmdbEnv::Mode::kReadWrite);
    REQUIRE(env.ok());
    REQUIRE(store::WithWriteTxn(**env, [](store::LmdbTxn& txn) -> cct::Status {
              auto meta = txn.OpenDb("meta", false);
              if (!meta.ok() || !*meta) return cct::IoError("no meta table");
              return txn.Delete(**meta, "run_key_index");
            }).ok());
  }
  const std::string zeroed = dir / "zeroed.db", ran = dir / "ran";
  for (const std::string& source : {good, legacy}) {
    CAPTURE(source);
    const std::string data = testutil::ReadFileOrDie(source);
    const size_t pages = data.size() / 4096;
    size_t lmdb_asserts = 0, stored = 0;
    for (size_t page = 2; page < pages; ++page) {
      std::string bytes = data;
      std::fill(bytes.begin() + static_cast<long>(page * 4096), bytes.begin() + static_cast<long>((page + 1) * 4096), '\0');
      Remove(zeroed);
      std::filesystem::remove_all(zeroed + ".spool");
      std::filesystem::remove(ran);
      testutil::WriteFileOrDie(zeroed, bytes);
      CAPTURE(page);
      auto r = testutil::Run({testutil::Tool("cct-record"), "-o", zeroed, "--name", "after", "--gpu", "off", "--",
                              "/bin/sh", "-c", "echo > " + ran},
                             {{"CCT_NO_MALLOC_TUNING", "1"}}, 60);
      CHECK(r.signal == 0);
      CHECK(!r.timed_out);
      CHECK((r.exit_code == 0 || r.exit_code == 125));
      if (r.exit_code == 125) {
        CHECK_MESSAGE(testutil::LineCount(r.err) == 1, r.err);
        CHECK(r.err.find("damaged") != std::string::npos);
        lmdb_asserts += r.err.find("LMDB: Assertion") != std::string::npos;
        // A program that ran and whose run did not reach the database: it
        // waits in the spool, as a run file or in the inbox's journal.
        size_t files = 0;
        if (std::filesystem::exists(zeroed + ".spool"))
          for (const auto& e : std::filesystem::recursive_directory_iterator(zeroed + ".spool")) {
            if (!e.is_regular_file()) continue;
            if (e.path().extension() == std::string(store::kRunFileSuffix)) ++files;
            if (e.path().filename() == std::string(store::kInboxJournalName))
              files += store::SplitInboxFrames(testutil::ReadFileOrDie(e.path().string())).payloads.size();
          }
        if (std::filesystem::exists(ran)) CHECK(files >= 1);
      } else {
        ++stored;
        CHECK(std::filesystem::exists(ran));
      }
    }
    MESSAGE("cct-record on " << pages - 2 << " zeroed pages of " << source << ": " << stored << " stored, "
                             << lmdb_asserts << " LMDB assertions reported");
    // Some zeroed pages are branch pages LMDB asserts on while indexing.
    if (source == legacy) CHECK(lmdb_asserts > 0);
  }
}
