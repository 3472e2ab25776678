#include "query/path_query.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>

#include "cct/node_values.h"
#include "cct/pattern.h"
#include "cct/text.h"

namespace query {

// Internal types, named (not anonymous) because PathQueryProgram, declared
// in the header, holds them.
namespace path_query_internal {

// Bounds that keep hostile queries cheap: every one is an error with a
// position, never a slow parse or a deep recursion.
constexpr size_t kMaxQueryBytes = 64 * 1024;
// Node steps after expanding {n,m}: the NFA's state set is one 64-bit word
// whose last bit is the accepting state.
constexpr size_t kMaxPathSteps = 63;
constexpr size_t kMaxPredicateNesting = 32;   // parentheses and `not`s
constexpr size_t kMaxComparisons = 256;       // per query
constexpr uint32_t kMaxRepetition = kMaxPathSteps;

enum class PqField : uint8_t { kName, kModule, kFile, kKind, kLine, kInc, kExc };
enum class PqOp : uint8_t { kEq, kNe, kMatch, kNoMatch, kLt, kLe, kGt, kGe };
// The unit a metric comparison's number was written in.
enum class PqScale : uint8_t { kDisplay, kPercent, kTime, kBytes };

struct PqComparison {
  PqField field = PqField::kName;
  PqOp op = PqOp::kEq;
  size_t pos = 0;        // of the field, for errors found when matching
  std::string text;      // string operand (name, module, file)
  std::optional<cct::Pattern> pattern;  // ~ and !~
  cct::FrameKind kind = cct::FrameKind::kFunction;
  double number = 0;     // line, or the metric threshold times `factor`
  PqScale scale = PqScale::kDisplay;
  std::string suffix;    // as written ("ms", "%"), for errors
  size_t metric = 0;     // index into PathQueryProgram::metrics
};

// Predicate expression nodes: leaves are comparisons; and/or are n-ary, so
// only parentheses and `not` nest (and that is bounded).
struct PqExpr {
  enum Type : uint8_t { kLeaf, kAnd, kOr, kNot } type = kLeaf;
  uint32_t leaf = 0;
  std::vector<uint32_t> kids;
};

enum class PqRep : uint8_t { kOne, kOptional, kStar };

struct PqAtom {
  int32_t pred = -1;  // expression root; -1: any node
  PqRep rep = PqRep::kOne;
};

}  // namespace path_query_internal

using path_query_internal::kMaxComparisons;
using path_query_internal::kMaxPathSteps;
using path_query_internal::kMaxPredicateNesting;
using path_query_internal::kMaxQueryBytes;
using path_query_internal::kMaxRepetition;
using path_query_internal::PqAtom;
using path_query_internal::PqComparison;
using path_query_internal::PqExpr;
using path_query_internal::PqField;
using path_query_internal::PqOp;
using path_query_internal::PqRep;
using path_query_internal::PqScale;

struct PathQueryProgram {
  std::vector<PqComparison> leaves;
  std::vector<PqExpr> exprs;
  std::vector<PqAtom> atoms;        // the expanded steps, in path order
  std::vector<std::string> metrics;  // distinct metric names, first-use order
  uint32_t predicates = 0;          // distinct predicates (bracketed steps)
};

namespace {

std::string Quote(std::string_view s) { return "'" + cct::ElideMiddle(s, 40) + "'"; }

// Messages quote pieces of the query (a field, a metric name, a regex in
// RE2's message): control characters in them, written \xNN, would break
// the one line.
std::string OneLine(std::string_view s) {
  std::string line;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      line += c;
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    line += "\\x";
    line += kHex[u >> 4];
    line += kHex[u & 15];
  }
  return line;
}

// A name step's bare word stops at separators, brackets, quantifiers and
// comparison operators (which belong inside brackets).
bool IsStepWordChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x80) return true;  // UTF-8 names
  if (std::isspace(u) || u < 0x20) return false;
  return std::string_view("/[](){}\"'*+?=~!<>&|").find(c) == std::string_view::npos;
}
// A bare word inside a predicate stops at what ends a comparison.
bool IsValueChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x80) return true;
  if (std::isspace(u)) return false;
  return std::string_view("[]()\"'=!<>~&|").find(c) == std::string_view::npos;
}
bool IsMetricChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || c == ':' || c == '.';
}

class PathQueryParser {
 public:
  explicit PathQueryParser(std::string_view text) : s_(text) {}

