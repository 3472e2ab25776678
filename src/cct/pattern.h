// User-supplied regular expressions: --focus, --nodes, callers, --iteration,
// ncu metric selection, file-name parsing in importers.
//
// Every pattern runs against names read from files nobody vetted (a 30,000-
// character template name is ordinary), so matching must take time linear in
// the name and constant stack: the engine is RE2, and this is the only file
// pair that includes it (the adapter rule of docs/architecture.md). RE2's
// syntax is ECMAScript's without backreferences and lookaround; a pattern
// using those is rejected with its position, never run slowly.
//
// A Pattern is immutable once compiled and safe to share between threads
// (RE2 objects are thread-safe for matching). Copies share the compiled
// program. Matching may allocate (RE2's DFA cache): never call it from a
// signal handler.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"
#include "cct/tree.h"

namespace re2 {
class RE2;
}

namespace cct {

class Pattern {
 public:
  // Compiles `pattern`. `what` names it in the error ("--focus pattern"): the
  // message is one line, "invalid WHAT 'PATTERN' at position N: REASON", with
  // the pattern elided in the middle when it is long.
  static Result<Pattern> Compile(std::string_view pattern, std::string_view what);

  // True when the pattern matches somewhere in `text` (a search, not a full
  // match, as std::regex_search did).
  bool Search(std::string_view text) const;
  // The same, storing the capture groups (group 1 first) in `groups`; views
  // into `text`, empty for a group that did not take part.
  bool Search(std::string_view text, std::vector<std::string_view>& groups) const;

  const std::string& source() const { return source_; }

 private:
  Pattern(std::shared_ptr<const re2::RE2> re, std::string source) : re_(std::move(re)), source_(std::move(source)) {}
  std::shared_ptr<const re2::RE2> re_;
  std::string source_;
};

// The nodes whose name matches and no ancestor's does (a match inside a
// match is part of the outer subtree), in increasing id order.
std::vector<NodeId> OutermostMatches(const Tree& tree, const Pattern& pattern);

}  // namespace cct
