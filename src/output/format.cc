#include "output/format.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace output {

namespace {

// "%.*f" of v. std::to_chars formats as printf does (the same correctly
// rounded digits) without its locale and stream machinery: a streamed tree
// formats four cells per row.
std::string_view FixedText(char (&buf)[64], double v, int decimals) {
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  return r.ec == std::errc() ? std::string_view(buf, static_cast<size_t>(r.ptr - buf)) : std::string_view();
}

// Three significant digits: 1.23, 12.3, 123, 1234 (no exponent).
std::string Sig3(double v) {
  char buf[64];
  const double a = std::fabs(v);
  const int decimals = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  std::string_view s = FixedText(buf, v, decimals);
  // Rounding can carry into another digit (9.995 -> "10.00"): redo with one
  // decimal fewer so the width stays three digits. The integer digits tell:
  // one before the point for 2 decimals, two for 1.
  if (decimals > 0) {
    const size_t digits = s.find('.') - (s.front() == '-' ? 1 : 0);
    if ((decimals == 2 && digits >= 2) || (decimals == 1 && digits >= 3)) s = FixedText(buf, v, decimals - 1);
  }
  return std::string(s);
}

std::string Scaled(double v, const double* steps, const char* const* names, int n) {
  const double a = std::fabs(v);
  int i = n - 1;
  while (i > 0 && a < steps[i] * 0.9995) --i;
  return Sig3(v / steps[i]) + " " + names[i];
}

}  // namespace

std::string FormatValue(double v, cct::Unit unit, bool ascii) {
  if (std::isnan(v)) return "";
  if (v == 0) return "0";
  switch (unit) {
    case cct::Unit::kNanoseconds: {
      static const double steps[] = {1, 1e3, 1e6, 1e9};
      static const char* const utf8[] = {"ns", "µs", "ms", "s"};
      static const char* const plain[] = {"ns", "us", "ms", "s"};
      if (std::fabs(v) >= 1e12) {  // beyond 1000 s: whole seconds read better
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.0f s", v / 1e9);
        return buf;
      }
      return Scaled(v, steps, ascii ? plain : utf8, 4);
    }
    case cct::Unit::kBytes: {
      if (std::fabs(v) < 1024 && v == std::floor(v)) return std::to_string(static_cast<long long>(v)) + " B";
      static const double steps[] = {1, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0};
      static const char* const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
      return Scaled(v, steps, names, 5);
    }
    case cct::Unit::kPercent: return Sig3(v) + "%";
    case cct::Unit::kCount:
    case cct::Unit::kNone: {
      if (v == std::floor(v) && std::fabs(v) < 1e6) return std::to_string(static_cast<long long>(v));
      if (std::fabs(v) < 1e6) return Sig3(v);
      static const double steps[] = {1, 1e3, 1e6, 1e9, 1e12};
      static const char* const names[] = {"", "k", "M", "G", "T"};
      std::string s = Scaled(v, steps, names, 5);
      s.erase(s.find(' '), 1);
      return s;
    }
  }
  return Sig3(v);
}

std::string FormatPercent(double part, double total) {
  if (total == 0 || std::isnan(part)) return "";
  char buf[64];
  std::string s(FixedText(buf, 100.0 * part / total, 1));
  s += '%';
  return s;
}

double ExportValue(double v, cct::Unit unit) { return unit == cct::Unit::kNanoseconds ? v / 1e9 : v; }
double ImportValue(double v, cct::Unit unit) { return unit == cct::Unit::kNanoseconds ? v * 1e9 : v; }

std::string PadLeft(std::string_view s, size_t width) {
  const size_t w = DisplayWidth(s);
  return (w < width ? std::string(width - w, ' ') : std::string()) + std::string(s);
}

std::string PadRight(std::string_view s, size_t width) {
  const size_t w = DisplayWidth(s);
  return std::string(s) + (w < width ? std::string(width - w, ' ') : std::string());
}

std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

namespace {
bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }
}  // namespace

std::string MarkdownText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (IsControl(c)) c = ' ';
    if (c == '|' || c == '\\' || c == '*' || c == '_' || c == '`') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string MarkdownCell(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '|') out += "\\|";
    else out.push_back(IsControl(c) ? ' ' : c);
  }
  return out;
}

std::string NumberText(double v) {
  if (std::isnan(v) || std::isinf(v)) return "";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string();
}


}  // namespace output