  cct::Status Parse(PathQueryProgram& prog) {
    prog_ = &prog;
    if (s_.size() > kMaxQueryBytes)
      return Error(kMaxQueryBytes, "the query is longer than " + std::to_string(kMaxQueryBytes) + " bytes");
    SkipSeparators();
    if (at_ >= s_.size()) return Error(at_, "empty query: expected a step ('.', '*', '+', '[PREDICATE]' or a name)");
    while (at_ < s_.size()) {
      CCT_RETURN_IF_ERROR(ParseStep());
      if (at_ >= s_.size()) break;
      const size_t before = at_;
      CCT_RETURN_IF_ERROR(SkipSeparatorsChecked());
      if (at_ == before) return Error(at_, "expected a space or '/' between steps");
    }
    return cct::Status::Ok();
  }

  size_t error_pos() const { return error_pos_; }

 private:
  cct::Status Error(size_t pos, const std::string& reason) {
    error_pos_ = pos;
    return cct::InvalidArgument("invalid query at position " + std::to_string(pos) + ": " + OneLine(reason));
  }

  void SkipSpace() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_]))) ++at_;
  }
  void SkipSeparators() {
    while (at_ < s_.size() && (std::isspace(static_cast<unsigned char>(s_[at_])) || s_[at_] == '/')) ++at_;
  }
  // Whitespace and single slashes; "//" is refused because XPath readers
  // would take it for "anywhere below", which `*` says here.
  cct::Status SkipSeparatorsChecked() {
    bool slash = false;
    while (at_ < s_.size()) {
      const char c = s_[at_];
      if (c == '/') {
        if (slash) return Error(at_, "'//' is not a step: write '*' for any number of nodes");
        slash = true;
      } else if (!std::isspace(static_cast<unsigned char>(c))) {
        break;
      }
      ++at_;
    }
    return cct::Status::Ok();
  }

  cct::Status AddAtoms(int32_t pred, PqRep rep, size_t count, size_t pos) {
    if (prog_->atoms.size() + count > kMaxPathSteps)
      return Error(pos, "the query has more than " + std::to_string(kMaxPathSteps) +
                            " node steps (after expanding repetitions)");
    for (size_t i = 0; i < count; ++i) prog_->atoms.push_back({pred, rep});
    return cct::Status::Ok();
  }

  // A quantifier right after an atom: `*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`.
  cct::Status ParseQuantified(int32_t pred, size_t atom_pos) {
    if (at_ >= s_.size()) return AddAtoms(pred, PqRep::kOne, 1, atom_pos);
    const char c = s_[at_];
    if (c == '*') {
      ++at_;
      return AddAtoms(pred, PqRep::kStar, 1, atom_pos);
    }
    if (c == '+') {
      ++at_;
      CCT_RETURN_IF_ERROR(AddAtoms(pred, PqRep::kOne, 1, atom_pos));
      return AddAtoms(pred, PqRep::kStar, 1, atom_pos);
    }
    if (c == '?') {
      ++at_;
      return AddAtoms(pred, PqRep::kOptional, 1, atom_pos);
    }
    if (c != '{') return AddAtoms(pred, PqRep::kOne, 1, atom_pos);
    const size_t open = at_++;
    uint32_t lo = 0, hi = 0;
    CCT_RETURN_IF_ERROR(ParseCount(lo));
    bool unbounded = false;
    if (at_ < s_.size() && s_[at_] == ',') {
      ++at_;
      if (at_ < s_.size() && s_[at_] == '}') unbounded = true;
      else CCT_RETURN_IF_ERROR(ParseCount(hi));
    } else {
      hi = lo;
    }
    if (at_ >= s_.size() || s_[at_] != '}') return Error(at_, "expected '}' to close the repetition");
    ++at_;
    if (!unbounded && hi < lo)
      return Error(open, "repetition {" + std::to_string(lo) + "," + std::to_string(hi) +
                             "}: the maximum is below the minimum");
    if (!unbounded && hi == 0) return Error(open, "repetition {0}: a step that matches no node");
    CCT_RETURN_IF_ERROR(AddAtoms(pred, PqRep::kOne, lo, open));
    if (unbounded) return AddAtoms(pred, PqRep::kStar, 1, open);
    return AddAtoms(pred, PqRep::kOptional, hi - lo, open);
  }

  cct::Status ParseCount(uint32_t& out) {
    const size_t start = at_;
    uint64_t v = 0;
    while (at_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[at_]))) {
      v = v * 10 + static_cast<uint64_t>(s_[at_++] - '0');
      if (v > kMaxRepetition)
        return Error(start, "repetition count above " + std::to_string(kMaxRepetition) + " (the step limit)");
    }
    if (at_ == start) return Error(at_, "expected a repetition count");
    out = static_cast<uint32_t>(v);
    return cct::Status::Ok();
  }

  cct::Status ParseStep() {
    const size_t pos = at_;
    const char c = s_[at_];
    if (c == '*' || c == '+') {
      ++at_;
      if (at_ < s_.size() && std::string_view("*+?{").find(s_[at_]) != std::string_view::npos)
        return Error(at_, std::string("a quantifier after '") + c + "': quantify '.' or '[PREDICATE]'");
      if (c == '*') return AddAtoms(-1, PqRep::kStar, 1, pos);
      CCT_RETURN_IF_ERROR(AddAtoms(-1, PqRep::kOne, 1, pos));
      return AddAtoms(-1, PqRep::kStar, 1, pos);
    }
    if (c == '.') {
      ++at_;
      return ParseQuantified(-1, pos);
    }
    if (c == '[') {
      ++at_;
      uint32_t root = 0;
      CCT_RETURN_IF_ERROR(ParseOr(root, 0));
      SkipSpace();
      if (at_ >= s_.size() || s_[at_] != ']')
        return Error(at_, at_ >= s_.size() ? "expected ']' to close the predicate opened at position " +
                                                 std::to_string(pos)
                                           : "expected 'and', 'or' or ']'");
      ++at_;
      ++prog_->predicates;
      return ParseQuantified(static_cast<int32_t>(root), pos);
    }
    if (c == '"' || c == '\'' || IsStepWordChar(c)) {
      // A name step: shorthand for [name = NAME].
      std::string name;
      CCT_RETURN_IF_ERROR(ParseString(name, /*in_step=*/true));
      if (at_ < s_.size() && std::string_view("*+?{").find(s_[at_]) != std::string_view::npos)
        return Error(at_, "a quantifier after a name: write [name=" + name + "]" + s_[at_] +
                              " (and [name~\"REGEX\"] for a pattern)");
      if (at_ < s_.size() && std::string_view("=~!<>").find(s_[at_]) != std::string_view::npos)
        return Error(at_, "a comparison goes inside brackets: [" + name + "...]");
      CCT_RETURN_IF_ERROR(CheckComparisons(pos));
      PqComparison cmp;
      cmp.field = PqField::kName;
      cmp.op = PqOp::kEq;
      cmp.pos = pos;
      cmp.text = std::move(name);
      const uint32_t root = AddLeaf(std::move(cmp));
      ++prog_->predicates;
      return AddAtoms(static_cast<int32_t>(root), PqRep::kOne, 1, pos);
    }
    return Error(pos, std::string("expected a step ('.', '*', '+', '[PREDICATE]' or a name), not ") +
                          Quote(std::string_view(&s_[pos], 1)));
  }

  uint32_t AddLeaf(PqComparison cmp) {
    prog_->leaves.push_back(std::move(cmp));
    PqExpr e;
    e.type = PqExpr::kLeaf;
    e.leaf = static_cast<uint32_t>(prog_->leaves.size() - 1);
    prog_->exprs.push_back(std::move(e));
    return static_cast<uint32_t>(prog_->exprs.size() - 1);
  }
  cct::Status CheckComparisons(size_t pos) {
    if (prog_->leaves.size() >= kMaxComparisons)
      return Error(pos, "the query has more than " + std::to_string(kMaxComparisons) + " comparisons");
    return cct::Status::Ok();
  }

  // Keywords are whole words: "order" is not "or" followed by "der".
  bool Keyword(std::string_view word, std::string_view symbol) {
    SkipSpace();
    if (!symbol.empty() && s_.substr(at_, symbol.size()) == symbol) {
      at_ += symbol.size();
      return true;
    }
    if (s_.substr(at_, word.size()) != word) return false;
    const size_t end = at_ + word.size();
    if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) return false;
    at_ = end;
    return true;
  }

  cct::Status ParseOr(uint32_t& out, size_t depth) {
    uint32_t first = 0;
    CCT_RETURN_IF_ERROR(ParseAnd(first, depth));
    if (!Keyword("or", "||")) {
      out = first;
      return cct::Status::Ok();
    }
    PqExpr e;
    e.type = PqExpr::kOr;
    e.kids.push_back(first);
    do {
      uint32_t next = 0;
      CCT_RETURN_IF_ERROR(ParseAnd(next, depth));
      e.kids.push_back(next);
    } while (Keyword("or", "||"));
    prog_->exprs.push_back(std::move(e));
    out = static_cast<uint32_t>(prog_->exprs.size() - 1);
    return cct::Status::Ok();
  }

  cct::Status ParseAnd(uint32_t& out, size_t depth) {
    uint32_t first = 0;
    CCT_RETURN_IF_ERROR(ParseUnary(first, depth));
    if (!Keyword("and", "&&")) {
      out = first;
      return cct::Status::Ok();
    }
    PqExpr e;
    e.type = PqExpr::kAnd;
    e.kids.push_back(first);
    do {
      uint32_t next = 0;
      CCT_RETURN_IF_ERROR(ParseUnary(next, depth));
      e.kids.push_back(next);
    } while (Keyword("and", "&&"));
    prog_->exprs.push_back(std::move(e));
    out = static_cast<uint32_t>(prog_->exprs.size() - 1);
    return cct::Status::Ok();
  }

  cct::Status ParseUnary(uint32_t& out, size_t depth) {
    SkipSpace();
    const size_t pos = at_;
    // "!=" and "!~" belong to comparisons; a lone '!' is `not`.
    const bool bang = at_ < s_.size() && s_[at_] == '!' && (at_ + 1 >= s_.size() || (s_[at_ + 1] != '=' && s_[at_ + 1] != '~'));
    if (bang || Keyword("not", "")) {
      if (bang) ++at_;
      if (depth + 1 > kMaxPredicateNesting)
        return Error(pos, "predicate nested deeper than " + std::to_string(kMaxPredicateNesting) + " levels");
      uint32_t kid = 0;
      CCT_RETURN_IF_ERROR(ParseUnary(kid, depth + 1));
      PqExpr e;
      e.type = PqExpr::kNot;
      e.kids.push_back(kid);
      prog_->exprs.push_back(std::move(e));
      out = static_cast<uint32_t>(prog_->exprs.size() - 1);
      return cct::Status::Ok();
    }
    if (at_ < s_.size() && s_[at_] == '(') {
      if (depth + 1 > kMaxPredicateNesting)
        return Error(pos, "predicate nested deeper than " + std::to_string(kMaxPredicateNesting) + " levels");
      ++at_;
      CCT_RETURN_IF_ERROR(ParseOr(out, depth + 1));
      SkipSpace();
      if (at_ >= s_.size() || s_[at_] != ')')
        return Error(at_, "expected ')' to close the parenthesis at position " + std::to_string(pos));
      ++at_;
      return cct::Status::Ok();
    }
    return ParseComparison(out);
  }

  cct::Status ParseComparison(uint32_t& out) {
    SkipSpace();
    const size_t pos = at_;
    CCT_RETURN_IF_ERROR(CheckComparisons(pos));
    size_t end = at_;
    while (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) ++end;
    const std::string_view word = s_.substr(at_, end - at_);
    PqComparison cmp;
    cmp.pos = pos;
    if (word == "name") cmp.field = PqField::kName;
    else if (word == "module") cmp.field = PqField::kModule;
    else if (word == "file") cmp.field = PqField::kFile;
    else if (word == "kind") cmp.field = PqField::kKind;
    else if (word == "line") cmp.field = PqField::kLine;
    else if (word == "inc") cmp.field = PqField::kInc;
    else if (word == "exc") cmp.field = PqField::kExc;
    else if (pos >= s_.size() || s_[pos] == ']')
      return Error(pos, "expected a comparison (name, module, file, kind, line, inc(METRIC) or exc(METRIC))");
    else
      return Error(pos, "unknown field " + Quote(word.empty() ? s_.substr(pos, 1) : word) +
                            " (name, module, file, kind, line, inc(METRIC) or exc(METRIC))");
    at_ = end;
    if (cmp.field == PqField::kInc || cmp.field == PqField::kExc) CCT_RETURN_IF_ERROR(ParseMetricArgument(cmp));
    SkipSpace();
    const size_t op_pos = at_;
    CCT_RETURN_IF_ERROR(ParseOperator(cmp.op));
    const bool text_field = cmp.field == PqField::kName || cmp.field == PqField::kModule || cmp.field == PqField::kFile;
    const bool ordered = cmp.op == PqOp::kLt || cmp.op == PqOp::kLe || cmp.op == PqOp::kGt || cmp.op == PqOp::kGe;
    const bool regex = cmp.op == PqOp::kMatch || cmp.op == PqOp::kNoMatch;
    if (regex && !text_field) return Error(op_pos, "'~' applies to name, module and file");
    if (ordered && (text_field || cmp.field == PqField::kKind))
      return Error(op_pos, "'<', '<=', '>', '>=' apply to line, inc() and exc()");
    SkipSpace();
    const size_t value_pos = at_;
    if (text_field) {
      CCT_RETURN_IF_ERROR(ParseString(cmp.text, /*in_step=*/false));
      if (regex) {
        auto p = cct::Pattern::Compile(cmp.text, "regular expression");
        if (!p.ok()) return Error(value_pos, p.status().message());
        cmp.pattern = std::move(*p);
      }
    } else if (cmp.field == PqField::kKind) {
      std::string kind;
      CCT_RETURN_IF_ERROR(ParseString(kind, /*in_step=*/false));
      std::optional<cct::FrameKind> k = kind == "gpu" ? cct::FrameKind::kGpuOp : cct::ParseFrameKind(kind);
      if (!k)
        return Error(value_pos, "unknown kind " + Quote(kind) +
                                    " (root, thread, function, nvtx, gpu, kernel, line, unknown or loop)");
      cmp.kind = *k;
    } else {
      CCT_RETURN_IF_ERROR(ParseNumber(cmp, value_pos));
    }
    out = AddLeaf(std::move(cmp));
    return cct::Status::Ok();
  }

  cct::Status ParseMetricArgument(PqComparison& cmp) {
    SkipSpace();
    if (at_ >= s_.size() || s_[at_] != '(') return Error(at_, "expected '(' and a metric name");
    ++at_;
    SkipSpace();
    const size_t pos = at_;
    std::string name;
    if (at_ < s_.size() && s_[at_] == '{') {
      const size_t close = s_.find('}', at_ + 1);
      if (close == std::string_view::npos) return Error(at_, "expected '}' to close the metric name");
      name = std::string(s_.substr(at_ + 1, close - at_ - 1));
      at_ = close + 1;
    } else {
      while (at_ < s_.size() && IsMetricChar(s_[at_])) ++at_;
      name = std::string(s_.substr(pos, at_ - pos));
    }
    if (name.empty()) return Error(pos, "expected a metric name (braces for other characters: {name})");
    SkipSpace();
    if (at_ >= s_.size() || s_[at_] != ')') return Error(at_, "expected ')' after the metric name");
    ++at_;
    auto& names = prog_->metrics;
    const auto it = std::find(names.begin(), names.end(), name);
    cmp.metric = static_cast<size_t>(it - names.begin());
    if (it == names.end()) names.push_back(std::move(name));
    cmp.text = names[cmp.metric];
    return cct::Status::Ok();
  }

  cct::Status ParseOperator(PqOp& op) {
    const std::string_view rest = s_.substr(at_);
    struct Spelling {
      std::string_view text;
      PqOp op;
    };
    static constexpr std::array<Spelling, 9> kOps = {{{"==", PqOp::kEq},
                                                      {"!=", PqOp::kNe},
                                                      {"!~", PqOp::kNoMatch},
                                                      {"<=", PqOp::kLe},
                                                      {">=", PqOp::kGe},
                                                      {"=", PqOp::kEq},
                                                      {"~", PqOp::kMatch},
                                                      {"<", PqOp::kLt},
                                                      {">", PqOp::kGt}}};
    for (const Spelling& sp : kOps)
      if (rest.starts_with(sp.text)) {
        op = sp.op;
        at_ += sp.text.size();
        return cct::Status::Ok();
      }
    return Error(at_, "expected an operator (=, !=, ~, !~, <, <=, >, >=)");
  }

  // A quoted string ("..." or '...', backslash escapes the quote and itself)
  // or a bare word.
  cct::Status ParseString(std::string& out, bool in_step) {
    out.clear();
    const size_t pos = at_;
    if (at_ < s_.size() && (s_[at_] == '"' || s_[at_] == '\'')) {
      const char quote = s_[at_++];
      while (at_ < s_.size() && s_[at_] != quote) {
        // \" and \\ stand for the quote and a backslash; any other
        // backslash stays, so a regex's \d and \. are written as in RE2.
        if (s_[at_] == '\\' && at_ + 1 < s_.size() && (s_[at_ + 1] == quote || s_[at_ + 1] == '\\')) ++at_;
        out += s_[at_++];
      }
      if (at_ >= s_.size()) return Error(pos, "unterminated string");
      ++at_;
      return cct::Status::Ok();
    }
    if (in_step) {
      while (at_ < s_.size() && IsStepWordChar(s_[at_])) ++at_;
    } else {
      while (at_ < s_.size() && IsValueChar(s_[at_])) ++at_;
    }
    if (at_ == pos) return Error(pos, "expected a value (a word or a quoted string)");
    out = std::string(s_.substr(pos, at_ - pos));
    return cct::Status::Ok();
  }

  cct::Status ParseNumber(PqComparison& cmp, size_t pos) {
    size_t end = at_;
    if (end < s_.size() && (s_[end] == '-' || s_[end] == '+')) ++end;
    bool digits = false;
    while (end < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[end])) || s_[end] == '.')) {
      digits |= s_[end] != '.';
      ++end;
    }
    if (digits && end < s_.size() && (s_[end] == 'e' || s_[end] == 'E')) {
      size_t e = end + 1;
      if (e < s_.size() && (s_[e] == '-' || s_[e] == '+')) ++e;
      if (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) {
        while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e]))) ++e;
        end = e;
      }
    }
    if (!digits) return Error(pos, "expected a number");
    const std::string number(s_.substr(at_, end - at_));
    char* stop = nullptr;
    const double v = std::strtod(number.c_str(), &stop);
    if (stop != number.c_str() + number.size() || !std::isfinite(v)) return Error(pos, "invalid number " + Quote(number));
    at_ = end;
    if (cmp.field == PqField::kLine) {
      if (v != std::floor(v)) return Error(pos, "a line number is a whole number");
      cmp.number = v;
      return cct::Status::Ok();
    }
    // Unit suffixes: percent of the run's total, time or bytes.
    SkipSpace();
    size_t suffix_end = at_;
    while (suffix_end < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[suffix_end])) || s_[suffix_end] == '%' ||
                                       static_cast<unsigned char>(s_[suffix_end]) >= 0x80))
      ++suffix_end;
    std::string_view suffix = s_.substr(at_, suffix_end - at_);
    // `and`/`or` after a unitless number are not suffixes.
    if (suffix == "and" || suffix == "or" || suffix == "not") suffix = {};
    double factor = 1;
    cmp.scale = PqScale::kDisplay;
    if (suffix.empty()) {
    } else if (suffix == "%") {
      cmp.scale = PqScale::kPercent;
      factor = 0.01;
    } else if (suffix == "s" || suffix == "ms" || suffix == "us" || suffix == "µs" || suffix == "ns") {
      cmp.scale = PqScale::kTime;
      factor = suffix == "s" ? 1e9 : suffix == "ms" ? 1e6 : suffix == "ns" ? 1 : 1e3;
    } else if (suffix == "B" || suffix == "KiB" || suffix == "MiB" || suffix == "GiB" || suffix == "TiB") {
      cmp.scale = PqScale::kBytes;
      factor = suffix == "B" ? 1 : suffix == "KiB" ? 1024.0 : suffix == "MiB" ? 1048576.0 : suffix == "GiB" ? 1073741824.0
                                                                                                        : 1099511627776.0;
    } else {
      return Error(at_, "unknown unit " + Quote(suffix) + " (%, s, ms, us, ns, B, KiB, MiB, GiB, TiB)");
    }
    if (!suffix.empty()) {
      cmp.suffix = std::string(suffix);
      at_ = suffix_end;
    }
    cmp.number = v * factor;
    return cct::Status::Ok();
  }

  std::string_view s_;
  size_t at_ = 0;
  size_t error_pos_ = 0;
  PathQueryProgram* prog_ = nullptr;
};

}  // namespace

