#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "cct/node_values.h"
#include "cct/tree_ops.h"
#include "store/database.h"
#include "store/lmdb_env.h"
#include "store/selector.h"
#include "store/tree_codec.h"
#include "tests/test_util.h"

using namespace cct;
using store::Database;
using store::RunMeta;

namespace {

// A tree with threads, several kinds, two metrics (one sparse, one dense),
// deep enough that preorder renumbering moves nodes.
Tree MakeTree(int seed) {
  Tree t;
  const MetricId cpu = t.metrics().RegisterStandard("cputime").value();
  const MetricId bytes = t.metrics().RegisterStandard("gxcopy:h2d").value();
  t.metrics().RegisterStandard("gker:blk_thr").value();  // derived, with operands
  std::mt19937 rng(seed);
  std::vector<NodeId> nodes{kRootNode};
  const FrameKind kinds[] = {FrameKind::kThread, FrameKind::kFunction, FrameKind::kNvtx, FrameKind::kKernel,
                             FrameKind::kGpuOp, FrameKind::kLine};
  for (int i = 0; i < 3000; ++i) {
    const NodeId parent = nodes[rng() % nodes.size()];
    const FrameKind k = kinds[rng() % 6];
    const FrameId f = t.InternFrame(k, "f" + std::to_string(rng() % 300), "mod" + std::to_string(rng() % 3),
                                    k == FrameKind::kLine ? "src.c" : "", k == FrameKind::kLine ? rng() % 50 : 0,
                                    (rng() % 9 == 0) ? kFrameInlined : 0);
    const NodeId n = t.InternChild(parent, f);
    nodes.push_back(n);
    t.AddValue(n, cpu, static_cast<double>(rng() % 1000) + 0.25);
    if (rng() % 20 == 0) t.AddValue(n, bytes, static_cast<double>(rng() % 100000));
  }
  return t;
}

// Every field of every frame from the root: equal keys, equal nodes.
std::string FullPath(const Tree& t, NodeId n) {
  std::string key;
  for (; n != kRootNode; n = t.parent(n)) {
    const Frame f = t.frame(n);
    key += std::to_string(static_cast<int>(f.kind)) + "," + std::to_string(f.flags) + "," + std::string(t.str(f.name)) +
           "," + std::string(t.str(f.module)) + "," + std::string(t.str(f.file)) + "," + std::to_string(f.line) + "\n";
  }
  return key;
}

// Trees are equal when every node's full path carries the same exclusive
// values (node ids may differ: the store renumbers).
void CheckSameTree(const Tree& a, const Tree& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.metrics().size() == b.metrics().size());
  std::map<std::string, NodeId> by_path;
  for (NodeId n = 0; n < b.size(); ++n) by_path[FullPath(b, n)] = n;
  REQUIRE(by_path.size() == b.size());
  for (NodeId n = 0; n < a.size(); ++n) {
    auto it = by_path.find(FullPath(a, n));
    REQUIRE(it != by_path.end());
    const Frame fa = a.frame(n), fb = b.frame(it->second);
    CHECK(fa.kind == fb.kind);
    CHECK(a.str(fa.name) == b.str(fb.name));
    CHECK(a.str(fa.module) == b.str(fb.module));
    CHECK(a.str(fa.file) == b.str(fb.file));
    CHECK(fa.line == fb.line);
    for (MetricId m = 0; m < a.metrics().size(); ++m) CHECK(a.Value(n, m) == b.Value(it->second, m));
  }
  for (MetricId m = 0; m < a.metrics().size(); ++m) {
    CHECK(a.metrics().Get(m).name == b.metrics().Get(m).name);
    CHECK(a.metrics().Get(m).unit == b.metrics().Get(m).unit);
    CHECK(a.metrics().Get(m).formula == b.metrics().Get(m).formula);
  }
}

RunMeta MakeMeta(const std::string& name) {
  RunMeta m;
  m.name = name;
  m.state = store::RunState::kComplete;
  m.source = "test";
  m.start_time_ns = 1700000000123456789;
  m.duration_ns = 2500000000;
  m.exit_code = 3;
  m.command = {"./app", "--size", "a b"};
  m.cwd = "/work";
  m.host = "h";
  m.cpu_model = "cpu";
  m.tags = {{"commit", "abc"}, {"variant", "x"}};
  m.env = {{"OMP_NUM_THREADS", "4"}};
  *m.sampling = {{"clock", "cpu"}, {"freq_hz", 1000}};
  m.diagnostics = {{"partial_unwinds", 2}};
  *m.extra = {{"future_field", {1, 2, 3}}};
  return m;
}

using testutil::Query;

// A database at `path` holding one run named `name` (MakeTree(5)).
void MakeOneRunDatabase(const std::string& path, const std::string& name) {
  auto db = Database::Open(path, Database::Mode::kWrite);
  REQUIRE(db.ok());
  const Tree t = MakeTree(5);
  RunMeta m = MakeMeta(name);
  REQUIRE((*db)->CreateRun(m, &t).ok());
}

}  // namespace

