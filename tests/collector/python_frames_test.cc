// The Python splice and CPython's line tables, as pure functions
// (python/python_frames.h, python/cpython_layout.h); recorded trees are in
// python_test.cc.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "collector/cpu/sample_trie.h"
#include "collector/python/code_ids.h"
#include "collector/python/cpython_layout.h"
#include "collector/python/python_frames.h"

using namespace collector;
using collector::python::PythonStack;

namespace {

// The interpreter's text is 0x400000..0x500000, its eval loop the first
// page of it; "native" frames are elsewhere (an extension, libc).
constexpr uintptr_t kEvalLo = 0x400000, kEvalHi = 0x401000;
const python::InterpreterCode kCode{kEvalLo, kEvalHi, 0x400000, 0x500000};
uint64_t Native(uintptr_t a) { return MakeKey(0x900000 + a, 0); }
uint64_t Interp(uintptr_t a) { return MakeKey(0x480000 + a, 0); }
uint64_t Eval(uintptr_t offset) { return MakeKey(kEvalLo + offset, 0); }
uint64_t Py(int i) { return MakePythonKey(100 + static_cast<uint64_t>(i), i); }

std::vector<uint64_t> Splice(const std::vector<uint64_t>& in, const std::vector<uint64_t>& py,
                             const std::vector<int32_t>& groups, bool complete, bool* mismatched = nullptr) {
  PythonStack s;
  s.count = static_cast<int>(py.size());
  s.groups = static_cast<int>(groups.size());
  s.complete = complete;
  std::vector<uint64_t> out(in.size() + py.size() + 1);
  const int n = python::SplicePython(in.data(), static_cast<int>(in.size()), py.data(), groups.data(), s, kCode,
                                     out.data(), static_cast<int>(out.size()), {}, mismatched);
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace

TEST_CASE("Python keys: code id and instruction index round trip, apart from other key kinds") {
  const uint64_t k = MakePythonKey(0xabcdef12345, 1234);  // 44 bits
  CHECK(IsPythonKey(k));
  CHECK_FALSE(IsPythonLineKey(k));
  CHECK(IsPythonLineKey(k | kPythonLineBit));
  CHECK(PythonKeyCodeId(k) == 0xabcdef12345);
  CHECK(PythonKeyIndex(k) == 1234);
  CHECK(PythonKeyIndex(MakePythonKey(0x1000, 1u << 20)) == kPythonMaxIndex);  // clamped, not wrapped
  CHECK_FALSE(IsRangeKey(k));
  CHECK_FALSE(IsMarkKey(k));
  CHECK_FALSE(IsGpuKey(k));
  CHECK_FALSE(IsKernelKey(k));
  CHECK_FALSE(IsAddressKey(k));
  CHECK_FALSE(IsPythonKey(MakeRangeKey(7)));
  CHECK_FALSE(IsPythonKey(MakeKernelKey(7)));
  CHECK_FALSE(IsPythonKey(Native(0x1234)));
}

TEST_CASE("Python splice: each eval-loop frame becomes its group, outermost first, the innermost frame's line last") {
  // main → eval#1 → C call → eval#2 → leaf; Python frames innermost first:
  // py0, py1 run in eval#2 (group 0), py2, py3, py4 in eval#1 (group 1).
  const std::vector<uint64_t> in = {Native(0x10), Eval(0x20), Native(0x30), Eval(0x40), Native(0x50)};
  const std::vector<uint64_t> py = {Py(0), Py(1), Py(2), Py(3), Py(4)};
  bool mismatched = true;
  const auto out = Splice(in, py, {2, 5}, true, &mismatched);
  CHECK_FALSE(mismatched);
  const std::vector<uint64_t> want = {Native(0x10), Py(4), Py(3), Py(2), Native(0x30), Py(1), Py(0),
                                      Py(0) | kPythonLineBit, Native(0x50)};
  CHECK(out == want);
}

TEST_CASE("Python splice: the interpreter's call machinery between Python frames is left out, not what a line runs") {
  // main (interpreter) → eval#1 → vectorcall (interpreter) → extension →
  // eval#2 → builtin (interpreter) → libc.
  const std::vector<uint64_t> in = {Interp(0x10), Eval(0x20), Interp(0x30), Native(0x40), Interp(0x50), Eval(0x60),
                                    Interp(0x70), Native(0x80)};
  const auto out = Splice(in, {Py(0), Py(1)}, {1, 2}, true);
  const std::vector<uint64_t> want = {Interp(0x10), Py(1), Native(0x40), Py(0), Py(0) | kPythonLineBit,
                                      Interp(0x70), Native(0x80)};
  CHECK(out == want);
}

TEST_CASE("Python splice: an NVTX range moves to just after the Python frame that pushed it") {
  // One eval-loop frame runs py3 (outermost) .. py0; a range pushed by py2
  // (two Python frames active: py3, py2) was put by PathKeys before the
  // eval key, another pushed by py0 (four active) after it; a third, with
  // no Python frames known, stays where it was.
  const uint64_t r1 = MakeRangeKey(1), r2 = MakeRangeKey(2), r3 = MakeRangeKey(3);
  const std::vector<uint64_t> in = {Native(1), r3, r1, Eval(2), r2, Native(4)};
  const std::vector<uint64_t> py = {Py(0), Py(1), Py(2), Py(3)};
  const int32_t depths[] = {-1, 2, 4};  // r3, r1, r2 in push order (as PathKeys emits them)
  PythonStack s;
  s.count = 4;
  s.groups = 1;
  s.complete = true;
  const int32_t groups[] = {4};
  python::SpliceOptions options;
  options.range_py_depth = depths;
  options.ranges = 3;
  std::vector<uint64_t> out(16);
  int n = python::SplicePython(in.data(), static_cast<int>(in.size()), py.data(), groups, s, kCode, out.data(), 16,
                               options);
  out.resize(static_cast<size_t>(n));
  CHECK(out == std::vector<uint64_t>{Native(1), r3, Py(3), Py(2), r1, Py(1), Py(0), r2, Py(0) | kPythonLineBit,
                                     Native(4)});
  // A range's own path (at its pop): nothing after the innermost frame.
  options.line_key = false;
  options.cut_after_innermost = true;
  out.assign(16, 0);
  n = python::SplicePython(in.data(), static_cast<int>(in.size()), py.data(), groups, s, kCode, out.data(), 16,
                           options);
  out.resize(static_cast<size_t>(n));
  CHECK(out == std::vector<uint64_t>{Native(1), r3, Py(3), Py(2), r1, Py(1), Py(0), r2});
}

TEST_CASE("Python splice: mismatches match from the root, or from the innermost end of a partial stack") {
  const std::vector<uint64_t> py = {Py(0), Py(1)};
  // Two eval-loop frames, one group (a frame being entered): the outer eval
  // gets the group, the inner stays native.
  {
    bool mismatched = false;
    const auto out = Splice({Native(1), Eval(2), Eval(3), Native(4)}, py, {2}, true, &mismatched);
    CHECK(mismatched);
    CHECK(out == std::vector<uint64_t>{Native(1), Py(1), Py(0), Py(0) | kPythonLineBit, Eval(3), Native(4)});
  }
  // A partial native stack (its root is missing): matched from the
  // innermost end, the outermost group (py2) has no eval-loop frame left.
  {
    const auto out = Splice({kPartialKey, Eval(2), Native(3), Eval(5), Native(4)}, {Py(0), Py(1), Py(2)}, {1, 2, 3},
                            false);
    CHECK(out == std::vector<uint64_t>{kPartialKey, Py(1), Native(3), Py(0), Py(0) | kPythonLineBit, Native(4)});
  }
  // No eval-loop frame at all (another thread's chain, a native thread):
  // the path as it was.
  {
    const std::vector<uint64_t> in = {Native(1), Native(2)};
    CHECK(Splice(in, py, {2}, true) == in);
  }
}

TEST_CASE("Python splice: a result that would not fit leaves the path as it was") {
  const std::vector<uint64_t> in = {Native(1), Eval(2)};
  const std::vector<uint64_t> py = {Py(0), Py(1), Py(2)};
  PythonStack s;
  s.count = 3;
  s.groups = 1;
  s.complete = true;
  const int32_t groups[] = {3};
  uint64_t out[4];  // needs 1 + 3 + 1
  const int n = python::SplicePython(in.data(), 2, py.data(), groups, s, kCode, out, 4);
  REQUIRE(n == 2);
  CHECK(out[0] == in[0]);
  CHECK(out[1] == in[1]);
}

TEST_CASE("CPython line tables: 3.11+ location entries and 3.10's pairs") {
  // 3.11+ (Objects/locations.md), first line 10, one entry per form:
  //   short form (code 0), 2 code units, same line           -> 10
  //   one-line form (code 11: line + 1), 1 unit, 2 col bytes  -> 11
  //   no-column form (code 13), svarint +3, 3 units           -> 14
  //   none (code 15), 1 unit                                  -> no line
  //   long form (code 14), svarint -2, 3 varints, 1 unit      -> 12
  const std::vector<unsigned char> t311 = {
      0x80 | (0 << 3) | 1, 5,
      0x80 | (11 << 3) | 0, 1, 2,
      0x80 | (13 << 3) | 2, 6,  // +3 as a signed varint: 3 << 1
      0x80 | (15 << 3) | 0,
      0x80 | (14 << 3) | 0, 5, 0, 1, 1,  // -2: (2 << 1) | 1
  };
  const uint32_t want[] = {10, 10, 11, 14, 14, 14, 0, 12};
  for (uint32_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(python::LineOfInstruction(11, t311, 10, i) == want[i]);
    CHECK(python::LineOfInstruction(13, t311, 10, i) == want[i]);
  }
  CHECK(python::LineOfInstruction(11, t311, 10, 8) == 0);  // past the table
  // Damaged: an entry without its top bit, a varint running off the end.
  CHECK(python::LineOfInstruction(11, std::vector<unsigned char>{0x05}, 10, 0) == 0);
  CHECK(python::LineOfInstruction(11, std::vector<unsigned char>{0x80 | (13 << 3), 0x40}, 10, 0) == 0);
  // 3.10 (Objects/lnotab_notes.txt): (bytes, line delta) pairs, -128 = no
  // line; instruction i is at byte 2i.
  const std::vector<unsigned char> t310 = {4, 0, 2, 3, 2, 0x80, 4, 0xfe};
  const uint32_t want310[] = {20, 20, 23, 0, 21, 21};
  for (uint32_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(python::LineOfInstruction(10, t310, 20, i) == want310[i]);
  }
}

TEST_CASE("CPython layouts: a table for 3.10 to 3.13, none for others; 3.13's own debug offsets") {
  for (int minor : {10, 11, 12, 13}) {
    CAPTURE(minor);
    const auto l = python::LayoutFor(minor);
    REQUIRE(l.has_value());
    CHECK(l->minor == minor);
    // Every field a frame read needs lies in the bytes read per frame.
    CHECK(l->frame_previous + 8 <= l->frame_bytes);
    CHECK(l->frame_code + 8 <= l->frame_bytes);
    CHECK(l->frame_globals + 8 <= l->frame_bytes);
    CHECK(l->frame_globals != l->frame_code);
    CHECK(l->frame_instr + 4 <= l->frame_bytes);
    CHECK(l->frame_bytes % 8 == 0);  // read as whole words
    // _finalizing comes just before the interpreters' list (its lock, then
    // its head) in _PyRuntimeState, 3.13 adding _finalizing_id between.
    CHECK(l->runtime_finalizing + (minor >= 13 ? 24 : 16) == l->runtime_interpreters_head);
  }
  CHECK_FALSE(python::LayoutFor(9).has_value());
  CHECK_FALSE(python::LayoutFor(14).has_value());
  // A _Py_DebugOffsets block as 3.13.0 fills it (values from a running
  // 3.13.0, Table A of the layout notes), with one field changed: the
  // reader takes the interpreter's word over the table.
  std::vector<unsigned char> block(600, 0);
  auto put = [&](size_t at, uint64_t v) { std::memcpy(block.data() + at, &v, 8); };
  std::memcpy(block.data(), "xdebugpy", 8);
  put(8, 0x030d00f0);
  put(32, 608);
  put(40, 632);
  put(64, 7264);
  put(72, 7344);
  put(168, 8);
  put(184, 72 + 8);  // current_frame moved by 8
  put(192, 152);
  put(208, 232);
  put(232, 8);
  put(240, 0);
  put(248, 56);
  put(264, 70);
  put(280, 112);
  put(288, 120);
  put(296, 128);
  put(304, 136);
  put(312, 68);
  put(344, 200);
  put(360, 8);
  put(520, 16);
  put(528, 32);
  put(544, 32);
  put(552, 16);
  put(560, 40);
  const auto l = python::LayoutFromDebugOffsets(block, 13);
  REQUIRE(l.has_value());
  CHECK(l->tstate_frame == 80);
  CHECK(l->runtime_finalizing == 608);
  CHECK(python::LayoutFor(13)->runtime_finalizing == 608);
  CHECK(l->code_instructions == 200);
  CHECK(l->compact_size == 56);
  CHECK(l->frame_bytes >= 72);
  CHECK(l->frame_bytes % 8 == 0);
  // Another cookie, another version, an implausible offset: not used.
  block[0] = 'y';
  CHECK_FALSE(python::LayoutFromDebugOffsets(block, 13).has_value());
  block[0] = 'x';
  put(8, 0x030e00f0);
  CHECK_FALSE(python::LayoutFromDebugOffsets(block, 13).has_value());
  put(8, 0x030d00f0);
  put(184, uint64_t{1} << 40);
  CHECK_FALSE(python::LayoutFromDebugOffsets(block, 13).has_value());
}

namespace {
std::atomic<int> g_fingerprints{0};
uint64_t CountingFingerprint(uintptr_t code) {
  g_fingerprints.fetch_add(1);
  return code ^ 0x5555;
}
}  // namespace

TEST_CASE("Python code ids: one per code address and globals, a freed address's next code object a new one") {
  REQUIRE(python::InitCodeIds());
  // Addresses of our own (the table is process-wide; nothing else in this
  // binary hands out ids).
  const uintptr_t code = 0x7e0000001230, main_globals = 0x7e0000100000, site_globals = 0x7e0000200000;
  const int before = g_fingerprints.load();
  const uint64_t a = python::CodeIdFor(code, site_globals, CountingFingerprint);
  CHECK(a != python::kNoCodeId);
  CHECK(python::CodeIdFor(code, site_globals, CountingFingerprint) == a);
  // The same address, another module: another code object, another id.
  const uint64_t b = python::CodeIdFor(code, main_globals, CountingFingerprint);
  CHECK(b != python::kNoCodeId);
  CHECK(b != a);
  CHECK(python::CodeIdFor(code, main_globals, CountingFingerprint) == b);
  CHECK(python::CodeIdFor(code, site_globals, CountingFingerprint) == a);
  // The fingerprint is taken once per new id, and kept with it.
  CHECK(g_fingerprints.load() - before == 2);
  python::CodeIdentity ia, ib;
  REQUIRE(python::CodeIdentityOf(a, &ia));
  REQUIRE(python::CodeIdentityOf(b, &ib));
  CHECK(ia.code == code);
  CHECK(ia.globals == site_globals);
  CHECK(ib.globals == main_globals);
  CHECK(ia.fingerprint == (code ^ 0x5555));
  CHECK(python::CodeIdEnd() > std::max(a, b));
  CHECK_FALSE(python::CodeIdentityOf(python::kNoCodeId, &ia));
  CHECK_FALSE(python::CodeIdentityOf(python::CodeIdEnd() + 5, &ia));
  // The id survives a round trip through a sample key.
  CHECK(PythonKeyCodeId(MakePythonKey(b, 7)) == b);
}

TEST_CASE("Python code ids: threads racing for the same new code objects agree on one id each") {
  REQUIRE(python::InitCodeIds());
  constexpr int kThreads = 4, kCodes = 2000;
  const uintptr_t base = 0x7d0000000000, globals = 0x7d1000000000;
  std::vector<std::vector<uint64_t>> seen(kThreads, std::vector<uint64_t>(kCodes));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2; ++round)
        for (int i = 0; i < kCodes; ++i) {
          const int c = (i * 7 + t * 13) % kCodes;  // each thread in its own order
          const uint64_t id = python::CodeIdFor(base + 0x100 * static_cast<uintptr_t>(c), globals, nullptr);
          if (round == 1) seen[t][c] = id;
        }
    });
  for (auto& th : threads) th.join();
  std::set<uint64_t> distinct;
  for (int c = 0; c < kCodes; ++c) {
    CAPTURE(c);
    CHECK(seen[0][c] != python::kNoCodeId);
    for (int t = 1; t < kThreads; ++t) CHECK(seen[t][c] == seen[0][c]);
    distinct.insert(seen[0][c]);
    python::CodeIdentity identity;
    REQUIRE(python::CodeIdentityOf(seen[0][c], &identity));
    CHECK(identity.code == base + 0x100 * static_cast<uintptr_t>(c));
  }
  CHECK(distinct.size() == kCodes);
  CHECK(python::CodeIdsOverflowed() == 0);
}
