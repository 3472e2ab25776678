// TraceLog: one thread's time-ordered events for `cct-record --trace`,
// appended by the thread itself and read by the checkpoint thread.
//
// Two logs per thread (ThreadState): the samples, appended by the sampling
// signal handler (time and the sample trie's leaf), and the NVTX ranges,
// appended at each pop (start, end and the range trie's leaf). Trie node
// indices are stable for the life of the process, so a checkpoint maps them
// to the tree it has just built (ProfileBuilder's node maps) and the store
// maps those to stored ids; the log itself never changes.
//
// SIGNAL-HANDLER CODE: Append (and everything it calls) runs inside the
// sampling signal handler. It is async-signal-safe: no malloc, no locks, no
// stdio; storage is mmap'd in chunks that never move, the chunk table on
// the first append.
//
// Bounded: every log of the process draws from one byte budget
// (--trace-limit, TraceBudget); an event that does not fit is counted as
// dropped, never stored, so the process's memory stays within the limit.
//
// Thread-safety: one writer (the owning thread) and any number of readers.
// Readers call size() (acquire) and read records below it. Ownership: the
// log owns its mappings; like the tries, it lives as long as the process
// (threads' logs outlive the threads).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "collector/core/pages.h"

namespace collector {

// The process's remaining trace bytes (--trace-limit) and what did not fit.
// Async-signal-safe.
struct TraceBudget {
  std::atomic<int64_t> left{0};
  std::atomic<uint64_t> dropped{0};
  // A full budget of `limit` bytes (the start; a forked child's run).
  void Reset(uint64_t limit) {
    left.store(static_cast<int64_t>(limit < uint64_t{INT64_MAX} / 2 ? limit : uint64_t{INT64_MAX} / 2));
    dropped.store(0);
  }
  // Takes `bytes` from the budget; false (and one more dropped event) when
  // it is spent.
  bool Take(int64_t bytes) {
    if (left.fetch_sub(bytes, std::memory_order_relaxed) >= bytes) return true;
    left.fetch_add(bytes, std::memory_order_relaxed);  // give back what did not fit
    dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
};

// One sample: when (CLOCK_MONOTONIC ns) and where (the sample trie's leaf).
struct TraceSampleRecord {
  int64_t time_ns;
  uint32_t node;
};
// One NVTX push/pop range instance on its thread: its wall span
// (CLOCK_MONOTONIC ns) and the range trie's leaf (the range's node).
struct TraceRangeRecord {
  int64_t start_ns, end_ns;
  uint32_t node;
};

template <class Record>
class TraceLog {
 public:
  static constexpr size_t kChunkRecords = size_t{1} << 12;
  static constexpr size_t kMaxChunks = size_t{1} << 15;  // 128 Mi records per thread

  TraceLog() = default;
  TraceLog(const TraceLog&) = delete;
  TraceLog& operator=(const TraceLog&) = delete;

  // Appends `r` if the budget allows and memory can be mapped; false
  // otherwise (the budget counts it as dropped). Async-signal-safe.
  bool Append(const Record& r, TraceBudget& budget) {
    if (!budget.Take(sizeof(Record))) return false;
    const size_t n = count_.load(std::memory_order_relaxed);
    Chunk* chunk = n / kChunkRecords < kMaxChunks ? ChunkFor(n) : nullptr;
    if (!chunk) {
      budget.left.fetch_add(sizeof(Record), std::memory_order_relaxed);
      budget.dropped.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    chunk->records[n % kChunkRecords] = r;
    count_.store(n + 1, std::memory_order_release);
    return true;
  }

  // --- reader side
  size_t size() const { return count_.load(std::memory_order_acquire); }
  const Record& operator[](size_t i) const {
    return table_.load(std::memory_order_acquire)[i / kChunkRecords].load(std::memory_order_acquire)
        ->records[i % kChunkRecords];
  }

  // Forgets everything (a forked child starts empty). Not signal-safe; the
  // caller makes sure nothing is being appended.
  void Reset() {
    std::atomic<Chunk*>* table = table_.load(std::memory_order_relaxed);
    if (table) {
      for (size_t c = 0; c < kMaxChunks; ++c)
        if (Chunk* chunk = table[c].load(std::memory_order_relaxed)) UnmapPages(chunk, sizeof(Chunk));
      UnmapPages(table, kMaxChunks * sizeof(std::atomic<Chunk*>));
    }
    table_.store(nullptr, std::memory_order_relaxed);
    count_.store(0, std::memory_order_relaxed);
  }

 private:
  struct Chunk {
    Record records[kChunkRecords];
  };
  Chunk* ChunkFor(size_t n) {
    std::atomic<Chunk*>* table = table_.load(std::memory_order_relaxed);
    if (!table) {
      table = static_cast<std::atomic<Chunk*>*>(MapZeroedPages(kMaxChunks * sizeof(std::atomic<Chunk*>)));
      if (!table) return nullptr;
      table_.store(table, std::memory_order_release);
    }
    Chunk* chunk = table[n / kChunkRecords].load(std::memory_order_relaxed);
    if (!chunk) {
      chunk = static_cast<Chunk*>(MapZeroedPages(sizeof(Chunk)));
      if (!chunk) return nullptr;
      table[n / kChunkRecords].store(chunk, std::memory_order_release);
    }
    return chunk;
  }

  std::atomic<std::atomic<Chunk*>*> table_{nullptr};
  std::atomic<size_t> count_{0};
};

using SampleTraceLog = TraceLog<TraceSampleRecord>;
using RangeTraceLog = TraceLog<TraceRangeRecord>;

}  // namespace collector
