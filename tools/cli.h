// Shared helpers of the command-line tools: one error line and an exit
// status, tags, terminal width. The tools are thin: parsing and printing
// here, everything else in the libraries.
#pragma once

#include <boost/program_options.hpp>
#include <map>
#include <string>
#include <vector>

#include "cct/status.h"

namespace cli {

// Exit statuses of cct-query, cct-import and cct-diff.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;  // regressions (cct-diff), damaged runs (check)
inline constexpr int kExitError = 2;

// Prints "<tool> VERSION (git COMMIT)" on stdout: the answer to --version.
// The commit says which sources a profile's tools came from; it is left out
// when the tools were built outside a git checkout.
void PrintVersion(const std::string& tool);

// Prints "<tool>: <message>" on stderr and exits with `code`.
[[noreturn]] void Fail(const std::string& tool, const std::string& message, int code = kExitError);
// Same, for a Status.
[[noreturn]] void Fail(const std::string& tool, const cct::Status& status, int code = kExitError);

// From here on, an allocation that fails (an input bigger than the memory
// or the address-space limit allows) prints "<tool>: out of memory (…)" and
// exits with `code`, instead of std::bad_alloc ending the process in an
// abort. What was committed to a database stays; an open write transaction
// is simply not committed (LMDB).
void ExitOnOutOfMemory(const std::string& tool, int code = kExitError);

// Parses --db-mode: the permissions of a database the tool creates, in
// octal (600, 0640, 0660). The owner must be able to read and write it.
cct::Result<unsigned> ParseFileMode(const std::string& text);

// Parses the command line: the `visible` options and, after them, the
// positional arguments, collected as the (hidden) option `positional`.
// --help prints `visible` and exits 0, --version prints the version and
// exits 0; a malformed command line is one line and exit 2 ("(see TOOL
// --help)"). What each tool's main would otherwise repeat.
boost::program_options::variables_map ParseCommandLine(const std::string& tool, int argc, char** argv,
                                                       const boost::program_options::options_description& visible,
                                                       const std::string& positional);

// Parses repeated K=V options.
cct::Result<std::map<std::string, std::string>> ParseTags(const std::vector<std::string>& items);

// The terminal options, the same on every tool: --color always|never|auto
// on all four (a tool that prints nothing coloured still checks the value),
// and, on the tools that print text reports (`text`), --ascii and --width N.
void AddTerminalOptions(boost::program_options::options_description& options, bool text);

struct TerminalOptions {
  bool color = false;
  bool ascii = false;  // --ascii, or a locale whose character set is not UTF-8
  size_t width = 80;   // 0: no limit
};
// Reads them (output/terminal.h says how each default is found); a bad
// --color value is one error line and exit `code` (cct-record's own errors
// are 125: its other statuses are the program's).
TerminalOptions ReadTerminalOptions(const std::string& tool, const boost::program_options::variables_map& vm,
                                    int code = kExitError);

// Re-executes the tool once with glibc malloc tuned for large trees:
// transparent huge pages and a heap that is neither trimmed nor split into
// per-allocation mmaps. Reading a 10^6-node run touches ~60 MB; with 4 KiB
// pages most of a query's time went to page faults (docs/performance.md).
// glibc reads these tunables only at start-up, hence the exec. No-op when
// already tuned or when CCT_NO_MALLOC_TUNING is set. Not for cct-record: the
// variable would reach the profiled program.
void TuneAllocator(int argc, char** argv);

}  // namespace cli
