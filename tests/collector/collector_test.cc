// Unit tests of the collector's pure parts: the sample trie, the profile
// builder (with made-up symbols), configuration, run information, and the
// symbolizer on this test binary itself.
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "cct/tree_ops.h"
#include "collector/core/config.h"
#include "collector/core/profile_builder.h"
#include "collector/core/run_info.h"
#include "collector/cpu/modules.h"
#include "collector/cpu/plt_stubs.h"
#include "collector/cpu/sample_trie.h"
#include "collector/cpu/symbol_cache.h"
#include "collector/cpu/symbolizer.h"
#include "collector/cpu/unwinder.h"
#include "tests/test_util.h"

using namespace collector;

namespace {

cct::NodeId FindPath(const cct::Tree& t, const std::vector<std::string>& names) {
  cct::NodeId n = cct::kRootNode;
  for (const auto& name : names) {
    cct::NodeId found = cct::kNoNode;
    for (cct::NodeId c = 1; c < t.size(); ++c)
      if (t.parent(c) == n && t.name(c) == name) found = c;
    if (found == cct::kNoNode) return cct::kNoNode;
    n = found;
  }
  return n;
}

extern "C" __attribute__((noinline)) int collector_test_marker_function(int x) {
  return x * 3 + static_cast<int>(getpid() & 1);
}

}  // namespace

TEST_CASE("sample trie: shared prefixes, leaf values, root-first paths") {
  SampleTrie trie;
  const uint64_t a[] = {10, 20, 30};
  const uint64_t b[] = {10, 20, 40};
  const uint64_t c[] = {10, 20};
  REQUIRE(trie.AddSample(a, 3, 100));
  REQUIRE(trie.AddSample(b, 3, 50));
  REQUIRE(trie.AddSample(a, 3, 7));
  REQUIRE(trie.AddSample(c, 2, 1));
  // root + 10, 20, 30, 40
  CHECK(trie.size() == 5);
  int64_t total = 0;
  uint32_t samples = 0;
  for (SampleTrie::NodeIndex i = 1; i < trie.size(); ++i) {
    total += trie.time_ns(i);
    samples += trie.samples(i);
    if (trie.key(i) == 30) {
      CHECK(trie.time_ns(i) == 107);
      CHECK(trie.samples(i) == 2);
      CHECK(trie.key(trie.parent(i)) == 20);
    }
    if (trie.key(i) == 20) CHECK(trie.samples(i) == 1);
  }
  CHECK(total == 158);
  CHECK(samples == 4);
  trie.Reset();
  CHECK(trie.size() == 0);
  REQUIRE(trie.AddSample(b, 3, 5));
  CHECK(trie.size() == 4);
}

TEST_CASE("sample trie: Reset after several chunks unmaps every one of them and the trie grows again the same") {
  SampleTrie trie;
  // 40,000 distinct leaves under one parent: 40,002 nodes, three chunks of
  // 16,384 nodes (the trie's chunk size).
  auto fill = [&] {
    for (uint64_t k = 1; k <= 40000; ++k) {
      const uint64_t path[] = {7, k + 100};
      REQUIRE(trie.AddSample(path, 2, 1));
    }
  };
  fill();
  CHECK(trie.size() == 40002);
  const size_t full = trie.MappedBytes();
  const size_t chunk = (size_t{1} << 14) * (8 + 4 + 4 + 8);
  CHECK(full >= 3 * chunk);
  trie.Reset();
  CHECK(trie.size() == 0);
  CHECK(trie.MappedBytes() < chunk);  // the chunk table alone
  fill();
  CHECK(trie.size() == 40002);
  CHECK(trie.MappedBytes() == full);
}

TEST_CASE("sample trie: grows past its first index and chunk; a concurrent reader sees consistent nodes") {
  SampleTrie trie;
  std::atomic<bool> done{false};
  std::atomic<bool> bad{false};
  std::thread reader([&] {
    while (!done.load()) {
      const size_t n = trie.size();
      for (SampleTrie::NodeIndex i = 1; i < n; ++i) {
        // Every published node's parent was published before it.
        if (trie.parent(i) >= i) bad = true;
        if (trie.key(i) == 0) bad = true;
      }
    }
  });
  const int kPaths = 40000;  // 3 nodes each: more than one 16 Ki-node chunk
  for (int p = 0; p < kPaths; ++p) {
    const uint64_t keys[] = {uint64_t(1000 + p % 7), uint64_t(100000 + p), uint64_t(200000 + p)};
    REQUIRE(trie.AddSample(keys, 3, 1));
  }
  done = true;
  reader.join();
  CHECK_FALSE(bad.load());
  CHECK(trie.size() == 1 + 7 + 2 * kPaths);
  uint64_t samples = 0;
  for (SampleTrie::NodeIndex i = 1; i < trie.size(); ++i) samples += trie.samples(i);
  CHECK(samples == kPaths);
}

TEST_CASE("sample trie keys: epochs separate equal addresses") {
  CHECK(MakeKey(0x401000, 0) != MakeKey(0x401000, 1));
  CHECK(KeyAddress(MakeKey(0x7fff12345678, 3)) == 0x7fff12345678);
}

TEST_CASE("profile builder: functions, inlined frames, lines, partial paths, hidden frames") {
  // Made-up symbols: 0x101 = _start, 0x102 = main, 0x103 = compute with an
  // inlined helper, 0x104 = a frame of the collector itself, 0x105 = an
  // address in no known function.
  std::map<uint64_t, SymbolFrames> syms;
  syms[0x101] = {{"_start", "/bin/prog", "", 0, "", 0, false}};
  syms[0x102] = {{"main", "/bin/prog", "prog.c", 10, "prog.c", 5, false}};
  syms[0x103] = {{"compute", "/bin/prog", "prog.c", 30, "prog.c", 20, false},
             {"helper", "/bin/prog", "helper.h", 7, "helper.h", 3, true}};
  syms[0x104] = {{"(anonymous namespace)::ThreadTrampoline(void*)", "/lib/libcct-collector.so", "", 0, "", 0, false}};
  syms[0x106] = {{"collector::NvtxPush(unsigned int, unsigned int)", "/lib/libcct-collector.so", "", 0, "", 0, false}};
  syms[0x107] = {{"dwarf_getscopes", "/lib/libdw.so.1", "", 0, "", 0, false}};
  syms[0x105] = {{"prog+0x99", "/bin/prog", "", 0, "", 0, false}};
  SymbolLookup lookup = [&](uint64_t key, bool) -> const SymbolFrames& { return syms.at(KeyAddress(key)); };

  SampleTrie main_trie, worker_trie;
  const uint64_t full[] = {0x101, 0x102, 0x103};
  const uint64_t partial[] = {kPartialKey, 0x103};
  const uint64_t unknown_root[] = {0x105, 0x103};
  REQUIRE(main_trie.AddSample(full, 3, 3000));
  REQUIRE(main_trie.AddSample(full, 3, 1000));
  REQUIRE(main_trie.AddSample(partial, 2, 500));
  REQUIRE(main_trie.AddSample(unknown_root, 2, 250));
  // Work the collector does in the program's thread (symbolizing an NVTX
  // push site) shows as one node, whatever it called.
  const uint64_t in_collector[] = {0x101, 0x102, 0x106, 0x107};
  REQUIRE(main_trie.AddSample(in_collector, 4, 70));
  const uint64_t worker[] = {0x104, 0x103};
  REQUIRE(worker_trie.AddSample(worker, 2, 200));

  cct::Tree tree;
  ProfileBuilder b(tree, "cputime", "/lib/libcct-collector.so");
  b.AddThread("main thread", main_trie, lookup);
  b.AddThread("thread 1", worker_trie, lookup);
  const cct::MetricId cpu = tree.metrics().Find("cputime");
  const cct::MetricId samples = tree.metrics().Find("samples");

  // _start is hidden; main → compute → helper (inlined) → line helper.h:7.
  const cct::NodeId line = FindPath(tree, {"main thread", "main", "compute", "helper", "helper.h:7"});
  REQUIRE(line != cct::kNoNode);
  CHECK(tree.kind(line) == cct::FrameKind::kLine);
  CHECK(tree.Value(line, cpu) == 4000);
  CHECK(tree.Value(line, samples) == 2);
  const cct::NodeId helper = tree.parent(line);
  CHECK((tree.frame(helper).flags & cct::kFrameInlined) != 0);
  CHECK((tree.frame(tree.parent(helper)).flags & cct::kFrameInlined) == 0);

  // Both the cut unwind and the stack that does not start at _start are
  // partial; their samples are kept and counted.
  const cct::NodeId p1 = FindPath(tree, {"main thread", "<partial call path>", "compute", "helper", "helper.h:7"});
  REQUIRE(p1 != cct::kNoNode);
  CHECK(tree.Value(p1, cpu) == 500);
  const cct::NodeId p2 =
      FindPath(tree, {"main thread", "<partial call path>", "prog+0x99", "compute", "helper", "helper.h:7"});
  REQUIRE(p2 != cct::kNoNode);
  CHECK(tree.Value(p2, cpu) == 250);
  const cct::NodeId own = FindPath(tree, {"main thread", "main", "<cctdb collector>"});
  REQUIRE(own != cct::kNoNode);
  CHECK(tree.Value(own, cpu) == 70);
  CHECK(FindPath(tree, {"main thread", "main", "<cctdb collector>", "dwarf_getscopes"}) == cct::kNoNode);
  CHECK(b.stats().samples == 6);
  // Two partial samples on the main thread and the worker's one (its stack
  // does not begin at a thread start either).
  CHECK(b.stats().partial_samples == 3);

  // The collector's own frame (the thread trampoline) is hidden, but the
  // worker's stack did not start at a thread start: partial.
  CHECK(FindPath(tree, {"thread 1", "<partial call path>", "compute"}) != cct::kNoNode);
  CHECK(FindPath(tree, {"thread 1", "<partial call path>", "(anonymous namespace)::ThreadTrampoline(void*)"}) ==
        cct::kNoNode);
}

