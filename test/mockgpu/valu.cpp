// VALU semantics for 32- and 64-bit integer and float ops (VOP1, VOP2, VOP3, VOP3SD) and the
// VOPC compares. Transcendentals (rcp, rsq, sqrt, exp, log, sin, cos) are computed in double and
// rounded once to the result type: hardware is specified to about 1 ulp, so these results are
// within hardware's error bound (tests use 1-2 ulp tolerances).
#include <bit>

#include "test/mockgpu/valu_impl.h"

namespace ugrad::mockgpu {

namespace {

u32 lo(u64 x) { return static_cast<u32>(x); }
i32 slo(u64 x) { return static_cast<i32>(static_cast<u32>(x)); }
u64 sx(i64 v) { return static_cast<u64>(v); }
i64 s24(u64 x) { return static_cast<i32>(static_cast<u32>(x) << 8) >> 8; }

int f32_exponent(float f) { return static_cast<int>(f32_bits(f) >> 23 & 0xff); }
int f64_exponent(double d) { return static_cast<int>(f64_bits(d) >> 52 & 0x7ff); }

// V_DIV_SCALE: pre-scales numerator or denominator of a division by 2^±64 (f32) / 2^±128 (f64)
// so the reciprocal-refinement sequence stays in range; VCC flags that a post-scale is needed.
template <typename T>
T div_scale(T s0, T den, T num, u32& vcc) {
  constexpr bool f32 = sizeof(T) == 4;
  constexpr int scale = f32 ? 64 : 128;
  constexpr int mant = f32 ? 23 : 52;
  constexpr int emax = f32 ? 254 : 2046;
  auto ex = [](T v) { return f32 ? f32_exponent(static_cast<float>(v)) : f64_exponent(v); };
  vcc = 0;
  if (num == 0 || den == 0) return std::numeric_limits<T>::quiet_NaN();
  if (std::isnan(num) || std::isnan(den) || std::isinf(num) || std::isinf(den))
    return s0;  // fixup handles the special values
  const int en = ex(num), ed = ex(den);
  if (en - ed >= (f32 ? 96 : 768)) {  // quotient may overflow
    vcc = 1;
    return s0 == den ? std::ldexp(s0, scale) : s0;
  }
  if (std::fpclassify(den) == FP_SUBNORMAL) return std::ldexp(s0, scale);
  T inv = T(1) / den, q = num / den;
  if (std::fpclassify(inv) == FP_SUBNORMAL && std::fpclassify(q) != FP_SUBNORMAL) {
    vcc = 1;
    return s0 == den ? std::ldexp(s0, scale) : s0;
  }
  if (std::fpclassify(inv) == FP_SUBNORMAL) return std::ldexp(s0, -scale);
  if (std::fpclassify(q) == FP_SUBNORMAL) {
    vcc = 1;
    return s0 == num ? std::ldexp(s0, scale) : s0;
  }
  if (en <= mant) return std::ldexp(s0, scale);  // tiny numerator
  (void)emax;
  return s0;
}

// V_DIV_FMAS: fma(S0, S1, S2), post-scaled by 2^±64 (f32) / 2^±128 (f64) when VCC is set.
template <typename T>
T div_fmas(T a, T b, T c, u32 vcc) {
  constexpr bool f32 = sizeof(T) == 4;
  T r = std::fma(a, b, c);
  if (!vcc) return r;
  int e = f32 ? f32_exponent(static_cast<float>(c)) : f64_exponent(c);
  int bias = f32 ? 127 : 1023;
  return std::ldexp(r, e > bias ? (f32 ? 64 : 128) : (f32 ? -64 : -128));
}

// V_DIV_FIXUP: special cases of num/den given the refined quotient q.
template <typename T>
T div_fixup(T q, T den, T num) {
  const bool neg = std::signbit(den) != std::signbit(num);
  const T inf = std::numeric_limits<T>::infinity();
  if (std::isnan(num)) return num;
  if (std::isnan(den)) return den;
  if ((den == 0 && num == 0) || (std::isinf(den) && std::isinf(num)))
    return std::numeric_limits<T>::quiet_NaN();
  if (den == 0 || std::isinf(num)) return neg ? -inf : inf;
  if (std::isinf(den) || num == 0) return neg ? -T(0) : T(0);
  if (std::isnan(q)) return neg ? -inf : inf;  // quotient overflowed in the refinement
  return neg ? -std::fabs(q) : std::fabs(q);
}

template <typename T>
T frexp_mant(T x) {
  if (std::isnan(x) || std::isinf(x)) return x;
  int e;
  return std::frexp(x, &e);
}
template <typename T>
i32 frexp_exp(T x) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return 0;
  int e;
  std::frexp(x, &e);
  return e;
}

// Approximate ops: exact double result, rounded once.
float rcp32(float x) { return static_cast<float>(1.0 / x); }
float rsq32(float x) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x))); }
float sqrt32(float x) { return static_cast<float>(std::sqrt(static_cast<double>(x))); }
float exp32(float x) { return static_cast<float>(std::exp2(static_cast<double>(x))); }
float log32(float x) { return static_cast<float>(std::log2(static_cast<double>(x))); }
// v_sin/v_cos take revolutions (x * 2π radians).
float sin32(float x) {
  if (std::isinf(x)) return std::numeric_limits<float>::quiet_NaN();
  double r = static_cast<double>(x) - std::floor(static_cast<double>(x));
  return static_cast<float>(std::sin(r * 2.0 * M_PI));
}
float cos32(float x) {
  if (std::isinf(x)) return std::numeric_limits<float>::quiet_NaN();
  double r = static_cast<double>(x) - std::floor(static_cast<double>(x));
  return static_cast<float>(std::cos(r * 2.0 * M_PI));
}

