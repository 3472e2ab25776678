// Fuzz target: the escaping of the text writers (src/output) for names
// that come from profiles, i.e. from any file or program:
//   JSON     JsonWriter::Escape and a whole document: the output parses
//            back (nlohmann) to the same string for valid UTF-8, and is
//            valid JSON whatever the bytes;
//   CSV      CsvField: one RFC 4180 field that reads back as the input;
//   markdown MarkdownText / MarkdownCell: no control characters (they
//            would end a table row), no unescaped '|', and MarkdownText
//            unescapes back to the input;
//   columns  ElideMiddle / PadLeft: the width asked for, and valid UTF-8
//            stays valid.
#include <nlohmann/json.hpp>
#include <sstream>

#include "output/format.h"
#include "output/json_writer.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

// RFC 4180: a field is either plain or quoted with "" for a quote.
std::optional<std::string> ReadCsvField(std::string_view f) {
  if (f.empty() || f.front() != '"') {
    if (f.find_first_of(",\"\n\r") != std::string_view::npos) return std::nullopt;
    return std::string(f);
  }
  if (f.size() < 2 || f.back() != '"') return std::nullopt;
  std::string out;
  for (size_t i = 1; i + 1 < f.size(); ++i) {
    if (f[i] == '"') {
      if (i + 2 >= f.size() || f[i + 1] != '"') return std::nullopt;
      ++i;
    }
    out.push_back(f[i]);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view s = fuzz::Bytes(data, size);
  const bool utf8 = ValidUtf8(s);

  // JSON.
  const std::string escaped = output::JsonWriter::Escape(s);
  const nlohmann::json one = nlohmann::json::parse(escaped, nullptr, false);
  FUZZ_CHECK(one.is_string());
  if (utf8) FUZZ_CHECK(one.get<std::string>() == s);
  std::ostringstream doc;
  output::JsonWriter w(doc, size % 2 == 0);
  w.BeginObject().Field(s, s).Key("list").BeginArray().String(s).Number(static_cast<double>(size)).EndArray();
  w.EndObject();
  const nlohmann::json parsed = nlohmann::json::parse(doc.str(), nullptr, false);
  FUZZ_CHECK(parsed.is_object() && parsed.size() == (parsed.contains("list") ? (s == "list" ? 1u : 2u) : 1u));

  // CSV.
  const auto csv = ReadCsvField(output::CsvField(s));
  FUZZ_CHECK(csv && *csv == s);

  // Markdown.
  const std::string text = output::MarkdownText(s), cell = output::MarkdownCell(s);
  for (const std::string* md : {&text, &cell})
    for (size_t i = 0; i < md->size(); ++i) {
      const auto c = static_cast<unsigned char>((*md)[i]);
      FUZZ_CHECK(c >= 0x20 && c != 0x7f);
      if (c == '|') FUZZ_CHECK(i > 0 && (*md)[i - 1] == '\\');
    }
  std::string unescaped;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      FUZZ_CHECK(i + 1 < text.size());
      ++i;
    }
    unescaped.push_back(text[i]);
  }
  std::string spaced(s);
  for (char& c : spaced)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  FUZZ_CHECK(unescaped == spaced);

  // Columns.
  for (size_t width : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}, size % 64})
    for (bool ascii : {false, true}) {
      const std::string e = output::ElideMiddle(s, width, ascii);
      if (output::DisplayWidth(s) <= width) FUZZ_CHECK(e == s);
      else FUZZ_CHECK(output::DisplayWidth(e) <= width);
      if (utf8) FUZZ_CHECK(ValidUtf8(e));
      FUZZ_CHECK(output::DisplayWidth(output::PadLeft(e, width)) == std::max(width, output::DisplayWidth(e)));
    }
  return 0;
}