TEST_CASE("profile builder: a stack ending at the learned thread root is complete though libc has no names") {
  // A stripped libc (Ubuntu's): clone3's frame is only "libc.so.6+0x129ecb".
  std::map<uint64_t, SymbolFrames> syms;
  syms[0x201] = {{"libc.so.6+0x129ecb", "/lib/libc.so.6", "", 0, "", 0, false}};
  syms[0x202] = {{"libc.so.6+0x9cb83", "/lib/libc.so.6", "", 0, "", 0, false}};
  syms[0x203] = {{"work", "/bin/prog", "", 0, "", 0, false}};
  syms[0x204] = {{"libc.so.6+0x1000", "/lib/libc.so.6", "", 0, "", 0, false}};
  SymbolLookup lookup = [&](uint64_t key, bool) -> const SymbolFrames& { return syms.at(KeyAddress(key)); };
  SampleTrie trie;
  const uint64_t from_root[] = {0x201, 0x202, 0x203};
  const uint64_t elsewhere[] = {0x204, 0x203};
  REQUIRE(trie.AddSample(from_root, 3, 100));
  REQUIRE(trie.AddSample(elsewhere, 2, 10));
  for (const bool learned : {false, true}) {
    CAPTURE(learned);
    cct::Tree tree;
    ProfileBuilder b(tree, "cputime", "/lib/libcct-collector.so");
    if (learned) b.SetThreadRoot([](uint64_t key) { return KeyAddress(key) == 0x201; });
    b.AddThread("thread 1", trie, lookup);
    // Without the root every stack is partial; with it only the one that
    // does not end there.
    CHECK(b.stats().partial_samples == (learned ? 1 : 2));
    CHECK((FindPath(tree, {"thread 1", "libc.so.6+0x129ecb", "libc.so.6+0x9cb83", "work"}) != cct::kNoNode) ==
          learned);
    CHECK(FindPath(tree, {"thread 1", "<partial call path>", "libc.so.6+0x1000", "work"}) != cct::kNoNode);
  }
}

TEST_CASE("profile builder: an interposed call is the program's call; the collector's work below it stays visible") {
  const std::string own = "/lib/libcct-collector.so";
  std::map<uint64_t, SymbolFrames> syms;
  syms[0x101] = {{"_start", "/bin/prog", "", 0, "", 0, false}};
  syms[0x102] = {{"main", "/bin/prog", "prog.c", 10, "prog.c", 5, false}};
  // usleep (ours) calling our nanosleep, whose restart loop is inlined.
  syms[0x110] = {{"usleep", own, "interpose.cc", 300, "interpose.cc", 299, false}};
  syms[0x111] = {{"nanosleep", own, "interpose.cc", 250, "interpose.cc", 240, false},
                 {"(anonymous namespace)::RestartWithTimeoutMs<poll::{lambda(int)#1}>(int, poll::{lambda(int)#1})", own,
                  "interpose.cc", 290, "interpose.cc", 280, true}};
  syms[0x112] = {{"__nanosleep", "/lib/libc.so.6", "", 0, "", 0, false}};
  syms[0x113] = {{"clock_nanosleep", "/lib/libc.so.6", "", 0, "", 0, false}};
  // dlclose (ours) doing the collector's own work before the real one.
  syms[0x120] = {{"dlclose", own, "", 0, "", 0, false}};
  syms[0x121] = {{"collector::BeforeUnload()", own, "", 0, "", 0, false}};
  syms[0x122] = {{"dwfl_module_addrinfo", "/lib/libdw.so.1", "", 0, "", 0, false}};
  SymbolLookup lookup = [&](uint64_t key, bool) -> const SymbolFrames& { return syms.at(KeyAddress(key)); };

  SampleTrie trie;
  const uint64_t sleeping[] = {0x101, 0x102, 0x110, 0x111, 0x112, 0x113};
  REQUIRE(trie.AddSample(sleeping, 6, 300));
  const uint64_t unloading[] = {0x101, 0x102, 0x120, 0x121, 0x122};
  REQUIRE(trie.AddSample(unloading, 5, 7));
  cct::Tree tree;
  ProfileBuilder b(tree, "realtime", own);
  b.AddThread("main thread", trie, lookup);
  const cct::MetricId time = tree.metrics().Find("realtime");

  // The sleep is under usleep, as the program called it; our nanosleep and
  // the restart loop are pass-through frames.
  const cct::NodeId leaf = FindPath(tree, {"main thread", "main", "usleep", "__nanosleep", "clock_nanosleep"});
  REQUIRE(leaf != cct::kNoNode);
  CHECK(tree.Value(leaf, time) == 300);
  CHECK(FindPath(tree, {"main thread", "main", "usleep", "nanosleep"}) == cct::kNoNode);
  CHECK(FindPath(tree, {"main thread", "main", "<cctdb collector>"}) == cct::kNoNode);
  // The collector's own work inside an interposed call is still its own node.
  const cct::NodeId work = FindPath(tree, {"main thread", "main", "dlclose", "<cctdb collector>"});
  REQUIRE(work != cct::kNoNode);
  CHECK(tree.Value(work, time) == 7);
}

TEST_CASE("profile builder: the interposed calls it knows are exactly the collector library's exported libc functions") {
  const auto nm = testutil::Run({"/usr/bin/nm", "-D", "--defined-only", testutil::BuildDir() + "/src/collector/libcct-collector.so"});
  REQUIRE(nm.exit_code == 0);
  std::istringstream in(nm.out);
  std::string address, type, name;
  std::set<std::string> exported;
  while (in >> address >> type >> name)
    if (type == "T" || type == "W") exported.insert(name);
  // The injection entry points NVTX and CUDA call are not libc calls.
  exported.erase("InitializeInjection");
  exported.erase("InitializeInjectionNvtx2");
  REQUIRE(exported.size() > 20);
  for (const std::string& f : exported) {
    INFO(f);
    CHECK(IsInterposedCall(f));
  }
  for (std::string_view f : InterposedCalls()) {
    INFO(f);
    CHECK(exported.count(std::string(f)) == 1);
  }
  for (const char* f : {"main", "malloc", "collector::BeforeUnload()", "InitializeInjection", "nanosleep_", "sleepy"})
    CHECK_FALSE(IsInterposedCall(f));
}

