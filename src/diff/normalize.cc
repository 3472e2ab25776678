#include "diff/normalize.h"

#include <cctype>
#include <vector>

#include "cct/tree_ops.h"

namespace diff {

namespace {

constexpr std::string_view kAnonymousNamespace = "(anonymous namespace)";

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// "0x" followed by at least one hex digit and nothing else.
bool IsHexAddress(std::string_view s) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  for (size_t i = 2; i < s.size(); ++i)
    if (!IsHex(s[i])) return false;
  return true;
}

// A name that stands for a load module rather than a symbol.
bool LooksLikeModule(std::string_view s) {
  return s.find('/') != std::string_view::npos || s.find(".so") != std::string_view::npos ||
         s.ends_with(".dll") || s.ends_with(".exe") || s.ends_with(".dylib");
}

// Position of a trailing "+0xHEX" (optionally "/0xHEX", the kernel's
// offset/size form), or npos.
size_t OffsetSuffix(std::string_view s) {
  const size_t plus = s.rfind("+0x");
  if (plus == std::string_view::npos) return plus;
  std::string_view rest = s.substr(plus + 1);
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    if (!IsHexAddress(rest.substr(slash + 1))) return std::string_view::npos;
    rest = rest.substr(0, slash);
  }
  return IsHexAddress(rest) ? plus : std::string_view::npos;
}

// "MODULE+0xOFFSET" for an offset into a module: the module's identity
// (cct::ModuleIdentity: no directory, no version) and the offset as written.
std::string ModuleOffset(std::string_view module, std::string_view offset) {
  std::string out(cct::ModuleIdentity(module));
  out += offset;
  return out;
}

// Whether `base` names the module `module` (the frame's own): the
// collector names code no symbol names "FILE+0xOFFSET" after the module's
// file, which need not look like a library ("python3.11", "xz").
bool NamesModule(std::string_view base, std::string_view module) {
  return !module.empty() && cct::ModuleIdentity(base) == cct::ModuleIdentity(module);
}

// `module_offset` is set when the result is an offset into a module.
std::string StripAddresses(std::string_view s, std::string_view module, bool* module_offset) {
  // backtrace_symbols style: "./prog(func+0x21) [0x4008e5]".
  if (const size_t sp = s.rfind(" ["); sp != std::string_view::npos && s.ends_with("]") &&
                                      IsHexAddress(s.substr(sp + 2, s.size() - sp - 3)))
    s = Trim(s.substr(0, sp));
  if (s.ends_with(")")) {
    const size_t open = s.rfind('(');
    if (open != std::string_view::npos && open > 0) {
      const std::string_view inner = s.substr(open + 1, s.size() - open - 2);
      const size_t off = OffsetSuffix(inner);
      if (off != std::string_view::npos) {
        const std::string_view sym = inner.substr(0, off);
        if (!sym.empty()) return std::string(sym);
        *module_offset = true;
        return ModuleOffset(s.substr(0, open), inner);
      }
    }
  }
  bool bracketed = false;
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
    s = s.substr(1, s.size() - 2);
    bracketed = true;
  }
  if (IsHexAddress(s)) return "<address>";
  const size_t off = OffsetSuffix(s);
  if (off != std::string_view::npos) {
    const std::string_view base = s.substr(0, off);
    if (base.empty()) return "<address>";
    // An offset into a module is code at a fixed place in that file: two
    // offsets are two places (with FDE grouping, two functions), and the
    // same build puts them at the same offsets. Only a symbol's offset
    // ("foo+0x1a": where in foo) is dropped.
    if (LooksLikeModule(base) || NamesModule(base, module)) {
      *module_offset = true;
      return ModuleOffset(base, s.substr(off));
    }
    return std::string(base);
  }
  if (bracketed) {
    if (LooksLikeModule(s)) return std::string(cct::ModuleIdentity(s));
    return "[" + std::string(s) + "]";
  }
  return std::string(s);
}

// Replaces every occurrence of `from` in s.
void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// Drops the digits that follow `prefix` up to `terminator` ("$_12" -> "$_").
void DropNumbering(std::string& s, std::string_view prefix, std::string_view terminator) {
  for (size_t at = s.find(prefix); at != std::string::npos; at = s.find(prefix, at + 1)) {
    size_t end = at + prefix.size();
    while (end < s.size() && IsDigit(s[end])) ++end;
    if (end == at + prefix.size()) continue;
    if (!terminator.empty() && s.compare(end, terminator.size(), terminator) != 0) continue;
    s.erase(at + prefix.size(), end - at - prefix.size());
  }
}