TEST_CASE("tree codec round trip, in preorder") {
  const Tree t = MakeTree(1);
  std::vector<NodeId> stored;
  const auto sections = store::EncodeTree(t, &stored);
  auto back = store::DecodeTree(sections);
  REQUIRE(back.ok());
  CheckSameTree(t, *back);
  // Preorder: every subtree is a contiguous id range, parents first.
  const Tree& d = *back;
  std::vector<NodeId> end(d.size());
  for (NodeId n = d.size(); n-- > 0;) end[n] = std::max<NodeId>(end[n], n + 1);
  for (NodeId n = static_cast<NodeId>(d.size()) - 1; n > 0; --n) end[d.parent(n)] = std::max(end[d.parent(n)], end[n]);
  for (NodeId n = 1; n < d.size(); ++n) {
    CHECK(d.parent(n) < n);
    CHECK(end[n] <= end[d.parent(n)]);
  }
}

TEST_CASE("damaged sections are rejected, not crashed on") {
  const Tree t = MakeTree(2);
  const auto sections = store::EncodeTree(t);
  std::mt19937 rng(3);
  for (const auto& s : sections) {
    const std::string framed = store::FrameSection(s);
    REQUIRE(store::UnframeSection(framed).ok());
    // Flip a byte of the payload: the checksum catches it.
    std::string bad = framed;
    bad[store::kSectionHeaderSize + rng() % s.payload.size()] ^= 0x40;
    CHECK_FALSE(store::UnframeSection(bad).ok());
    // Truncations.
    CHECK_FALSE(store::UnframeSection(framed.substr(0, framed.size() - 1)).ok());
    CHECK_FALSE(store::UnframeSection(framed.substr(0, 10)).ok());
  }
  // Valid checksums over inconsistent payloads: the decoder validates too.
  for (size_t victim = 0; victim < sections.size(); ++victim) {
    for (int trial = 0; trial < 20; ++trial) {
      auto mutated = sections;
      std::string& p = mutated[victim].payload;
      if (p.empty()) continue;
      if (trial % 2) p.resize(rng() % p.size());
      else p[rng() % p.size()] = static_cast<char>(rng());
      auto r = store::DecodeTree(mutated);  // may succeed (a changed value), must not crash
      if (!r.ok()) CHECK(r.status().code() == ErrorCode::kCorrupt);
    }
  }
  auto missing = sections;
  missing.erase(missing.begin());
  CHECK_FALSE(store::DecodeTree(missing).ok());
}

TEST_CASE("database round trip: reopen gives the same tree and metadata") {
  testutil::TempDir dir;
  const std::string path = dir / "t.db";
  const Tree t = MakeTree(4);
  RunMeta meta = MakeMeta("first");
  {
    auto db = Database::Open(path, Database::Mode::kWrite);
    REQUIRE(db.ok());
    REQUIRE((*db)->CreateRun(meta, &t).ok());
    CHECK(meta.id == 1);
    RunMeta second = MakeMeta("second");
    REQUIRE((*db)->CreateRun(second, &t).ok());
    CHECK(second.id == 2);
  }
  auto db = Database::Open(path, Database::Mode::kRead);
  REQUIRE(db.ok());
  auto runs = (*db)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 2);
  const RunMeta& r = runs->front();
  CHECK(r.id == 1);
  CHECK(r.name == "first");
  CHECK(r.state == store::RunState::kComplete);
  CHECK(r.start_time_ns == meta.start_time_ns);
  CHECK(r.duration_ns == meta.duration_ns);
  CHECK(r.exit_code == 3);
  CHECK_FALSE(r.term_signal.has_value());
  CHECK(r.command == meta.command);
  CHECK(r.tags == meta.tags);
  CHECK(r.env == meta.env);
  CHECK(*r.sampling == *meta.sampling);
  CHECK(r.diagnostics == meta.diagnostics);
  CHECK(*r.extra == *meta.extra);  // fields of newer writers survive
  CHECK(r.node_count == t.size());
  auto back = (*db)->ReadTree(1);
  REQUIRE(back.ok());
  CheckSameTree(t, *back);
}

TEST_CASE("updating a run replaces its tree, including longer and shorter ones") {
  testutil::TempDir dir;
  const std::string path = dir / "u.db";
  auto db = Database::Open(path, Database::Mode::kWrite);
  REQUIRE(db.ok());
  RunMeta meta = MakeMeta("growing");
  meta.state = store::RunState::kRecording;
  Tree small;
  const MetricId cpu = small.metrics().RegisterStandard("cputime").value();
  small.AddValue(small.InternChild(kRootNode, small.InternFrame(FrameKind::kFunction, "a")), cpu, 1);
  REQUIRE((*db)->CreateRun(meta, &small).ok());
  // A tree bigger than one chunk (1 MiB), then a small one again.
  Tree big;
  const MetricId bcpu = big.metrics().RegisterStandard("cputime").value();
  NodeId n = kRootNode;
  for (int i = 0; i < 200000; ++i) {
    n = big.InternChild(i % 1000 == 0 ? kRootNode : n, big.InternFrame(FrameKind::kFunction, "g" + std::to_string(i)));
    big.AddValue(n, bcpu, i);
  }
  meta.checkpoints = 1;
  REQUIRE((*db)->UpdateRun(meta, &big).ok());
  auto read_big = (*db)->ReadTree(meta.id);
  REQUIRE(read_big.ok());
  CHECK(read_big->size() == big.size());
  meta.state = store::RunState::kComplete;
  REQUIRE((*db)->UpdateRun(meta, &small).ok());
  auto read_small = (*db)->ReadTree(meta.id);
  REQUIRE(read_small.ok());
  CheckSameTree(small, *read_small);
  CHECK((*db)->GetRun(meta.id)->state == store::RunState::kComplete);
  REQUIRE((*db)->DeleteRun(meta.id).ok());
  CHECK((*db)->GetRun(meta.id).status().code() == ErrorCode::kNotFound);
}

