// cct::Pattern (RE2) and the helpers built on it: hostile patterns against
// huge names, error messages with positions, captures, outermost matches.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "cct/pattern.h"
#include "cct/text.h"
#include "cct/tree.h"

namespace {

cct::Pattern MustCompile(const std::string& p) {
  auto r = cct::Pattern::Compile(p, "test pattern");
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return std::move(r).value();
}

std::string ErrorOf(const std::string& p) {
  auto r = cct::Pattern::Compile(p, "--focus pattern");
  REQUIRE(!r.ok());
  CHECK(r.status().code() == cct::ErrorCode::kInvalidArgument);
  CHECK(r.status().message().find('\n') == std::string::npos);
  return r.status().message();
}

}  // namespace

TEST_CASE("pattern: catastrophic patterns against 10^5-character names stay linear") {
  // Backtracking engines (std::regex) take exponential time or overflow the
  // stack on these; the answers below follow from the names' construction.
  const std::string as(100000, 'a');
  const std::string xs(100000, 'x');
  struct Case {
    std::string pattern, text;
    bool match;
  };
  const Case cases[] = {
      {"(a|a)*b", as, false},
      {"(a|a)*b", as + "b", true},
      {"(a+)+$", as, true},
      {"^(a+)+$", as + "!", false},
      {"(x*)*y", xs, false},
      {"(x*)*y", xs + "y", true},
      {"(.*a){20}", as, true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.pattern);
    const auto start = std::chrono::steady_clock::now();
    CHECK(MustCompile(c.pattern).Search(c.text) == c.match);
    // A guard against a return to backtracking, not a speed target: linear
    // matching of 10^5 characters takes milliseconds, backtracking forever.
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  }
}

TEST_CASE("pattern: search semantics are std::regex_search's for ordinary patterns") {
  CHECK(MustCompile("read").Search("fread_unlocked"));
  CHECK_FALSE(MustCompile("^read$").Search("fread"));
  CHECK(MustCompile(R"(std::vector<\w+>::push_back)").Search("void std::vector<int>::push_back(int)"));
  CHECK(MustCompile(R"(\d+\.\d+)").Search("v1.25"));
  CHECK(MustCompile("kernel|gemm").Search("sgemm_128x64"));
  CHECK(MustCompile("").Search("anything"));
  CHECK(MustCompile("é").Search("café"));
  // Bytes that are not UTF-8 (names from files nobody vetted) are text too.
  CHECK(MustCompile("b").Search(std::string("a\xff\xfe" "b", 4)));
}

TEST_CASE("pattern: capture groups") {
  const cct::Pattern p = MustCompile(R"(-(\d+)-(\d+)-([0-9a-z]+)\.db$)");
  std::vector<std::string_view> g;
  REQUIRE(p.Search("prog-12-3-ab9.db", g));
  REQUIRE(g.size() == 3);
  CHECK(g[0] == "12");
  CHECK(g[1] == "3");
  CHECK(g[2] == "ab9");
  CHECK_FALSE(p.Search("prog-12-x-ab9.db", g));
  const cct::Pattern optional = MustCompile("a(b)?(c)");
  REQUIRE(optional.Search("ac", g));
  REQUIRE(g.size() == 2);
  CHECK(g[0].empty());
  CHECK(g[1] == "c");
}

TEST_CASE("pattern: invalid patterns name the position and the reason in one line") {
  CHECK(ErrorOf("(") == "invalid --focus pattern '(' at position 0: missing )");
  CHECK(ErrorOf("abc(def") == "invalid --focus pattern 'abc(def' at position 3: missing )");
  CHECK(ErrorOf("a)") == "invalid --focus pattern 'a)' at position 1: unexpected )");
  // Parentheses inside a class or escaped do not count.
  CHECK(ErrorOf("[(]a)").find("at position 4: unexpected )") != std::string::npos);
  CHECK(ErrorOf(R"(\(a))").find("at position 3: unexpected )") != std::string::npos);
  CHECK(ErrorOf("ab[").find("at position 2: missing ]") != std::string::npos);
  CHECK(ErrorOf("*a").find("at position 0: repetition of nothing") != std::string::npos);
  CHECK(ErrorOf("x\\").find("at position 1: trailing \\") != std::string::npos);
  CHECK(ErrorOf("x(?=y)").find("at position 1: unsupported Perl syntax") != std::string::npos);
  CHECK(ErrorOf(R"((a)\1)").find("at position 3") != std::string::npos);
  CHECK(ErrorOf(R"((a)\1)").find("backreferences") != std::string::npos);
  // A long pattern is shown cut in the middle; the message stays short.
  std::string long_pattern(5000, 'a');
  long_pattern += '(';  // (not operator+: GCC 12 warns falsely on it)
  const std::string e = ErrorOf(long_pattern);
  CHECK(e.size() < 200);
  CHECK(e.find("at position 5000: missing )") != std::string::npos);
}

