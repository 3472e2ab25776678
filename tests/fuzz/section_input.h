// The unframed section records the section decoders' fuzz targets read and
// tests/fuzz/make_seeds.cc writes: kind u8, arg u16, length u16
// (little-endian), then the payload; a short last record takes what is left.
#pragma once

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "store/tree_codec.h"

namespace fuzz {

inline std::vector<store::Section> ParseSectionInput(std::string_view in) {
  std::vector<store::Section> out;
  size_t pos = 0;
  while (in.size() - pos >= 5 && out.size() < 64) {
    store::Section s;
    s.kind = static_cast<store::SectionKind>(static_cast<uint8_t>(in[pos]));
    uint16_t len = 0;
    std::memcpy(&s.arg, in.data() + pos + 1, 2);
    std::memcpy(&len, in.data() + pos + 3, 2);
    pos += 5;
    const size_t n = std::min<size_t>(len, in.size() - pos);
    s.payload.assign(in.substr(pos, n));
    pos += n;
    out.push_back(std::move(s));
  }
  return out;
}

inline std::string SectionInput(const std::vector<store::Section>& sections) {
  std::string out;
  for (const store::Section& s : sections) {
    if (s.payload.size() > 0xFFFF) continue;  // seeds are small trees
    const uint16_t len = static_cast<uint16_t>(s.payload.size());
    out.push_back(static_cast<char>(s.kind));
    out.append(reinterpret_cast<const char*>(&s.arg), 2);
    out.append(reinterpret_cast<const char*>(&len), 2);
    out += s.payload;
  }
  return out;
}

}  // namespace fuzz
