#include "llm/tokenizer/stream_decoder.h"

#include "llm/tokenizer/utf8.h"

namespace ugrad::llm {

namespace {

// Appends the valid text of `bytes` to `out`, replacing invalid subparts with U+FFFD. Returns how
// many bytes were consumed; an incomplete sequence at the end is left unconsumed unless `final`.
size_t emit_valid(std::string_view bytes, std::string& out, bool final) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const Utf8Step step = utf8_step(bytes, pos);
    if (step.kind == Utf8Step::kComplete) {
      out.append(bytes.substr(pos, step.len));
    } else if (step.kind == Utf8Step::kIncomplete && !final) {
      return pos;
    } else {
      out.append(kReplacementChar);
    }
    pos += step.len;
  }
  return pos;
}

}  // namespace

std::string StreamDecoder::push(TokenId id) {
  pending_.append(tokenizer_->token_to_piece(id, render_special_));
  std::string out;
  const size_t used = emit_valid(pending_, out, /*final=*/false);
  pending_.erase(0, used);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  emit_valid(pending_, out, /*final=*/true);
  pending_.clear();
  return out;
}

std::string decode_text(const BpeTokenizer& tokenizer, std::span<const TokenId> ids,
                        bool render_special) {
  StreamDecoder decoder(tokenizer, render_special);
  std::string out;
  for (TokenId id : ids) out += decoder.push(id);
  return out + decoder.flush();
}

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  emit_valid(bytes, out, /*final=*/true);
  return out;
}

}  // namespace ugrad::llm
