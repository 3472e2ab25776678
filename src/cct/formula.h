// Formula: the expression of a derived metric over additive metrics.
//
// Grammar: numbers, metric names ([A-Za-z_][A-Za-z0-9_:.]*, or any name in
// braces: {gker:count}), + - * /, unary minus, parentheses, min(a,b),
// max(a,b). Division by zero yields NaN, which reports show as "no value"
// (an average over zero launches has none). Immutable after Parse; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cct/status.h"

namespace cct {

class Formula {
 public:
  static Result<Formula> Parse(std::string_view text);

  // Metric names the formula reads, in first-use order; Eval's operand i is
  // the value of operands()[i].
  const std::vector<std::string>& operands() const { return operands_; }
  const std::string& text() const { return text_; }

  // This formula with operand `operand` replaced by `sub` (a derived
  // operand's own formula), so a formula over derived metrics becomes one
  // over additive metrics only. The text stays this formula's. An error when
  // the result is too deep to evaluate.
  Result<Formula> Inline(size_t operand, const Formula& sub) const;

  // Folds the formula's shape into another domain (units): `constant()` for
  // a number, `operand(i)`, `negate(x)`, and `binary(op, a, b)` with op one
  // of '+', '-', '*', '/', 'm' (min), 'M' (max).
  template <class T, class C, class O, class N, class B>
  T Fold(C&& constant, O&& operand, N&& negate, B&& binary) const {
    std::vector<T> stack;
    for (const Op& op : ops_) {
      switch (op.code) {
        case Code::kConst: stack.push_back(constant()); break;
        case Code::kOperand: stack.push_back(operand(op.index)); break;
        case Code::kNeg: stack.back() = negate(stack.back()); break;
        default: {
          T b = std::move(stack.back());
          stack.pop_back();
          stack.back() = binary(Symbol(op.code), stack.back(), b);
        }
      }
    }
    return stack.empty() ? constant() : stack.back();
  }

  // `operand(i)` returns the current value of operand i.
  template <class F>
  double Eval(F&& operand) const {
    double stack[kMaxDepth];
    int sp = 0;
    for (const Op& op : ops_) {
      switch (op.code) {
        case Code::kConst: stack[sp++] = op.value; break;
        case Code::kOperand: stack[sp++] = operand(op.index); break;
        case Code::kNeg: stack[sp - 1] = -stack[sp - 1]; break;
        default: {
          const double b = stack[--sp];
          stack[sp - 1] = Apply(op.code, stack[sp - 1], b);
        }
      }
    }
    return sp == 1 ? stack[0] : 0.0;
  }

 private:
  enum class Code : uint8_t { kConst, kOperand, kNeg, kAdd, kSub, kMul, kDiv, kMin, kMax };
  struct Op {
    Code code;
    uint32_t index = 0;
    double value = 0;
  };
  static constexpr int kMaxDepth = 64;
  static double Apply(Code code, double a, double b);
  static char Symbol(Code code);
  Status CheckDepth() const;

  friend class FormulaParser;
  std::string text_;
  std::vector<std::string> operands_;
  std::vector<Op> ops_;  // postfix
};

}  // namespace cct
