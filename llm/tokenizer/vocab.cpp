#include "llm/tokenizer/vocab.h"

namespace ugrad::llm {

std::string_view token_type_name(TokenType type) {
  switch (type) {
    case TokenType::kNormal:
      return "normal";
    case TokenType::kUnknown:
      return "unknown";
    case TokenType::kControl:
      return "control";
    case TokenType::kUserDefined:
      return "user-defined";
    case TokenType::kUnused:
      return "unused";
    case TokenType::kByte:
      return "byte";
  }
  return "invalid";
}

}  // namespace ugrad::llm