// v_readfirstlane / v_readlane: a VGPR lane into an SGPR; v_writelane: an SGPR into one lane.
void exec_readfirstlane(Wave& w, const Inst& in) {
  u32 exec = w.s[kExec];
  int lane = exec ? std::countr_zero(exec) : 0;
  u32 v = in.src[0] >= 256 ? w.v[in.src[0] - 256][lane]
                           : static_cast<u32>(scalar_operand(w, in, in.src[0], Ty::B32));
  write_sgpr(w, in.vdst, v);
}
void exec_readlane(Wave& w, const Inst& in) {
  u32 lane = static_cast<u32>(scalar_operand(w, in, in.src[1], Ty::B32)) & 31;
  if (in.src[0] < 256) w.fail(in, "v_readlane source must be a VGPR");
  write_sgpr(w, in.vdst, w.v[in.src[0] - 256][lane]);
}
void exec_writelane(Wave& w, const Inst& in) {
  u32 v = static_cast<u32>(scalar_operand(w, in, in.src[0], Ty::B32));
  u32 lane = static_cast<u32>(scalar_operand(w, in, in.src[1], Ty::B32)) & 31;
  w.v[in.vdst][lane] = v;
}

// v_mbcnt_lo: D = popcount(S0 & lanes below this one) + S1; v_mbcnt_hi adds nothing in wave32.
template <bool Lo>
void exec_mbcnt(Wave& w, const Inst& in) {
  u32 a[kLanes], b[kLanes];
  read_lanes(w, in, in.src[0], Ty::B32, a);
  read_lanes(w, in, in.src[1], Ty::B32, b);
  for (int l = 0; l < kLanes; ++l) {
    if (!(w.exec() >> l & 1)) continue;
    u32 below = Lo ? static_cast<u32>(std::popcount(a[l] & ((1u << l) - 1))) : 0u;
    w.v[in.vdst][l] = below + b[l];
  }
}

// All compares of one float type: the 16 IEEE predicates, and class.
template <Ty T>
void register_float_compares(Registry& r, const char* suffix) {
  const std::string sfx = suffix;
#define CMPF(cond, ...)                                                             \
  do {                                                                              \
    for (int x = 0; x < 2; ++x) {                                                   \
      std::string name = std::string(x ? "v_cmpx_" : "v_cmp_") + cond + "_" + sfx;  \
      if (x)                                                                        \
        UGRAD_VOP_T(r, name, Ty::B32, T, T, Ty::B32, 2, Cmpx, auto fa = V::get(a);  \
                    auto fb = V::get(b); (void)fa, (void)fb; return (__VA_ARGS__)); \
      else                                                                          \
        UGRAD_VOP_T(r, name, Ty::B32, T, T, Ty::B32, 2, Cmp, auto fa = V::get(a);   \
                    auto fb = V::get(b); (void)fa, (void)fb; return (__VA_ARGS__)); \
    }                                                                               \
  } while (0)
  struct V {
    static auto get(u64 x) {
      if constexpr (T == Ty::F32)
        return F32(x);
      else if constexpr (T == Ty::F64)
        return F64(x);
      else
        return F16(x);
    }
  };
  CMPF("f", false);
  CMPF("lt", fa < fb);
  CMPF("eq", fa == fb);
  CMPF("le", fa <= fb);
  CMPF("gt", fa > fb);
  CMPF("lg", fa < fb || fa > fb);
  CMPF("ge", fa >= fb);
  CMPF("o", !std::isnan(fa) && !std::isnan(fb));
  CMPF("u", std::isnan(fa) || std::isnan(fb));
  CMPF("nge", !(fa >= fb));
  CMPF("nlg", !(fa < fb || fa > fb));
  CMPF("ngt", !(fa > fb));
  CMPF("nle", !(fa <= fb));
  CMPF("neq", !(fa == fb));
  CMPF("nlt", !(fa < fb));
  CMPF("t", true);
#undef CMPF
  constexpr u64 quiet = T == Ty::F32 ? (u64{1} << 22) : T == Ty::F64 ? (u64{1} << 51) : 0x200;
  for (int x = 0; x < 2; ++x) {
    std::string name = std::string(x ? "v_cmpx_class_" : "v_cmp_class_") + sfx;
    if (x)
      UGRAD_VOP_T(r, name, Ty::B32, T, Ty::B32, Ty::B32, 2, Cmpx,
                  return fp_class(V::get(a), lo(b), (a & quiet) != 0));
    else
      UGRAD_VOP_T(r, name, Ty::B32, T, Ty::B32, Ty::B32, 2, Cmp,
                  return fp_class(V::get(a), lo(b), (a & quiet) != 0));
  }
}

