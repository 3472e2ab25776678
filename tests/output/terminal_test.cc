// Terminal manners in the library: --color modes, the text width's sources
// (--width, COLUMNS, the terminal), the locale's character set, and the text
// table's fitting (abbreviate before dropping; never drop for room the rows
// do not need; streaming).
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <sstream>

#include "output/format.h"
#include "output/terminal.h"
#include "output/text_table.h"

namespace {

// Sets an environment variable for one scope (empty: unset), then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

size_t WidestLine(const std::string& text) {
  size_t widest = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) widest = std::max(widest, output::DisplayWidth(line));
  return widest;
}

}  // namespace

TEST_CASE("--color: always, never, auto (a pipe is not a terminal), anything else an error") {
  CHECK(*output::UseColor("always"));
  CHECK(!*output::UseColor("never"));
  CHECK(!*output::UseColor("auto"));  // the test's stdout is not a terminal when run by meson; never coloured either way
  {
    ScopedEnv no_color("NO_COLOR", "1");
    CHECK(!*output::UseColor("auto"));
    CHECK(*output::UseColor("always"));  // an explicit request wins
  }
  auto bad = output::UseColor("sometimes");
  REQUIRE(!bad.ok());
  CHECK(bad.status().message() == "--color must be auto, always or never, not 'sometimes'");
}

TEST_CASE("text width: --width first, then COLUMNS (also on a pipe), then 80") {
  ScopedEnv columns("COLUMNS", nullptr);
  CHECK(output::TextWidth(std::nullopt) == 80);  // stdout is not a terminal here
  CHECK(output::TextWidth(0) == 0);
  CHECK(output::TextWidth(132) == 132);
  {
    ScopedEnv set("COLUMNS", "101");
    CHECK(output::TextWidth(std::nullopt) == 101);
    CHECK(output::TextWidth(40) == 40);
    CHECK(output::TextWidth(0) == 0);
  }
  for (const char* bad : {"", "abc", "0", "-5", "80x"}) {
    ScopedEnv set("COLUMNS", bad);
    CAPTURE(bad);
    CHECK(output::TextWidth(std::nullopt) == 80);
  }
}

TEST_CASE("the locale's character set decides UTF-8, also for a locale that is not installed") {
  ScopedEnv lc_ctype("LC_CTYPE", nullptr), lang("LANG", nullptr);
  {
    ScopedEnv all("LC_ALL", "C");
    CHECK(!output::LocaleIsUtf8());
  }
  {
    ScopedEnv all("LC_ALL", "POSIX");
    CHECK(!output::LocaleIsUtf8());
  }
  {
    ScopedEnv all("LC_ALL", "C.UTF-8");
    CHECK(output::LocaleIsUtf8());
  }
  {
    ScopedEnv all("LC_ALL", "xx_NOWHERE.UTF-8");  // not installed anywhere: judged by its name
    CHECK(output::LocaleIsUtf8());
  }
  {
    ScopedEnv all("LC_ALL", nullptr);
    CHECK(!output::LocaleIsUtf8());  // nothing set: the C locale
    ScopedEnv set_lang("LANG", "en_US.utf8");
    CHECK(output::LocaleIsUtf8());
  }
}

TEST_CASE("text table: a column stays when its rows leave the name the room it needs") {
  // Value columns of 5 + 2 and 7 + 2 columns, names of at most 6: the rows
  // need 16 + 6 = 22 columns; the old rule reserved 24 for names regardless.
  output::TextTable t({{"aaaaa", 0}, {"bbbbbbb", 1}}, "name");
  t.AddRow({"1", "2"}, "", "abcdef");
  t.AddRow({"3", "4"}, "", "xy");
  std::ostringstream unlimited, fits, narrower;
  t.Render(unlimited, 0, false);
  t.Render(fits, 22, false);
  CHECK(WidestLine(unlimited.str()) == 22);
  CHECK(fits.str() == unlimited.str());
  t.Render(narrower, 21, false);  // one column short: the droppable column goes
  CHECK(narrower.str().find("bbbbbbb") == std::string::npos);
  CHECK(narrower.str().find("aaaaa") != std::string::npos);
}

TEST_CASE("text table: headers are abbreviated before any column is dropped") {
  // Widths with long headers: 10 + 2 and 3 + 2, names 20: 37. Short headers
  // make the first column 4 wide: 31.
  output::TextTable t({{"per launch", 1, false, "each"}, {"SM", 2}}, "kernel");
  t.AddRow({"1 ms", "50%"}, "", std::string(20, 'k'));
  std::ostringstream wide, narrow, narrower;
  t.Render(wide, 37, false);
  CHECK(wide.str().find("per launch") != std::string::npos);
  t.Render(narrow, 31, false);
  CHECK(narrow.str().rfind("each   SM", 0) == 0);  // both columns kept, the first header shortened
  CHECK(narrow.str().find("50%") != std::string::npos);
  t.Render(narrower, 30, false);  // one column short even abbreviated: SM (drop 2) goes first
  CHECK(narrower.str().find("50%") == std::string::npos);
  CHECK(narrower.str().find("1 ms") != std::string::npos);
}

TEST_CASE("text table: streaming writes rows as they are added, in the widths the bounds promise") {
  output::TextTable t({{"value", 0}}, "name");
  std::ostringstream out;
  t.Stream(out, 0, false, 2, {9}, 0);
  t.AddRow({"1"}, "", "a");
  t.AddRow({"22"}, "", "b");
  CHECK(out.str().empty());  // still deciding: a table of two rows is laid out as a whole
  t.AddRow({"333"}, "", "c");
  // Past two rows: the header and the three rows are out, 9 columns wide (the bound).
  CHECK(out.str() == "    value  name\n        1  a\n       22  b\n      333  c\n");
  t.AddRow({"4444"}, "", "d");
  CHECK(out.str() == "    value  name\n        1  a\n       22  b\n      333  c\n     4444  d\n");  // at once
  t.Finish();

  // A short table never streams: laid out from its rows, as Render does.
  output::TextTable small({{"value", 0}}, "name");
  std::ostringstream streamed, rendered;
  small.Stream(streamed, 0, false, 10, {9}, 0);
  small.AddRow({"1"}, "", "a");
  small.Render(rendered, 0, false);
  CHECK(streamed.str().empty());
  small.Finish();
  CHECK(streamed.str() == rendered.str());
  CHECK(streamed.str() == "value  name\n    1  a\n");
}

TEST_CASE("text table: a streamed table keeps the columns that rows as deep as promised leave room for") {
  // Columns 5 + 2 and 1 + 2 wide: 10. Names need 24 behind the prefix. With
  // rows at most 6 columns deep the table needs 40: both columns stay at 40.
  // Promised 30 columns deep (the budget), it needs 64: the droppable one goes.
  auto render = [](size_t max_prefix) {
    output::TextTable t({{"value", 0}, {"%", 1}}, "name");
    std::ostringstream out;
    t.Stream(out, 40, false, 1, {5, 1}, max_prefix);
    t.AddRow({"1", "2"}, "", "a");
    t.AddRow({"3", "4"}, "|- ", "b");
    t.Finish();
    return out.str();
  };
  CHECK(render(6).find("value  %  name\n") == 0);
  CHECK(render(30).find("value  name\n") == 0);
}