TEST_CASE("collector config: parse, defaults, errors, round trip through the environment") {
  std::map<std::string, std::string> env;
  auto lookup = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto none = ParseConfig(lookup);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());

  env = {{"CCT_RECORD_DB", "/tmp/x.db"}, {"CCT_RECORD_CLOCK", "wall"}, {"CCT_RECORD_FREQ", "4000"},
         {"CCT_RECORD_TAGS", R"({"commit":"abc","n":"1"})"}, {"CCT_RECORD_FOLLOW", "0"},
         {"CCT_RECORD_PARENT_KEY", "00000000deadBEEF"}, {"CCT_RECORD_ACCOUNT_SHORT_THREADS", "1"}};
  auto c = ParseConfig(lookup);
  REQUIRE(c.ok());
  REQUIRE(c->has_value());
  CHECK((*c)->clock == SampleClock::kWall);
  CHECK((*c)->freq_hz == 4000);
  CHECK((*c)->checkpoint_s == 1);
  CHECK((*c)->tags.at("commit") == "abc");
  CHECK_FALSE((*c)->follow);
  CHECK((*c)->parent_key == "00000000deadBEEF");
  CHECK((*c)->root_key.empty());
  // Without CCT_RECORD_SPOOL the run file goes beside the database, where
  // the next cct-record into it gathers it.
  CHECK((*c)->spool_dir == "/tmp/x.db.spool/unowned");
  CHECK((*c)->account_short_threads);
  CHECK((*c)->max_depth == kDefaultMaxDepth);
  CHECK(kDefaultMaxDepth >= 2048);
  (*c)->max_depth = 100;

  env = ConfigEnvironment(**c);
  auto again = ParseConfig(lookup);
  REQUIRE(again.ok());
  CHECK((*again)->tags == (*c)->tags);
  CHECK((*again)->freq_hz == 4000);
  CHECK((*again)->parent_key == "00000000deadBEEF");
  CHECK((*again)->spool_dir == "/tmp/x.db.spool/unowned");
  CHECK((*again)->account_short_threads);
  CHECK((*again)->max_depth == 100);
  CHECK((*again)->rows_path.empty());
  // cct-record's spool and shared row table, each with or without the other.
  for (const bool rows : {false, true}) {
    CAPTURE(rows);
    env = {{"CCT_RECORD_DB", "/tmp/x.db"}, {"CCT_RECORD_SPOOL", "/tmp/x.db.spool/s1"}};
    if (rows) env["CCT_RECORD_ROWS"] = "/proc/77/fd/9";
    auto spooled = ParseConfig(lookup);
    REQUIRE(spooled.ok());
    CHECK((*spooled)->spool_dir == "/tmp/x.db.spool/s1");
    CHECK((*spooled)->rows_path == (rows ? "/proc/77/fd/9" : ""));
    env = ConfigEnvironment(**spooled);
    CHECK(env.count("CCT_RECORD_ROWS") == (rows ? 1u : 0u));
    CHECK((*ParseConfig(lookup))->rows_path == (*spooled)->rows_path);
  }

  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{{"CCT_RECORD_CLOCK", "gpu"},
                                                                     {"CCT_RECORD_FREQ", "0"},
                                                                     {"CCT_RECORD_FREQ", "fast"},
                                                                     {"CCT_RECORD_TAGS", "[1]"},
                                                                     {"CCT_RECORD_PARENT_KEY", "17"},
                                                                     {"CCT_RECORD_ROOT_KEY", "00000000deadbeeg"},
                                                                     {"CCT_RECORD_ACCOUNT_SHORT_THREADS", "yes"},
                                                                     {"CCT_RECORD_SYSTEM_DEBUG_INFO", "on"},
                                                                     {"CCT_RECORD_MAX_DEPTH", "0"},
                                                                     {"CCT_RECORD_MAX_DEPTH", "7"},
                                                                     {"CCT_RECORD_MAX_DEPTH", "65537"},
                                                                     {"CCT_RECORD_MAX_DEPTH", "64k"},
                                                                     {"CCT_RECORD_GPU_PC_PERIOD", "4"},
                                                                     {"CCT_RECORD_GPU_PC_PERIOD", "32"},
                                                                     {"CCT_RECORD_GPU_PC_PERIOD", "015"},
                                                                     {"CCT_RECORD_GPU_PC_PERIOD", ""},
                                                                     {"CCT_RECORD_GPU_PC_PERIOD", "x"},
                                                                     {"CCT_RECORD_NVTX_INHERIT", "all"},
                                                                     {"CCT_RECORD_TRACE_LIMIT", "0"},
                                                                     {"CCT_RECORD_TRACE_LIMIT", "12Q"}}) {
    env = {{"CCT_RECORD_DB", "/tmp/x.db"}, {k, v}};
    auto bad = ParseConfig(lookup);
    CHECK_FALSE(bad.ok());
    if (!bad.ok()) CHECK(bad.status().message().find(k) != std::string::npos);
  }

  // --trace and its limit: off and 256 MiB unless given; carried to
  // children only when tracing.
  env = {{"CCT_RECORD_DB", "/tmp/x.db"}};
  auto untraced = ParseConfig(lookup);
  REQUIRE(untraced.ok());
  CHECK_FALSE((*untraced)->trace);
  CHECK((*untraced)->trace_limit_bytes == uint64_t{256} << 20);
  CHECK(ConfigEnvironment(**untraced).count("CCT_RECORD_TRACE") == 0);
  env = {{"CCT_RECORD_DB", "/tmp/x.db"}, {"CCT_RECORD_TRACE", "1"}, {"CCT_RECORD_TRACE_LIMIT", "3M"}};
  auto traced = ParseConfig(lookup);
  REQUIRE(traced.ok());
  CHECK((*traced)->trace);
  CHECK((*traced)->trace_limit_bytes == 3u << 20);
  env = ConfigEnvironment(**traced);
  CHECK(env.at("CCT_RECORD_TRACE_LIMIT") == std::to_string(3u << 20));
  auto traced_again = ParseConfig(lookup);
  REQUIRE(traced_again.ok());
  CHECK((*traced_again)->trace_limit_bytes == 3u << 20);

  // The PC-sampling period: 2^15 unless given, carried to children only
  // with PC sampling on.
  env = {{"CCT_RECORD_DB", "/tmp/x.db"}};
  auto plain = ParseConfig(lookup);
  REQUIRE(plain.ok());
  CHECK((*plain)->gpu_pc_period == 15);
  CHECK(ConfigEnvironment(**plain).count("CCT_RECORD_GPU_PC_PERIOD") == 0);
  env = {{"CCT_RECORD_DB", "/tmp/x.db"}, {"CCT_RECORD_GPU_PC_SAMPLING", "1"}, {"CCT_RECORD_GPU_PC_PERIOD", "31"}};
  auto pcs = ParseConfig(lookup);
  REQUIRE(pcs.ok());
  CHECK((*pcs)->gpu_pc_period == 31);
  CHECK(ConfigEnvironment(**pcs).at("CCT_RECORD_GPU_PC_PERIOD") == "31");
  CHECK_FALSE((*pcs)->nvtx_inherit_main);
  env = {{"CCT_RECORD_DB", "/tmp/x.db"}, {"CCT_RECORD_NVTX_INHERIT", "main"}};
  auto inherit = ParseConfig(lookup);
  REQUIRE(inherit.ok());
  CHECK((*inherit)->nvtx_inherit_main);
  CHECK(ConfigEnvironment(**inherit).at("CCT_RECORD_NVTX_INHERIT") == "main");
}

