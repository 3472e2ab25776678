// JsonWriter: streaming JSON output with bounded memory.
//
// nlohmann::json parses and holds small documents (metadata); reports and
// exports of a million-node tree are written as they are produced instead of
// being built as a DOM first. Commas and nesting are tracked here; the caller
// only says what comes next. Not thread-safe; borrows the stream.
//
// Output is gathered in a buffer (a stream insertion per token was most of
// the time of a 7.7·10^5-node `tree --format json`) and reaches the stream
// at the end of each top-level value, when 64 KiB have gathered, and at
// Flush() or destruction: a caller writes to the stream itself only between
// top-level values.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace output {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out, bool pretty = false) : out_(out), pretty_(pretty) {}
  ~JsonWriter() { Flush(); }
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view s);
  JsonWriter& Number(double v);  // NaN and infinities are written as null
  JsonWriter& Int(long long v);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();

  // Key + value shorthands.
  JsonWriter& Field(std::string_view key, std::string_view s) { return Key(key).String(s); }
  JsonWriter& Field(std::string_view key, const char* s) { return Key(key).String(s); }
  JsonWriter& Field(std::string_view key, double v) { return Key(key).Number(v); }
  JsonWriter& FieldInt(std::string_view key, long long v) { return Key(key).Int(v); }

  static std::string Escape(std::string_view s);
  // The same appended to `out`.
  static void AppendEscaped(std::string& out, std::string_view s);
  void Flush();

 private:
  void BeforeValue();
  void AfterValue();  // a value ended: flushes at the top level or past the threshold
  void Newline();

  std::ostream& out_;
  bool pretty_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
  std::string buf_;
};

}  // namespace output
