// Identities of the Python code objects that samples ran in: the code part
// of a Python sample key (sample_trie.h, MakePythonKey).
//
// A code object's address is not an identity. The interpreter frees code
// objects — a module's body right after its import, what exec() and eval()
// compiled — and gives their addresses to the next ones, often within a
// millisecond: at start-up, site's imports free their module bodies and the
// script's functions are compiled into the same memory. Keyed by address,
// the samples of both would merge and take one name. An id here stands for
// one (code address, globals) pair: a frame's f_globals (the dictionary of
// the module the code runs in) tells a new code object at an old address
// apart, and the handler has it for free, in the frame it reads anyway.
// With each new id the handler also reads the code object's name and
// first line (a fingerprint) and posts a semaphore: the resolver thread
// (python_frames.cc) then names the id at once, from the live object,
// checking the fingerprint, so a code object that lives a millisecond is
// named, and one already gone is left unnamed rather than misnamed.
//
// What still merges: a new code object at an old address, run with the same
// globals (exec() of new source into one module's namespace) before the
// handler sampled anything else there; both then carry the first one's id.
//
// The tables are reserved once at attach (MAP_NORESERVE; pages are touched
// as ids are handed out) and never freed; ids are never reused. A fork
// child inherits them as they are: its code objects are the parent's.
//
// SIGNAL-HANDLER CODE: CodeIdFor is async-signal-safe (lock-free, no
// allocation; system calls process_vm_readv and sem_post only). The rest is
// thread-safe.
#pragma once

#include <cstdint>

namespace collector::python {

// Ids handed out: 1 to kMaxCodeIds - 1. kNoCodeId: the table is full, or was
// never reserved (the keys of such samples are all named the same).
inline constexpr uint64_t kNoCodeId = 0;
// 2^18 code objects sampled (a large PyTorch program samples a few
// thousand): at most 6 MiB of entries and 2 MiB of slots, touched as used.
inline constexpr uint64_t kMaxCodeIds = uint64_t{1} << 18;

// Reserves the tables (normal context, before sampling starts). False when
// the memory could not be reserved: every id is then kNoCodeId.
bool InitCodeIds();

// What a code object is checked against when it is named: its name and
// filename pointers and its first line, mixed. Reads with
// process_vm_readv (the object may be gone); 0 when it cannot be read.
// SIGNAL-HANDLER CODE.
using CodeFingerprintFn = uint64_t (*)(uintptr_t code);

// The id of the code object at `code` running with `globals`: the one
// handed out for this pair before, or a new one (fingerprinted with
// `fingerprint`, and announced to WaitForNewCodeIds). SIGNAL-HANDLER CODE.
uint64_t CodeIdFor(uintptr_t code, uintptr_t globals, CodeFingerprintFn fingerprint);

struct CodeIdentity {
  uintptr_t code = 0;
  uintptr_t globals = 0;
  uint64_t fingerprint = 0;
};
// The pair and fingerprint `id` stands for; false for kNoCodeId, an id not
// handed out, or one whose handler has not finished writing it (ask again).
bool CodeIdentityOf(uint64_t id, CodeIdentity* out);

// One past the last id handed out so far.
uint64_t CodeIdEnd();

// Waits until a new id is handed out or `timeout_ms` passes.
void WaitForNewCodeIds(int timeout_ms);

// Diagnostics: samples whose pair found no id (the table was full).
uint64_t CodeIdsOverflowed();

}  // namespace collector::python
