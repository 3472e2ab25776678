// Writing a file whole or not at all: the content goes to PATH.tmp, which
// is renamed to PATH when complete, so a failed or interrupted write leaves
// no half file (and no PATH.tmp after a failure it sees). Used by cct-query
// -o and cct-diff --flame. Thread-compatible: concurrent writes of the same
// path race on PATH.tmp.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "cct/status.h"

namespace output {

// Calls `write` on a stream into PATH.tmp and renames it to `path` when
// `write` succeeds; kIo "cannot write PATH" when the file cannot be written.
cct::Status WriteFileAtomically(const std::string& path, const std::function<cct::Status(std::ostream&)>& write);

}  // namespace output
