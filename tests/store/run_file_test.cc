// Run files (store/run_file.h): what a recorded process writes instead of
// touching the database, and Database::PutRuns, which stores a batch of
// them in one transaction.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cct/node_values.h"
#include "cct/tree.h"
#include "store/database.h"
#include "store/lmdb_env.h"
#include "store/run_file.h"
#include "tests/test_util.h"

using namespace cct;

namespace {

// root → thread → main → {work (3 ms), idle (1 ms)}: 4 ms of cputime in all.
Tree SmallTree() {
  Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const NodeId th = t.InternChild(kRootNode, t.InternFrame(FrameKind::kThread, "main thread"));
  const NodeId m = t.InternChild(th, t.InternFrame(FrameKind::kFunction, "main", "/bin/prog", "prog.c", 3));
  const NodeId w = t.InternChild(m, t.InternFrame(FrameKind::kFunction, "work", "/bin/prog", "prog.c", 10));
  const NodeId i = t.InternChild(m, t.InternFrame(FrameKind::kFunction, "idle", "/bin/prog", "prog.c", 20));
  t.AddValue(w, cpu, 3e6);
  t.AddValue(i, cpu, 1e6);
  return t;
}

double Total(const Tree& t, const char* metric) {
  const MetricId id = t.metrics().Find(metric);
  REQUIRE(id != kNoMetric);
  double sum = 0;
  for (NodeId n = 0; n < t.size(); ++n) sum += t.Value(n, id);
  return sum;
}

store::RunFile MakeRun(const std::string& key, const std::string& parent, const std::string& root, const Tree* tree) {
  store::RunFile run;
  run.meta.name = "prog-" + key;
  run.meta.source = "cct-record";
  run.meta.pid = 4242;
  run.meta.start_time_ns = 1000;
  run.meta.state = store::RunState::kComplete;
  run.key = key;
  run.parent_key = parent;
  run.root_key = root;
  auto sections = store::EncodeRun(run.meta, tree, nullptr);
  REQUIRE(sections.ok());
  run.sections = std::move(sections).value();
  return run;
}

}  // namespace

TEST_CASE("run file: metadata, keys and tree come back as written") {
  const Tree t = SmallTree();
  store::RunFile run = MakeRun("00000000000000a1", "00000000000000a0", "0000000000000001", &t);
  run.meta.env["PATH"] = "/usr/bin";
  const std::string bytes = store::EncodeRunFile(run);
  auto back = store::DecodeRunFile(bytes);
  REQUIRE(back.ok());
  CHECK(back->key == "00000000000000a1");
  CHECK(back->parent_key == "00000000000000a0");
  CHECK(back->root_key == "0000000000000001");
  CHECK(back->meta.name == "prog-00000000000000a1");
  CHECK(back->meta.env.at("PATH") == "/usr/bin");
  CHECK(back->meta.node_count == 5);
  auto tree = store::DecodeTree(back->sections);
  REQUIRE(tree.ok());
  CHECK(tree->size() == 5);
  CHECK(Total(*tree, "cputime") == doctest::Approx(4e6));

  testutil::TempDir dir;
  const std::string path = dir / "a.run";
  REQUIRE(store::WriteRunFile(path, run).ok());
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  auto read = store::ReadRunFile(path);
  REQUIRE(read.ok());
  CHECK(read->sections.size() == back->sections.size());
}

TEST_CASE("run file: every truncation and every flipped byte is refused, never a crash") {
  const Tree t = SmallTree();
  const std::string bytes = store::EncodeRunFile(MakeRun("00000000000000a1", "", "", &t));
  REQUIRE(store::DecodeRunFile(bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = store::DecodeRunFile(std::string_view(bytes).substr(0, n));
    CHECK_FALSE(r.ok());
  }
  // Header fields are checked, payloads carry CRC-32s: any single changed
  // byte is caught.
  size_t refused = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
    refused += !store::DecodeRunFile(damaged).ok();
  }
  CHECK(refused == bytes.size());
  CHECK_FALSE(store::DecodeRunFile(bytes + "x").ok());
  CHECK_FALSE(store::ReadRunFile("/nonexistent/a.run").ok());
}

