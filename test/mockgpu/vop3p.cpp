// VOP3P semantics (packed 16-bit math, mixed-precision fma, dot products, WMMA) and VOPD dual
// issue. Packed sources pick their low half by op_sel and their high half by op_sel_hi; neg_lo /
// neg_hi negate the halves (for the iu8/iu4 dots neg_lo marks signed sources, for fma_mix neg_hi
// is abs). Every handler computes all lanes into a temporary before writing.
#include <bit>

#include "test/mockgpu/valu_impl.h"

namespace ugrad::mockgpu {

namespace {

// The 32-bit lane values of a VOP3P source; inline constants fill both 16-bit halves.
void read_packed(const Wave& w, const Inst& in, uint16_t code, Ty ty, u32* out) {
  if (code >= 240 && code <= 248 && (ty == Ty::F16 || ty == Ty::B16)) {
    u32 k = kInlineF16[code - 240];
    for (int l = 0; l < kLanes; ++l) out[l] = k | k << 16;
    return;
  }
  if (code >= 128 && code <= 208 && (ty == Ty::B16 || ty == Ty::F16)) {
    u32 k = static_cast<u32>(scalar_operand(w, in, code, Ty::B16)) & 0xffff;
    for (int l = 0; l < kLanes; ++l) out[l] = k | k << 16;
    return;
  }
  read_lanes(w, in, code, ty, out);
}

// Packed 16-bit op: each half of D = f(halves of S0, S1, S2).

struct PkSpec {
  Ty ty;
  int nsrc;
};

template <typename F>
void exec_pk(Wave& w, const Inst& in) {
  const PkSpec& sp = *static_cast<const PkSpec*>(in.spec);
  u32 src[3][kLanes] = {};
  for (int i = 0; i < sp.nsrc; ++i) read_packed(w, in, in.src[i], sp.ty, src[i]);
  const u32 exec = w.exec();
  u32 out[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    u32 half[2][3];
    for (int i = 0; i < 3; ++i) {
      half[0][i] = (in.opsel >> i & 1) ? src[i][l] >> 16 : src[i][l] & 0xffff;
      half[1][i] = (in.opsel_hi >> i & 1) ? src[i][l] >> 16 : src[i][l] & 0xffff;
      if (sp.ty == Ty::F16) {
        if (in.neg >> i & 1) half[0][i] ^= 0x8000;
        if (in.neg_hi >> i & 1) half[1][i] ^= 0x8000;
      }
    }
    u32 lo = F{}(half[0][0], half[0][1], half[0][2]) & 0xffff;
    u32 hi = F{}(half[1][0], half[1][1], half[1][2]) & 0xffff;
    out[l] = lo | hi << 16;
  }
  if (in.clamp) w.fail(in, "clamp on packed math is not modelled");
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) w.v[in.vdst][l] = out[l];
}

const PkSpec* pk(Ty ty, int nsrc) {
  static std::deque<PkSpec> specs;
  specs.push_back({ty, nsrc});
  return &specs.back();
}

#define PK(name, T, N, ...)                           \
  r[name] = OpEntry {                                 \
    exec_pk<decltype([](u32 a, u32 b, u32 c) -> u32 { \
      (void)a, (void)b, (void)c;                      \
      __VA_ARGS__;                                    \
    })>,                                              \
        pk(Ty::T, N)                                  \
  }

float hf(u32 x) { return F16(x); }
u32 rh(float f) { return static_cast<u32>(R16(f)); }
int16_t s16(u32 x) { return static_cast<int16_t>(x); }

// v_fma_mix*: sources are f16 (op_sel_hi set; op_sel picks the half) or f32; neg_lo negates,
// neg_hi takes the absolute value. Computed as one fused fma in double, rounded once.
template <int Out>  // 0 = f32, 1 = f16 low half, 2 = f16 high half
void exec_fma_mix(Wave& w, const Inst& in) {
  u32 src[3][kLanes];
  for (int i = 0; i < 3; ++i) read_lanes(w, in, in.src[i], Ty::F32, src[i]);
  const u32 exec = w.exec();
  u32 out[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    double v[3];
    for (int i = 0; i < 3; ++i) {
      if (in.opsel_hi >> i & 1) {
        u32 half = (in.opsel >> i & 1) ? src[i][l] >> 16 : src[i][l] & 0xffff;
        if (in.src[i] >= 240 && in.src[i] <= 248) half = kInlineF16[in.src[i] - 240];
        v[i] = hf(half);
      } else {
        v[i] = as_f32(src[i][l]);
      }
      if (in.neg_hi >> i & 1) v[i] = std::fabs(v[i]);
      if (in.neg >> i & 1) v[i] = -v[i];
    }
    double r = std::fma(v[0], v[1], v[2]);
    out[l] = Out == 0 ? f32_bits(static_cast<float>(r)) : rh(static_cast<float>(r));
  }
  if (in.clamp) w.fail(in, "clamp on fma_mix is not modelled");
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    u32& d = w.v[in.vdst][l];
    d = Out == 0 ? out[l] : Out == 1 ? (d & 0xffff0000u) | out[l] : (d & 0xffff) | out[l] << 16;
  }
}

