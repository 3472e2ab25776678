#include "output/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace output {

namespace {
// Length of the well-formed UTF-8 sequence starting at s[i], or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are invalid.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}
}  // namespace

// Names come from binaries and other tools' files and need not be UTF-8:
// bytes that are not well-formed UTF-8 become U+FFFD, so the output always
// parses as JSON. Runs of bytes that need nothing are appended at once.
void JsonWriter::AppendEscaped(std::string& out, std::string_view s) {
  out.push_back('"');
  size_t run = 0;  // s[run, i) is plain
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else if (const size_t n = Utf8Length(s, i)) {
          out.append(s.substr(i, n));
          i += n - 1;
        } else {
          out += "\xEF\xBF\xBD";  // U+FFFD
        }
    }
    run = i + 1;
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

std::string JsonWriter::Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  AppendEscaped(out, s);
  return out;
}

void JsonWriter::Flush() {
  if (buf_.empty()) return;
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

void JsonWriter::AfterValue() {
  constexpr size_t kFlushAt = 64 * 1024;
  if (first_.empty() || buf_.size() >= kFlushAt) Flush();
}

void JsonWriter::Newline() {
  if (!pretty_) return;
  buf_ += '\n';
  buf_.append(2 * first_.size(), ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) buf_ += ',';
    first_.back() = false;
    Newline();
  }
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  buf_ += '{';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::EndObject() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) Newline();
  buf_ += '}';
  AfterValue();
  return *this;
}
JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  buf_ += '[';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::EndArray() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) Newline();
  buf_ += ']';
  AfterValue();
  return *this;
}
JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  AppendEscaped(buf_, key);
  buf_ += pretty_ ? ": " : ":";
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::String(std::string_view s) {
  BeforeValue();
  AppendEscaped(buf_, s);
  AfterValue();
  return *this;
}
JsonWriter& JsonWriter::Number(double v) {
  BeforeValue();
  char buf[64];
  std::string_view text = "null";
  if (std::isnan(v) || std::isinf(v)) {
    // text stays null
  } else if (v == std::floor(v) && std::fabs(v) < 1e15) {
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v));
    text = std::string_view(buf, static_cast<size_t>(end - buf));
  } else {
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    text = std::string_view(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
  }
  buf_ += text;
  AfterValue();
  return *this;
}
JsonWriter& JsonWriter::Int(long long v) {
  BeforeValue();
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  buf_.append(buf, static_cast<size_t>(end - buf));
  AfterValue();
  return *this;
}
JsonWriter& JsonWriter::Bool(bool v) {
  BeforeValue();
  buf_ += v ? "true" : "false";
  AfterValue();
  return *this;
}
JsonWriter& JsonWriter::Null() {
  BeforeValue();
  buf_ += "null";
  AfterValue();
  return *this;
}

}  // namespace output
