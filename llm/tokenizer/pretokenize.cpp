#include "llm/tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/error.h"
#include "base/quote.h"

namespace ugrad::llm {

namespace {

// llama.cpp llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_QWEN2: the HF regex with `(?i:'s|...)` spelled
// out case by case. \p{N} matches one digit, so numbers split digit by digit.
constexpr std::string_view kQwen2Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// LLAMA_VOCAB_PRE_TYPE_QWEN35: as qwen2, but combining marks (\p{M}) count as letters.
constexpr std::string_view kQwen35Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The JIT's default 32 KiB machine stack; a larger stack is made only if a match needs it.
constexpr size_t kJitStackStart = 32 * 1024;
constexpr size_t kJitStackMax = 64 * 1024 * 1024;

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof(buf));
  return reinterpret_cast<const char*>(buf);
}

// What llama.cpp's regex and the Hugging Face tokenizer.json declare for a pre-tokenizer name.
struct PreTokenizerSpec {
  std::string_view name;
  std::string_view regex;
  bool nfc;  // tokenizer.json's normalizer is NFC (Qwen2/2.5/3 and Qwen3.5 both have one)
};
constexpr PreTokenizerSpec kPreTokenizers[] = {
    {"qwen2", kQwen2Regex, true},
    {"qwen35", kQwen35Regex, true},
};

const PreTokenizerSpec& pretokenizer_spec(std::string_view pre_name) {
  for (const PreTokenizerSpec& spec : kPreTokenizers)
    if (spec.name == pre_name) return spec;
  fail("tokenizer: unknown pre-tokenizer {} (tokenizer.ggml.pre); known: qwen2, qwen35",
       quote(pre_name));
}

}  // namespace

std::string_view pretokenizer_regex(std::string_view pre_name) {
  return pretokenizer_spec(pre_name).regex;
}

struct PreTokenizer::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(std::string_view pre_name)
    : name_(pre_name), nfc_(pretokenizer_spec(pre_name).nfc), impl_(std::make_unique<Impl>()) {
  const std::string_view regex = pretokenizer_regex(pre_name);
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(),
                              PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
  if (!impl_->code) {
    fail("tokenizer: pre-tokenizer {} regex does not compile at offset {}: {}", quote(pre_name),
         error_offset, pcre2_message(error));
  }
  // Without JIT support (some platforms) pcre2_match interprets the pattern; slower, same result.
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  std::unique_ptr<pcre2_jit_stack, decltype(&pcre2_jit_stack_free)> jit_stack(
      nullptr, &pcre2_jit_stack_free);
  std::unique_ptr<pcre2_match_context, decltype(&pcre2_match_context_free)> context(
      nullptr, &pcre2_match_context_free);
  if (!match) fail("tokenizer: out of memory for PCRE2 match data");

  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    // The caller validated the UTF-8 once; re-checking per match would be quadratic.
    int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), pos,
                                          PCRE2_NO_UTF_CHECK, match.get(), context.get())
                        : pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK,
                                      match.get(), context.get());
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !jit_stack) {
      jit_stack.reset(pcre2_jit_stack_create(kJitStackStart, kJitStackMax, nullptr));
      context.reset(pcre2_match_context_create(nullptr));
      if (!jit_stack || !context) fail("tokenizer: out of memory for the PCRE2 JIT stack");
      pcre2_jit_stack_assign(context.get(), nullptr, jit_stack.get());
      continue;
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      fail("tokenizer: pre-tokenizer {} failed at byte {} of a {}-byte text: {}", quote(name_), pos,
           text.size(), pcre2_message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const size_t begin = ovector[0], end = ovector[1];
    if (begin > pos) out.push_back(text.substr(pos, begin - pos));
    if (end == begin) {
      // No alternative of our regexes matches empty; guard anyway by stepping one character.
      size_t next = begin + 1;
      while (next < text.size() && (static_cast<uint8_t>(text[next]) & 0xC0) == 0x80) ++next;
      out.push_back(text.substr(begin, next - begin));
      pos = next;
      continue;
    }
    out.push_back(text.substr(begin, end - begin));
    pos = end;
  }
  if (pos < text.size()) out.push_back(text.substr(pos));
}

}  // namespace ugrad::llm
