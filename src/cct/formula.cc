#include "cct/formula.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace cct {

double Formula::Apply(Code code, double a, double b) {
  switch (code) {
    case Code::kAdd: return a + b;
    case Code::kSub: return a - b;
    case Code::kMul: return a * b;
    case Code::kDiv: return b == 0 ? std::numeric_limits<double>::quiet_NaN() : a / b;
    case Code::kMin: return std::fmin(a, b);
    case Code::kMax: return std::fmax(a, b);
    default: return 0;
  }
}

char Formula::Symbol(Code code) {
  switch (code) {
    case Code::kAdd: return '+';
    case Code::kSub: return '-';
    case Code::kMul: return '*';
    case Code::kDiv: return '/';
    case Code::kMin: return 'm';
    case Code::kMax: return 'M';
    default: return '?';
  }
}

// Recursive descent: expr := term (('+'|'-') term)*; term := unary (('*'|'/') unary)*;
// unary := '-' unary | primary; primary := number | name | '{' any '}' | fn '(' expr ',' expr ')' | '(' expr ')'.
class FormulaParser {
 public:
  explicit FormulaParser(std::string_view text) : s_(text) {}

  Status Run(Formula& f) {
    f_ = &f;
    CCT_RETURN_IF_ERROR(Expr(0));
    Skip();
    if (pos_ != s_.size()) return Error("unexpected '" + std::string(1, s_[pos_]) + "'");
    return Status::Ok();
  }

 private:
  static constexpr int kMaxNesting = 32;

  Status Error(const std::string& what) const {
    return InvalidArgument("formula '" + std::string(s_) + "': " + what + " at offset " +
                           std::to_string(pos_));
  }
  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    Skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void Emit(Formula::Code code, uint32_t index = 0, double value = 0) {
    f_->ops_.push_back(Formula::Op{code, index, value});
  }
  uint32_t OperandIndex(std::string name) {
    for (uint32_t i = 0; i < f_->operands_.size(); ++i)
      if (f_->operands_[i] == name) return i;
    f_->operands_.push_back(std::move(name));
    return static_cast<uint32_t>(f_->operands_.size() - 1);
  }

  Status Expr(int depth) {
    if (depth > kMaxNesting) return Error("nesting too deep");
    CCT_RETURN_IF_ERROR(Term(depth));
    for (;;) {
      if (Eat('+')) {
        CCT_RETURN_IF_ERROR(Term(depth));
        Emit(Formula::Code::kAdd);
      } else if (Eat('-')) {
        CCT_RETURN_IF_ERROR(Term(depth));
        Emit(Formula::Code::kSub);
      } else {
        return Status::Ok();
      }
    }
  }
  Status Term(int depth) {
    CCT_RETURN_IF_ERROR(Unary(depth));
    for (;;) {
      if (Eat('*')) {
        CCT_RETURN_IF_ERROR(Unary(depth));
        Emit(Formula::Code::kMul);
      } else if (Eat('/')) {
        CCT_RETURN_IF_ERROR(Unary(depth));
        Emit(Formula::Code::kDiv);
      } else {
        return Status::Ok();
      }
    }
  }
  Status Unary(int depth) {
    if (Eat('-')) {
      if (depth > kMaxNesting) return Error("nesting too deep");
      CCT_RETURN_IF_ERROR(Unary(depth + 1));
      Emit(Formula::Code::kNeg);
      return Status::Ok();
    }
    return Primary(depth);
  }
  Status Primary(int depth) {
    Skip();
    if (pos_ >= s_.size()) return Error("expression ends early");
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      CCT_RETURN_IF_ERROR(Expr(depth + 1));
      if (!Eat(')')) return Error("missing ')'");
      return Status::Ok();
    }
    if (c == '{') {
      const size_t close = s_.find('}', pos_);
      if (close == std::string_view::npos || close == pos_ + 1) return Error("bad {metric} reference");
      Emit(Formula::Code::kOperand, OperandIndex(std::string(s_.substr(pos_ + 1, close - pos_ - 1))));
      pos_ = close + 1;
      return Status::Ok();
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      double v = 0;
      const auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
      if (ec != std::errc()) return Error("bad number");
      pos_ = static_cast<size_t>(end - s_.data());
      Emit(Formula::Code::kConst, 0, v);
      return Status::Ok();
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == ':' ||
              s_[pos_] == '.'))
        ++pos_;
      std::string name(s_.substr(start, pos_ - start));
      if ((name == "min" || name == "max") && Eat('(')) {
        CCT_RETURN_IF_ERROR(Expr(depth + 1));
        if (!Eat(',')) return Error("expected ','");
        CCT_RETURN_IF_ERROR(Expr(depth + 1));
        if (!Eat(')')) return Error("missing ')'");
        Emit(name == "min" ? Formula::Code::kMin : Formula::Code::kMax);
        return Status::Ok();
      }
      Emit(Formula::Code::kOperand, OperandIndex(std::move(name)));
      return Status::Ok();
    }
    return Error("unexpected '" + std::string(1, c) + "'");
  }

  std::string_view s_;
  size_t pos_ = 0;
  Formula* f_ = nullptr;
};

Result<Formula> Formula::Parse(std::string_view text) {
  Formula f;
  f.text_ = std::string(text);
  FormulaParser parser(text);
  CCT_RETURN_IF_ERROR(parser.Run(f));
  CCT_RETURN_IF_ERROR(f.CheckDepth());
  return f;
}

// Stack depth is bounded by nesting; checked once per formula so Eval need not.
Status Formula::CheckDepth() const {
  int sp = 0, max_sp = 0;
  for (const Op& op : ops_) {
    if (op.code == Code::kConst || op.code == Code::kOperand) ++sp;
    else if (op.code != Code::kNeg) --sp;
    max_sp = std::max(max_sp, sp);
  }
  if (max_sp > kMaxDepth) return InvalidArgument("formula '" + text_ + "' is too complex");
  return Status::Ok();
}

Result<Formula> Formula::Inline(size_t operand, const Formula& sub) const {
  Formula out;
  out.text_ = text_;
  auto index_of = [&out](const std::string& name) {
    for (uint32_t i = 0; i < out.operands_.size(); ++i)
      if (out.operands_[i] == name) return i;
    out.operands_.push_back(name);
    return static_cast<uint32_t>(out.operands_.size() - 1);
  };
  // Operands keep first-use order in the result, as Parse gives it.
  for (const Op& op : ops_) {
    if (op.code != Code::kOperand) {
      out.ops_.push_back(op);
    } else if (op.index != operand) {
      out.ops_.push_back(Op{Code::kOperand, index_of(operands_[op.index]), 0});
    } else {
      for (const Op& inner : sub.ops_)
        out.ops_.push_back(inner.code == Code::kOperand ? Op{Code::kOperand, index_of(sub.operands_[inner.index]), 0}
                                                        : inner);
    }
  }
  CCT_RETURN_IF_ERROR(out.CheckDepth());
  return out;
}

}  // namespace cct
