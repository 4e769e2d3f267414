// Uses ugrad through its installed headers and CMake package.
#include <uop/env.h>

#include <cstdio>

int main() {
  std::printf("consumer: ugrad linked, %zu environment knobs\n", ugrad::all_knobs().size());
  return ugrad::all_knobs().empty() ? 1 : 0;
}
