#include "llm/tokenizer/bpe.h"

#include <algorithm>
#include <mutex>

#include "base/error.h"
#include "base/quote.h"
#include "llm/tokenizer/byte_unicode.h"
#include "llm/tokenizer/normalize.h"
#include "llm/tokenizer/utf8.h"

namespace ugrad::llm {

namespace {

// Longer words are rare and would make the cache's memory depend on the input: not cached.
constexpr size_t kMaxCachedWordBytes = 256;
// The word cache is dropped when it grows past this many entries (bounds memory on huge inputs).
constexpr size_t kMaxCachedWords = 1 << 18;

// Texts of control tokens that end a turn in Qwen/ChatML vocabularies (llama.cpp's EOG list).
constexpr std::string_view kEndOfGenerationTexts[] = {"<|im_end|>", "<|endoftext|>", "<|fim_pad|>",
                                                      "<|repo_name|>", "<|file_sep|>"};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// "<0xAB>" -> 0xAB (SentencePiece byte tokens).
std::optional<uint8_t> parse_byte_token(std::string_view text) {
  if (text.size() != 6 || !text.starts_with("<0x") || text[5] != '>') return std::nullopt;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
    if (digit < 0) return std::nullopt;
    value = value * 16 + digit;
  }
  return static_cast<uint8_t>(value);
}

// One BPE symbol of the word being merged: a doubly linked list over the word's bytes.
struct Symbol {
  TokenId id;  // -1 once merged into its left neighbour
  int32_t prev, next;
};

// A candidate merge of the symbol at `left` with its right neighbour.
struct Candidate {
  int32_t rank;
  int32_t left;
  TokenId left_id, right_id, result;
  // Min-heap on (rank, position): lowest rank first, leftmost first among equal ranks.
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

}  // namespace

struct BpeTokenizer::Scratch {
  std::mutex mutex;
  std::string normalized;  // the fragment in NFC, when the pre-tokenizer asks for it
  std::vector<std::string_view> pieces;
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> cache;
};

BpeTokenizer::BpeTokenizer(VocabData data)
    : bos_id_(data.bos_id),
      eos_id_(data.eos_id),
      eot_id_(data.eot_id),
      pad_id_(data.pad_id),
      pre_(data.pre),
      scratch_(std::make_unique<Scratch>()) {
  const size_t n = data.tokens.size();
  if (n == 0) fail("tokenizer: the vocabulary (tokenizer.ggml.tokens) is empty");
  if (n > static_cast<size_t>(INT32_MAX)) fail("tokenizer: vocabulary of {} tokens is too big", n);
  if (!data.token_types.empty() && data.token_types.size() != n) {
    fail("tokenizer: tokenizer.ggml.token_type has {} entries but there are {} tokens",
         data.token_types.size(), n);
  }
  texts_ = std::move(data.tokens);
  types_.resize(n, TokenType::kNormal);
  pieces_.resize(n);
  text_to_id_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TokenId>(i);
    if (!data.token_types.empty()) {
      const int32_t t = data.token_types[i];
      if (t < 1 || t > 6)
        fail("tokenizer: token {} {} has unknown token type {}", id, quote(texts_[i]), t);
      types_[i] = static_cast<TokenType>(t);
    }
    text_to_id_.emplace(texts_[i], id);  // the first of duplicate texts wins
    if (types_[i] == TokenType::kNormal) {
      std::optional<std::string> bytes = byte_level_to_bytes(texts_[i]);
      if (!bytes)
        fail("tokenizer: normal token {} {} is not byte-level BPE text", id, quote(texts_[i]));
      pieces_[i] = std::move(*bytes);
    } else if (types_[i] == TokenType::kByte) {
      std::optional<uint8_t> b = parse_byte_token(texts_[i]);
      if (!b) fail("tokenizer: byte token {} is {}, expected <0xHH>", id, quote(texts_[i]));
      pieces_[i] = std::string(1, static_cast<char>(*b));
    } else {
      pieces_[i] = texts_[i];
    }
    if ((types_[i] == TokenType::kControl || types_[i] == TokenType::kUserDefined) &&
        !texts_[i].empty()) {
      const auto first = static_cast<uint8_t>(texts_[i][0]);
      specials_by_first_byte_[first].push_back({texts_[i], id, types_[i]});
    }
  }
  for (auto& specials : specials_by_first_byte_) {
    std::stable_sort(specials.begin(), specials.end(), [](const Special& a, const Special& b) {
      return a.text.size() > b.text.size();
    });
  }

  for (int b = 0; b < 256; ++b) {
    const std::string text = bytes_to_byte_level(std::string(1, static_cast<char>(b)));
    auto it = text_to_id_.find(text);
    if (it == text_to_id_.end() || types_[it->second] != TokenType::kNormal) {
      fail("tokenizer: the vocabulary has no normal token for byte 0x{:02X} ({})", b, quote(text));
    }
    byte_token_[b] = it->second;
  }

  merges_.reserve(data.merges.size());
  for (size_t rank = 0; rank < data.merges.size(); ++rank) {
    const std::string_view merge = data.merges[rank];
    const size_t space = merge.find(' ', 1);
    if (space == std::string_view::npos) {
      fail("tokenizer: merge {} {} is not two pieces separated by a space", rank, quote(merge));
    }
    const std::string_view left = merge.substr(0, space), right = merge.substr(space + 1);
    auto l = text_to_id_.find(left), r = text_to_id_.find(right);
    auto result = text_to_id_.find(std::string(left) + std::string(right));
    if (l == text_to_id_.end() || r == text_to_id_.end() || result == text_to_id_.end()) {
      fail("tokenizer: merge {} {} names a piece or result that is not in the vocabulary", rank,
           quote(merge));
    }
    merges_.insert(l->second, r->second, {static_cast<int32_t>(rank), result->second});
  }

