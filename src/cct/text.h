// Text measured and cut for terminals and single-line messages: display
// width in UTF-8 code points and middle elision that never splits a code
// point. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cct {

// Display width in terminal columns (UTF-8 code points).
size_t DisplayWidth(std::string_view s);
// Elides the middle of `s` so it fits `width` columns: "std::vec…push_back";
// `ascii` marks the cut with "..." instead of "…". Unchanged when it fits.
std::string ElideMiddle(std::string_view s, size_t width, bool ascii = false);

// What is stored of a name or value longer than a size limit: `s` cut to
// at most `max_bytes` bytes by removing its middle and marking the cut,
// "head…[12345 bytes cut]…tail", never splitting a UTF-8 sequence;
// unchanged when it fits. `max_bytes` must be at least 64.
std::string CutToBytes(std::string_view s, size_t max_bytes);

// A size as users write it: a whole number of bytes with an optional
// binary suffix, K/KiB, M/MiB, G/GiB or T/TiB (case-insensitive; "64M" =
// 64 MiB). nullopt for anything else, negative numbers and overflow.
std::optional<uint64_t> ParseByteSize(std::string_view s);

// Frame names, modules and source files are stored at most this long
// (Tree::InternFrame cuts them). 64 KiB: a 30,000-character C++ template
// name is ordinary and kept whole; a megabyte "name" is a damaged or
// hostile input.
inline constexpr size_t kMaxNameBytes = 64 * 1024;

}  // namespace cct