// Integer dots: D = S2 + sum of products of N-bit elements; for iu8/iu4, neg_lo[i] marks
// source i as signed.
template <int Bits, bool Mixed>
void exec_idot(Wave& w, const Inst& in) {
  u32 src[3][kLanes];
  for (int i = 0; i < 3; ++i) read_lanes(w, in, in.src[i], Ty::B32, src[i]);
  const bool sa = Mixed && (in.neg & 1), sb = Mixed && (in.neg & 2);
  const u32 exec = w.exec();
  u32 out[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    i64 acc = Mixed ? static_cast<i32>(src[2][l]) : i64{src[2][l]};
    for (int e = 0; e < 32 / Bits; ++e) {
      u32 ua = (src[0][l] >> (e * Bits)) & ((1u << Bits) - 1);
      u32 ub = (src[1][l] >> (e * Bits)) & ((1u << Bits) - 1);
      i64 x = sa && (ua >> (Bits - 1)) ? i64{ua} - (i64{1} << Bits) : i64{ua};
      i64 y = sb && (ub >> (Bits - 1)) ? i64{ub} - (i64{1} << Bits) : i64{ub};
      acc += x * y;
    }
    if (in.clamp) {
      acc = Mixed ? std::clamp<i64>(acc, INT32_MIN, INT32_MAX) : std::min<i64>(acc, UINT32_MAX);
    }
    out[l] = static_cast<u32>(acc);
  }
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) w.v[in.vdst][l] = out[l];
}

// v_dot2_f32_f16: D = S2 + S0.lo*S1.lo + S0.hi*S1.hi (f32 accumulate; computed in double).
void exec_dot2_f32_f16(Wave& w, const Inst& in) {
  u32 src[3][kLanes];
  read_packed(w, in, in.src[0], Ty::F16, src[0]);
  read_packed(w, in, in.src[1], Ty::F16, src[1]);
  read_lanes(w, in, in.src[2], Ty::F32, src[2]);
  const u32 exec = w.exec();
  u32 out[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    double acc = as_f32(src[2][l]);
    for (int e = 0; e < 2; ++e) {
      double a = hf(((e ? in.opsel_hi : in.opsel) & 1) ? src[0][l] >> 16 : src[0][l] & 0xffff);
      double b = hf(((e ? in.opsel_hi : in.opsel) & 2) ? src[1][l] >> 16 : src[1][l] & 0xffff);
      if ((e ? in.neg_hi : in.neg) & 1) a = -a;
      if ((e ? in.neg_hi : in.neg) & 2) b = -b;
      acc += a * b;
    }
    out[l] = f32_bits(static_cast<float>(acc));
  }
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) w.v[in.vdst][l] = out[l];
}

// WMMA 16x16x16 (wave32): lane l holds row (A) / column (B) l % 16 of the 16-bit inputs, two
// elements per VGPR (k = 2i, 2i+1; 8-bit inputs four per VGPR); lanes 16-31 duplicate lanes
// 0-15. C/D: VGPR i of lane l is element [2i + l/16][l % 16] (16-bit results in the half chosen
// by op_sel). Products are exact in double; the sum is accumulated in double, rounded once.
enum class WmmaIn { F16, BF16, IU8 };
enum class WmmaOut { F32, F16, BF16, I32 };

float bf16(u32 x) { return as_f32((x & 0xffff) << 16); }
u32 to_bf16(float f) {  // round to nearest even
  u32 b = f32_bits(f);
  if (std::isnan(f)) return (b >> 16) | 0x40;
  return (b + 0x7fff + ((b >> 16) & 1)) >> 16;
}

