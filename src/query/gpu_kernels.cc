#include "query/gpu_kernels.h"

#include <vector>

namespace query {

namespace {

std::string CollapseSpaces(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (space) {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Removes a trailing balanced "(...)" (the parameter list) and anything
// after it such as " const".
std::string DropParameters(std::string s) {
  size_t end = s.size();
  while (end > 0 && s[end - 1] != ')') {
    // " const", " &&" after the list; stop at anything that looks like a name end.
    if (s[end - 1] == '>' || s[end - 1] == ']') return s;
    --end;
    if (end == 0) return s;
  }
  if (end == 0) return s;
  int depth = 0;
  for (size_t i = end; i-- > 0;) {
    if (s[i] == ')') ++depth;
    else if (s[i] == '(') {
      if (--depth == 0) {
        // "(anonymous namespace)" is part of a name, not a parameter list.
        if (s.compare(i, 21, "(anonymous namespace)") == 0) return s;
        s.resize(i);
        while (!s.empty() && s.back() == ' ') s.pop_back();
        return s;
      }
    }
  }
  return s;
}

// Drops "<...>" template argument lists (balanced), keeping operator< and
// friends intact.
std::string DropTemplates(std::string_view s) {
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' && !(i >= 8 && s.substr(i - 8, 8) == "operator")) {
      ++depth;
      continue;
    }
    if (c == '>' && depth > 0) {
      --depth;
      continue;
    }
    if (depth == 0) out.push_back(c);
  }
  return out;
}

// Drops a leading return type: everything up to the last space that is
// outside brackets ("void ns::k<a, b>" -> "ns::k<a, b>").
std::string DropReturnType(const std::string& s) {
  int depth = 0;
  size_t cut = std::string::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '(' || c == '[') ++depth;
    else if ((c == '>' || c == ')' || c == ']') && depth > 0) --depth;
    else if (c == ' ' && depth == 0) cut = i;
  }
  if (cut == std::string::npos) return s;
  // "(anonymous namespace)::k" has its space inside parentheses; "unsigned
  // int" style return types are dropped whole.
  return s.substr(cut + 1);
}

}  // namespace

std::string KernelSignatureName(std::string_view name) {
  return DropReturnType(DropParameters(CollapseSpaces(name)));
}

std::string NormalizeKernelName(std::string_view name) {
  std::string s = DropParameters(CollapseSpaces(name));
  s = CollapseSpaces(DropTemplates(s));
  return DropReturnType(s);
}

std::string KernelBaseName(std::string_view name) {
  const std::string n = NormalizeKernelName(name);
  const size_t colons = n.rfind("::");
  return colons == std::string::npos ? n : n.substr(colons + 2);
}

Bottleneck ClassifyBottleneck(double sm, double mem) {
  if (std::isnan(sm) || std::isnan(mem)) return Bottleneck::kUnknown;
  if (mem >= 60 && sm < 60) return Bottleneck::kMemory;
  if (sm >= 60 && mem < 60) return Bottleneck::kCompute;
  if (sm < 40 && mem < 40) return Bottleneck::kLatency;
  return Bottleneck::kMixed;
}

std::string_view BottleneckName(Bottleneck b) {
  switch (b) {
    case Bottleneck::kCompute: return "compute-bound";
    case Bottleneck::kMemory: return "memory-bound";
    case Bottleneck::kLatency: return "latency/occupancy-bound";
    case Bottleneck::kMixed: return "mixed";
    case Bottleneck::kUnknown: return "-";
  }
  return "-";
}

}  // namespace query
