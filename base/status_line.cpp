#include "base/status_line.h"

#include <unistd.h>

#include <cstdio>

namespace ugrad {

StatusLine::StatusLine(bool quiet) : on_(!quiet && isatty(STDERR_FILENO) != 0) {}

StatusLine::~StatusLine() {
  if (drawn_) std::fputs("\r\033[K", stderr);
}

void StatusLine::show(const std::string& text, bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!on_ || (!force && now - last_ < std::chrono::milliseconds(100))) return;
  last_ = now;
  drawn_ = true;
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
}

}  // namespace ugrad