TEST_CASE("damaged and foreign database files: exit 2 with one clear line") {
  testutil::TempDir dir;
  // A good database to damage.
  const std::string good = dir / "good.db";
  MakeOneRunDatabase(good, "r");
  int rc = 0;
  std::string err;
  Query(good, {"tree", "1", "--depth", "1"}, &rc, &err);
  REQUIRE(rc == 0);
  const std::string data = testutil::ReadFileOrDie(good);

  struct Case {
    std::string name, contents, expect;
  };
  std::mt19937 rng(9);
  std::string random(64 * 1024, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  const std::vector<Case> cases = {
      {"empty", "", "empty file"},
      {"random", random, "not a cctdb database"},
      {"truncated", data.substr(0, data.size() / 2), "truncated"},
      {"header only", data.substr(0, 8192), "truncated"},
      {"text", "hello, world\n", "not a cctdb database"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string path = dir / ("case.db");
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-lock");
    testutil::WriteFileOrDie(path, c.contents);
    for (const std::vector<std::string>& args : {std::vector<std::string>{"runs"}, {"tree", "1"}}) {
      const std::string out = Query(path, args, &rc, &err);
      CHECK(rc == 2);
      CHECK(testutil::LineCount(err) == 1);
      CHECK_MESSAGE(err.find(c.expect) != std::string::npos, err);
      CHECK(err.find("cct-query: ") == 0);
    }
  }

  // An LMDB file of another program.
  const std::string foreign = dir / "foreign.db";
  {
    auto env = store::LmdbEnv::Open(foreign, store::LmdbEnv::Mode::kReadWrite);
    REQUIRE(env.ok());
    REQUIRE(store::WithWriteTxn(**env, [](store::LmdbTxn& txn) {
              auto dbi = txn.OpenDb("settings", true);
              if (!dbi.ok()) return dbi.status();
              return txn.Put(**dbi, "k", "v");
            }).ok());
  }
  Query(foreign, {"runs"}, &rc, &err);
  CHECK(rc == 2);
  CHECK(err.find("another program") != std::string::npos);
  // Writing into it is refused too (cct-import must not adopt it).
  auto w = Database::Open(foreign, Database::Mode::kWrite);
  CHECK_FALSE(w.ok());

  // A newer format version.
  const std::string newer = dir / "newer.db";
  std::filesystem::copy_file(good, newer);
  {
    REQUIRE(testutil::StampFormatVersion(newer, store::kFormatVersion + 1));
  }
  Query(newer, {"runs"}, &rc, &err);
  CHECK(rc == 2);
  CHECK(err.find("newer cctdb") != std::string::npos);
  CHECK(testutil::LineCount(err) == 1);

  // A flipped byte inside a stored section: the checksum reports it.
  const std::string flipped = dir / "flipped.db";
  std::string bytes = data;
  const size_t at = bytes.find("CSEC");  // section magic, little-endian "CSEC"
  REQUIRE(at != std::string::npos);
  bytes[at + store::kSectionHeaderSize + 7] ^= 0x01;
  testutil::WriteFileOrDie(flipped, bytes);
  Query(flipped, {"tree", "1"}, &rc, &err);
  CHECK(rc == 2);
  CHECK(err.find("damaged") != std::string::npos);
  CHECK(testutil::LineCount(err) == 1);

  // Random corruption anywhere: never a crash, never a hang.
  for (int trial = 0; trial < 25; ++trial) {
    std::string b = data;
    for (int k = 0; k < 16; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    const std::string p = dir / ("fuzz" + std::to_string(trial) + ".db");
    testutil::WriteFileOrDie(p, b);
    auto r = testutil::Run({testutil::Tool("cct-query"), "-d", p, "tree", "1"}, {}, 30);
    CAPTURE(trial);
    CHECK_FALSE(r.timed_out);
    CHECK(r.signal == 0);
    CHECK((r.exit_code == 0 || r.exit_code == 2));
    if (r.exit_code == 2) CHECK(testutil::LineCount(r.err) == 1);
  }

  // A missing file.
  Query(dir / "absent.db", {"runs"}, &rc, &err);
  CHECK(rc == 2);
  CHECK(err.find("no such database") != std::string::npos);
}

namespace {
// A database at `path` holding one run, id 1, without a tree: a small file
// (a handful of pages) for the damage tests to edit.
std::string OneRunDatabase(const std::string& path) {
  auto db = Database::Open(path, Database::Mode::kWrite);
  REQUIRE(db.ok());
  RunMeta m = MakeMeta("r");
  REQUIRE((*db)->CreateRun(m).ok());
  REQUIRE(m.id == 1);
  return path;
}
}  // namespace

TEST_CASE("a database another process is creating (lock held, data file still empty): readers wait, then read it") {
  // LMDB's writer makes DB-lock, then the data file, empty until its first
  // pages are written, holding a lock on DB-lock all along. A query landing
  // in between once said "is an empty file, not a cctdb database" (the soak
  // test's concurrent queries hit it). Here a child process plays the
  // writer: LMDB's own lock file, held open, and 300 ms of an empty data
  // file before a real database's bytes land in it.
  testutil::TempDir dir;
  const std::string good = dir / "good.db";
  MakeOneRunDatabase(good, "made-while-you-waited");
  const std::string data = testutil::ReadFileOrDie(good);
  const std::string path = dir / "creating.db";
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto env = store::LmdbEnv::Open(path, store::LmdbEnv::Mode::kReadWrite);
    if (!env.ok() || ::truncate(path.c_str(), 0) != 0) _exit(1);
    char c = 1;
    if (::write(ready[1], &c, 1) != 1) _exit(1);
    ::usleep(300000);
    const int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0 || ::write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) _exit(1);
    ::close(fd);
    ::usleep(100000);
    _exit(0);  // the lock goes with the process
  }
  ::close(ready[1]);
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  ::close(ready[0]);
  int rc = 0;
  std::string err;
  const std::string out = Query(path, {"runs", "--format", "csv"}, &rc, &err);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK_MESSAGE(rc == 0, err);
  CHECK(out.find("made-while-you-waited") != std::string::npos);
  // An empty file nobody is creating is still refused at once.
  std::filesystem::remove(path + "-lock");
  testutil::WriteFileOrDie(path, "");
  Query(path, {"runs"}, &rc, &err);
  CHECK(rc == 2);
  CHECK(err.find("empty file") != std::string::npos);
}

TEST_CASE("a record whose stored sizes reach past the end of the file: a damage status, not SIGBUS") {
  // LMDB trusts a leaf node's key and data sizes: a damaged one hands back a
  // view that runs off the end of the mapped file, and the first byte read
  // past the end is SIGBUS in whoever decodes it (found by database_fuzz:
  // a key size that put a run record's first byte past the end).
  testutil::TempDir dir;
  const std::string data = testutil::ReadFileOrDie(OneRunDatabase(dir / "good.db"));
  // LMDB's leaf node (mdb.c, MDB_node): data size low and high 16 bits,
  // flags, key size, then the key and the data. Run 1's key is 00 00 00 01
  // (four bytes), its data a JSON object.
  const std::string node_tail("\x04\x00\x00\x00\x00\x01{", 7);
  const size_t at = data.find(node_tail);
  REQUIRE(at != std::string::npos);
  REQUIRE(data.find(node_tail, at + 1) == std::string::npos);
  const size_t node = at - 6;
  REQUIRE(data[node + 4] == 0);  // flags: plain data, not on overflow pages
  REQUIRE(data[node + 5] == 0);
  REQUIRE(data.size() < 60000);  // so that the sizes below reach past it

  struct Damage {
    std::string name;
    size_t field;    // offset in the node
    uint32_t value;  // little-endian, 4 bytes for the data size, 2 for the key size
    bool point_read;  // GetRun too (LMDB itself compares the key on a point read)
  };
  // 15 MiB of data: past the file, inside LMDB's 4 GiB map. A key of 65535
  // bytes: the record's first byte is past the file.
  for (const Damage& d : {Damage{"data size", 0, 15u << 20, true}, Damage{"key size", 6, 0xffff, false}}) {
    CAPTURE(d.name);
    std::string bytes = data;
    for (size_t i = 0; i < (d.field == 0 ? 4u : 2u); ++i) bytes[node + d.field + i] = static_cast<char>(d.value >> (8 * i));
    const std::string path = dir / "damaged.db";
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-lock");
    testutil::WriteFileOrDie(path, bytes);

    // In a child: a fault kills it, not the test.
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      auto db = Database::Open(path, Database::Mode::kRead);
      if (!db.ok()) ::_exit(10);
      auto runs = (*db)->ListRuns();  // a cursor walk
      if (runs.ok() || runs.status().code() != ErrorCode::kCorrupt ||
          runs.status().message().find("past the end of the file") == std::string::npos)
        ::_exit(11);
      if (d.point_read) {
        auto run = (*db)->GetRun(1);
        if (run.ok() || run.status().message().find("past the end of the file") == std::string::npos) ::_exit(12);
      }
      ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK_FALSE(WIFSIGNALED(status));
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);

    // The tool: one line naming the damage (not the fault guard's generic one).
    int rc = 0;
    std::string err;
    Query(path, {"runs"}, &rc, &err);
    CHECK(rc == 2);
    CHECK(testutil::LineCount(err) == 1);
    CHECK_MESSAGE(err.find("past the end of the file") != std::string::npos, err);
  }
}