TEST_CASE("symbolizer: the distribution's binaries are told from the user's") {
  for (const char* p : {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6", "/usr/bin/gcc",
                        "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "/lib64/ld-linux-x86-64.so.2", "/usr/libexec/x"})
    CHECK(Symbolizer::IsSystemPath(p));
  for (const char* p : {"/usr/local/lib/libfoo.so", "/opt/spack/linux/gcc-12/zlib-abc/lib/libz.so",
                        "/nix/store/abc-glibc/lib/libc.so.6", "/home/u/a.out", "/work/build/prog", "usr/lib/x", ""})
    CHECK_FALSE(Symbolizer::IsSystemPath(p));
}

TEST_CASE("run info: environment allow-list and secrets") {
  CHECK(EnvNameAllowed("CUDA_VISIBLE_DEVICES"));
  CHECK(EnvNameAllowed("OMP_NUM_THREADS"));
  CHECK(EnvNameAllowed("PATH"));
  CHECK_FALSE(EnvNameAllowed("HOME"));
  CHECK_FALSE(EnvNameAllowed("CUDA_"));
  CHECK_FALSE(EnvNameAllowed("AWS_SECRET_ACCESS_KEY"));

  CHECK(LooksSecret("NCCL_AUTH_TOKEN", "x"));
  CHECK(LooksSecret("TORCH_HUB_API_KEY", "x"));
  CHECK(LooksSecret("PYTORCH_URL", "https://user:hunter2@example.com/x"));
  CHECK(LooksSecret("CUDA_THING", "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
  CHECK(LooksSecret("NV_X", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWpr"));
  CHECK_FALSE(LooksSecret("CUDA_VISIBLE_DEVICES", "GPU-5f3b2a1c-8d4e-11ee-b9d1-0242ac120002"));
  CHECK_FALSE(LooksSecret("PATH", "/usr/local/cuda-12.4/bin:/usr/bin:/bin"));
  CHECK_FALSE(LooksSecret("OMP_NUM_THREADS", "16"));

  const char* envp[] = {"PATH=/usr/bin", "HOME=/root", "CUDA_VISIBLE_DEVICES=0,1", "NCCL_TOKEN=abc",
                        "OMP_PROC_BIND=close", "GARBAGE", nullptr};
  const auto rec = RecordedEnvironment(envp);
  CHECK(rec.size() == 3);
  CHECK(rec.count("PATH"));
  CHECK(rec.count("CUDA_VISIBLE_DEVICES"));
  CHECK(rec.count("OMP_PROC_BIND"));
}

TEST_CASE("run info: credentials on a command line are masked, everything else kept") {
  std::vector<std::string> argv = {
      "./train",                                  // the program: kept
      "--password=hunter2",                       // --NAME=VALUE
      "--api-key", "k-123",                       // --NAME VALUE
      "token=abc",                                // NAME=VALUE
      "DB_PASSWD=pw",                             // NAME=VALUE, upper case
      "https://alice:s3cret@example.com/data",    // URL credentials
      "--hub=ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",  // a known token format in a value
      "--author=Bob",                             // AUTHOR is not AUTH
      "--commit=0123456789abcdef0123456789abcdef01234567",  // a hash: reproducibility, kept
      "--lr=0.1",
      "--secret",                                 // an option with no value after it
      "--verbose",
      "/data/train.csv",
  };
  const size_t masked = MaskSecretArguments(argv);
  CHECK(masked == 6);
  const std::vector<std::string> expected = {
      "./train",
      "--password=***",
      "--api-key", "***",
      "token=***",
      "DB_PASSWD=***",
      "https://alice:***@example.com/data",
      "--hub=***",
      "--author=Bob",
      "--commit=0123456789abcdef0123456789abcdef01234567",
      "--lr=0.1",
      "--secret",
      "--verbose",
      "/data/train.csv",
  };
  CHECK(argv == expected);
  // The program's own name is never masked, even when it says "token".
  std::vector<std::string> tool = {"/usr/bin/token-refresher", "--dry-run"};
  CHECK(MaskSecretArguments(tool) == 0);
  CHECK(tool[0] == "/usr/bin/token-refresher");
}

TEST_CASE("run info: Spack and Nix install paths are kept; secrets are found by name and known formats") {
  // Hashes in directory names are not secrets (issue 15): Spack's 32-letter
  // base32 hash, Nix's store hash, a conda package hash.
  const std::string spack = "/opt/spack/opt/spack/linux-rhel8-zen2/gcc-12.2.0/"
                            "openmpi-4.1.5-7l6ehgvmzxstdkqwpdo3khzbdkfjt5ch/lib";
  const std::string nix = "/nix/store/0c7c4a6iyn6ha7vvzp12s1jyqnsf1a8y-python3-3.11.4/bin";
  CHECK_FALSE(LooksSecret("PATH", spack + ":" + nix + ":/usr/bin"));
  CHECK_FALSE(LooksSecret("LD_LIBRARY_PATH", spack + ":/usr/lib"));
  CHECK_FALSE(LooksSecret("PYTHONPATH", nix + "/lib/python3.11/site-packages"));
  CHECK_FALSE(LooksSecret("CONDA_PREFIX", "/home/u/miniforge3/pkgs/numpy-1.26.4-py311h64a7726_0abcdef0123456789abcdef01234"));
  // A path that merely contains a token prefix is a path.
  CHECK_FALSE(LooksSecret("PATH", "/home/u/desk-tools/bin:/opt/hf_cache/bin:/srv/AKIAtools/bin"));
  // Known formats, alone or inside a list.
  CHECK(LooksSecret("CUDA_X", "ghp_" + std::string(36, 'a')));
  CHECK(LooksSecret("CUDA_X", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"));
  CHECK(LooksSecret("NV_X", "AKIAIOSFODNN7EXAMPLE"));
  CHECK(LooksSecret("PATH", "/usr/bin:AKIAIOSFODNN7EXAMPLE"));
  CHECK(LooksSecret("TORCH_X", "hf_" + std::string(34, 'Q')));
  CHECK(LooksSecret("TORCH_X", "sk-proj-" + std::string(40, 'z')));
  CHECK(LooksSecret("NV_X", "-----BEGIN OPENSSH PRIVATE KEY-----"));
  // By name, whatever the value.
  CHECK(LooksSecret("GITHUB_TOKEN", "x"));
  CHECK(LooksSecret("NCCL_IB_PASSWORD", "/a/path"));
  const std::string path = spack + ":" + nix;
  const std::string entry = "PATH=" + path, py = "PYTHONPATH=" + nix, ld = "LD_LIBRARY_PATH=" + spack;
  const char* envp[] = {entry.c_str(), py.c_str(), ld.c_str(), "CUDA_TOKEN_FILE=/x", "NV_KEYISH=AKIAIOSFODNN7EXAMPLE",
                        nullptr};
  const auto rec = RecordedEnvironment(envp);
  CHECK(rec.size() == 3);
  CHECK(rec.count("PATH"));
  CHECK(rec.count("PYTHONPATH"));
  CHECK(rec.count("LD_LIBRARY_PATH"));
}

TEST_CASE("run info: ELF notes and .comment readers survive malformed input; launcher ranks; os-release") {
  // A build-id note, then the same note cut short at every length.
  const unsigned char note[] = {4, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 0xde, 0xad, 0xbe, 0xef};
  CHECK(BuildIdFromNotes(note, sizeof note) == "deadbeef");
  for (size_t n = 0; n < sizeof note; ++n) CHECK(BuildIdFromNotes(note, n).empty());
  unsigned char huge[sizeof note];
  std::memcpy(huge, note, sizeof note);
  huge[4] = 0xff;  // descriptor longer than the area
  huge[7] = 0x7f;
  CHECK(BuildIdFromNotes(huge, sizeof huge).empty());
  // .comment of files that are not ELF, truncated ELF, or missing.
  testutil::TempDir dir;
  CHECK(ElfComment(dir / "missing").empty());
  testutil::WriteFileOrDie(dir / "text", "hello");
  CHECK(ElfComment(dir / "text").empty());
  const std::string self = testutil::ReadFileOrDie("/proc/self/exe");
  for (size_t cut : {size_t{16}, size_t{64}, self.size() / 2, self.size() - 1}) {
    testutil::WriteFileOrDie(dir / "cut", self.substr(0, cut));
    (void)ElfComment(dir / "cut");  // any answer, no crash
  }
  std::string damaged = self;  // section header offset pointing past the end
  const uint64_t far = ~uint64_t{0} - 8;
  std::memcpy(damaged.data() + 0x28, &far, 8);
  testutil::WriteFileOrDie(dir / "damaged", damaged);
  CHECK(ElfComment(dir / "damaged").empty());
  CHECK_FALSE(ElfComment("/proc/self/exe").empty());

  std::map<std::string, std::string> vars = {{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "16"},
                                             {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"SLURM_PROCID", "9"}};
  auto lookup = [&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  auto r = LauncherRankFrom(lookup);
  REQUIRE(r.has_value());
  CHECK(r->source == "OMPI_COMM_WORLD_RANK");
  CHECK(r->rank == 5);
  CHECK(r->size == 16);
  CHECK(r->local_rank == 1);
  vars = {{"RANK", "2"}, {"WORLD_SIZE", "4"}};
  r = LauncherRankFrom(lookup);
  REQUIRE(r.has_value());
  CHECK(r->source == "RANK");
  CHECK(r->local_rank == -1);
  vars = {{"PMI_RANK", "x"}};
  CHECK_FALSE(LauncherRankFrom(lookup).has_value());

  CHECK(OsPrettyName("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n") ==
        "Debian GNU/Linux 12 (bookworm)");
  CHECK(OsPrettyName("NAME=Alpine\nVERSION_ID=3.19\n") == "Alpine 3.19");
}

TEST_CASE("run info: machine facts round-trip; another uid or host, a tab, a missing field or a bad uid is refused") {
  const MachineFacts facts{"ana", "Model X (16 CPUs)", "Debian GNU/Linux 12 (bookworm)"};
  const std::string text = EncodeMachineFacts(1000, "node7", facts);
  CHECK(text == "1000\tnode7\tana\tModel X (16 CPUs)\tDebian GNU/Linux 12 (bookworm)");
  auto back = DecodeMachineFacts(text, 1000, "node7");
  REQUIRE(back.has_value());
  CHECK(back->user == "ana");
  CHECK(back->cpu_model == "Model X (16 CPUs)");
  CHECK(back->os == "Debian GNU/Linux 12 (bookworm)");
  CHECK_FALSE(DecodeMachineFacts(text, 0, "node7").has_value());      // su, sudo, a setuid image
  CHECK_FALSE(DecodeMachineFacts(text, 1000, "node8").has_value());   // passed to another machine
  CHECK(EncodeMachineFacts(1000, "node7", {"ana", "Model\tX", "os"}).empty());
  CHECK(EncodeMachineFacts(1000, "node7", {"ana", "Model X", "os\n"}).empty());
  for (const char* bad : {"", "1000", "1000\tnode7\tana\tModel X", "x1000\tnode7\tana\tm\to",
                          "1000\tnode7\t\tm\to", "1000\tnode7\tana\tm\to\textra", "-1\tnode7\tana\tm\to"}) {
    INFO(bad);
    CHECK_FALSE(DecodeMachineFacts(bad, 1000, "node7").has_value());
  }
  // Empty CPU model and OS are facts too (a container without them).
  CHECK(DecodeMachineFacts("1000\tnode7\tana\t\t", 1000, "node7").has_value());
}

TEST_CASE("run info: git commit read from .git files (branch ref, packed ref, detached)") {
  testutil::TempDir dir;
  const std::string sha1(40, 'a'), sha2(40, 'b'), sha3 = "0123456789abcdef0123456789abcdef01234567";
  std::filesystem::create_directories(dir / "repo/.git/refs/heads");
  std::filesystem::create_directories(dir / "repo/src/deep");
  testutil::WriteFileOrDie(dir / "repo/.git/HEAD", "ref: refs/heads/main\n");
  testutil::WriteFileOrDie(dir / "repo/.git/refs/heads/main", sha1 + "\n");
  CHECK(GitCommit(dir / "repo/src/deep") == sha1);
  std::filesystem::remove(dir / "repo/.git/refs/heads/main");
  testutil::WriteFileOrDie(dir / "repo/.git/packed-refs",
                           "# pack-refs with: peeled\n" + sha2 + " refs/heads/other\n" + sha3 + " refs/heads/main\n");
  CHECK(GitCommit(dir / "repo") == sha3);
  testutil::WriteFileOrDie(dir / "repo/.git/HEAD", sha2 + "\n");
  CHECK(GitCommit(dir / "repo") == sha2);
  CHECK(GitCommit(dir.path()).empty());
}

TEST_CASE("symbolizer: this binary's own function, with its module and source line") {
  auto sym = Symbolizer::Create();
  const auto addr = reinterpret_cast<uintptr_t>(&collector_test_marker_function);
  const SymbolFrames& frames = sym->Lookup(addr, false);
  REQUIRE_FALSE(frames.empty());
  CHECK(frames.back().function == "collector_test_marker_function");
  CHECK(frames.back().module.find("cctdb-tests") != std::string::npos);
  CHECK(frames.back().file.find("collector_test.cc") != std::string::npos);
  CHECK(frames.back().line > 0);
  CHECK(Symbolizer::IsThreadStart("_start"));
  CHECK_FALSE(Symbolizer::IsThreadStart("main"));
  CHECK(Demangle("_ZN3foo3barEi") == "foo::bar(int)");
  CHECK(Demangle("plain_c") == "plain_c");
}

TEST_CASE("unwinder: this thread's stack includes its callers") {
  std::string error;
  StartUnwinder();
  REQUIRE(EnsureLibunwind(&error));
  uintptr_t pcs[128];
  const int n = UnwindHere(pcs, 128);
  REQUIRE(n > 3);
  auto sym = Symbolizer::Create();
  bool found_main = false;
  for (int i = 1; i < n; ++i)
    for (const auto& f : sym->Lookup(pcs[i], true))
      if (f.function == "main") found_main = true;
  CHECK(found_main);
}

namespace {
// 30 nested calls, then `times` unwinds from the deepest one.
extern "C" __attribute__((noinline)) int collector_test_nest(int depth, int times,
                                                              std::vector<std::vector<uintptr_t>>* out) {
  // Through a volatile pointer: the compiler may not turn the recursion
  // into a loop.
  static int (*volatile next)(int, int, std::vector<std::vector<uintptr_t>>*) = collector_test_nest;
  if (depth > 0) return next(depth - 1, times, out) + 1;
  for (int i = 0; i < times; ++i) {
    uintptr_t pcs[256];
    const int n = UnwindHere(pcs, 256);
    out->emplace_back(pcs, pcs + n);
  }
  return 0;
}
}  // namespace

TEST_CASE("unwinder: a new thread's first unwinds step, the later ones use its trace table; both see the same callers") {
  std::string error;
  StartUnwinder();
  REQUIRE(EnsureLibunwind(&error));
  std::vector<std::vector<uintptr_t>> stacks;
  // A fresh thread: it has no trace table until it has been unwound
  // kFastAfter times.
  std::thread([&] { collector_test_nest(30, 2 * static_cast<int>(kFastAfter), &stacks); }).join();
  REQUIRE(stacks.size() == 2 * kFastAfter);
  REQUIRE(stacks.front().size() > 31);
  // Stepping and the table see the same return addresses, from the caller
  // of UnwindHere to the thread's start, the 30 nested calls included.
  const std::vector<uintptr_t>& callers = stacks.front();
  for (size_t i = 1; i < stacks.size(); ++i) {
    INFO("unwind " << i);
    CHECK(stacks[i] == callers);
  }
  auto sym = Symbolizer::Create();
  int nested = 0;
  for (uintptr_t pc : callers)
    for (const auto& f : sym->Lookup(pc, true))
      if (f.function == "collector_test_nest") ++nested;
  CHECK(nested == 31);
}

namespace {
ModuleImage Image(const std::string& path, uintptr_t lo, uintptr_t hi, const std::string& build_id = "id") {
  ModuleImage m;
  m.path = path;
  m.build_id = build_id;
  m.bias = lo;
  m.lo = lo;
  m.hi = hi;
  return m;
}
}  // namespace

TEST_CASE("unloaded modules: an address of epoch e belongs to the first module unloaded there at or after e") {
  UnloadedModules u(100);
  const ModuleImage a = Image("a.so", 0x1000, 0x2000), b = Image("b.so", 0x1000, 0x2000);
  const ModuleImage c = Image("c.so", 0x5000, 0x6000);
  u.Add(a, 0);  // a unloaded in epoch 0
  u.Add(c, 1);  // c in epoch 1
  u.Add(b, 2);  // b, loaded where a was, in epoch 2
  auto path_of = [&](uint32_t e, uintptr_t addr) {
    const auto m = u.Find(e, addr, nullptr);
    return m.kind == UnloadedModules::Match::kUnloaded ? m.module->image.path : std::string("live");
  };
  CHECK(path_of(0, 0x1800) == "a.so");
  CHECK(path_of(1, 0x1800) == "b.so");
  CHECK(path_of(2, 0x1800) == "b.so");
  CHECK(path_of(3, 0x1800) == "live");   // loaded after b went: still loaded
  CHECK(path_of(0, 0x5800) == "c.so");
  CHECK(path_of(2, 0x5800) == "live");
  CHECK(path_of(0, 0x9000) == "live");   // never unloaded: the executable, libc
  CHECK(path_of(0, 0x2000) == "live");   // the end is exclusive
}

TEST_CASE("unloaded modules: a plugin unloaded in a loop keeps one record; exhausted epochs are never wrong") {
  UnloadedModules u(5);
  const ModuleImage p = Image("p.so", 0x1000, 0x2000), q = Image("q.so", 0x1000, 0x2000);
  for (uint32_t e = 0; e < 5; ++e) u.Add(p, e);
  CHECK(u.size() == 1);
  CHECK(u.Find(0, 0x1100, nullptr).module->image.path == "p.so");
  CHECK(u.Find(4, 0x1100, nullptr).module->image.path == "p.so");
  // Epochs exhausted (the final one is 5): the same image again and again is
  // still unambiguous, with or without it loaded now...
  for (int i = 0; i < 1000; ++i) u.Add(p, 5);
  CHECK(u.size() == 2);  // epochs 0-4, and the final one
  CHECK(u.Find(5, 0x1100, &p).kind == UnloadedModules::Match::kUnloaded);
  CHECK(u.Find(5, 0x1100, nullptr).module->image.path == "p.so");
  // ...two images sharing the final epoch at one address are reported as
  // ambiguous, not guessed; older epochs keep their answer.
  u.Add(q, 5);
  u.Add(p, 5);
  CHECK(u.size() == 3);
  const auto m = u.Find(5, 0x1100, nullptr);
  CHECK(m.kind == UnloadedModules::Match::kAmbiguous);
  CHECK(m.candidates == 2);
  CHECK(u.Find(3, 0x1100, nullptr).kind == UnloadedModules::Match::kUnloaded);
  // A different image loaded there now makes it ambiguous too.
  UnloadedModules v(5);
  v.Add(p, 5);
  CHECK(v.Find(5, 0x1100, &q).kind == UnloadedModules::Match::kAmbiguous);
  CHECK(v.Find(5, 0x1100, &p).kind == UnloadedModules::Match::kUnloaded);
}

TEST_CASE("loaded modules: this process's modules with build ids; Disappeared compares identities") {
  const auto mods = LoadedModules();
  REQUIRE(mods.size() >= 2);
  CHECK(mods[0].path.find("tests/cctdb-") != std::string::npos);  // cctdb-tests, or the sanitizer build's cctdb-san-tests
  const auto self = reinterpret_cast<uintptr_t>(&collector_test_marker_function);
  CHECK(mods[0].Covers(self));
  // The build id matches what readelf reads from the file.
  auto r = testutil::Run({"/usr/bin/readelf", "-n", mods[0].path});
  REQUIRE(r.exit_code == 0);
  std::string hex;
  for (unsigned char c : mods[0].build_id) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", c);
    hex += buf;
  }
  CHECK_FALSE(hex.empty());
  CHECK(r.out.find("Build ID: " + hex) != std::string::npos);
  auto fewer = mods;
  fewer.erase(fewer.begin() + 1);
  const auto gone = Disappeared(mods, fewer);
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].path == mods[1].path);
  CHECK(Disappeared(mods, mods).empty());
}

TEST_CASE("symbolizer: the sorted symbol table names what nm names, for every function of a binary file") {
  // Expected names from a second tool: nm -C (addresses and sizes from the
  // file's .symtab). The file is symbolized offline, as an unloaded module.
  const std::string path = testutil::BuildDir() + "/tools/cct-record";
  auto r = testutil::Run({"/usr/bin/nm", "-C", "-S", "--defined-only", path});
  REQUIRE(r.exit_code == 0);
  struct Sym {
    uint64_t addr, size;
    std::string name;
  };
  std::vector<Sym> syms;
  std::map<uint64_t, int> at;  // how many symbols start at an address (aliases)
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string a, sz, type;
    if (!(ls >> a >> sz >> type) || (type != "T" && type != "t" && type != "W")) continue;
    std::string name;
    std::getline(ls, name);
    if (!name.empty() && name[0] == ' ') name.erase(0, 1);
    const uint64_t addr = std::stoull(a, nullptr, 16), size = std::stoull(sz, nullptr, 16);
    ++at[addr];
    if (size >= 2) syms.push_back({addr, size, name});
  }
  REQUIRE(syms.size() > 500);
  ModuleImage image;
  image.path = path;
  auto sym = Symbolizer::Create();
  size_t checked = 0;
  const size_t stride = syms.size() / 120 + 1;
  for (size_t i = 0; i < syms.size(); i += stride) {
    const Sym& s = syms[i];
    if (at[s.addr] != 1) continue;  // aliases: any of them is right
    for (uint64_t addr : {s.addr, s.addr + s.size / 2, s.addr + s.size - 1}) {
      const SymbolFrames& f = sym->LookupImage(image, addr, false);
      REQUIRE_FALSE(f.empty());
      INFO(std::hex << addr << " nm: " << s.name);
      CHECK(f.front().function == s.name);
    }
    ++checked;
  }
  CHECK(checked > 60);
}

TEST_CASE("symbolizer: addresses outside every module do not re-read the mappings each time, nor start libdw") {
  auto sym = Symbolizer::Create();
  // Page 0 is never mapped: no module, no file mapping. Such an address is
  // named by its value without libdw (whose start costs a short process
  // more than the rest of its symbolization).
  sym->Lookup(0x80, false);
  CHECK(sym->reports() == 0);
  CHECK(sym->mapping_reads() == 1);
  for (uintptr_t a = 0x100; a < 0x100 + 2000 * 16; a += 16) {
    const SymbolFrames& f = sym->Lookup(a, false);
    REQUIRE(f.size() == 1);
    CHECK(f[0].module.empty());
    CHECK(f[0].function == "0x" + (std::ostringstream() << std::hex << a).str());
  }
  CHECK(sym->mapping_reads() == 1);
  CHECK(sym->reports() == 0);
  sym->Sync();  // nothing loaded or unloaded: nothing to do
  CHECK(sym->reports() == 0);
  CHECK(sym->mapping_reads() == 1);
}

TEST_CASE("symbolizer: code mapped from a file other than by the loader is still named by libdw") {
  // This test binary mapped executable by hand, as a custom loader would:
  // the loader does not list it, /proc/self/maps does.
  const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  close(fd);
  REQUIRE(p != MAP_FAILED);
  auto sym = Symbolizer::Create();
  sym->Lookup(reinterpret_cast<uintptr_t>(p) + 16, false);
  CHECK(sym->reports() >= 1);  // libdw was asked (it reads the mappings itself)
  munmap(p, 4096);
}

TEST_CASE("PLT stubs: each entry is named by the GOT slot its jump reads; the header and lazy entries by none") {
  auto bytes = [](std::initializer_list<int> b) {
    std::string s;
    for (int c : b) s.push_back(static_cast<char>(c));
    return s;
  };
  std::vector<GotSlot> slots = {{0x4008, "printf", 0}, {0x4000, "clock_gettime", 0}, {0x3ff0, "", 0x9f550}};
  SortGotSlots(&slots);
  REQUIRE(slots[0].address == 0x3ff0);
  // A lazy .plt as GNU ld writes it (the bytes objdump shows for
  // cct-test-stripped): the header pushes GOT+8 and jumps through GOT+16;
  // entry k jumps through its slot, then pushes k and jumps to the header.
  const std::string lazy =
      bytes({0xff, 0x35, 0xca, 0x2f, 0, 0, 0xff, 0x25, 0xcc, 0x2f, 0, 0, 0x0f, 0x1f, 0x40, 0}) +
      bytes({0xff, 0x25, 0xca, 0x2f, 0, 0, 0x68, 0, 0, 0, 0, 0xe9, 0xe0, 0xff, 0xff, 0xff}) +  // *0x4000
      bytes({0xff, 0x25, 0xc2, 0x2f, 0, 0, 0x68, 1, 0, 0, 0, 0xe9, 0xd0, 0xff, 0xff, 0xff}) +  // *0x4008
      bytes({0xff, 0x25, 0xba, 0x2f, 0, 0, 0x68, 2, 0, 0, 0, 0xe9, 0xc0, 0xff, 0xff, 0xff});   // *0x4010: no slot
  auto stubs = DecodePltStubs(0x1020, lazy, 16, slots);
  REQUIRE(stubs.size() == 4);
  CHECK(stubs[0].start == 0x1020);
  CHECK(stubs[0].slot == nullptr);  // the header: GOT+16 is the dynamic linker's, no relocation fills it
  CHECK(stubs[1].start == 0x1030);
  CHECK(stubs[1].size == 16);
  REQUIRE(stubs[1].slot);
  CHECK(stubs[1].slot->symbol == "clock_gettime");
  REQUIRE(stubs[2].slot);
  CHECK(stubs[2].slot->symbol == "printf");
  CHECK(stubs[3].slot == nullptr);
  // Entry size 0 in the section header reads as the psABI's 16; a partial
  // entry at the end is not an entry.
  CHECK(DecodePltStubs(0x1020, lazy, 0, slots).size() == 4);
  CHECK(DecodePltStubs(0x1020, lazy.substr(0, 40), 16, slots).size() == 2);
  CHECK(DecodePltStubs(0x1020, "", 16, slots).empty());

  // IBT: .plt.sec's entries are endbr64; bnd jmp *disp(%rip); nop. The jump
  // ends 11 bytes into the entry: 0x2000 + 11 + 0x1fe5 = 0x3ff0, the ifunc's
  // slot.
  const std::string sec = bytes({0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xe5, 0x1f, 0, 0, 0x0f, 0x1f, 0x44, 0, 0});
  stubs = DecodePltStubs(0x2000, sec, 16, slots);
  REQUIRE(stubs.size() == 1);
  REQUIRE(stubs[0].slot);
  CHECK(stubs[0].slot->symbol.empty());
  CHECK(stubs[0].slot->resolver == 0x9f550);
  // IBT's lazy .plt entries: endbr64; push k; bnd jmp header: no slot.
  const std::string ibt_lazy = bytes({0xf3, 0x0f, 0x1e, 0xfa, 0x68, 0, 0, 0, 0, 0xf2, 0xe9, 0xe1, 0xff, 0xff, 0xff, 0x90});
  stubs = DecodePltStubs(0x1020, ibt_lazy, 16, slots);
  REQUIRE(stubs.size() == 1);
  CHECK(stubs[0].slot == nullptr);
  // .plt.got without IBT: 8-byte entries, jmp *disp(%rip); xchg %ax,%ax.
  // 0x3000 + 6 + 0x1002 = 0x4008; 0x3008 + 6 + 0xff2 = 0x4000.
  const std::string got = bytes({0xff, 0x25, 0x02, 0x10, 0, 0, 0x66, 0x90, 0xff, 0x25, 0xf2, 0x0f, 0, 0, 0x66, 0x90});
  stubs = DecodePltStubs(0x3000, got, 8, slots);
  REQUIRE(stubs.size() == 2);
  CHECK(stubs[1].start == 0x3008);
  REQUIRE(stubs[0].slot);
  REQUIRE(stubs[1].slot);
  CHECK(stubs[0].slot->symbol == "printf");
  CHECK(stubs[1].slot->symbol == "clock_gettime");
  // A negative displacement reaches a slot below the table.
  // 0x5000 + 6 - 0x1006 = 0x4000.
  const std::string back = bytes({0xff, 0x25, 0xfa, 0xef, 0xff, 0xff, 0x66, 0x90});
  stubs = DecodePltStubs(0x5000, back, 8, slots);
  REQUIRE(stubs.size() == 1);
  REQUIRE(stubs[0].slot);
  CHECK(stubs[0].slot->symbol == "clock_gettime");
}

TEST_CASE("symbolizer: PLT stubs are named FUNCTION@plt, as objdump names them (lazy tables, GOT-bound stubs, ifuncs)") {
  // Expected names from a second tool: objdump -d labels each stub
  // "<function@plt>" (binutils synthesizes them from the relocations as
  // we do, by other code), and an ifunc's as "<*ABS*+0xRESOLVER@plt>",
  // where nm -D names the resolver's address. Each file is symbolized
  // offline, as an unloaded module.
  Dl_info libc{};
  // A libc function no sanitizer intercepts (ASan's printf is its own).
  REQUIRE(dladdr(reinterpret_cast<void*>(&gnu_get_libc_version), &libc));
  REQUIRE(std::string_view(libc.dli_fname).find("libc.so") != std::string_view::npos);
  // This test binary (C++: demangled names), libc (ifuncs), and the
  // stripped test program where this build makes it (not the sanitizers').
  std::vector<std::string> files = {std::filesystem::read_symlink("/proc/self/exe"), libc.dli_fname};
  const std::string stripped = testutil::BuildDir() + "/tests/collector/cct-test-stripped";
  if (std::filesystem::exists(stripped)) files.push_back(stripped);
  auto sym = Symbolizer::Create();
  for (const std::string& path : files) {
    INFO(path);
    auto d = testutil::Run({"/usr/bin/objdump", "-d", "-C", "--no-show-raw-insn", "-j", ".plt", "-j", ".plt.got",
                            "-j", ".plt.sec", path});
    REQUIRE(d.exit_code == 0);
    auto nm = testutil::Run({"/usr/bin/nm", "-D", "-C", "--defined-only", path});
    std::multimap<uint64_t, std::string> dynamic;  // address -> names (aliases)
    {
      std::istringstream in(nm.out);
      std::string l;
      while (std::getline(in, l)) {  // "ADDRESS TYPE NAME", NAME demangled (it may hold spaces)
        if (l.size() < 20 || l[16] != ' ' || l[18] != ' ') continue;
        const std::string name = l.substr(19);
        dynamic.emplace(std::stoull(l.substr(0, 16), nullptr, 16), name.substr(0, name.find('@')));
      }
    }
    // Labels in address order: "0000000000001030 <clock_gettime@plt>:".
    std::vector<std::pair<uint64_t, std::string>> labels;
    std::istringstream in(d.out);
    std::string line;
    while (std::getline(in, line)) {
      const size_t lt = line.find(" <"), end = line.rfind(">:");
      if (lt == std::string::npos || end == std::string::npos || end < lt || line[0] == ' ') continue;
      labels.emplace_back(std::stoull(line.substr(0, lt), nullptr, 16), line.substr(lt + 2, end - lt - 2));
    }
    REQUIRE(labels.size() >= 3);
    ModuleImage image;
    image.path = path;
    size_t named = 0, abs = 0;
    for (size_t i = 0; i < labels.size(); ++i) {
      const uint64_t addr = labels[i].first;  // not a structured binding: INFO captures it (clang)
      const std::string& label = labels[i].second;
      INFO(std::hex << addr << " objdump: " << label);
      const uint64_t last = i + 1 < labels.size() && labels[i + 1].first - addr <= 16 ? labels[i + 1].first - 1 : addr + 7;
      std::set<std::string> expected;
      if (label.find("@plt-0x") != std::string::npos || label.find("@plt+0x") != std::string::npos) {
        expected.insert("[plt]");  // objdump names the header by its distance from the first stub
      } else if (label.starts_with("*ABS*+0x")) {
        ++abs;
        const uint64_t resolver = std::stoull(label.substr(8), nullptr, 16);
        for (auto [it, stop] = dynamic.equal_range(resolver); it != stop; ++it) expected.insert(it->second + "@plt");
      } else {
        REQUIRE(label.ends_with("@plt"));
        expected.insert(label);
        ++named;
      }
      REQUIRE_FALSE(expected.empty());
      for (uint64_t a : {addr, last}) {
        const SymbolFrames& f = sym->LookupImage(image, a, false);
        REQUIRE(f.size() == 1);
        CHECK(expected.count(f.front().function) == 1);
      }
    }
    CHECK(named >= 3);
    if (path == libc.dli_fname) CHECK(abs >= 10);
  }
}

TEST_CASE("symbol index: entries added after a Finish are merged in; lookups as if all had been added at once") {
  // A pseudo-random table of sized symbols, labels and aliases, added in
  // three batches with a Finish after each (the symbol table, then the PLT
  // stubs, then the FDE ranges), against the same entries in one batch.
  static const char* names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  std::vector<SymbolIndex::Entry> all;
  uint64_t x = 88172645463325252ull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (uint32_t i = 0; i < 3000; ++i) {
    const uintptr_t start = 0x1000 + (next() % 4000) * 16;
    all.push_back({start, (next() % 4) * 24, static_cast<int>(next() % 4), i, names[i % 8]});
  }
  SymbolIndex once, batches;
  for (const auto& e : all) once.Add(e);
  once.Finish();
  for (size_t i = 0; i < all.size(); ++i) {
    batches.Add(all[i]);
    if (i == 1999 || i == 2499) batches.Finish();
  }
  batches.Finish();
  REQUIRE(batches.size() == once.size());
  for (size_t i = 0; i < once.size(); ++i) {
    CHECK(batches.entry(i).start == once.entry(i).start);
    CHECK(batches.max_end(i) == once.max_end(i));
  }
  for (uintptr_t a = 0x800; a < 0x1000 + 4001 * 16; a += 5) {
    const SymbolIndex::Entry* p = once.Find(a);
    const SymbolIndex::Entry* q = batches.Find(a);
    REQUIRE((p == nullptr) == (q == nullptr));
    if (p) CHECK(p->order == q->order);  // the same entry (orders are unique)
  }
}

TEST_CASE("symbol index: closest containing symbol, then binding; sizeless labels only when nothing covers them") {
  static const char* names[] = {"big", "inner", "weak_alias", "global_name", "label", "after"};
  SymbolIndex idx;
  idx.Add({0x1000, 0x1000, 3, 0, names[0]});  // big: [0x1000, 0x2000)
  idx.Add({0x1400, 0x100, 1, 1, names[1]});   // inner, nested in big
  idx.Add({0x3000, 0x100, 2, 2, names[2]});   // two names at one address:
  idx.Add({0x3000, 0x100, 3, 3, names[3]});   // the global one wins
  idx.Add({0x4000, 0, 3, 4, names[4]});       // an assembly label
  idx.Add({0x5000, 0x10, 3, 5, names[5]});
  idx.Finish();
  auto name = [&](uintptr_t a) {
    const auto* e = idx.Find(a);
    return e ? std::string(e->name) : std::string("-");
  };
  CHECK(name(0xfff) == "-");
  CHECK(name(0x1000) == "big");
  CHECK(name(0x1450) == "inner");
  CHECK(name(0x1500) == "big");
  CHECK(name(0x1fff) == "big");
  CHECK(name(0x2000) == "-");
  CHECK(name(0x3050) == "global_name");
  CHECK(name(0x3100) == "-");
  CHECK(name(0x4abc) == "label");
  CHECK(name(0x5008) == "after");
  CHECK(name(0x5010) == "-");  // past `after`, which ends after the label
}

// --- the symbol cache (cpu/symbol_cache.h) -----------------------------------

TEST_CASE("symbol cache: libc named from the shared table as libdw names it; a second process never starts libdw") {
  testutil::TempDir dir;
  const std::string cache = dir / "symbols";
  // libc's text: from a few of its functions' addresses (dlsym), which also
  // give names to check against (ld.so's dynamic symbols, another source).
  std::vector<std::pair<std::string, uintptr_t>> exported;
  std::map<uintptr_t, std::string> dynamic_name;  // what dladdr calls it (one of the aliases)
  for (const char* name : {"qsort", "getenv", "strtol", "nanosleep", "getpid"}) {
    void* p = dlsym(RTLD_DEFAULT, name);
    REQUIRE(p != nullptr);
    Dl_info info{};
    REQUIRE(dladdr(p, &info));
    REQUIRE(std::string(info.dli_fname).find("libc.so") != std::string::npos);
    exported.emplace_back(name, reinterpret_cast<uintptr_t>(p));
    dynamic_name[reinterpret_cast<uintptr_t>(p)] = info.dli_sname ? info.dli_sname : "";
  }
  // An alias is as right as the name asked for (strtoll is strtol, __getpid
  // getpid).
  auto named = [&](const std::string& got, const std::string& name, uintptr_t addr) {
    return got == name || got == dynamic_name[addr] || got == "__" + name || got.find(name) != std::string::npos;
  };
  ModuleImage libc;
  for (const ModuleImage& m : LoadedModules())
    if (m.Covers(exported[0].second)) libc = m;
  REQUIRE(!libc.build_id.empty());
  // Code addresses only (stacks hold nothing else): libc's executable segment.
  struct Text {
    uintptr_t within, lo = 0, hi = 0;
  } text{exported[0].second};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* t = static_cast<Text*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && t->within >= lo && t->within < lo + ph.p_memsz)
            t->lo = lo, t->hi = lo + ph.p_memsz;
        }
        return 0;
      },
      &text);
  REQUIRE(text.hi > text.lo);
  std::vector<uintptr_t> addresses;
  for (uintptr_t a = text.lo; a < text.hi; a += 997) addresses.push_back(a);

  // libdw's answers first, its session closed before the cache's starts:
  // libelf maps the files it reads, and a second session in one process that
  // reads /proc/self/maps can take such a mapping, lying right before the
  // loaded library, for part of it (a hazard of two sessions, not of the
  // cache).
  std::vector<SymbolFrame> expected;
  {
    auto plain = Symbolizer::Create(0, false, "");
    for (uintptr_t a : addresses) {
      const SymbolFrames& p = plain->Lookup(a, false);
      REQUIRE(p.size() == 1);
      expected.push_back(p[0]);
    }
  }
  auto cached = Symbolizer::Create(0, false, cache);
  for (const auto& entry : exported) {
    const auto& name = entry.first;
    const auto& addr = entry.second;
    const SymbolFrames& f = cached->Lookup(addr + 1, false);
    REQUIRE(f.size() == 1);
    INFO(name << " named " << f[0].function);
    CHECK(named(f[0].function, name, addr));
    CHECK(f[0].module.find("libc.so") != std::string::npos);
  }
  size_t compared = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const SymbolFrames& c = cached->Lookup(addresses[i], false);
    REQUIRE(c.size() == 1);
    INFO(std::hex << addresses[i]);
    CHECK(c[0].function == expected[i].function);
    CHECK(c[0].module == expected[i].module);
    ++compared;
  }
  CHECK(compared > 100);
  CHECK(std::filesystem::exists(SymbolCachePath(cache, libc.build_id)));

  // Another symbolizer (another process of the same build, in effect): the
  // table comes from the file, libdw's session is never started.
  cached.reset();
  auto again = Symbolizer::Create(0, false, cache);
  for (const auto& [name, addr] : exported) CHECK(named(again->Lookup(addr + 1, false).at(0).function, name, addr));
  CHECK(again->reports() == 0);
  // Our own code is not the distribution's: its DWARF is read, by libdw.
  const uintptr_t own = reinterpret_cast<uintptr_t>(&LoadedModules);
  CHECK(again->Lookup(own, false).at(0).function.find("LoadedModules") != std::string::npos);
  CHECK(again->reports() == 1);
}

