// VALU semantics for 16-bit ops: f16 arithmetic, 16-bit integers and the f16 <-> f32/int
// conversions. Results go to the low half of the destination VGPR (the high half, op_sel[3] in
// VOP3), and the other half is preserved, as on RDNA3 without true16. f16 arithmetic is computed
// in float or double and rounded once to f16 (exact for add/sub/mul/div/sqrt; fma rounds through
// double, which differs from a fused f16 fma only in rare double-rounding ties).
#include "test/mockgpu/valu_impl.h"

namespace ugrad::mockgpu {

namespace {

u32 lo(u64 x) { return static_cast<u32>(x); }
int16_t s16(u64 x) { return static_cast<int16_t>(static_cast<u16>(x)); }
u64 h(u64 x) { return x & 0xffff; }

// f32 -> f16 rounding toward zero (v_cvt_pk_rtz_f16_f32).
u16 f16_rtz(float f) {
  u16 r = static_cast<u16>(R16(f));
  if (std::isnan(f) || std::isinf(f)) return r;
  float back = F16(r);
  if (std::fabs(back) > std::fabs(f)) r = static_cast<u16>(r - 1);  // one ulp toward zero
  if ((r & 0x7fff) == 0x7c00) r = static_cast<u16>((r & 0x8000) | 0x7bff);
  return r;
}

template <typename I>
I cvt16(float f) {
  return cvt_sat<I>(f);
}

}  // namespace

void register_valu_f16(Registry& r) {
  // ---- f16 arithmetic ----
  UGRAD_VOP(r, "v_add_f16", F16, F16, F16, F16, 2, Normal, return R16(F16(a) + F16(b)));
  UGRAD_VOP(r, "v_sub_f16", F16, F16, F16, F16, 2, Normal, return R16(F16(a) - F16(b)));
  UGRAD_VOP(r, "v_subrev_f16", F16, F16, F16, F16, 2, Normal, return R16(F16(b) - F16(a)));
  UGRAD_VOP(r, "v_mul_f16", F16, F16, F16, F16, 2, Normal, return R16(F16(a) * F16(b)));
  UGRAD_VOP(r, "v_max_f16", F16, F16, F16, F16, 2, Normal, return R16(ieee_max(F16(a), F16(b))));
  UGRAD_VOP(r, "v_min_f16", F16, F16, F16, F16, 2, Normal, return R16(ieee_min(F16(a), F16(b))));
  UGRAD_VOP(r, "v_max3_f16", F16, F16, F16, F16, 3, Normal,
            return R16(ieee_max(ieee_max(F16(a), F16(b)), F16(c))));
  UGRAD_VOP(r, "v_min3_f16", F16, F16, F16, F16, 3, Normal,
            return R16(ieee_min(ieee_min(F16(a), F16(b)), F16(c))));
  UGRAD_VOP(r, "v_med3_f16", F16, F16, F16, F16, 3, Normal,
            return R16(med3(F16(a), F16(b), F16(c))));
  UGRAD_VOP(
      r, "v_fma_f16", F16, F16, F16, F16, 3, Normal,
      return R16(static_cast<float>(std::fma(double{F16(a)}, double{F16(b)}, double{F16(c)}))));
  UGRAD_VOP(
      r, "v_fmac_f16", F16, F16, F16, F16, 3, Normal,
      return R16(static_cast<float>(std::fma(double{F16(a)}, double{F16(b)}, double{F16(c)}))));
  const_cast<VopSpec*>(static_cast<const VopSpec*>(r["v_fmac_f16"].spec))->acc = true;
  UGRAD_VOP(
      r, "v_fmamk_f16", F16, F16, F16, F16, 3, Normal,
      return R16(static_cast<float>(std::fma(double{F16(a)}, double{F16(b)}, double{F16(c)}))));
  UGRAD_VOP(
      r, "v_fmaak_f16", F16, F16, F16, F16, 3, Normal,
      return R16(static_cast<float>(std::fma(double{F16(a)}, double{F16(b)}, double{F16(c)}))));
  UGRAD_VOP(r, "v_ldexp_f16", F16, F16, B32, B32, 2, Normal,
            return R16(std::ldexp(F16(a), std::clamp<int>(s16(b), -100, 100))));
  UGRAD_VOP(
      r, "v_div_fixup_f16", F16, F16, F16, F16, 3, Normal, float q = F16(a), d = F16(b), n = F16(c);
      const bool neg = std::signbit(d) != std::signbit(n);
      const float inf = std::numeric_limits<float>::infinity(); if (std::isnan(n)) return R16(n);
      if (std::isnan(d)) return R16(d);
      if ((d == 0 && n == 0) ||
          (std::isinf(d) && std::isinf(n))) return R16(std::numeric_limits<float>::quiet_NaN());
      if (d == 0 || std::isinf(n)) return R16(neg ? -inf : inf);
      if (std::isinf(d) || n == 0) return R16(neg ? -0.0f : 0.0f);
      return R16(neg ? -std::fabs(q) : std::fabs(q)));
  // ---- f16 unary: transcendentals in double, rounded once ----
  UGRAD_VOP(r, "v_rcp_f16", F16, F16, F16, F16, 1, Normal,
            return R16(static_cast<float>(1.0 / F16(a))));
  UGRAD_VOP(r, "v_rsq_f16", F16, F16, F16, F16, 1, Normal,
            return R16(static_cast<float>(1.0 / std::sqrt(double{F16(a)}))));
  UGRAD_VOP(r, "v_sqrt_f16", F16, F16, F16, F16, 1, Normal,
            return R16(static_cast<float>(std::sqrt(double{F16(a)}))));
  UGRAD_VOP(r, "v_exp_f16", F16, F16, F16, F16, 1, Normal,
            return R16(static_cast<float>(std::exp2(double{F16(a)}))));
  UGRAD_VOP(r, "v_log_f16", F16, F16, F16, F16, 1, Normal,
            return R16(static_cast<float>(std::log2(double{F16(a)}))));
  UGRAD_VOP(r, "v_sin_f16", F16, F16, F16, F16, 1, Normal, double x = F16(a);
            return R16(static_cast<float>(std::sin((x - std::floor(x)) * 2.0 * M_PI))));
  UGRAD_VOP(r, "v_cos_f16", F16, F16, F16, F16, 1, Normal, double x = F16(a);
            return R16(static_cast<float>(std::cos((x - std::floor(x)) * 2.0 * M_PI))));
  UGRAD_VOP(r, "v_floor_f16", F16, F16, F16, F16, 1, Normal, return R16(std::floor(F16(a))));
  UGRAD_VOP(r, "v_ceil_f16", F16, F16, F16, F16, 1, Normal, return R16(std::ceil(F16(a))));
  UGRAD_VOP(r, "v_trunc_f16", F16, F16, F16, F16, 1, Normal, return R16(std::trunc(F16(a))));
  UGRAD_VOP(r, "v_rndne_f16", F16, F16, F16, F16, 1, Normal, return R16(std::nearbyint(F16(a))));
  UGRAD_VOP(r, "v_fract_f16", F16, F16, F16, F16, 1, Normal, float x = F16(a);
            if (std::isinf(x)) return R16(std::numeric_limits<float>::quiet_NaN());
            return R16(std::fmin(x - std::floor(x), F16(0x3bff))));
  UGRAD_VOP(r, "v_frexp_mant_f16", F16, F16, F16, F16, 1, Normal, float x = F16(a);
            if (std::isnan(x) || std::isinf(x)) return h(a); int e; return R16(std::frexp(x, &e)));
  UGRAD_VOP(r, "v_frexp_exp_i16_f16", B16, F16, F16, F16, 1, Normal, float x = F16(a);
            if (std::isnan(x) || std::isinf(x) || x == 0) return 0; int e; std::frexp(x, &e);
            return h(static_cast<u64>(e)));
  // ---- conversions ----
  UGRAD_VOP(r, "v_cvt_f32_f16", F32, F16, F16, F16, 1, Normal, return R32(F16(a)));
  UGRAD_VOP(r, "v_cvt_f16_f32", F16, F32, F32, F32, 1, Normal, return R16(F32(a)));
  UGRAD_VOP(r, "v_cvt_f16_i16", F16, B16, B16, B16, 1, Normal,
            return R16(static_cast<float>(s16(a))));
  UGRAD_VOP(r, "v_cvt_f16_u16", F16, B16, B16, B16, 1, Normal,
            return R16(static_cast<float>(h(a))));
  UGRAD_VOP(r, "v_cvt_i16_f16", B16, F16, F16, F16, 1, Normal,
            return h(static_cast<u64>(cvt16<int16_t>(F16(a)))));
  UGRAD_VOP(r, "v_cvt_u16_f16", B16, F16, F16, F16, 1, Normal, return cvt16<u16>(F16(a)));
  UGRAD_VOP(r, "v_cvt_i32_i16", B32, B16, B16, B16, 1, Normal,
            return lo(static_cast<u64>(i64{s16(a)})));
  UGRAD_VOP(r, "v_cvt_u32_u16", B32, B16, B16, B16, 1, Normal, return h(a));
  UGRAD_VOP(r, "v_pack_b32_f16", B32, F16, F16, F16, 2, Normal, return h(a) | h(b) << 16);
  UGRAD_VOP(r, "v_cvt_pk_rtz_f16_f32", B32, F32, F32, F32, 2, Normal,
            return u64{f16_rtz(F32(a))} | u64{f16_rtz(F32(b))} << 16);
  UGRAD_VOP(r, "v_cvt_pk_u16_u32", B32, B32, B32, B32, 2, Normal,
            return std::min<u64>(lo(a), 0xffff) | std::min<u64>(lo(b), 0xffff) << 16);
  UGRAD_VOP(
      r, "v_cvt_pk_i16_i32", B32, B32, B32, B32, 2, Normal,
      auto sat =
          [](u64 v) {
            return h(static_cast<u64>(std::clamp<i64>(static_cast<i32>(lo(v)), -32768, 32767)));
          };
      return sat(a) | sat(b) << 16);
  // ---- 16-bit integers ----
  UGRAD_VOP(r, "v_mov_b16", B16, B16, B16, B16, 1, Normal, return h(a));
  UGRAD_VOP(r, "v_not_b16", B16, B16, B16, B16, 1, Normal, return h(~a));
  UGRAD_VOP(r, "v_and_b16", B16, B16, B16, B16, 2, Normal, return h(a & b));
  UGRAD_VOP(r, "v_or_b16", B16, B16, B16, B16, 2, Normal, return h(a | b));
  UGRAD_VOP(r, "v_xor_b16", B16, B16, B16, B16, 2, Normal, return h(a ^ b));
  // With the clamp bit these saturate to [0, 65535] instead of wrapping.
  UGRAD_VOP(
      r, "v_add_nc_u16", B16, B16, B16, B16, 2, Normal, if (flag & kClampRequest) {
        flag = kClampDone;
        return std::min<u64>(u64{h(a)} + h(b), 0xffff);
      } return h(a + b));
  UGRAD_VOP(
      r, "v_sub_nc_u16", B16, B16, B16, B16, 2, Normal, if (flag & kClampRequest) {
        flag = kClampDone;
        return h(a) > h(b) ? h(a) - h(b) : 0;
      } return h(a - b));
  UGRAD_VOP(r, "v_add_nc_i16", B16, B16, B16, B16, 2, Normal, return h(a + b));
  UGRAD_VOP(r, "v_sub_nc_i16", B16, B16, B16, B16, 2, Normal, return h(a - b));
  UGRAD_VOP(r, "v_mul_lo_u16", B16, B16, B16, B16, 2, Normal, return h(a * b));
  UGRAD_VOP(r, "v_lshlrev_b16", B16, B16, B16, B16, 2, Normal, return h(b << (a & 15)));
  UGRAD_VOP(r, "v_lshrrev_b16", B16, B16, B16, B16, 2, Normal, return h(b) >> (a & 15));
  UGRAD_VOP(r, "v_ashrrev_i16", B16, B16, B16, B16, 2, Normal,
            return h(static_cast<u64>(static_cast<i64>(s16(b) >> (a & 15)))));
  UGRAD_VOP(r, "v_max_i16", B16, B16, B16, B16, 2, Normal, return s16(a) > s16(b) ? h(a) : h(b));
  UGRAD_VOP(r, "v_min_i16", B16, B16, B16, B16, 2, Normal, return s16(a) < s16(b) ? h(a) : h(b));
  UGRAD_VOP(r, "v_max_u16", B16, B16, B16, B16, 2, Normal, return h(a) > h(b) ? h(a) : h(b));
  UGRAD_VOP(r, "v_min_u16", B16, B16, B16, B16, 2, Normal, return h(a) < h(b) ? h(a) : h(b));
  // Three-operand 16-bit integer max/min/median (ISA: D = max(S0, S1, S2) etc.).
  UGRAD_VOP(r, "v_max3_i16", B16, B16, B16, B16, 3, Normal,
            return h(static_cast<u64>(std::max({s16(a), s16(b), s16(c)}))));
  UGRAD_VOP(r, "v_min3_i16", B16, B16, B16, B16, 3, Normal,
            return h(static_cast<u64>(std::min({s16(a), s16(b), s16(c)}))));
  UGRAD_VOP(r, "v_max3_u16", B16, B16, B16, B16, 3, Normal, return std::max({h(a), h(b), h(c)}));
  UGRAD_VOP(r, "v_min3_u16", B16, B16, B16, B16, 3, Normal, return std::min({h(a), h(b), h(c)}));
  UGRAD_VOP(r, "v_med3_i16", B16, B16, B16, B16, 3, Normal,
            return h(static_cast<u64>(
                std::max(std::min(s16(a), s16(b)), std::min(std::max(s16(a), s16(b)), s16(c))))));
  UGRAD_VOP(r, "v_med3_u16", B16, B16, B16, B16, 3, Normal,
            return std::max(std::min(h(a), h(b)), std::min(std::max(h(a), h(b)), h(c))));
  // gfx11 V_MAXMIN: D = min(max(S0, S1), S2); V_MINMAX: D = max(min(S0, S1), S2).
  UGRAD_VOP(r, "v_maxmin_f16", F16, F16, F16, F16, 3, Normal,
            return R16(ieee_min(ieee_max(F16(a), F16(b)), F16(c))));
  UGRAD_VOP(r, "v_minmax_f16", F16, F16, F16, F16, 3, Normal,
            return R16(ieee_max(ieee_min(F16(a), F16(b)), F16(c))));
  UGRAD_VOP(r, "v_mad_u16", B16, B16, B16, B16, 3, Normal, return h(a * b + c));
  UGRAD_VOP(r, "v_mad_i16", B16, B16, B16, B16, 3, Normal, return h(a * b + c));
  UGRAD_VOP(r, "v_mad_u32_u16", B32, B16, B16, B32, 3, Normal, return lo(h(a) * h(b) + c));
  UGRAD_VOP(r, "v_mad_i32_i16", B32, B16, B16, B32, 3, Normal,
            return lo(static_cast<u64>(i64{s16(a)} * s16(b) + static_cast<i32>(lo(c)))));
  // ---- 16-bit compares ----
#define CMP16(name, T, ...)                                                  \
  UGRAD_VOP(r, "v_cmp_" name, B32, T, T, B32, 2, Cmp, return (__VA_ARGS__)); \
  UGRAD_VOP(r, "v_cmpx_" name, B32, T, T, B32, 2, Cmpx, return (__VA_ARGS__))
  CMP16("lt_f16", F16, F16(a) < F16(b));
  CMP16("eq_f16", F16, F16(a) == F16(b));
  CMP16("le_f16", F16, F16(a) <= F16(b));
  CMP16("gt_f16", F16, F16(a) > F16(b));
  CMP16("lg_f16", F16, F16(a) < F16(b) || F16(a) > F16(b));
  CMP16("ge_f16", F16, F16(a) >= F16(b));
  CMP16("o_f16", F16, !std::isnan(F16(a)) && !std::isnan(F16(b)));
  CMP16("u_f16", F16, std::isnan(F16(a)) || std::isnan(F16(b)));
  CMP16("nge_f16", F16, !(F16(a) >= F16(b)));
  CMP16("nlg_f16", F16, !(F16(a) < F16(b) || F16(a) > F16(b)));
  CMP16("ngt_f16", F16, !(F16(a) > F16(b)));
  CMP16("nle_f16", F16, !(F16(a) <= F16(b)));
  CMP16("neq_f16", F16, !(F16(a) == F16(b)));
  CMP16("nlt_f16", F16, !(F16(a) < F16(b)));
  CMP16("class_f16", F16, fp_class(F16(a), lo(b), (a & 0x200) != 0));
  CMP16("lt_i16", B16, s16(a) < s16(b));
  CMP16("eq_i16", B16, h(a) == h(b));
  CMP16("le_i16", B16, s16(a) <= s16(b));
  CMP16("gt_i16", B16, s16(a) > s16(b));
  CMP16("ne_i16", B16, h(a) != h(b));
  CMP16("ge_i16", B16, s16(a) >= s16(b));
  CMP16("lt_u16", B16, h(a) < h(b));
  CMP16("eq_u16", B16, h(a) == h(b));
  CMP16("le_u16", B16, h(a) <= h(b));
  CMP16("gt_u16", B16, h(a) > h(b));
  CMP16("ne_u16", B16, h(a) != h(b));
  CMP16("ge_u16", B16, h(a) >= h(b));
#undef CMP16
}

}  // namespace ugrad::mockgpu