cct::Result<PathQuery> PathQuery::Parse(std::string_view text, size_t* error_pos) {
  auto prog = std::make_shared<PathQueryProgram>();
  PathQueryParser parser(text);
  const cct::Status st = parser.Parse(*prog);
  if (!st.ok()) {
    if (error_pos) *error_pos = parser.error_pos();
    return st;
  }
  PathQuery q;
  q.text_ = std::string(text);
  q.program_ = std::move(prog);
  return q;
}

std::vector<std::string> PathQuery::MetricNames() const { return program_ ? program_->metrics : std::vector<std::string>(); }

// The NFA simulation. State i (bit i) means "the first i steps have matched
// the path down to here"; bit K (K steps) accepts. Each node's state set is
// its parent's advanced by the node, so one pass in id order (a parent's id
// is below its children's, the Tree's invariant) visits every path once,
// with no children index, and a node whose parent's set is empty costs one
// load.
struct PathQueryMatcher {
  static const PathQueryProgram* ProgramOf(const PathQuery& q) { return q.program_.get(); }

  const cct::Tree& tree;
  const PathQueryProgram& prog;
  std::vector<cct::MetricId> metric_ids;
  std::vector<const std::vector<double>*> inc, exc;  // by program metric index; null when unused
  std::vector<double> threshold;                      // per leaf, in stored units
  std::vector<cct::StringId> string_id;               // per leaf: the = / != operand's id (kNone: absent)
  std::vector<char> derived;                          // per leaf: reads a derived metric
  // Per regex leaf, its result per string id (0 unknown, 1 false, 2 true):
  // names repeat across nodes, the regex runs once per distinct string.
  std::vector<std::vector<uint8_t>> regex_memo;