TEST_CASE("a header whose table root is a meta page: a damage status, not LMDB's abort") {
  // LMDB asserts 'root > 1' (and aborts the process) when a table's root is
  // one of its two header pages (found by database_fuzz).
  testutil::TempDir dir;
  const std::string path = OneRunDatabase(dir / "t.db");
  std::string bytes = testutil::ReadFileOrDie(path);
  // LMDB's meta pages (mdb.c, MDB_meta) are pages 0 and 1 (4 KiB each here):
  // a 16-byte page header, magic, version, address, map size, then the
  // free-page and main tables' MDB_db records (48 bytes, the root page
  // number at 40). The main table's root, in both.
  REQUIRE(bytes.size() >= 3 * 4096);
  for (size_t page : {size_t{0}, size_t{4096}}) {
    const size_t root = page + 16 + 24 + 48 + 40;
    uint64_t was = 0;
    std::memcpy(&was, bytes.data() + root, 8);
    REQUIRE(was >= 2);  // an intact file's root is a data page
    const uint64_t meta_page = page == 0 ? 0 : 1;
    std::memcpy(bytes.data() + root, &meta_page, 8);
  }
  testutil::WriteFileOrDie(path, bytes);
  auto db = Database::Open(path, Database::Mode::kRead);  // before the fix: abort()
  REQUIRE_FALSE(db.ok());
  CHECK(db.status().code() == ErrorCode::kCorrupt);
  CHECK_MESSAGE(db.status().message().find("root of a table") != std::string::npos, db.status().message());
}

