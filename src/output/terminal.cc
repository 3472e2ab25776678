#include "output/terminal.h"

#include <langinfo.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <clocale>
#include <cstdlib>
#include <cstring>

namespace output {

cct::Result<bool> UseColor(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  if (mode != "auto") return cct::InvalidArgument("--color must be auto, always or never, not '" + mode + "'");
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string(term) == "dumb") return false;
  return isatty(STDOUT_FILENO) != 0;
}

size_t TextWidth(std::optional<size_t> given) {
  if (given) return *given;
  if (const char* cols = std::getenv("COLUMNS"); cols != nullptr && *cols != '\0') {
    char* end = nullptr;
    const long n = std::strtol(cols, &end, 10);
    // A malformed value is ignored like an unset one, as ls and less do.
    if (*end == '\0' && n > 0 && n < 100000) return static_cast<size_t>(n);
  }
  if (isatty(STDOUT_FILENO)) {
    struct winsize ws {};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  }
  return 80;
}

namespace {

bool NamesUtf8(const char* s) {
  if (s == nullptr) return false;
  return strcasestr(s, "utf-8") != nullptr || strcasestr(s, "utf8") != nullptr;
}

}  // namespace

bool LocaleIsUtf8() {
  // The process keeps the "C" locale it started with (number formatting in
  // reports and exports must not follow the user's locale): switch LC_CTYPE
  // only to ask, then back.
  const char* current = std::setlocale(LC_CTYPE, nullptr);
  const std::string saved = current != nullptr ? current : "C";
  bool utf8;
  if (std::setlocale(LC_CTYPE, "") != nullptr) {
    utf8 = NamesUtf8(nl_langinfo(CODESET));
  } else {
    // Not installed (a minimal container): the name is what the user meant.
    const char* name = nullptr;
    for (const char* var : {"LC_ALL", "LC_CTYPE", "LANG"}) {
      const char* v = std::getenv(var);
      if (v != nullptr && *v != '\0') {
        name = v;
        break;
      }
    }
    utf8 = NamesUtf8(name);
  }
  std::setlocale(LC_CTYPE, saved.c_str());
  return utf8;
}

}  // namespace output