template <WmmaIn In, WmmaOut Out>
void exec_wmma(Wave& w, const Inst& in) {
  if (in.src[0] < 256 || in.src[1] < 256 || in.src[2] < 256)
    w.fail(in, "WMMA operands must be VGPRs");
  const unsigned a0 = in.src[0] - 256, b0 = in.src[1] - 256, c0 = in.src[2] - 256;
  auto elem = [&](unsigned base, int lane, int k) -> double {
    if constexpr (In == WmmaIn::IU8) {
      u32 word = w.v[(base + k / 4) & 255][lane];
      u32 byte = word >> (8 * (k % 4)) & 0xff;
      bool is_signed = base == a0 ? (in.neg & 1) : (in.neg & 2);
      return is_signed ? static_cast<int8_t>(byte) : static_cast<double>(byte);
    } else {
      u32 word = w.v[(base + k / 2) & 255][lane];
      u32 half = k % 2 ? word >> 16 : word & 0xffff;
      return In == WmmaIn::F16 ? hf(half) : bf16(half);
    }
  };
  const bool hi = in.opsel & 1;
  double d[16][16];
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      const int lane = n + 16 * (m % 2), vg = m / 2;
      u32 cw = w.v[(c0 + vg) & 255][lane];
      double acc;
      if constexpr (Out == WmmaOut::F32)
        acc = as_f32(cw);
      else if constexpr (Out == WmmaOut::I32)
        acc = static_cast<i32>(cw);
      else if constexpr (Out == WmmaOut::F16)
        acc = hf(hi ? cw >> 16 : cw & 0xffff);
      else
        acc = bf16(hi ? cw >> 16 : cw & 0xffff);
      for (int k = 0; k < 16; ++k) acc += elem(a0, m, k) * elem(b0, n, k);
      d[m][n] = acc;
    }
  }
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      const int lane = n + 16 * (m % 2);
      u32& dst = w.v[(in.vdst + m / 2) & 255][lane];
      if constexpr (Out == WmmaOut::F32) {
        dst = f32_bits(static_cast<float>(d[m][n]));
      } else if constexpr (Out == WmmaOut::I32) {
        double v = d[m][n];
        dst = static_cast<u32>(static_cast<i64>(v));
      } else {
        u32 h = Out == WmmaOut::F16 ? rh(static_cast<float>(d[m][n]))
                                    : to_bf16(static_cast<float>(d[m][n]));
        dst = hi ? (dst & 0xffff) | h << 16 : (dst & 0xffff0000u) | h;
      }
    }
  }
}

// ---- VOPD ----

using DualFn = u32 (*)(u32 s0, u32 s1, u32 dold, u32 k, bool vcc);

float f(u32 x) { return as_f32(x); }
u32 b(float x) { return f32_bits(x); }

// Opcode tables shared by X (0-12) and Y (0-18).
constexpr DualFn kDual[19] = {
    [](u32 s0, u32 s1, u32 d, u32, bool) { return b(std::fma(f(s0), f(s1), f(d))); },  // fmac
    [](u32 s0, u32 s1, u32, u32 k, bool) { return b(std::fma(f(s0), f(s1), f(k))); },  // fmaak
    [](u32 s0, u32 s1, u32, u32 k, bool) { return b(std::fma(f(s0), f(k), f(s1))); },  // fmamk
    [](u32 s0, u32 s1, u32, u32, bool) { return b(f(s0) * f(s1)); },                   // mul
    [](u32 s0, u32 s1, u32, u32, bool) { return b(f(s0) + f(s1)); },                   // add
    [](u32 s0, u32 s1, u32, u32, bool) { return b(f(s0) - f(s1)); },                   // sub
    [](u32 s0, u32 s1, u32, u32, bool) { return b(f(s1) - f(s0)); },                   // subrev
    [](u32 s0, u32 s1, u32, u32, bool) {  // mul_dx9_zero: 0 * anything = 0
      return f(s0) == 0 || f(s1) == 0 ? 0u : b(f(s0) * f(s1));
    },
    [](u32 s0, u32, u32, u32, bool) { return s0; },                            // mov
    [](u32 s0, u32 s1, u32, u32, bool vcc) { return vcc ? s1 : s0; },          // cndmask
    [](u32 s0, u32 s1, u32, u32, bool) { return b(ieee_max(f(s0), f(s1))); },  // max
    [](u32 s0, u32 s1, u32, u32, bool) { return b(ieee_min(f(s0), f(s1))); },  // min
    [](u32 s0, u32 s1, u32 d, u32, bool) {                                     // dot2acc
      double acc =
          f(d) + double{hf(s0 & 0xffff)} * hf(s1 & 0xffff) + double{hf(s0 >> 16)} * hf(s1 >> 16);
      return b(static_cast<float>(acc));
    },
    nullptr,
    nullptr,
    nullptr,
    [](u32 s0, u32 s1, u32, u32, bool) { return s0 + s1; },          // add_nc_u32
    [](u32 s0, u32 s1, u32, u32, bool) { return s1 << (s0 & 31); },  // lshlrev_b32
    [](u32 s0, u32 s1, u32, u32, bool) { return s0 & s1; },          // and_b32
};

}  // namespace

bool vopd_supported(unsigned opx, unsigned opy) {
  return opx <= 12 && opy <= 18 && kDual[opx] && kDual[opy];
}

