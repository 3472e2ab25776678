// ThreadSanitizer checks of the two places where threads share data without
// one lock around everything (scripts/test-sanitizers.sh builds this file
// with -fsanitize=thread together with the sources it uses):
//   - the collector's SampleTrie: one writer (a thread's signal handler) and
//     lock-free readers (the checkpoint thread), across chunk and index
//     growth;
//   - store::Database: one handle written by several threads at once (each
//     call its own LMDB transaction) while others list and read runs;
//   - the readers' work beside work (cct::RunBeside): store::DecodeTree of a
//     tree from 2^20 nodes (its values decoded beside its nodes) and
//     diff::Aligner::AddAll (a tree prepared beside another's probes).
// Exits 0 when every check holds; TSan makes a reported race exit 66.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cct/beside.h"
#include "collector/cpu/sample_trie.h"
#include "diff/align.h"
#include "store/database.h"
#include "store/tree_codec.h"

namespace {

int failures = 0;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "tsan_test: FAILED: %s\n", what);
  ++failures;
}

void SampleTrieOneWriterManyReaders() {
  collector::SampleTrie trie;
  std::atomic<bool> done{false};
  std::atomic<bool> bad{false};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r)
    readers.emplace_back([&] {
      while (!done.load()) {
        const size_t n = trie.size();
        uint64_t samples = 0;
        for (collector::SampleTrie::NodeIndex i = 1; i < n; ++i) {
          if (trie.parent(i) >= i || trie.key(i) == 0) bad = true;
          samples += trie.samples(i);
          (void)trie.time_ns(i);
        }
        (void)samples;
      }
    });
  const int kPaths = 40000;  // 3 nodes each: past the first chunk and index
  bool added = true;
  for (int p = 0; p < kPaths; ++p) {
    const uint64_t keys[] = {uint64_t(1000 + p % 7), uint64_t(100000 + p), uint64_t(200000 + p)};
    added &= trie.AddSample(keys, 3, 1);
  }
  done = true;
  for (std::thread& t : readers) t.join();
  Check(added, "sample trie: every sample added");
  Check(!bad.load(), "sample trie: readers saw only published nodes");
  Check(trie.size() == 1 + 7 + 2 * kPaths, "sample trie: node count");
}

void DatabaseConcurrentWriters(const std::string& dir) {
  const std::string path = dir + "/tsan.db";
  auto db = store::Database::Open(path, store::Database::Mode::kWrite);
  Check(db.ok(), "database: open");
  if (!db.ok()) return;
  store::Database& d = **db;
  constexpr int kWriters = 4, kRuns = 8;
  std::atomic<int> write_errors{0}, read_errors{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; i < kRuns; ++i) {
        cct::Tree tree;
        const cct::MetricId m =
            *tree.metrics().Register({"samples", cct::Unit::kCount, cct::MetricKind::kAdditive, "", ""});
        cct::NodeId n = tree.InternChild(cct::kRootNode, tree.InternFrame(cct::FrameKind::kThread, "main thread"));
        for (int k = 0; k < 20; ++k) {
          n = tree.InternChild(n, tree.InternFrame(cct::FrameKind::kFunction, "f" + std::to_string(w * 100 + k)));
          tree.AddValue(n, m, k + 1);
        }
        store::RunMeta meta;
        meta.name = "writer" + std::to_string(w);
        meta.state = store::RunState::kComplete;
        meta.source = "tsan";
        if (!d.CreateRun(meta, &tree).ok()) ++write_errors;
        meta.tags["i"] = std::to_string(i);
        if (!d.UpdateMeta(meta).ok()) ++write_errors;
      }
    });
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&] {
      while (!done.load()) {
        auto runs = d.ListRuns();
        if (!runs.ok()) {
          ++read_errors;
          continue;
        }
        for (const store::RunMeta& run : *runs)
          if (!d.ReadTree(run.id).ok()) ++read_errors;
      }
    });
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  done = true;
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  Check(write_errors.load() == 0, "database: every write succeeded");
  Check(read_errors.load() == 0, "database: every read succeeded");
  auto runs = d.ListRuns();
  Check(runs.ok() && runs->size() == kWriters * kRuns, "database: every run stored once");
}

// A tree of n nodes: each under one of the last 64 made, names from a
// pool of 50, a value on every node.
cct::Tree LargeTree(size_t n, unsigned seed) {
  cct::Tree t;
  const cct::MetricId m = t.metrics().RegisterStandard("cputime").value();
  std::vector<cct::FrameId> frames;
  for (int f = 0; f < 50; ++f) frames.push_back(t.InternFrame(cct::FrameKind::kFunction, "f" + std::to_string(f)));
  uint64_t x = seed;
  auto next = [&] { return x = x * 6364136223846793005ull + 1442695040888963407ull, x >> 33; };
  while (t.size() < n) {
    const size_t size = t.size();
    const cct::NodeId parent = static_cast<cct::NodeId>(size - 1 - next() % std::min<size_t>(size, 64));
    t.AddValue(t.InternChild(parent, frames[next() % frames.size()]), m, static_cast<double>(1 + next() % 100));
  }
  return t;
}

void ReadersBesideEachOther() {
  const cct::Tree a = LargeTree(cct::kParallelNodes + 1000, 1), b = LargeTree(cct::kParallelNodes / 2 + 1000, 2);
  auto decoded = store::DecodeTree(store::EncodeTree(a));
  Check(decoded.ok() && decoded->size() == a.size(), "decode beside: every node");
  if (decoded.ok()) {
    double sum_a = 0, sum_d = 0;
    a.column(0).ForEach([&](cct::NodeId, double v) { sum_a += v; });
    decoded->column(0).ForEach([&](cct::NodeId, double v) { sum_d += v; });
    Check(sum_a == sum_d, "decode beside: the values");
  }
  diff::Aligner one_by_one({}), all({});
  const std::vector<cct::NodeId> ma = one_by_one.Add(a), mb = one_by_one.Add(b);
  const auto maps = all.AddAll({&a, &b}, {{}, {}});
  Check(maps.size() == 2 && maps[0] == ma && maps[1] == mb, "AddAll: the maps of Add in turn");
  Check(all.size() == one_by_one.size(), "AddAll: the union of Add in turn");
}

}  // namespace

int main() {
  const std::string dir = std::filesystem::temp_directory_path() / ("cct-tsan-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  SampleTrieOneWriterManyReaders();
  DatabaseConcurrentWriters(dir);
  std::filesystem::remove_all(dir);
  ReadersBesideEachOther();
  if (failures == 0) std::printf("tsan_test: sample trie, concurrent database writers, readers' threads: ok\n");
  return failures == 0 ? 0 : 1;
}