  static constexpr cct::StringId kAbsent = cct::FlatIndex::kNone;

  cct::Status Prepare(cct::NodeValues& values) {
    for (const std::string& name : prog.metrics) {
      const cct::MetricId id = tree.metrics().Find(name);
      if (id == cct::kNoMetric) {
        std::string have;
        for (cct::MetricId m = 0; m < tree.metrics().size(); ++m)
          have += (have.empty() ? "" : ", ") + tree.metrics().Get(m).name;
        return cct::InvalidArgument("the query reads metric '" + OneLine(cct::ElideMiddle(name, 80)) +
                                    "', which the run does not have (it has: " + (have.empty() ? "none" : have) + ")");
      }
      metric_ids.push_back(id);
    }
    inc.assign(prog.metrics.size(), nullptr);
    exc.assign(prog.metrics.size(), nullptr);
    threshold.assign(prog.leaves.size(), 0);
    string_id.assign(prog.leaves.size(), kAbsent);
    derived.assign(prog.leaves.size(), 0);
    regex_memo.resize(prog.leaves.size());
    for (size_t i = 0; i < prog.leaves.size(); ++i) {
      const PqComparison& c = prog.leaves[i];
      if (c.field == PqField::kInc || c.field == PqField::kExc) {
        const cct::MetricId id = metric_ids[c.metric];
        const cct::MetricDesc& desc = tree.metrics().Get(id);
        const std::vector<double>& col = c.field == PqField::kInc ? values.Inclusive(id) : values.Exclusive(id);
        (c.field == PqField::kInc ? inc : exc)[c.metric] = &col;
        derived[i] = desc.kind == cct::MetricKind::kDerived;
        const std::string where = "query at position " + std::to_string(c.pos) + ": ";
        switch (c.scale) {
          case PqScale::kDisplay:
            // Numbers without a unit are in the unit reports show: seconds for times.
            threshold[i] = desc.unit == cct::Unit::kNanoseconds ? c.number * 1e9 : c.number;
            break;
          case PqScale::kPercent:
            if (desc.kind != cct::MetricKind::kAdditive)
              return cct::InvalidArgument(where + "'%' is a share of the run's total; " + desc.name +
                                          " is derived and has none");
            threshold[i] = c.number * values.Total(id);
            break;
          case PqScale::kTime:
            if (desc.unit != cct::Unit::kNanoseconds)
              return cct::InvalidArgument(where + "'" + c.suffix + "' is a time; " + desc.name + " is in " +
                                          std::string(cct::UnitName(desc.unit)));
            threshold[i] = c.number;
            break;
          case PqScale::kBytes:
            if (desc.unit != cct::Unit::kBytes)
              return cct::InvalidArgument(where + "'" + c.suffix + "' is a size; " + desc.name + " is in " +
                                          std::string(cct::UnitName(desc.unit)));
            threshold[i] = c.number;
            break;
        }
      } else if ((c.field == PqField::kName || c.field == PqField::kModule || c.field == PqField::kFile) &&
                 (c.op == PqOp::kEq || c.op == PqOp::kNe)) {
        string_id[i] = tree.strings().Find(c.text);
      }
    }
    return cct::Status::Ok();
  }

