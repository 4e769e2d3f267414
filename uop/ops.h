// The one list of ops. Enum, names, arities and group predicates are generated from this table;
// nothing else lists ops.
#pragma once
#include <cstdint>
#include <string_view>

namespace ugrad {

// Group flags of an op.
enum OpFlag : uint32_t {
  kUnary = 1u << 0,        // elementwise, one source
  kBinary = 1u << 1,       // elementwise, two sources
  kTernary = 1u << 2,      // elementwise, three sources
  kMovement = 1u << 3,     // tensor-graph view change: becomes index math when scheduled
  kCommutative = 1u << 4,  // f(a, b) == f(b, a)
  kAssociative = 1u << 5,  // f(f(a, b), c) == f(a, f(b, c))
  kComparison = 1u << 6,   // produces bool
  kIdempotent = 1u << 7,   // f(a, a) == a
  kTensor = 1u << 8,       // appears only in the tensor graph, never inside a kernel
};

// DOT4(a, b, acc): the one int8 dot-product op. a, b, acc and the result are 32-bit integer words
// of one dtype (int32 or uint32, the accumulator's), one per lane on a vector axis; per word,
// acc + the sum of the 4 byte products a[j]*b[j], wrapped. The arg (Dot4Arg) says whether
// each side's bytes are int8 or uint8: it is every form the hardware has (x86 VNNI vpdpbusd is
// uint8 x int8 with acc; AMD v_dot4_i32_iu8 any combination, per-source sign bits), and pm_decomp
// turns it into 4 byte products where the target has neither. Words, not <4 x i8> vectors, so
// the CPU's packed activations and weights feed it directly; the GPU dot4 opt bitcasts 4 loaded
// bytes to a word.
//
// BYTE_LUT(w): a 16-entry byte table applied to each byte of a 32-bit word (int32 or uint32): byte
// j of the result is table[w's byte j & 15], the table the arg's 16 values in [0, 256). It gives
// the int8 dot products their weights where a format's levels are not linear in its 4-bit codes
// (IQ4_NL, IQ4_XS): one x86 vpshufb per vector of words (the table is a register), and pm_decomp
// turns it into shifts and selects where the target has no byte shuffle.
//
// X(NAME, arity (-1: any number of sources), flags)
#define UGRAD_FOR_EACH_OP(X)                                                          \
  /* structure */                                                                     \
  X(SINK, -1, 0)        /* root: sources are the outputs */                           \
  X(GROUP, -1, 0)       /* an unordered set of effects */                             \
  X(NOOP, -1, 0)        /* placeholder that rewrites away */                          \
  X(CONST, 0, 0)        /* arg: the value (bool, int64 or double) */                  \
  X(PARAM, 0, 0)        /* kernel parameter or variable; arg: ParamArg */             \
  X(BUFFER, 0, kTensor) /* tensor-graph storage; arg: BufferArg */                    \
  X(DEFINE_LOCAL, 0, 0) /* workgroup-shared array; arg: element count */              \
  X(DEFINE_REG, 0, 0)   /* register array (accumulators); arg: element count */       \
  X(SPECIAL, 1, 0)      /* GPU launch index; src: extent; arg: name (gidx0, lidx0) */ \
  X(RANGE, 1, 0)        /* loop index in [0, src0); arg: RangeArg */                  \
  X(END, -1, 0)         /* closes ranges: src0 value, src1.. the ranges */            \
  X(IF, -1, 0)          /* src0 condition, then the guarded effects */                \
  X(ENDIF, 1, 0)                                                                      \
  X(BARRIER, -1, 0) /* workgroup barrier after its sources */                         \
  X(AFTER, -1, 0)   /* src0, ordered after src1.. */                                  \
  /* memory */                                                                        \
  X(INDEX, -1, 0)     /* pointer arithmetic: src0 buffer, src1 index (, gate) */      \
  X(LOAD, -1, 0)      /* src0 pointer (, alt value, gate) */                          \
  X(STORE, -1, 0)     /* src0 pointer, src1 value (, gate) */                         \
  X(VECTORIZE, -1, 0) /* scalars -> vector */                                         \
  X(GEP, 1, 0)        /* vector element(s); arg: indices */                           \
  X(REDUCE, -1, 0)    /* kernel reduce: src0 value, src1.. ranges; arg: the Op */     \
  X(WMMA, 3, 0)       /* tensor-core multiply-accumulate; arg: WMMA shape name */     \
  X(CUSTOM, -1, 0)    /* backend-specific intrinsic; arg: its name */                 \
  /* elementwise */                                                                   \
  X(CAST, 1, kUnary)                                                                  \
  X(BITCAST, 1, kUnary)                                                               \
  X(EXP2, 1, kUnary)                                                                  \
  X(LOG2, 1, kUnary)                                                                  \
  X(SIN, 1, kUnary)                                                                   \
  X(SQRT, 1, kUnary)                                                                  \
  X(RECIP, 1, kUnary)                                                                 \
  X(NEG, 1, kUnary)                                                                   \
  X(TRUNC, 1, kUnary)                                                                 \
  X(BYTE_LUT, 1, kUnary) /* 16-entry byte table per byte of a word, see above */      \
  X(ADD, 2, kBinary | kCommutative | kAssociative)                                    \
  X(MUL, 2, kBinary | kCommutative | kAssociative)                                    \
  X(SUB, 2, kBinary)                                                                  \
  X(IDIV, 2, kBinary) /* integer division, truncating toward zero (C) */              \
  X(MOD, 2, kBinary)  /* integer remainder with the sign of the dividend (C) */       \
  X(FDIV, 2, kBinary)                                                                 \
  X(MAX, 2, kBinary | kCommutative | kAssociative | kIdempotent)                      \
  X(CMPLT, 2, kBinary | kComparison)                                                  \
  X(CMPNE, 2, kBinary | kCommutative | kComparison)                                   \
  X(CMPEQ, 2, kBinary | kCommutative | kComparison)                                   \
  X(AND, 2, kBinary | kCommutative | kAssociative | kIdempotent)                      \
  X(OR, 2, kBinary | kCommutative | kAssociative | kIdempotent)                       \
  X(XOR, 2, kBinary | kCommutative | kAssociative)                                    \
  X(SHL, 2, kBinary)                                                                  \
  X(SHR, 2, kBinary)                                                                  \
  X(POW, 2, kBinary)                                                                  \
  X(WHERE, 3, kTernary)                                                               \
  X(MULACC, 3, kTernary) /* a*b+c */                                                  \
  X(DOT4, 3, kTernary)   /* int8 dot product of 32-bit words, see above */            \
  /* tensor graph; movement ops take symbolic sizes as sources after src0 */          \
  X(RESHAPE, -1, kMovement | kTensor) /* src1..: the new dims */                      \
  X(PERMUTE, 1, kMovement | kTensor)  /* arg: the axis order */                       \
  X(EXPAND, -1, kMovement | kTensor)  /* src1..: new dims (old ones 1 or equal) */    \
  X(PAD, -1, kMovement | kTensor)     /* src1..: n pads before, then n after */       \
  X(SHRINK, -1, kMovement | kTensor)  /* src1..: n starts, then n ends */             \
  X(FLIP, 1, kMovement | kTensor)     /* arg: the flipped axes */                     \
  X(REDUCE_AXIS, 1, kTensor)          /* arg: ReduceArg (op, axes) */                 \
  X(CONTIGUOUS, 1, kTensor)                                                           \
  X(COPY, 1, kTensor)   /* to another device; arg: device name */                     \
  X(ASSIGN, 2, kTensor) /* src0 target buffer view, src1 value */                     \
  X(DETACH, 1, kTensor)                                                               \
  X(KERNEL, -1, kTensor) /* hand-written: src buffers by slot, vars; arg: AST id */   \
  /* (schedule/custom_kernel.h); what it writes is read as AFTER(buffer view, KERNEL) */

enum class Op : uint8_t {
#define UGRAD_OP_ENUM(name, arity, flags) name,
  UGRAD_FOR_EACH_OP(UGRAD_OP_ENUM)
#undef UGRAD_OP_ENUM
};

inline constexpr int kNumOps = 0
#define UGRAD_OP_COUNT(name, arity, flags) +1
    UGRAD_FOR_EACH_OP(UGRAD_OP_COUNT)
#undef UGRAD_OP_COUNT
    ;

namespace detail {
struct OpInfo {
  std::string_view name;
  int arity;
  uint32_t flags;
};
inline constexpr OpInfo kOpInfo[] = {
#define UGRAD_OP_INFO(name, arity, flags) {#name, arity, flags},
    UGRAD_FOR_EACH_OP(UGRAD_OP_INFO)
#undef UGRAD_OP_INFO
};
}  // namespace detail

/// The op's name as written in the table ("ADD").
constexpr std::string_view op_name(Op op) { return detail::kOpInfo[static_cast<int>(op)].name; }
/// Number of sources, or -1 when any number is allowed.
constexpr int op_arity(Op op) { return detail::kOpInfo[static_cast<int>(op)].arity; }
/// True when the op has every flag in `f`.
constexpr bool op_has(Op op, uint32_t f) {
  return (detail::kOpInfo[static_cast<int>(op)].flags & f) == f;
}

constexpr bool is_unary(Op op) { return op_has(op, kUnary); }
constexpr bool is_binary(Op op) { return op_has(op, kBinary); }
constexpr bool is_ternary(Op op) { return op_has(op, kTernary); }
/// Elementwise arithmetic: unary, binary or ternary.
constexpr bool is_alu(Op op) { return is_unary(op) || is_binary(op) || is_ternary(op); }
constexpr bool is_movement(Op op) { return op_has(op, kMovement); }
constexpr bool is_commutative(Op op) { return op_has(op, kCommutative); }
constexpr bool is_associative(Op op) { return op_has(op, kAssociative); }
constexpr bool is_comparison(Op op) { return op_has(op, kComparison); }
constexpr bool is_idempotent(Op op) { return op_has(op, kIdempotent); }
constexpr bool is_tensor_only(Op op) { return op_has(op, kTensor); }

}  // namespace ugrad
