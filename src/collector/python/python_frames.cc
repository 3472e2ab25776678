#include "collector/python/python_frames.h"

#include "collector/python/code_ids.h"
#include "collector/python/python_threads.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "collector/core/runtime_state.h"
#include "collector/core/source.h"
#include "collector/cpu/modules.h"

namespace collector::python {
namespace {

constinit PythonProcess g_process{};

// Samples with Python frames, walks ended by an unreadable frame, samples
// whose groups and eval-loop frames did not all match (run diagnostics).
std::atomic<uint64_t> g_spliced{0}, g_bad_reads{0}, g_mismatched{0};
// process_vm_readv calls made by sampling handlers (a system call each, the
// walk's dearest step): the state and frames read directly cost none.
std::atomic<uint64_t> g_safe_reads{0};
// Samples of a thread whose state the finalizing interpreter has freed (or
// is about to): no Python frames for them.
std::atomic<uint64_t> g_finalizing_skips{0};
// Walks a fault ended (the fault guard's jump back).
std::atomic<uint64_t> g_walk_faults{0};

// A thread state pointer meaning "looked, this thread has none": the walk
// looks again every kRetrySamples samples (a thread may start running
// Python later, through PyGILState_Ensure).
constexpr uintptr_t kNoTState = 1;
constexpr uint32_t kRetrySamples = 64;
constexpr int kMaxInterpreters = 64;
constexpr int kMaxThreadStates = 4096;
constexpr uint32_t kMaxFrameBytes = 128;
constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 30;

// Reads `n` bytes at `address` of our own memory without faulting.
// SIGNAL-HANDLER CODE.
bool SafeRead(uintptr_t address, void* out, size_t n) {
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(address), n};
  return syscall(SYS_process_vm_readv, g_process.pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

// Several 8-byte words in one system call. SIGNAL-HANDLER CODE.
bool SafeReadWords(const uintptr_t* addresses, uint64_t* out, int n) {
  iovec local[4], remote[4];
  for (int i = 0; i < n; ++i) {
    local[i] = iovec{&out[i], 8};
    remote[i] = iovec{reinterpret_cast<void*>(addresses[i]), 8};
  }
  return syscall(SYS_process_vm_readv, g_process.pid, local, n, remote, n, 0) == static_cast<ssize_t>(8 * n);
}

// The sampling handler's reads, counted (python_safe_reads): each is a
// system call, and how many a sample makes is what the walk costs most.
// SIGNAL-HANDLER CODE.
bool HandlerRead(uintptr_t address, void* out, size_t n) {
  g_safe_reads.fetch_add(1, std::memory_order_relaxed);
  return SafeRead(address, out, n);
}
bool HandlerReadWords(const uintptr_t* addresses, uint64_t* out, int n) {
  g_safe_reads.fetch_add(1, std::memory_order_relaxed);
  return SafeReadWords(addresses, out, n);
}

// Direct reads of the interpreter's memory, by the collector's own
// instructions (volatile word loads, never a call to libc's memcpy): the
// fault guard takes a fault only at an instruction of ours (OnFatal).
// `at` is 8-aligned (fields and frames are). SIGNAL-HANDLER CODE.
uint64_t Load64(uintptr_t at) { return *reinterpret_cast<const volatile uint64_t*>(at); }
void LoadWords(unsigned char* out, uintptr_t from, uint32_t bytes) {  // bytes: a multiple of 8
  for (uint32_t i = 0; i < bytes / 8; ++i) {
    const uint64_t w = Load64(from + 8 * i);
    std::memcpy(out + 8 * i, &w, 8);
  }
}

template <class T>
T At(const unsigned char* block, uint32_t offset) {
  T v;
  std::memcpy(&v, block + offset, sizeof v);
  return v;
}

// The calling thread's PyThreadState: the interpreters' thread lists,
// matched on thread_id (pthread_self, which CPython stores). 0: none.
// SIGNAL-HANDLER CODE.
uintptr_t FindThreadState(const PyLayout& l, uint64_t self) {
  uint64_t interp = 0;
  if (!HandlerRead(g_process.runtime + l.runtime_interpreters_head, &interp, 8)) return 0;
  for (int i = 0; interp != 0 && i < kMaxInterpreters; ++i) {
    uint64_t ts = 0;
    if (!HandlerRead(interp + l.interp_threads_head, &ts, 8)) return 0;
    for (int j = 0; ts != 0 && j < kMaxThreadStates; ++j) {
      const uintptr_t at[2] = {static_cast<uintptr_t>(ts) + l.tstate_thread_id, static_cast<uintptr_t>(ts) + l.tstate_next};
      uint64_t v[2];
      if (!HandlerReadWords(at, v, 2)) return 0;
      if (v[0] == self) return static_cast<uintptr_t>(ts);
      ts = v[1];
    }
    if (!HandlerRead(interp + l.interp_next, &interp, 8)) return 0;
  }
  return 0;
}

// The fields a code object is recognized by (code_ids.h): the addresses of
// its name and filename strings and its first line. SIGNAL-HANDLER CODE
// (also run by the resolver).
// The words read, in this order: co_name, co_filename, and the word that
// starts with co_firstlineno (an int; the word's other half is not used).
uint64_t MixFingerprint(uint64_t name, uint64_t filename, uint64_t first_line_word) {
  const uint64_t h = name * 0x9e3779b97f4a7c15ull ^ filename * 0xc2b2ae3d27d4eb4full ^ (first_line_word & 0xffffffffu);
  return h != 0 ? h : 1;
}
uint64_t CodeFingerprint(uintptr_t code) {
  const PyLayout& l = g_process.layout;
  const uintptr_t at[3] = {code + l.code_name, code + l.code_filename, code + l.code_firstlineno};
  uint64_t v[3];
  if (code == 0 || !HandlerReadWords(at, v, 3)) return 0;
  return MixFingerprint(v[0], v[1], v[2]);
}

uint32_t InstructionIndex(const PyLayout& l, const unsigned char* frame, uintptr_t code) {
  if (l.instr == InstrKind::kLastiIndex) {
    const int32_t lasti = At<int32_t>(frame, l.frame_instr);
    return lasti > 0 ? static_cast<uint32_t>(lasti) : 0;
  }
  const uintptr_t instr = At<uintptr_t>(frame, l.frame_instr);
  const uintptr_t first = code + l.code_instructions;
  if (instr < first) return 0;  // before the first instruction (prev_instr at a frame's start)
  const uintptr_t units = (instr - first) / 2;
  return units < kPythonMaxIndex ? static_cast<uint32_t>(units) : kPythonMaxIndex;
}

}  // namespace

const PythonProcess& Process() { return g_process; }

void CountSplice(bool mismatched) {
  g_spliced.fetch_add(1, std::memory_order_relaxed);
  if (mismatched) g_mismatched.fetch_add(1, std::memory_order_relaxed);
}

namespace {

// Whether PyGILState's thread-specific key gives each thread its own
// PyThreadState (the table's offset can be wrong for a patch release):
// 0 not known yet, 1 checked against the thread lists, -1 it did not match.
std::atomic<int> g_tss_checked{0};

// The calling thread's PyThreadState from PyGILState's key: no system
// call, and a state that is registered to this thread is alive (CPython
// clears the key before it frees the state). 0: none, or unknown (*known
// false). SIGNAL-HANDLER CODE: pthread_getspecific reads the thread's own
// key array.
uintptr_t ThreadStateFromKey(const PyLayout& l, bool* known) {
  *known = false;
  if (l.runtime_tss_key < 0 || g_tss_checked.load(std::memory_order_relaxed) < 0) return 0;
  int initialized = 0;
  pthread_key_t key{};
  const auto* tss = reinterpret_cast<const unsigned char*>(g_process.runtime + static_cast<uint32_t>(l.runtime_tss_key));
  std::memcpy(&initialized, tss, sizeof initialized);  // _PyRuntime: the interpreter's own static data
  std::memcpy(&key, tss + 4, sizeof key);
  if (initialized != 1) return 0;  // not initialized yet: look the slow way
  *known = true;
  return reinterpret_cast<uintptr_t>(pthread_getspecific(key));
}

// The walk itself; WalkPythonFrames guards it. SIGNAL-HANDLER CODE.
__attribute__((noinline)) PythonStack WalkUnguarded(internal::ThreadState* t, uint64_t* keys, int32_t* group_end,
                                                   int max) {
  PythonStack s;
  const PythonProcess& p = g_process;
  const PyLayout& l = p.layout;
  const uint64_t self = static_cast<uint64_t>(pthread_self());
  // f: the state's frame root and data-stack chunk.
  uint64_t f[3] = {};
  bool known = false;
  uintptr_t ts = ThreadStateFromKey(l, &known);
  const int checked = g_tss_checked.load(std::memory_order_relaxed);
  // The state is this thread's own, from the checked key: alive, and what
  // it lists is mapped.
  const bool trusted = known && checked == 1;
  // This thread's stack: mapped wherever a stale pointer into it points.
  auto on_stack = [&](uintptr_t at, uint32_t bytes) {
    return t->stack.lo != 0 && at >= t->stack.lo && at + bytes <= t->stack.hi;
  };
  // Py_FinalizeEx frees every other thread's state while those threads may
  // still run (daemon threads, threads in C code without the GIL) and leaves
  // their PyGILState keys pointing at the freed memory: from then on only
  // the finalizing thread's own state is read. (_PyRuntime is the
  // interpreter's static data: always mapped.)
  const auto* finalizing_at = reinterpret_cast<const uintptr_t*>(p.runtime + l.runtime_finalizing);
  uintptr_t finalizing = __atomic_load_n(finalizing_at, __ATOMIC_ACQUIRE);
  auto dead = [&](uintptr_t state) {
    if (finalizing == 0 || state == finalizing) return false;
    g_finalizing_skips.fetch_add(1, std::memory_order_relaxed);
    return true;
  };
  if (trusted) {
    if (ts == 0 || dead(ts)) return s;  // this thread runs no Python (any more)
    f[0] = self;
    f[1] = Load64(ts + l.tstate_frame);
    if (l.tstate_datastack_chunk >= 0)
      f[2] = Load64(ts + static_cast<uint32_t>(l.tstate_datastack_chunk));
  } else {
    // The interpreters' thread lists, read with process_vm_readv; the first
    // thread found both ways settles whether the key can be trusted.
    const uintptr_t from_key = known ? ts : 0;
    ts = t->py_tstate;
    if (ts == kNoTState) {
      if (++t->py_retry < kRetrySamples) return s;
      ts = 0;
    }
    t->py_retry = 0;
    // The state's thread, frame root and chunk, checked against the thread
    // (a cached state may have been freed and reused).
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (ts == 0 && (ts = FindThreadState(l, self)) == 0) break;
      const int n = l.tstate_datastack_chunk >= 0 ? 3 : 2;
      const uintptr_t at[3] = {ts + l.tstate_thread_id, ts + l.tstate_frame,
                               ts + static_cast<uint32_t>(l.tstate_datastack_chunk >= 0 ? l.tstate_datastack_chunk : 0)};
      if (HandlerReadWords(at, f, n) && f[0] == self) break;
      ts = 0;
    }
    t->py_tstate = ts != 0 ? ts : kNoTState;
    if (ts == 0 || dead(ts)) return s;
    if (known && checked == 0 && from_key != 0) {
      int expected = 0;
      g_tss_checked.compare_exchange_strong(expected, from_key == ts ? 1 : -1, std::memory_order_relaxed);
    }
  }
  uintptr_t frame = static_cast<uintptr_t>(f[1]);
  // The current frame, through the C frame before 3.13: a local of the
  // eval loop on this thread's stack, or the state's root one; read
  // directly when it is there, else without faulting.
  if (l.cframe_current_frame >= 0 && frame != 0) {
    const uintptr_t at = frame + static_cast<uint32_t>(l.cframe_current_frame);
    const bool in_state = trusted && at >= ts && at + 8 <= ts + l.tstate_bytes;
    uint64_t v = 0;
    if (on_stack(at, 8) || in_state) {
      v = Load64(at);
    } else if (!HandlerRead(at, &v, 8)) {
      g_bad_reads.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
    frame = static_cast<uintptr_t>(v);
  }
  // Finalization may have begun while the state was read: CPython sets
  // _finalizing before it frees the states, so still 0 after those reads
  // means they read a live state; the chunks and frames they point to are
  // this thread's own, freed only by it (or leaked with its state).
  std::atomic_thread_fence(std::memory_order_acquire);
  if (finalizing == 0 && (finalizing = __atomic_load_n(finalizing_at, __ATOMIC_ACQUIRE)) != 0 && dead(ts)) return s;
  // The data-stack chunks the state lists (newest first) are mapped until
  // it unlists them; a frame in one is read directly. A frame elsewhere is
  // a generator's, or one being popped from a chunk just freed: read
  // without faulting.
  constexpr int kMaxChunks = 8;
  uintptr_t chunk_lo[kMaxChunks], chunk_hi[kMaxChunks];
  int chunks = 0;
  for (uintptr_t c = static_cast<uintptr_t>(f[2]); l.tstate_datastack_chunk >= 0 && c != 0 && chunks < kMaxChunks;) {
    uint64_t head[2] = {};  // _PyStackChunk: previous, size
    if (trusted) {
      head[0] = Load64(c);
      head[1] = Load64(c + 8);
    } else if (!HandlerRead(c, head, sizeof head)) {
      break;
    }
    if (head[1] == 0 || head[1] > kMaxChunkBytes) break;
    chunk_lo[chunks] = c;
    chunk_hi[chunks++] = c + head[1];
    c = static_cast<uintptr_t>(head[0]);
  }
  auto in_chunk = [&](uintptr_t frame, uint32_t bytes) {
    for (int i = 0; i < chunks; ++i)
      if (frame >= chunk_lo[i] && frame + bytes <= chunk_hi[i]) return true;
    return false;
  };
  // 3.10's frames are heap objects, each owned by the next one in (f_back)
  // and freed only after the state stops pointing at it: alive while on the
  // chain, read directly once the state is the thread's own.
  const bool heap_frames_alive = trusted && l.tstate_datastack_chunk < 0;
  const uint32_t bytes = l.frame_bytes <= kMaxFrameBytes ? l.frame_bytes : kMaxFrameBytes;
  unsigned char block[kMaxFrameBytes];
  int n = 0;
  int start = 0;  // first frame of the current group
  while (frame != 0 && n < max) {
    if ((frame & 7) != 0) {
      g_bad_reads.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    // 3.12+'s shim frames are locals of the eval loop, on this stack.
    if (heap_frames_alive || on_stack(frame, bytes) || in_chunk(frame, bytes)) {
      LoadWords(block, frame, bytes);
    } else if (!HandlerRead(frame, block, bytes)) {
      g_bad_reads.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    const uintptr_t previous = At<uintptr_t>(block, l.frame_previous);
    if (l.entry == EntryKind::kShimFrame && At<uint8_t>(block, static_cast<uint32_t>(l.frame_owner)) == l.owner_cstack) {
      if (n > start) group_end[s.groups++] = n;
      start = n;
      frame = previous;
      continue;
    }
    const uintptr_t code = At<uintptr_t>(block, l.frame_code);
    const uintptr_t globals = At<uintptr_t>(block, l.frame_globals);
    auto& cached = t->py_code_ids[(code >> 4) & (internal::ThreadState::kPyCodeIdCache - 1)];
    if (cached.code != code || cached.globals != globals || cached.id == kNoCodeId)
      cached = {code, globals, CodeIdFor(code, globals, CodeFingerprint)};
    const uint64_t id = cached.id;
    keys[n++] = MakePythonKey(id, InstructionIndex(l, block, code));
    if (l.entry == EntryKind::kOnePerFrame ||
        (l.entry == EntryKind::kIsEntryFlag && At<uint8_t>(block, static_cast<uint32_t>(l.frame_is_entry)) != 0)) {
      group_end[s.groups++] = n;
      start = n;
    }
    frame = previous;
  }
  if (n > start) group_end[s.groups++] = n;
  s.count = n;
  s.complete = frame == 0;
  return s;
}

}  // namespace

PythonStack WalkPythonFrames(internal::ThreadState* t, uint64_t* keys, int32_t* group_end, int max) {
  if (!g_process.enabled || max <= 0) return {};
  // The reads made directly rest on what the interpreter guarantees (a
  // state its thread's key holds is alive, a listed chunk mapped), not
  // what a program may do beside them: an embedder freeing a running
  // thread's state, say. Such a fault ends this sample's walk instead of
  // the program.
  jmp_buf guard;
  jmp_buf* const outer = internal::t_fault_guard;
  if (_setjmp(guard) != 0) {
    internal::t_fault_guard = outer;
    g_walk_faults.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  internal::t_fault_guard = &guard;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const PythonStack s = WalkUnguarded(t, keys, group_end, max);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  internal::t_fault_guard = outer;
  return s;
}

namespace {

// A str object's text (compact strings; every string CPython makes for
// code objects is one), at most kMaxText bytes of UTF-8.
constexpr size_t kMaxText = 4096;
bool ReadText(const PyLayout& l, uintptr_t object, std::string* out) {
  if (object == 0 || (object & 7) != 0) return false;
  // The ASCII header only: a short string can end right after it, at the
  // end of a mapping.
  unsigned char head[80];
  if (l.ascii_size > sizeof head || !SafeRead(object, head, l.ascii_size)) return false;
  const int64_t length = At<int64_t>(head, l.unicode_length);
  const uint32_t state = At<uint32_t>(head, l.unicode_state);
  if (length < 0 || length > static_cast<int64_t>(kMaxText)) return false;
  const bool compact = (state >> l.state_compact_bit) & 1;
  const bool ascii = (state >> l.state_ascii_bit) & 1;
  const unsigned kind = (state >> l.state_kind_shift) & 7;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) return false;
  const uintptr_t data = object + (ascii ? l.ascii_size : l.compact_size);
  std::vector<unsigned char> raw(static_cast<size_t>(length) * kind);
  if (!raw.empty() && !SafeRead(data, raw.data(), raw.size())) return false;
  out->clear();
  for (int64_t i = 0; i < length; ++i) {
    uint32_t c = 0;
    std::memcpy(&c, raw.data() + i * kind, kind);
    if (c < 0x80) {
      out->push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (c >> 6)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
    } else if (c < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (c >> 12)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
    } else if (c < 0x110000) {
      out->push_back(static_cast<char>(0xf0 | (c >> 18)));
      out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
    } else {
      return false;
    }
  }
  return true;
}

constexpr size_t kMaxLineTable = size_t{1} << 20;

}  // namespace

namespace {

// What naming needs of a code object, read while it lives (the line table
// copied: a key's line is found from it after the object is gone).
struct CodeFacts {
  bool ok = false;
  std::string function;  // qualified name (3.11+), else name
  std::string file;
  int32_t first_line = 0;
  int32_t first_traceable = -1;
  std::vector<unsigned char> linetable;
};

// Reads the code object an id stands for, if it is still that object: a
// code object (its type) with the fingerprint the handler took.
CodeFacts ReadCodeFacts(const CodeIdentity& identity) {
  CodeFacts facts;
  const PythonProcess& p = g_process;
  const PyLayout& l = p.layout;
  const uintptr_t code = identity.code;
  uint64_t type = 0;
  if (!SafeRead(code + l.ob_type, &type, 8) || type != p.code_type) return facts;
  // The fingerprint's fields, and the line table, in one read.
  const uintptr_t at[4] = {code + l.code_name, code + l.code_filename, code + l.code_firstlineno,
                           code + l.code_linetable};
  uint64_t v[4];
  if (identity.fingerprint == 0 || !SafeReadWords(at, v, 4) || MixFingerprint(v[0], v[1], v[2]) != identity.fingerprint)
    return facts;
  uint64_t name = v[0];
  if (l.code_qualname >= 0 && !SafeRead(code + static_cast<uint32_t>(l.code_qualname), &name, 8)) return facts;
  if (!ReadText(l, name, &facts.function)) return facts;
  if (!ReadText(l, v[1], &facts.file)) facts.file.clear();
  const auto first_line = static_cast<int32_t>(static_cast<uint32_t>(v[2]));
  facts.first_line = first_line > 0 ? first_line : 0;
  const uintptr_t linetable = v[3];
  int64_t table_size = 0;
  if (linetable != 0 && SafeRead(linetable + l.bytes_size, &table_size, 8) && table_size > 0 &&
      static_cast<size_t>(table_size) <= kMaxLineTable) {
    facts.linetable.resize(static_cast<size_t>(table_size));
    if (!SafeRead(linetable + l.bytes_data, facts.linetable.data(), facts.linetable.size())) facts.linetable.clear();
  }
  int32_t first_traceable = 0;
  if (l.code_first_traceable >= 0 &&
      SafeRead(code + static_cast<uint32_t>(l.code_first_traceable), &first_traceable, 4) && first_traceable > 0)
    facts.first_traceable = first_traceable;
  facts.ok = true;
  return facts;
}

// The code objects' facts by id (read by ResolveNewCodeIds as ids are
// handed out), and names by frame key; under `mutex`. Made on first use:
// the collector starts before this file's dynamic initializers would run.
// Entries are never erased, so references handed out stay valid.
struct Names {
  std::mutex mutex;
  std::vector<CodeFacts> facts;  // by id; facts.size(): the first id not read yet
  std::unordered_map<uint64_t, SymbolFrames> by_key;
  int64_t unnamed = 0;  // ids whose code object was gone (or changed) before it was read
  uint64_t stalled_id = 0;  // the id a pass stopped at, and since when
  int64_t stalled_since_ns = 0;
};
constexpr int64_t kStalledNs = 200'000'000;
Names* g_names = nullptr;
Names& names() {
  static Names* first = g_names = new Names;  // never destroyed: the final write runs in exit handlers
  (void)first;
  return *g_names;
}

void ResolveNewCodeIdsLocked(Names& n) {
  if (n.facts.empty()) n.facts.emplace_back();  // kNoCodeId
  for (uint64_t id = n.facts.size(), end = CodeIdEnd(); id < end; ++id) {
    CodeIdentity identity;
    if (!CodeIdentityOf(id, &identity)) {
      // Its handler is still writing it (microseconds): a later pass reads
      // it. One that stays unwritten was being handed out by a thread a fork
      // left behind (this is the child): skipped after kStalledNs, so the
      // ids after it are still named.
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      const int64_t now_ns = now.tv_sec * 1000000000LL + now.tv_nsec;
      if (n.stalled_id != id) n.stalled_id = id, n.stalled_since_ns = now_ns;
      if (now_ns - n.stalled_since_ns < kStalledNs) break;
    } else {
      n.facts.push_back(ReadCodeFacts(identity));
      if (n.facts.back().ok) continue;
    }
    if (n.facts.size() == id) n.facts.emplace_back();
    ++n.unnamed;
  }
}

const SymbolFrames& NameLocked(Names& n, uint64_t key) {
  const uint64_t frame_key = key & ~kPythonLineBit;
  auto it = n.by_key.find(frame_key);
  if (it != n.by_key.end()) return it->second;
  const uint64_t id = PythonKeyCodeId(frame_key);
  if (id >= n.facts.size()) ResolveNewCodeIdsLocked(n);  // the resolver thread has not got to it yet
  const uint32_t index = PythonKeyIndex(frame_key);
  SymbolFrames frames;
  const CodeFacts* facts = id < n.facts.size() ? &n.facts[id] : nullptr;
  if (facts == nullptr || !facts->ok) {
    CodeIdentity identity;
    char name[64];
    if (CodeIdentityOf(id, &identity))
      std::snprintf(name, sizeof name, "<python code 0x%lx>", static_cast<unsigned long>(identity.code));
    else
      std::snprintf(name, sizeof name, "<python code>");
    SymbolFrame f;
    f.function = name;
    frames.push_back(std::move(f));
  } else if (facts->first_traceable < 0 || index >= static_cast<uint32_t>(facts->first_traceable)) {
    SymbolFrame f;
    f.function = facts->function;
    f.module = facts->file;
    f.file = facts->file;
    f.line = facts->linetable.empty()
                 ? 0
                 : LineOfInstruction(g_process.layout.minor, facts->linetable, facts->first_line, index);
    if (f.line == 0) f.line = static_cast<uint32_t>(facts->first_line);
    f.decl_file = facts->file;
    f.decl_line = static_cast<uint32_t>(facts->first_line);
    frames.push_back(std::move(f));
  }
  return n.by_key.emplace(frame_key, std::move(frames)).first->second;
}

// The resolver thread: reads each new code object as soon as the handler
// hands out its id (and every kResolveIntervalMs at least), whatever the
// checkpoint thread is doing: a module's body lives only as long as its
// import, and a script's last function may end before the next checkpoint.
void* ResolverMain(void*) {
  for (;;) {
    WaitForNewCodeIds(kResolveIntervalMs);
    // Nothing may escape into the host program (an allocation failure
    // would end it): those ids are read at the next pass instead.
    try {
      ResolveNewCodeIds();
    } catch (...) {
    }
  }
  return nullptr;
}

void StartResolver() { internal::StartOwnThread(ResolverMain); }

// A fork child: the parent's names may have been half written (the mutex
// held by a parent thread that does not exist here); the child reads its
// code objects again (the same ones: the id table is inherited). The old
// set is left, not freed.
void ForgetPythonNames() {
  names();
  g_names = new Names;
}
}  // namespace

const SymbolFrames& PythonSymbolFrames(uint64_t key) {
  Names& n = names();
  std::lock_guard<std::mutex> lock(n.mutex);
  return NameLocked(n, key);
}

void ResolveNewCodeIds() {
  if (!g_process.enabled) return;
  Names& n = names();
  std::lock_guard<std::mutex> lock(n.mutex);
  ResolveNewCodeIdsLocked(n);
}

namespace {

using internal::rt;

// Which CPython this is, from Py_Version (3.11+) or Py_GetVersion's text.
bool ReadVersion(int* major, int* minor, std::string* text) {
  if (const auto* hex = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"))) {
    *major = static_cast<int>((*hex >> 24) & 0xff);
    *minor = static_cast<int>((*hex >> 16) & 0xff);
    *text = std::to_string(*major) + "." + std::to_string(*minor) + "." + std::to_string((*hex >> 8) & 0xff);
    return true;
  }
  using GetVersion = const char* (*)();
  auto get = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "Py_GetVersion"));
  if (get == nullptr) return false;
  const char* v = get();
  int micro = 0;
  if (v == nullptr || std::sscanf(v, "%d.%d.%d", major, minor, &micro) < 2) return false;
  *text = std::to_string(*major) + "." + std::to_string(*minor) + "." + std::to_string(micro);
  return true;
}

bool Attach() {
  if (rt->config.python == PythonMode::kOff) return true;
  void* runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
  void* eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
  void* code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
  if (runtime == nullptr || eval == nullptr || code_type == nullptr) return true;  // not CPython
  int major = 0, minor = 0;
  std::string version;
  if (!ReadVersion(&major, &minor, &version)) return true;
  std::optional<PyLayout> layout;
  if (major == 3 && minor >= 13) {
    layout = LayoutFromDebugOffsets(std::span(static_cast<const unsigned char*>(runtime), 4096), minor);
    if (!layout) layout = LayoutFor(minor);
  } else if (major == 3) {
    layout = LayoutFor(minor);
  }
  if (!layout) {
    internal::Warn("Python " + version + " is not one whose frames cctdb can read (3.10 to 3.13): its stacks show the interpreter's native frames only");
    return true;
  }
  Dl_info info{};
  void* entry = nullptr;
  const auto* sym = static_cast<const ElfW(Sym)*>(nullptr);
  if (dladdr1(eval, &info, &entry, RTLD_DL_SYMENT) != 0) sym = static_cast<const ElfW(Sym)*>(entry);
  if (sym == nullptr || sym->st_size == 0) {
    internal::Warn("Python " + version + ": the size of _PyEval_EvalFrameDefault is unknown; its stacks show native frames only");
    return true;
  }
  g_process.layout = *layout;
  g_process.runtime = reinterpret_cast<uintptr_t>(runtime);
  g_process.code_type = reinterpret_cast<uintptr_t>(code_type);
  g_process.code.eval_lo = reinterpret_cast<uintptr_t>(eval);
  g_process.code.eval_hi = g_process.code.eval_lo + sym->st_size;
  ExecutableSegment(g_process.code.eval_lo, &g_process.code.text_lo, &g_process.code.text_hi);
  g_process.pid = static_cast<int>(getpid());
  std::snprintf(g_process.version, sizeof g_process.version, "%s", version.c_str());
  // A process that may not read its own memory this way (a seccomp filter)
  // would lose every Python frame silently: check once.
  uint64_t probe = 0;
  if (!SafeRead(g_process.runtime, &probe, 8)) {
    internal::Warn("Python " + version + ": process_vm_readv is not permitted here; stacks show the interpreter's native frames only");
    return true;
  }
  if (!InitCodeIds()) {
    internal::Warn("Python " + version + ": no memory for the code object table; stacks show the interpreter's native frames only");
    return true;
  }
  g_process.enabled = true;
  StartResolver();
  if (!StartThreadNamer(g_process.layout.minor, g_process.code.text_lo, g_process.code.text_hi))
    internal::Warn("Python " + version + ": its C API was not found; threads keep numbered names");
  return true;
}

void ForkChild() {
  g_process.pid = static_cast<int>(getpid());
  ForgetPythonNames();
  ForgetThreadNames();
  if (g_process.enabled) {
    StartResolver();
    StartThreadNamer(g_process.layout.minor, g_process.code.text_lo, g_process.code.text_hi);
  }
  g_spliced.store(0);
  g_bad_reads.store(0);
  g_mismatched.store(0);
  g_safe_reads.store(0);
  g_finalizing_skips.store(0);
  g_walk_faults.store(0);
}

void AddToRun(internal::RunContext& run) {
  if (!g_process.enabled) return;
  run.meta.diagnostics["python_minor"] = g_process.layout.minor;
  // 1: threads' states came from PyGILState's key (no system call per
  // sample); 0 or -1: from the thread lists (a slower walk).
  run.meta.diagnostics["python_thread_key"] = g_tss_checked.load();
  run.meta.diagnostics["python_samples"] = static_cast<int64_t>(g_spliced.load());
  run.meta.diagnostics["python_bad_reads"] = static_cast<int64_t>(g_bad_reads.load());
  run.meta.diagnostics["python_safe_reads"] = static_cast<int64_t>(g_safe_reads.load());
  run.meta.diagnostics["python_mismatched"] = static_cast<int64_t>(g_mismatched.load());
  run.meta.diagnostics["python_finalizing_skips"] = static_cast<int64_t>(g_finalizing_skips.load());
  run.meta.diagnostics["python_walk_faults"] = static_cast<int64_t>(g_walk_faults.load());
  run.meta.diagnostics["python_named_threads"] = NamedThreads();
  // Code objects sampled, those gone before they could be read (their
  // frames are "<python code 0x…>"), and samples a full table left unnamed.
  {
    Names& n = names();
    std::lock_guard<std::mutex> lock(n.mutex);
    ResolveNewCodeIdsLocked(n);
    run.meta.diagnostics["python_code_objects"] = static_cast<int64_t>(n.facts.size() > 0 ? n.facts.size() - 1 : 0);
    run.meta.diagnostics["python_code_unnamed"] = n.unnamed;
  }
  run.meta.diagnostics["python_code_overflow"] = static_cast<int64_t>(CodeIdsOverflowed());
}

void ThreadStarted(internal::ThreadState* t) {
  if (g_process.enabled) NoteThreadRegistered(*t);
}

}  // namespace
}  // namespace collector::python

namespace collector::internal {
extern const Source kPythonSource = {
    .name = "python",
    .attach = python::Attach,
    .thread_started = python::ThreadStarted,
    .add_to_run = python::AddToRun,
    .fork_child = python::ForkChild,
};
}  // namespace collector::internal
