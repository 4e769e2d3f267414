// The generic VALU executor shared by valu.cpp and valu_f16.cpp: an op is a lane function
// D = f(S0, S1, S2, flag) plus its operand types; the executor fetches all sources (VGPR, SGPR,
// inline constant or literal by type), applies abs/neg/op_sel, runs the lanes in EXEC, and only
// then writes the destination and lane masks, so destinations may overlap sources.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <limits>
#include "base/float16.h"

#include "test/mockgpu/emu.h"

namespace ugrad::mockgpu {

// `flag` protocol of integer clamp (VOP3 clamp bit on integer ops: saturate instead of wrap).
inline constexpr uint32_t kClampRequest = 2, kClampDone = 4;

using u16 = uint16_t;
using u32 = uint32_t;
using u64 = uint64_t;
using i32 = int32_t;
using i64 = int64_t;

enum class VKind : uint8_t {
  Normal,
  Cmp,       // result != 0 -> bit in mask_out (VCC or the VOP3 SGPR); inactive lanes 0
  Cmpx,      // result != 0 -> EXEC
  MaskIn,    // flag = bit of mask_in (cndmask, div_fmas)
  CarryOut,  // flag out -> mask_out
  CarryIO,   // flag in from mask_in, out to mask_out
};

struct VopSpec {
  Ty dst;
  Ty src[3];
  uint8_t nsrc;
  VKind kind;
  bool acc;  // S2 is the destination's old value (fmac)
};

inline bool is_wide(Ty t) { return t == Ty::B64 || t == Ty::F64; }
inline bool is_16(Ty t) { return t == Ty::F16 || t == Ty::B16; }
inline int sign_bit(Ty t) { return t == Ty::F16 ? 15 : t == Ty::F64 ? 63 : 31; }
inline bool is_float(Ty t) { return t == Ty::F16 || t == Ty::F32 || t == Ty::F64; }

template <typename F>
void exec_vop(Wave& w, const Inst& in) {
  const VopSpec& sp = *static_cast<const VopSpec*>(in.spec);
  const bool vop3 = in.enc == Enc::VOP3;
  if (in.omod) w.fail(in, "output modifier (omod) is not modelled");
  u64 src[3][kLanes];
  for (int i = 0; i < sp.nsrc; ++i) {
    const Ty t = sp.src[i];
    const uint16_t code = i == 2 && sp.acc ? static_cast<uint16_t>(256 + in.vdst) : in.src[i];
    if (is_wide(t)) {
      read_lanes64(w, in, code, t, src[i]);
    } else {
      u32 tmp[kLanes];
      read_lanes(w, in, code, t, tmp);
      const int shift = is_16(t) && vop3 && (in.opsel >> i & 1) ? 16 : 0;
      const u32 mask = is_16(t) ? 0xffffu : 0xffffffffu;
      for (int l = 0; l < kLanes; ++l) src[i][l] = (tmp[l] >> shift) & mask;
    }
    // abs/neg act on the sign bit of the operand's width; LLVM also sets them on "untyped"
    // moves such as v_cndmask_b32_e64 v0, |s0|, v1 (found by bench_emulator's sqrt(|a|)).
    if (vop3 && ((in.abs | in.neg) >> i & 1)) {
      const u64 sb = u64{1} << sign_bit(t);
      const bool ab = in.abs >> i & 1, ng = in.neg >> i & 1;
      for (int l = 0; l < kLanes; ++l) {
        if (ab) src[i][l] &= ~sb;
        if (ng) src[i][l] ^= sb;
      }
    }
  }
  const u32 exec = w.s[kExec];
  // Three-source mask readers (v_div_fmas) always read VCC; two-source ones (cndmask, carry-in)
  // read VCC in the 32-bit forms and the SGPR in the S2 field in VOP3.
  const uint16_t mask_code = sp.nsrc == 3 ? kVcc : in.mask_in;
  const u32 mask_in = sp.kind == VKind::MaskIn || sp.kind == VKind::CarryIO
                          ? static_cast<u32>(scalar_operand(w, in, mask_code, Ty::B32))
                          : 0;
  u64 out[kLanes];
  u32 flags = 0;
  // Integer clamp: the row sees kClampRequest in `flag` and answers kClampDone if it saturates.
  const bool int_clamp = in.clamp && !is_float(sp.dst) && sp.kind == VKind::Normal;
  bool clamp_done = true;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    u32 flag = int_clamp ? kClampRequest : mask_in >> l & 1;
    out[l] = F{}(src[0][l], src[1][l], src[2][l], flag);
    if (int_clamp)
      clamp_done = clamp_done && (flag & kClampDone);
    else
      flags |= (flag & 1) << l;
  }
  if (in.clamp && is_float(sp.dst)) {
    for (int l = 0; l < kLanes; ++l) {
      if (!(exec >> l & 1)) continue;
      if (sp.dst == Ty::F32) {
        float f = as_f32(static_cast<u32>(out[l]));
        out[l] = f32_bits(std::isnan(f) ? 0.0f : std::fmin(std::fmax(f, 0.0f), 1.0f));
      } else if (sp.dst == Ty::F64) {
        double f = as_f64(out[l]);
        out[l] = f64_bits(std::isnan(f) ? 0.0 : std::fmin(std::fmax(f, 0.0), 1.0));
      } else {
        float f = half_to_float(static_cast<u16>(out[l]));
        f = std::isnan(f) ? 0.0f : std::fmin(std::fmax(f, 0.0f), 1.0f);
        out[l] = float_to_half(f);
      }
    }
  } else if (in.clamp && sp.kind != VKind::Cmp && sp.kind != VKind::Cmpx &&
             !(int_clamp && clamp_done)) {
    w.fail(in, "integer clamp is not modelled");
  }
  switch (sp.kind) {
    case VKind::Cmp:
    case VKind::Cmpx: {
      u32 bits = 0;
      for (int l = 0; l < kLanes; ++l)
        if (exec >> l & 1) bits |= static_cast<u32>(out[l] != 0) << l;
      if (sp.kind == VKind::Cmpx)
        w.s[kExec] = bits;
      else
        write_sgpr(w, in.mask_out, bits);
      return;
    }
    default:
      break;
  }
  const unsigned d = in.vdst;
  if (is_wide(sp.dst)) {
    for (int l = 0; l < kLanes; ++l) {
      if (!(exec >> l & 1)) continue;
      w.v[d][l] = static_cast<u32>(out[l]);
      w.v[(d + 1) & 255][l] = static_cast<u32>(out[l] >> 32);
    }
  } else if (is_16(sp.dst)) {
    const bool hi = vop3 && (in.opsel >> 3 & 1);
    for (int l = 0; l < kLanes; ++l) {
      if (!(exec >> l & 1)) continue;
      u32 v = static_cast<u32>(out[l]) & 0xffff;
      w.v[d][l] = hi ? (w.v[d][l] & 0xffff) | v << 16 : (w.v[d][l] & 0xffff0000u) | v;
    }
  } else {
    for (int l = 0; l < kLanes; ++l)
      if (exec >> l & 1) w.v[d][l] = static_cast<u32>(out[l]);
  }
  if (sp.kind == VKind::CarryOut || sp.kind == VKind::CarryIO) write_sgpr(w, in.mask_out, flags);
}