TEST_CASE("a second header with a newer transaction and a page size of 0: a damage status, not SIGFPE") {
  // LMDB reads both header pages, uses the one with the newer transaction
  // and divides by its page size (found by database_fuzz in CI).
  testutil::TempDir dir;
  const std::string path = OneRunDatabase(dir / "t.db");
  std::string bytes = testutil::ReadFileOrDie(path);
  REQUIRE(bytes.size() >= 3 * 4096);
  // Page 1's MDB_meta (mdb.c): the page size is mm_dbs[0].md_pad, 24 bytes
  // after the 16-byte page header; the transaction id closes the record.
  const size_t second = 4096;
  uint32_t psize = 0;
  std::memcpy(&psize, bytes.data() + 16 + 24, 4);
  REQUIRE(psize == 4096);
  for (const uint32_t bad : {uint32_t{0}, uint32_t{8192}}) {
    CAPTURE(bad);
    std::string damaged = bytes;
    std::memcpy(damaged.data() + second + 16 + 24, &bad, 4);
    const uint64_t newest = ~uint64_t{0} >> 1;
    std::memcpy(damaged.data() + second + 16 + 24 + 2 * 48 + 8, &newest, 8);
    testutil::WriteFileOrDie(path, damaged);
    auto db = Database::Open(path, Database::Mode::kRead);  // before the fix: SIGFPE for 0
    REQUIRE_FALSE(db.ok());
    CHECK(db.status().code() == ErrorCode::kCorrupt);
    CHECK_MESSAGE(db.status().message().find("different page sizes") != std::string::npos, db.status().message());
  }
}

TEST_CASE("a named table whose root is a meta page: a damage status, not LMDB's abort") {
  // The same assertion through a named table's record in the main table
  // (found by database_fuzz after the header check).
  testutil::TempDir dir;
  const std::string path = OneRunDatabase(dir / "t.db");
  std::string bytes = testutil::ReadFileOrDie(path);
  // The main table's leaf node for "meta" (mdb.c, MDB_node): data size,
  // flags F_SUBDATA (2), key size 4, the key, then the table's MDB_db
  // record (48 bytes, the root page number at 40).
  // Copy-on-write leaves older copies of the main table's leaf in the file:
  // every one is changed.
  const std::string node_tail("\x02\x00\x04\x00meta", 8);
  int changed = 0;
  for (size_t at = bytes.find(node_tail); at != std::string::npos; at = bytes.find(node_tail, at + 1)) {
    const size_t root = at + node_tail.size() + 40;
    uint64_t was = 0;
    std::memcpy(&was, bytes.data() + root, 8);
    REQUIRE(was >= 2);
    const uint64_t meta_page = 1;
    std::memcpy(bytes.data() + root, &meta_page, 8);
    ++changed;
  }
  REQUIRE(changed >= 1);
  testutil::WriteFileOrDie(path, bytes);
  auto db = Database::Open(path, Database::Mode::kRead);  // before the fix: abort()
  REQUIRE_FALSE(db.ok());
  CHECK(db.status().code() == ErrorCode::kCorrupt);
  CHECK_MESSAGE(db.status().message().find("table 'meta' names page 1 as its root") != std::string::npos,
                db.status().message());
}

TEST_CASE("several processes write runs into one database at once") {
  testutil::TempDir dir;
  const std::string db = dir / "shared.db";
  // Each writer imports a different profile; all start together.
  std::vector<pid_t> pids;
  const int kWriters = 8;
  for (int i = 0; i < kWriters; ++i) {
    std::string folded;
    for (int j = 0; j <= i; ++j) folded += "main;w" + std::to_string(i) + ";f" + std::to_string(j) + " " + std::to_string(j + 1) + "\n";
    testutil::WriteFileOrDie(dir / ("p" + std::to_string(i) + ".folded"), folded);
  }
  for (int i = 0; i < kWriters; ++i) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
      const std::string tool = testutil::Tool("cct-import");
      const std::string file = dir / ("p" + std::to_string(i) + ".folded");
      const std::string name = "writer" + std::to_string(i);
      execl(tool.c_str(), tool.c_str(), "-d", db.c_str(), "--from", "folded", file.c_str(), "--name", name.c_str(),
            "--tag", "batch=1", static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  auto opened = Database::Open(db, Database::Mode::kRead);
  REQUIRE(opened.ok());
  auto runs = (*opened)->ListRuns();
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == kWriters);
  std::set<std::string> names;
  std::set<store::RunId> ids;
  for (const RunMeta& r : *runs) {
    names.insert(r.name);
    ids.insert(r.id);
    auto t = (*opened)->ReadTree(r.id);
    REQUIRE(t.ok());
    const int i = std::stoi(r.name.substr(6));
    NodeValues v(*t);
    // writer i wrote values 1..i+1
    CHECK(v.Total(0) == (i + 1) * (i + 2) / 2);
  }
  CHECK(names.size() == kWriters);
  CHECK(ids.size() == kWriters);
}

