// The RE2 adapter: the only code that includes RE2 (see pattern.h).
#include "cct/pattern.h"

#include <re2/re2.h>

#include "cct/text.h"

namespace cct {

namespace {

// Patterns and names in errors stay one readable line.
constexpr size_t kShownPatternColumns = 80;

// RE2's own words for the error, minus the fragment we place by position.
std::string Reason(const re2::RE2& re) {
  switch (re.error_code()) {
    case re2::RE2::ErrorBadEscape: return "invalid escape sequence";
    case re2::RE2::ErrorBadCharClass: return "invalid character class";
    case re2::RE2::ErrorBadCharRange: return "invalid character class range";
    case re2::RE2::ErrorMissingBracket: return "missing ]";
    case re2::RE2::ErrorMissingParen: return "missing )";
    case re2::RE2::ErrorUnexpectedParen: return "unexpected )";
    case re2::RE2::ErrorTrailingBackslash: return "trailing \\";
    case re2::RE2::ErrorRepeatArgument: return "repetition of nothing (*, + or ? must follow something)";
    case re2::RE2::ErrorRepeatSize: return "bad repetition count (at most 1000)";
    case re2::RE2::ErrorRepeatOp: return "bad repetition operator";
    case re2::RE2::ErrorBadPerlOp:
      return "unsupported Perl syntax (lookahead, lookbehind and backreferences take more than linear time)";
    case re2::RE2::ErrorBadUTF8: return "invalid UTF-8";
    case re2::RE2::ErrorBadNamedCapture: return "invalid named capture group";
    case re2::RE2::ErrorPatternTooLarge: return "pattern too large (it compiles to more than RE2's memory limit)";
    default: return re.error();
  }
}

// Where a parenthesis error is: RE2 names the whole pattern for these, so
// the position comes from a scan that skips escapes and character classes.
// `missing`: the last '(' left open; otherwise the first ')' with no '('.
size_t ParenErrorPosition(std::string_view p, bool missing) {
  std::vector<size_t> open;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
    } else if (p[i] == '[') {
      size_t j = i + 1;
      if (j < p.size() && p[j] == '^') ++j;
      if (j < p.size() && p[j] == ']') ++j;  // a leading ']' is a member
      while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2 : 1;
      i = j;
    } else if (p[i] == '(') {
      open.push_back(i);
    } else if (p[i] == ')') {
      if (open.empty()) {
        if (!missing) return i;
      } else {
        open.pop_back();
      }
    }
  }
  return missing && !open.empty() ? open.back() : std::string_view::npos;
}

}  // namespace

Result<Pattern> Pattern::Compile(std::string_view pattern, std::string_view what) {
  re2::RE2::Options options;
  options.set_log_errors(false);  // the error is ours to report, once, as a Status
  auto re = std::make_shared<const re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    // RE2 names the offending fragment; its first occurrence is where the
    // error starts (a missing ')' names the whole group from its '(').
    const std::string& arg = re->error_arg();
    size_t at = arg.empty() ? std::string_view::npos : pattern.find(arg);
    if (re->error_code() == re2::RE2::ErrorMissingParen || re->error_code() == re2::RE2::ErrorUnexpectedParen)
      at = ParenErrorPosition(pattern, re->error_code() == re2::RE2::ErrorMissingParen);
    else if (re->error_code() == re2::RE2::ErrorTrailingBackslash)
      at = pattern.size() - 1;
    std::string message = "invalid " + std::string(what) + " '" + ElideMiddle(pattern, kShownPatternColumns) + "'";
    if (at != std::string_view::npos) message += " at position " + std::to_string(at);
    message += ": " + Reason(*re);
    if (re->error_code() == re2::RE2::ErrorBadEscape && arg.size() == 2 && arg[1] >= '1' && arg[1] <= '9')
      message += " (backreferences take more than linear time: not supported)";
    return InvalidArgument(std::move(message));
  }
  return Pattern(std::move(re), std::string(pattern));
}

bool Pattern::Search(std::string_view text) const {
  return re2::RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

bool Pattern::Search(std::string_view text, std::vector<std::string_view>& groups) const {
  const int n = re_->NumberOfCapturingGroups();
  std::vector<re2::StringPiece> pieces(static_cast<size_t>(n) + 1);
  groups.clear();
  if (!re_->Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), re2::RE2::UNANCHORED, pieces.data(),
                  n + 1))
    return false;
  for (int i = 1; i <= n; ++i) groups.emplace_back(pieces[i].data(), pieces[i].size());
  return true;
}

std::vector<NodeId> OutermostMatches(const Tree& tree, const Pattern& pattern) {
  // Frames are matched on first use: a tree whose nodes share few frames
  // matches few names.
  std::vector<char> frame_match(tree.frames().size(), 0);  // 0 unknown, 1 no, 2 yes
  std::vector<char> inside(tree.size(), 0);
  std::vector<NodeId> roots;
  for (NodeId n = 1; n < tree.size(); ++n) {
    inside[n] = inside[tree.parent(n)];
    if (inside[n]) continue;
    char& m = frame_match[tree.frame_id(n)];
    if (m == 0) m = pattern.Search(tree.name(n)) ? 2 : 1;
    if (m == 2) {
      roots.push_back(n);
      inside[n] = 1;
    }
  }
  return roots;
}

}  // namespace cct