  bool Text(size_t leaf, cct::StringId id) {
    const PqComparison& c = prog.leaves[leaf];
    switch (c.op) {
      case PqOp::kEq: return string_id[leaf] != kAbsent && id == string_id[leaf];
      case PqOp::kNe: return string_id[leaf] == kAbsent || id != string_id[leaf];
      default: break;
    }
    std::vector<uint8_t>& memo = regex_memo[leaf];
    if (memo.empty()) memo.assign(tree.strings().size(), 0);
    uint8_t& r = memo[id];
    if (r == 0) r = c.pattern->Search(tree.strings().Get(id)) ? 2 : 1;
    return (r == 2) == (c.op == PqOp::kMatch);
  }

  static bool Compare(PqOp op, double a, double b) {
    if (std::isnan(a)) return false;
    switch (op) {
      case PqOp::kEq: return a == b;
      case PqOp::kNe: return a != b;
      case PqOp::kLt: return a < b;
      case PqOp::kLe: return a <= b;
      case PqOp::kGt: return a > b;
      case PqOp::kGe: return a >= b;
      default: return false;
    }
  }

  bool Leaf(size_t leaf, cct::NodeId n) {
    const PqComparison& c = prog.leaves[leaf];
    const cct::FrameId f = tree.frame_id(n);
    const cct::FrameTable& frames = tree.frames();
    switch (c.field) {
      case PqField::kName: return Text(leaf, frames.name(f));
      case PqField::kModule: return Text(leaf, frames.Get(f).module);
      case PqField::kFile: return Text(leaf, frames.Get(f).file);
      case PqField::kKind: return (frames.kind(f) == c.kind) == (c.op == PqOp::kEq);
      case PqField::kLine: return Compare(c.op, frames.Get(f).line, c.number);
      case PqField::kInc:
      case PqField::kExc: {
        const double v = (*(c.field == PqField::kInc ? inc : exc)[c.metric])[n];
        // A derived metric has no value where it is 0 (no operands, as
        // reports leave it blank) or NaN (a division by zero): no comparison
        // holds there, `!=` included.
        if (derived[leaf] && v == 0) return false;
        return Compare(c.op, v, threshold[leaf]);
      }
    }
    return false;
  }

