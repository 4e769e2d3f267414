// What a piece of code writes to stderr or stdout (the file descriptor, so fmt::print and C stdio
// alike).
#pragma once
#include <unistd.h>

#include <cstdio>
#include <string>

namespace ugrad::test {

template <class F>
std::string capture_fd(int fd, std::FILE* stream, F&& f) {
  std::fflush(stream);
  std::FILE* log = std::tmpfile();
  const int saved = ::dup(fd);
  ::dup2(::fileno(log), fd);
  try {
    f();
  } catch (...) {
    std::fflush(stream);
    ::dup2(saved, fd);
    ::close(saved);
    std::fclose(log);
    throw;
  }
  std::fflush(stream);
  ::dup2(saved, fd);
  ::close(saved);
  std::string text;
  std::rewind(log);
  for (int c; (c = std::fgetc(log)) != EOF;) text.push_back(static_cast<char>(c));
  std::fclose(log);
  return text;
}

template <class F>
std::string capture_stderr(F&& f) {
  return capture_fd(2, stderr, f);
}

template <class F>
std::string capture_stdout(F&& f) {
  return capture_fd(1, stdout, f);
}

}  // namespace ugrad::test
