// What the tools' command lines share: flag values (an Error names the flag and the text it got)
// and a main that reports an error as "TOOL: message" with exit status 1.
#pragma once
#include <cstdint>
#include <string_view>

#include "llm/quant/formats.h"

namespace ugrad::tools {

/// A non-negative integer.
uint64_t parse_uint(std::string_view flag, std::string_view text);
/// A non-negative integer that fits 32 bits.
uint32_t parse_u32(std::string_view flag, std::string_view text);
/// A finite number.
double parse_double(std::string_view flag, std::string_view text);
/// A ggml type by its name (F32, F16, Q8_0, Q4_K, ...).
llm::GgmlType parse_ggml_type(std::string_view flag, std::string_view text);

/// run(argc, argv); an exception is printed on stderr as "`tool`: message" and returns 1.
int run_tool(const char* tool, int (*run)(int, char**), int argc, char** argv);

}  // namespace ugrad::tools
