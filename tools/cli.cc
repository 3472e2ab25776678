#include "tools/cli.h"

#include "cctdb_config.h"
#include "tools/cctdb_version.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <iostream>
#include <new>
#include <optional>

#include "output/terminal.h"

namespace cli {

void PrintVersion(const std::string& tool) {
  const std::string commit = CCTDB_GIT_COMMIT;
  std::cout << tool << ' ' << CCTDB_VERSION;
  if (!commit.empty() && commit != "unknown") std::cout << " (git " << commit << ')';
  std::cout << '\n';
}

void Fail(const std::string& tool, const std::string& message, int code) {
  std::cout.flush();
  std::string line = tool + ": " + message;
  // One line: embedded newlines would split the message.
  for (char& c : line)
    if (c == '\n') c = ' ';
  std::fprintf(stderr, "%s\n", line.c_str());
  std::exit(code);
}

void Fail(const std::string& tool, const cct::Status& status, int code) { Fail(tool, status.message(), code); }

namespace {

// Preformatted: the handler runs when memory has run out, so it allocates
// nothing (write(2) and _exit).
char g_oom_message[256];
size_t g_oom_message_len = 0;
int g_oom_code = kExitError;

void OnOutOfMemory() {
  ssize_t ignored = ::write(STDERR_FILENO, g_oom_message, g_oom_message_len);
  (void)ignored;
  ::_exit(g_oom_code);
}

}  // namespace

void ExitOnOutOfMemory(const std::string& tool, int code) {
  const std::string line = tool + ": out of memory (the input needs more than this process may allocate)\n";
  g_oom_message_len = std::min(line.size(), sizeof g_oom_message);
  std::memcpy(g_oom_message, line.data(), g_oom_message_len);
  g_oom_code = code;
  std::set_new_handler(OnOutOfMemory);
}

cct::Result<unsigned> ParseFileMode(const std::string& text) {
  unsigned mode = 0;
  bool ok = !text.empty() && text.size() <= 4;
  for (char c : text) {
    ok = ok && c >= '0' && c <= '7';
    mode = mode * 8 + static_cast<unsigned>(c - '0');
  }
  if (!ok || mode > 0777)
    return cct::InvalidArgument("--db-mode must be octal permissions such as 600 or 0640, not '" + text + "'");
  if ((mode & 0600) != 0600)
    return cct::InvalidArgument("--db-mode " + text + " would not let you read and write the database (needs 600)");
  return mode;
}

boost::program_options::variables_map ParseCommandLine(const std::string& tool, int argc, char** argv,
                                                       const boost::program_options::options_description& visible,
                                                       const std::string& positional) {
  namespace po = boost::program_options;
  po::options_description hidden;
  hidden.add_options()(positional.c_str(), po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add(positional.c_str(), -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    Fail(tool, std::string(e.what()) + " (see " + tool + " --help)");
  }
  if (vm.count("help")) {
    std::cout << visible << '\n';
    std::exit(kExitOk);
  }
  if (vm.count("version")) {
    PrintVersion(tool);
    std::exit(kExitOk);
  }
  return vm;
}

cct::Result<std::map<std::string, std::string>> ParseTags(const std::vector<std::string>& items) {
  std::map<std::string, std::string> tags;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return cct::InvalidArgument("bad tag '" + item + "' (expected KEY=VALUE)");
    tags[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return tags;
}

void TuneAllocator(int argc, char** argv) {
  (void)argc;
  static const char kTunables[] =
      "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=4294967295:"
      "glibc.malloc.trim_threshold=4294967295:glibc.malloc.top_pad=67108864";
  if (std::getenv("CCT_NO_MALLOC_TUNING") != nullptr) return;
  const char* have = std::getenv("GLIBC_TUNABLES");
  if (have != nullptr && std::strstr(have, "glibc.malloc.hugetlb") != nullptr) return;
  std::string value = have != nullptr && *have != '\0' ? std::string(have) + ":" + kTunables : kTunables;
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // exec failed (no /proc): run untuned, and keep the environment as it was.
  if (have != nullptr) setenv("GLIBC_TUNABLES", have, 1);
  else unsetenv("GLIBC_TUNABLES");
}

void AddTerminalOptions(boost::program_options::options_description& options, bool text) {
  namespace po = boost::program_options;
  options.add_options()("color", po::value<std::string>(),
                        "auto|always|never (default auto: a terminal without NO_COLOR)");
  if (!text) return;
  options.add_options()("ascii", "draw trees and units with ASCII only (default when the locale is not UTF-8)")(
      "width", po::value<size_t>(),
      "fit text to N columns (default: $COLUMNS, else the terminal's, else 80; 0: no limit)");
}

TerminalOptions ReadTerminalOptions(const std::string& tool, const boost::program_options::variables_map& vm,
                                    int code) {
  TerminalOptions t;
  auto color = output::UseColor(vm.count("color") ? vm["color"].as<std::string>() : "auto");
  if (!color.ok()) Fail(tool, color.status(), code);
  t.color = *color;
  t.ascii = vm.count("ascii") > 0 || !output::LocaleIsUtf8();
  t.width = output::TextWidth(vm.count("width") ? std::optional<size_t>(vm["width"].as<size_t>()) : std::nullopt);
  return t;
}

}  // namespace cli