void exec_vopd(Wave& w, const Inst& in) {
  u32 sx0[kLanes], sx1[kLanes], sy0[kLanes], sy1[kLanes];
  read_lanes(w, in, in.src[0], Ty::F32, sx0);
  read_lanes(w, in, in.src[1], Ty::F32, sx1);
  read_lanes(w, in, in.srcy[0], Ty::F32, sy0);
  read_lanes(w, in, in.srcy[1], Ty::F32, sy1);
  const DualFn fx = kDual[in.op], fy = kDual[in.opy];
  const u32 exec = w.exec(), vcc = w.s[kVcc];
  u32 dx[kLanes], dy[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    const bool c = vcc >> l & 1;
    dx[l] = fx(sx0[l], sx1[l], w.v[in.vdst][l], in.lit, c);
    dy[l] = fy(sy0[l], sy1[l], w.v[in.vdsty][l], in.lit, c);
  }
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    w.v[in.vdst][l] = dx[l];
    w.v[in.vdsty][l] = dy[l];
  }
}

void register_vop3p(Registry& r) {
  PK("v_pk_add_f16", F16, 2, return rh(hf(a) + hf(b)));
  PK("v_pk_mul_f16", F16, 2, return rh(hf(a) * hf(b)));
  PK("v_pk_fma_f16", F16, 3, return rh(static_cast<float>(std::fma(double{hf(a)}, hf(b), hf(c)))));
  PK("v_pk_max_f16", F16, 2, return rh(ieee_max(hf(a), hf(b))));
  PK("v_pk_min_f16", F16, 2, return rh(ieee_min(hf(a), hf(b))));
  PK("v_pk_add_u16", B16, 2, return a + b);
  PK("v_pk_sub_u16", B16, 2, return a - b);
  PK("v_pk_add_i16", B16, 2, return a + b);
  PK("v_pk_sub_i16", B16, 2, return a - b);
  PK("v_pk_mul_lo_u16", B16, 2, return a * b);
  PK("v_pk_mad_u16", B16, 3, return a * b + c);
  PK("v_pk_mad_i16", B16, 3, return a * b + c);
  PK("v_pk_lshlrev_b16", B16, 2, return b << (a & 15));
  PK("v_pk_lshrrev_b16", B16, 2, return (b & 0xffff) >> (a & 15));
  PK("v_pk_ashrrev_i16", B16, 2, return static_cast<u32>(s16(b) >> (a & 15)));
  PK("v_pk_max_i16", B16, 2, return s16(a) > s16(b) ? a : b);
  PK("v_pk_min_i16", B16, 2, return s16(a) < s16(b) ? a : b);
  PK("v_pk_max_u16", B16, 2, return (a & 0xffff) > (b & 0xffff) ? a : b);
  PK("v_pk_min_u16", B16, 2, return (a & 0xffff) < (b & 0xffff) ? a : b);
  r["v_fma_mix_f32"] = {exec_fma_mix<0>, nullptr};
  r["v_fma_mixlo_f16"] = {exec_fma_mix<1>, nullptr};
  r["v_fma_mixhi_f16"] = {exec_fma_mix<2>, nullptr};
  r["v_dot4_i32_iu8"] = {exec_idot<8, true>, nullptr};
  r["v_dot4_u32_u8"] = {exec_idot<8, false>, nullptr};
  r["v_dot8_i32_iu4"] = {exec_idot<4, true>, nullptr};
  r["v_dot8_u32_u4"] = {exec_idot<4, false>, nullptr};
  r["v_dot2_f32_f16"] = {exec_dot2_f32_f16, nullptr};
  r["v_wmma_f32_16x16x16_f16"] = {exec_wmma<WmmaIn::F16, WmmaOut::F32>, nullptr};
  r["v_wmma_f32_16x16x16_bf16"] = {exec_wmma<WmmaIn::BF16, WmmaOut::F32>, nullptr};
  r["v_wmma_f16_16x16x16_f16"] = {exec_wmma<WmmaIn::F16, WmmaOut::F16>, nullptr};
  r["v_wmma_bf16_16x16x16_bf16"] = {exec_wmma<WmmaIn::BF16, WmmaOut::BF16>, nullptr};
  r["v_wmma_i32_16x16x16_iu8"] = {exec_wmma<WmmaIn::IU8, WmmaOut::I32>, nullptr};
  // v_dot2acc_f32_f16 (VOP2): D = D + S0.lo*S1.lo + S0.hi*S1.hi.
  UGRAD_VOP(r, "v_dot2acc_f32_f16", F32, B32, B32, F32, 3, Normal,
            double acc = F32(c) + double{hf(a & 0xffff)} * hf(b & 0xffff) +
                         double{hf(a >> 16 & 0xffff)} * hf(b >> 16 & 0xffff);
            return R32(static_cast<float>(acc)));
  const_cast<VopSpec*>(static_cast<const VopSpec*>(r["v_dot2acc_f32_f16"].spec))->acc = true;
}

}  // namespace ugrad::mockgpu
