#include "query/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace query {

std::string JsonWriter::Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (unsigned char c : s) {
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
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

void JsonWriter::Newline() {
  if (!pretty_) return;
  out_ << '\n';
  for (size_t i = 0; i < first_.size(); ++i) out_ << "  ";
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ << ',';
    first_.back() = false;
    Newline();
  }
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_ << '{';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::EndObject() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) Newline();
  out_ << '}';
  return *this;
}
JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_ << '[';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::EndArray() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) Newline();
  out_ << ']';
  return *this;
}
JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  out_ << Escape(key) << (pretty_ ? ": " : ":");
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::String(std::string_view s) {
  BeforeValue();
  out_ << Escape(s);
  return *this;
}
JsonWriter& JsonWriter::Number(double v) {
  BeforeValue();
  if (std::isnan(v) || std::isinf(v)) {
    out_ << "null";
    return *this;
  }
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    out_ << static_cast<long long>(v);
    return *this;
  }
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out_ << std::string_view(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
  return *this;
}
JsonWriter& JsonWriter::Int(long long v) {
  BeforeValue();
  out_ << v;
  return *this;
}
JsonWriter& JsonWriter::Bool(bool v) {
  BeforeValue();
  out_ << (v ? "true" : "false");
  return *this;
}
JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ << "null";
  return *this;
}

}  // namespace query