namespace {
// The ids of the runs `text` selects in `db` (at `path`); none when it
// selects nothing or fails.
std::vector<store::RunId> SelectedIds(Database& db, const std::string& path, const std::string& text) {
  auto sel = store::ParseSelector(text, path);
  REQUIRE_MESSAGE(sel.ok(), text);
  auto runs = store::SelectRuns(db, *sel);
  std::vector<store::RunId> ids;
  if (runs.ok())
    for (const RunMeta& r : *runs) ids.push_back(r.id);
  return ids;
}

// Overwrites run `id`'s record (id < 256) with bytes that are not JSON.
void DamageRunRecord(const std::string& path, uint8_t id) {
  auto env = store::LmdbEnv::Open(path, store::LmdbEnv::Mode::kReadWrite);
  REQUIRE(env.ok());
  REQUIRE(store::WithWriteTxn(**env, [id](store::LmdbTxn& txn) -> cct::Status {
            auto runs = txn.OpenDb("runs", false);
            if (!runs.ok() || !*runs) return cct::IoError("no runs table");
            return txn.Put(**runs, std::string("\0\0\0", 3) + static_cast<char>(id), "{not json");
          }).ok());
}
// A run of a process tree, as a recording stores it.
struct ProcessSpec {
  std::string name;
  store::RunId parent = 0, root = 0;  // parent_run, root_run (0: none)
  int64_t pid = 0;
  bool exec = false;  // the process exec'd: its next image's run follows
};
// Creates those runs in order (ids 1, 2, ... in a new file), each with an
// empty tree.
void WriteProcessRuns(const std::string& path, const std::vector<ProcessSpec>& specs) {
  auto db = Database::Open(path, Database::Mode::kWrite);
  REQUIRE(db.ok());
  for (const ProcessSpec& s : specs) {
    RunMeta m = MakeMeta(s.name);
    *m.extra = nlohmann::json::object();
    m.parent_run = s.parent;
    m.root_run = s.root;
    m.pid = s.pid;
    if (s.exec) m.extra["exec"] = true;
    Tree t;
    REQUIRE((*db)->CreateRun(m, &t).ok());
  }
}
}  // namespace

TEST_CASE("selectors parse and select") {
  testutil::TempDir dir;
  const std::string path = dir / "sel.db";
  {
    auto db = Database::Open(path, Database::Mode::kWrite);
    REQUIRE(db.ok());
    for (int i = 0; i < 5; ++i) {
      RunMeta m = MakeMeta(i % 2 ? "odd" : "even");
      m.tags = {{"commit", i < 3 ? "aaa" : "bbb"}};
      Tree t;
      REQUIRE((*db)->CreateRun(m, &t).ok());
    }
  }
  auto db = Database::Open(path, Database::Mode::kRead);
  REQUIRE(db.ok());
  auto select = [&](const std::string& text) { return SelectedIds(**db, path, text); };
  CHECK(select("3") == std::vector<store::RunId>{3});
  CHECK(select("latest") == std::vector<store::RunId>{5});
  CHECK(select("latest~0") == std::vector<store::RunId>{5});
  CHECK(select("latest~4") == std::vector<store::RunId>{1});
  CHECK(select("latest~5").empty());
  CHECK(select("odd") == std::vector<store::RunId>{4});  // the newest with that name
  CHECK(select("even") == std::vector<store::RunId>{5});
  CHECK(select("tag:commit=aaa") == std::vector<store::RunId>{1, 2, 3});
  CHECK(select("tag:commit=bbb") == std::vector<store::RunId>{4, 5});
  CHECK(select(path + ":2") == std::vector<store::RunId>{2});
  CHECK(select(path + ":tag:commit=bbb") == std::vector<store::RunId>{4, 5});
  CHECK(select("99").empty());

  auto sel = store::ParseSelector("other.db:latest@iter=2..4", path);
  REQUIRE(sel.ok());
  CHECK(sel->db_path == "other.db");
  CHECK(sel->kind == store::RunSelector::Kind::kLatest);
  REQUIRE(sel->iteration.has_value());
  CHECK(sel->iteration->first == 2);
  CHECK(sel->iteration->last == 4);
  CHECK(store::ParseSelector("5@iter=median", path)->iteration->median);
  CHECK(store::ParseSelector("run:with:colons", path)->name == "run:with:colons");
  for (const char* bad : {"", "tag:", "tag:=x", "latest~x", "3@iter=0", "3@iter=4..2", "@iter=1", "x.db:"})
    CHECK_MESSAGE(!store::ParseSelector(bad, path).ok(), bad);

  // No match: exit 2, naming what is there.
  int rc = 0;
  std::string err;
  Query(path, {"tree", "nonesuch"}, &rc, &err);
  CHECK(rc == 2);
  CHECK(testutil::LineCount(err) == 1);
  CHECK(err.find("no run matches 'nonesuch'") != std::string::npos);
  CHECK(err.find("5 'even' (complete)") != std::string::npos);

  // A run by id is its own record only: another run's unreadable record
  // stops `latest` (which, in a database this small, reads them all), not
  // `3`.
  db->reset();
  DamageRunRecord(path, 1);
  db = Database::Open(path, Database::Mode::kRead);
  REQUIRE(db.ok());
  CHECK(select("3") == std::vector<store::RunId>{3});
  CHECK(select("latest").empty());
  auto damaged = store::SelectRuns(**db, *store::ParseSelector("1", path));
  REQUIRE_FALSE(damaged.ok());
  CHECK(damaged.status().code() != cct::ErrorCode::kNotFound);
}

