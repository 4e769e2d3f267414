#include "tools/args.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "base/error.h"

namespace ugrad::tools {

uint64_t parse_uint(std::string_view flag, std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    fail("{}: '{}' is not a non-negative integer", flag, text);
  }
  return v;
}

uint32_t parse_u32(std::string_view flag, std::string_view text) {
  const uint64_t v = parse_uint(flag, text);
  if (v > UINT32_MAX) fail("{}: {} is too large", flag, v);
  return static_cast<uint32_t>(v);
}

double parse_double(std::string_view flag, std::string_view text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(std::string(text), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v))
    fail("{}: '{}' is not a number", flag, text);
  return v;
}

llm::GgmlType parse_ggml_type(std::string_view flag, std::string_view text) {
  for (const llm::QuantFormat& f : llm::all_formats())
    if (f.name == text) return f.type;
  fail("{}: unknown ggml type '{}'", flag, text);
}

int run_tool(const char* tool, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return 1;
  }
}

}  // namespace ugrad::tools