  // Recursion is bounded by the parser's nesting limit.
  bool Eval(uint32_t e, cct::NodeId n) {
    const PqExpr& x = prog.exprs[e];
    switch (x.type) {
      case PqExpr::kLeaf: return Leaf(x.leaf, n);
      case PqExpr::kNot: return !Eval(x.kids[0], n);
      case PqExpr::kAnd:
        for (uint32_t k : x.kids)
          if (!Eval(k, n)) return false;
        return true;
      case PqExpr::kOr:
        for (uint32_t k : x.kids)
          if (Eval(k, n)) return true;
        return false;
    }
    return false;
  }

  PathQueryMatch Run() {
    const size_t steps = prog.atoms.size();
    const uint64_t accept = uint64_t{1} << steps;
    // closure[i]: state i and the states reachable from it by skipping
    // optional and starred steps.
    std::array<uint64_t, kMaxPathSteps + 1> closure{};
    for (size_t i = steps + 1; i-- > 0;) {
      closure[i] = uint64_t{1} << i;
      if (i < steps && prog.atoms[i].rep != PqRep::kOne) closure[i] |= closure[i + 1];
    }
    // Each step's predicate is evaluated at most once per node, however
    // many states ask (a repeated [P]{n} shares one predicate).
    std::vector<int32_t> pred_slot(prog.exprs.size(), -1);
    std::vector<uint8_t> atom_slot(steps, 0);
    uint32_t slots = 0;
    for (size_t i = 0; i < steps; ++i) {
      const int32_t p = prog.atoms[i].pred;
      if (p < 0) continue;
      if (pred_slot[p] < 0) pred_slot[p] = static_cast<int32_t>(slots++);
      atom_slot[i] = static_cast<uint8_t>(pred_slot[p]);
    }

    const size_t n = tree.size();
    PathQueryMatch m;
    m.end.assign(n, 0);
    m.on_path.assign(n, 0);
    std::vector<uint64_t> state(n, 0);
    state[cct::kRootNode] = closure[0];
    for (cct::NodeId v = 1; v < n; ++v) {
      const uint64_t from = state[tree.parent(v)] & ~accept;
      if (from == 0) continue;
      uint64_t evaluated = 0, holds = 0, next = 0;
      for (uint64_t bits = from; bits != 0; bits &= bits - 1) {
        const size_t i = static_cast<size_t>(std::countr_zero(bits));
        const PqAtom& a = prog.atoms[i];
        bool ok = true;
        if (a.pred >= 0) {
          const uint64_t slot = uint64_t{1} << atom_slot[i];
          if (!(evaluated & slot)) {
            evaluated |= slot;
            if (Eval(static_cast<uint32_t>(a.pred), v)) holds |= slot;
          }
          ok = (holds & slot) != 0;
        }
        if (ok) next |= a.rep == PqRep::kStar ? closure[i] : closure[i + 1];
      }
      state[v] = next;
      if (next & accept) {
        m.end[v] = 1;
        ++m.ends;
      }
    }
    // Ancestors of ends, in one reverse pass (children after parents).
    for (cct::NodeId v = static_cast<cct::NodeId>(n); v-- > 1;) {
      if (m.end[v] || m.on_path[v]) {
        m.on_path[v] = 1;
        m.on_path[tree.parent(v)] = 1;
      }
    }
    return m;
  }
};