// Integer compares of one type (I is the C++ type the bits are read as).
template <typename I, Ty T>
void register_int_compares(Registry& r, const char* suffix) {
  const std::string sfx = suffix;
#define CMPI(cond, expr)                                                         \
  do {                                                                           \
    std::string n1 = std::string("v_cmp_") + cond + "_" + sfx;                   \
    std::string n2 = std::string("v_cmpx_") + cond + "_" + sfx;                  \
    UGRAD_VOP_T(r, n1, Ty::B32, T, T, Ty::B32, 2, Cmp, I x = static_cast<I>(a);  \
                I y = static_cast<I>(b); (void)x, (void)y; return (expr));       \
    UGRAD_VOP_T(r, n2, Ty::B32, T, T, Ty::B32, 2, Cmpx, I x = static_cast<I>(a); \
                I y = static_cast<I>(b); (void)x, (void)y; return (expr));       \
  } while (0)
  CMPI("f", false);
  CMPI("lt", x < y);
  CMPI("eq", x == y);
  CMPI("le", x <= y);
  CMPI("gt", x > y);
  CMPI("ne", x != y);
  CMPI("ge", x >= y);
  CMPI("t", true);
#undef CMPI
}

}  // namespace

void register_valu(Registry& r) {
  // ---- moves, bit ops, shifts ----
  UGRAD_VOP(r, "v_mov_b32", B32, B32, B32, B32, 1, Normal, return a);
  UGRAD_VOP(r, "v_not_b32", B32, B32, B32, B32, 1, Normal, return lo(~a));
  UGRAD_VOP(r, "v_bfrev_b32", B32, B32, B32, B32, 1, Normal, u32 x = lo(a); u32 y = 0;
            for (int i = 0; i < 32; ++i) y |= (x >> i & 1) << (31 - i); return y);
  UGRAD_VOP(r, "v_clz_i32_u32", B32, B32, B32, B32, 1, Normal,
            return lo(a) ? std::countl_zero(lo(a)) : 0xffffffffu);
  UGRAD_VOP(r, "v_ctz_i32_b32", B32, B32, B32, B32, 1, Normal,
            return lo(a) ? std::countr_zero(lo(a)) : 0xffffffffu);
  UGRAD_VOP(r, "v_cls_i32", B32, B32, B32, B32, 1, Normal, u32 x = lo(a);
            if (x == 0 || x == ~0u) return 0xffffffffu;
            return static_cast<u32>(std::countl_zero(slo(a) < 0 ? ~x : x)));
  UGRAD_VOP(r, "v_and_b32", B32, B32, B32, B32, 2, Normal, return a & b);
  UGRAD_VOP(r, "v_or_b32", B32, B32, B32, B32, 2, Normal, return a | b);
  UGRAD_VOP(r, "v_xor_b32", B32, B32, B32, B32, 2, Normal, return a ^ b);
  UGRAD_VOP(r, "v_xnor_b32", B32, B32, B32, B32, 2, Normal, return lo(~(a ^ b)));
  UGRAD_VOP(r, "v_lshlrev_b32", B32, B32, B32, B32, 2, Normal, return lo(b << (a & 31)));
  UGRAD_VOP(r, "v_lshrrev_b32", B32, B32, B32, B32, 2, Normal, return lo(b) >> (a & 31));
  UGRAD_VOP(r, "v_ashrrev_i32", B32, B32, B32, B32, 2, Normal, return lo(sx(slo(b) >> (a & 31))));
  UGRAD_VOP(r, "v_lshlrev_b64", B64, B32, B64, B32, 2, Normal, return b << (a & 63));
  UGRAD_VOP(r, "v_lshrrev_b64", B64, B32, B64, B32, 2, Normal, return b >> (a & 63));
  UGRAD_VOP(r, "v_ashrrev_i64", B64, B32, B64, B32, 2, Normal,
            return sx(static_cast<i64>(b) >> (a & 63)));
  UGRAD_VOP(r, "v_bcnt_u32_b32", B32, B32, B32, B32, 2, Normal,
            return std::popcount(lo(a)) + lo(b));
  UGRAD_VOP(r, "v_bfe_u32", B32, B32, B32, B32, 3, Normal, u32 off = b & 31, w = c & 31;
            return w ? (lo(a) >> off) & ((1ull << w) - 1) : 0);
  // v_bfe_i32: (S0 >> off, arithmetic) & mask(width), sign-extended from bit width-1; width 0
  // gives 0 (as LLVM folds llvm.amdgcn.sbfe).
  UGRAD_VOP(r, "v_bfe_i32", B32, B32, B32, B32, 3, Normal, u32 off = b & 31, w = c & 31;
            if (!w) return 0; u32 x = static_cast<u32>(slo(a) >> off) & ((1u << w) - 1);
            if (x >> (w - 1) & 1) x |= ~0u << w; return x);
  UGRAD_VOP(r, "v_bfi_b32", B32, B32, B32, B32, 3, Normal, return (a & b) | (~a & c & 0xffffffffu));
  UGRAD_VOP(r, "v_bfm_b32", B32, B32, B32, B32, 2, Normal,
            return lo(((1ull << (a & 31)) - 1) << (b & 31)));
  UGRAD_VOP(r, "v_alignbit_b32", B32, B32, B32, B32, 3, Normal,
            return lo(((a << 32) | b) >> (c & 31)));
  UGRAD_VOP(r, "v_alignbyte_b32", B32, B32, B32, B32, 3, Normal,
            return lo(((a << 32) | b) >> (8 * (c & 3))));
  UGRAD_VOP(
      r, "v_perm_b32", B32, B32, B32, B32, 3, Normal, u64 bytes = (a << 32) | b; u32 d = 0;
      for (int i = 0; i < 4; ++i) {
        u32 sel = (c >> (8 * i)) & 0xff, v;
        if (sel < 8)
          v = (bytes >> (8 * sel)) & 0xff;
        else if (sel < 12) {
          int src_byte = sel == 8 ? 1 : sel == 9 ? 3 : sel == 10 ? 5 : 7;
          v = (bytes >> (8 * src_byte + 7) & 1) ? 0xff : 0;
        } else
          v = sel == 12 ? 0 : 0xff;
        d |= v << (8 * i);
      } return d);
  UGRAD_VOP(r, "v_lshl_or_b32", B32, B32, B32, B32, 3, Normal, return lo(a << (b & 31)) | lo(c));
  UGRAD_VOP(r, "v_and_or_b32", B32, B32, B32, B32, 3, Normal, return (a & b) | c);
  UGRAD_VOP(r, "v_or3_b32", B32, B32, B32, B32, 3, Normal, return a | b | c);
  UGRAD_VOP(r, "v_xor3_b32", B32, B32, B32, B32, 3, Normal, return a ^ b ^ c);
  UGRAD_VOP(r, "v_cndmask_b32", B32, B32, B32, B32, 2, MaskIn, return flag ? b : a);
  // ---- integer arithmetic ----
  // With the clamp bit these saturate to [0, 2^32 - 1] instead of wrapping.
  UGRAD_VOP(
      r, "v_add_nc_u32", B32, B32, B32, B32, 2, Normal, if (flag & kClampRequest) {
        flag = kClampDone;
        return std::min<u64>(u64{lo(a)} + lo(b), 0xffffffffu);
      } return lo(a + b));
  UGRAD_VOP(
      r, "v_sub_nc_u32", B32, B32, B32, B32, 2, Normal, if (flag & kClampRequest) {
        flag = kClampDone;
        return lo(a) > lo(b) ? lo(a) - lo(b) : 0;
      } return lo(a - b));
  UGRAD_VOP(r, "v_subrev_nc_u32", B32, B32, B32, B32, 2, Normal, return lo(b - a));
  UGRAD_VOP(r, "v_add_co_u32", B32, B32, B32, B32, 2, CarryOut, u64 s = a + b; flag = s >> 32;
            return lo(s));
  UGRAD_VOP(r, "v_sub_co_u32", B32, B32, B32, B32, 2, CarryOut, flag = b > a; return lo(a - b));
  UGRAD_VOP(r, "v_subrev_co_u32", B32, B32, B32, B32, 2, CarryOut, flag = a > b; return lo(b - a));
  UGRAD_VOP(r, "v_add_co_ci_u32", B32, B32, B32, B32, 2, CarryIO, u64 s = a + b + flag;
            flag = s >> 32; return lo(s));
  UGRAD_VOP(r, "v_sub_co_ci_u32", B32, B32, B32, B32, 2, CarryIO, u64 s = a - b - flag;
            flag = (s >> 32) != 0; return lo(s));
  UGRAD_VOP(r, "v_subrev_co_ci_u32", B32, B32, B32, B32, 2, CarryIO, u64 s = b - a - flag;
            flag = (s >> 32) != 0; return lo(s));
  UGRAD_VOP(r, "v_add3_u32", B32, B32, B32, B32, 3, Normal, return lo(a + b + c));
  UGRAD_VOP(r, "v_lshl_add_u32", B32, B32, B32, B32, 3, Normal, return lo((a << (b & 31)) + c));
  UGRAD_VOP(r, "v_add_lshl_u32", B32, B32, B32, B32, 3, Normal, return lo(lo(a + b) << (c & 31)));
  UGRAD_VOP(r, "v_xad_u32", B32, B32, B32, B32, 3, Normal, return lo((a ^ b) + c));
  UGRAD_VOP(r, "v_mul_lo_u32", B32, B32, B32, B32, 2, Normal, return lo(a * b));
  UGRAD_VOP(r, "v_mul_hi_u32", B32, B32, B32, B32, 2, Normal, return (a * b) >> 32);
  UGRAD_VOP(r, "v_mul_hi_i32", B32, B32, B32, B32, 2, Normal,
            return lo(sx((i64{slo(a)} * slo(b)) >> 32)));
  UGRAD_VOP(r, "v_mul_u32_u24", B32, B32, B32, B32, 2, Normal,
            return lo((a & 0xffffff) * (b & 0xffffff)));
  UGRAD_VOP(r, "v_mul_hi_u32_u24", B32, B32, B32, B32, 2, Normal,
            return ((a & 0xffffff) * (b & 0xffffff)) >> 32);
  UGRAD_VOP(r, "v_mul_i32_i24", B32, B32, B32, B32, 2, Normal, return lo(sx(s24(a) * s24(b))));
  UGRAD_VOP(r, "v_mul_hi_i32_i24", B32, B32, B32, B32, 2, Normal,
            return lo(sx((s24(a) * s24(b)) >> 32)));
  UGRAD_VOP(r, "v_mad_u32_u24", B32, B32, B32, B32, 3, Normal,
            return lo((a & 0xffffff) * (b & 0xffffff) + c));
  UGRAD_VOP(r, "v_mad_i32_i24", B32, B32, B32, B32, 3, Normal,
            return lo(sx(s24(a) * s24(b) + slo(c))));
  UGRAD_VOP(r, "v_mad_u64_u32", B64, B32, B32, B64, 3, CarryOut, u64 p = lo(a) * u64{lo(b)};
            u64 s = p + c; flag = s < p; return s);
  UGRAD_VOP(r, "v_mad_i64_i32", B64, B32, B32, B64, 3, CarryOut,
            __int128 p = static_cast<__int128>(i64{slo(a)} * slo(b)) + static_cast<i64>(c);
            flag = p != static_cast<i64>(p); return static_cast<u64>(static_cast<i64>(p)));
  UGRAD_VOP(r, "v_max_i32", B32, B32, B32, B32, 2, Normal, return slo(a) > slo(b) ? a : b);
  UGRAD_VOP(r, "v_min_i32", B32, B32, B32, B32, 2, Normal, return slo(a) < slo(b) ? a : b);
  UGRAD_VOP(r, "v_max_u32", B32, B32, B32, B32, 2, Normal, return lo(a) > lo(b) ? a : b);
  UGRAD_VOP(r, "v_min_u32", B32, B32, B32, B32, 2, Normal, return lo(a) < lo(b) ? a : b);
  UGRAD_VOP(r, "v_max3_i32", B32, B32, B32, B32, 3, Normal,
            return lo(sx(std::max({slo(a), slo(b), slo(c)}))));
  UGRAD_VOP(r, "v_min3_i32", B32, B32, B32, B32, 3, Normal,
            return lo(sx(std::min({slo(a), slo(b), slo(c)}))));
  UGRAD_VOP(r, "v_max3_u32", B32, B32, B32, B32, 3, Normal, return std::max({lo(a), lo(b), lo(c)}));
  UGRAD_VOP(r, "v_min3_u32", B32, B32, B32, B32, 3, Normal, return std::min({lo(a), lo(b), lo(c)}));
  UGRAD_VOP(r, "v_med3_i32", B32, B32, B32, B32, 3, Normal,
            return lo(sx(
                std::max(std::min(slo(a), slo(b)), std::min(std::max(slo(a), slo(b)), slo(c))))));
  UGRAD_VOP(r, "v_med3_u32", B32, B32, B32, B32, 3, Normal,
            return std::max(std::min(lo(a), lo(b)), std::min(std::max(lo(a), lo(b)), lo(c))));
  // gfx11 V_MAXMIN: D = min(max(S0, S1), S2); V_MINMAX: D = max(min(S0, S1), S2).
  UGRAD_VOP(r, "v_maxmin_i32", B32, B32, B32, B32, 3, Normal,
            return lo(sx(std::min(std::max(slo(a), slo(b)), slo(c)))));
  UGRAD_VOP(r, "v_minmax_i32", B32, B32, B32, B32, 3, Normal,
            return lo(sx(std::max(std::min(slo(a), slo(b)), slo(c)))));
  UGRAD_VOP(r, "v_maxmin_u32", B32, B32, B32, B32, 3, Normal,
            return std::min(std::max(lo(a), lo(b)), lo(c)));
  UGRAD_VOP(r, "v_minmax_u32", B32, B32, B32, B32, 3, Normal,
            return std::max(std::min(lo(a), lo(b)), lo(c)));
  // ---- f32 arithmetic ----
  UGRAD_VOP(r, "v_add_f32", F32, F32, F32, F32, 2, Normal, return R32(F32(a) + F32(b)));
  UGRAD_VOP(r, "v_sub_f32", F32, F32, F32, F32, 2, Normal, return R32(F32(a) - F32(b)));
  UGRAD_VOP(r, "v_subrev_f32", F32, F32, F32, F32, 2, Normal, return R32(F32(b) - F32(a)));
  UGRAD_VOP(r, "v_mul_f32", F32, F32, F32, F32, 2, Normal, return R32(F32(a) * F32(b)));
  UGRAD_VOP(r, "v_max_f32", F32, F32, F32, F32, 2, Normal, return R32(ieee_max(F32(a), F32(b))));
  UGRAD_VOP(r, "v_min_f32", F32, F32, F32, F32, 2, Normal, return R32(ieee_min(F32(a), F32(b))));
  UGRAD_VOP(r, "v_max3_f32", F32, F32, F32, F32, 3, Normal,
            return R32(ieee_max(ieee_max(F32(a), F32(b)), F32(c))));
  UGRAD_VOP(r, "v_min3_f32", F32, F32, F32, F32, 3, Normal,
            return R32(ieee_min(ieee_min(F32(a), F32(b)), F32(c))));
  UGRAD_VOP(r, "v_med3_f32", F32, F32, F32, F32, 3, Normal,
            return R32(med3(F32(a), F32(b), F32(c))));
  UGRAD_VOP(r, "v_maxmin_f32", F32, F32, F32, F32, 3, Normal,
            return R32(ieee_min(ieee_max(F32(a), F32(b)), F32(c))));
  UGRAD_VOP(r, "v_minmax_f32", F32, F32, F32, F32, 3, Normal,
            return R32(ieee_max(ieee_min(F32(a), F32(b)), F32(c))));
  UGRAD_VOP(r, "v_fma_f32", F32, F32, F32, F32, 3, Normal,
            return R32(std::fma(F32(a), F32(b), F32(c))));
  UGRAD_VOP(r, "v_fmamk_f32", F32, F32, F32, F32, 3, Normal,
            return R32(std::fma(F32(a), F32(b), F32(c))));
  UGRAD_VOP(r, "v_fmaak_f32", F32, F32, F32, F32, 3, Normal,
            return R32(std::fma(F32(a), F32(b), F32(c))));
  UGRAD_VOP(r, "v_fmac_f32", F32, F32, F32, F32, 3, Normal,
            return R32(std::fma(F32(a), F32(b), F32(c))));
  const_cast<VopSpec*>(static_cast<const VopSpec*>(r["v_fmac_f32"].spec))->acc = true;
  UGRAD_VOP(r, "v_ldexp_f32", F32, F32, B32, B32, 2, Normal,
            return R32(std::ldexp(F32(a), std::clamp(slo(b), -1000, 1000))));
  UGRAD_VOP(r, "v_div_scale_f32", F32, F32, F32, F32, 3, CarryOut,
            return R32(div_scale(F32(a), F32(b), F32(c), flag)));
  UGRAD_VOP(r, "v_div_fmas_f32", F32, F32, F32, F32, 3, MaskIn,
            return R32(div_fmas(F32(a), F32(b), F32(c), flag)));
  UGRAD_VOP(r, "v_div_fixup_f32", F32, F32, F32, F32, 3, Normal,
            return R32(div_fixup(F32(a), F32(b), F32(c))));
  // ---- f32 unary (VOP1) ----
  UGRAD_VOP(r, "v_rcp_f32", F32, F32, F32, F32, 1, Normal, return R32(rcp32(F32(a))));
  UGRAD_VOP(r, "v_rcp_iflag_f32", F32, F32, F32, F32, 1, Normal, return R32(rcp32(F32(a))));
  UGRAD_VOP(r, "v_rsq_f32", F32, F32, F32, F32, 1, Normal, return R32(rsq32(F32(a))));
  UGRAD_VOP(r, "v_sqrt_f32", F32, F32, F32, F32, 1, Normal, return R32(sqrt32(F32(a))));
  UGRAD_VOP(r, "v_exp_f32", F32, F32, F32, F32, 1, Normal, return R32(exp32(F32(a))));
  UGRAD_VOP(r, "v_log_f32", F32, F32, F32, F32, 1, Normal, return R32(log32(F32(a))));
  UGRAD_VOP(r, "v_sin_f32", F32, F32, F32, F32, 1, Normal, return R32(sin32(F32(a))));
  UGRAD_VOP(r, "v_cos_f32", F32, F32, F32, F32, 1, Normal, return R32(cos32(F32(a))));
  UGRAD_VOP(r, "v_floor_f32", F32, F32, F32, F32, 1, Normal, return R32(std::floor(F32(a))));
  UGRAD_VOP(r, "v_ceil_f32", F32, F32, F32, F32, 1, Normal, return R32(std::ceil(F32(a))));
  UGRAD_VOP(r, "v_trunc_f32", F32, F32, F32, F32, 1, Normal, return R32(std::trunc(F32(a))));
  UGRAD_VOP(r, "v_rndne_f32", F32, F32, F32, F32, 1, Normal, return R32(std::nearbyint(F32(a))));
  UGRAD_VOP(r, "v_fract_f32", F32, F32, F32, F32, 1, Normal, float x = F32(a);
            if (std::isinf(x)) return R32(std::numeric_limits<float>::quiet_NaN());
            return R32(std::fmin(x - std::floor(x), 0x1.fffffep-1f)));
  UGRAD_VOP(r, "v_frexp_mant_f32", F32, F32, F32, F32, 1, Normal, return R32(frexp_mant(F32(a))));
  UGRAD_VOP(r, "v_frexp_exp_i32_f32", B32, F32, F32, F32, 1, Normal,
            return lo(sx(frexp_exp(F32(a)))));
  UGRAD_VOP(r, "v_cvt_f32_i32", F32, B32, B32, B32, 1, Normal,
            return R32(static_cast<float>(slo(a))));
  UGRAD_VOP(r, "v_cvt_f32_u32", F32, B32, B32, B32, 1, Normal,
            return R32(static_cast<float>(lo(a))));
  UGRAD_VOP(r, "v_cvt_i32_f32", B32, F32, F32, F32, 1, Normal, return lo(sx(cvt_sat<i32>(F32(a)))));
  UGRAD_VOP(r, "v_cvt_u32_f32", B32, F32, F32, F32, 1, Normal, return cvt_sat<u32>(F32(a)));
  UGRAD_VOP(r, "v_cvt_f32_ubyte0", F32, B32, B32, B32, 1, Normal, return R32(float(a & 0xff)));
  UGRAD_VOP(r, "v_cvt_f32_ubyte1", F32, B32, B32, B32, 1, Normal, return R32(float(a >> 8 & 0xff)));
  UGRAD_VOP(r, "v_cvt_f32_ubyte2", F32, B32, B32, B32, 1, Normal,
            return R32(float(a >> 16 & 0xff)));
  UGRAD_VOP(r, "v_cvt_f32_ubyte3", F32, B32, B32, B32, 1, Normal,
            return R32(float(a >> 24 & 0xff)));
  UGRAD_VOP(r, "v_cvt_floor_i32_f32", B32, F32, F32, F32, 1, Normal,
            return lo(sx(cvt_sat<i32>(std::floor(F32(a))))));
  UGRAD_VOP(r, "v_cvt_nearest_i32_f32", B32, F32, F32, F32, 1, Normal,
            return lo(sx(cvt_sat<i32>(std::floor(F32(a) + 0.5f)))));
  // ---- f64 ----
  UGRAD_VOP(r, "v_add_f64", F64, F64, F64, F64, 2, Normal, return R64(F64(a) + F64(b)));
  UGRAD_VOP(r, "v_mul_f64", F64, F64, F64, F64, 2, Normal, return R64(F64(a) * F64(b)));
  UGRAD_VOP(r, "v_fma_f64", F64, F64, F64, F64, 3, Normal,
            return R64(std::fma(F64(a), F64(b), F64(c))));
  UGRAD_VOP(r, "v_max_f64", F64, F64, F64, F64, 2, Normal, return R64(ieee_max(F64(a), F64(b))));
  UGRAD_VOP(r, "v_min_f64", F64, F64, F64, F64, 2, Normal, return R64(ieee_min(F64(a), F64(b))));
  UGRAD_VOP(r, "v_ldexp_f64", F64, F64, B32, B32, 2, Normal,
            return R64(std::ldexp(F64(a), std::clamp(slo(b), -5000, 5000))));
  UGRAD_VOP(r, "v_div_scale_f64", F64, F64, F64, F64, 3, CarryOut,
            return R64(div_scale(F64(a), F64(b), F64(c), flag)));
  UGRAD_VOP(r, "v_div_fmas_f64", F64, F64, F64, F64, 3, MaskIn,
            return R64(div_fmas(F64(a), F64(b), F64(c), flag)));
  UGRAD_VOP(r, "v_div_fixup_f64", F64, F64, F64, F64, 3, Normal,
            return R64(div_fixup(F64(a), F64(b), F64(c))));
  // f64 reciprocal/rsq/sqrt: hardware is approximate (~1 ulp at f32-like precision for rcp/rsq,
  // which LLVM refines with Newton steps); correctly rounded results are within that bound.
  UGRAD_VOP(r, "v_rcp_f64", F64, F64, F64, F64, 1, Normal, return R64(1.0 / F64(a)));
  UGRAD_VOP(r, "v_rsq_f64", F64, F64, F64, F64, 1, Normal, return R64(1.0 / std::sqrt(F64(a))));
  UGRAD_VOP(r, "v_sqrt_f64", F64, F64, F64, F64, 1, Normal, return R64(std::sqrt(F64(a))));
  UGRAD_VOP(r, "v_floor_f64", F64, F64, F64, F64, 1, Normal, return R64(std::floor(F64(a))));
  UGRAD_VOP(r, "v_ceil_f64", F64, F64, F64, F64, 1, Normal, return R64(std::ceil(F64(a))));
  UGRAD_VOP(r, "v_trunc_f64", F64, F64, F64, F64, 1, Normal, return R64(std::trunc(F64(a))));
  UGRAD_VOP(r, "v_rndne_f64", F64, F64, F64, F64, 1, Normal, return R64(std::nearbyint(F64(a))));
  UGRAD_VOP(r, "v_fract_f64", F64, F64, F64, F64, 1, Normal, double x = F64(a);
            if (std::isinf(x)) return R64(std::numeric_limits<double>::quiet_NaN());
            return R64(std::fmin(x - std::floor(x), 0x1.fffffffffffffp-1)));
  UGRAD_VOP(r, "v_frexp_mant_f64", F64, F64, F64, F64, 1, Normal, return R64(frexp_mant(F64(a))));
  UGRAD_VOP(r, "v_frexp_exp_i32_f64", B32, F64, F64, F64, 1, Normal,
            return lo(sx(frexp_exp(F64(a)))));
  UGRAD_VOP(r, "v_cvt_f32_f64", F32, F64, F64, F64, 1, Normal,
            return R32(static_cast<float>(F64(a))));
  UGRAD_VOP(r, "v_cvt_f64_f32", F64, F32, F32, F32, 1, Normal, return R64(F32(a)));
  UGRAD_VOP(r, "v_cvt_f64_i32", F64, B32, B32, B32, 1, Normal, return R64(slo(a)));
  UGRAD_VOP(r, "v_cvt_f64_u32", F64, B32, B32, B32, 1, Normal, return R64(lo(a)));
  UGRAD_VOP(r, "v_cvt_i32_f64", B32, F64, F64, F64, 1, Normal, return lo(sx(cvt_sat<i32>(F64(a)))));
  UGRAD_VOP(r, "v_cvt_u32_f64", B32, F64, F64, F64, 1, Normal, return cvt_sat<u32>(F64(a)));
  // ---- compares ----
  register_float_compares<Ty::F32>(r, "f32");
  register_float_compares<Ty::F64>(r, "f64");
  register_int_compares<i32, Ty::B32>(r, "i32");
  register_int_compares<u32, Ty::B32>(r, "u32");
  register_int_compares<i64, Ty::B64>(r, "i64");
  register_int_compares<u64, Ty::B64>(r, "u64");
  // ---- cross-lane ----
  r["v_readfirstlane_b32"] = {exec_readfirstlane, nullptr};
  r["v_readlane_b32"] = {exec_readlane, nullptr};
  r["v_writelane_b32"] = {exec_writelane, nullptr};
  r["v_mbcnt_lo_u32_b32"] = {exec_mbcnt<true>, nullptr};
  r["v_mbcnt_hi_u32_b32"] = {exec_mbcnt<false>, nullptr};
}

}  // namespace ugrad::mockgpu