TEST_CASE("pattern: OutermostMatches keeps the outermost match of each path") {
  // root ─ main ─ solve ─ solve_inner ─ solve_leaf
  //             └ io ─ solve_io
  cct::Tree t;
  auto fn = [&](const char* name) { return t.InternFrame(cct::FrameKind::kFunction, name); };
  const cct::NodeId main = t.InternChild(cct::kRootNode, fn("main"));
  const cct::NodeId solve = t.InternChild(main, fn("solve"));
  const cct::NodeId inner = t.InternChild(solve, fn("solve_inner"));
  t.InternChild(inner, fn("solve_leaf"));
  const cct::NodeId io = t.InternChild(main, fn("io"));
  const cct::NodeId solve_io = t.InternChild(io, fn("solve_io"));
  CHECK(cct::OutermostMatches(t, MustCompile("^solve")) == std::vector<cct::NodeId>{solve, solve_io});
  CHECK(cct::OutermostMatches(t, MustCompile("leaf|inner")) == std::vector<cct::NodeId>{inner});
  CHECK(cct::OutermostMatches(t, MustCompile("nothing")).empty());
}

TEST_CASE("text: ParseByteSize reads sizes with binary suffixes and refuses the rest") {
  CHECK(cct::ParseByteSize("0") == uint64_t{0});
  CHECK(cct::ParseByteSize("4096") == uint64_t{4096});
  CHECK(cct::ParseByteSize("4K") == uint64_t{4096});
  CHECK(cct::ParseByteSize("4kib") == uint64_t{4096});
  CHECK(cct::ParseByteSize("64M") == uint64_t{64} << 20);
  CHECK(cct::ParseByteSize("1G") == uint64_t{1} << 30);
  CHECK(cct::ParseByteSize("2TiB") == uint64_t{2} << 40);
  CHECK(cct::ParseByteSize("12b") == uint64_t{12});
  CHECK(cct::ParseByteSize("18446744073709551615") == UINT64_MAX);
  for (const char* bad : {"", "K", "-1", "1.5M", "4X", "4 K", "18446744073709551616", "16777216T", "1KB"})
    CHECK_MESSAGE(!cct::ParseByteSize(bad), bad);
}

TEST_CASE("text: ElideMiddle keeps both ends and whole code points") {
  CHECK(cct::ElideMiddle("short", 10) == "short");
  CHECK(cct::ElideMiddle("abcdefghij", 5) == "ab…ij");
  CHECK(cct::ElideMiddle("abcdefghij", 5, /*ascii=*/true) == "a...j");
  const std::string e = cct::ElideMiddle("ééééééééé", 5);
  CHECK(cct::DisplayWidth(e) == 5);
  CHECK(e == "éé…éé");
}

TEST_CASE("text: CutToBytes bounds a value, marks the cut, keeps whole code points") {
  CHECK(cct::CutToBytes("short", 64) == "short");
  const std::string big(100000, 'x');
  const std::string cut = cct::CutToBytes(big, 1000);
  CHECK(cut.size() <= 1000);
  CHECK(cut.find("…[") != std::string::npos);
  // The marker counts what is gone: the kept bytes and the count add up.
  const size_t open = cut.find("…["), close = cut.find(" bytes cut]…");
  REQUIRE(close != std::string::npos);
  const size_t removed = std::stoul(cut.substr(open + 4, close - open - 4));
  const size_t marker = close + std::string(" bytes cut]…").size() - open;
  CHECK(cut.size() - marker + removed == big.size());
  // Multi-byte characters are never split.
  std::string e;
  for (int i = 0; i < 5000; ++i) e += "é";
  const std::string ce = cct::CutToBytes(e, 999);
  CHECK(ce.size() <= 999);
  for (size_t i = 0; i < ce.size(); ++i)
    if ((static_cast<unsigned char>(ce[i]) & 0xC0) == 0x80) CHECK((static_cast<unsigned char>(ce[i - 1]) & 0x80) != 0);
}

TEST_CASE("tree: a frame name over kMaxNameBytes is stored cut") {
  cct::Tree t;
  const std::string huge = "ns::" + std::string(1 << 20, 'T') + "::f";
  const cct::FrameId f = t.InternFrame(cct::FrameKind::kFunction, huge, "/lib/" + std::string(200000, 'm') + ".so");
  const std::string_view name = t.str(t.frames().Get(f).name);
  CHECK(name.size() <= cct::kMaxNameBytes);
  CHECK(name.substr(0, 4) == "ns::");
  CHECK(name.substr(name.size() - 3) == "::f");
  CHECK(t.str(t.frames().Get(f).module).size() <= cct::kMaxNameBytes);
  // A 30,000-character name is ordinary and kept whole.
  const std::string ordinary(30000, 'a');
  CHECK(t.str(t.frames().Get(t.InternFrame(cct::FrameKind::kFunction, ordinary)).name) == ordinary);
}
