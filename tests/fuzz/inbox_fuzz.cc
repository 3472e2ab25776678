// Fuzz target: store::SplitInboxFrames (store/run_file.h), the frames of
// cct-record's inbox journal, and DecodeRunFile on each payload. Frames
// must tile the bytes: the payloads, their headers and a torn or damaged
// tail add up to the input, and a frame re-encodes to the bytes it came from.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "store/run_file.h"

namespace {
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "property failed: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const store::InboxFrames frames = store::SplitInboxFrames(bytes);
  size_t at = 0;
  for (std::string_view p : frames.payloads) {
    Check(p.data() == bytes.data() + at + store::kInboxHeaderSize, "frames are back to back");
    Check(store::InboxFrameHeader(p.size()) == bytes.substr(at, store::kInboxHeaderSize), "header re-encodes");
    at += store::kInboxHeaderSize + p.size();
    (void)store::DecodeRunFile(p);
  }
  Check(frames.torn + frames.damaged <= 1, "one way to end");
  Check((at == size) == !(frames.torn || frames.damaged), "the rest is a torn or damaged frame");
  return 0;
}