cct::Result<PathQueryMatch> MatchPathQuery(const cct::Tree& tree, const PathQuery& query) {
  cct::NodeValues values(tree);
  return MatchPathQuery(tree, query, values);
}

cct::Result<PathQueryMatch> MatchPathQuery(const cct::Tree& tree, const PathQuery& query, cct::NodeValues& values) {
  const PathQueryProgram* prog = PathQueryMatcher::ProgramOf(query);
  if (!prog) return cct::InvalidArgument("an empty path query (PathQuery::Parse makes them)");
  PathQueryMatcher matcher{tree, *prog, {}, {}, {}, {}, {}, {}, {}};
  CCT_RETURN_IF_ERROR(matcher.Prepare(values));
  return matcher.Run();
}

std::string CaretLines(std::string_view query, size_t pos) {
  // Long queries are shown as a window around the position, with "…" where
  // cut; the caret counts display columns (code points), not bytes.
  constexpr size_t kBefore = 50, kAfter = 25;
  pos = std::min(pos, query.size());
  auto is_continuation = [&](size_t i) { return i < query.size() && (static_cast<unsigned char>(query[i]) & 0xC0) == 0x80; };
  size_t from = pos > kBefore ? pos - kBefore : 0;
  while (from > 0 && is_continuation(from)) --from;
  size_t to = std::min(query.size(), pos + kAfter);
  while (to < query.size() && is_continuation(to)) ++to;
  std::string line = from > 0 ? "…" : "";
  size_t column = from > 0 ? 1 : 0;
  for (size_t i = from; i < to; ++i) {
    const char c = query[i];
    // Control characters (a newline in the query) would break the picture.
    line += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  }
  if (to < query.size()) line += "…";
  column += cct::DisplayWidth(query.substr(from, pos - from));
  return "  " + line + "\n  " + std::string(column, ' ') + "^\n";
}

}  // namespace query
