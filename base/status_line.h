// A status line on stderr for long work (loading, warm-up, training): redrawn in place at most
// every 0.1 s and erased when done; nothing unless stderr is a terminal.
#pragma once
#include <chrono>
#include <string>

namespace ugrad {

class StatusLine {
 public:
  /// quiet: never draws (--json, say).
  explicit StatusLine(bool quiet = false);
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;
  /// Draws `text` unless the last draw was under 0.1 s ago (always when `force`).
  void show(const std::string& text, bool force = false);
  /// Whether it draws at all (stderr is a terminal and not quiet).
  bool on() const { return on_; }

 private:
  bool on_, drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace ugrad
