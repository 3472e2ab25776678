#include "cct/text.h"

namespace cct {

size_t DisplayWidth(std::string_view s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

namespace {
// Byte offset of the code point that starts display column `cols`.
size_t ByteOffsetOfColumn(std::string_view s, size_t cols) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (seen == cols) return i;
      ++seen;
    }
  }
  return s.size();
}
}  // namespace

std::string ElideMiddle(std::string_view s, size_t width, bool ascii) {
  const size_t w = DisplayWidth(s);
  if (w <= width) return std::string(s);
  const std::string_view mark = ascii ? "..." : "…";
  const size_t mark_w = DisplayWidth(mark);
  if (width <= mark_w) return std::string(mark.substr(0, width));
  const size_t keep = width - mark_w;
  const size_t head = (keep + 1) / 2, tail = keep - head;
  std::string out(s.substr(0, ByteOffsetOfColumn(s, head)));
  out += mark;
  out += s.substr(ByteOffsetOfColumn(s, w - tail));
  return out;
}

}  // namespace cct
