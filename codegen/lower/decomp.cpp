#include "codegen/lower/decomp.h"

#include <cmath>
#include <limits>

namespace ugrad {

namespace {

using R = std::optional<UOp>;

bool is_half(DType t) { return t.scalar == Scalar::Float16; }
bool is_bf16(DType t) { return t.scalar == Scalar::BFloat16; }
bool needs_f32(DType t, const CodegenTarget& tg) {
  return (is_half(t) && !tg.native_half) || (is_bf16(t) && !tg.native_bfloat16);
}

UOp c_like(const UOp& x, double v) { return UOp::cnst(x.dtype(), v); }

// pow(x, y) for floats: |x|^y through exp2/log2, then C's sign and zero rules.
UOp float_pow(const UOp& x, const UOp& y) {
  UOp zero = c_like(x, 0), one = c_like(x, 1);
  UOp neg = x.lt(zero);
  UOp ax = neg.where(-x, x);
  UOp mag = (y * ax.alu(Op::LOG2)).alu(Op::EXP2);
  UOp yi = y.alu(Op::TRUNC);
  UOp is_int = yi.eq(y);
  UOp half_y = (yi * c_like(y, 0.5)).alu(Op::TRUNC);
  UOp odd = (half_y * c_like(y, 2)).ne(yi);
  UOp nan = c_like(x, std::numeric_limits<double>::quiet_NaN());
  UOp signed_mag = is_int.where(odd.where(-mag, mag), nan);
  return y.eq(zero).where(one, neg.where(signed_mag, mag));
}

UOp bf16_to_f32(const UOp& x) {
  UOp bits = UOp::make(Op::BITCAST, dtypes::uint16, {x}).cast(dtypes::uint32);
  UOp shifted = bits.alu(Op::SHL, UOp::cnst_int(dtypes::uint32, 16));
  return UOp::make(Op::BITCAST, dtypes::float32, {shifted});
}

// float32 -> bfloat16, rounding to nearest even; NaN becomes the quiet NaN 0x7fc0.
UOp f32_to_bf16(const UOp& f) {
  auto u32 = [](int64_t v) { return UOp::cnst_int(dtypes::uint32, v); };
  UOp u = UOp::make(Op::BITCAST, dtypes::uint32, {f});
  UOp lsb = u.alu(Op::SHR, u32(16)).alu(Op::AND, u32(1));
  UOp rounded = ((u + u32(0x7fff)) + lsb).alu(Op::SHR, u32(16));
  UOp bits = f.ne(f).where(u32(0x7fc0), rounded).cast(dtypes::uint16);
  return UOp::make(Op::BITCAST, dtypes::bfloat16, {bits});
}

// 2^x for float32 without libm: x86 has no exp2 instruction and LLVM lowers llvm.exp2 to one
// exp2f call per lane. 2^x = 2^n * 2^f with n = round(x) and |f| <= 1/2; 2^f by its Taylor series
// to degree 7 (truncation error under 6e-9, below float32's rounding; exact at f = 0, so integer
// powers are exact); 2^n from exponent bits in two factors, so subnormal results and overflow to
// inf come out of the multiplications. NaN stays NaN; x is clamped to [-160, 160] first.
UOp float32_exp2(const UOp& x) {
  const DType ft = x.dtype(), it = dtypes::int32.vec(ft.count);
  auto fc = [&](double v) { return UOp::cnst(ft, v); };
  auto ic = [&](int64_t v) { return UOp::cnst_int(it, v); };
  UOp xs = x.lt(fc(160)).where(x, fc(160));  // NaN takes 160 here and is selected away below
  xs = fc(-160).lt(xs).where(xs, fc(-160));
  UOp n = (xs + xs.lt(fc(0)).where(fc(-0.5), fc(0.5))).alu(Op::TRUNC);
  UOp f = xs - n;  // exact: |xs| < 2^8
  double coef[8], c = 1;
  for (int k = 0; k < 8; ++k) coef[k] = c, c *= std::log(2.0) / (k + 1);
  UOp p = fc(coef[7]);
  for (int k = 6; k >= 0; --k) p = p * f + fc(coef[k]);
  UOp e = n.cast(it);
  UOp half = e.alu(Op::IDIV, ic(2));
  auto pow2 = [&](const UOp& k) {  // 2^k for k in [-80, 80]: a normal float
    return UOp::make(Op::BITCAST, ft, {(k + ic(127)) * ic(1 << 23)});
  };
  return x.ne(x).where(x, p * pow2(half) * pow2(e - half));
}

bool alu_not_cast(Op op) { return is_alu(op) && op != Op::CAST && op != Op::BITCAST; }

// The lanes of x: the extent of the vector axis it depends on (the Upcast or Unroll range the
// expander left, which the renderer makes vector lanes), 1 for a scalar.
int64_t lanes_of(const UOp& x) {
  for (const UOp& u : x.toposort()) {
    if (u.op() != Op::RANGE) continue;
    const AxisType t = u.arg_as<RangeArg>().type;
    if (t == AxisType::Upcast || t == AxisType::Unroll) return u.src(0).const_int();
  }
  return 1;
}

// Whether the target renders DOT4 on `lanes` lanes as one instruction: v_dot4_i32_iu8 on one word
// of an AMD GPU (any signedness), vpdpbusd on 4, 8 or 16 words of an x86 VNNI host (uint8 x int8).
bool has_dot4_instruction(const CodegenTarget& tg, const Dot4Arg& signs, int64_t lanes) {
  if (tg.is_gpu) return tg.has_dot4 && lanes == 1;
  return tg.has_vnni && signs == Dot4Arg{.a_signed = false, .b_signed = true} &&
         (lanes == 4 || lanes == 8 || lanes == 16);
}

// DOT4(a, b, acc) as its 4 byte products plus acc, in int32: an unsigned byte shifted down and
// masked, a signed one shifted to the top, then arithmetically back.
UOp dot4_bytes(const UOp& a, const UOp& b, const UOp& acc, const Dot4Arg& signs) {
  auto c = [](int64_t v) { return UOp::cnst_int(dtypes::int32, v); };
  auto as = [](const UOp& x, DType t) {
    return x.dtype() == t ? x : UOp::make(Op::BITCAST, t, {x});
  };
  auto byte = [&](const UOp& word, int64_t i, bool is_signed) {
    const UOp w = as(word, dtypes::int32);
    return is_signed ? w.alu(Op::SHL, c(24 - 8 * i)).alu(Op::SHR, c(24))
                     : w.alu(Op::SHR, c(8 * i)).alu(Op::AND, c(255));
  };
  UOp sum;
  for (int64_t i = 0; i < 4; ++i) {
    UOp p = byte(a, i, signs.a_signed) * byte(b, i, signs.b_signed);
    sum = sum ? sum + p : p;
  }
  if (!acc.is_const(0)) sum = sum + as(acc, dtypes::int32);
  return as(sum, acc.dtype());
}

// Whether the target renders BYTE_LUT on `lanes` words as one instruction: x86 vpshufb on 4, 8
// (AVX2) or 16 words (AVX-512BW).
bool has_byte_lut_instruction(const CodegenTarget& tg, int64_t lanes) {
  return (lanes == 4 || lanes == 8 || lanes == 16) && lanes <= tg.byte_shuffle_words;
}

// BYTE_LUT(w) in uint32 shifts and selects: the table as 4 words, the one of byte j's entry
// chosen by the byte's bits 2-3, the entry within it by bits 0-1.
UOp byte_lut_selects(const UOp& w, const std::vector<int64_t>& table) {
  auto c = [](int64_t v) { return UOp::cnst_int(dtypes::uint32, v); };
  auto as = [](const UOp& x, DType t) {
    return x.dtype() == t ? x : UOp::make(Op::BITCAST, t, {x});
  };
  UOp quarter[4];
  for (int64_t q = 0; q < 4; ++q) {
    int64_t v = 0;
    for (int64_t k = 0; k < 4; ++k) v |= table[4 * q + k] << (8 * k);
    quarter[q] = c(v);
  }
  const UOp x = as(w, dtypes::uint32);
  auto bit = [&](const UOp& b, int64_t m) { return b.alu(Op::AND, c(m)).alu(Op::CMPNE, c(0)); };
  UOp result;
  for (int64_t j = 0; j < 4; ++j) {
    const UOp b = x.alu(Op::SHR, c(8 * j)).alu(Op::AND, c(15));
    const UOp b4 = bit(b, 4);
    const UOp word =
        bit(b, 8).where(b4.where(quarter[3], quarter[2]), b4.where(quarter[1], quarter[0]));
    const UOp v = word.alu(Op::SHR, b.alu(Op::AND, c(3)).alu(Op::SHL, c(3)))
                      .alu(Op::AND, c(255))
                      .alu(Op::SHL, c(8 * j));
    result = j ? result.alu(Op::OR, v) : v;
  }
  return as(result, w.dtype());
}

}  // namespace

const PatternMatcher& pm_decomp() {
  static const PatternMatcher pm({
      // INDEX(b, i, true) -> INDEX(b, i): a gate that always holds
      {UPat(Op::INDEX, {UPat::var("b"), UPat::var("i"), UPat::cnst(1).with_dtype(dt_bool)}),
       [](const Match& m) -> R {
         return m.root().replace_src({m["b"], m["i"]});
       }},
      // LOAD(INDEX(b, i, false)) -> 0: a load whose gate never holds reads nothing
      {UPat(Op::LOAD,
            {UPat(Op::INDEX, {UPat::var("b"), UPat::var("i"), UPat::cnst(0).with_dtype(dt_bool)})}),
       [](const Match& m) -> R { return UOp::cnst_int(m.root().dtype(), 0); }},
      // MULACC(a, b, c) -> a*b + c
      {UPat(Op::MULACC, {UPat::var("a"), UPat::var("b"), UPat::var("c")}),
       [](const Match& m) -> R { return m["a"] * m["b"] + m["c"]; }},
      // DOT4(a, b, acc) without an instruction for it -> 4 byte products + acc
      {UPat(Op::DOT4, {UPat::var("a"), UPat::var("b"), UPat::var("acc")}),
       [](const Match& m) -> R {
         const Dot4Arg& signs = m.root().arg_as<Dot4Arg>();
         if (has_dot4_instruction(m.ctx<const CodegenTarget>(), signs, lanes_of(m.root())))
           return std::nullopt;
         return dot4_bytes(m["a"], m["b"], m["acc"], signs);
       }},
      // BYTE_LUT(w) without a byte shuffle for it -> shifts and selects per byte
      {UPat(Op::BYTE_LUT, {UPat::var("w")}),
       [](const Match& m) -> R {
         if (has_byte_lut_instruction(m.ctx<const CodegenTarget>(), lanes_of(m.root())))
           return std::nullopt;
         return byte_lut_selects(m["w"], m.root().arg_as<std::vector<int64_t>>());
       }},
      // POW(x, y) -> exp2(y*log2|x|) with C's special cases; ints through float64
      {UPat(Op::POW, {UPat::var("x"), UPat::var("y")}),
       [](const Match& m) -> R {
         const UOp &x = m["x"], &y = m["y"];
         if (is_float(x.dtype())) return float_pow(x, y);
         return float_pow(x.cast(dtypes::float64), y.cast(dtypes::float64)).cast(x.dtype());
       }},
      // EXP2 of float32 on CPUs -> a polynomial and exponent bits (vectorizes; no libm calls)
      {UPat(Op::EXP2, {UPat::var("x")}),
       [](const Match& m) -> R {
         if (m.ctx<const CodegenTarget>().is_gpu || m["x"].dtype().scalar != Scalar::Float32)
           return std::nullopt;
         return float32_exp2(m["x"]);
       }},
      // bool: ADD, MAX -> OR; MUL -> AND
      {UPat::ops({Op::ADD, Op::MAX}, {UPat::var("a", dt_bool), UPat::var("b")}),
       [](const Match& m) -> R { return m["a"].alu(Op::OR, m["b"]); }},
      {UPat(Op::MUL, {UPat::var("a", dt_bool), UPat::var("b")}),
       [](const Match& m) -> R { return m["a"].alu(Op::AND, m["b"]); }},
      // CAST from or to bfloat16 -> bit operations through float32
      {UPat(Op::CAST, {UPat::var("x")}),
       [](const Match& m) -> R {
         const UOp& x = m["x"];
         const DType to = m.root().dtype();
         if (is_bf16(x.dtype())) return bf16_to_f32(x).cast(to);
         if (is_bf16(to)) return f32_to_bf16(x.cast(dtypes::float32));
         // half <-> anything but float32 goes through float32 (no libcalls needed)
         const CodegenTarget& tg = m.ctx<const CodegenTarget>();
         const DType f32 = dtypes::float32.vec(to.count);
         if (!tg.native_half && (is_half(x.dtype()) || is_half(to)) && x.dtype() != f32 &&
             to != f32)
           return x.cast(f32).cast(to);
         return std::nullopt;
       }},
      // half/bfloat16 arithmetic without native support -> float32, then back
      {UPat(),
       [](const Match& m) -> R {
         const UOp& u = m.root();
         const CodegenTarget& tg = m.ctx<const CodegenTarget>();
         // WHERE is a select: it needs no arithmetic
         if (!alu_not_cast(u.op()) || u.op() == Op::WHERE) return std::nullopt;
         if (!needs_f32(u.src(0).dtype(), tg)) return std::nullopt;
         const DType f32 = dtypes::float32.vec(u.dtype().count);  // packed halves: per element
         std::vector<UOp> src;
         for (const UOp& s : u.src()) src.push_back(s.cast(f32));
         DType out = is_comparison(u.op()) ? u.dtype() : f32;
         UOp r = UOp::make(u.op(), out, std::move(src), u.arg());
         return r.cast(u.dtype());
       }},
  });
  return pm;
}

UOp decompose(const UOp& u, const CodegenTarget& target) {
  return graph_rewrite(u, pm_decomp(), const_cast<CodegenTarget*>(&target));
}

}  // namespace ugrad