/// Keeps specs alive for the registry's lifetime.
inline const VopSpec* keep_spec(const VopSpec& s) {
  static std::deque<VopSpec> specs;
  specs.push_back(s);
  return &specs.back();
}

/// Registers `name` with lane function F (a captureless lambda) and the given operand types.
#define UGRAD_VOP_T(reg, name, D, S0, S1, S2, N, K, ...)          \
  reg[name] = OpEntry {                                           \
    exec_vop<decltype([](u64 a, u64 b, u64 c, u32& flag) -> u64 { \
      (void)a, (void)b, (void)c, (void)flag;                      \
      __VA_ARGS__;                                                \
    })>,                                                          \
        keep_spec(VopSpec{D, {S0, S1, S2}, N, VKind::K, false})   \
  }
#define UGRAD_VOP(reg, name, D, S0, S1, S2, N, K, ...) \
  UGRAD_VOP_T(reg, name, Ty::D, Ty::S0, Ty::S1, Ty::S2, N, K, __VA_ARGS__)

// ---- float helpers ----
inline float F32(u64 x) { return as_f32(static_cast<u32>(x)); }
inline u64 R32(float f) { return f32_bits(f); }
inline double F64(u64 x) { return as_f64(x); }
inline u64 R64(double d) { return f64_bits(d); }
inline float F16(u64 x) { return half_to_float(static_cast<u16>(x)); }
inline u64 R16(float f) { return float_to_half(f); }

/// IEEE-mode maximum/minimum: a NaN operand yields the other (both NaN: quiet NaN); -0 < +0.
template <typename T>
T ieee_max(T a, T b) {
  if (std::isnan(a)) return std::isnan(b) ? std::numeric_limits<T>::quiet_NaN() : b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <typename T>
T ieee_min(T a, T b) {
  if (std::isnan(a)) return std::isnan(b) ? std::numeric_limits<T>::quiet_NaN() : b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// v_cmp_class mask bits: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0,
/// 7 +denormal, 8 +normal, 9 +inf.
template <typename T>
bool fp_class(T x, u32 mask, bool quiet_bit_set) {
  int c;
  if (std::isnan(x))
    c = quiet_bit_set ? 1 : 0;
  else if (std::isinf(x))
    c = std::signbit(x) ? 2 : 9;
  else if (x == 0)
    c = std::signbit(x) ? 5 : 6;
  else if (std::fpclassify(x) == FP_SUBNORMAL)
    c = std::signbit(x) ? 4 : 7;
  else
    c = std::signbit(x) ? 3 : 8;
  return mask >> c & 1;
}

/// Median of three with IEEE min/max.
template <typename T>
T med3(T a, T b, T c) {
  return ieee_max(ieee_min(a, b), ieee_min(ieee_max(a, b), c));
}

/// Float -> integer conversion as the ISA defines it: truncate, saturate, NaN -> 0.
template <typename I, typename F>
I cvt_sat(F f) {
  if (std::isnan(f)) return 0;
  F t = std::trunc(f);
  if (t <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (t >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

}  // namespace ugrad::mockgpu