  for (auto [name, id] : {std::pair{"bos", bos_id_}, std::pair{"eos", eos_id_},
                          std::pair{"eot", eot_id_}, std::pair{"padding", pad_id_}}) {
    if (id && (*id < 0 || static_cast<size_t>(*id) >= n)) {
      fail("tokenizer: {}_token_id {} is out of range for {} tokens", name, *id, n);
    }
  }
  for (auto id : {eos_id_, eot_id_}) {
    if (id) end_of_generation_.push_back(*id);
  }
  for (std::string_view text : kEndOfGenerationTexts) {
    auto it = text_to_id_.find(text);
    if (it != text_to_id_.end() && types_[it->second] == TokenType::kControl) {
      end_of_generation_.push_back(it->second);
    }
  }
}

BpeTokenizer::~BpeTokenizer() = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;

std::vector<TokenId> BpeTokenizer::encode(std::string_view text, bool allow_special) const {
  if (const size_t bad = utf8_invalid_offset(text); bad != text.size()) {
    fail("tokenizer: text is not valid UTF-8 at byte {} (0x{:02X}) of {}", bad,
         static_cast<uint8_t>(text[bad]), text.size());
  }
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 1);
  std::lock_guard lock(scratch_->mutex);
  size_t fragment_start = 0, pos = 0;
  while (pos < text.size()) {
    const Special* hit = nullptr;
    for (const Special& s : specials_by_first_byte_[static_cast<uint8_t>(text[pos])]) {
      if ((allow_special || s.type == TokenType::kUserDefined) &&
          text.substr(pos).starts_with(s.text)) {
        hit = &s;
        break;
      }
    }
    if (!hit) {
      ++pos;
      continue;
    }
    encode_fragment(text.substr(fragment_start, pos - fragment_start), out, *scratch_);
    out.push_back(hit->id);
    pos += hit->text.size();
    fragment_start = pos;
  }
  encode_fragment(text.substr(fragment_start), out, *scratch_);
  return out;
}

void BpeTokenizer::encode_fragment(std::string_view fragment, std::vector<TokenId>& out,
                                   Scratch& s) const {
  if (fragment.empty()) return;
  // As the Hugging Face tokenizer: special tokens are split out of the raw text, then each
  // fragment between them is normalized.
  if (pre_.normalizes_nfc() && !is_nfc_quick(fragment)) {
    s.normalized = to_nfc(fragment);
    fragment = s.normalized;
  }
  s.pieces.clear();
  pre_.split(fragment, s.pieces);
  for (std::string_view piece : s.pieces) encode_word(piece, out, s);
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<TokenId>& out, Scratch& s) const {
  if (word.size() == 1) {
    out.push_back(byte_token_[static_cast<uint8_t>(word[0])]);
    return;
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    if (auto it = s.cache.find(word); it != s.cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }

  const auto n = static_cast<int32_t>(word.size());
  s.symbols.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    s.symbols[i] = {byte_token_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  s.heap.clear();
  const auto push_candidate = [&](int32_t left) {
    const int32_t right = s.symbols[left].next;
    if (right < 0) return;
    const TokenId a = s.symbols[left].id, b = s.symbols[right].id;
    const MergeTable::Merge* merge = merges_.find(a, b);
    if (!merge) return;
    s.heap.push_back({merge->rank, left, a, b, merge->result});
    std::push_heap(s.heap.begin(), s.heap.end(), std::greater<>{});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_candidate(i);

  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), std::greater<>{});
    const Candidate c = s.heap.back();
    s.heap.pop_back();
    Symbol& left = s.symbols[c.left];
    // Stale candidates (a side was merged away or changed since) no longer match the ids.
    if (left.id != c.left_id || left.next < 0 || s.symbols[left.next].id != c.right_id) continue;
    Symbol& right = s.symbols[left.next];
    left.id = c.result;
    left.next = right.next;
    if (right.next >= 0) s.symbols[right.next].prev = c.left;
    right.id = -1;
    if (left.prev >= 0) push_candidate(left.prev);
    push_candidate(c.left);
  }

  const size_t first = out.size();
  for (int32_t i = 0; i >= 0; i = s.symbols[i].next) out.push_back(s.symbols[i].id);
  if (cacheable) {
    if (s.cache.size() >= kMaxCachedWords) s.cache.clear();
    s.cache.emplace(std::string(word), std::vector<TokenId>(out.begin() + first, out.end()));
  }
}

void BpeTokenizer::check_id(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) {
    fail("tokenizer: token id {} is out of range for a vocabulary of {} tokens", id,
         pieces_.size());
  }
}

std::string_view BpeTokenizer::token_to_piece(TokenId id, bool render_special) const {
  check_id(id);
  const TokenType type = types_[id];
  if (!render_special && (type == TokenType::kControl || type == TokenType::kUnused)) return {};
  return pieces_[id];
}

std::string BpeTokenizer::decode(std::span<const TokenId> ids, bool render_special) const {
  std::string out;
  for (TokenId id : ids) out += token_to_piece(id, render_special);
  return out;
}

std::optional<TokenId> BpeTokenizer::token_id(std::string_view text) const {
  auto it = text_to_id_.find(text);
  if (it == text_to_id_.end()) return std::nullopt;
  return it->second;
}

const std::string& BpeTokenizer::token_text(TokenId id) const {
  check_id(id);
  return texts_[id];
}

TokenType BpeTokenizer::token_type(TokenId id) const {
  check_id(id);
  return types_[id];
}

bool BpeTokenizer::is_end_of_generation(TokenId id) const {
  return std::find(end_of_generation_.begin(), end_of_generation_.end(), id) !=
         end_of_generation_.end();
}

}  // namespace ugrad::llm