TEST_CASE("database: PutRuns stores a batch in one transaction, linking keys to ids") {
  testutil::TempDir dir;
  auto db = store::Database::Open(dir / "p.db", store::Database::Mode::kWrite);
  REQUIRE(db.ok());
  const Tree t = SmallTree();
  std::vector<store::RunFile> runs = {MakeRun("000000000000000a", "", "", &t),
                                      MakeRun("000000000000000b", "000000000000000a", "000000000000000a", &t),
                                      MakeRun("000000000000000c", "000000000000000b", "000000000000000a", nullptr)};
  std::map<std::string, store::RunId> ids;
  REQUIRE((*db)->PutRuns(runs, [&](store::RunFile& r) {
                  ids[r.key] = r.meta.id;
                  r.meta.parent_run = r.parent_key.empty() ? 0 : ids.at(r.parent_key);
                  r.meta.root_run = r.root_key.empty() ? 0 : ids.at(r.root_key);
                }).ok());
  CHECK(ids.at("000000000000000a") == 1);
  CHECK(ids.at("000000000000000b") == 2);
  CHECK(ids.at("000000000000000c") == 3);
  auto listed = (*db)->ListRuns();
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 3);
  CHECK((*listed)[1].parent_run == 1);
  CHECK((*listed)[2].parent_run == 2);
  CHECK((*listed)[2].root_run == 1);
  auto tree = (*db)->ReadTree(2);
  REQUIRE(tree.ok());
  CHECK(Total(*tree, "cputime") == doctest::Approx(4e6));
  CHECK_FALSE((*db)->ReadTree(3).ok());  // stored without a tree yet

  // A second pass: run 3 now has a tree and replaces its record; a new run
  // gets the next id.
  Tree bigger = SmallTree();
  bigger.AddValue(1, bigger.metrics().Find("cputime"), 5e6);
  std::vector<store::RunFile> again = {MakeRun("000000000000000c", "", "", &bigger), MakeRun("000000000000000d", "", "", &t)};
  again[0].meta.id = 3;
  again[0].meta.name = "renamed";
  REQUIRE((*db)->PutRuns(again).ok());
  CHECK(again[1].meta.id == 4);
  auto t3 = (*db)->ReadTree(3);
  REQUIRE(t3.ok());
  CHECK(Total(*t3, "cputime") == doctest::Approx(9e6));
  CHECK((*db)->GetRun(3)->name == "renamed");
  // Updating a run that is not there stores nothing of the batch.
  std::vector<store::RunFile> bad = {MakeRun("000000000000000e", "", "", &t), MakeRun("000000000000000f", "", "", &t)};
  bad[1].meta.id = 99;
  CHECK_FALSE((*db)->PutRuns(bad).ok());
  CHECK((*db)->ListRuns()->size() == 4);
}

TEST_CASE("database: FindRunKeys reads the key index; a writer indexes the runs of a file from before it, once") {
  testutil::TempDir dir;
  const std::string path = dir / "k.db";
  const Tree t = SmallTree();
  {
    auto db = store::Database::Open(path, store::Database::Mode::kWrite);
    REQUIRE(db.ok());
    std::vector<store::RunFile> runs = {MakeRun("00000000000000a1", "", "", &t), MakeRun("00000000000000a2", "", "", nullptr),
                                        MakeRun("00000000000000a3", "", "", nullptr)};
    REQUIRE((*db)->PutRuns(runs).ok());
    auto found = (*db)->FindRunKeys({"00000000000000a2", "00000000000000a1", "00000000000000ff", ""});
    REQUIRE(found.ok());
    CHECK(*found == std::map<std::string, store::RunId>{{"00000000000000a1", 1}, {"00000000000000a2", 2}});
    // A run deleted takes its entry along.
    REQUIRE((*db)->DeleteRun(3).ok());
    CHECK((*db)->FindRunKeys({"00000000000000a3"})->empty());
    // A caller's copy of a record naming a stored key gets no entry of its
    // own, and deleting it leaves the gathered run's entry.
    store::RunMeta copy = (*db)->GetRun(1).value();
    REQUIRE((*db)->CreateRun(copy, &t).ok());
    CHECK(copy.id == 4);
    CHECK((*db)->FindRunKeys({"00000000000000a1"})->at("00000000000000a1") == 1);
    REQUIRE((*db)->DeleteRun(4).ok());
    CHECK((*db)->FindRunKeys({"00000000000000a1"})->at("00000000000000a1") == 1);
    // ListRuns from an id: the runs created since.
    auto since = (*db)->ListRuns(2);
    REQUIRE(since.ok());
    REQUIRE(since->size() == 1);
    CHECK((*since)[0].id == 2);
    CHECK((*db)->ListRuns(5)->empty());
  }
  // The file as a writer from before the index left it: runs that name
  // their keys, no entries, no mark that the index is complete.
  {
    auto env = store::LmdbEnv::Open(path, store::LmdbEnv::Mode::kReadWrite);
    REQUIRE(env.ok());
    REQUIRE(store::WithWriteTxn(**env, [](store::LmdbTxn& txn) -> cct::Status {
              auto meta = txn.OpenDb("meta", false);
              if (!meta.ok() || !*meta) return cct::IoError("no meta table");
              for (const char* k : {"run_key:00000000000000a1", "run_key:00000000000000a2", "run_key_index"})
                CCT_RETURN_IF_ERROR(txn.Delete(**meta, k));
              return cct::Status::Ok();
            }).ok());
  }
  {
    // A reader changes nothing, and finds nothing.
    auto reader = store::Database::Open(path, store::Database::Mode::kRead);
    REQUIRE(reader.ok());
    CHECK((*reader)->FindRunKeys({"00000000000000a1", "00000000000000a2"})->empty());
  }
  {
    // The first writer indexes them.
    auto writer = store::Database::Open(path, store::Database::Mode::kWrite);
    REQUIRE(writer.ok());
    auto found = (*writer)->FindRunKeys({"00000000000000a1", "00000000000000a2"});
    REQUIRE(found.ok());
    CHECK(*found == std::map<std::string, store::RunId>{{"00000000000000a1", 1}, {"00000000000000a2", 2}});
    // And a gathered run file with such a key updates its run.
    std::vector<store::RunFile> again = {MakeRun("00000000000000a2", "", "", &t)};
    REQUIRE((*writer)->PutRuns(again).ok());
    CHECK(again[0].meta.id == 2);
    CHECK((*writer)->ListRuns()->size() == 2);
  }
}
