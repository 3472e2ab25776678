#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <sstream>

#include "output/format.h"
#include "output/json_writer.h"
#include "output/text_table.h"

using namespace output;
using cct::Unit;

TEST_CASE("values are shown with units chosen for reading") {
  CHECK(FormatValue(0, Unit::kNanoseconds) == "0");
  CHECK(FormatValue(1.5e9, Unit::kNanoseconds) == "1.50 s");
  CHECK(FormatValue(12.3456e9, Unit::kNanoseconds) == "12.3 s");
  CHECK(FormatValue(123e9, Unit::kNanoseconds) == "123 s");
  CHECK(FormatValue(4321e9, Unit::kNanoseconds) == "4321 s");
  CHECK(FormatValue(12345678, Unit::kNanoseconds) == "12.3 ms");
  CHECK(FormatValue(999.6, Unit::kNanoseconds) == "1.00 µs");
  CHECK(FormatValue(999.6, Unit::kNanoseconds, true) == "1.00 us");
  CHECK(FormatValue(42, Unit::kNanoseconds) == "42.0 ns");
  CHECK(FormatValue(9.996e6, Unit::kNanoseconds) == "10.0 ms");  // rounding carries: still 3 digits
  CHECK(FormatValue(100, Unit::kBytes) == "100 B");
  CHECK(FormatValue(1536, Unit::kBytes) == "1.50 KiB");
  CHECK(FormatValue(83886080, Unit::kBytes) == "80.0 MiB");
  CHECK(FormatValue(3.5 * 1073741824.0, Unit::kBytes) == "3.50 GiB");
  CHECK(FormatValue(12345, Unit::kCount) == "12345");
  CHECK(FormatValue(1.5e7, Unit::kCount) == "15.0M");
  CHECK(FormatValue(2.5, Unit::kCount) == "2.50");
  CHECK(FormatValue(256, Unit::kNone) == "256");
  CHECK(FormatValue(62.5, Unit::kPercent) == "62.5%");
  CHECK(FormatValue(-2e6, Unit::kNanoseconds) == "-2.00 ms");
  CHECK(FormatPercent(1, 3) == "33.3%");
  CHECK(FormatPercent(1, 0) == "");
}

TEST_CASE("names are elided in the middle to fit") {
  CHECK(ElideMiddle("abcdefghij", 20) == "abcdefghij");
  CHECK(ElideMiddle("abcdefghij", 5) == "ab…ij");
  CHECK(ElideMiddle("abcdefghij", 6) == "abc…ij");
  CHECK(ElideMiddle("abcdefghij", 6, true) == "ab...j");
  CHECK(DisplayWidth(ElideMiddle("αβγδεζηθικ", 5)) == 5);  // counts code points, never splits one
  CHECK(ElideMiddle("αβγδεζηθικ", 5) == "αβ…ικ");
  CHECK(DisplayWidth("├─ x") == 4);
  // Counted eight bytes at a time: against the definition, one code point
  // per byte that is not 10xxxxxx, on every length and alignment of random
  // bytes (valid UTF-8 or not).
  {
    std::mt19937 rng(5);
    size_t mismatches = 0;
    for (int round = 0; round < 2000; ++round) {
      std::string s(rng() % 40, '\0');
      for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? 0x80 | (rng() % 64) : rng() % 256);
      for (size_t from = 0; from <= std::min<size_t>(s.size(), 8); ++from) {
        const std::string_view v = std::string_view(s).substr(from);
        size_t expected = 0;
        for (unsigned char c : v) expected += (c >> 6) != 2;
        mismatches += DisplayWidth(v) != expected;
      }
    }
    CHECK(mismatches == 0);
  }
  CHECK(PadLeft("ab", 4) == "  ab");
  CHECK(PadRight("µs", 4) == "µs  ");
}

