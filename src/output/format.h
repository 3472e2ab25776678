// Formatting for reports: values with units chosen for reading, percentages,
// names elided to fit a terminal column, CSV fields. Pure functions.
#pragma once

#include <string>
#include <string_view>

#include "cct/metric.h"
#include "cct/text.h"
#include "cct/tree_ops.h"

namespace output {

// "1.23 s", "456 ms", "78.9 µs", "12 ns", "1.5 KiB", "12,345" ... with three
// significant digits; `ascii` writes "us" for "µs". Zero is "0".
std::string FormatValue(double v, cct::Unit unit, bool ascii = false);
// "12.3%" (one decimal); empty when total is 0.
std::string FormatPercent(double part, double total);
// The value as JSON/CSV carry it: seconds for times, raw otherwise.
double ExportValue(double v, cct::Unit unit);
// Inverse of ExportValue (for importers of our own exports).
double ImportValue(double v, cct::Unit unit);

using cct::DisplayWidth;
using cct::ElideMiddle;
std::string PadLeft(std::string_view s, size_t width);
std::string PadRight(std::string_view s, size_t width);

// A CSV field, quoted when it must be (RFC 4180).
std::string CsvField(std::string_view s);
// Markdown (GitHub tables) for names from profiles: MarkdownText shows `s`
// as it is (the characters that start inline markup and the cell separator
// escaped); MarkdownCell only escapes the separator, for cells that are
// code spans (where backslash escapes are literal). In both, control
// characters become spaces: a newline or carriage return would end the
// table row.
std::string MarkdownText(std::string_view s);
std::string MarkdownCell(std::string_view s);
// A number the way CSV and JSON carry it: shortest exact form.
std::string NumberText(double v);

// Shortens "/usr/lib/x86_64-linux-gnu/libc.so.6" to "libc.so.6".
using cct::BaseName;

}  // namespace output
