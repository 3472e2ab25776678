// Fuzz target: the CPython tables the collector reads from the profiled
// interpreter (collector/python/cpython_layout.h): a code object's line
// table, decoded for an instruction, and a 3.13 _Py_DebugOffsets block.
// Input: a byte choosing the version (3.10 to 3.13), 4 bytes of first line,
// 4 of instruction index, then the table (an exact-size heap copy, so a read
// past it is an ASan report). Properties: the decode is deterministic; a
// layout taken from the block keeps every frame field inside the bytes read
// per frame.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "collector/python/cpython_layout.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace collector::python;
  constexpr size_t kHead = 9;
  if (size < kHead) return 0;
  const int minor = 10 + data[0] % 4;
  int32_t first_line = 0;
  uint32_t index = 0;
  std::memcpy(&first_line, data + 1, 4);
  std::memcpy(&index, data + 5, 4);
  const std::vector<unsigned char> table(data + kHead, data + size);
  const uint32_t line = LineOfInstruction(minor, table, first_line, index);
  FUZZ_CHECK(line == LineOfInstruction(minor, table, first_line, index));
  if (const auto l = LayoutFromDebugOffsets(table, 13)) {
    FUZZ_CHECK(l->frame_previous + 8 <= l->frame_bytes);
    FUZZ_CHECK(l->frame_code + 8 <= l->frame_bytes);
    FUZZ_CHECK(l->frame_globals + 8 <= l->frame_bytes);
    FUZZ_CHECK(l->frame_instr + 8 <= l->frame_bytes);
    FUZZ_CHECK(static_cast<uint32_t>(l->frame_owner) + 1 <= l->frame_bytes);
  }
  return 0;
}
