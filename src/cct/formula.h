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

  friend class FormulaParser;
  std::string text_;
  std::vector<std::string> operands_;
  std::vector<Op> ops_;  // postfix
};

}  // namespace cct
