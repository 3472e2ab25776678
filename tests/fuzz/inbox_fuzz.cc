// Fuzz target: store::SplitInboxFrames (store/run_file.h), the frames of
// cct-record's inbox journal, and DecodeRunFile on each payload. Frames
// must tile the bytes: the payloads, their headers and a torn or damaged
// tail add up to the input, and a frame re-encodes to the bytes it came from.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "store/run_file.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const store::InboxFrames frames = store::SplitInboxFrames(bytes);
  size_t at = 0;
  for (std::string_view p : frames.payloads) {
    FUZZ_CHECK(p.data() == bytes.data() + at + store::kInboxHeaderSize);
    FUZZ_CHECK(store::InboxFrameHeader(p.size()) == bytes.substr(at, store::kInboxHeaderSize));
    at += store::kInboxHeaderSize + p.size();
    (void)store::DecodeRunFile(p);
  }
  FUZZ_CHECK(frames.torn + frames.damaged <= 1);
  FUZZ_CHECK((at == size) == !(frames.torn || frames.damaged));
  return 0;
}