TEST_CASE("selectors over process trees: latest and NAME mean an invocation's root, NAME/all all its processes") {
  // Runs as version 1 wrote them: parent_run links only, no root_run.
  testutil::TempDir dir;
  const std::string path = dir / "tree.db";
  // 1 'a' (root) forks 2, which forks 3; 4 'b' (root) execs itself (5, same
  // pid) after forking 6; 7 'imp' is an imported run; 8 'helper' is a late
  // child of 1.
  WriteProcessRuns(path, {{"a", 0, 0, 100, false},
                          {"a", 1, 0, 101, false},
                          {"a", 2, 0, 102, false},
                          {"b", 0, 0, 200, true},
                          {"b", 4, 0, 200, false},
                          {"b", 4, 0, 201, false},
                          {"imp", 0, 0, 0, false},
                          {"helper", 1, 0, 103, false}});
  {
    // Stamped as a version 1 file.
    REQUIRE(testutil::StampFormatVersion(path, 1));
  }
  auto db = Database::Open(path, Database::Mode::kRead);
  REQUIRE(db.ok());
  auto select = [&](const std::string& text) { return SelectedIds(**db, path, text); };
  using Ids = std::vector<store::RunId>;
  CHECK(select("latest") == Ids{7});
  CHECK(select("latest~1") == Ids{5});  // the root process, in the image it exec'd
  CHECK(select("latest~2") == Ids{1});
  CHECK(select("latest~3").empty());
  CHECK(select("a") == Ids{1});
  CHECK(select("b") == Ids{5});
  CHECK(select("helper") == Ids{8});  // a name only a child has: that child
  CHECK(select("2") == Ids{2});       // an id is that run
  CHECK(select("a/all") == (Ids{1, 2, 3, 8}));
  CHECK(select("3/all") == (Ids{1, 2, 3, 8}));
  CHECK(select("b/all") == (Ids{4, 5, 6}));
  CHECK(select("latest/all") == Ids{7});
  CHECK(select(path + ":latest~1/all") == (Ids{4, 5, 6}));
  // Each run's root, read up its parent chain record by record (these
  // version 1 runs name no root_run), as from the whole listing.
  {
    const std::map<store::RunId, store::RunId> root_of = {{1, 1}, {2, 1}, {3, 1}, {4, 4},
                                                          {5, 4}, {6, 4}, {7, 7}, {8, 1}};
    auto all = (*db)->ListRuns();
    REQUIRE(all.ok());
    REQUIRE(all->size() == root_of.size());
    for (const RunMeta& r : *all) {
      CAPTURE(r.id);
      auto root = store::InvocationRoot(**db, r);
      REQUIRE(root.ok());
      CHECK(*root == root_of.at(r.id));
      CHECK(store::InvocationRoot(r, *all) == root_of.at(r.id));
    }
  }
  for (const char* bad : {"/all", "tag:k=v/all", "a/all@iter=2"})
    CHECK_MESSAGE(!store::ParseSelector(bad, path).ok(), bad);

  // A writer stamps the version 1 file with the current version; its records read the same.
  db->reset();
  REQUIRE(Database::Open(path, Database::Mode::kWrite).ok());
  {
    const uint32_t version = testutil::StoredFormatVersion(path);
    CHECK(version == store::kFormatVersion);
    CHECK(version == 3);  // summary metrics (aggregate runs) came with version 3
  }
  auto again = Database::Open(path, Database::Mode::kRead);
  REQUIRE(again.ok());
  auto sel = store::ParseSelector("b/all", path);
  auto runs = store::SelectRuns(**again, *sel);
  REQUIRE(runs.ok());
  CHECK(runs->size() == 3);
}

