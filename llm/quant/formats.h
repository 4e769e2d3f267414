// The one table of ggml tensor types: type id, name, block size, bytes per block. Every loop over
// formats reads it (GGUF validation, dequantizers, quantizers, kernels).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ugrad::llm {

// X(enumerator, ggml type id, block size in elements, bytes per block)
// Ids and sizes as ggml defines them (ggml_blck_size / ggml_type_size).
#define UGRAD_FOR_EACH_GGML_TYPE(X) \
  X(F32, 0, 1, 4)                   \
  X(F16, 1, 1, 2)                   \
  X(Q4_0, 2, 32, 18)                \
  X(Q4_1, 3, 32, 20)                \
  X(Q5_0, 6, 32, 22)                \
  X(Q5_1, 7, 32, 24)                \
  X(Q8_0, 8, 32, 34)                \
  X(Q8_1, 9, 32, 36)                \
  X(Q2_K, 10, 256, 84)              \
  X(Q3_K, 11, 256, 110)             \
  X(Q4_K, 12, 256, 144)             \
  X(Q5_K, 13, 256, 176)             \
  X(Q6_K, 14, 256, 210)             \
  X(Q8_K, 15, 256, 292)             \
  X(IQ2_XXS, 16, 256, 66)           \
  X(IQ2_XS, 17, 256, 74)            \
  X(IQ3_XXS, 18, 256, 98)           \
  X(IQ1_S, 19, 256, 50)             \
  X(IQ4_NL, 20, 32, 18)             \
  X(IQ3_S, 21, 256, 110)            \
  X(IQ2_S, 22, 256, 82)             \
  X(IQ4_XS, 23, 256, 136)           \
  X(I8, 24, 1, 1)                   \
  X(I16, 25, 1, 2)                  \
  X(I32, 26, 1, 4)                  \
  X(I64, 27, 1, 8)                  \
  X(F64, 28, 1, 8)                  \
  X(IQ1_M, 29, 256, 56)             \
  X(BF16, 30, 1, 2)                 \
  X(TQ1_0, 34, 256, 54)             \
  X(TQ2_0, 35, 256, 66)             \
  X(MXFP4, 39, 32, 17)

enum class GgmlType : uint32_t {
#define UGRAD_GGML_TYPE_ENUM(name, id, block, bytes) name = id,
  UGRAD_FOR_EACH_GGML_TYPE(UGRAD_GGML_TYPE_ENUM)
#undef UGRAD_GGML_TYPE_ENUM
};

struct QuantFormat {
  GgmlType type;
  std::string_view name;
  uint32_t block_size;   // elements per block
  uint32_t block_bytes;  // bytes per block
};

/// Every known ggml type, in id order.
std::span<const QuantFormat> all_formats();
/// The format with this ggml type id, or nullopt for an id ggml does not define.
std::optional<QuantFormat> find_format(uint32_t type_id);
/// The format of a known type (never fails).
const QuantFormat& format_of(GgmlType t);
/// Bytes holding n elements of type t. Error if n is negative, not a multiple of the block size,
/// or the byte count overflows.
size_t row_bytes(GgmlType t, int64_t n);

}  // namespace ugrad::llm
