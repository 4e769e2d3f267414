// The GPT-2 byte-level alphabet (`bytes_to_unicode` in GPT-2's encoder.py): every byte maps to
// one printable code point, so that BPE vocabularies and merges can be stored as text.
// Printable bytes '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF map to themselves; the other 68
// bytes map, in byte order, to U+0100, U+0101, ... (space -> U+0120 'Ġ', '\n' -> U+010A 'Ċ').
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ugrad::llm {

/// The code point that byte b stands for in byte-level text.
uint32_t byte_to_codepoint(uint8_t b);

/// The byte that code point cp stands for, or nullopt if cp is not in the byte-level alphabet.
std::optional<uint8_t> codepoint_to_byte(uint32_t cp);

/// Maps raw bytes to byte-level text (each byte becomes one code point, UTF-8 encoded).
std::string bytes_to_byte_level(std::string_view bytes);

/// Maps byte-level text back to raw bytes; nullopt if the text is not valid UTF-8 or contains a
/// code point outside the alphabet.
std::optional<std::string> byte_level_to_bytes(std::string_view text);

}  // namespace ugrad::llm
