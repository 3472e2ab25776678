// JsonWriter: streaming JSON output with bounded memory.
//
// nlohmann::json parses and holds small documents (metadata); reports and
// exports of a million-node tree are written as they are produced instead of
// being built as a DOM first. Commas and nesting are tracked here; the caller
// only says what comes next. Not thread-safe; borrows the stream.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace output {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out, bool pretty = false) : out_(out), pretty_(pretty) {}

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

 private:
  void BeforeValue();
  void Newline();

  std::ostream& out_;
  bool pretty_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace output
