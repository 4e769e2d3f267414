// Quoting of strings that come from a file or a user, for error messages: the quoted text is
// always printable, whatever bytes the string holds, so the message after it is never lost.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace ugrad {

/// Longest part of a string that quote() shows before cutting it.
inline constexpr size_t kQuoteMaxBytes = 160;

/// `s` in single quotes, printable: backslash, the quote, control bytes (C0, DEL, C1) and bytes
/// that are not valid UTF-8 are escaped (\n, \t, \r, \\, \', \xHH, \u0085); valid UTF-8 text
/// stays as it is. A string longer than `max_bytes` is cut at a character boundary and its length
/// follows: 'general.archi...' (2097152 bytes).
std::string quote(std::string_view s, size_t max_bytes = kQuoteMaxBytes);

}  // namespace ugrad
