// What a piece of code writes to stderr (file descriptor 2, so fmt::print and C stdio alike).
#pragma once
#include <unistd.h>

#include <cstdio>
#include <string>

namespace ugrad::test {

template <class F>
std::string capture_stderr(F&& f) {
  std::fflush(stderr);
  std::FILE* log = std::tmpfile();
  const int saved = ::dup(2);
  ::dup2(::fileno(log), 2);
  try {
    f();
  } catch (...) {
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    std::fclose(log);
    throw;
  }
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string text;
  std::rewind(log);
  for (int c; (c = std::fgetc(log)) != EOF;) text.push_back(static_cast<char>(c));
  std::fclose(log);
  return text;
}

}  // namespace ugrad::test
