// Fuzz target: importers::PieceChecker, the importers' limit on one line,
// JSON value or piece of XML markup, fed in chunks of arbitrary sizes. The
// property: whatever the chunking, it refuses exactly the inputs a plain
// whole-buffer scan (below, written separately) finds a too-long piece in,
// and names the line that piece starts on.
#include <optional>
#include <string>

#include "importers/importer.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using importers::PieceKind;

bool JsonStructure(char c) {
  return c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':' || c == ' ' || c == '\n' || c == '\t' ||
         c == '\r';
}

// The line the first piece longer than `max` starts on, if any.
std::optional<uint64_t> FirstTooLong(std::string_view in, PieceKind kind, size_t max) {
  uint64_t line = 1;
  if (kind == PieceKind::kJsonTokens) {
    size_t i = 0;
    while (i < in.size()) {
      const char c = in[i];
      if (c == '"') {  // a string: to its closing quote, past escaped characters
        const uint64_t start_line = line;
        size_t j = i + 1;
        bool escaped = false;
        for (; j < in.size(); ++j) {
          if (in[j] == '\n') ++line;
          if (escaped) escaped = false;
          else if (in[j] == '\\') escaped = true;
          else if (in[j] == '"') break;
        }
        // Bytes from the opening quote to the closing one, or to the end.
        const size_t len = (j < in.size() ? j + 1 : in.size()) - i;
        if (len > max) return start_line;
        i = j + 1;
      } else if (JsonStructure(c)) {
        if (c == '\n') ++line;
        ++i;
      } else {  // a run of number or literal characters
        size_t j = i;
        while (j < in.size() && in[j] != '"' && !JsonStructure(in[j])) ++j;
        if (j - i > max) return line;
        i = j;
      }
    }
    return std::nullopt;
  }
  const bool xml = kind == PieceKind::kXmlMarkup;
  size_t start = 0;
  uint64_t start_line = 1;
  for (size_t i = 0; i <= in.size(); ++i) {
    const bool end = i == in.size();
    const bool delim = !end && (xml ? (in[i] == '<' || in[i] == '>') : in[i] == '\n');
    if (!end && in[i] == '\n') ++line;
    if (!delim && !end) continue;
    if (i - start > max) return start_line;
    start = i + 1;
    start_line = line;
  }
  return std::nullopt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const PieceKind kind = static_cast<PieceKind>(data[0] % 3);
  const size_t max = 1 + data[1] % 48;
  const uint8_t chunking = data[2];
  const std::string_view in = fuzz::Bytes(data + 3, size - 3);

  importers::PieceChecker checker("in", importers::PieceLimit{kind, max});
  cct::Status st = cct::Status::Ok();
  // Chunks of 1..16 bytes, the sizes drawn from the chunking byte.
  uint32_t state = chunking * 2654435761u + 1;
  for (size_t at = 0; at < in.size() && st.ok();) {
    state = state * 1103515245u + 12345u;
    const size_t n = std::min<size_t>(in.size() - at, 1 + (state >> 16) % 16);
    st = checker.Feed(in.data() + at, n);
    at += n;
  }
  const std::optional<uint64_t> expected = FirstTooLong(in, kind, max);
  FUZZ_CHECK(st.ok() == !expected.has_value());
  if (expected) {
    FUZZ_CHECK(st.code() == cct::ErrorCode::kBadInput);
    FUZZ_CHECK(st.message().find("line " + std::to_string(*expected) + " is longer than") != std::string::npos);
  }
  return 0;
}
