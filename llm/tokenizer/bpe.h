// Byte-level BPE tokenizer (GPT-2 style, as llama.cpp's LLAMA_VOCAB_TYPE_BPE): special tokens are
// split out first (longest match), the rest is normalized to NFC when the vocabulary's tokenizer
// declares it (as the Hugging Face tokenizer does; llama.cpp does not) and pre-tokenized by regex,
// each piece is mapped to the byte-level alphabet and merged pair by pair in merge-rank order. A
// cache maps recent words to their ids. encode() may be called from several threads; calls are
// serialised by a lock.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llm/tokenizer/merge_table.h"
#include "llm/tokenizer/pretokenize.h"
#include "llm/tokenizer/vocab.h"

namespace ugrad::llm {

class BpeTokenizer {
 public:
  /// Builds the tokenizer; throws Error naming the token or merge that is malformed.
  explicit BpeTokenizer(VocabData data);
  ~BpeTokenizer();
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;

  /// Token ids for UTF-8 `text` (Error if it is not valid UTF-8). User-defined tokens (<think>)
  /// are always matched; control tokens (<|im_start|>) only when `allow_special`. No BOS is added.
  /// Text between special tokens is normalized first if the pre-tokenizer says so (qwen2, qwen35:
  /// NFC), so decode(encode(t)) is NFC(t).
  std::vector<TokenId> encode(std::string_view text, bool allow_special = true) const;

  /// The bytes of the tokens, concatenated; may end inside a UTF-8 sequence (see StreamDecoder).
  /// Control and unused tokens render their text only when `render_special`.
  std::string decode(std::span<const TokenId> ids, bool render_special = true) const;

  /// The raw bytes one token stands for (empty for control/unused tokens unless
  /// `render_special`); Error for an id out of range.
  std::string_view token_to_piece(TokenId id, bool render_special = true) const;

  /// The id of the token whose vocabulary text is exactly `text`, if any.
  std::optional<TokenId> token_id(std::string_view text) const;

  /// Number of tokens in the vocabulary.
  size_t n_vocab() const { return pieces_.size(); }
  /// The vocabulary text of a token (byte-level form for normal tokens).
  const std::string& token_text(TokenId id) const;
  /// The type of a token.
  TokenType token_type(TokenId id) const;
  /// True for tokens that end generation: eos, eot, <|im_end|>, <|endoftext|> and FIM pad/sep.
  bool is_end_of_generation(TokenId id) const;

  std::optional<TokenId> bos_id() const { return bos_id_; }
  std::optional<TokenId> eos_id() const { return eos_id_; }
  std::optional<TokenId> eot_id() const { return eot_id_; }
  std::optional<TokenId> pad_id() const { return pad_id_; }
  const PreTokenizer& pre_tokenizer() const { return pre_; }

 private:
  struct Special {
    std::string text;
    TokenId id;
    TokenType type;
  };
  struct Scratch;  // per-call buffers and the word cache, guarded by a mutex

  void check_id(TokenId id) const;
  void encode_fragment(std::string_view fragment, std::vector<TokenId>& out, Scratch& s) const;
  void encode_word(std::string_view word, std::vector<TokenId>& out, Scratch& s) const;

  std::vector<std::string> texts_;   // vocabulary text per id
  std::vector<std::string> pieces_;  // decoded bytes per id
  std::vector<TokenType> types_;
  std::unordered_map<std::string_view, TokenId> text_to_id_;  // views into texts_
  MergeTable merges_;                      // (left id, right id) -> (rank, merged id)
  std::array<TokenId, 256> byte_token_{};  // token of each single byte
  // Special tokens by first byte, longest first, so the first hit is the longest match.
  std::array<std::vector<Special>, 256> specials_by_first_byte_;
  std::vector<TokenId> end_of_generation_;
  std::optional<TokenId> bos_id_, eos_id_, eot_id_, pad_id_;
  PreTokenizer pre_;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace ugrad::llm