void NormalizeNumbering(std::string& s) {
  ReplaceAll(s, "{anonymous}", kAnonymousNamespace);
  ReplaceAll(s, "`anonymous namespace'", kAnonymousNamespace);
  // _GLOBAL__N_1, _GLOBAL__N_foo.cc_12345678: the anonymous namespace's
  // assembler names, numbered per translation unit.
  for (size_t at = s.find("_GLOBAL__N_"); at != std::string::npos; at = s.find("_GLOBAL__N_", at + 1)) {
    size_t end = at + 11;
    while (end < s.size() && (IsIdent(s[end]) || s[end] == '.')) ++end;
    s.replace(at, end - at, kAnonymousNamespace);
  }
  // "{lambda(int, char)#3}": the argument list may nest parentheses.
  for (size_t at = s.find("{lambda("); at != std::string::npos; at = s.find("{lambda(", at + 1)) {
    size_t i = at + 7;
    int depth = 0;
    for (; i < s.size(); ++i) {
      if (s[i] == '(') ++depth;
      else if (s[i] == ')' && --depth == 0) break;
    }
    if (i + 1 >= s.size() || s[i + 1] != '#') continue;
    size_t end = i + 2;
    while (end < s.size() && IsDigit(s[end])) ++end;
    if (end < s.size() && s[end] == '}') s.erase(i + 2, end - i - 2);
  }
  DropNumbering(s, "{unnamed type#", "}");
  DropNumbering(s, "{closure#", "}");
  DropNumbering(s, "$_", "");
  DropNumbering(s, "'lambda", "'");
  DropNumbering(s, "'unnamed", "'");
  // MSVC: "<lambda_1>", "<lambda_8f3c2a...>".
  for (size_t at = s.find("<lambda_"); at != std::string::npos; at = s.find("<lambda_", at + 1)) {
    size_t end = at + 8;
    while (end < s.size() && IsHex(s[end])) ++end;
    if (end > at + 8 && end < s.size() && s[end] == '>') s.erase(at + 7, end - at - 7);
  }
}

// GCC/clang clone and split suffixes: foo.constprop.0.isra.0, foo.cold,
// foo.part.1, foo.lto_priv.0, foo.llvm.1234567, and demangled
// "foo(int) [clone .constprop.0]".
std::string StripCloneSuffixes(std::string s) {
  for (size_t at = s.find(" [clone ."); at != std::string::npos; at = s.find(" [clone .", at)) {
    const size_t end = s.find(']', at);
    if (end == std::string::npos) break;
    s.erase(at, end + 1 - at);
  }
  static const std::string_view kSuffixes[] = {"constprop", "isra",       "part", "cold", "clone", "lto_priv",
                                               "localalias", "llvm",      "str",  "hot",  "specialized"};
  for (bool again = true; again;) {
    again = false;
    // Trailing ".N" groups belong to the suffix before them.
    size_t end = s.size();
    while (end > 0) {
      size_t d = end;
      while (d > 0 && IsDigit(s[d - 1])) --d;
      if (d == end || d == 0 || s[d - 1] != '.') break;
      end = d - 1;
    }
    const size_t dot = s.rfind('.', end == 0 ? 0 : end - 1);
    if (dot == std::string::npos || dot == 0) break;
    const std::string_view word(s.data() + dot + 1, end - dot - 1);
    for (std::string_view suffix : kSuffixes) {
      if (word == suffix) {
        s.erase(dot);
        again = true;
        break;
      }
    }
  }
  return s;
}

// Scans C++ declarator text at nesting depth 0, treating "operator..." as one
// token so "operator()" and "operator<" do not open groups.
struct Scanner {
  std::string_view s;

  // Length of the operator token starting at i ("operator" + what follows),
  // or 0 when s[i..] does not start with the keyword.
  size_t OperatorLength(size_t i) const {
    if (s.compare(i, 8, "operator") != 0 || (i > 0 && IsIdent(s[i - 1]))) return 0;
    size_t j = i + 8;
    if (j < s.size() && IsIdent(s[j])) return 0;  // "operator_name"
    while (j < s.size() && s[j] == ' ') ++j;
    if (j >= s.size()) return j - i;
    if (IsIdent(s[j])) {  // new, delete, conversion operators
      while (j < s.size() && IsIdent(s[j])) ++j;
      if (s.compare(j, 2, "[]") == 0) j += 2;
      return j - i;
    }
    if (s.compare(j, 2, "()") == 0 || s.compare(j, 2, "[]") == 0) return j + 2 - i;
    if (s.compare(j, 2, "\"\"") == 0) {  // user-defined literal
      j += 2;
      while (j < s.size() && IsIdent(s[j])) ++j;
      return j - i;
    }
    while (j < s.size() && std::string_view("<>=!+-*/%^&|~,").find(s[j]) != std::string_view::npos) ++j;
    return j - i;
  }
};