TEST_CASE("CSV fields and numbers") {
  CHECK(CsvField("plain") == "plain");
  CHECK(CsvField("a,b") == "\"a,b\"");
  CHECK(CsvField("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(NumberText(3) == "3");
  CHECK(NumberText(0.1) == "0.1");
  CHECK(NumberText(1e-9) == "1e-09");
  CHECK(ExportValue(1.5e9, Unit::kNanoseconds) == 1.5);
  CHECK(ImportValue(1.5, Unit::kNanoseconds) == 1.5e9);
  CHECK(ExportValue(7, Unit::kBytes) == 7);
}

TEST_CASE("JSON writer escapes and nests") {
  std::ostringstream out;
  JsonWriter w(out);
  w.BeginObject().Field("name", "a\"b\\c\n\x01").Key("list").BeginArray().Number(1.5).Int(-2).Null().Bool(true);
  w.Number(std::numeric_limits<double>::quiet_NaN()).EndArray().Key("empty").BeginObject().EndObject().EndObject();
  CHECK(out.str() == R"({"name":"a\"b\\c\n\u0001","list":[1.5,-2,null,true,null],"empty":{}})");
}

TEST_CASE("JSON writer: output reaches the stream at each top-level value's end, and as a large one grows") {
  std::ostringstream out;
  {
    JsonWriter w(out);
    w.BeginObject().Field("a", 1.0);
    // A caller may write between top-level values: the first is there.
    w.EndObject();
    CHECK(out.str() == R"({"a":1})");
    out << '\n';
    w.String("next");
    CHECK(out.str() == "{\"a\":1}\n\"next\"");
    // A large value is written as it grows, not held whole.
    w.BeginArray();
    size_t written_before_end = 0;
    for (int i = 0; i < 100000; ++i) w.Int(i);
    written_before_end = out.str().size();
    w.EndArray();
    CHECK(written_before_end > 100000);
    CHECK(out.str().size() > written_before_end);
    // Destroyed mid-value: what was written still reaches the stream.
    w.BeginArray().String("unfinished");
  }
  CHECK(out.str().ends_with(R"(,99999]["unfinished")"));
}

TEST_CASE("text tables drop columns in priority order to keep names readable") {
  TextTable t({{"a", 0}, {"b", 2}, {"c", 1}}, "name");
  t.AddRow({"1111111111", "2222222222", "3333333333"}, "", "a-long-function-name-here");
  std::ostringstream wide, narrow;
  t.Render(wide, 0, false);
  CHECK(wide.str().find("2222222222") != std::string::npos);
  t.Render(narrow, 50, false);
  // 3 columns of 10 + gaps leave 14 for the name; dropping b (the highest
  // drop priority) leaves 26, enough for the 24 a name needs.
  CHECK(narrow.str().find("2222222222") == std::string::npos);
  CHECK(narrow.str().find("3333333333") != std::string::npos);
  CHECK(narrow.str().find("a-long-function-name-here") != std::string::npos);
  for (const auto& line : {narrow.str()}) CHECK(line.size() > 0);
}

TEST_CASE("json escaping: invalid UTF-8 becomes U+FFFD, valid UTF-8 and controls are kept well-formed") {
  CHECK(output::JsonWriter::Escape("a\xff" "b") == "\"a\xEF\xBF\xBD" "b\"");
  CHECK(output::JsonWriter::Escape("\xC3\xA9t\xC3\xA9 \xC2\xB5s") == "\"\xC3\xA9t\xC3\xA9 \xC2\xB5s\"");
  CHECK(output::JsonWriter::Escape("\xE0\x80\x80") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");  // overlong
  CHECK(output::JsonWriter::Escape("\xED\xA0\x80") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");  // surrogate
  CHECK(output::JsonWriter::Escape("x\x01\"\\") == "\"x\\u0001\\\"\\\\\"");
  CHECK(output::JsonWriter::Escape("\xF0\x9F\x94\xA5") == "\"\xF0\x9F\x94\xA5\"");
}

TEST_CASE("markdown: control characters become spaces, the cell separator and markup are escaped") {
  CHECK(MarkdownText("a|b\nc") == "a\\|b c");
  CHECK(MarkdownText("x_y*z`\\") == "x\\_y\\*z\\`\\\\");
  CHECK(MarkdownText("\t\r\x01\x7f") == "    ");
  CHECK(MarkdownCell("`a|b`\r\n") == "`a\\|b`  ");
  CHECK(MarkdownCell("x_y*z") == "x_y*z");  // code spans: markup is literal there
}

TEST_CASE("ElideMiddle: one column of a non-ASCII ellipsis is the whole ellipsis, never part of its bytes") {
  // Found by tests/fuzz/output_fuzz.cc: width 1 cut "…" to its first byte.
  CHECK(ElideMiddle("abcdef", 1) == "…");
  CHECK(ElideMiddle("abcdef", 0) == "");
  CHECK(ElideMiddle("abcdef", 2, true) == "..");
  CHECK(ElideMiddle("abcdef", 4) == "ab…f");
}
