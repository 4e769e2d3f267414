// Errors: ugrad::Error for bad use and bad input, InternalError for our own bugs.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ugrad {

/// Bad use or bad input. The message names the offending thing and its value.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A broken invariant inside ugrad: always a bug in ugrad, never the user's fault.
struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

/// Throws Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

/// Throws InternalError with a fmt-formatted message, marked as a bug.
template <typename... Args>
[[noreturn]] void internal_error(fmt::format_string<Args...> f, Args&&... args) {
  throw InternalError("internal error (this is a bug in ugrad): " +
                      fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace ugrad

/// Checks an internal invariant; the message is formatted only on failure.
#define UGRAD_ASSERT(cond, ...)                                   \
  do {                                                            \
    if (!(cond)) ::ugrad::internal_error("{}: " #cond, __func__); \
  } while (0)