TEST_CASE("selectors over a long history: latest~N and NAME from the newest runs alone, the same runs as over every run") {
  // 200 old invocations of one run each (named "old"; 1 "first", 7 "rare",
  // 150 "job"; 6 execs), then runs as recordings store them (ids in storing order),
  // named as the NAME checks below need:
  //   201, 202  children of A stored before A's own run, parent_run 203 ("job")
  //   203       A, a root ("job"); 204 its child (another pid, "job")
  //   205       B, a root that execs ("sh"); 206 its next image (same pid,
  //             parent 205, execs again; "env"); 207 the image after (same
  //             pid, parent 206; "make"); 208 B's forked child (another
  //             pid; "make")
  //   209       a process an old recording left behind: parent_run 5 ("left")
  //   210       C, a root whose root_run names a run that is gone (999)
  //   211       D, a root; 212 its child, root_run 211
  //   213       the image old run 6 exec'd into, stored now (same pid,
  //             parent 6, root_run 6; "late")
  //   214       a child of old run 150 stored now (another pid; "job")
  testutil::TempDir dir;
  const std::string path = dir / "history.db";
  std::vector<ProcessSpec> specs;
  for (int i = 1; i <= 200; ++i)
    specs.push_back({i == 1 ? "first" : i == 7 ? "rare" : i == 150 ? "job" : "old", 0, 0, 1000 + i, i == 6});
  const std::vector<ProcessSpec> recent = {
      {"job", 203, 203, 11, false},  {"job", 203, 203, 12, false}, {"job", 0, 0, 10, false},
      {"job", 203, 203, 13, false},  {"sh", 0, 0, 20, true},       {"env", 205, 205, 20, true},
      {"make", 206, 205, 20, false}, {"make", 205, 205, 21, false}, {"left", 5, 0, 30, false},
      {"run", 0, 999, 40, false},    {"run", 0, 0, 50, false},     {"run", 211, 211, 51, false},
      {"late", 6, 6, 1006, false},   {"job", 150, 150, 60, false}};
  specs.insert(specs.end(), recent.begin(), recent.end());
  WriteProcessRuns(path, specs);
  auto db = Database::Open(path, Database::Mode::kRead);
  REQUIRE(db.ok());
  auto select = [&](const std::string& text) { return SelectedIds(**db, path, text); };
  using Ids = std::vector<store::RunId>;
  // The invocation roots, newest first: D, C, B, A, then the old runs
  // (6's root process is the image stored last, 213).
  const std::vector<std::pair<std::string, Ids>> expected = {
      {"latest", Ids{211}},   {"latest~1", Ids{210}},   {"latest~2", Ids{207}},  // B's last image
      {"latest~3", Ids{203}}, {"latest~4", Ids{200}},   {"latest~60", Ids{144}},  // past the first window
      {"latest~198", Ids{213}}, {"latest~203", Ids{1}}, {"latest~204", Ids{}},
      // NAME: the newest root process with the name, not a newer child
      // (204 and 214, whose root is below the first window; 208) nor an
      // older root (150); found through exec'd images
      // (207 by 206 and 205; 213 by 6, below every window but the last);
      // the newest run with the name when no root process has it (209);
      // old roots far below the first window (7, 1).
      {"job", Ids{203}},      {"make", Ids{207}},       {"env", Ids{206}},
      {"late", Ids{213}},     {"left", Ids{209}},       {"rare", Ids{7}},
      {"first", Ids{1}},      {"nosuch", Ids{}}};
  for (const auto& e : expected) CHECK_MESSAGE(select(e.first) == e.second, e.first);
  {
    auto part = (*db)->ListRuns(10, 13);  // what each step of the window reads
    REQUIRE(part.ok());
    Ids listed;
    for (const RunMeta& r : *part) listed.push_back(r.id);
    CHECK(listed == (Ids{10, 11, 12}));
  }

  // The newest invocations are found from the newest records alone: with
  // an old record unreadable, they still are, while a selector that needs
  // every run reports the damage.
  db->reset();
  DamageRunRecord(path, 3);
  db = Database::Open(path, Database::Mode::kRead);
  REQUIRE(db.ok());
  CHECK(select("latest") == Ids{211});
  CHECK(select("latest~2") == Ids{207});
  CHECK(select("job") == Ids{203});
  CHECK(select("late") == Ids{213});  // its chain's records read one by one: 6, not 3
  // The window widens to the roots its runs name (150 for 214, 6 for 213,
  // 5 for 209), which brings 7 in without reading 3.
  CHECK(select("rare") == Ids{7});
  for (const char* text : {"latest~203", "first", "left", "nosuch"}) {
    auto all = store::SelectRuns(**db, *store::ParseSelector(text, path));
    REQUIRE_FALSE(all.ok());
    CHECK_MESSAGE(all.status().code() == cct::ErrorCode::kCorrupt, text);
  }
}

TEST_CASE("run records: format version 2 fields round trip; wrong types are corrupt, not a crash") {
  RunMeta m = MakeMeta("v2");
  m.root_run = 4;
  m.user = "ana";
  m.executable = "/opt/app";
  m.executable_build_id = "0123abcd";
  m.compiler = {"GCC: (GNU) 13.2.0", "clang version 17.0.6"};
  m.kernel = "Linux 6.1.0 #1 SMP x86_64";
  m.os = "Debian GNU/Linux 12 (bookworm)";
  m.glibc = "2.36";
  m.modules = {{"/opt/app", "0123abcd"}, {"/lib/libc.so.6", ""}};
  m.process_cpu_ns = 1234567;
  m.launcher = store::LauncherRank{};
  m.launcher->rank = 3;
  m.launcher->size = 8;
  m.launcher->source = "PMIX_RANK";
  auto back = RunMeta::FromJson(m.ToJson());
  REQUIRE(back.ok());
  CHECK(back->root_run == 4);
  CHECK(back->user == "ana");
  CHECK(back->executable == m.executable);
  CHECK(back->executable_build_id == m.executable_build_id);
  CHECK(back->compiler == m.compiler);
  CHECK(back->kernel == m.kernel);
  CHECK(back->os == m.os);
  CHECK(back->glibc == m.glibc);
  CHECK(back->modules == m.modules);
  CHECK(back->process_cpu_ns == m.process_cpu_ns);
  CHECK(back->launcher == m.launcher);
  CHECK_FALSE(m.ToJson()["launcher"].contains("local_rank"));  // unknown: absent
  CHECK_FALSE(back->extra->contains("modules"));                // known fields, not extras
  // A record without them (version 1): defaults.
  auto old = RunMeta::FromJson(MakeMeta("v1").ToJson());
  REQUIRE(old.ok());
  CHECK(old->root_run == 0);
  CHECK(old->modules.empty());
  CHECK_FALSE(old->launcher.has_value());
  for (const char* bad : {R"({"modules": [3]})", R"({"modules": [{"path": 1}]})", R"({"executable": {"compiler": "x"}})",
                          R"({"launcher": {"rank": "x"}})", R"({"root_run": "x"})"}) {
    nlohmann::json j = MakeMeta("x").ToJson();
    j.update(nlohmann::json::parse(bad));
    CHECK_MESSAGE(!RunMeta::FromJson(j).ok(), bad);
  }
}
