#include "cct/text.h"

#include <cstring>

namespace cct {

// Every byte but a continuation byte (10xxxxxx) starts a code point. Eight
// bytes at a time: a byte's bit 7 and the complement of its bit 6 (shifted
// up into bit 7) mark a continuation; the marks, moved down to one per byte,
// are added by a multiplication into the top byte (std::popcount is a
// library call on the baseline x86-64 this is built for). Each row of a
// large `tree` measures its cells, prefix and name (772,002 rows for a
// 10^7-node --depth 4).
size_t DisplayWidth(std::string_view s) {
  constexpr uint64_t kHigh = 0x8080808080808080ull, kOnes = 0x0101010101010101ull;
  size_t continuations = 0, i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    continuations += static_cast<size_t>((((x & ~(x << 1) & kHigh) >> 7) * kOnes) >> 56);
  }
  for (; i < s.size(); ++i) continuations += (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
  return s.size() - continuations;
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
  // "…" is one column of three bytes: cut by columns, not bytes.
  if (width <= mark_w) return std::string(mark.substr(0, ByteOffsetOfColumn(mark, width)));
  const size_t keep = width - mark_w;
  const size_t head = (keep + 1) / 2, tail = keep - head;
  std::string out(s.substr(0, ByteOffsetOfColumn(s, head)));
  out += mark;
  out += s.substr(ByteOffsetOfColumn(s, w - tail));
  return out;
}

std::string CutToBytes(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  // The marker's length depends on the count it prints; 32 bytes hold any.
  const size_t keep = max_bytes - 32;
  size_t head = keep * 2 / 3, tail_start = s.size() - (keep - head);
  // Back off to code point starts: a continuation byte is 10xxxxxx.
  auto continuation = [&](size_t i) { return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
  while (head > 0 && continuation(head)) --head;
  while (continuation(tail_start)) ++tail_start;
  std::string out(s.substr(0, head));
  out += "…[" + std::to_string(tail_start - head) + " bytes cut]…";
  out += s.substr(tail_start);
  return out;
}

std::optional<uint64_t> ParseByteSize(std::string_view s) {
  uint64_t n = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    const uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (n > (UINT64_MAX - d) / 10) return std::nullopt;
    n = n * 10 + d;
  }
  if (i == 0) return std::nullopt;
  std::string suffix;
  for (; i < s.size(); ++i) suffix += static_cast<char>(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]);
  int shift = 0;
  if (suffix.empty() || suffix == "B") shift = 0;
  else if (suffix == "K" || suffix == "KIB") shift = 10;
  else if (suffix == "M" || suffix == "MIB") shift = 20;
  else if (suffix == "G" || suffix == "GIB") shift = 30;
  else if (suffix == "T" || suffix == "TIB") shift = 40;
  else return std::nullopt;
  if (shift > 0 && n > (UINT64_MAX >> shift)) return std::nullopt;
  return n << shift;
}

}  // namespace cct
