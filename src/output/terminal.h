// Terminal manners every tool shares: how wide text may be, whether to
// colour it and whether the locale can show the Unicode tree glyphs (├─ └─ │)
// and units (µs). tools/cli.cc turns the options into these; the reports
// only see the answers (ReportOptions::width, ::ascii).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "cct/status.h"

namespace output {

// --color MODE: "always", "never" or "auto" (stdout a terminal, NO_COLOR
// unset or empty, TERM not "dumb"). Anything else: kInvalidArgument
// "--color must be auto, always or never".
cct::Result<bool> UseColor(const std::string& mode);

// The columns text may use: `given` (--width N; 0: no limit) when set, else
// $COLUMNS when it is a positive number (also when stdout is a pipe: the
// user said so), else the terminal's width when stdout is one, else 80.
size_t TextWidth(std::optional<size_t> given);

// Whether the locale's character set (LC_ALL, LC_CTYPE, LANG, as the C
// library resolves them) is UTF-8. A locale that is named but not installed
// is judged by its name ("de_DE.UTF-8"); an unset one is "C", not UTF-8.
bool LocaleIsUtf8();

}  // namespace output