bool OnlyQualifiers(std::string_view tail) {
  tail = Trim(tail);
  while (!tail.empty()) {
    bool matched = false;
    for (std::string_view q : {"const", "volatile", "noexcept", "override", "final", "&&", "&"}) {
      if (tail.starts_with(q) && (q[0] == '&' || tail.size() == q.size() || !IsIdent(tail[q.size()]))) {
        tail = Trim(tail.substr(q.size()));
        matched = true;
        break;
      }
    }
    if (!matched) return false;
  }
  return true;
}

// Removes template argument lists and lambda signatures from a qualified
// name: "ns::Foo<int>::{lambda(int)#}::operator()" -> "ns::Foo::{lambda}::operator()".
std::string StripTemplateArguments(std::string_view q) {
  Scanner sc{q};
  std::string out;
  for (size_t i = 0; i < q.size();) {
    if (const size_t op = sc.OperatorLength(i); op > 0) {
      out.append(q.substr(i, op));
      i += op;
      continue;
    }
    const char c = q[i];
    if (c == '<') {
      int depth = 0;
      size_t j = i;
      for (; j < q.size(); ++j) {
        if (q[j] == '<') ++depth;
        else if (q[j] == '>' && --depth == 0) break;
      }
      i = j + 1;
      continue;
    }
    if (q.compare(i, 8, "{lambda(") == 0) {
      const size_t close = q.find('}', i);
      if (close != std::string_view::npos) {
        out += "{lambda}";
        i = close + 1;
        continue;
      }
    }
    out.push_back(c);
    ++i;
  }
  return out;
}

}  // namespace

namespace {
std::string NormalizeAddresses(std::string_view name, std::string_view module, bool* module_offset) {
  std::string s = StripAddresses(Trim(name), module, module_offset);
  if (!*module_offset) NormalizeNumbering(s);
  return s;
}
}  // namespace

std::string NormalizeAddressesAndNumbering(std::string_view name, std::string_view module) {
  bool module_offset = false;
  return NormalizeAddresses(name, module, &module_offset);
}

std::string QualifiedBaseName(std::string_view name) {
  const std::string stripped = StripCloneSuffixes(std::string(Trim(name)));
  const std::string_view s = stripped;
  // Markers such as "[unknown]" or "<address>" have no declarator syntax.
  if (s.empty() || s.front() == '[' || s.front() == '<') return stripped;

  // Find the parameter list: the last top-level (...) followed only by
  // qualifiers. Top-level spaces separate the return type from the name.
  Scanner sc{s};
  size_t params = std::string_view::npos;
  std::vector<size_t> spaces;  // top-level spaces before the parameter list
  int depth = 0;
  for (size_t i = 0; i < s.size();) {
    if (depth == 0) {
      if (const size_t op = sc.OperatorLength(i); op > 0) {
        i += op;
        continue;
      }
    }
    const char c = s[i];
    if (c == '(' || c == '<' || c == '[' || c == '{') {
      if (depth == 0 && c == '(' && i > 0) {
        // Find its end to test the tail.
        int d = 0;
        size_t j = i;
        for (; j < s.size(); ++j) {
          if (s[j] == '(') ++d;
          else if (s[j] == ')' && --d == 0) break;
        }
        if (j < s.size() && OnlyQualifiers(s.substr(j + 1))) {
          params = i;
          break;
        }
      }
      ++depth;
    } else if (c == ')' || c == '>' || c == ']' || c == '}') {
      if (depth > 0) --depth;
    } else if (c == ' ' && depth == 0 && !(i + 1 < s.size() && s[i + 1] == '<')) {
      // (A space before '<' separates "operator<" from its template
      // arguments, not words.)
      spaces.push_back(i);
    }
    ++i;
  }
  std::string_view qualified = s.substr(0, params);
  // The qualified name is the last top-level word; earlier words are the
  // return type ("void", "std::vector<int> const&", "unsigned long").
  for (auto it = spaces.rbegin(); it != spaces.rend(); ++it) {
    if (*it + 1 < qualified.size()) {
      const std::string_view word = Trim(qualified.substr(*it + 1));
      if (!word.empty() && word != "const" && word != "*" && word != "&") {
        qualified = word;
        break;
      }
    }
  }
  while (!qualified.empty() && (qualified.front() == '*' || qualified.front() == '&')) qualified.remove_prefix(1);
  const std::string out(Trim(StripTemplateArguments(Trim(qualified))));
  return out.empty() ? stripped : out;
}

std::string NormalizeName(std::string_view name, const NormalizeOptions& options, std::string_view module) {
  bool module_offset = false;
  std::string s = NormalizeAddresses(name, module, &module_offset);
  if (options.kernels && !module_offset) s = QualifiedBaseName(s);
  return s;
}

}  // namespace diff
