// Text measured and cut for terminals and single-line messages: display
// width in UTF-8 code points and middle elision that never splits a code
// point. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cct {

// Display width in terminal columns (UTF-8 code points).
size_t DisplayWidth(std::string_view s);
// Elides the middle of `s` so it fits `width` columns: "std::vec…push_back";
// `ascii` marks the cut with "..." instead of "…". Unchanged when it fits.
std::string ElideMiddle(std::string_view s, size_t width, bool ascii = false);

}  // namespace cct
