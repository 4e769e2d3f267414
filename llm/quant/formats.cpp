#include "llm/quant/formats.h"

#include <algorithm>
#include <limits>

#include "base/error.h"

namespace ugrad::llm {
namespace {

constexpr QuantFormat kFormats[] = {
#define UGRAD_GGML_TYPE_ROW(name, id, block, bytes) {GgmlType::name, #name, block, bytes},
    UGRAD_FOR_EACH_GGML_TYPE(UGRAD_GGML_TYPE_ROW)
#undef UGRAD_GGML_TYPE_ROW
};

}  // namespace

std::span<const QuantFormat> all_formats() { return kFormats; }

std::optional<QuantFormat> find_format(uint32_t type_id) {
  auto it = std::find_if(std::begin(kFormats), std::end(kFormats), [&](const QuantFormat& f) {
    return static_cast<uint32_t>(f.type) == type_id;
  });
  if (it == std::end(kFormats)) return std::nullopt;
  return *it;
}

const QuantFormat& format_of(GgmlType t) {
  for (const QuantFormat& f : kFormats)
    if (f.type == t) return f;
  internal_error("format_of: GgmlType {} missing from the table", static_cast<uint32_t>(t));
}

size_t row_bytes(GgmlType t, int64_t n) {
  const QuantFormat& f = format_of(t);
  if (n < 0) fail("{}: negative element count {}", f.name, n);
  if (n % f.block_size != 0)
    fail("{}: element count {} is not a multiple of the block size {}", f.name, n, f.block_size);
  const uint64_t blocks = uint64_t(n) / f.block_size;
  if (blocks > std::numeric_limits<size_t>::max() / f.block_bytes)
    fail("{}: {} elements need more than {} bytes", f.name, n, std::numeric_limits<size_t>::max());
  return size_t(blocks) * f.block_bytes;
}

}  // namespace ugrad::llm