TEST_CASE("symbol cache: a table survives the round trip; damaged files are refused or name nothing, never crash") {
  SymbolIndex idx;
  const char* names[] = {"alpha", "beta", "_Z5gammav", "label", "delta@@GLIBC_2.2.5"};
  idx.Add({0x1000, 0x100, 3, 0, names[0]});
  idx.Add({0x1100, 0x80, 3, 1, names[1]});
  idx.Add({0x1100, 0x80, 1, 0, names[1]});      // a local alias: the global is preferred
  idx.Add({0x1200, 0x200, 3, 2, names[2]});
  idx.Add({0x1500, 0, 3, 3, names[3]});         // a sizeless label
  idx.Add({0x2000, 0x10, 2, 4, names[4]});
  idx.Add({0x3000, 0x40, 0, UINT32_MAX, ""});  // a function only its FDE describes
  idx.Finish();
  const std::string build_id = "\x01\x02\x03\x04\x05\x06\x07\x08";
  const std::string bytes = EncodeSymbolCache(build_id, idx, SymbolDisplayName);
  auto file = SymbolCacheFile::FromBytes(bytes, build_id);
  REQUIRE(file.ok());
  CHECK((*file)->size() == 7);
  // The nameless function: no name, but where it starts.
  uintptr_t start = 0;
  CHECK((*file)->Find(0x3021, &start).empty());
  CHECK(start == 0x3000);
  start = 0;
  (void)(*file)->Find(0x3040, &start);  // past its end: nothing
  CHECK(start == 0);
  // Expected from the table's construction.
  const std::vector<std::pair<uintptr_t, std::string>> expect = {
      {0xfff, ""},       {0x1000, "alpha"}, {0x10ff, "alpha"}, {0x1100, "beta"}, {0x117f, "beta"},
      {0x1180, ""},      {0x1300, "gamma()"}, {0x1500, "label"}, {0x1800, "label"}, {0x2008, "delta"},
      {0x2010, ""}};  // past delta, which ends between the label and the address
  for (const auto& entry : expect) {
    const uintptr_t a = entry.first;
    const std::string& name = entry.second;
    INFO(std::hex << a);
    CHECK(std::string((*file)->Find(a)) == name);
    const SymbolIndex::Entry* e = idx.Find(a);
    CHECK((e ? SymbolDisplayName(e->name) : std::string()) == name);
  }
  CHECK_FALSE(SymbolCacheFile::FromBytes(bytes, "\x01\x02").ok());  // another build id
  for (size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(SymbolCacheFile::FromBytes(bytes.substr(0, n), build_id).ok());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0xa5);
    auto f = SymbolCacheFile::FromBytes(damaged, build_id);
    if (!f.ok()) continue;
    for (uintptr_t a = 0; a < 0x2100; a += 0x40) (void)(*f)->Find(a);  // any answer, no crash
  }
  testutil::TempDir dir;
  CHECK(SymbolCacheFile::Open(dir / "none.sym", build_id).status().code() == cct::ErrorCode::kNotFound);
  REQUIRE(WriteSymbolCache(dir / "x/t.sym", bytes).ok());
  CHECK(SymbolCacheFile::Open(dir / "x/t.sym", build_id).ok());
}
